/* The runner's NDJSON event stream (events.h). */
#include "runner/events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runner/text.h"
#include "util/fsutil.h"
#include "util/redact.h"
#include "util/sbuf.h"
#include "util/banned.h"

void events_init(struct events *e, int fd)
{
	memset(e, 0, sizeof(*e));
	e->fd = fd;
}

void events_set_redact(struct events *e, struct redact *rd)
{
	e->rd = rd;
}

json_t *events_new(const char *type)
{
	json_t *ev = json_object();

	(void)json_object_set_new(ev, "type", json_string(type));
	return ev;
}

char *events_serialise(json_t *v, struct redact *rd, bool pretty, size_t *ret_len)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	char *s;

	/* the strings, decoded: redacting the serialised text could cut
	 * through JSON's syntax */
	(void)redact_json(rd, v);
	s = json_dumps(v, (pretty ? JSON_INDENT(2) : JSON_COMPACT) | JSON_ENCODE_ANY |
				  JSON_REAL_PRECISION(15));
	if (!s)
		return NULL;
	(void)sbuf_adds(&sb, s);
	free(s);
	(void)sbuf_addc(&sb, '\n');
	return sbuf_detach(&sb, ret_len);
}

int events_emit(struct events *e, json_t *ev)
{
	size_t len = 0;
	char *line;
	int r = 0;

	if (!ev)
		return -EINVAL;
	line = events_serialise(ev, e->rd, false, &len);
	json_decref(ev);
	if (!line)
		return -EINVAL;
	if (e->fd >= 0 && !e->error) {
		r = write_all(e->fd, line, len);
		if (r < 0)
			e->error = r;
	}
	free(line);
	if (r == 0)
		e->written++;
	return r;
}

json_t *events_str(const char *s)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *v;

	(void)text_add_utf8(&sb, s ? s : "", s ? strlen(s) : 0);
	v = json_stringn(sb.buf, sb.len);
	sbuf_release(&sb);
	return v;
}

int events_progress(struct events *e, const char *msg)
{
	json_t *ev = events_new("progress");

	(void)json_object_set_new(ev, "message", events_str(msg));
	return events_emit(e, ev);
}

int events_error(struct events *e, const char *kind, const char *msg)
{
	json_t *ev = events_new("error");

	(void)json_object_set_new(ev, "kind", json_string(kind));
	(void)json_object_set_new(ev, "message", events_str(msg));
	return events_emit(e, ev);
}
