/* The text-signals dialect: plain output in which a line
 *   BERNSTEIN:<KIND>[ <json-object>]
 * is a signal (anchor-adapters.md section 4.1, stream_signals.py).
 *
 *   BERNSTEIN:COMPLETED [payload]  -> result (success; status "COMPLETED")
 *   BERNSTEIN:FAILED [payload]     -> result (failed; message = payload.reason)
 *   QUESTION, PLAN_DRAFT, PLAN_READY, BLOCKED -> signal (payload)
 *   any other line                 -> text (+ rate_limited), as in dialect-plain.c
 * A line that looks like a signal but breaks the grammar (unknown kind, bad
 * or non-object payload, duplicate keys) is plain text, as in the anchor. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/dialect-internal.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define PREFIX	   "BERNSTEIN:"
#define PREFIX_LEN (sizeof(PREFIX) - 1)

static const char *const signal_names[_TEXT_SIGNAL_MAX] = {
	[TEXT_SIGNAL_COMPLETED] = "COMPLETED",	 [TEXT_SIGNAL_FAILED] = "FAILED",
	[TEXT_SIGNAL_QUESTION] = "QUESTION",	 [TEXT_SIGNAL_PLAN_DRAFT] = "PLAN_DRAFT",
	[TEXT_SIGNAL_PLAN_READY] = "PLAN_READY", [TEXT_SIGNAL_BLOCKED] = "BLOCKED",
};

const char *dialect_text_signals_kind_name(enum text_signal s)
{
	if ((int)s < 0 || s >= _TEXT_SIGNAL_MAX)
		return NULL;
	return signal_names[s];
}

/* Python's str.strip() whitespace, ASCII part (plus the separators \x1c-\x1f
 * that str.split() also splits on). */
static bool ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
	       (c >= 0x1c && c <= 0x1f);
}

int dialect_text_signals_parse(const char *line, size_t len, enum text_signal *ret_kind,
			       struct json_t **ret_payload)
{
	size_t b = 0, e = len, k, ke;
	json_t *payload = NULL;
	int i, kind = -1;

	if (!line)
		return 0;
	while (b < e && ws(line[b]))
		b++;
	while (e > b && ws(line[e - 1]))
		e--;
	if (e - b < PREFIX_LEN || memcmp(line + b, PREFIX, PREFIX_LEN) != 0)
		return 0;
	k = b + PREFIX_LEN;
	while (k < e && ws(line[k]))
		k++;
	if (k == e)
		return 0;
	for (ke = k; ke < e && !ws(line[ke]); ke++)
		;
	for (i = 0; i < _TEXT_SIGNAL_MAX; i++)
		if (strlen(signal_names[i]) == ke - k &&
		    memcmp(line + k, signal_names[i], ke - k) == 0)
			kind = i;
	if (kind < 0)
		return 0;
	while (ke < e && ws(line[ke]))
		ke++;
	if (ke < e) {
		if (json_parse_strict("signal", line + ke, e - ke, &payload, NULL) < 0)
			return 0;
		if (!json_is_object(payload)) {
			json_decref(payload);
			return 0;
		}
	} else {
		payload = json_object();
	}
	*ret_kind = (enum text_signal)kind;
	*ret_payload = payload;
	return 1;
}

static char *dump(const json_t *v)
{
	json_malloc_t jmalloc;
	json_free_t jfree;
	char *d = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	char *copy = xstrdup(d ? d : "{}");

	json_get_alloc_funcs(&jmalloc, &jfree);
	if (d)
		jfree(d);
	return copy;
}

int dialect_text_signals_feed_line(struct dialect_state *st, const char *line, size_t len,
				   const struct event_sink *sink, struct diag *reterr)
{
	enum text_signal kind;
	json_t *payload = NULL;
	struct event ev;
	char *text;

	st->line_no++;
	if (!line || len > DIALECT_MAX_LINE ||
	    dialect_text_signals_parse(line, len, &kind, &payload) != 1)
		return dialect_plain_text(st, line, len, sink, reterr);
	text = dump(payload);
	if (kind == TEXT_SIGNAL_COMPLETED || kind == TEXT_SIGNAL_FAILED) {
		event_init(&ev, EVENT_RESULT);
		ev.status = signal_names[kind];
		ev.is_error = kind == TEXT_SIGNAL_FAILED;
		ev.payload = text;
		ev.text = dj_str(payload, "summary");
		if (ev.is_error)
			ev.message =
				dj_str(payload, "reason") ? dj_str(payload, "reason") : "FAILED";
	} else {
		event_init(&ev, EVENT_SIGNAL);
		ev.signal = signal_names[kind];
		ev.payload = text;
	}
	ev.type = signal_names[kind];
	dialect_emit(st, sink, &ev);
	free(text);
	json_decref(payload);
	return 0;
}
