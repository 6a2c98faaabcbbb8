/* The five strategy axes of the adapter capability contract.
 *
 * Every adapter declares, on five typed axes, how bernstein drives it: how it
 * resumes a session, how it is told to skip permission prompts, which surface
 * carries its lifecycle events, what its run produces and whether it keeps
 * agent-side state. The orchestrator dispatches off these enums, never off
 * adapter names. The string forms are the exact values of the catalogue files
 * and of every --json output; they never change. */
#ifndef BERNSTEIN_ADAPTER_AXES_H
#define BERNSTEIN_ADAPTER_AXES_H

#include <errno.h>

/* How an adapter reattaches to a prior session (bernstein resume). */
enum resume_strategy {
	RESUME_FLAG,	    /* "flag": one flag carries the session id: --resume <id> */
	RESUME_FLAG_PAIR,   /* "flag-pair": --continue-from <old> --session-id <new> */
	RESUME_SUBCOMMAND,  /* "subcommand": <cli> resume <id> */
	RESUME_UNSUPPORTED, /* "unsupported": fresh session plus scratchpad reinjection */
	_RESUME_STRATEGY_MAX,
	_RESUME_STRATEGY_INVALID = -EINVAL,
};

/* How an adapter is told to skip interactive permission prompts. */
enum dangerous_mode {
	DANGEROUS_MODE_CLI_FLAG,    /* "cli-flag": --yolo, --dangerously-skip-permissions */
	DANGEROUS_MODE_ENV_VAR,	    /* "env-var": a variable read at start-up (GOOSE_MODE) */
	DANGEROUS_MODE_ALWAYS_ON,   /* "always-on": no permission system at all */
	DANGEROUS_MODE_UNSUPPORTED, /* "unsupported": cannot be told to skip prompts */
	_DANGEROUS_MODE_MAX,
	_DANGEROUS_MODE_INVALID = -EINVAL,
};

/* The surface bernstein reads for an adapter's lifecycle signals. */
enum event_channel {
	EVENT_CHANNEL_STREAM_JSON,  /* "stream-json": newline-delimited JSON events */
	EVENT_CHANNEL_TEXT_SIGNALS, /* "text-signals": BERNSTEIN:<KIND> lines on stdout */
	EVENT_CHANNEL_HOOKS,	    /* "hooks": the agent posts upstream hooks */
	EVENT_CHANNEL_POLL_PTY,	    /* "poll-pty": no structured channel, liveness polled */
	EVENT_CHANNEL_NONE,	    /* "none": process exit only */
	EVENT_CHANNEL_ACP,	    /* "acp": Agent Client Protocol JSON-RPC over stdio */
	_EVENT_CHANNEL_MAX,
	_EVENT_CHANNEL_INVALID = -EINVAL,
};

/* What a run produces as the completion unit of a task. */
enum output_mode {
	OUTPUT_MODE_GIT_DIFF, /* "git-diff": a commit on the worktree branch */
	OUTPUT_MODE_ARTIFACT, /* "artifact": a canonical artifact, recorded by hash */
	_OUTPUT_MODE_MAX,
	_OUTPUT_MODE_INVALID = -EINVAL,
};

/* Whether the agent keeps state of its own that outlives one spawn. */
enum session_state {
	SESSION_STATE_STATELESS,	/* "stateless": a replay of the inputs reproduces */
	SESSION_STATE_PERSISTENT_AGENT, /* "persistent-agent": agent-side memory; it may not */
	_SESSION_STATE_MAX,
	_SESSION_STATE_INVALID = -EINVAL,
};

/* The axes themselves, for code that walks all five generically. */
enum axis {
	AXIS_RESUME,
	AXIS_DANGEROUS_MODE,
	AXIS_EVENT_CHANNEL,
	AXIS_OUTPUT_MODE,
	AXIS_SESSION_STATE,
	_AXIS_MAX,
	_AXIS_INVALID = -EINVAL,
};

/* One adapter's declared strategy. */
struct adapter_strategy {
	enum resume_strategy resume;
	enum dangerous_mode dangerous_mode;
	enum event_channel event_channel;
	enum output_mode output_mode;
	enum session_state session_state;
};

/* The key of the axis in catalogue files and JSON: "resume", "dangerous_mode",
 * "event_channel", "output_mode", "session_state". NULL for an invalid axis. */
const char *axis_name(enum axis a);
/* The column title for tables: "resume", "dangerous mode", "event channel"... */
const char *axis_title(enum axis a);
/* The accepted values of the axis, in enum order, NULL-terminated. NULL for an
 * invalid axis. */
const char *const *axis_values(enum axis a);
/* Number of values of the axis (the _MAX of its enum), 0 for an invalid axis. */
int axis_count(enum axis a);
/* The enum value (>= 0) of the exact string s, or -EINVAL. */
int axis_from_string(enum axis a, const char *s);
/* The string of value v, or NULL when v is out of range. */
const char *axis_to_string(enum axis a, int v);
/* "resume" -> AXIS_RESUME ... or -EINVAL. */
int axis_from_name(const char *name);

/* Read or write one axis of a strategy by axis number. axis_set() returns 0,
 * or -EINVAL for an invalid axis or value (s unchanged). */
int axis_get(const struct adapter_strategy *s, enum axis a);
int axis_set(struct adapter_strategy *s, enum axis a, int v);

/* Typed conversions (thin wrappers of the generic ones). */
const char *resume_strategy_to_string(enum resume_strategy v);
enum resume_strategy resume_strategy_from_string(const char *s);
const char *dangerous_mode_to_string(enum dangerous_mode v);
enum dangerous_mode dangerous_mode_from_string(const char *s);
const char *event_channel_to_string(enum event_channel v);
enum event_channel event_channel_from_string(const char *s);
const char *output_mode_to_string(enum output_mode v);
enum output_mode output_mode_from_string(const char *s);
const char *session_state_to_string(enum session_state v);
enum session_state session_state_from_string(const char *s);

#endif
