/* The agent's own last error: what it said went wrong, in one short line, for
 * `status`, the live table and the run summary (docs/runs.md, "Why a task
 * failed"). Pure code: no process, no I/O.
 *
 * Two sources, fed as the agent runs:
 *   - its normalized events (lasterr_observe()): an EVENT_ERROR, an
 *     EVENT_RATE_LIMITED, or an EVENT_RESULT that failed; the last one wins,
 *     with the HTTP status the dialect read from it;
 *   - its stderr lines (lasterr_stderr()): a line that reads like an error
 *     of that dialect's CLI ("When using Gemini API, you must specify the
 *     GEMINI_API_KEY environment variable.", "Error: ..."); the last one wins,
 *     joined with the error lines right after it ("No API key found for the
 *     selected model. Use /login to log into a provider ...").
 * The stream's error is preferred; stderr's is used when the stream said
 * nothing (a CLI that gives up before its first event).
 *
 * Everything fed here comes from the agent: the text kept is one line (control
 * bytes, escape sequences included, become spaces; blanks collapse), cut at a
 * UTF-8 boundary to LASTERR_MAX bytes. Redaction is the caller's: feed
 * redacted events and lines, and redact the result again (a line's pieces
 * joined by the collapsing could spell a secret). */
#ifndef BERNSTEIN_ADAPTER_LASTERR_H
#define BERNSTEIN_ADAPTER_LASTERR_H

#include <stdbool.h>
#include <stddef.h>

#include "adapter/dialect.h"
#include "adapter/events.h"

#define LASTERR_MAX 240 /* bytes of the line kept, without the NUL */

struct lasterr {
	enum dialect dialect;
	char stream[LASTERR_MAX + 1]; /* from the events; "" none */
	int http;		      /* its HTTP status; 0 unknown */
	char err[LASTERR_MAX + 1];    /* from stderr; "" none */
	bool err_open;		      /* the last stderr line read added to err */
};

void lasterr_init(struct lasterr *le, enum dialect d);
/* Keep ev's message when it is an error, a rate limit or a failed result. */
void lasterr_observe(struct lasterr *le, const struct event *ev);
/* Keep a stderr line when it reads like an error of le's dialect (blank
 * lines are skipped; a line that does not read like one ends the error). */
void lasterr_stderr(struct lasterr *le, const char *line, size_t len);
/* The last error as one line into buf ("HTTP 401: invalid x-api-key" when the
 * status is known and the text does not already say it); "" when the agent
 * said nothing. Returns buf. */
const char *lasterr_text(const struct lasterr *le, char *buf, size_t size);
/* s (len bytes, any content) as one line of at most size - 1 bytes: control
 * bytes and DEL become spaces, runs of blanks one space, no blanks at either
 * end, invalid UTF-8 a '?', cut at a character boundary with "..." when it
 * does not fit. Returns buf. */
const char *lasterr_oneline(const char *s, size_t len, char *buf, size_t size);

#endif
