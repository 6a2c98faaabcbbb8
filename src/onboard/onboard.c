/* Running onboarding cases and recording a transcript; see onboard.h. */
#include "onboard/onboard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/envpolicy.h"
#include "onboard/yemit.h"
#include "proc/probe.h"
#include "proc/supervise.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* Deeper trees in a scratch directory are not removed (an agent that nests
 * that deep is broken or hostile; the directory stays for the operator). */
#define SCRATCH_MAX_DEPTH 64

static const char *const status_names[_ONBOARD_STATUS_MAX] = {
	[ONBOARD_PASSED] = "passed",
	[ONBOARD_EXIT_NONZERO] = "exit_nonzero",
	[ONBOARD_TIMED_OUT] = "timed_out",
	[ONBOARD_MISSING_BINARY] = "missing_binary",
	[ONBOARD_EXEC_ERROR] = "exec_error",
	[ONBOARD_SIGNALED] = "signaled",
	[ONBOARD_ARGV_MISMATCH] = "argv_mismatch",
	[ONBOARD_CANCELLED] = "cancelled",
};

const char *onboard_status_to_string(enum onboard_status s)
{
	return s >= 0 && s < _ONBOARD_STATUS_MAX ? status_names[s] : NULL;
}

/* ---- scratch directories ---- */

static int make_scratch(const char *tmp_dir, char **ret, struct diag *reterr)
{
	char *path = NULL;
	int n;

	if (!tmp_dir || tmp_dir[0] != '/') {
		diag_set(reterr, NULL, 0, 0, "the temporary directory must be an absolute path");
		return -EINVAL;
	}
	n = asprintf(&path, "%s/%s.XXXXXX", tmp_dir, ONBOARD_SCRATCH_PREFIX);
	if (n < 0)
		BUG("asprintf failed");
	if (!mkdtemp(path)) {
		int r = -errno;

		diag_set(reterr, NULL, 0, 0, "cannot create a scratch directory in '%s': %s",
			 tmp_dir, strerror(-r));
		free(path);
		return r;
	}
	*ret = path;
	return 0;
}

/* rm -rf of dirfd/name, never following a symbolic link; directories are
 * made writable first (an agent may leave a 0500 tree). The first error. */
static int remove_at(int parent, const char *name, unsigned depth)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, r = 0, k;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (depth >= SCRATCH_MAX_DEPTH)
		return -ELOOP;
	if ((st.st_mode & 0700) != 0700 && fchmodat(parent, name, 0700, 0) < 0)
		return -errno;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		(void)close(fd);
		return r;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		k = remove_at(dirfd(d), de->d_name, depth + 1);
		if (k < 0 && r == 0)
			r = k;
	}
	(void)closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

static int remove_scratch(const char *path)
{
	return remove_at(AT_FDCWD, path, 0);
}

/* ---- the environment ---- */

static bool fixed_name(const char *name)
{
	static const char *const fixed[] = {"HOME", "TERM", "CI", "NO_COLOR", "PATH"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		if (strcmp(fixed[i], name) == 0)
			return true;
	return false;
}

int onboard_sandbox_env(const struct recorded_invocation *inv, const char *const *host_env,
			const char *home, struct strvec *ret, struct diag *reterr)
{
	static const char *const from_host[] = {"LANG", "LC_ALL"};
	const char *v;
	struct strvec env = STRVEC_INIT;
	size_t i;

	v = envpolicy_get(host_env, "PATH");
	strvec_pushf(&env, "PATH=%s", v ? v : "/usr/bin:/bin");
	strvec_pushf(&env, "HOME=%s", home);
	strvec_push(&env, "TERM=dumb");
	strvec_push(&env, "CI=1");
	strvec_push(&env, "NO_COLOR=1");
	for (i = 0; i < ARRAY_SIZE(from_host); i++) {
		v = envpolicy_get(host_env, from_host[i]);
		if (v)
			strvec_pushf(&env, "%s=%s", from_host[i], v);
	}
	for (i = 0; i < inv->env_passthrough.n; i++) {
		const char *name = inv->env_passthrough.v[i];
		size_t j, len = strlen(name);
		bool dup = false;

		if (!envpolicy_name_valid(name)) {
			diag_set(reterr, NULL, 0, 0, "invalid environment variable name '%s'",
				 name);
			strvec_clear(&env);
			return -EINVAL;
		}
		if (fixed_name(name))
			continue; /* the normalised value wins */
		for (j = 0; j < env.nr && !dup; j++)
			dup = strncmp(env.v[j], name, len) == 0 && env.v[j][len] == '=';
		v = envpolicy_get(host_env, name);
		if (v && !dup)
			strvec_pushf(&env, "%s=%s", name, v);
	}
	strvec_sort(&env);
	for (i = 0; i < env.nr; i++)
		strvec_push(ret, env.v[i]);
	strvec_clear(&env);
	return 0;
}

/* ---- running cases ---- */

struct run {
	const struct recorded_invocation *inv;
	const struct onboard_case *cases;
	struct onboard_result *results;
	size_t n, next;
	const struct onboard_opts *opts;
	const struct clock *clock;
	const char *scratch;
	uint64_t start_ms; /* of the running case */
	size_t running;	   /* index of the running case */
	bool mismatch;	   /* the running case's argv differs */
	char mismatch_msg[320];
	char *work;	     /* the running case's work directory (its cwd) */
	int error;	     /* a setup failure inside next_task (negative errno) */
	struct diag *reterr; /* where that failure is described */
};

static void result_set(struct onboard_result *res, enum onboard_status st, int code,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void result_set(struct onboard_result *res, enum onboard_status st, int code,
		       const char *fmt, ...)
{
	va_list ap;

	res->status = st;
	res->exit_code = code;
	va_start(ap, fmt);
	(void)vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
}

/* s for a one-line message: controls escaped (\n, \t, \xHH), at most
 * about 60 bytes, then "...". */
static const char *quote_token(char *buf, size_t size, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i;

	for (i = 0; s[i] && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i >= 60) {
			buf[o++] = '.';
			buf[o++] = '.';
			buf[o++] = '.';
			break;
		}
		if (c == '\n' || c == '\t') {
			buf[o++] = '\\';
			buf[o++] = c == '\n' ? 'n' : 't';
		} else if (c < 0x20 || c == 0x7f || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o] = '\0';
	return buf;
}

/* false, or true and the first difference between the built and the
 * expected argv in buf. */
static bool argv_differs(const struct strvec *built, const struct transcript_strv *want, char *buf,
			 size_t size)
{
	char a[96], b[96];
	size_t i;

	for (i = 0; i < built->nr && i < want->n; i++)
		if (strcmp(built->v[i], want->v[i]) != 0)
			break;
	if (i == built->nr && i == want->n)
		return false;
	if (i < built->nr && i < want->n)
		(void)snprintf(
			buf, size,
			"argv differs: the invocation builds argv[%zu] '%s', the transcript expects '%s'",
			i, quote_token(a, sizeof(a), built->v[i]),
			quote_token(b, sizeof(b), want->v[i]));
	else
		(void)snprintf(
			buf, size,
			"argv differs: the invocation builds %zu tokens, the transcript expects %zu",
			built->nr, want->n);
	return true;
}

/* A case whose argv differs from the transcript's fails as argv_mismatch,
 * whatever its exit; the message says both. */
static void mark_mismatch(struct run *rn, struct onboard_result *res)
{
	char buf[sizeof(res->message)];
	size_t a, b;

	if (!rn->mismatch)
		return;
	/* "MISMATCH; MESSAGE", cut to fit */
	a = strnlen(rn->mismatch_msg, sizeof(buf) - 3);
	memcpy(buf, rn->mismatch_msg, a);
	memcpy(buf + a, "; ", 2);
	b = strnlen(res->message, sizeof(buf) - a - 3);
	memcpy(buf + a + 2, res->message, b);
	buf[a + 2 + b] = '\0';
	result_set(res, ONBOARD_ARGV_MISMATCH, res->exit_code, "%s", buf);
}

static char *path_join2(const char *a, const char *b)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", a, b) < 0)
		BUG("asprintf failed");
	return p;
}

/* Prepare case i: 1 and spec filled when it is to run, 0 when it is
 * already decided (its result set), a negative errno (with rn->reterr) on a
 * setup failure. */
static int prepare_case(struct run *rn, size_t i, struct proc_spec *spec)
{
	const struct onboard_case *c = &rn->cases[i];
	struct onboard_result *res = &rn->results[i];
	struct profile_vars vars = {.v = {NULL}};
	struct strvec tmpl = STRVEC_INIT, argv = STRVEC_INIT, env = STRVEC_INIT;
	char name[32], *dir = NULL, *home = NULL, *resolved = NULL;
	const char *path_env;
	struct diag d;
	size_t k;
	int r;

	rn->mismatch = false;
	free(rn->work);
	rn->work = NULL;
	r = transcript_build_argv(rn->inv, c->model, c->prompt, NULL, &tmpl);
	if (r < 0) {
		result_set(res, ONBOARD_EXEC_ERROR, -1, "cannot build the argv: %s", strerror(-r));
		r = 0;
		goto out;
	}
	if (c->expected)
		rn->mismatch = argv_differs(&tmpl, c->expected, rn->mismatch_msg,
					    sizeof(rn->mismatch_msg));

	(void)snprintf(name, sizeof(name), "case-%zu", i + 1);
	dir = path_join2(rn->scratch, name);
	home = path_join2(dir, "home");
	rn->work = path_join2(dir, "work");
	if (mkdir(dir, 0700) < 0 || mkdir(home, 0700) < 0 || mkdir(rn->work, 0700) < 0) {
		r = -errno;
		diag_set(rn->reterr, NULL, 0, 0, "cannot create '%s': %s", dir, strerror(-r));
		goto out;
	}
	vars.v[PH_HOME] = home;
	vars.v[PH_WORKDIR] = rn->work;
	r = transcript_build_argv(rn->inv, c->model, c->prompt, &vars, &argv);
	if (r < 0) {
		result_set(res, ONBOARD_EXEC_ERROR, -1, "cannot expand the argv: %s", strerror(-r));
		r = 0;
		goto out;
	}
	diag_clear(&d);
	r = onboard_sandbox_env(rn->inv, rn->opts->host_env, home, &env, &d);
	if (r < 0) {
		result_set(res, ONBOARD_EXEC_ERROR, -1, "%s", d.msg);
		r = 0;
		goto out;
	}
	path_env = envpolicy_get(env.v, "PATH");
	r = path_search(argv.v[0], path_env, &resolved);
	if (r == -ENOENT) {
		result_set(res, ONBOARD_MISSING_BINARY, ONBOARD_EXIT_NOT_FOUND,
			   "'%s' not found on PATH (exit %d)", argv.v[0], ONBOARD_EXIT_NOT_FOUND);
		r = 0;
		goto out;
	}
	if (r < 0) {
		result_set(res, ONBOARD_EXEC_ERROR, ONBOARD_EXIT_NOT_EXECUTABLE,
			   "cannot execute '%s': %s (exit %d)", argv.v[0], strerror(-r),
			   ONBOARD_EXIT_NOT_EXECUTABLE);
		r = 0;
		goto out;
	}
	strvec_push(&spec->argv, resolved);
	for (k = 1; k < argv.nr; k++)
		strvec_push(&spec->argv, argv.v[k]);
	strvec_pushv(&spec->env, env.v);
	spec->cwd = rn->work; /* alive until the next case is prepared */
	spec->timeout_ms = rn->opts->timeout_ms ? rn->opts->timeout_ms : ONBOARD_DEFAULT_TIMEOUT_MS;
	spec->kill_grace_ms =
		rn->opts->kill_grace_ms ? rn->opts->kill_grace_ms : ONBOARD_DEFAULT_KILL_GRACE_MS;
	r = 1;
out:
	if (r == 0)
		mark_mismatch(rn, res);
	free(dir);
	free(home);
	free(resolved);
	strvec_clear(&tmpl);
	strvec_clear(&argv);
	strvec_clear(&env);
	return r;
}

static int run_next_task(void *ctx, struct proc_spec *spec, void **ret_task)
{
	struct run *rn = ctx;
	int r;

	while (rn->next < rn->n) {
		size_t i = rn->next++;

		r = prepare_case(rn, i, spec);
		if (r < 0) {
			rn->error = r;
			return r;
		}
		if (r == 0)
			continue; /* decided without running: the next one */
		rn->running = i;
		rn->start_ms = rn->clock->mono_ms(rn->clock);
		*ret_task = &rn->results[i];
		return 1;
	}
	return 0;
}

static void run_on_line(void *ctx, void *task, int stream, const char *line, size_t len)
{
	/* the output is read (so the agent never blocks on a full pipe) and
	 * dropped: only the exit status is kept */
	(void)ctx;
	(void)task;
	(void)stream;
	(void)line;
	(void)len;
}

static void run_on_exit(void *ctx, void *task, const struct proc *p)
{
	struct run *rn = ctx;
	struct onboard_result *res = task;
	char desc[PATH_MAX + 128];

	res->duration_ms = rn->clock->mono_ms(rn->clock) - rn->start_ms;
	(void)proc_describe_exit(p, desc, sizeof(desc));
	if (p->cancelled)
		result_set(res, ONBOARD_CANCELLED, p->exit_code, "interrupted: %s", desc);
	else if (p->timed_out)
		result_set(res, ONBOARD_TIMED_OUT, ONBOARD_EXIT_TIMED_OUT, "%s (exit %d)", desc,
			   ONBOARD_EXIT_TIMED_OUT);
	else if (p->failed_stage != SHIM_STAGE_NONE)
		result_set(res, ONBOARD_EXEC_ERROR, p->exit_code, "%s (exit %d)", desc,
			   p->exit_code);
	else if (p->term_signal)
		result_set(res, ONBOARD_SIGNALED, p->exit_code, "%s (exit %d)", desc, p->exit_code);
	else if (p->exit_code != 0)
		result_set(res, ONBOARD_EXIT_NONZERO, p->exit_code, "%s", desc);
	else
		result_set(res, ONBOARD_PASSED, 0, "%s", desc);
	if (res->status != ONBOARD_CANCELLED)
		mark_mismatch(rn, res);
}

int onboard_run(const struct recorded_invocation *inv, const struct onboard_case *cases, size_t n,
		const struct onboard_opts *opts, struct onboard_result *results,
		struct diag *reterr)
{
	static const struct supervisor_ops ops = {
		.next_task = run_next_task,
		.on_line = run_on_line,
		.on_exit = run_on_exit,
	};
	struct supervisor_opts sopts = {.max_parallel = 1};
	struct run rn = {0};
	char *scratch = NULL;
	size_t i;
	int r, passed = 0;

	for (i = 0; i < n; i++) {
		memset(&results[i], 0, sizeof(results[i]));
		result_set(&results[i], ONBOARD_CANCELLED, -1, "not run: interrupted");
	}
	r = make_scratch(opts->tmp_dir, &scratch, reterr);
	if (r < 0)
		return r;
	rn.inv = inv;
	rn.cases = cases;
	rn.results = results;
	rn.n = n;
	rn.opts = opts;
	rn.clock = opts->clock ? opts->clock : clock_system();
	rn.scratch = scratch;
	rn.reterr = reterr;
	sopts.clock = rn.clock;
	r = supervise_run(&ops, &rn, &sopts, reterr);
	free(rn.work);
	(void)remove_scratch(scratch); /* best effort: an agent may leave an unremovable file */
	free(scratch);
	if (r == -ECANCELED)
		return r;
	if (r < 0)
		return rn.error ? rn.error : r;
	for (i = 0; i < n; i++)
		if (results[i].status == ONBOARD_PASSED)
			passed++;
	return passed;
}

/* ---- record ---- */

void onboard_record_init(struct onboard_record *rec)
{
	memset(rec, 0, sizeof(*rec));
	arena_init(&rec->arena, 4096);
	heldout_init(&rec->heldout);
}

void onboard_record_release(struct onboard_record *rec)
{
	evidence_free(rec->evidence);
	transcript_free(rec->transcript);
	heldout_release(&rec->heldout);
	arena_release(&rec->arena);
	onboard_record_init(rec);
}

/* The live profile's argv and the rehydrated one, both with placeholders
 * unexpanded, must be the same tokens. */
static int check_rehydrated(const struct profile *p, const struct recorded_invocation *inv,
			    const char *alias, const char *model, const char *prompt,
			    struct diag *reterr)
{
	struct profile_vars vars = {.v = {NULL}};
	struct strvec live = STRVEC_INIT, rehyd = STRVEC_INIT;
	size_t i;
	int r;

	vars.v[PH_HOME] = "{home}";
	vars.v[PH_WORKDIR] = "{workdir}";
	r = profile_build_argv(p, NULL, alias, prompt, &vars, &live);
	if (r >= 0)
		r = transcript_build_argv(inv, model, prompt, NULL, &rehyd);
	if (r < 0) {
		diag_set(reterr, p->source, 0, 0, "cannot build the argv of profile '%s': %s",
			 p->name, strerror(-r));
		goto out;
	}
	for (i = 0; i < live.nr && i < rehyd.nr; i++)
		if (strcmp(live.v[i], rehyd.v[i]) != 0)
			break;
	if (i < live.nr || i < rehyd.nr) {
		diag_set(
			reterr, p->source, 0, 0,
			"the recorded invocation of profile '%s' does not rebuild its argv (token %zu differs)",
			p->name, i);
		r = -EPROTO;
	}
out:
	strvec_clear(&live);
	strvec_clear(&rehyd);
	return r;
}

int onboard_record_run(const struct onboard_record_request *req, struct onboard_record *rec,
		       struct diag *reterr)
{
	const struct profile *p = req->profile;
	struct onboard_case cases[HELDOUT_CASES], smoke = {0};
	struct strvec tmpl = STRVEC_INIT, env = STRVEC_INIT;
	const char *name = req->name ? req->name : p->name;
	struct transcript *t = NULL;
	unsigned k;
	int r;

	if (!transcript_name_valid(name)) {
		diag_set(
			reterr, NULL, 0, 0,
			"invalid transcript name '%s' (expected [A-Za-z0-9][A-Za-z0-9_.-]*, at most %d bytes)",
			name, TRANSCRIPT_MAX_NAME);
		return -EINVAL;
	}
	if (p->builtin) {
		diag_set(
			reterr, p->source, p->builtin_at.line, p->builtin_at.col,
			"profile '%s' is served by bernstein itself (builtin): there is no agent binary to onboard",
			p->name);
		return -ENOTSUP;
	}
	if (!req->smoke_prompt || !yemit_utf8_valid(req->smoke_prompt, strlen(req->smoke_prompt)) ||
	    (req->smoke_model && !yemit_utf8_valid(req->smoke_model, strlen(req->smoke_model)))) {
		diag_set(reterr, NULL, 0, 0,
			 "the smoke prompt (required) and model must be valid UTF-8");
		return -EINVAL;
	}
	r = transcript_invocation_from_profile(p, &rec->arena, &rec->inv, reterr);
	if (r < 0)
		return r;
	r = transcript_invocation_check(&rec->inv, reterr);
	if (r < 0)
		return r;
	rec->model = req->smoke_model
			     ? arena_strdup(&rec->arena, profile_model(p, req->smoke_model))
			     : NULL;
	r = check_rehydrated(p, &rec->inv, req->smoke_model, rec->model, req->smoke_prompt, reterr);
	if (r < 0)
		return r;

	/* 1. the smoke run */
	smoke.prompt = req->smoke_prompt;
	smoke.model = rec->model;
	r = onboard_run(&rec->inv, &smoke, 1, req->opts, &rec->smoke, reterr);
	if (r < 0 && r != -ECANCELED)
		return r;
	rec->smoke_ran = true;

	/* 2. its evidence: the argv as built (placeholders unexpanded), the
	 * environment's names (the values and the scratch HOME are dropped),
	 * the exit code, the duration's bucket */
	r = transcript_build_argv(&rec->inv, rec->model, req->smoke_prompt, NULL, &tmpl);
	if (r >= 0)
		r = onboard_sandbox_env(&rec->inv, req->opts->host_env, "/", &env, reterr);
	if (r < 0)
		goto out;
	rec->evidence = evidence_new(tmpl.v, tmpl.nr, env.v, env.nr,
				     rec->smoke.exit_code < 0 ? 255 : rec->smoke.exit_code & 255,
				     rec->smoke.duration_ms);
	if (rec->smoke.status == ONBOARD_CANCELLED) {
		r = -ECANCELED;
		goto out;
	}
	if (rec->smoke.status != ONBOARD_PASSED) {
		r = 0;
		goto out;
	}

	/* 3. the held-out cases, derived from the evidence */
	r = heldout_derive(rec->evidence, &rec->inv, req->smoke_prompt, rec->model, &rec->heldout,
			   reterr);
	if (r < 0)
		goto out;
	for (k = 0; k < HELDOUT_CASES; k++) {
		cases[k].prompt = rec->heldout.cases[k].prompt;
		cases[k].model = rec->heldout.cases[k].model;
		cases[k].expected = NULL;
	}
	r = onboard_run(&rec->inv, cases, HELDOUT_CASES, req->opts, rec->results, reterr);
	if (r < 0)
		goto out;
	rec->heldout_ran = true;

	/* 4. the transcript */
	t = transcript_new(name, &rec->inv);
	for (k = 0; k < HELDOUT_CASES && r >= 0; k++)
		r = transcript_add_step(t, cases[k].prompt, cases[k].model);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot build the transcript: %s", strerror(-r));
		goto out;
	}
	rec->passed = true;
	for (k = 0; k < HELDOUT_CASES; k++)
		if (rec->results[k].status != ONBOARD_PASSED)
			rec->passed = false;
	if (rec->passed) {
		rec->transcript = t;
		t = NULL;
	}
	r = 0;
out:
	transcript_free(t);
	strvec_clear(&tmpl);
	strvec_clear(&env);
	return r;
}
