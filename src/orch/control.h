/* The control channel of a live run (docs/runs.md, "Controlling a live
 * run").
 *
 * While `bernstein run` or `resume` executes a run, it listens on a Unix
 * socket in the run's directory, .bernstein/runs/RUN/control.sock (the
 * directory 0700 and owned by this user, the socket 0600). Another shell's
 * `bernstein cancel | stop | retry | add-task | approve | reject` connects, writes one request
 * (one line of JSON, at most CONTROL_LINE_MAX bytes with its newline), reads
 * one reply line, and the connection is over.
 *
 * Who may ask: the peer's credentials (SO_PEERCRED) are read when the
 * connection is accepted. Only this user's processes (or root's) pass, and
 * none of this bernstein's own descendants (an agent, a gate, anything they
 * started: the peer's chain of parents is walked in /proc and must not
 * reach this process; an orphan comes back to this process, a child
 * subreaper, so leaving the tree does not help). A refused peer gets a
 * reply saying why and a control.refused record.
 *
 * Requests (unknown keys, duplicate keys, wrong types, bad ids are refused):
 *   {"op": "ping"}
 *   {"op": "cancel", "tasks": [ID...]}
 *   {"op": "stop", "force": false}
 *   {"op": "retry", "tasks": [ID...], "fresh": false}
 *   {"op": "add_task", "task": {"prompt": P, "title": T, "id": ID,
 *                               "adapter": A, "role": R, "depends_on": [ID...]}}
 *   {"op": "approve", "tasks": [ID...], "head": SHA,    (head: optional, one task;
 *    "allow_protected": false}                         also a change of bernstein's
 *                                                      own configuration: protect.h)
 *   {"op": "reject", "tasks": [ID], "feedback": TEXT}  (1..CONTROL_FEEDBACK_MAX bytes)
 * (tasks: 1..CONTROL_TASKS_MAX ids, [a-z0-9][a-z0-9-]{0,63}; add_task: prompt
 * required, the rest optional). Every accepted request is a control.request
 * record (who: uid, pid; the op and its tasks) before it is carried out.
 *
 * Replies: {"ok": true, "run": RUN, ...what the op adds} or {"ok": false,
 * "run": RUN, "kind": K, "error": MESSAGE} with K one of CONTROL_KIND_*. */
#ifndef BERNSTEIN_ORCH_CONTROL_H
#define BERNSTEIN_ORCH_CONTROL_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/diag.h"

struct audit_chain;

#define CONTROL_SOCKET	     "control.sock"
#define CONTROL_LINE_MAX     ((size_t)64 * 1024) /* a request, its newline included */
#define CONTROL_REPLY_MAX    ((size_t)1024 * 1024)
#define CONTROL_TASKS_MAX    64
#define CONTROL_CONNS_MAX    16		 /* open at once; the oldest goes for a new one */
#define CONTROL_REFUSALS_MAX 64		 /* control.refused records per execution */
#define CONTROL_FEEDBACK_MAX (16 * 1024) /* reject's feedback, bytes */

/* Reply kinds of a refusal, for the client's exit code. */
#define CONTROL_KIND_USAGE     "usage"	   /* a malformed request */
#define CONTROL_KIND_NOT_FOUND "not_found" /* no such task */
#define CONTROL_KIND_STATE     "state"	   /* not in a state the op applies to */
#define CONTROL_KIND_INVALID   "invalid"   /* add_task: the task does not validate */
#define CONTROL_KIND_REFUSED   "refused"   /* the peer may not ask */
#define CONTROL_KIND_INTERNAL  "internal"  /* the run could not do it */

enum control_op {
	CONTROL_PING,	  /* "ping": is the run live (and which) */
	CONTROL_CANCEL,	  /* "cancel" */
	CONTROL_STOP,	  /* "stop" */
	CONTROL_RETRY,	  /* "retry" */
	CONTROL_ADD_TASK, /* "add_task" */
	CONTROL_APPROVE,  /* "approve": merge tasks waiting in review */
	CONTROL_REJECT,	  /* "reject": a new attempt of a task in review, with feedback */
	_CONTROL_OP_MAX,
	_CONTROL_OP_INVALID = -EINVAL,
};

const char *control_op_to_string(enum control_op op);
enum control_op control_op_from_string(const char *s);

struct control_new_task {
	char *id; /* NULL: a slug of the title, else "task-N" */
	char *title;
	char *prompt;
	char *adapter;
	char *role;
	char **depends_on;
	size_t n_depends_on;
};

struct control_request {
	enum control_op op;
	char **tasks; /* cancel, retry */
	size_t n_tasks;
	bool force; /* stop */
	bool fresh; /* retry */
	struct control_new_task add;
	char *head;	      /* approve: the head the reviewer saw (NULL: the reviewed one) */
	bool allow_protected; /* approve: also a head that changes protected paths */
	char *feedback;	      /* reject */
};

void control_request_init(struct control_request *r);
void control_request_release(struct control_request *r);

/* Parse one request (line: without its newline; may hold NUL bytes, which
 * are refused). 0, or -EBADMSG with the reason in reterr (what is wrong and
 * where: "tasks[2]: not a task id"). *ret is written only on success. */
int control_request_parse(const char *line, size_t len, struct control_request *ret,
			  struct diag *reterr);

/* The request as its JSON line (no newline); the caller frees. */
char *control_request_dump(const struct control_request *r);

/* Who asks: the peer's credentials. */
struct control_peer {
	uid_t uid;
	pid_t pid;
};

/* Whether peer may control the run of process self: "" when it may, else
 * the reason in why. self_uid is the run's uid. */
bool control_peer_allowed(const struct control_peer *peer, uid_t self_uid, pid_t self, char *why,
			  size_t size);

/* The socket of run_id in repo; the caller frees. */
char *control_socket_path(const char *repo, const char *run_id);

/* ---- the run's side ---- */

struct control;

/* Carry out req from who, filling reply (an object: "ok" and what the op
 * adds, or control_reply_error()). */
typedef void control_handler_fn(void *ctx, const struct control_request *req,
				const struct control_peer *who, json_t *reply);

void control_reply_error(json_t *reply, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Listen on control_socket_path(repo, run_id); chain (may be NULL for
 * tests) gets the records. 0 or -errno with reterr. */
int control_listen(const char *repo, const char *run_id, struct audit_chain *chain,
		   struct control **ret, struct diag *reterr);
/* An fd readable when control_poll() has something to do (an epoll fd of
 * the socket and its connections): for the supervisor's watch_fd. */
int control_fd(const struct control *c);
/* Accept, read, and carry out every complete request now, without
 * blocking. A record that cannot be written is returned (-errno, reterr)
 * after the request is refused; 0 otherwise. */
int control_poll(struct control *c, control_handler_fn *fn, void *ctx, struct diag *reterr);
/* Close every connection and the socket, and remove it. NULL. */
struct control *control_close(struct control *c);

/* ---- the client's side ---- */

/* Send req to the run listening at path and read its reply (an object;
 * the caller json_decref()s). -ENOENT or -ECONNREFUSED when no run
 * listens there (not live); -ETIMEDOUT after timeout_ms; -EBADMSG for a
 * reply that is not one. */
int control_call(const char *path, const struct control_request *req, unsigned timeout_ms,
		 json_t **ret_reply, struct diag *reterr);

#endif
