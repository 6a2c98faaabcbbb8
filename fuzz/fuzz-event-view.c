/* Fuzz target for `bernstein logs`' readable lines: an events.jsonl line
 * (filled from an agent's output) through event_view_line() (adapter/event-view.h),
 * and, as a stderr line and as an event message, through the agent's last
 * error (adapter/lasterr.h). The first byte picks the output size
 * ({1, 16, 100, 4096}[b & 3]) and the dialect (b >> 2); the rest is the line.
 * Properties, besides never crashing:
 *   - the return is 1, 0 (a blank line: buf empty) or -EBADMSG;
 *   - the output is NUL-terminated within the size and has no control byte;
 *   - the last error is valid UTF-8 of at most LASTERR_MAX bytes on one line,
 *     with no control byte and no blank at either end. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/dialect.h"
#include "adapter/event-view.h"
#include "adapter/lasterr.h"
#include "fuzz/fuzz.h"
#include "util/json.h"
#include "util/banned.h"

static void no_controls(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

static void check_error(const struct lasterr *le)
{
	char buf[LASTERR_MAX + 64];
	size_t n;

	(void)lasterr_text(le, buf, sizeof(buf));
	n = strlen(buf);
	no_controls(buf);
	if (n > LASTERR_MAX + 16 || !utf8_valid(buf, n))
		abort();
	if (n && (buf[0] == ' ' || buf[n - 1] == ' '))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t sizes[] = {1, 16, 100, 4096};
	char out[4096], *line;
	struct lasterr le;
	struct event ev;
	size_t cap;
	int r;

	if (size < 1)
		return 0;
	cap = sizes[data[0] & 3];
	line = malloc(size);
	if (!line)
		return 0;
	memcpy(line, data + 1, size - 1);
	memset(out, 'Z', sizeof(out));
	r = event_view_line(line, size - 1, out, cap);
	if (r != 1 && r != 0 && r != -EBADMSG)
		abort();
	if (!memchr(out, '\0', cap))
		abort();
	no_controls(out);
	if (r == 0 && out[0])
		abort();

	lasterr_init(&le, (enum dialect)((data[0] >> 2) % _DIALECT_MAX));
	lasterr_stderr(&le, line, size - 1);
	lasterr_stderr(&le, line, size - 1);
	check_error(&le);
	event_init(&ev, EVENT_ERROR);
	line[size - 1 > 0 ? size - 2 : 0] = '\0';
	ev.message = size > 1 ? line : "";
	ev.http_status = data[0];
	lasterr_observe(&le, &ev);
	check_error(&le);
	free(line);
	return 0;
}
