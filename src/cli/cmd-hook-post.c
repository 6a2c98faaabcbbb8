/* bernstein hook-post [--socket PATH] [--event NAME]: the bridge from an
 * agent's hook command to the hooks channel of the session it runs in
 * (docs/event-stream.md, "The hooks channel"). It reads what the hook got on
 * stdin (Claude Code: one JSON object), turns it into one compact JSON line
 * (adapter/dialect.h, dialect_hooks_payload()), connects to the session's
 * socket and writes the line.
 *
 * It is run by the agent, in the middle of the agent's work, so:
 *   - it never prints on stdout (Claude Code adds a SessionStart or
 *     UserPromptSubmit hook's stdout to the model's context);
 *   - it exits 0 when the line was sent and 1 for every failure, usage
 *     errors included: never 2, which tells Claude Code to block the tool
 *     call (PreToolUse) or the prompt;
 *   - connecting and writing give up after 5 s. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/dialect.h"
#include "cli/commands.h"
#include "proc/usock.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

#define HOOK_POST_STDIN_MAX  (16u << 20) /* read at most this much of stdin */
#define HOOK_POST_HEAD	     (64u << 10) /* what is kept of a larger stdin */
#define HOOK_POST_TIMEOUT_MS 5000
#define HOOK_POST_EVENT_MAX  64

const char hook_post_usage[] = "[--socket PATH] [--event NAME]";
const char hook_post_help[] =
	"Posts one hook payload to the hooks channel of the session the agent runs in.\n"
	"An agent's hook configuration runs it (bernstein writes that configuration\n"
	"into the agent's private HOME from the profile's runtime.hooks); it reads\n"
	"the payload from stdin (a JSON object, as Claude Code passes it; anything\n"
	"else is wrapped), makes it one compact line and writes it to the session's\n"
	"socket. It prints nothing on stdout. See docs/event-stream.md.\n"
	"\n"
	"options:\n"
	"  --socket PATH   the session's socket (default: $BERNSTEIN_HOOK_SOCKET)\n"
	"  --event NAME    the event name, when the payload names none\n"
	"                  (hook_event_name); [A-Za-z0-9_.-], at most 64 bytes\n"
	"\n"
	"Exit: 0 posted, 1 anything else (never 2: Claude Code reads 2 from a hook as\n"
	"'block this tool call').\n";

static bool event_name_valid(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= HOOK_POST_EVENT_MAX &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* All of stdin, at most HOOK_POST_STDIN_MAX bytes; beyond that the head is
 * kept (the payload then reads as cut) and the rest is drained, so the agent
 * writing it never gets EPIPE. A terminal counts as empty. */
static int read_stdin(char **ret, size_t *ret_len)
{
	struct sbuf sb = SBUF_INIT(HOOK_POST_STDIN_MAX);
	char buf[65536];
	bool big = false;

	if (isatty(0)) {
		*ret = sbuf_detach(&sb, ret_len);
		return 0;
	}
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			sbuf_release(&sb);
			return r;
		}
		if (n == 0)
			break;
		if (!big && sbuf_add(&sb, buf, (size_t)n) < 0)
			big = true;
	}
	if (big && sb.len > HOOK_POST_HEAD) {
		sb.len = HOOK_POST_HEAD;
		sb.buf[sb.len] = '\0';
	}
	*ret = sbuf_detach(&sb, ret_len);
	return 0;
}

int cmd_hook_post(int argc, char **argv, struct cli_ctx *ctx)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'},
		{"event", required_argument, NULL, 'e'},
		CLI_OPT_HELP,
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL, *event = NULL;
	struct sbuf line = SBUF_INIT(DIALECT_HOOKS_LINE_MAX + 1);
	char *in = NULL;
	size_t in_len = 0;
	struct diag d;
	int c, fd = -1, r, code = BEXIT_FAILED;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			return cli_help(ctx);
		case 's':
			sock = optarg;
			break;
		case 'e':
			event = optarg;
			break;
		default:
			(void)cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
			return BEXIT_FAILED; /* never 2: see the top of this file */
		}
	}
	if (optind < argc) {
		(void)cli_usage_error(ctx, "'hook-post' takes no arguments");
		return BEXIT_FAILED;
	}
	if (event && !event_name_valid(event)) {
		(void)cli_usage_error(ctx,
				      "invalid event name '%s' ([A-Za-z0-9_.-], at most %d bytes)",
				      event, HOOK_POST_EVENT_MAX);
		return BEXIT_FAILED;
	}
	if (!sock)
		sock = cli_getenv(ctx, "BERNSTEIN_HOOK_SOCKET");
	if (!sock || !*sock)
		return cli_error(
			ctx, BEXIT_FAILED,
			"hook-post: no socket (give --socket or set BERNSTEIN_HOOK_SOCKET)");

	r = read_stdin(&in, &in_len);
	if (r < 0) {
		code = cli_error(ctx, BEXIT_FAILED, "hook-post: cannot read stdin: %s",
				 strerror(-r));
		goto out;
	}
	r = dialect_hooks_payload(in, in_len, event, &line);
	if (r < 0) {
		code = cli_error(ctx, BEXIT_FAILED, "hook-post: cannot build the payload: %s",
				 strerror(-r));
		goto out;
	}
	diag_clear(&d);
	r = usock_connect(sock, HOOK_POST_TIMEOUT_MS, &fd, &d);
	if (r < 0) {
		code = cli_error(ctx, BEXIT_FAILED, "hook-post: %s", d.msg);
		goto out;
	}
	r = usock_send_all(fd, line.buf, line.len);
	if (r < 0) {
		code = cli_error(ctx, BEXIT_FAILED, "hook-post: cannot write to '%s': %s", sock,
				 strerror(-r));
		goto out;
	}
	code = 0;
out:
	close_fdp(&fd);
	free(in);
	sbuf_release(&line);
	return code;
}
