/* serve-http: the HTTP plumbing of bernstein-serve: answers, the read-only state.db
 * connection of a request thread, rows as JSON, the lookup of a run and a
 * task, and the CLI commands run as children (serve-internal.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/serve-path.h"
#include "orch/control.h"
#include "proc/capture.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "cli/serve-internal.h"
#include "util/banned.h"

int64_t serve_mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void serve_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	(void)nanosleep(&ts, NULL);
}

/* ---- answers ---- */

enum MHD_Result serve_answer_text(struct MHD_Connection *c, unsigned status, const char *type,
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

enum MHD_Result serve_answer_json(struct MHD_Connection *c, unsigned status, json_t *v)
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
	return serve_answer_text(c, status, "application/json", s, n);
}

enum MHD_Result serve_answer_error(struct MHD_Connection *c, unsigned status, const char *kind,
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
	return serve_answer_json(c, status, o);
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

void serve_db_init(void)
{
	(void)pthread_key_create(&db_key, db_key_free);
}

int serve_db_open(struct state **ret)
{
	struct state *st = pthread_getspecific(db_key);

	if (st) {
		(void)pthread_setspecific(db_key, NULL);
		*ret = st;
		return 0;
	}
	return state_open(serve_srv.db, STATE_READONLY, ret, NULL);
}

struct state *serve_db_close(struct state *st)
{
	if (st && !pthread_getspecific(db_key) && pthread_setspecific(db_key, st) == 0)
		return NULL;
	return state_close(st);
}

json_t *serve_jstr(const char *s)
{
	return json_str_lossy(s);
}

static json_t *jint(int64_t v)
{
	return v == STATE_NULL_INT ? json_null() : json_integer(v);
}

json_t *serve_run_json(const struct run_row *r)
{
	json_t *o = json_object();

	json_obj_set(o, "id", serve_jstr(r->id));
	json_obj_set(o, "name", serve_jstr(r->name));
	json_obj_set(o, "state", serve_jstr(run_state_to_string(r->state)));
	json_obj_set(o, "plan_path", serve_jstr(r->plan_path));
	json_obj_set(o, "base_branch", serve_jstr(r->base_branch));
	json_obj_set(o, "base_commit", serve_jstr(r->base_commit));
	json_obj_set(o, "parallel", jint(r->parallel));
	json_obj_set(o, "created_at", serve_jstr(r->created_at));
	json_obj_set(o, "updated_at", serve_jstr(r->updated_at));
	json_obj_set(o, "live", json_boolean(r->supervisor_pid != STATE_NULL_INT));
	return o;
}

json_t *serve_task_json(const struct task_row *t)
{
	json_t *o = json_object();

	json_obj_set(o, "id", serve_jstr(t->id));
	json_obj_set(o, "title", serve_jstr(t->title));
	json_obj_set(o, "role", serve_jstr(t->role));
	json_obj_set(o, "state", serve_jstr(task_state_to_string(t->state)));
	json_obj_set(o, "adapter", serve_jstr(t->adapter));
	json_obj_set(o, "profile_hash", serve_jstr(t->profile_hash));
	json_obj_set(o, "attempts", json_integer(t->attempts));
	json_obj_set(o, "outcome", serve_jstr(t->outcome));
	json_obj_set(o, "reason", serve_jstr(t->reason));
	json_obj_set(o, "branch", serve_jstr(t->branch));
	json_obj_set(o, "head_commit", serve_jstr(t->head_commit));
	json_obj_set(o, "merge_commit", serve_jstr(t->merge_commit));
	json_obj_set(o, "updated_at", serve_jstr(t->updated_at));
	return o;
}

json_t *serve_attempt_json(const struct attempt_row *a)
{
	json_t *o = json_object();

	json_obj_set(o, "n", json_integer(a->n));
	json_obj_set(o, "adapter", serve_jstr(a->adapter));
	json_obj_set(o, "model", serve_jstr(a->model));
	json_obj_set(o, "profile_hash", serve_jstr(a->profile_hash));
	json_obj_set(o, "started_at", serve_jstr(a->started_at));
	json_obj_set(o, "ended_at", serve_jstr(a->ended_at));
	json_obj_set(o, "outcome", serve_jstr(a->outcome));
	json_obj_set(o, "exit_code", jint(a->exit_code));
	json_obj_set(o, "reason", serve_jstr(a->reason));
	json_obj_set(o, "input_tokens", jint(a->input_tokens));
	json_obj_set(o, "output_tokens", jint(a->output_tokens));
	json_obj_set(o, "cached_tokens", jint(a->cached_tokens));
	json_obj_set(o, "cost_usd", isnan(a->cost_usd) ? json_null() : json_real(a->cost_usd));
	json_obj_set(o, "cost_source", serve_jstr(a->cost_source));
	json_obj_set(o, "agent_error", serve_jstr(a->agent_error));
	return o;
}

void serve_lookup_release(struct serve_lookup *l)
{
	run_row_release(&l->run);
	task_row_release(&l->task);
	l->st = serve_db_close(l->st);
}

int serve_lookup(struct MHD_Connection *c, const char *run_id, const char *task_id,
		 struct serve_lookup *l, enum MHD_Result *ret_answer)
{
	int r;

	memset(l, 0, sizeof(*l));
	run_row_init(&l->run);
	task_row_init(&l->task);
	if (!serve_id_ok(run_id) || (task_id && !serve_id_ok(task_id))) {
		*ret_answer = serve_answer_error(c, MHD_HTTP_BAD_REQUEST, "usage", "not an id");
		return 1;
	}
	r = serve_db_open(&l->st);
	if (r == -ENOENT) {
		*ret_answer = serve_answer_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no run '%s'",
						 run_id);
		return 1;
	}
	if (r < 0) {
		*ret_answer = serve_answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
						 "cannot read state.db: %s", strerror(-r));
		return 1;
	}
	r = state_run_get(l->st, run_id, &l->run, NULL);
	if (r == 0 && task_id)
		r = state_task_get(l->st, run_id, task_id, &l->task, NULL);
	if (r == -ENOENT) {
		*ret_answer = serve_answer_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no %s '%s'",
						 task_id ? "such run or task" : "run",
						 task_id ? task_id : run_id);
		return 1;
	}
	if (r < 0) {
		*ret_answer = serve_answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
						 "cannot read state.db: %s", strerror(-r));
		return 1;
	}
	return 0;
}

char *serve_attempt_dir(const struct task_row *t, int64_t n)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (!t->session || !serve_id_ok(t->session) || !serve_id_ok(t->run_id) || n < 1)
		return NULL;
	(void)sbuf_addf(&sb, "%s/%s/%s/%" PRId64, serve_srv.runsdir, t->run_id, t->session, n);
	return sbuf_detach(&sb, NULL);
}

unsigned serve_kind_status(const char *kind)
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
int serve_capture_child(const char *const *args, bool detaches, struct proc_spec *spec,
			struct capture *cap, char *why, size_t whysize)
{
	struct capture_opts co = {0};
	size_t i;
	int r;

	strvec_push(&spec->argv, serve_srv.bernstein);
	for (i = 0; args[i]; i++)
		strvec_push(&spec->argv, args[i]);
	for (i = 0; i < serve_srv.env.nr; i++)
		strvec_push(&spec->env, serve_srv.env.v[i]);
	spec->cwd = serve_srv.repo;
	if (detaches)
		spec->contain = CONTAIN_PGROUP;
	cap->spec = spec;
	cap->timeout_ms = CHILD_TIMEOUT_MS;
	cap->kill_grace_ms = 1000;
	cap->max_out = CHILD_OUT_MAX;
	cap->max_err = 4096;
	(void)pthread_mutex_lock(&serve_srv.child_lock);
	r = proc_capture(cap, 1, &co);
	(void)pthread_mutex_unlock(&serve_srv.child_lock);
	if (r >= 0 && cap->start_result < 0)
		r = cap->start_result;
	if (r < 0)
		(void)snprintf(why, whysize, "cannot run bernstein %s: %s", args[0], strerror(-r));
	return r;
}

json_t *serve_child_json(const char *body, size_t blen)
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

int serve_run_child(const char *const *args, json_t **ret, char *why, size_t whysize)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture cap = {0};
	json_t *v = NULL;
	int r;

	r = serve_capture_child(args, false, &spec, &cap, why, whysize);
	if (r < 0)
		goto out;
	if (!cap.out_dropped)
		v = serve_child_json(cap.out.buf, cap.out.len);
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

enum MHD_Result serve_answer_child_as(struct MHD_Connection *c, const char *const *args, bool reply)
{
	char why[512];
	json_t *v = NULL;

	if (serve_run_child(args, &v, why, sizeof(why)) < 0)
		return serve_answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", why);
	return serve_answer_json(
		c,
		!reply || json_is_true(json_object_get(v, "ok"))
			? MHD_HTTP_OK
			: serve_kind_status(json_string_value(json_object_get(v, "kind"))),
		v);
}

enum MHD_Result serve_answer_child(struct MHD_Connection *c, const char *const *args)
{
	return serve_answer_child_as(c, args, false);
}
