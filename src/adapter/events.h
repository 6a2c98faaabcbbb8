/* The normalized event model: what every dialect reader (adapter/dialect.h)
 * turns an agent's output into, and its serialization as one JSON object per
 * line in a session's events.jsonl. docs/event-stream.md is the reference
 * (schema, one example per kind, the mapping table per dialect).
 *
 * A struct event is a view: every pointer in it is borrowed and valid only
 * during the event_emit_fn call that receives it. Keep what you need by
 * copying (or serialize it right there with event_to_json()). */
#ifndef BERNSTEIN_ADAPTER_EVENTS_H
#define BERNSTEIN_ADAPTER_EVENTS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/ratelimit.h"
#include "util/sbuf.h"

enum event_kind {
	EVENT_SESSION_STARTED, /* "session_started": the agent's own session id (resume needs it) */
	EVENT_TEXT,	       /* "text": assistant text (or an output line of a text channel) */
	EVENT_TOOL_CALL,       /* "tool_call": the agent invokes a tool */
	EVENT_TOOL_RESULT,     /* "tool_result": a tool finished (is_error when it failed) */
	EVENT_USAGE,	       /* "usage": token and cost totals so far for this spawn */
	EVENT_RATE_LIMITED,    /* "rate_limited": the provider refused for rate or quota */
	EVENT_RESULT,	       /* "result": the agent's terminal event (is_error: it failed) */
	EVENT_ERROR,	       /* "error": an error the agent reported (API error, crash) */
	EVENT_WARNING,	       /* "warning": something noteworthy but not an error */
	EVENT_SIGNAL,	       /* "signal": a non-terminal BERNSTEIN:<KIND> text signal */
	EVENT_UNKNOWN,	       /* "unknown": a line not understood; kept, never fatal */
	_EVENT_KIND_MAX,
	_EVENT_KIND_INVALID = -EINVAL,
};

/* Integer fields that the agent did not report hold this. */
#define EVENT_UNSET (-1)

/* Serialized strings are cut at these many bytes (at a UTF-8 boundary) and the
 * event gets "truncated": true; the whole line stays in agent.log. */
#define EVENT_FIELD_MAX (64 * 1024)
#define EVENT_RAW_MAX	(4 * 1024) /* the "raw" head of an unknown line */

struct event {
	enum event_kind kind;
	const char *dialect; /* the reader that produced it: "claude", "codex"... */
	uint64_t line;	     /* 1-based number of the line of its stream it came from; 0 none */
	int stream;	     /* 1 stdout (default), 2 stderr */
	const char *type;    /* the agent's own event type ("turn.completed"), NULL none */

	/* session_started */
	const char *session_id;
	const char *model;

	/* text; result: the final message */
	const char *text;
	bool delta; /* text: a streamed chunk rather than a whole message */

	/* tool_call, tool_result */
	const char *tool_name;
	const char *tool_id;
	const char *tool_args;	 /* tool_call: the arguments, as JSON text (object or value) */
	const char *tool_output; /* tool_result */
	bool is_error;		 /* tool_result: the tool failed; result: the run failed */
	bool permission_denied;	 /* tool_result: refused by the agent's permission system */

	/* usage: totals for this spawn so far; EVENT_UNSET when not reported */
	int64_t input_tokens;
	int64_t output_tokens;
	int64_t cached_tokens;
	double cost_usd; /* < 0: not reported */

	/* result */
	const char *status; /* the agent's own word: "success", "error_during_execution"... */
	int64_t num_turns;
	int64_t duration_ms;
	int64_t permission_denials; /* refusals the agent counted (claude, qwen) */

	/* error, warning, rate_limited; result: why it failed */
	const char *message;
	const char *error_kind;	    /* the agent's error class: "APIError", "rate_limit"... */
	int http_status;	    /* 0 unknown */
	struct ratelimit_hint hint; /* rate_limited: when to retry, if the agent said */

	/* signal (and result from text signals) */
	const char *signal;  /* "QUESTION", "PLAN_DRAFT", "PLAN_READY", "BLOCKED"... */
	const char *payload; /* the signal's JSON object, as text */

	/* unknown */
	const char *reason; /* "unknown event type", "not JSON: ..." */
	const char *raw;    /* the line (its head: EVENT_RAW_MAX bytes are kept) */
	size_t raw_len;
};

typedef void event_emit_fn(void *userdata, const struct event *ev);

/* Where a reader sends its events. A NULL sink or emit drops them. */
struct event_sink {
	event_emit_fn *emit;
	void *userdata;
};

/* A blank event of the given kind: integers EVENT_UNSET, cost -1, stream 1. */
void event_init(struct event *ev, enum event_kind kind);

const char *event_kind_to_string(enum event_kind k);
enum event_kind event_kind_from_string(const char *s);

/* Append ev as one JSON object and a newline to out (the events.jsonl form,
 * docs/event-stream.md). ts_ns > 0 adds "ts" (UTC ISO-8601, microseconds).
 * Strings are escaped, invalid UTF-8 becomes U+FFFD, long fields are cut
 * (EVENT_FIELD_MAX, EVENT_RAW_MAX). tool_args and payload are embedded as JSON
 * values when they parse as JSON, as strings otherwise. Returns 0, or
 * -ENOBUFS when out's cap is hit (out is then left as it was). */
int event_to_json(const struct event *ev, int64_t ts_ns, struct sbuf *out);

/* ev with every string field redacted (util/redact.h) into *ret: the strings
 * of ret point into buf (reset first) and live as long as it is not changed;
 * the other fields are ev's. Returns the number of REDACT_MARKs written.
 * rd NULL or empty: *ret is *ev. */
struct redact;
int event_redact(const struct event *ev, struct redact *rd, struct sbuf *buf, struct event *ret);

/* One human-readable line for a terminal, without a newline: "tool call
 * Write {\"file_path\":...}". Control bytes (escape sequences included)
 * become spaces; cut to size. Returns buf. */
const char *event_describe(const struct event *ev, char *buf, size_t size);

#endif
