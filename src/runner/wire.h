/* The two OpenAI wire formats the runner speaks, as pure functions (no I/O):
 *
 *   WIRE_CHAT       Chat Completions, POST {base_url}/chat/completions: what
 *                   third-party OpenAI-compatible endpoints serve (base_url set);
 *   WIRE_RESPONSES  Responses API, POST {default}/responses: the default endpoint.
 *
 * The conversation is kept in one neutral form (a JSON array of items, also
 * the saved transcript):
 *   {"role": "user", "content": "..."}
 *   {"role": "assistant", "content": "...",
 *    "tool_calls": [{"id": "call_1", "name": "read_file", "arguments": "{...}"}]}
 *   {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "..."}
 * and tools as [{"name", "description", "parameters": {JSON schema}}].
 * wire_build_request() turns both into one API's request body; the parsers
 * turn a reply (a JSON body, or a stream of SSE events fed one at a time) into
 * a struct wire_reply. Replies are untrusted: every size is capped and every
 * failure is an error code plus a message, never a crash. */
#ifndef BERNSTEIN_RUNNER_WIRE_H
#define BERNSTEIN_RUNNER_WIRE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"
#include "util/sbuf.h"

enum wire_api {
	WIRE_CHAT,
	WIRE_RESPONSES,
};

#define WIRE_MAX_TEXT  (8 * 1024 * 1024) /* assistant text of one reply */
#define WIRE_MAX_ARGS  (32 << 20)	 /* one tool call's arguments */
#define WIRE_MAX_CALLS 128		 /* tool calls in one reply */
#define WIRE_MAX_ID    256		 /* a call id or tool name */

struct wire_params {
	enum wire_api api;
	const char *model;
	const char *system; /* instructions / system message; NULL or "" = none */
	bool stream;
	bool has_temperature, has_top_p, has_top_k, has_max_tokens;
	double temperature, top_p;
	int64_t top_k, max_tokens;
};

/* A call whose arguments go past WIRE_MAX_ARGS is not an error of the reply:
 * it is kept with arguments "{}" and arguments_over set, so the tool can be
 * refused with a result the model reads (and the run goes on). */
struct wire_call {
	char *id;
	char *name;
	char *arguments;       /* JSON text as the model wrote it ("{}" when none) */
	size_t arguments_over; /* > 0: the arguments (at least this many bytes) were dropped */
};

struct wire_reply {
	char *text; /* never NULL after a successful parse ("" when none) */
	struct wire_call *calls;
	size_t ncalls;
	bool has_usage;
	int64_t input_tokens, output_tokens;
	char *finish; /* finish_reason / status, or NULL */
	char *id;     /* response id, or NULL */
};

/* Errors from the parsers: -EBADMSG malformed (not JSON, wrong types),
 * -ENOBUFS over a cap, -EPROTO the server reported an error in the body or
 * stream (message in reterr), -EBUSY the same for a rate-limit error
 * (code/type mentioning rate_limit or 429), -EPIPE a stream that ended early. */

/* The API's name for events: "chat_completions" / "responses". */
const char *wire_api_name(enum wire_api api);
/* The path appended to the base URL: "/chat/completions" / "/responses". */
const char *wire_api_path(enum wire_api api);

/* A new request body (caller decrefs). tools may be NULL or empty. */
json_t *wire_build_request(const struct wire_params *p, const json_t *items, const json_t *tools);

/* A whole JSON reply body. */
int wire_parse_body(enum wire_api api, const char *body, size_t len, struct wire_reply *ret,
		    struct diag *reterr);

/* A streamed reply: feed each SSE event (sse.h) in order, then finish. */
struct wire_call_acc {
	struct sbuf id, name, args;
	char *item_id; /* responses: the output item's id */
	long index;    /* chat: tool_calls[].index; responses: output_index */
	bool args_done;
	size_t args_over; /* > 0: the arguments went past WIRE_MAX_ARGS (bytes seen) */
};

struct wire_stream {
	enum wire_api api;
	struct sbuf text;
	struct wire_call_acc *calls;
	size_t ncalls;
	bool done;		/* chat: [DONE]; responses: response.completed/incomplete */
	bool saw_finish;	/* chat: a finish_reason arrived */
	json_t *final_output;	/* responses: response.output of the completion, if any */
	struct wire_reply meta; /* usage, finish, id gathered on the way */
	size_t chunks;
	size_t dropped; /* responses: events dropped over the SSE cap (sse.h) */
};

void wire_stream_init(struct wire_stream *s, enum wire_api api);
/* data NULL: the SSE parser dropped an event over its cap. A Responses
 * stream does without a dropped response.completed (the deltas are used) or
 * *.done / output_item event (a call left without arguments is marked
 * arguments_over); any other dropped event, and every dropped Chat chunk,
 * is -ENOBUFS. */
int wire_stream_event(struct wire_stream *s, const char *event, const char *data, size_t len,
		      struct diag *reterr);
/* After the last event. -EPIPE when the stream never said it was complete. */
int wire_stream_finish(struct wire_stream *s, struct wire_reply *ret, struct diag *reterr);
void wire_stream_release(struct wire_stream *s);

void wire_reply_release(struct wire_reply *r);

/* The neutral assistant item for a reply (caller decrefs). */
json_t *wire_reply_to_item(const struct wire_reply *r);

/* Is the neutral items array well formed (roles, field types, every tool
 * item answering an earlier call)? For loading a saved transcript. */
int wire_items_check(const json_t *items, struct diag *reterr);

#endif
