/* Fuzz target for the streamed-reply path: the SSE parser fed in chunks
 * whose sizes come from the first input byte, its events fed to the wire
 * stream accumulators of both APIs (Chat Completions and Responses), and the
 * whole input also parsed as a plain reply body of both APIs. Any successful
 * reply must be well formed (text set, every call with an id and a name). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "runner/sse.h"
#include "runner/wire.h"

struct ctx {
	struct wire_stream s;
	struct diag d;
	size_t events;
};

static int on_event(void *userdata, const char *event, const char *data, size_t len)
{
	struct ctx *c = userdata;

	/* data NULL: an event dropped over the cap */
	if (!event || (data && data[len] != '\0') || (!data && len != 0))
		abort();
	c->events++;
	return wire_stream_event(&c->s, event, data, len, &c->d);
}

static void check_reply(const struct wire_reply *r)
{
	size_t i;

	if (!r->text)
		abort();
	(void)strlen(r->text);
	if (r->ncalls > WIRE_MAX_CALLS)
		abort();
	for (i = 0; i < r->ncalls; i++)
		if (!r->calls[i].id || !r->calls[i].name || !r->calls[i].name[0] ||
		    !r->calls[i].arguments)
			abort();
}

static void run_stream(enum wire_api api, const uint8_t *data, size_t size, size_t step)
{
	struct sse_parser p;
	struct ctx c;
	struct wire_reply r = {0};
	size_t i;
	int rc = 0;

	memset(&c, 0, sizeof(c));
	wire_stream_init(&c.s, api);
	sse_init(&p, 4096, 16384, on_event, &c);
	for (i = 0; i < size && rc == 0; i += step)
		rc = sse_feed(&p, (const char *)data + i, size - i < step ? size - i : step);
	if (rc == 0)
		rc = sse_finish(&p);
	if (rc >= 0 && wire_stream_finish(&c.s, &r, &c.d) == 0) {
		check_reply(&r);
		json_decref(wire_reply_to_item(&r));
		wire_reply_release(&r);
	}
	sse_release(&p);
	wire_stream_release(&c.s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_reply r = {0};
	struct diag d;
	size_t step = 1;

	if (size > 0) {
		step = (size_t)(data[0] % 64) + 1;
		data++;
		size--;
	}
	run_stream(WIRE_CHAT, data, size, step);
	run_stream(WIRE_RESPONSES, data, size, step);
	if (wire_parse_body(WIRE_CHAT, (const char *)data, size, &r, &d) == 0) {
		check_reply(&r);
		wire_reply_release(&r);
	}
	if (wire_parse_body(WIRE_RESPONSES, (const char *)data, size, &r, &d) == 0) {
		check_reply(&r);
		wire_reply_release(&r);
	}
	return 0;
}
