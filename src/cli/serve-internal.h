/* What the files of bernstein-serve share (serve-main.c: requests and
 * start-up, serve-http.c: HTTP plumbing, serve-api.c: GET routes,
 * serve-sse.c: event streams, serve-control.c: POST routes). Private to
 * the bernstein-serve executable. */
#ifndef BERNSTEIN_CLI_SERVE_INTERNAL_H
#define BERNSTEIN_CLI_SERVE_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orch/state.h"
#include "util/hash.h"
#include "util/strvec.h"

struct capture;
struct proc_spec;

#define BODY_MAX	   ((size_t)64 * 1024) /* a POST body */
#define HEADER_MEM	   ((size_t)16 * 1024) /* MHD's memory per connection: headers */
#define CONNS_MAX	   64
#define GATE_LOG_MAX	   ((size_t)256 * 1024) /* bytes of one gate log answered */
#define CHILD_OUT_MAX	   ((size_t)8 << 20)	/* a child's JSON (a diff) */
#define CHILD_TIMEOUT_MS   60000
#define CONTROL_TIMEOUT_MS 30000
#define SSE_POLL_MS	   100
#define SSE_STATE_MS	   500
#define SSE_KEEPALIVE_MS   5000
#define SSE_LINE_MAX	   ((size_t)1 << 20) /* longer event lines are skipped, said so */
#define TOKEN_HEX	   64
/* the dashboard's: its own files and API only, never framed */
#define SERVE_CSP                                                                                  \
	"default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/* The server: its repository's paths, the token's digest, the
 * children's environment (serve-main.c sets it up at start). */
struct serve_srv {
	char *repo;
	char *bdir;    /* repo/.bernstein */
	char *db;      /* repo/.bernstein/state.db */
	char *runsdir; /* repo/.bernstein/runs */
	char bernstein[PATH_MAX];
	char token_hash[SHA256_LEN];
	struct strvec env; /* the children's environment */
	pthread_mutex_t child_lock;
};

extern struct serve_srv serve_srv;
/* set once the server is stopping: the streams end */
extern atomic_bool serve_stopping;

/* A request's run and task, from serve_lookup(). */
struct serve_lookup {
	struct state *st;
	struct run_row run;
	struct task_row task;
};

/* serve-http.c */
enum MHD_Result serve_answer_child(struct MHD_Connection *c, const char *const *args);
/* Answer serve_run_child()'s object: 200, or with reply (a control reply) the
 * status of its kind when it is not ok. */
enum MHD_Result serve_answer_child_as(struct MHD_Connection *c, const char *const *args,
				      bool reply);
enum MHD_Result serve_answer_error(struct MHD_Connection *c, unsigned status, const char *kind,
				   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Answer v (stolen) as JSON. */
enum MHD_Result serve_answer_json(struct MHD_Connection *c, unsigned status, json_t *v);
enum MHD_Result serve_answer_text(struct MHD_Connection *c, unsigned status, const char *type,
				  char *body, size_t len);
/* The directory of attempt n of task t: runs/RUN/SESSION/N; NULL when the
 * task has no session or its name breaks the id rule. */
char *serve_attempt_dir(const struct task_row *t, int64_t n);
json_t *serve_attempt_json(const struct attempt_row *a);
/* Run `bernstein ARGS...` in the repository, its output captured. A
 * child that detaches a run (resume --detach) is contained by its process
 * group only: the run leaves it (a session of its own) and must outlive
 * it, which a PID namespace or cgroup killed with the child would not let
 * it. 0, or -errno with the reason in why (cap released by the caller). */
int serve_capture_child(const char *const *args, bool detaches, struct proc_spec *spec,
			struct capture *cap, char *why, size_t whysize);
/* One JSON document (pretty or not), else JSON lines: the last; NULL when
 * neither is an object. */
json_t *serve_child_json(const char *body, size_t blen);
/* Give st back to this thread's cache (or close it). NULL. */
struct state *serve_db_close(struct state *st);
/* The per-thread cache of serve_db_open(): once, at start. */
void serve_db_init(void);
/* A read-only connection to state.db, this thread's cached one if there is
 * one: 0, or -errno. */
int serve_db_open(struct state **ret);
json_t *serve_jstr(const char *s);
/* The HTTP status of a control reply's kind. */
unsigned serve_kind_status(const char *kind);
/* The run and (task_id non-NULL) the task of a request, answered 404 when
 * missing. 0, or 1 when an answer was queued (*ret_answer). */
int serve_lookup(struct MHD_Connection *c, const char *run_id, const char *task_id,
		 struct serve_lookup *l, enum MHD_Result *ret_answer);
void serve_lookup_release(struct serve_lookup *l);
int64_t serve_mono_ms(void);
int serve_run_child(const char *const *args, json_t **ret, char *why, size_t whysize);
json_t *serve_run_json(const struct run_row *r);
void serve_sleep_ms(long ms);
json_t *serve_task_json(const struct task_row *t);

/* serve-api.c */
/* `adapters check --json` (declared, probed, contract), with `doctor
 * --json`'s verdict of each installed agent (binary and credentials) as
 * "usable" and the rest as "not_installed". */
enum MHD_Result serve_get_adapters(struct MHD_Connection *c);
enum MHD_Result serve_get_diff(struct MHD_Connection *c, const char *run_id, const char *task_id);
/* The gate-NAME.log files of every attempt of the task. */
enum MHD_Result serve_get_gates(struct MHD_Connection *c, const char *run_id, const char *task_id);
enum MHD_Result serve_get_metrics(struct MHD_Connection *c);
enum MHD_Result serve_get_run(struct MHD_Connection *c, const char *run_id, bool tasks_only);
enum MHD_Result serve_get_runs(struct MHD_Connection *c);
enum MHD_Result serve_get_task(struct MHD_Connection *c, const char *run_id, const char *task_id,
			       bool attempts_only);
json_t *serve_tasks_array(struct state *st, const char *run_id, int *ret_err);

/* serve-sse.c */
enum MHD_Result serve_get_board(struct MHD_Connection *c, const char *run_id);
enum MHD_Result serve_get_events(struct MHD_Connection *c, const char *run_id, const char *task_id);

/* serve-control.c */
/* op on run_id (task_id NULL: stop, add_task), the request body's object
 * merged into the request: sent to the live run over its control socket. */
enum MHD_Result serve_post_control(struct MHD_Connection *c, const char *run_id,
				   const char *task_id, const char *op, const char *body,
				   size_t blen);

#endif
