/* Fuzz target for the poll-pty screen feed (proc/ptydrive.h): the agent's
 * bytes -> libvterm -> the screen diff and the patterns. The input is split
 * at NUL bytes into chunks fed one step (100 ms) apart, so the driver goes
 * through its phases (ready, typed, submitted, permission, done) on hostile
 * screens. Checked:
 *   - every report line is one JSON object with a "pty" member, and nothing
 *     it says holds an escape or control character (no escape sequence
 *     ever reaches events);
 *   - the message text stays under PTYDRIVE_TEXT_MAX. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "proc/ptydrive.h"
#include "util/sbuf.h"
#include "util/banned.h"

static const struct ptydrive_conf conf = {
	.declared = true,
	.rows = 12,
	.cols = 40,
	.ready = "for shortcuts|^> ",
	.working = "esc to interrupt",
	.done = "Cooked for [0-9]+s",
	.ignore = {"^[-=]+$"},
	.n_ignore = 1,
	.perms = {{.pattern = "Do you want", .allow = "1", .deny = "\033"}},
	.n_perms = 1,
	.idle_done_ms = 300,
	.paste = true,
	.exit_keys = "/exit",
	.exit_wait_ms = 200,
};

/* No control character but the rows' newlines, no C1 control (U+0080..9F). */
static void check_string(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	for (; *u; u++)
		if ((*u < 0x20 && *u != '\n') || *u == 0x7f ||
		    (u[0] == 0xc2 && u[1] >= 0x80 && u[1] < 0xa0))
			abort();
}

static void check_lines(const struct sbuf *lines)
{
	const char *p = lines->buf;

	while (*p) {
		const char *nl = strchr(p, '\n');
		const char *key;
		json_error_t err;
		json_t *o, *v;

		if (!nl)
			abort(); /* every report ends with its newline */
		o = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES, &err);
		if (!o || !json_is_string(json_object_get(o, "pty")))
			abort();
		json_object_foreach(o, key, v)
		{
			if (json_is_string(v))
				check_string(json_string_value(v));
		}
		if (json_is_string(json_object_get(o, "text")) &&
		    strlen(json_string_value(json_object_get(o, "text"))) > PTYDRIVE_TEXT_MAX)
			abort();
		json_decref(o);
		p = nl + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbuf lines = SBUF_INIT(SIZE_MAX), keys = SBUF_INIT(SIZE_MAX);
	struct ptydrive *d = NULL;
	const char *p = (const char *)data, *end = p + size;
	uint64_t now = 1;

	if (ptydrive_new(&conf, "write a.txt", size & 1, now, &d, NULL) < 0)
		abort();
	while (p < end) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		size_t n = z ? (size_t)(z - p) : (size_t)(end - p);

		ptydrive_feed(d, p, n);
		now += 100;
		(void)ptydrive_step(d, now, &lines, &keys);
		p += n + (z ? 1 : 0);
	}
	now += 1000;
	(void)ptydrive_step(d, now, &lines, &keys);
	ptydrive_eof(d, now, &lines);
	check_lines(&lines);
	ptydrive_free(d);
	sbuf_release(&lines);
	sbuf_release(&keys);
	return 0;
}
