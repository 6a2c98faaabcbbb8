/* The plain dialects, poll-pty and none: no parsing. Every non-blank line is
 * an EVENT_TEXT (a trailing '\r' dropped); a line that matches the rate-limit
 * needles (adapter/ratelimit.h) is also an EVENT_RATE_LIMITED. The outcome
 * of such a run rests on its exit (adapter/outcome.h), which is why a
 * rate-limit line only decides anything when the run failed. */
#include <stdlib.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "util/xalloc.h"
#include "util/banned.h"

static bool blank_line(const char *line, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!strchr(" \t\r\n\v\f", line[i]) || line[i] == '\0')
			return false;
	return true;
}

int dialect_plain_text(struct dialect_state *st, const char *line, size_t len,
		       const struct event_sink *sink, struct diag *reterr)
{
	char *text;

	if (!line || blank_line(line, len))
		return 0;
	if (len > DIALECT_MAX_LINE) {
		dialect_unknown(st, sink, NULL, line, len, "line too long");
		diag_set(reterr, st->stream_name, (unsigned)st->line_no, 0,
			 "line of %zu bytes is longer than %u bytes, kept as unknown", len,
			 DIALECT_MAX_LINE);
		st->bad_lines++;
		return -ENOBUFS;
	}
	if (len && line[len - 1] == '\r')
		len--;
	text = xstrndup(line, len > EVENT_FIELD_MAX + 1 ? EVENT_FIELD_MAX + 1 : len);
	dialect_text(st, sink, NULL, text, false);
	(void)dialect_rate_check(st, sink, NULL, text, 0, false);
	free(text);
	return 0;
}

int dialect_plain_feed_line(struct dialect_state *st, const char *line, size_t len,
			    const struct event_sink *sink, struct diag *reterr)
{
	st->line_no++;
	return dialect_plain_text(st, line, len, sink, reterr);
}
