/* bernstein mock-agent [--resume ID] [--session-id ID] PROMPT|-: the mock
 * adapter's agent (hidden; docs/mock.md). The grammar and the runner are in
 * src/orch/mock.c; this file reads the options, the prompt (argv, or stdin
 * for '-'), HOME and PATH, opens the workdir (the cwd) and returns the
 * agent's exit status. Its events go to stdout, one JSON object per line in
 * the runner dialect; only a bad command line is reported on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "orch/mock.h"
#include "util/fsutil.h"
#include "util/xalloc.h"

const char mock_agent_usage[] = "[--resume ID] [--session-id ID] [--allow-git-dir] [--] PROMPT|-";

const char mock_agent_help[] =
	"The mock adapter's agent: a deterministic, offline stand-in for a coding agent.\n"
	"It carries out the instruction lines of PROMPT ('-': read it from stdin) in\n"
	"the current directory and prints one JSON event per line on stdout in the\n"
	"runner dialect (start, progress, tool_call, tool_result, usage, completion,\n"
	"error). Other lines of the prompt are prose and ignored; leading blanks are\n"
	"ignored. See docs/mock.md.\n"
	"\n"
	"instructions:\n"
	"  write PATH TEXT...    create/overwrite PATH with TEXT and a newline\n"
	"  append PATH TEXT...   append TEXT and a newline\n"
	"  delete PATH           remove the file\n"
	"  commit MESSAGE...     git add -A and git commit (as mock, hooks off)\n"
	"  say TEXT...           a text event\n"
	"  sleep SECONDS         pause (decimal allowed)\n"
	"  hang                  sleep until killed\n"
	"  fail [MESSAGE...]     an error event, exit 1\n"
	"  exit N                exit N at once\n"
	"  rate-limit [SECONDS]  a rate-limit error (HTTP 429, retry after SECONDS,\n"
	"                        default 1), exit 1\n"
	"  once MARKER INSTR...  INSTR only if the file MARKER does not exist yet;\n"
	"                        MARKER is created first ('~/M': under HOME)\n"
	"  usage IN OUT          a usage event with token counts\n"
	"  session ID            the session id to announce\n"
	"PATH and MARKER are relative and confined to the current directory (or HOME);\n"
	"nothing inside .bernstein, nor inside .git without --allow-git-dir.\n"
	"\n"
	"options:\n"
	"  --resume ID       continue session ID (it must have run under this HOME)\n"
	"  --session-id ID   the session id to announce when no 'session' instruction\n"
	"                    gives one (default: a UUID derived from the prompt)\n"
	"  --allow-git-dir   let the file instructions touch .git (the profile's\n"
	"                    runtime.git_dir: allowed)\n"
	"\n"
	"Exit: 0 done, 1 fail, rate-limit, an I/O or git failure or an unknown session,\n"
	"2 a bad instruction, a path outside the directory or a bad command line, N for\n"
	"'exit N'.\n";

/* The options come first; the first other argument is the prompt (even one
 * that starts with '-': a prompt is free text), and it must be the last. */
int cmd_mock_agent(int argc, char **argv, struct cli_ctx *ctx)
{
	const char *resume = NULL, *session = NULL, *prompt_arg = NULL, *home;
	bool allow_git_dir = false;
	struct mock_script script = {0};
	struct mock_opts o = {.workdir_fd = -1, .home_fd = -1, .out_fd = STDOUT_FILENO};
	char default_id[SESSION_UUID_LEN + 1];
	char cwd[PATH_MAX];
	char *prompt = NULL;
	size_t len = 0;
	struct diag d = {0};
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			return cli_help(ctx);
		if (strcmp(a, "--resume") == 0 || strcmp(a, "--session-id") == 0) {
			if (i + 1 >= argc)
				return cli_usage_error(ctx, "option '%s' requires a value", a);
			if (strcmp(a, "--resume") == 0)
				resume = argv[++i];
			else
				session = argv[++i];
			continue;
		}
		if (strcmp(a, "--allow-git-dir") == 0) {
			allow_git_dir = true;
			continue;
		}
		if (strncmp(a, "--resume=", 9) == 0) {
			resume = a + 9;
			continue;
		}
		if (strncmp(a, "--session-id=", 13) == 0) {
			session = a + 13;
			continue;
		}
		if (strcmp(a, "--") == 0)
			i++;
		if (i < argc)
			prompt_arg = argv[i];
		if (i + 1 < argc)
			return cli_usage_error(ctx, "unexpected argument '%s' after the prompt",
					       argv[i + 1]);
		break;
	}
	if (!prompt_arg)
		return cli_usage_error(ctx, "missing the prompt ('-' reads it from stdin)");

	if (strcmp(prompt_arg, "-") == 0) {
		r = read_fd_capped(STDIN_FILENO, MOCK_PROMPT_MAX, &prompt, &len);
		if (r < 0)
			return cli_error(ctx, BEXIT_USAGE, "cannot read the prompt from stdin: %s",
					 r == -EFBIG ? "larger than 16 MiB" : strerror(-r));
	} else {
		prompt = xstrdup(prompt_arg);
		len = strlen(prompt);
	}
	if (!getcwd(cwd, sizeof(cwd))) {
		r = cli_error(ctx, BEXIT_ENV, "cannot get the current directory: %s",
			      strerror(errno));
		goto out;
	}
	o.workdir = cwd;
	o.workdir_fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (o.workdir_fd < 0) {
		r = cli_error(ctx, BEXIT_ENV, "cannot open the current directory: %s",
			      strerror(errno));
		goto out;
	}
	home = cli_getenv(ctx, "HOME");
	if (home && home[0] == '/') {
		o.home = home;
		o.home_fd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	o.resume_id = resume;
	o.session_id = session;
	mock_session_default(prompt, len, default_id);
	o.default_session_id = default_id;
	o.path_env = cli_getenv(ctx, "PATH");
	o.allow_git_dir = allow_git_dir;

	r = mock_parse(prompt, len, o.home, &script, &d);
	if (r < 0)
		r = mock_refuse(&o, r, &d);
	else
		r = mock_run(&script, &o);
out:
	mock_script_release(&script);
	close_fdp(&o.workdir_fd);
	close_fdp(&o.home_fd);
	free(prompt);
	return r;
}
