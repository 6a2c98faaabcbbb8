/* serve-api: the GET routes of bernstein-serve's API: runs, tasks, attempts, gate
 * logs, adapters, a diff, and /metrics (docs/api.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "orch/plan.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "cli/serve-internal.h"
#include "util/banned.h"

/* ---- GET handlers ---- */

enum MHD_Result serve_get_runs(struct MHD_Connection *c)
{
	struct state *st = NULL;
	struct run_row *v = NULL;
	size_t n = 0, i;
	json_t *a = json_array();
	int r = serve_db_open(&st);

	if (r == -ENOENT)
		goto done;
	if (r >= 0)
		r = state_run_list(st, &v, &n, NULL);
	if (r < 0) {
		json_decref(a);
		(void)serve_db_close(st);
		return serve_answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
					  "cannot read state.db: %s", strerror(-r));
	}
	for (i = n; i-- > 0;) /* the latest first */
		(void)json_array_append_new(a, serve_run_json(&v[i]));
done:
	run_rows_free(v, n);
	(void)serve_db_close(st);
	{
		json_t *o = json_object();

		json_obj_set(o, "runs", a);
		return serve_answer_json(c, MHD_HTTP_OK, o);
	}
}

json_t *serve_tasks_array(struct state *st, const char *run_id, int *ret_err)
{
	struct task_row *v = NULL;
	size_t n = 0, i;
	json_t *a = json_array();
	int r = state_tasks_get(st, run_id, &v, &n, NULL);

	*ret_err = r < 0 ? r : 0;
	for (i = 0; r >= 0 && i < n; i++)
		(void)json_array_append_new(a, serve_task_json(&v[i]));
	task_rows_free(v, n);
	return a;
}

enum MHD_Result serve_get_run(struct MHD_Connection *c, const char *run_id, bool tasks_only)
{
	struct serve_lookup l;
	enum MHD_Result ans;
	json_t *o, *tasks;
	int err;

	if (serve_lookup(c, run_id, NULL, &l, &ans))
		goto out;
	tasks = serve_tasks_array(l.st, run_id, &err);
	if (err < 0) {
		json_decref(tasks);
		ans = serve_answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
					 "cannot read state.db: %s", strerror(-err));
		goto out;
	}
	if (tasks_only) {
		o = json_object();
		json_obj_set(o, "run", serve_jstr(run_id));
		json_obj_set(o, "tasks", tasks);
	} else {
		o = serve_run_json(&l.run);
		json_obj_set(o, "tasks", tasks);
	}
	ans = serve_answer_json(c, MHD_HTTP_OK, o);
out:
	serve_lookup_release(&l);
	return ans;
}

enum MHD_Result serve_get_task(struct MHD_Connection *c, const char *run_id, const char *task_id,
			       bool attempts_only)
{
	struct serve_lookup l;
	struct attempt_row *v = NULL;
	size_t n = 0, i;
	enum MHD_Result ans;
	json_t *o, *a;
	int r;

	if (serve_lookup(c, run_id, task_id, &l, &ans))
		goto out;
	r = state_attempts_get(l.st, run_id, task_id, &v, &n, NULL);
	if (r < 0) {
		ans = serve_answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
					 "cannot read state.db: %s", strerror(-r));
		goto out;
	}
	a = json_array();
	for (i = 0; i < n; i++)
		(void)json_array_append_new(a, serve_attempt_json(&v[i]));
	if (attempts_only) {
		o = json_object();
		json_obj_set(o, "run", serve_jstr(run_id));
		json_obj_set(o, "task", serve_jstr(task_id));
	} else {
		o = serve_task_json(&l.task);
		json_obj_set(o, "run", serve_jstr(run_id));
		json_obj_set(o, "prompt", serve_jstr(l.task.prompt));
		json_obj_set(o, "feedback", serve_jstr(l.task.feedback));
		json_obj_set(o, "conflicts", serve_jstr(l.task.conflicts));
	}
	json_obj_set(o, "attempts", a);
	ans = serve_answer_json(c, MHD_HTTP_OK, o);
	attempt_rows_free(v, n);
out:
	serve_lookup_release(&l);
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
	json_obj_set(g, "name", serve_jstr(gate));
	json_obj_set(g, "size", json_integer((json_int_t)sb.st_size));
	json_obj_set(g, "truncated", json_boolean(sb.st_size > (k > 0 ? k : 0)));
	json_obj_set(g, "log", json_str_lossy(text));
	free(text);
	return g;
}

enum MHD_Result serve_get_gates(struct MHD_Connection *c, const char *run_id, const char *task_id)
{
	struct serve_lookup l;
	enum MHD_Result ans;
	json_t *a, *o;
	int64_t n;

	if (serve_lookup(c, run_id, task_id, &l, &ans))
		goto out;
	a = json_array();
	for (n = 1; n <= l.task.attempts; n++) {
		char *dir = serve_attempt_dir(&l.task, n);
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
	json_obj_set(o, "run", serve_jstr(run_id));
	json_obj_set(o, "task", serve_jstr(task_id));
	json_obj_set(o, "gates", a);
	ans = serve_answer_json(c, MHD_HTTP_OK, o);
out:
	serve_lookup_release(&l);
	return ans;
}

enum MHD_Result serve_get_adapters(struct MHD_Connection *c)
{
	static const char *const check_args[] = {"adapters", "check", "--json", NULL};
	static const char *const doctor_args[] = {"doctor", "--json", NULL};
	char why[512];
	json_t *v = NULL, *doc = NULL;

	if (serve_run_child(check_args, &v, why, sizeof(why)) < 0 ||
	    serve_run_child(doctor_args, &doc, why, sizeof(why)) < 0) {
		json_decref(v);
		return serve_answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", why);
	}
	json_obj_set(v, "usable", json_incref(json_object_get(doc, "agents")));
	json_obj_set(v, "not_installed", json_incref(json_object_get(doc, "agents_not_installed")));
	json_decref(doc);
	return serve_answer_json(c, MHD_HTTP_OK, v);
}

enum MHD_Result serve_get_diff(struct MHD_Connection *c, const char *run_id, const char *task_id)
{
	struct serve_lookup l;
	struct run_row latest = RUN_ROW_INIT;
	enum MHD_Result ans;
	const char *args[] = {"diff", "--json", task_id, NULL};

	if (serve_lookup(c, run_id, task_id, &l, &ans))
		goto out;
	run_row_init(&latest);
	/* `bernstein diff` shows the latest run's tasks */
	if (state_run_latest(l.st, &latest, NULL) < 0 || strcmp(latest.id, run_id) != 0) {
		ans = serve_answer_error(c, MHD_HTTP_CONFLICT, "state",
					 "a diff is shown for the latest run's tasks only");
		goto out;
	}
	if (!plan_id_valid(task_id)) {
		ans = serve_answer_error(c, MHD_HTTP_BAD_REQUEST, "usage", "not a task id");
		goto out;
	}
	ans = serve_answer_child(c, args);
out:
	run_row_release(&latest);
	serve_lookup_release(&l);
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

enum MHD_Result serve_get_metrics(struct MHD_Connection *c)
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
	r = serve_db_open(&st);
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
	(void)serve_db_close(st);
	body = sbuf_detach(&sb, &len);
	return serve_answer_text(c, MHD_HTTP_OK, "text/plain; version=0.0.4", body, len);
}
