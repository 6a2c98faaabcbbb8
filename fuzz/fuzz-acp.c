/* Fuzz target for the ACP client (adapter/acp.c): the input is what an agent
 * writes on its stdout, split into lines; every line goes to the engine (one
 * of a conversation that offers no file access, so nothing is written) and
 * to the read-only dialect. Properties, besides never crashing:
 *   - acp_feed_line() returns 0, -EBADMSG or -ENOBUFS, a negative return with
 *     a diagnostic, and the engine is then finished;
 *   - what the engine queues for the agent's stdin is whole lines, each a
 *     strict JSON object with "jsonrpc": "2.0"; a failed engine queues
 *     nothing more;
 *   - every event serializes to one JSON line of its kind. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/acp.h"
#include "adapter/dialect.h"
#include "adapter/events.h"
#include "fuzz/fuzz.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/banned.h"

static void on_event(void *userdata, const struct event *ev)
{
	struct sbuf sb = SBUF_INIT(8u << 20);
	json_t *j = NULL;

	(void)userdata;
	if (event_to_json(ev, 1, &sb) != 0 || sb.len < 2 || sb.buf[sb.len - 1] != '\n' ||
	    memchr(sb.buf, '\n', sb.len - 1))
		__builtin_trap();
	if (json_parse_strict("event", sb.buf, sb.len, &j, NULL) < 0 || !json_is_object(j) ||
	    strcmp(json_string_value(json_object_get(j, "kind")), event_kind_to_string(ev->kind)))
		__builtin_trap();
	json_decref(j);
	sbuf_release(&sb);
}

/* Every queued frame is one strict JSON-RPC object on its own line. */
static void drain(struct acp *a)
{
	size_t len, off = 0;
	const char *p = acp_pending(a, &len);

	while (off < len) {
		const char *nl = memchr(p + off, '\n', len - off);
		json_t *o = NULL;

		if (!nl)
			__builtin_trap();
		if (json_parse_strict("out", p + off, (size_t)(nl - (p + off)), &o, NULL) < 0 ||
		    !json_is_object(o) || !json_is_string(json_object_get(o, "jsonrpc")) ||
		    strcmp(json_string_value(json_object_get(o, "jsonrpc")), "2.0") != 0)
			__builtin_trap();
		json_decref(o);
		off = (size_t)(nl - p) + 1;
	}
	acp_consume(a, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct event_sink sink = {.emit = on_event};
	struct acp_opts o = {.cwd = "/w/tree", .tree_fd = -1, .prompt = "p", .max_frame = 1u << 16};
	struct dialect_state st;
	const char *s = (const char *)data, *end = s + size;
	struct acp a;

	o.resume_id = size && (data[0] & 1) ? "old" : NULL;
	o.dangerous = size && (data[0] & 2);
	acp_init(&a, &o);
	dialect_state_init(&st, DIALECT_ACP);
	(void)acp_start(&a);
	drain(&a);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		bool failed = a.phase == ACP_PHASE_FAILED;
		struct diag d;
		int r;

		diag_clear(&d);
		r = acp_feed_line(&a, s, n, &sink, &d);
		if (r != 0 && r != -EBADMSG && r != -ENOBUFS)
			__builtin_trap();
		if (r < 0 && (!d.msg[0] || !acp_finished(&a)))
			__builtin_trap();
		if (failed && a.out.len)
			__builtin_trap();
		if (!(n % 7))
			(void)acp_cancel(&a);
		drain(&a);
		r = dialect_feed_line(&st, s, n, &sink, NULL);
		if (r != 0 && r != -EBADMSG && r != -ENOBUFS)
			__builtin_trap();
		s += n + (nl ? 1 : 0);
	}
	dialect_state_release(&st);
	acp_release(&a);
	return 0;
}
