/* The client side of the Agent Client Protocol (ACP): JSON-RPC 2.0 over the
 * agent's stdin and stdout, one JSON object per line (docs/event-stream.md,
 * "The acp channel").
 *
 * The engine does no process I/O of its own: the caller feeds it every line
 * the agent writes on stdout (acp_feed_line()) and writes what it queued
 * (acp_pending(), acp_consume()) to the agent's stdin. Events go to the sink
 * as with every dialect reader (adapter/dialect.h; dialect "acp"). The one
 * kind of I/O it does is what ACP asks of a client: fs/read_text_file and
 * fs/write_text_file, served beneath opts.tree_fd with util/beneath.h (the
 * openat2 code of the built-in runner's file tools, with the same refusal
 * of .git and .bernstein names).
 *
 * The conversation, client (bernstein) -> agent:
 *   initialize (protocolVersion 1, fs read/write offered when tree_fd >= 0,
 *     no terminal) -> the agent's capabilities are recorded;
 *   session/load {sessionId: resume_id} when a resume was asked and the
 *     agent advertises loadSession (the replay it sends is not re-emitted),
 *     else (or when the load fails: a warning) session/new {cwd, mcpServers};
 *   session/prompt {prompt: [text]} -> the turn; its stopReason is the
 *     terminal result event (end_turn: success; anything else: failed);
 *   session/cancel (a notification) when acp_cancel() is called.
 * After the prompt's answer (or a failure) acp_finished() is true: the caller
 * closes the agent's stdin, and ACP agents exit on EOF.
 *
 * Agent -> client:
 *   session/update notifications -> events (see dialect_acp_feed_line());
 *   session/request_permission -> answered at once by the policy:
 *     dangerous: allow; otherwise allow when every path the tool call names
 *     is inside the tree (not in .git or .bernstein) and its kind is not
 *     execute or fetch, else refuse. Each answer is a "signal" event
 *     PERMISSION {decision, kind, title, paths, option};
 *   fs/read_text_file, fs/write_text_file -> served confined (a missing file
 *     reads as ""), a refusal is a JSON-RPC error and a warning event;
 *   any other method -> JSON-RPC error -32601, and a warning event.
 *
 * A frame that is not a JSON-RPC 2.0 object (not JSON, a duplicate key, not
 * an object, longer than opts.max_frame) is a protocol failure: an unknown
 * event, an error event and a failed result (status "protocol_error"); the
 * engine is finished and answers nothing more. */
#ifndef BERNSTEIN_ADAPTER_ACP_H
#define BERNSTEIN_ADAPTER_ACP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/dialect.h"
#include "adapter/events.h"
#include "util/diag.h"
#include "util/sbuf.h"

#define ACP_PROTOCOL_VERSION 1
#define ACP_MAX_FRAME	     (4u << 20)	 /* default frame cap (bytes, without the newline) */
#define ACP_MAX_FILE	     (1u << 20)	 /* default cap of a file read or written for the agent */
#define ACP_MAX_OUT	     (8u << 20)	 /* frames queued for the agent's stdin at most */
#define ACP_REPLY_MAX	     (64u << 10) /* the final message kept for the result event */

/* JSON-RPC error codes used in answers. */
#define ACP_ERR_PARSE		 -32700
#define ACP_ERR_INVALID_REQUEST	 -32600
#define ACP_ERR_METHOD_NOT_FOUND -32601
#define ACP_ERR_INVALID_PARAMS	 -32602
#define ACP_ERR_INTERNAL	 -32603

enum acp_phase {
	ACP_PHASE_IDLE,	      /* acp_start() not called */
	ACP_PHASE_INITIALIZE, /* initialize sent */
	ACP_PHASE_LOAD,	      /* session/load sent */
	ACP_PHASE_NEW,	      /* session/new sent */
	ACP_PHASE_PROMPT,     /* session/prompt sent: the turn runs */
	ACP_PHASE_DONE,	      /* the prompt was answered */
	ACP_PHASE_FAILED,     /* a protocol failure or an error answer */
	_ACP_PHASE_MAX,
	_ACP_PHASE_INVALID = -EINVAL,
};

struct acp_opts {
	const char *cwd;       /* the task's tree, absolute: session cwd, the permission policy */
	int tree_fd;	       /* a directory fd of cwd for fs/ *; -1: fs is not offered */
	bool allow_git;	       /* the agent may touch .git through fs/ * (module agents only) */
	bool dangerous;	       /* allow every permission request */
	const char *prompt;    /* the task's prompt (required) */
	const char *resume_id; /* session/load this session when the agent can; NULL fresh */
	/* The MCP servers passed in session/new and session/load: a JSON array
	 * in ACP's McpServer form (borrowed; NULL: []). The mcp_servers:
	 * configuration renders into it. */
	const json_t *mcp_servers;
	size_t max_frame; /* 0: ACP_MAX_FRAME */
	size_t max_file;  /* 0: ACP_MAX_FILE */
};

struct acp {
	struct acp_opts o;
	char *cwd; /* owned copies */
	char *prompt;
	char *resume_id;
	json_t *mcp_servers; /* a reference */
	enum acp_phase phase;
	int64_t next_id;
	int64_t pending_id; /* the id of our request in flight; 0 none */
	struct dialect_state st;
	struct sbuf out;   /* frames for the agent's stdin */
	struct sbuf reply; /* the agent's message chunks of this turn (capped) */
	char session_id[DIALECT_ID_MAX];
	/* what initialize returned */
	bool load_session; /* agentCapabilities.loadSession */
	int protocol_version;
	char agent_name[128];
	char agent_version[64];
	bool loaded;	   /* the session was loaded (resumed) */
	bool cancel_sent;  /* session/cancel was sent */
	bool out_overflow; /* a frame did not fit ACP_MAX_OUT (the engine failed) */
	char stop_reason[64];
	uint64_t permissions_granted, permissions_refused;
	uint64_t fs_reads, fs_writes, fs_refused;
};

/* Set up a (opts copied; strings copied). No I/O. */
void acp_init(struct acp *a, const struct acp_opts *opts);
void acp_release(struct acp *a);
/* Queue initialize. 0, or -EALREADY. */
int acp_start(struct acp *a);
/* One line of the agent's stdout (without its newline). Returns 0, or a
 * negative errno for a frame that was a protocol failure (-EBADMSG, -ENOBUFS
 * for the length) with reterr; the engine is then finished. Blank lines are
 * skipped. */
int acp_feed_line(struct acp *a, const char *line, size_t len, const struct event_sink *sink,
		  struct diag *reterr);
/* A stdout line longer than the reader's cap (its head never reaches
 * acp_feed_line()): a protocol failure, as a frame over max_frame. */
void acp_frame_too_long(struct acp *a, uint64_t total, const struct event_sink *sink);
/* Ask the agent to stop the turn: session/cancel. Returns 1 when it was
 * queued, 0 when there is no turn to cancel (or it was sent already). */
int acp_cancel(struct acp *a);
/* The bytes to write to the agent's stdin (whole frames, each with its
 * newline), and how many were written. */
const char *acp_pending(const struct acp *a, size_t *ret_len);
void acp_consume(struct acp *a, size_t n);
/* The turn is over (answered or failed): nothing more will be asked of the
 * agent, its stdin may be closed once acp_pending() is empty. */
bool acp_finished(const struct acp *a);
const char *acp_phase_name(enum acp_phase p);

/* Is the absolute path inside root (both lexically normalised: '.', '..'
 * and repeated slashes)? On success *ret_rel (may be NULL) is the path
 * relative to root ("" for root itself; caller frees). A relative path is
 * taken relative to root. */
bool acp_path_inside(const char *root, const char *path, char **ret_rel);

/* The read-only half: one frame of an ACP conversation as a reader sees it
 * (a transcript, agent.log): session/update notifications become events
 *   agent_message_chunk   -> text (delta)
 *   tool_call             -> tool_call (tool_name: title, else kind; args:
 *                            rawInput), + tool_result when it is already
 *                            completed or failed
 *   tool_call_update      -> tool_result when its status is completed or
 *                            failed (output: its text content, else rawOutput),
 *                            announcing the call first when it was not
 *   plan                  -> signal PLAN {entries}
 *   usage_update          -> usage (cost.amount when the currency is USD)
 *   user_message_chunk, agent_thought_chunk, available_commands_update,
 *   current_mode_update, config_option_update, session_info_update -> nothing
 *   another update        -> unknown
 * and an answer with a stopReason becomes usage (its usage) and result.
 * Requests and other answers produce nothing. Same return contract as
 * dialect_feed_line(): an unreadable line is kept as unknown with -EBADMSG. */
int dialect_acp_feed_line(struct dialect_state *st, const char *line, size_t len,
			  const struct event_sink *sink, struct diag *reterr);

#endif
