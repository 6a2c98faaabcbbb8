/* One agent session under the supervisor: the machinery `bernstein spawn`
 * and `bernstein run` share (docs/spawning.md, docs/runs.md).
 *
 * Given an invocation plan (adapter/invocation.h), an agentrun
 *   - writes the plan's side files into the session directory and the
 *     agent's state directory, and plan.json;
 *   - opens SESSION_DIR/agent.log and SESSION_DIR/events.jsonl (appending);
 *   - fills the supervisor's proc_spec (argv, env, cwd, stdin, timeout,
 *     grace, and the hooks socket it listens on when the plan reads
 *     the hooks channel);
 *   - takes the supervisor's callbacks for its process: every line is
 *     redacted (the plan's secrets in every form util/redact.h knows; the
 *     head of an oversized line loses a tail that could start a secret too),
 *     logged, read with the plan's dialect (lines posted to the hooks socket
 *     with the hooks dialect) into normalized events, whose strings are
 *     redacted again as decoded (an agent may spell a secret with any JSON
 *     escapes, or in pieces a dialect joins), which are counted for the
 *     outcome, written to events.jsonl and handed to the caller's hook;
 *   - classifies the typed outcome (adapter/outcome.h) at the end and writes
 *     session.json.
 *
 * It never prints: the caller's hooks see every event (and its JSON line)
 * and every problem worth telling. Several agentruns may be fed by one
 * supervisor at once (one per child). */
#ifndef BERNSTEIN_ORCH_AGENTRUN_H
#define BERNSTEIN_ORCH_AGENTRUN_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "adapter/dialect.h"
#include "adapter/events.h"
#include "adapter/lasterr.h"
#include "adapter/outcome.h"
#include "proc/supervise.h"
#include "util/diag.h"
#include "util/sbuf.h"

struct invocation_plan;
struct profile;

#define AGENTRUN_LOG_MAX   (1ull << 30) /* agent.log stops growing here */
#define AGENTRUN_DIALECT   "bernstein"	/* the dialect of events bernstein itself writes */
#define AGENTRUN_RUNS_DIR  ".bernstein/runs"
#define AGENTRUN_EXIT_DESC (PATH_MAX + 128)

struct agentrun_hooks {
	/* Every normalized event, after it was counted and written; json is
	 * its line (with the newline). Optional. */
	void (*on_event)(void *userdata, const struct event *ev, const char *json, size_t len);
	/* An agent's stderr line (redacted). Optional. */
	void (*on_stderr)(void *userdata, const char *line, size_t len);
	/* A dialect's complaint about a stdout line (kept as an unknown event). Optional. */
	void (*on_parse_error)(void *userdata, const struct diag *d);
	/* events.jsonl could not be written (errno value); once. Optional. */
	void (*on_write_error)(void *userdata, const char *path, int err);
	void *userdata;
};

struct agentrun {
	const struct invocation_plan *plan; /* borrowed; outlives the agentrun */
	struct agentrun_hooks hooks;
	uint64_t timeout_ms;	  /* 0 none */
	uint64_t idle_timeout_ms; /* the stall watchdog (idle_timeout); 0 none */
	uint64_t kill_grace_ms;	  /* 0 the supervisor's default */
	bool expect_changes;	  /* a run that changes nothing is no_changes */
	/* this bernstein binary, the agent's init in the pidns tier
	 * (proc_spec.init_exe); NULL: the agent is its namespace's init */
	const char *init_exe;

	FILE *log;
	uint64_t log_bytes;
	bool log_capped;
	FILE *events;
	bool events_error;
	struct dialect_state dialect;
	struct dialect_state hooks_dialect; /* plan->hooks: the socket's lines */
	bool hooks_listening;		    /* the socket exists: unlink it at the end */
	struct outcome_inputs in;
	char *agent_session; /* the first session id the agent announced */
	char exit_desc[AGENTRUN_EXIT_DESC];
	int agent_exit_code;
	bool agent_exited;
	struct redact *rd; /* the plan's secrets (NULL: none) */
	struct sbuf line;  /* a redacted line */
	struct sbuf evbuf; /* the strings of a redacted event */
	struct sbuf json;  /* one serialized event */
	struct diag parse; /* a dialect's complaint about a line */
	char *last_text;   /* the last text/result message (final message; capped) */
	int64_t input_tokens, output_tokens;
	double cost_usd;
	int64_t cached_tokens;		    /* EVENT_UNSET: not reported */
	char model[128];		    /* the model the agent announced ("": none) */
	char last_kind[24];		    /* the kind of the last event */
	struct lasterr lasterr;		    /* the agent's own last error (adapter/lasterr.h) */
	char agent_error[LASTERR_MAX + 64]; /* agentrun_last_error()'s line */

	/* The acp event channel (plan->dialect == DIALECT_ACP): the client
	 * engine, the write end of the agent's stdin (-1 closed) and the tree
	 * the engine serves fs/ * beneath. */
	struct acp *acp;
	int acp_stdin_fd;
	int acp_tree_fd;
	/* The MCP servers handed to an ACP agent in session/new (ACP's McpServer
	 * array; borrowed, NULL = none): set before agentrun_fill_spec(). */
	const json_t *acp_mcp_servers;
	json_t *acp_mcp_owned; /* the plan's mcp_acp parsed (owned), or NULL */
};

/* Set up r for plan (borrowed: it must outlive r). No I/O. */
void agentrun_init(struct agentrun *r, const struct invocation_plan *plan,
		   const struct agentrun_hooks *hooks);
/* Write the side files and plan.json (plan_json: borrowed, may be NULL),
 * open agent.log and events.jsonl. -errno with the path in reterr. */
int agentrun_open(struct agentrun *r, const json_t *plan_json, struct diag *reterr);
/* Fill a supervisor spec (already PROC_SPEC_INIT) for the plan. */
int agentrun_fill_spec(struct agentrun *r, struct proc_spec *spec, struct diag *reterr);
/* Emit a warning event of bernstein's own (dialect "bernstein"). */
void agentrun_warning(struct agentrun *r, const char *msg);
/* Emit the plan's warnings. */
void agentrun_plan_warnings(struct agentrun *r);

/* How long an ACP agent gets to end its turn after session/cancel before
 * the SIGTERM (agentrun_stop()). */
#define AGENTRUN_ACP_CANCEL_MS 3000

/* The supervisor is about to stop r's agent (its deadline, a cancel): an
 * ACP agent is sent session/cancel first. Returns how many ms to wait
 * before the SIGTERM (0: at once). */
uint64_t agentrun_stop(struct agentrun *r);

/* The supervisor's callbacks for r's process. */
void agentrun_line(struct agentrun *r, int stream, const char *line, size_t len);
void agentrun_oversized(struct agentrun *r, int stream, const char *head, size_t head_len,
			uint64_t total);
void agentrun_notice(struct agentrun *r, enum proc_notice notice, uint64_t value);
void agentrun_exit(struct agentrun *r, const struct proc *p);
/* The plan's binary was not found: record the exit a failed execve's 127 (or 126)
 * would have given, without running anything. */
void agentrun_binary_missing(struct agentrun *r);

/* After the end: tell what the worktree did (optional), then classify.
 * why (may be NULL) gets the deciding rule. */
void agentrun_set_changes(struct agentrun *r, bool changed);
enum outcome agentrun_classify(struct agentrun *r, char *why, size_t why_size);

/* The agent's own last error, one line, redacted: what it said on its stream
 * (an error, a rate limit, a failed result, with the HTTP status) or, when it
 * said nothing there, its last stderr line that reads like an error; "" when
 * it said nothing. Valid until the next call or agentrun_release(). */
const char *agentrun_last_error(struct agentrun *r);

/* Flush and close the files; free everything. */
void agentrun_release(struct agentrun *r);

/* The plan as JSON (argv with secrets redacted, env names only, files,
 * strategy, dialect...): what plan.json and `spawn --dry-run --json` show. */
json_t *agentrun_plan_json(const struct profile *p, const struct invocation_plan *plan,
			   const char *run, const char *session);

/* The state directory recorded by the newest SESSION_DIR/session.json under
 * WORKDIR/.bernstein/runs with this adapter and agent session id (and still
 * a directory), or NULL. */
char *agentrun_find_state_dir(const char *workdir, const char *adapter, const char *session_id);

/* What session.json records of one agent run besides what r knows: spawn and
 * run write the same schema (docs/spawning.md, "session.json"). Strings may
 * be NULL (null in the file). */
struct session_record {
	const char *adapter;
	const char *run, *session; /* the run's and the session's ids */
	const char *task;	   /* a run's task; NULL for spawn */
	int attempt;		   /* its attempt, from 1; 0 for spawn (null) */
	int exit_code;		   /* spawn's exit code; -1 for a run's task (null) */
	const char *started_at, *ended_at;
};

/* session.json of r, ended with out (why: the deciding rule): rec's fields,
 * the agent's exit, session id and whether the worktree changed (null when
 * not known) from r, the session, state directory and resume id from its
 * plan, and "kind": "outcome". Every key is always present. */
json_t *agentrun_session_json(const struct agentrun *r, enum outcome out, const char *why,
			      const struct session_record *rec);

/* Write o to path as pretty JSON with sorted keys and a final newline,
 * atomically, mode 0600. */
int agentrun_write_json(const char *path, const json_t *o);

/* A redactor of the plan's secrets, or NULL when it has none (caller frees
 * with redact_free()). */
struct redact *agentrun_redactor(const struct invocation_plan *plan);

/* A path under dir (caller frees). */
char *agentrun_path(const char *dir, const char *name);

#endif
