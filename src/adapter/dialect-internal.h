/* Shared helpers of the dialect readers (dialect-*.c). Not a public API. */
#ifndef BERNSTEIN_ADAPTER_DIALECT_INTERNAL_H
#define BERNSTEIN_ADAPTER_DIALECT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/dialect.h"
#include "util/sbuf.h"

/* Start a JSON line: counts it, skips blank lines (returns 0), turns an
 * unreadable one into EVENT_UNKNOWN (returns -EBADMSG or -ENOBUFS with
 * reterr), else returns 1 with the object in *ret (caller json_decref()s). */
int dialect_json_line(struct dialect_state *st, const char *line, size_t len,
		      const struct event_sink *sink, struct diag *reterr, json_t **ret);

/* Stamp (dialect, line) and hand ev to the sink. */
void dialect_emit(struct dialect_state *st, const struct event_sink *sink, struct event *ev);

/* EVENT_SESSION_STARTED the first time a non-empty id is seen. */
void dialect_session(struct dialect_state *st, const struct event_sink *sink, const char *type,
		     const char *session_id, const char *model);
void dialect_unknown(struct dialect_state *st, const struct event_sink *sink, const char *type,
		     const char *line, size_t len, const char *reason);
void dialect_text(struct dialect_state *st, const struct event_sink *sink, const char *type,
		  const char *text, bool delta);
/* EVENT_TOOL_CALL with args dumped as compact JSON; remembers id. */
void dialect_tool_call(struct dialect_state *st, const struct event_sink *sink, const char *type,
		       const char *name, const char *id, const json_t *args);
/* Whether a tool call with this id was announced already. */
bool dialect_tool_announced(const struct dialect_state *st, const char *id);
/* The name of an announced tool call, or NULL. */
const char *dialect_tool_name(const struct dialect_state *st, const char *id);
/* EVENT_TOOL_RESULT (name NULL: the announced call's name); permission_denied
 * when is_error and the output reads like a refusal of the agent's
 * permission system, sandbox or the OS. */
void dialect_tool_result(struct dialect_state *st, const struct event_sink *sink, const char *type,
			 const char *name, const char *id, const char *output, bool is_error);
/* Usage: add a step's numbers (< 0 = not reported) or set run totals, then
 * emit the totals. */
void dialect_usage_add(struct dialect_state *st, int64_t in, int64_t out, int64_t cached,
		       double cost);
void dialect_usage_set(struct dialect_state *st, int64_t in, int64_t out, int64_t cached,
		       double cost);
void dialect_usage_emit(struct dialect_state *st, const struct event_sink *sink, const char *type);
/* EVENT_ERROR, then EVENT_RATE_LIMITED when it is one (see
 * dialect_rate_check). */
void dialect_error(struct dialect_state *st, const struct event_sink *sink, const char *type,
		   const char *message, const char *kind, int http_status, bool rate_limited);
/* EVENT_RATE_LIMITED when force, http_status is 429 or message matches the
 * needles; the hint is read from message. Returns whether it emitted. */
bool dialect_rate_check(struct dialect_state *st, const struct event_sink *sink, const char *type,
			const char *message, int http_status, bool force);

/* A plain-text line (already counted): EVENT_TEXT, + EVENT_RATE_LIMITED
 * when it matches the needles; blank lines are skipped. */
int dialect_plain_text(struct dialect_state *st, const char *line, size_t len,
		       const struct event_sink *sink, struct diag *reterr);

/* poll-pty with runtime.pty: a report line of the screen driver. */
int dialect_pty_feed_line(struct dialect_state *st, const char *line, size_t len,
			  const struct event_sink *sink, struct diag *reterr);

/* JSON accessors: NULL / EVENT_UNSET / -1.0 / false when absent or mistyped. */
const char *dj_str(const json_t *o, const char *key);
int64_t dj_int(const json_t *o, const char *key);
double dj_real(const json_t *o, const char *key);
bool dj_true(const json_t *o, const char *key);
json_t *dj_obj(const json_t *o, const char *key);
json_t *dj_arr(const json_t *o, const char *key);

/* Text of a content value: a string, or an array of blocks whose "text"
 * members are joined with newlines. Appended to sb (capped: the head is
 * kept). Returns sb->buf. */
const char *dialect_content_text(const json_t *content, struct sbuf *sb);
/* Append at most what fits under sb's cap. */
void dialect_sbuf_head(struct sbuf *sb, const char *s, size_t n);
/* "API Error: 400 ..." / "[API Error: 400 ...]": the marker claude and qwen
 * put in a text when the provider answered with an error. */
bool dialect_is_api_error_text(const char *s);

#endif
