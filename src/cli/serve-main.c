/* bernstein-serve: the HTTP API, the live event streams, /metrics and the
 * dashboard of the runs of one repository (docs/api.md, docs/dashboard.md),
 * normally reached as `bernstein serve` or `bernstein run --serve`.
 *
 * HTTP is libmicrohttpd's (Debian's libmicrohttpd): it parses requests,
 * bounds them (header memory, connection count, idle time) and runs one
 * thread per connection, so an event stream may wait for its file to grow.
 * What this file adds is read-only: state.db through a read-only SQLite
 * connection per request, the attempts' events.jsonl and gate logs, opened
 * only from ids that pass the id rule and only below .bernstein/runs/. The
 * one way it changes anything is the control channel (orch/control.h),
 * exactly as `bernstein cancel` and its siblings speak it, so every request
 * is audited the same way. Whatever needs the CLI's own code (a diff, audit
 * verify, adapters check) is that command run as a child, its JSON
 * answered. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <arpa/inet.h>

#include "cli/cli.h"
#include "cli/exit.h"
#include "cli/serve.h"
#include "cli/serve-path.h"
#include "orch/agentrun.h"
#include "orch/control.h"
#include "orch/plan.h"
#include "orch/run.h"
#include "orch/state.h"
#include "orch/worktree.h"
#include "proc/capture.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/lazy.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

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

struct srv {
	char *repo;
	char *bdir;    /* repo/.bernstein */
	char *db;      /* repo/.bernstein/state.db */
	char *runsdir; /* repo/.bernstein/runs */
	char bernstein[PATH_MAX];
	char token_hash[SHA256_LEN];
	struct strvec env; /* the children's environment */
	pthread_mutex_t child_lock;
};

static struct srv srv;
static atomic_bool stopping;

static const char usage_text[] =
	"usage: bernstein serve [--listen ADDR:PORT] [--idle-timeout S] [--watch-pid PID]\n";

static int64_t mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	(void)nanosleep(&ts, NULL);
}

/* ---- answers ---- */

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *type,
				   char *body, size_t len)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result r;

	if (!resp) {
		free(body);
		return MHD_NO;
	}
	(void)MHD_add_response_header(resp, "Content-Type", type);
	(void)MHD_add_response_header(resp, "Cache-Control", "no-store");
	(void)MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_UNAUTHORIZED)
		(void)MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
	r = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

/* Answer v (stolen) as JSON. */
static enum MHD_Result answer_json(struct MHD_Connection *c, unsigned status, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);
	size_t n;

	json_decref(v);
	if (!s)
		return MHD_NO;
	n = strlen(s);
	s = xrealloc(s, n + 2);
	s[n++] = '\n';
	s[n] = '\0';
	return answer_text(c, status, "application/json", s, n);
}

static enum MHD_Result answer_error(struct MHD_Connection *c, unsigned status, const char *kind,
				    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result answer_error(struct MHD_Connection *c, unsigned status, const char *kind,
				    const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_t *o = json_object();

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_obj_set(o, "ok", json_false());
	json_obj_set(o, "kind", json_string(kind));
	json_obj_set(o, "error", json_str_lossy(msg));
	return answer_json(c, status, o);
}

/* ---- state.db ---- */

/* One read-only connection per connection thread, kept between the
 * requests of a keep-alive connection (opening one costs more than a status
 * request's queries) and closed when the thread ends. */
static pthread_key_t db_key;

static void db_key_free(void *p)
{
	state_close(p);
}

static int db_open(struct state **ret)
{
	struct state *st = pthread_getspecific(db_key);

	if (st) {
		(void)pthread_setspecific(db_key, NULL);
		*ret = st;
		return 0;
	}
	return state_open(srv.db, STATE_READONLY, ret, NULL);
}

/* Give st back to this thread's cache (or close it). NULL. */
static struct state *db_close(struct state *st)
{
	if (st && !pthread_getspecific(db_key) && pthread_setspecific(db_key, st) == 0)
		return NULL;
	return state_close(st);
}

static json_t *jstr(const char *s)
{
	return json_str_lossy(s);
}

static json_t *jint(int64_t v)
{
	return v == STATE_NULL_INT ? json_null() : json_integer(v);
}

static json_t *run_json(const struct run_row *r)
{
	json_t *o = json_object();

	json_obj_set(o, "id", jstr(r->id));
	json_obj_set(o, "name", jstr(r->name));
	json_obj_set(o, "state", jstr(run_state_to_string(r->state)));
	json_obj_set(o, "plan_path", jstr(r->plan_path));
	json_obj_set(o, "base_branch", jstr(r->base_branch));
	json_obj_set(o, "base_commit", jstr(r->base_commit));
	json_obj_set(o, "parallel", jint(r->parallel));
	json_obj_set(o, "created_at", jstr(r->created_at));
	json_obj_set(o, "updated_at", jstr(r->updated_at));
	json_obj_set(o, "live", json_boolean(r->supervisor_pid != STATE_NULL_INT));
	return o;
}

static json_t *task_json(const struct task_row *t)
{
	json_t *o = json_object();

	json_obj_set(o, "id", jstr(t->id));
	json_obj_set(o, "title", jstr(t->title));
	json_obj_set(o, "role", jstr(t->role));
	json_obj_set(o, "state", jstr(task_state_to_string(t->state)));
	json_obj_set(o, "adapter", jstr(t->adapter));
	json_obj_set(o, "profile_hash", jstr(t->profile_hash));
	json_obj_set(o, "attempts", json_integer(t->attempts));
	json_obj_set(o, "outcome", jstr(t->outcome));
	json_obj_set(o, "reason", jstr(t->reason));
	json_obj_set(o, "branch", jstr(t->branch));
	json_obj_set(o, "head_commit", jstr(t->head_commit));
	json_obj_set(o, "merge_commit", jstr(t->merge_commit));
	json_obj_set(o, "updated_at", jstr(t->updated_at));
	return o;
}

static json_t *attempt_json(const struct attempt_row *a)
{
	json_t *o = json_object();

	json_obj_set(o, "n", json_integer(a->n));
	json_obj_set(o, "adapter", jstr(a->adapter));
	json_obj_set(o, "model", jstr(a->model));
	json_obj_set(o, "profile_hash", jstr(a->profile_hash));
	json_obj_set(o, "started_at", jstr(a->started_at));
	json_obj_set(o, "ended_at", jstr(a->ended_at));
	json_obj_set(o, "outcome", jstr(a->outcome));
	json_obj_set(o, "exit_code", jint(a->exit_code));
	json_obj_set(o, "reason", jstr(a->reason));
	json_obj_set(o, "input_tokens", jint(a->input_tokens));
	json_obj_set(o, "output_tokens", jint(a->output_tokens));
	json_obj_set(o, "cached_tokens", jint(a->cached_tokens));
	json_obj_set(o, "cost_usd", isnan(a->cost_usd) ? json_null() : json_real(a->cost_usd));
	json_obj_set(o, "cost_source", jstr(a->cost_source));
	json_obj_set(o, "agent_error", jstr(a->agent_error));
	return o;
}

/* The run and (task_id non-NULL) the task of a request, answered 404 when
 * missing. 0, or 1 when an answer was queued (*ret_answer). */
struct lookup {
	struct state *st;
	struct run_row run;
	struct task_row task;
};

static void lookup_release(struct lookup *l)
{
	run_row_release(&l->run);
	task_row_release(&l->task);
	l->st = db_close(l->st);
}

static int lookup(struct MHD_Connection *c, const char *run_id, const char *task_id,
		  struct lookup *l, enum MHD_Result *ret_answer)
{
	int r;

	memset(l, 0, sizeof(*l));
	run_row_init(&l->run);
	task_row_init(&l->task);
	if (!serve_id_ok(run_id) || (task_id && !serve_id_ok(task_id))) {
		*ret_answer = answer_error(c, MHD_HTTP_BAD_REQUEST, "usage", "not an id");
		return 1;
	}
	r = db_open(&l->st);
	if (r == -ENOENT) {
		*ret_answer =
			answer_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no run '%s'", run_id);
		return 1;
	}
	if (r < 0) {
		*ret_answer = answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
					   "cannot read state.db: %s", strerror(-r));
		return 1;
	}
	r = state_run_get(l->st, run_id, &l->run, NULL);
	if (r == 0 && task_id)
		r = state_task_get(l->st, run_id, task_id, &l->task, NULL);
	if (r == -ENOENT) {
		*ret_answer = answer_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no %s '%s'",
					   task_id ? "such run or task" : "run",
					   task_id ? task_id : run_id);
		return 1;
	}
	if (r < 0) {
		*ret_answer = answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
					   "cannot read state.db: %s", strerror(-r));
		return 1;
	}
	return 0;
}

/* The directory of attempt n of task t: runs/RUN/SESSION/N; NULL when the
 * task has no session or its name breaks the id rule. */
static char *attempt_dir(const struct task_row *t, int64_t n)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (!t->session || !serve_id_ok(t->session) || !serve_id_ok(t->run_id) || n < 1)
		return NULL;
	(void)sbuf_addf(&sb, "%s/%s/%s/%" PRId64, srv.runsdir, t->run_id, t->session, n);
	return sbuf_detach(&sb, NULL);
}

/* ---- GET handlers ---- */

static enum MHD_Result get_runs(struct MHD_Connection *c)
{
	struct state *st = NULL;
	struct run_row *v = NULL;
	size_t n = 0, i;
	json_t *a = json_array();
	int r = db_open(&st);

	if (r == -ENOENT)
		goto done;
	if (r >= 0)
		r = state_run_list(st, &v, &n, NULL);
	if (r < 0) {
		json_decref(a);
		(void)db_close(st);
		return answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
				    "cannot read state.db: %s", strerror(-r));
	}
	for (i = n; i-- > 0;) /* the latest first */
		(void)json_array_append_new(a, run_json(&v[i]));
done:
	run_rows_free(v, n);
	(void)db_close(st);
	{
		json_t *o = json_object();

		json_obj_set(o, "runs", a);
		return answer_json(c, MHD_HTTP_OK, o);
	}
}

static json_t *tasks_array(struct state *st, const char *run_id, int *ret_err)
{
	struct task_row *v = NULL;
	size_t n = 0, i;
	json_t *a = json_array();
	int r = state_tasks_get(st, run_id, &v, &n, NULL);

	*ret_err = r < 0 ? r : 0;
	for (i = 0; r >= 0 && i < n; i++)
		(void)json_array_append_new(a, task_json(&v[i]));
	task_rows_free(v, n);
	return a;
}

static enum MHD_Result get_run(struct MHD_Connection *c, const char *run_id, bool tasks_only)
{
	struct lookup l;
	enum MHD_Result ans;
	json_t *o, *tasks;
	int err;

	if (lookup(c, run_id, NULL, &l, &ans))
		goto out;
	tasks = tasks_array(l.st, run_id, &err);
	if (err < 0) {
		json_decref(tasks);
		ans = answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
				   "cannot read state.db: %s", strerror(-err));
		goto out;
	}
	if (tasks_only) {
		o = json_object();
		json_obj_set(o, "run", jstr(run_id));
		json_obj_set(o, "tasks", tasks);
	} else {
		o = run_json(&l.run);
		json_obj_set(o, "tasks", tasks);
	}
	ans = answer_json(c, MHD_HTTP_OK, o);
out:
	lookup_release(&l);
	return ans;
}

static enum MHD_Result get_task(struct MHD_Connection *c, const char *run_id, const char *task_id,
				bool attempts_only)
{
	struct lookup l;
	struct attempt_row *v = NULL;
	size_t n = 0, i;
	enum MHD_Result ans;
	json_t *o, *a;
	int r;

	if (lookup(c, run_id, task_id, &l, &ans))
		goto out;
	r = state_attempts_get(l.st, run_id, task_id, &v, &n, NULL);
	if (r < 0) {
		ans = answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
				   "cannot read state.db: %s", strerror(-r));
		goto out;
	}
	a = json_array();
	for (i = 0; i < n; i++)
		(void)json_array_append_new(a, attempt_json(&v[i]));
	if (attempts_only) {
		o = json_object();
		json_obj_set(o, "run", jstr(run_id));
		json_obj_set(o, "task", jstr(task_id));
	} else {
		o = task_json(&l.task);
		json_obj_set(o, "run", jstr(run_id));
		json_obj_set(o, "prompt", jstr(l.task.prompt));
		json_obj_set(o, "feedback", jstr(l.task.feedback));
		json_obj_set(o, "conflicts", jstr(l.task.conflicts));
	}
	json_obj_set(o, "attempts", a);
	ans = answer_json(c, MHD_HTTP_OK, o);
	attempt_rows_free(v, n);
out:
	lookup_release(&l);
	return ans;
}

/* One gate log, NAME "gate-X.log" in the directory dfd: {"attempt",
 * "name", "size", "truncated", "log"} with its first GATE_LOG_MAX bytes;
 * NULL when it is not a regular file (never followed if a symlink). */
static json_t *gate_json(int dfd, const char *name, size_t len, int64_t attempt)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char *text = NULL, gate[256];
	struct stat sb;
	ssize_t k;
	json_t *g;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		(void)close(fd);
		return NULL;
	}
	text = xmalloc(GATE_LOG_MAX + 1);
	k = read(fd, text, GATE_LOG_MAX);
	(void)close(fd);
	text[k > 0 ? k : 0] = '\0';
	g = json_object();
	json_obj_set(g, "attempt", json_integer(attempt));
	(void)snprintf(gate, sizeof(gate), "%.*s", (int)(len - 9), name + 5);
	json_obj_set(g, "name", jstr(gate));
	json_obj_set(g, "size", json_integer((json_int_t)sb.st_size));
	json_obj_set(g, "truncated", json_boolean(sb.st_size > (k > 0 ? k : 0)));
	json_obj_set(g, "log", json_str_lossy(text));
	free(text);
	return g;
}

/* The gate-NAME.log files of every attempt of the task. */
static enum MHD_Result get_gates(struct MHD_Connection *c, const char *run_id, const char *task_id)
{
	struct lookup l;
	enum MHD_Result ans;
	json_t *a, *o;
	int64_t n;

	if (lookup(c, run_id, task_id, &l, &ans))
		goto out;
	a = json_array();
	for (n = 1; n <= l.task.attempts; n++) {
		char *dir = attempt_dir(&l.task, n);
		int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
		struct dirent *e;

		if (!d && dfd >= 0)
			(void)close(dfd);
		while (d && (e = readdir(d))) {
			size_t len = strlen(e->d_name);
			json_t *g;

			if (len < 10 || strncmp(e->d_name, "gate-", 5) != 0 ||
			    strcmp(e->d_name + len - 4, ".log") != 0)
				continue;
			g = gate_json(dirfd(d), e->d_name, len, n);
			if (!g)
				continue;
			(void)json_array_append_new(a, g);
		}
		if (d)
			(void)closedir(d);
		free(dir);
	}
	o = json_object();
	json_obj_set(o, "run", jstr(run_id));
	json_obj_set(o, "task", jstr(task_id));
	json_obj_set(o, "gates", a);
	ans = answer_json(c, MHD_HTTP_OK, o);
out:
	lookup_release(&l);
	return ans;
}

/* The HTTP status of a control reply's kind. */
static unsigned kind_status(const char *kind)
{
	if (!kind)
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	if (strcmp(kind, CONTROL_KIND_USAGE) == 0)
		return MHD_HTTP_BAD_REQUEST;
	if (strcmp(kind, CONTROL_KIND_NOT_FOUND) == 0)
		return MHD_HTTP_NOT_FOUND;
	if (strcmp(kind, CONTROL_KIND_STATE) == 0)
		return MHD_HTTP_CONFLICT;
	if (strcmp(kind, CONTROL_KIND_INVALID) == 0)
		return MHD_HTTP_UNPROCESSABLE_CONTENT;
	if (strcmp(kind, CONTROL_KIND_REFUSED) == 0)
		return MHD_HTTP_FORBIDDEN;
	return MHD_HTTP_INTERNAL_SERVER_ERROR;
}

/* Run `bernstein ARGS... --json` in the repository and answer its JSON
 * object, with "exit_code" added. */
/* Run `bernstein ARGS...` in the repository and parse its output as a
 * JSON object, or its last line as one (a command with --json prints its
 * changes as lines, its reply last), "exit_code" added: 0 with *ret, or -errno with
 * the reason in why. */
/* Run `bernstein ARGS...` in the repository, its output captured. A
 * child that detaches a run (resume --detach) is contained by its process
 * group only: the run leaves it (a session of its own) and must outlive
 * it, which a PID namespace or cgroup killed with the child would not let
 * it. 0, or -errno with the reason in why (cap released by the caller). */
static int capture_child(const char *const *args, bool detaches, struct proc_spec *spec,
			 struct capture *cap, char *why, size_t whysize)
{
	struct capture_opts co = {0};
	size_t i;
	int r;

	strvec_push(&spec->argv, srv.bernstein);
	for (i = 0; args[i]; i++)
		strvec_push(&spec->argv, args[i]);
	for (i = 0; i < srv.env.nr; i++)
		strvec_push(&spec->env, srv.env.v[i]);
	spec->cwd = srv.repo;
	if (detaches)
		spec->contain = CONTAIN_PGROUP;
	cap->spec = spec;
	cap->timeout_ms = CHILD_TIMEOUT_MS;
	cap->kill_grace_ms = 1000;
	cap->max_out = CHILD_OUT_MAX;
	cap->max_err = 4096;
	(void)pthread_mutex_lock(&srv.child_lock);
	r = proc_capture(cap, 1, &co);
	(void)pthread_mutex_unlock(&srv.child_lock);
	if (r >= 0 && cap->start_result < 0)
		r = cap->start_result;
	if (r < 0)
		(void)snprintf(why, whysize, "cannot run bernstein %s: %s", args[0], strerror(-r));
	return r;
}

/* One JSON document (pretty or not), else JSON lines: the last; NULL when
 * neither is an object. */
static json_t *child_json(const char *body, size_t blen)
{
	const char *nl;
	json_t *v = NULL;

	if (json_parse_strict("child", body, blen, &v, NULL) < 0) {
		while (blen && body[blen - 1] == '\n')
			blen--;
		nl = memrchr(body, '\n', blen);
		if (nl) {
			blen -= (size_t)(nl + 1 - body);
			body = nl + 1;
		}
		if (json_parse_strict("child", body, blen, &v, NULL) < 0)
			v = NULL;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		return NULL;
	}
	return v;
}

static int run_child(const char *const *args, json_t **ret, char *why, size_t whysize)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture cap = {0};
	json_t *v = NULL;
	int r;

	r = capture_child(args, false, &spec, &cap, why, whysize);
	if (r < 0)
		goto out;
	if (!cap.out_dropped)
		v = child_json(cap.out.buf, cap.out.len);
	if (cap.out_dropped || !v) {
		json_decref(v);
		(void)snprintf(why, whysize, "bernstein %s answered no JSON object (exit %d)",
			       args[0], cap.exit_code);
		r = -EBADMSG;
		goto out;
	}
	json_obj_set(v, "exit_code", json_integer(cap.exit_code));
	*ret = v;
	r = 0;
out:
	capture_release(&cap);
	proc_spec_release(&spec);
	return r;
}

/* Answer run_child()'s object: 200, or with reply (a control reply) the
 * status of its kind when it is not ok. */
static enum MHD_Result answer_child_as(struct MHD_Connection *c, const char *const *args,
				       bool reply)
{
	char why[512];
	json_t *v = NULL;

	if (run_child(args, &v, why, sizeof(why)) < 0)
		return answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", why);
	return answer_json(c,
			   !reply || json_is_true(json_object_get(v, "ok"))
				   ? MHD_HTTP_OK
				   : kind_status(json_string_value(json_object_get(v, "kind"))),
			   v);
}

/* `adapters check --json` (declared, probed, contract), with `doctor
 * --json`'s verdict of each installed agent (binary and credentials) as
 * "usable" and the rest as "not_installed". */
static enum MHD_Result get_adapters(struct MHD_Connection *c)
{
	static const char *const check_args[] = {"adapters", "check", "--json", NULL};
	static const char *const doctor_args[] = {"doctor", "--json", NULL};
	char why[512];
	json_t *v = NULL, *doc = NULL;

	if (run_child(check_args, &v, why, sizeof(why)) < 0 ||
	    run_child(doctor_args, &doc, why, sizeof(why)) < 0) {
		json_decref(v);
		return answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", why);
	}
	json_obj_set(v, "usable", json_incref(json_object_get(doc, "agents")));
	json_obj_set(v, "not_installed", json_incref(json_object_get(doc, "agents_not_installed")));
	json_decref(doc);
	return answer_json(c, MHD_HTTP_OK, v);
}

static enum MHD_Result answer_child(struct MHD_Connection *c, const char *const *args)
{
	return answer_child_as(c, args, false);
}

static enum MHD_Result get_diff(struct MHD_Connection *c, const char *run_id, const char *task_id)
{
	struct lookup l;
	struct run_row latest = RUN_ROW_INIT;
	enum MHD_Result ans;
	const char *args[] = {"diff", "--json", task_id, NULL};

	if (lookup(c, run_id, task_id, &l, &ans))
		goto out;
	run_row_init(&latest);
	/* `bernstein diff` shows the latest run's tasks */
	if (state_run_latest(l.st, &latest, NULL) < 0 || strcmp(latest.id, run_id) != 0) {
		ans = answer_error(c, MHD_HTTP_CONFLICT, "state",
				   "a diff is shown for the latest run's tasks only");
		goto out;
	}
	if (!plan_id_valid(task_id)) {
		ans = answer_error(c, MHD_HTTP_BAD_REQUEST, "usage", "not a task id");
		goto out;
	}
	ans = answer_child(c, args);
out:
	run_row_release(&latest);
	lookup_release(&l);
	return ans;
}

/* ---- the event stream (Server-Sent Events) ---- */

struct sse {
	char run[SERVE_ID_MAX + 1], task[SERVE_ID_MAX + 1];
	int64_t attempt;     /* whose events.jsonl is read; 0: none yet */
	bool fixed;	     /* ?attempt=N: that one only */
	bool follow;	     /* ?follow=0: what is there, then the end */
	off_t off;	     /* read up to here */
	struct sbuf out;     /* what is ready to send */
	size_t sent;	     /* of out */
	struct state *st;    /* opened on the first poll */
	int64_t state_at_ms; /* the last look at the task's state */
	int64_t last_send_ms;
	bool ended; /* the stream's end is in out */
};

static void sse_free(void *cls)
{
	struct sse *s = cls;

	sbuf_release(&s->out);
	(void)db_close(s->st);
	free(s);
}

/* Add the complete lines of the current attempt's events.jsonl as events;
 * with final, the last line without a newline too. */
static void sse_read(struct sse *s, bool final)
{
	struct task_row t = TASK_ROW_INIT;
	struct sbuf line = SBUF_INIT(SSE_LINE_MAX);
	char *dir = NULL, *path = NULL, chunk[16384];
	bool skipping = false;
	off_t pos, done;
	ssize_t n;
	int fd = -1;

	task_row_init(&t);
	if (s->attempt < 1 || state_task_get(s->st, s->run, s->task, &t, NULL) < 0)
		goto out;
	dir = attempt_dir(&t, s->attempt);
	if (!dir)
		goto out;
	path = xmalloc(strlen(dir) + sizeof("/events.jsonl"));
	(void)snprintf(path, strlen(dir) + sizeof("/events.jsonl"), "%s/events.jsonl", dir);
	fd = open_regular(path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0 || lseek(fd, s->off, SEEK_SET) < 0)
		goto out;
	pos = done = s->off;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		const char *p = chunk, *end = chunk + n;

		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t k = (size_t)((nl ? nl : end) - p);

			if (!skipping && sbuf_add(&line, p, k) < 0) {
				skipping = true;
				sbuf_reset(&line);
			}
			if (!nl)
				break;
			p = nl + 1;
			done = pos + (p - chunk);
			if (skipping) {
				(void)sbuf_addf(&s->out, "event: skipped\nid: %" PRId64 ":%lld\n",
						s->attempt, (long long)done);
				(void)sbuf_addf(
					&s->out,
					"data: {\"reason\":\"a line longer than %zu bytes\"}\n\n",
					SSE_LINE_MAX);
			} else { /* a line SSE cannot carry (a CR, a NUL) is left out */
				(void)serve_sse_event(&s->out, s->attempt, (long long)done,
						      line.buf, line.len);
			}
			skipping = false;
			sbuf_reset(&line);
		}
		pos += n;
		if (s->out.len > ((size_t)4 << 20))
			break; /* send this much first */
	}
	if (final && line.len && !skipping) {
		(void)serve_sse_event(&s->out, s->attempt, (long long)pos, line.buf, line.len);
		done = pos;
	}
	s->off = done;
out:
	if (fd >= 0)
		(void)close(fd);
	free(path);
	free(dir);
	sbuf_release(&line);
	task_row_release(&t);
}

static bool task_settled(enum task_state st)
{
	switch (st) {
	case TASK_PENDING:
	case TASK_RUNNING:
	case TASK_COMPLETING:
	case TASK_MERGING:
	case TASK_REBASING:
	case TASK_RESOLVING:
		return false;
	default:
		return true;
	}
}

/* Look at the task: a new attempt moves the stream to it (the old one's
 * rest first); a settled task (or a run that is not live) ends the
 * stream. */
static void sse_poll_state(struct sse *s)
{
	struct task_row t = TASK_ROW_INIT;
	struct run_row run = RUN_ROW_INIT;
	bool end = false;

	task_row_init(&t);
	run_row_init(&run);
	if (state_task_get(s->st, s->run, s->task, &t, NULL) < 0 ||
	    state_run_get(s->st, s->run, &run, NULL) < 0) {
		end = true;
		goto out;
	}
	if (!s->fixed && t.attempts > s->attempt) {
		sse_read(s, true);
		s->attempt = t.attempts;
		s->off = 0;
		(void)sbuf_addf(&s->out, "event: attempt\ndata: {\"attempt\":%" PRId64 "}\n\n",
				s->attempt);
		sse_read(s, false);
	}
	if (task_settled(t.state) || (s->fixed && t.attempts > s->attempt) ||
	    run.state != RUN_RUNNING)
		end = true;
out:
	if (end) {
		sse_read(s, true);
		(void)sbuf_addf(&s->out, "event: end\ndata: {\"state\":\"%s\"}\n\n",
				task_state_to_string(t.state) ? task_state_to_string(t.state) : "");
		s->ended = true;
	}
	task_row_release(&t);
	run_row_release(&run);
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse *s = cls;
	size_t k;

	(void)pos;
	for (;;) {
		if (s->sent < s->out.len) {
			k = s->out.len - s->sent;
			if (k > max)
				k = max;
			memcpy(buf, s->out.buf + s->sent, k);
			s->sent += k;
			if (s->sent == s->out.len) {
				sbuf_reset(&s->out);
				s->sent = 0;
			}
			s->last_send_ms = mono_ms();
			return (ssize_t)k;
		}
		if (s->ended || atomic_load(&stopping))
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (!s->st) {
			if (db_open(&s->st) < 0)
				return MHD_CONTENT_READER_END_WITH_ERROR;
			sse_poll_state(s);
			if (!s->follow && !s->ended) {
				sse_read(s, true);
				(void)sbuf_addf(&s->out, "event: end\ndata: {}\n\n");
				s->ended = true;
			}
			continue;
		}
		sse_read(s, false);
		if (s->out.len)
			continue;
		if (mono_ms() - s->state_at_ms >= SSE_STATE_MS) {
			s->state_at_ms = mono_ms();
			sse_poll_state(s);
			if (s->out.len || s->ended)
				continue;
		}
		if (mono_ms() - s->last_send_ms >= SSE_KEEPALIVE_MS) {
			(void)sbuf_addf(&s->out, ": keep-alive\n\n");
			continue;
		}
		sleep_ms(SSE_POLL_MS);
	}
}

static enum MHD_Result answer_stream(struct MHD_Connection *c, void *s,
				     MHD_ContentReaderCallback fn, MHD_ContentReaderFreeCallback fr)
{
	struct MHD_Response *resp =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, fn, s, fr);
	enum MHD_Result r;

	if (!resp) {
		fr(s);
		return MHD_NO;
	}
	(void)MHD_add_response_header(resp, "Content-Type", "text/event-stream");
	(void)MHD_add_response_header(resp, "Cache-Control", "no-store");
	(void)MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	r = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return r;
}

/* Last-Event-ID: ATTEMPT:OFFSET of an event this stream sent: go on from
 * there (that attempt, when the request names none). */
static bool resume_from(struct MHD_Connection *c, struct sse *s, int64_t attempts)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
	long long a, off;
	int used = 0;

	if (!h || sscanf(h, "%lld:%lld%n", &a, &off, &used) != 2 || h[used] || a < 1 ||
	    a > attempts || off < 0 || (s->fixed && a != s->attempt))
		return false;
	s->attempt = a;
	s->off = (off_t)off;
	return true;
}

static enum MHD_Result get_events(struct MHD_Connection *c, const char *run_id, const char *task_id)
{
	struct lookup l;
	enum MHD_Result ans;
	const char *att = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "attempt");
	const char *fol = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");
	struct sse *s;

	if (lookup(c, run_id, task_id, &l, &ans))
		goto out;
	s = xcalloc(1, sizeof(*s));
	s->out = (struct sbuf)SBUF_INIT(SIZE_MAX);
	(void)snprintf(s->run, sizeof(s->run), "%s", run_id);
	(void)snprintf(s->task, sizeof(s->task), "%s", task_id);
	s->follow = !(fol && strcmp(fol, "0") == 0);
	if (att) {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(att, &end, 10);
		if (errno || *end || v < 1 || v > l.task.attempts) {
			sse_free(s);
			ans = answer_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no attempt '%s'",
					   att);
			goto out;
		}
		s->attempt = v;
		s->fixed = true;
	} else if (l.task.attempts > 0) {
		s->attempt = l.task.attempts;
	}
	if (resume_from(c, s, l.task.attempts)) {
		/* a reconnecting client: on from the event it saw last */
	} else if (s->attempt)
		(void)sbuf_addf(&s->out, "event: attempt\ndata: {\"attempt\":%" PRId64 "}\n\n",
				s->attempt);
	s->last_send_ms = mono_ms();
	ans = answer_stream(c, s, sse_reader, sse_free);
out:
	lookup_release(&l);
	return ans;
}

/* The run's board: an event "tasks" with every task each time one
 * changes, until the run is no longer running. */
struct board {
	char run[SERVE_ID_MAX + 1];
	struct state *st;
	struct sbuf out;
	size_t sent;
	char last[SHA256_HEX_LEN + 1];
	int64_t last_send_ms;
	bool follow; /* ?follow=0: one snapshot, then the end */
	bool ended;
};

static void board_free(void *cls)
{
	struct board *b = cls;

	sbuf_release(&b->out);
	(void)db_close(b->st);
	free(b);
}

static void board_poll(struct board *b)
{
	struct run_row run = RUN_ROW_INIT;
	json_t *o, *tasks;
	char *s, hex[SHA256_HEX_LEN + 1];
	int err;

	run_row_init(&run);
	if (!b->st && db_open(&b->st) < 0) {
		b->ended = true;
		return;
	}
	if (state_run_get(b->st, b->run, &run, NULL) < 0) {
		b->ended = true;
		run_row_release(&run);
		return;
	}
	tasks = tasks_array(b->st, b->run, &err);
	o = json_object();
	json_obj_set(o, "run", run_json(&run));
	json_obj_set(o, "tasks", tasks);
	s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	if (s) {
		hash_sha256_hex(s, strlen(s), hex);
		if (strcmp(hex, b->last) != 0) {
			(void)sbuf_addf(&b->out, "event: tasks\ndata: %s\n\n", s);
			memcpy(b->last, hex, sizeof(hex));
		}
		free(s);
	}
	if (run.state != RUN_RUNNING || !b->follow) {
		(void)sbuf_addf(&b->out, "event: end\ndata: {\"state\":\"%s\"}\n\n",
				run_state_to_string(run.state));
		b->ended = true;
	}
	run_row_release(&run);
}

static ssize_t board_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct board *b = cls;
	size_t k;

	(void)pos;
	for (;;) {
		if (b->sent < b->out.len) {
			k = b->out.len - b->sent;
			if (k > max)
				k = max;
			memcpy(buf, b->out.buf + b->sent, k);
			b->sent += k;
			if (b->sent == b->out.len) {
				sbuf_reset(&b->out);
				b->sent = 0;
			}
			b->last_send_ms = mono_ms();
			return (ssize_t)k;
		}
		if (b->ended || atomic_load(&stopping))
			return MHD_CONTENT_READER_END_OF_STREAM;
		board_poll(b);
		if (b->out.len || b->ended)
			continue;
		if (mono_ms() - b->last_send_ms >= SSE_KEEPALIVE_MS) {
			(void)sbuf_addf(&b->out, ": keep-alive\n\n");
			continue;
		}
		sleep_ms(SSE_STATE_MS / 2);
	}
}

static enum MHD_Result get_board(struct MHD_Connection *c, const char *run_id)
{
	const char *fol = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");
	struct lookup l;
	enum MHD_Result ans;
	struct board *b;

	if (lookup(c, run_id, NULL, &l, &ans))
		goto out;
	b = xcalloc(1, sizeof(*b));
	b->out = (struct sbuf)SBUF_INIT(SIZE_MAX);
	(void)snprintf(b->run, sizeof(b->run), "%s", run_id);
	b->follow = !(fol && strcmp(fol, "0") == 0);
	b->last_send_ms = mono_ms();
	ans = answer_stream(c, b, board_reader, board_free);
out:
	lookup_release(&l);
	return ans;
}

/* ---- /metrics ---- */

/* Seconds since the epoch of an ISO-8601 UTC time of clock_iso8601_utc(); NAN if not one. */
static double iso_seconds(const char *s)
{
	struct tm tm;
	const char *p;
	double frac = 0;

	if (!s)
		return NAN;
	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return NAN;
	if (*p == '.')
		frac = strtod(p, NULL);
	return (double)timegm(&tm) + frac;
}

/* A label value: the id rule's characters need no escaping; anything else
 * is dropped. */
static void label(struct sbuf *sb, const char *s)
{
	for (; s && *s; s++)
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.')
			(void)sbuf_add(sb, s, 1);
}

/* What /metrics counts of the latest run. */
struct tally {
	int64_t by_state[_TASK_STATE_MAX];
	struct outc {
		char name[64];
		int64_t n;
	} outs[32];
	size_t nouts;
	int64_t tokens[3]; /* input, output, cached */
	double cost, spawn_sum, merge_sum;
	int64_t spawn_n, merge_n;
};

static void tally_outcome(struct tally *ty, const char *o)
{
	size_t k;

	for (k = 0; k < ty->nouts && strcmp(ty->outs[k].name, o) != 0; k++)
		;
	if (k == ty->nouts) {
		if (k == sizeof(ty->outs) / sizeof(ty->outs[0]))
			return;
		(void)snprintf(ty->outs[k].name, sizeof(ty->outs[k].name), "%s", o);
		ty->nouts++;
	}
	ty->outs[k].n++;
}

/* One task's attempts. Spawn latency: a first attempt of a task without
 * dependencies, from the run's start to the attempt's; merge latency: a
 * merged task, from its last attempt's end to the merge (gates, merge). */
static void tally_task(struct tally *ty, const struct task_row *t, const struct attempt_row *av,
		       size_t an, double run_t0)
{
	size_t j;

	if (t->state >= 0 && t->state < _TASK_STATE_MAX)
		ty->by_state[t->state]++;
	for (j = 0; j < an; j++) {
		tally_outcome(ty, av[j].outcome ? av[j].outcome : "running");
		if (av[j].input_tokens != STATE_NULL_INT)
			ty->tokens[0] += av[j].input_tokens;
		if (av[j].output_tokens != STATE_NULL_INT)
			ty->tokens[1] += av[j].output_tokens;
		if (av[j].cached_tokens != STATE_NULL_INT)
			ty->tokens[2] += av[j].cached_tokens;
		if (!isnan(av[j].cost_usd))
			ty->cost += av[j].cost_usd;
	}
	if (an > 0 && t->spec && !strstr(t->spec, "\"depends_on\":[\"")) {
		double d = iso_seconds(av[0].started_at) - run_t0;

		if (!isnan(d) && d >= 0) {
			ty->spawn_sum += d;
			ty->spawn_n++;
		}
	}
	if (an > 0 && t->state == TASK_DONE) {
		double d = iso_seconds(t->updated_at) - iso_seconds(av[an - 1].ended_at);

		if (!isnan(d) && d >= 0) {
			ty->merge_sum += d;
			ty->merge_n++;
		}
	}
}

static void metric_head(struct sbuf *sb, const char *name, const char *type, const char *help)
{
	(void)sbuf_addf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{run="RUN"[,key="value"]} */
static void metric_labels(struct sbuf *sb, const char *name, const char *run, const char *key,
			  const char *value)
{
	(void)sbuf_addf(sb, "%s{run=\"", name);
	label(sb, run);
	if (key) {
		(void)sbuf_addf(sb, "\",%s=\"", key);
		label(sb, value);
	}
	(void)sbuf_addf(sb, "\"} ");
}

static void tally_print(struct sbuf *sb, const struct tally *ty, const char *run)
{
	static const char *const kinds[] = {"input", "output", "cached"};
	size_t i;

	metric_head(sb, "bernstein_tasks", "gauge", "Tasks of the latest run by state.");
	for (i = 0; i < _TASK_STATE_MAX; i++) {
		metric_labels(sb, "bernstein_tasks", run, "state",
			      task_state_to_string((enum task_state)i));
		(void)sbuf_addf(sb, "%" PRId64 "\n", ty->by_state[i]);
	}
	metric_head(sb, "bernstein_attempts_total", "counter",
		    "Attempts of the latest run by outcome (running: not ended).");
	for (i = 0; i < ty->nouts; i++) {
		metric_labels(sb, "bernstein_attempts_total", run, "outcome", ty->outs[i].name);
		(void)sbuf_addf(sb, "%" PRId64 "\n", ty->outs[i].n);
	}
	metric_head(sb, "bernstein_tokens_total", "counter", "Tokens the agents reported.");
	for (i = 0; i < 3; i++) {
		metric_labels(sb, "bernstein_tokens_total", run, "kind", kinds[i]);
		(void)sbuf_addf(sb, "%" PRId64 "\n", ty->tokens[i]);
	}
	metric_head(sb, "bernstein_cost_usd_total", "counter",
		    "Cost of the latest run's attempts in USD (reported or priced).");
	metric_labels(sb, "bernstein_cost_usd_total", run, NULL, NULL);
	(void)sbuf_addf(sb, "%.6f\n", ty->cost);
	metric_head(sb, "bernstein_spawn_latency_seconds", "summary",
		    "From the run's start to the first attempt of each task without dependencies.");
	(void)sbuf_addf(sb, "bernstein_spawn_latency_seconds_sum %.6f\n", ty->spawn_sum);
	(void)sbuf_addf(sb, "bernstein_spawn_latency_seconds_count %" PRId64 "\n", ty->spawn_n);
	metric_head(sb, "bernstein_merge_latency_seconds", "summary",
		    "From a merged task's last attempt's end to its merge (gates and merge).");
	(void)sbuf_addf(sb, "bernstein_merge_latency_seconds_sum %.6f\n", ty->merge_sum);
	(void)sbuf_addf(sb, "bernstein_merge_latency_seconds_count %" PRId64 "\n", ty->merge_n);
}

static enum MHD_Result get_metrics(struct MHD_Connection *c)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct state *st = NULL;
	struct run_row run = RUN_ROW_INIT;
	struct task_row *tv = NULL;
	struct tally *ty = xcalloc(1, sizeof(*ty));
	size_t tn = 0, i, len;
	char *body;
	int r;

	run_row_init(&run);
	r = db_open(&st);
	if (r >= 0)
		r = state_run_latest(st, &run, NULL);
	if (r >= 0)
		r = state_tasks_get(st, run.id, &tv, &tn, NULL);
	metric_head(&sb, "bernstein_up", "gauge", "Whether the server answers.");
	(void)sbuf_addf(&sb, "bernstein_up 1\n");
	if (r >= 0) {
		double t0 = iso_seconds(run.created_at);

		for (i = 0; i < tn; i++) {
			struct attempt_row *av = NULL;
			size_t an = 0;

			if (state_attempts_get(st, run.id, tv[i].id, &av, &an, NULL) < 0)
				an = 0;
			tally_task(ty, &tv[i], av, an, t0);
			attempt_rows_free(av, an);
		}
		tally_print(&sb, ty, run.id);
	}
	free(ty);
	task_rows_free(tv, tn);
	run_row_release(&run);
	(void)db_close(st);
	body = sbuf_detach(&sb, &len);
	return answer_text(c, MHD_HTTP_OK, "text/plain; version=0.0.4", body, len);
}

/* ---- POST: the control channel ---- */

static bool is_latest(struct state *st, const char *run_id)
{
	struct run_row latest = RUN_ROW_INIT;
	bool yes;

	run_row_init(&latest);
	yes = state_run_latest(st, &latest, NULL) == 0 && strcmp(latest.id, run_id) == 0;
	run_row_release(&latest);
	return yes;
}

/* The last line of out that is a JSON object with "ok" (a control reply),
 * *ret_after just past it; NULL when none is. */
static json_t *reply_line(const char *out, size_t len, const char **ret_after)
{
	const char *p = out, *end = out + len, *nl;
	json_t *found = NULL, *v;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		v = NULL;
		if (nl > p && *p == '{' &&
		    json_parse_strict("child", p, (size_t)(nl - p), &v, NULL) == 0 &&
		    json_is_object(v) && json_object_get(v, "ok")) {
			json_decref(found);
			found = v;
			*ret_after = nl < end ? nl + 1 : end;
		} else {
			json_decref(v);
		}
		if (nl == end)
			break;
	}
	return found;
}

/* req (retry, approve, reject, add_task) on the latest run, not live: as
 * the CLI does it, by `bernstein OP --json --detach ...`: the change made
 * in state.db under the run lock (audited as the CLI's, with that
 * process's uid and pid), then the run resumed in the background as
 * `bernstein resume --detach`, never here. The values come from the
 * parsed request, each glued to its option (--feedback=TEXT) or after
 * "--", so none becomes an option of its own. Its answer: the change's
 * reply (202, with "resumed", or its refusal with the status of its kind). */
static enum MHD_Result post_offline(struct MHD_Connection *c, const struct control_request *req)
{
	struct strvec a = STRVEC_INIT;
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture cap = {0};
	const char *after = NULL, *msg;
	char *errline = NULL;
	json_t *reply = NULL, *rest = NULL, *err = NULL;
	char why[512];
	enum MHD_Result ans;
	size_t i;

	switch (req->op) {
	case CONTROL_RETRY:
		strvec_push(&a, "retry");
		if (req->fresh)
			strvec_push(&a, "--fresh");
		break;
	case CONTROL_APPROVE:
		strvec_push(&a, "approve");
		if (req->allow_protected)
			strvec_push(&a, "--allow-protected");
		if (req->head)
			strvec_pushf(&a, "--head=%s", req->head);
		break;
	case CONTROL_REJECT:
		strvec_push(&a, "reject");
		if (req->feedback)
			strvec_pushf(&a, "--feedback=%s", req->feedback);
		break;
	default: /* add_task */
		strvec_push(&a, "add-task");
		if (req->add.prompt)
			strvec_pushf(&a, "--prompt=%s", req->add.prompt);
		if (req->add.title)
			strvec_pushf(&a, "--title=%s", req->add.title);
		if (req->add.id)
			strvec_pushf(&a, "--id=%s", req->add.id);
		if (req->add.adapter)
			strvec_pushf(&a, "--adapter=%s", req->add.adapter);
		if (req->add.role)
			strvec_pushf(&a, "--role=%s", req->add.role);
		for (i = 0; i < req->add.n_depends_on; i++)
			strvec_pushf(&a, "--depends-on=%s", req->add.depends_on[i]);
		break;
	}
	strvec_push(&a, "--json");
	strvec_push(&a, "--detach");
	if (req->n_tasks) {
		strvec_push(&a, "--");
		for (i = 0; i < req->n_tasks; i++)
			strvec_push(&a, req->tasks[i]);
	}
	if (capture_child(a.v, true, &spec, &cap, why, sizeof(why)) < 0) {
		ans = answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", why);
		goto out;
	}
	/* its changes and its reply, one line each; then resume --detach's
	 * object; an error on stderr */
	if (!cap.out_dropped)
		reply = reply_line(cap.out.buf, cap.out.len, &after);
	if (reply)
		rest = child_json(after, cap.out.len - (size_t)(after - cap.out.buf));
	err = cap.err_dropped ? NULL : child_json(cap.err.buf, cap.err.len);
	msg = json_string_value(json_object_get(json_object_get(err, "error"), "message"));
	if (!msg && cap.err.len) {
		/* a usage error is text: its first line */
		const char *e = cap.err.buf, *enl = memchr(e, '\n', cap.err.len);

		if (strncmp(e, "bernstein: ", 11) == 0)
			e += 11;
		errline = xstrndup(e, (size_t)((enl ? enl : cap.err.buf + cap.err.len) - e));
		msg = errline;
	}
	if (!reply) {
		/* refused before the run was asked: usage (2), or it could not be
		 * changed (the audit chain, I/O) */
		ans = answer_error(c,
				   cap.exit_code == BEXIT_USAGE ? MHD_HTTP_BAD_REQUEST
								: MHD_HTTP_INTERNAL_SERVER_ERROR,
				   cap.exit_code == BEXIT_USAGE ? "usage" : "internal",
				   "bernstein %s: %s (exit %d)", a.v[0], msg ? msg : "no reply",
				   cap.exit_code);
		goto out;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		/* refused by the run's own checks: nothing changed, no resume;
		 * answered as the live run's refusal */
		(void)json_object_del(reply, "exit_code");
		ans = answer_json(c, kind_status(json_string_value(json_object_get(reply, "kind"))),
				  json_incref(reply));
		goto out;
	}
	json_obj_set(reply, "exit_code", json_integer(cap.exit_code));
	json_obj_set(reply, "resumed",
		     json_boolean(cap.exit_code == 0 && json_object_get(rest, "pid")));
	if (json_object_get(rest, "pid")) {
		json_obj_set(reply, "pid", json_incref(json_object_get(rest, "pid")));
		json_obj_set(reply, "log", json_incref(json_object_get(rest, "log")));
	} else {
		json_obj_set(reply, "resume_error",
			     msg ? json_str_lossy(msg) : json_string("the resume did not start"));
	}
	ans = answer_json(c, MHD_HTTP_ACCEPTED, json_incref(reply));
out:
	json_decref(reply);
	json_decref(rest);
	json_decref(err);
	free(errline);
	capture_release(&cap);
	proc_spec_release(&spec);
	strvec_clear(&a);
	return ans;
}

/* op on run_id (task_id NULL: stop, add_task), the request body's object
 * merged into the request: sent to the live run over its control socket. */
static enum MHD_Result post_control(struct MHD_Connection *c, const char *run_id,
				    const char *task_id, const char *op, const char *body,
				    size_t blen)
{
	struct lookup l;
	struct control_request req;
	struct diag d;
	json_t *in = NULL, *msg = NULL, *reply = NULL;
	char *line = NULL, *sock = NULL;
	enum MHD_Result ans;
	int r;

	control_request_init(&req);
	if (lookup(c, run_id, task_id, &l, &ans))
		goto out;
	diag_clear(&d);
	if (blen == 0)
		in = json_object();
	else if (json_parse_strict("body", body, blen, &in, &d) < 0 || !json_is_object(in)) {
		ans = answer_error(c, MHD_HTTP_BAD_REQUEST, "usage",
				   "the body is not a JSON object%s%s", d.msg[0] ? ": " : "",
				   d.msg);
		goto out;
	}
	if (strcmp(op, "add_task") == 0) {
		msg = json_object();
		json_obj_set(msg, "task", json_incref(in));
	} else {
		if (json_object_get(in, "op") || json_object_get(in, "tasks")) {
			ans = answer_error(c, MHD_HTTP_BAD_REQUEST, "usage",
					   "the body names no op and no tasks: the URL does");
			goto out;
		}
		msg = json_deep_copy(in);
		if (task_id) {
			json_t *a = json_array();

			(void)json_array_append_new(a, json_string(task_id));
			json_obj_set(msg, "tasks", a);
		}
	}
	json_obj_set(msg, "op", json_string(op));
	line = json_dumps(msg, JSON_COMPACT);
	diag_clear(&d);
	if (!line || control_request_parse(line, strlen(line), &req, &d) < 0) {
		ans = answer_error(c, MHD_HTTP_BAD_REQUEST, "usage", "%s",
				   d.msg[0] ? d.msg : "not a request");
		goto out;
	}
	sock = control_socket_path(srv.repo, run_id);
	diag_clear(&d);
	r = control_call(sock, &req, CONTROL_TIMEOUT_MS, &reply, &d);
	if ((r == -ENOENT || r == -ECONNREFUSED) && strcmp(op, "cancel") == 0 && task_id &&
	    is_latest(l.st, run_id)) {
		/* as `bernstein cancel`: a pending, blocked or interrupted task
		 * of a run that is not live is cancelled in state.db, under the
		 * run lock */
		const char *args[] = {"cancel", "--json", "--no-wait", task_id, NULL};

		ans = answer_child_as(c, args, true);
		goto out;
	}
	if ((r == -ENOENT || r == -ECONNREFUSED) && req.op != CONTROL_STOP &&
	    req.op != CONTROL_CANCEL && is_latest(l.st, run_id)) {
		/* as `bernstein retry|approve|reject|add-task --detach` */
		ans = post_offline(c, &req);
		goto out;
	}
	if (r == -ENOENT || r == -ECONNREFUSED) {
		ans = answer_error(c, MHD_HTTP_CONFLICT, "not_live",
				   req.op == CONTROL_STOP
					   ? "run '%s' is not live: nothing to stop"
					   : "run '%s' is not live and not the latest run",
				   run_id);
		goto out;
	}
	if (r < 0) {
		ans = answer_error(c, MHD_HTTP_BAD_GATEWAY, "internal", "control channel: %s",
				   d.msg[0] ? d.msg : strerror(-r));
		goto out;
	}
	ans = answer_json(c,
			  json_is_true(json_object_get(reply, "ok"))
				  ? MHD_HTTP_OK
				  : kind_status(json_string_value(json_object_get(reply, "kind"))),
			  json_incref(reply));
out:
	json_decref(reply);
	json_decref(msg);
	json_decref(in);
	free(line);
	free(sock);
	control_request_release(&req);
	lookup_release(&l);
	return ans;
}

/* ---- requests ---- */

struct req {
	struct sbuf body;
	bool too_big;
};

static void req_done(void *cls, struct MHD_Connection *c, void **con_cls,
		     enum MHD_RequestTerminationCode why)
{
	struct req *q = *con_cls;

	(void)cls;
	(void)c;
	(void)why;
	if (q) {
		sbuf_release(&q->body);
		free(q);
		*con_cls = NULL;
	}
}

/* Authorization: Bearer TOKEN, compared as SHA-256 digests in constant
 * time (no length or prefix leaks). */
static bool authorized(struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	uint8_t got[SHA256_LEN];

	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	hash_sha256(h, strlen(h), got);
	return hash_equal(got, srv.token_hash, SHA256_LEN);
}

struct route {
	struct MHD_Connection *c;
	bool get, post;
	const char *body;
	size_t blen;
};

static enum MHD_Result not_found(struct MHD_Connection *c)
{
	return answer_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no such endpoint");
}

/* /api/runs/RUN/tasks/TASK[/WHAT] (n: the segments from TASK on) */
static enum MHD_Result route_task(const struct route *q, const char *run, char **segs, size_t n)
{
	static const char *const ops[] = {"cancel", "retry", "approve", "reject", NULL};
	const char *task = segs[0];
	size_t i;

	if (!serve_id_ok(task))
		return answer_error(q->c, MHD_HTTP_BAD_REQUEST, "usage", "not a task id");
	if (n == 1 && q->get)
		return get_task(q->c, run, task, false);
	if (n != 2)
		return not_found(q->c);
	if (q->get && strcmp(segs[1], "attempts") == 0)
		return get_task(q->c, run, task, true);
	if (q->get && strcmp(segs[1], "events") == 0)
		return get_events(q->c, run, task);
	if (q->get && strcmp(segs[1], "diff") == 0)
		return get_diff(q->c, run, task);
	if (q->get && strcmp(segs[1], "gates") == 0)
		return get_gates(q->c, run, task);
	for (i = 0; q->post && ops[i]; i++)
		if (strcmp(segs[1], ops[i]) == 0)
			return post_control(q->c, run, task, ops[i], q->body, q->blen);
	return not_found(q->c);
}

/* /api/runs/RUN[/...] (n: the segments from RUN on) */
static enum MHD_Result route_run(const struct route *q, char **segs, size_t n)
{
	const char *run = segs[0];

	if (!serve_id_ok(run))
		return answer_error(q->c, MHD_HTTP_BAD_REQUEST, "usage", "not a run id");
	if (n == 1)
		return q->get ? get_run(q->c, run, false) : not_found(q->c);
	if (n == 2 && strcmp(segs[1], "stream") == 0 && q->get)
		return get_board(q->c, run);
	if (n == 2 && strcmp(segs[1], "stop") == 0 && q->post)
		return post_control(q->c, run, NULL, "stop", q->body, q->blen);
	if (n == 2 && strcmp(segs[1], "tasks") == 0)
		return q->get ? get_run(q->c, run, true)
			      : post_control(q->c, run, NULL, "add_task", q->body, q->blen);
	if (n >= 3 && strcmp(segs[1], "tasks") == 0)
		return route_task(q, run, segs + 2, n - 2);
	return not_found(q->c);
}

static enum MHD_Result route(struct MHD_Connection *c, const char *method, const char *url,
			     const char *body, size_t blen)
{
	static const char *const audit_args[] = {"audit", "verify", "--json", NULL};
	struct route q = {.c = c, .body = body, .blen = blen};
	char buf[1024], *segs[SERVE_SEGS_MAX];
	size_t n;
	int r;

	q.get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	q.post = strcmp(method, "POST") == 0;
	if (!q.get && !q.post)
		return answer_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "method not allowed");
	r = serve_path_split(url, buf, sizeof(buf), segs);
	if (r == -ENAMETOOLONG)
		return answer_error(c, MHD_HTTP_URI_TOO_LONG, "usage", "URL too long");
	if (r < 0)
		return not_found(c);
	n = (size_t)r;
	if (n == 1 && strcmp(segs[0], "metrics") == 0 && q.get)
		return get_metrics(c);
	if (n < 2 || strcmp(segs[0], "api") != 0)
		return not_found(c);
	if (n == 2 && strcmp(segs[1], "runs") == 0 && q.get)
		return get_runs(c);
	if (n == 2 && strcmp(segs[1], "audit") == 0 && q.get)
		return answer_child(c, audit_args);
	if (n == 2 && strcmp(segs[1], "adapters") == 0 && q.get)
		return get_adapters(c);
	if (n >= 3 && strcmp(segs[1], "runs") == 0)
		return route_run(&q, segs + 2, n - 2);
	return not_found(c);
}

static enum MHD_Result asset(struct MHD_Connection *c, const char *url)
{
	const struct serve_asset *a;

	for (a = serve_assets; a->path; a++)
		if (strcmp(a->path, url) == 0) {
			struct MHD_Response *resp = MHD_create_response_from_buffer(
				a->len, (void *)(uintptr_t)a->data, MHD_RESPMEM_PERSISTENT);
			enum MHD_Result r;

			if (!resp)
				return MHD_NO;
			(void)MHD_add_response_header(resp, "Content-Type", a->type);
			(void)MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
			(void)MHD_add_response_header(resp, "X-Frame-Options", "DENY");
			(void)MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
			(void)MHD_add_response_header(resp, "Content-Security-Policy", SERVE_CSP);
			r = MHD_queue_response(c, MHD_HTTP_OK, resp);
			MHD_destroy_response(resp);
			return r;
		}
	return answer_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no such page");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct req *q = *con_cls;

	(void)cls;
	(void)version;
	if (!q) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
		bool api = strncmp(url, "/api/", 5) == 0 || strcmp(url, "/metrics") == 0;

		q = xcalloc(1, sizeof(*q));
		q->body = (struct sbuf)SBUF_INIT(BODY_MAX);
		*con_cls = q;
		/* The dashboard's own files hold no data: they are public; every
		 * answer with data needs the token. */
		if (!api && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
			return asset(c, url);
		if (!authorized(c))
			return answer_error(c, MHD_HTTP_UNAUTHORIZED, "unauthorized",
					    "a bearer token is required (.bernstein/%s)",
					    SERVE_TOKEN_FILE);
		if (cl && strtoull(cl, NULL, 10) > BODY_MAX)
			return answer_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "usage",
					    "a body is at most %zu bytes", BODY_MAX);
		return MHD_YES;
	}
	if (*upload_size) {
		if (!q->too_big && sbuf_add(&q->body, upload, *upload_size) < 0)
			q->too_big = true;
		*upload_size = 0;
		return MHD_YES;
	}
	if (q->too_big)
		return answer_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "usage",
				    "a body is at most %zu bytes", BODY_MAX);
	return route(c, method, url, q->body.buf, q->body.len);
}

/* ---- start-up ---- */

/* ADDR:PORT ([V6]:PORT, localhost:PORT) into *ss; 0 or -EINVAL. */
static int parse_listen(const char *s, struct sockaddr_storage *ss, bool *ret_loopback)
{
	char host[256];
	const char *colon = strrchr(s, ':');
	struct addrinfo hints = {0}, *ai = NULL;
	char *end;
	long port;
	size_t hl;

	if (!colon)
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= sizeof(host) || hl == 0)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || colon[1] == '\0' || port < 0 || port > 65535)
		return -EINVAL;
	if (strcmp(host, "localhost") == 0)
		(void)snprintf(host, sizeof(host), "127.0.0.1");
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (ss->ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_port = htons((uint16_t)port);
		*ret_loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_port = htons((uint16_t)port);
		*ret_loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return 0;
}

/* A new random token into .bernstein/serve.token (0600, replaced
 * atomically); its digest kept. */
static int make_token(char hex[TOKEN_HEX + 1], char **ret_path)
{
	uint8_t raw[TOKEN_HEX / 2];
	char *path;
	size_t got = 0;
	int r;

	while (got < sizeof(raw)) {
		ssize_t k = getrandom(raw + got, sizeof(raw) - got, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		got += (size_t)k;
	}
	hash_hex(raw, sizeof(raw), hex);
	hash_sha256(hex, TOKEN_HEX, (uint8_t *)srv.token_hash);
	path = xmalloc(strlen(srv.bdir) + sizeof(SERVE_TOKEN_FILE) + 1);
	(void)snprintf(path, strlen(srv.bdir) + sizeof(SERVE_TOKEN_FILE) + 1, "%s/%s", srv.bdir,
		       SERVE_TOKEN_FILE);
	{
		char line[TOKEN_HEX + 2];

		(void)snprintf(line, sizeof(line), "%s\n", hex);
		r = atomic_replace_file(path, line, TOKEN_HEX + 1, 0600);
	}
	if (r < 0) {
		free(path);
		return r;
	}
	*ret_path = path;
	return 0;
}

/* Remove the token file, unless another server has replaced it since (its
 * token is not ours to take away). */
static void drop_token(const char *path, const char *token)
{
	char *text = NULL;
	size_t len = 0;

	if (read_file_capped(path, 256, &text, &len) == 0 && len >= TOKEN_HEX &&
	    memcmp(text, token, TOKEN_HEX) == 0)
		(void)unlink(path);
	free(text);
}

static const struct option options[] = {
	{"listen", required_argument, NULL, 'l'},
	{"idle-timeout", required_argument, NULL, 't'},
	{"watch-pid", required_argument, NULL, 'w'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

struct opts {
	const char *listen;
	long idle, watch;
};

/* The options into *o: 0, or the exit code after the message (-1: --help
 * printed, exit 0). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		char *end;

		errno = 0;
		switch (c) {
		case 'l':
			o->listen = optarg;
			break;
		case 't':
			o->idle = strtol(optarg, &end, 10);
			if (errno || *end || o->idle < 1 || o->idle > 3600) {
				(void)fprintf(
					stderr,
					"bernstein: --idle-timeout: '%s' is not 1..3600 seconds\n%s",
					optarg, usage_text);
				return BEXIT_USAGE;
			}
			break;
		case 'w':
			o->watch = strtol(optarg, &end, 10);
			if (errno || *end || o->watch < 1) {
				(void)fprintf(stderr,
					      "bernstein: --watch-pid: '%s' is not a pid\n%s",
					      optarg, usage_text);
				return BEXIT_USAGE;
			}
			break;
		case 'h':
			(void)fputs(usage_text, stdout);
			return -1;
		default:
			(void)fprintf(stderr, "%s", usage_text);
			return BEXIT_USAGE;
		}
	}
	if (optind < argc) {
		(void)fprintf(stderr, "bernstein: unexpected argument '%s'\n%s", argv[optind],
			      usage_text);
		return BEXIT_USAGE;
	}
	return 0;
}

/* The repository, its paths, the bernstein beside this executable, the
 * children's environment. 0 or the exit code after the message. */
static int setup(char **envp)
{
	char cwd[PATH_MAX];
	struct diag dg;
	size_t i;
	int r;

	memset(&srv, 0, sizeof(srv));
	srv.env = (struct strvec)STRVEC_INIT;
	for (i = 0; envp && envp[i]; i++)
		strvec_push(&srv.env, envp[i]);
	(void)pthread_mutex_init(&srv.child_lock, NULL);
	(void)pthread_key_create(&db_key, db_key_free);
	if (!getcwd(cwd, sizeof(cwd))) {
		(void)fprintf(stderr, "bernstein: cannot get the current directory: %s\n",
			      strerror(errno));
		return BEXIT_ENV;
	}
	diag_clear(&dg);
	r = git_toplevel(cwd, (const char *const *)srv.env.v, &srv.repo, &dg);
	if (r < 0) {
		(void)fprintf(stderr, "bernstein: '%s' is not inside a git repository: %s\n", cwd,
			      dg.msg[0] ? dg.msg : strerror(-r));
		return BEXIT_ENV;
	}
	srv.bdir = agentrun_path(srv.repo, ".bernstein");
	srv.db = agentrun_path(srv.repo, ORCH_STATE_DB);
	srv.runsdir = agentrun_path(srv.repo, AGENTRUN_RUNS_DIR);
	if (cli_sibling_path("bernstein", srv.bernstein, sizeof(srv.bernstein)) < 0) {
		(void)fprintf(stderr, "bernstein: cannot locate 'bernstein' beside %s\n",
			      SERVE_EXE);
		return BEXIT_ENV;
	}
	return 0;
}

static void teardown(void)
{
	strvec_clear(&srv.env);
	free(srv.repo);
	free(srv.bdir);
	free(srv.db);
	free(srv.runsdir);
}

static struct MHD_Daemon *start(const struct sockaddr_storage *ss, long idle)
{
	return MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			(ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNS_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)idle, MHD_OPTION_CONNECTION_MEMORY_LIMIT, HEADER_MEM,
		MHD_OPTION_NOTIFY_COMPLETED, req_done, NULL, MHD_OPTION_END);
}

/* The URL with the token, once, on stdout. */
static void announce(struct MHD_Daemon *d, const struct sockaddr_storage *ss, const char *token,
		     const char *token_path)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char host[INET6_ADDRSTRLEN];
	bool v6 = ss->ss_family == AF_INET6;

	if (v6)
		(void)inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host,
				sizeof(host));
	else
		(void)inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host,
				sizeof(host));
	(void)fprintf(stdout, "bernstein serve: http://%s%s%s:%u/#token=%s\n", v6 ? "[" : "", host,
		      v6 ? "]" : "", info ? (unsigned)info->port : 0, token);
	(void)fprintf(stdout, "bernstein serve: token in %s (Authorization: Bearer TOKEN)\n",
		      token_path);
	(void)fflush(stdout);
}

/* Until SIGINT, SIGTERM, SIGHUP or the watched run's end. */
static void wait_end(int sfd, int pfd)
{
	for (;;) {
		struct pollfd pf[2] = {{.fd = sfd, .events = POLLIN},
				       {.fd = pfd, .events = POLLIN}};

		if (poll(pf, pfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			return;
		if (pf[0].revents || (pfd >= 0 && pf[1].revents))
			return;
	}
}

int main(int argc, char **argv, char **envp)
{
	struct opts o = {.listen = SERVE_DEFAULT_LISTEN, .idle = 10};
	struct sockaddr_storage ss;
	struct MHD_Daemon *d = NULL;
	char token[TOKEN_HEX + 1], *token_path = NULL;
	bool loopback = false;
	int r, code, sfd = -1, pfd = -1;
	sigset_t mask;

	envp = cli_environ_take(envp);
	(void)signal(SIGPIPE, SIG_IGN);
	code = parse_args(argc, argv, &o);
	if (code)
		return code < 0 ? 0 : code;
	/* Every request reads state.db: SQLite loaded now, not at the first
	 * request (util/lazy.h); the other libraries stop the server with the
	 * same message and code at their first use. */
	cli_lazy_init(NULL);
	{
		struct diag ld = {0};

		if (lazy_load(LAZY_SQLITE, &ld) < 0) {
			(void)fprintf(stderr, "bernstein: serve: %s\n", ld.msg);
			return BEXIT_LIBRARY;
		}
	}
	if (parse_listen(o.listen, &ss, &loopback) < 0) {
		(void)fprintf(
			stderr,
			"bernstein: --listen: '%s' is not ADDR:PORT (an IP address or localhost, and a port)\n",
			o.listen);
		return BEXIT_USAGE;
	}
	code = setup(envp);
	if (code)
		goto out;
	if (mkdir_p(srv.bdir, 0700) < 0 || (r = make_token(token, &token_path)) < 0) {
		(void)fprintf(stderr, "bernstein: cannot write the token '%s/%s': %s\n", srv.bdir,
			      SERVE_TOKEN_FILE, strerror(errno));
		code = BEXIT_ENV;
		goto out;
	}
	/* signals and the watched run: before any thread starts */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	(void)pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (o.watch) {
		pfd = (int)syscall(SYS_pidfd_open, (pid_t)o.watch, 0);
		if (pfd < 0) {
			(void)fprintf(stderr, "bernstein: the run's process %ld is gone\n",
				      o.watch);
			code = BEXIT_ENV;
			goto out;
		}
	}
	d = start(&ss, o.idle);
	if (!d) {
		(void)fprintf(stderr, "bernstein: cannot listen on '%s': %s\n", o.listen,
			      strerror(errno));
		code = BEXIT_ENV;
		goto out;
	}
	if (!loopback)
		(void)fprintf(
			stderr,
			"bernstein: warning: serving on '%s', not a loopback address: anyone who can reach it and holds the token controls the runs (no TLS)\n",
			o.listen);
	announce(d, &ss, token, token_path);
	wait_end(sfd, pfd);
	atomic_store(&stopping, true);
out:
	if (d)
		MHD_stop_daemon(d);
	if (token_path)
		drop_token(token_path, token);
	free(token_path);
	if (sfd >= 0)
		(void)close(sfd);
	if (pfd >= 0)
		(void)close(pfd);
	teardown();
	return code;
}
