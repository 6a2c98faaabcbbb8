/* Server-Sent Events push parser (sse.h). */
#include "runner/sse.h"

#include <errno.h>
#include <string.h>

#include "util/banned.h"

void sse_init(struct sse_parser *p, size_t max_line, size_t max_event, sse_event_fn *fn,
	      void *userdata)
{
	memset(p, 0, sizeof(*p));
	sbuf_init(&p->line, max_line ? max_line : SSE_DEFAULT_MAX_LINE);
	sbuf_init(&p->data, max_event ? max_event : SSE_DEFAULT_MAX_EVENT);
	p->fn = fn;
	p->userdata = userdata;
}

void sse_release(struct sse_parser *p)
{
	if (!p)
		return;
	sbuf_release(&p->line);
	sbuf_release(&p->data);
}

static void reset_event(struct sse_parser *p)
{
	sbuf_reset(&p->data);
	p->event[0] = '\0';
	p->has_data = false;
	p->drop_event = false;
}

/* The current event's data went past a cap: keep its name, free its data. */
static void drop_data(struct sse_parser *p)
{
	size_t max = p->data.max;

	sbuf_release(&p->data);
	sbuf_init(&p->data, max);
	p->drop_event = true;
	p->has_data = true;
}

static int dispatch(struct sse_parser *p)
{
	int r = 0;

	if (p->has_data && p->drop_event) {
		p->dropped++;
		r = p->fn(p->userdata, p->event[0] ? p->event : "message", NULL, 0);
	} else if (p->has_data) {
		/* the data buffer ends in the LF of its last line: drop it */
		if (p->data.len > 0)
			sbuf_setlen(&p->data, p->data.len - 1);
		p->events++;
		r = p->fn(p->userdata, p->event[0] ? p->event : "message", p->data.buf,
			  p->data.len);
	}
	reset_event(p);
	return r;
}

static void set_name(char *dst, const char *v, size_t n)
{
	if (n > SSE_MAX_EVENT_NAME)
		n = SSE_MAX_EVENT_NAME;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* One complete line (without its line end). */
static int process_line(struct sse_parser *p, const char *s, size_t n)
{
	const char *colon, *v;
	size_t flen, vlen;

	if (n == 0)
		return dispatch(p);
	if (s[0] == ':')
		return 0; /* comment */
	colon = memchr(s, ':', n);
	if (colon) {
		flen = (size_t)(colon - s);
		v = colon + 1;
		vlen = n - flen - 1;
		if (vlen > 0 && *v == ' ') {
			v++;
			vlen--;
		}
	} else {
		flen = n;
		v = s + n;
		vlen = 0;
	}
	if (flen == 4 && memcmp(s, "data", 4) == 0) {
		if (p->drop_event)
			return 0;
		if (sbuf_add(&p->data, v, vlen) < 0 || sbuf_addc(&p->data, '\n') < 0) {
			drop_data(p);
			return 0;
		}
		p->has_data = true;
	} else if (flen == 5 && memcmp(s, "event", 5) == 0) {
		set_name(p->event, v, vlen);
	} else if (flen == 2 && memcmp(s, "id", 2) == 0) {
		if (!memchr(v, '\0', vlen))
			set_name(p->last_id, v, vlen);
	}
	/* "retry" and unknown fields: ignored */
	return 0;
}

/* The current line is complete. */
static int end_line(struct sse_parser *p)
{
	int r = 0;

	if (p->line_over) {
		/* a data line past the cap drops its event; other lines are skipped */
		if (p->line.len >= 4 && memcmp(p->line.buf, "data", 4) == 0 &&
		    (p->line.len == 4 || p->line.buf[4] == ':'))
			drop_data(p);
		p->line_over = false;
	} else {
		r = process_line(p, p->line.buf, p->line.len);
	}
	sbuf_reset(&p->line);
	return r;
}

int sse_feed(struct sse_parser *p, const char *buf, size_t n)
{
	size_t i = 0;
	int r;

	if (p->error)
		return p->error;
	if (!p->started) {
		/* Drop a UTF-8 BOM at the very start; it may arrive split. */
		static const char bom[] = "\xef\xbb\xbf";

		while (i < n && p->line.len < 3 && buf[i] == bom[p->line.len]) {
			(void)sbuf_addc(&p->line, buf[i]);
			i++;
		}
		if (p->line.len == 3) {
			sbuf_reset(&p->line);
			p->started = true;
		} else if (i < n) {
			p->started = true; /* a partial BOM prefix is kept as data */
		} else {
			return 0;
		}
	}
	while (i < n) {
		const char *s = buf + i, *e;
		size_t k;

		if (p->cr_pending) {
			p->cr_pending = false;
			if (*s == '\n') {
				i++;
				continue;
			}
		}
		/* the next line end: LF or CR */
		for (k = i; k < n && buf[k] != '\n' && buf[k] != '\r'; k++)
			;
		e = buf + k;
		if (!p->line_over && sbuf_add(&p->line, s, (size_t)(e - s)) < 0) {
			/* keep what fits: its start says which field it is */
			(void)sbuf_add(&p->line, s, p->line.max - p->line.len);
			p->line_over = true;
		}
		if (k == n)
			break; /* no line end yet */
		if (buf[k] == '\r')
			p->cr_pending = true;
		i = k + 1;
		r = end_line(p);
		if (r < 0)
			return p->error = r;
	}
	return 0;
}

int sse_finish(struct sse_parser *p)
{
	if (p->error)
		return p->error;
	if (p->line.len > 0 || p->line_over) {
		int r = end_line(p);

		if (r < 0)
			return p->error = r;
	}
	if (p->has_data) {
		reset_event(p);
		return 1;
	}
	return 0;
}
