/* events.jsonl lines as readable lines (see event-view.h). */
#include "adapter/event-view.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/events.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "util/banned.h"

static const char *str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int64_t num(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	return EVENT_UNSET;
}

static double real(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	double d;

	if (!json_is_number(v))
		return -1;
	d = json_number_value(v);
	return isfinite(d) ? d : -1;
}

static bool yes(const json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

/* A JSON value as compact text (caller frees), NULL when absent. */
static char *dump(const json_t *v)
{
	json_malloc_t jmalloc;
	json_free_t jfree;
	char *d, *copy;

	if (!v || json_is_null(v))
		return NULL;
	if (json_is_string(v))
		return xstrdup(json_string_value(v));
	d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!d)
		return NULL;
	copy = xstrdup(d);
	json_get_alloc_funcs(&jmalloc, &jfree);
	jfree(d);
	return copy;
}

/* ev from the object o (strings borrowed from o, args and payload in the
 * two out strings) */
static void fill(struct event *ev, const json_t *o, char **args, char **payload)
{
	int64_t v;

	ev->dialect = str(o, "dialect");
	ev->type = str(o, "type");
	ev->session_id = str(o, "session_id");
	ev->model = str(o, "model");
	ev->text = str(o, "text");
	ev->delta = yes(o, "delta");
	ev->tool_id = str(o, "tool_id");
	ev->tool_name = str(o, "tool_name");
	*args = dump(json_object_get(o, "args"));
	ev->tool_args = *args;
	ev->tool_output = str(o, "output");
	ev->is_error = yes(o, "is_error");
	ev->permission_denied = yes(o, "permission_denied");
	ev->input_tokens = num(o, "input_tokens");
	ev->output_tokens = num(o, "output_tokens");
	ev->cached_tokens = num(o, "cached_tokens");
	ev->cost_usd = real(o, "cost_usd");
	ev->status = str(o, "status");
	ev->message = str(o, "message");
	ev->error_kind = str(o, "error_kind");
	v = num(o, "http_status");
	ev->http_status = v > 0 && v < 1000 ? (int)v : 0;
	ev->hint.retry_after_s = num(o, "retry_after_s");
	ev->signal = str(o, "signal");
	*payload = dump(json_object_get(o, "payload"));
	ev->payload = *payload;
	ev->reason = str(o, "reason");
}

int event_view_line(const char *line, size_t len, char *buf, size_t size)
{
	char tm[16] = "--:--:--", text[2048];
	char *args = NULL, *payload = NULL;
	const char *ts, *kind;
	struct event ev;
	json_t *o = NULL;
	size_t i;
	int r;

	if (!buf || !size)
		return -EINVAL;
	buf[0] = '\0';
	for (i = 0; line && i < len && strchr(" \t\r\n", line[i]) && line[i]; i++)
		;
	if (!line || i == len)
		return 0;
	if (json_parse_strict("events.jsonl", line, len, &o, NULL) < 0 || !json_is_object(o) ||
	    !(kind = str(o, "kind")) || event_kind_from_string(kind) < 0) {
		(void)snprintf(buf, size, "%s %-12s not an event: %.*s", tm, "?",
			       (int)(len > 200 ? 200 : len), line);
		r = -EBADMSG;
		goto clean;
	}
	ts = str(o, "ts");
	/* "2026-12-02T06:21:57.942815Z" -> "06:21:57" */
	if (ts && strlen(ts) >= 19 && ts[10] == 'T')
		(void)snprintf(tm, sizeof(tm), "%.8s", ts + 11);
	event_init(&ev, event_kind_from_string(kind));
	fill(&ev, o, &args, &payload);
	(void)event_describe(&ev, text, sizeof(text));
	(void)snprintf(buf, size, "%s %-12s %s", tm, kind, text);
	r = 1;
clean:
	/* control bytes of the line (the time, a bad line) become spaces */
	for (i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = ' ';
	free(args);
	free(payload);
	json_decref(o);
	return r;
}
