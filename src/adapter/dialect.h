/* Dialect readers: one per family of agent output, each turning lines into
 * normalized events (adapter/events.h). Pure code: no process, no I/O.
 *
 * Feed every complete stdout line (without its newline) to
 * dialect_feed_line() or to the family's own dialect_X_feed_line(); feed
 * stderr lines to dialect_feed_stderr() and oversized-line reports to
 * dialect_feed_oversized(). Events go to the sink as they are recognised;
 * the state carries what spans lines (the session id announced, usage
 * totals, tool calls already announced).
 *
 * A line never stops the stream. A line that cannot be read (not JSON, a
 * duplicate key, not an object, longer than DIALECT_MAX_LINE) is kept as an
 * EVENT_UNKNOWN (with "reason" and the head of the line in "raw"), and the
 * call returns -EBADMSG (-ENOBUFS for the length) with reterr filled as
 * STREAM:LINE:COL: message. That return is a report for the log, never a
 * reason to stop feeding: the state is unchanged and the next line is read
 * normally. Blank lines are skipped. Known event types that carry nothing of
 * interest (codex turn.started, pi message_update...) produce no event; an
 * unknown type produces EVENT_UNKNOWN and returns 0.
 *
 * The mapping of every dialect's events to normalized kinds is the table in
 * docs/event-stream.md. */
#ifndef BERNSTEIN_ADAPTER_DIALECT_H
#define BERNSTEIN_ADAPTER_DIALECT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/events.h"
#include "util/diag.h"

enum dialect {
	DIALECT_CLAUDE,	  /* "claude": claude and qwen stream-json (system/assistant/user/result) */
	DIALECT_CODEX,	  /* "codex": codex exec --json (thread.* turn.* item.* error) */
	DIALECT_GEMINI,	  /* "gemini": gemini -o stream-json (init, message, tool_use, tool_result,
			     result) */
	DIALECT_OPENCODE, /* "opencode": opencode run --format json (step_*, tool_use, ...) */
	DIALECT_PI,	  /* "pi": pi --mode json (session, agent_*, message_*, tool_execution_*) */
	DIALECT_RUNNER,	  /* "runner": the built-in runner's event lines */
	DIALECT_TEXT_SIGNALS, /* "text-signals": BERNSTEIN:<KIND>[ <json-object>] lines */
	DIALECT_POLL_PTY,     /* "poll-pty": plain output; liveness from output growth */
	DIALECT_NONE,	      /* "none": plain output; the exit is all there is */
	DIALECT_HOOKS,	      /* "hooks": the payloads an agent's hooks post to bernstein's
			       * endpoint (not a stdout grammar; Claude Code's event names) */
	DIALECT_ACP,	      /* "acp": Agent Client Protocol JSON-RPC frames (adapter/acp.h) */
	_DIALECT_MAX,
	_DIALECT_INVALID = -EINVAL,
};

/* Longest line a reader parses; a longer one is kept as EVENT_UNKNOWN (its
 * head) with -ENOBUFS. The supervisor's own cap (1 MiB by default) is lower. */
#define DIALECT_MAX_LINE (4u << 20)
#define DIALECT_ID_MAX	 256 /* session and tool ids longer than this are cut */
#define DIALECT_TOOL_IDS 16  /* tool calls remembered (id and name) */
#define DIALECT_NAME_MAX 64  /* tool names longer than this are cut in the memory */

struct dialect_state {
	enum dialect dialect;
	const char *stream_name; /* diag file name; "stdout" ("hooks" for DIALECT_HOOKS) */
	uint64_t line_no;	 /* stdout lines fed so far */
	uint64_t err_line_no;	 /* stderr lines fed so far */

	bool session_announced;
	char session_id[DIALECT_ID_MAX];

	/* usage totals of this spawn (dialects that report per step add up) */
	bool have_usage;
	int64_t input_tokens, output_tokens, cached_tokens;
	double cost_usd; /* < 0: never reported */

	/* the last tool calls announced: a result does not announce its call
	 * again (codex item.started, opencode pending/running) and gets the
	 * tool's name when its own event lacks it (claude's tool_result) */
	char tool_ids[DIALECT_TOOL_IDS][DIALECT_ID_MAX];
	char tool_names[DIALECT_TOOL_IDS][DIALECT_NAME_MAX];
	unsigned tool_ids_next;

	/* counters, for callers and tests */
	uint64_t events;    /* emitted */
	uint64_t bad_lines; /* lines that returned a negative errno */
	bool terminal_seen; /* an EVENT_RESULT was emitted */

	/* poll-pty with runtime.pty: stdout lines are the screen driver's
	 * reports (proc/ptydrive.h), never the agent's bytes; set by the
	 * caller after dialect_state_init() */
	bool pty_screen;
};

/* "claude", ..., "none"; NULL when out of range. */
const char *dialect_to_string(enum dialect d);
/* The exact name, or "qwen" (an alias of "claude"); _DIALECT_INVALID else. */
enum dialect dialect_from_string(const char *s);
/* Whether the dialect has a terminal event (claude/qwen result, codex
 * turn.completed/turn.failed, gemini result, opencode's last step_finish
 * with reason "stop", pi agent_end, runner completion): a run that exits
 * without it did not finish (adapter/outcome.h). text-signals, poll-pty and
 * none have no mandatory terminal event. */
bool dialect_has_terminal(enum dialect d);

void dialect_state_init(struct dialect_state *st, enum dialect d);
/* Nothing is allocated across calls; provided for symmetry (resets st). */
void dialect_state_release(struct dialect_state *st);

/* Dispatch on st->dialect. */
int dialect_feed_line(struct dialect_state *st, const char *line, size_t len,
		      const struct event_sink *sink, struct diag *reterr);

int dialect_claude_feed_line(struct dialect_state *st, const char *line, size_t len,
			     const struct event_sink *sink, struct diag *reterr);
int dialect_codex_feed_line(struct dialect_state *st, const char *line, size_t len,
			    const struct event_sink *sink, struct diag *reterr);
int dialect_gemini_feed_line(struct dialect_state *st, const char *line, size_t len,
			     const struct event_sink *sink, struct diag *reterr);
int dialect_opencode_feed_line(struct dialect_state *st, const char *line, size_t len,
			       const struct event_sink *sink, struct diag *reterr);
int dialect_pi_feed_line(struct dialect_state *st, const char *line, size_t len,
			 const struct event_sink *sink, struct diag *reterr);
int dialect_runner_feed_line(struct dialect_state *st, const char *line, size_t len,
			     const struct event_sink *sink, struct diag *reterr);
/* One hook payload (a JSON object on one line, as `bernstein hook-post`
 * sends it); the state's stream name is "hooks". */
int dialect_hooks_feed_line(struct dialect_state *st, const char *line, size_t len,
			    const struct event_sink *sink, struct diag *reterr);

/* The longest payload line `bernstein hook-post` sends (bytes, without the
 * newline); well under the supervisor's line cap. */
#define DIALECT_HOOKS_LINE_MAX (256 * 1024)
/* Turn what a hook command read on stdin (buf, len: anything) into the one
 * line `bernstein hook-post` sends, appended to out with its newline: a JSON
 * object, compact. A JSON object is kept; another JSON value becomes
 * {"payload": VALUE}, anything else {"raw": TEXT} (its head; invalid UTF-8
 * made '?'), nothing at all {}. event (may be NULL) is set as
 * hook_event_name when the object names no event ("hook_event_name" or
 * "event"). Strings longer than EVENT_FIELD_MAX are cut, and if the line is
 * still longer than DIALECT_HOOKS_LINE_MAX, to 4 KiB, then everything but the
 * event's names is dropped; a cut adds "bernstein_truncated": true. Returns 0,
 * or -ENOBUFS (out's cap) / -ENOMEM. */
struct sbuf;
int dialect_hooks_payload(const char *buf, size_t len, const char *event, struct sbuf *out);
/* Text channels: text-signals parses the BERNSTEIN:<KIND> grammar; poll-pty
 * and none only make every line an EVENT_TEXT. All three also report lines
 * that match the rate-limit needles as EVENT_RATE_LIMITED (ratelimit.h). */
int dialect_text_signals_feed_line(struct dialect_state *st, const char *line, size_t len,
				   const struct event_sink *sink, struct diag *reterr);
int dialect_plain_feed_line(struct dialect_state *st, const char *line, size_t len,
			    const struct event_sink *sink, struct diag *reterr);

/* A stderr line: emits EVENT_RATE_LIMITED (stream 2) when it matches the
 * rate-limit needles, nothing otherwise (stderr is in agent.log). Returns 0. */
int dialect_feed_stderr(struct dialect_state *st, const char *line, size_t len,
			const struct event_sink *sink);

/* A line longer than the supervisor's cap (head: its first head_len bytes,
 * total: its length): counts the line and emits EVENT_WARNING. Returns 0. */
int dialect_feed_oversized(struct dialect_state *st, int stream, const char *head, size_t head_len,
			   uint64_t total, const struct event_sink *sink);

/* ---- the text-signals grammar (anchor stream_signals.py, section 4.1) ------- */

enum text_signal {
	TEXT_SIGNAL_COMPLETED, /* terminal */
	TEXT_SIGNAL_FAILED,    /* terminal */
	TEXT_SIGNAL_QUESTION,
	TEXT_SIGNAL_PLAN_DRAFT,
	TEXT_SIGNAL_PLAN_READY,
	TEXT_SIGNAL_BLOCKED,
	_TEXT_SIGNAL_MAX,
	_TEXT_SIGNAL_INVALID = -EINVAL,
};

/* "COMPLETED", ...; NULL when out of range. */
const char *dialect_text_signals_kind_name(enum text_signal s);

/* Parse one line as BERNSTEIN:<KIND>[ <json-object>]: the line is stripped
 * of ASCII whitespace; it must start with "BERNSTEIN:" (case-sensitive);
 * the rest, left-stripped, splits at its first whitespace run into the kind
 * (exactly one of the six names) and an optional payload that must parse as
 * a JSON object (strictly: duplicate keys make it not a signal). Returns 1
 * with *ret_kind and *ret_payload (a new reference: the object, or an empty
 * object when there is none) for a signal, 0 for any other line. */
struct json_t;
int dialect_text_signals_parse(const char *line, size_t len, enum text_signal *ret_kind,
			       struct json_t **ret_payload);

/* ---- poll-pty liveness ------------------------------------------------------- */

/* Liveness from output growth: the supervisor reports the byte count it has
 * read so far, and the run is "idle" for as long as it does not grow. */
struct dialect_liveness {
	uint64_t bytes;		 /* the largest count seen */
	uint64_t last_growth_ms; /* monotonic ms of the last growth (or of init) */
};

void dialect_liveness_init(struct dialect_liveness *l, uint64_t now_ms);
/* Returns true when total_bytes grew since the last call. */
bool dialect_liveness_observe(struct dialect_liveness *l, uint64_t total_bytes, uint64_t now_ms);
/* Milliseconds since the output last grew. */
uint64_t dialect_liveness_idle_ms(const struct dialect_liveness *l, uint64_t now_ms);

#endif
