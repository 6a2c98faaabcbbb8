/* The runner's event stream: one JSON object per line on an fd (stdout, given
 * by cli/), written whole with one write per line and flushed by nature (no
 * stdio buffering). Strings are UTF-8 (not \u-escaped). Every string and
 * key of a line is redacted (util/redact.h: the API key and the other
 * secrets of the runner's environment, in every form, JSON inside a string
 * included) before it is written, so even a server that echoes a key back
 * cannot make the runner print it.
 *
 * Event types (docs/runner.md): start, progress, tool_call, tool_result,
 * usage, completion, error. An error carries a kind: manifest_missing,
 * manifest_invalid, config_invalid, rate_limit, runtime, http, max_turns. */
#ifndef BERNSTEIN_RUNNER_EVENTS_H
#define BERNSTEIN_RUNNER_EVENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct redact;

struct events {
	int fd;
	struct redact *rd; /* borrowed; NULL = nothing to redact */
	size_t written;
	int error; /* first write error (negative errno), 0 if none */
};

void events_init(struct events *e, int fd);
void events_set_redact(struct events *e, struct redact *rd);

/* {"type": type} (caller fills and emits). */
json_t *events_new(const char *type);
/* Write ev (redacted in place) as one line and decref it. Returns 0 or the
 * write error. */
int events_emit(struct events *e, json_t *ev);
/* A JSON string of s, invalid UTF-8 replaced (never NULL for non-NULL s). */
json_t *events_str(const char *s);
/* {"type": "progress", "message": msg}. */
int events_progress(struct events *e, const char *msg);
/* {"type": "error", "kind": kind, "message": msg}. */
int events_error(struct events *e, const char *kind, const char *msg);

/* The same redaction (of v, in place) and serialisation, for files the
 * runner writes (transcript, heartbeat): returns a NUL-terminated,
 * newline-terminated buffer (caller frees) or NULL. pretty: 2-space indent. */
char *events_serialise(json_t *v, struct redact *rd, bool pretty, size_t *ret_len);

#endif
