/* plan.yaml (src/orch/plan.h): both forms giving the same tasks, every key,
 * Bernstein's own plans, the broken corpus of tests/data/orch/plans/bad/
 * (each file lists every expected problem in '# expect: L:C: message'
 * lines, in order), ids, the plan hash, the topological order and the
 * limits. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orch/plan.h"
#include "orch/spec.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

/* ---- helpers ---- */

static const char *srcdir(void)
{
	const char *s = getenv("SRCDIR");

	return s && s[0] ? s : ".";
}

static char *data_path(const char *rel)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/tests/data/orch/plans/%s", srcdir(), rel);
	return sbuf_detach(&sb, NULL);
}

static void fail_issues(const char *what, const struct diag_list *is)
{
	size_t i;

	for (i = 0; i < is->n; i++)
		print_error("%s:%u:%u: %s\n", is->v[i].file, is->v[i].line, is->v[i].col,
			    is->v[i].msg);
	fail_msg("%s: %zu problems", what, is->n);
}

static struct plan *load_text_allowed(const char *text, const char *allowed)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct plan *p = NULL;

	if (plan_load_buf("mem.yaml", text, strlen(text), allowed, &p, &is) < 0)
		fail_issues("mem.yaml", &is);
	assert_int_equal(is.n, 0);
	diag_list_release(&is);
	return p;
}

static struct plan *load_text(const char *text)
{
	return load_text_allowed(text, NULL);
}

static struct plan *load_data_allowed(const char *rel, const char *allowed)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct plan *p = NULL;
	char *path = data_path(rel);

	if (plan_load_file(path, allowed, &p, &is) < 0)
		fail_issues(path, &is);
	diag_list_release(&is);
	free(path);
	return p;
}

static struct plan *load_data(const char *rel)
{
	return load_data_allowed(rel, NULL);
}

static const struct plan_task *task(const struct plan *p, const char *id)
{
	long i = plan_find(p, id);

	if (i < 0)
		fail_msg("no task '%s'", id);
	return &p->tasks[i];
}

/* The ids task t depends on, ", " separated. */
static const char *deps_of(const struct plan *p, const struct plan_task *t, char *buf, size_t n)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < t->n_deps; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "",
				      p->tasks[t->deps[i].index].id);
	return buf;
}

/* ---- tests ---- */

static void test_both_forms_same_tasks(void **state)
{
	struct plan *a = load_data("good/tasks.yaml"), *b = load_data("good/stages.yaml");
	char da[256], db[256];
	size_t i;

	(void)state;
	assert_int_equal(a->form, PLAN_FORM_TASKS);
	assert_int_equal(b->form, PLAN_FORM_STAGES);
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->n, 3);
	assert_int_equal(b->n, a->n);
	for (i = 0; i < a->n; i++) {
		const struct plan_task *x = &a->tasks[i], *y = &b->tasks[i];

		assert_string_equal(x->id, y->id);
		assert_string_equal(x->title, y->title);
		assert_string_equal(x->prompt, y->prompt);
		assert_string_equal(x->role, y->role);
		if (x->adapter || y->adapter)
			assert_string_equal(x->adapter, y->adapter);
		assert_null(x->model);
		assert_null(y->model);
		assert_int_equal(x->n_deps, y->n_deps);
		assert_string_equal(deps_of(a, x, da, sizeof(da)), deps_of(b, y, db, sizeof(db)));
		assert_null(x->stage);
		assert_non_null(y->stage);
	}
	assert_string_equal(a->tasks[0].id, "write-greeting");
	assert_string_equal(a->tasks[1].adapter, "mock");
	assert_null(a->tasks[0].adapter);
	assert_string_equal(a->tasks[2].role, "reviewer");
	assert_string_equal(deps_of(a, &a->tasks[2], da, sizeof(da)),
			    "write-greeting, write-farewell");
	/* positions: the task's mapping, its title */
	assert_int_equal(a->tasks[1].line, 6);
	assert_int_equal(a->tasks[1].col, 5);
	assert_int_equal(a->tasks[1].title_line, 6);
	assert_int_equal(a->tasks[1].title_col, 12);
	assert_int_equal(b->tasks[1].line, 8);
	assert_int_equal(b->tasks[1].col, 9);
	assert_string_equal(b->tasks[1].stage, "write");
	assert_string_equal(b->tasks[2].stage, "check");
	/* the dependency is written at the stage's depends_on entry */
	assert_int_equal(b->tasks[2].deps[0].line, 12);
	assert_int_equal(b->tasks[2].deps[0].col, 18);
	assert_string_equal(b->tasks[2].deps[0].name, "write");
	/* the tasks form: at the depends_on entry, as written */
	assert_string_equal(a->tasks[2].deps[1].name, "write-farewell");
	assert_int_equal(a->tasks[2].deps[1].line, 12);
	assert_int_equal(a->tasks[2].deps[1].col, 34);
	plan_free(a);
	plan_free(b);
}

static void test_every_key(void **state)
{
	struct plan *p = load_data_allowed("good/everything.yaml", "CUSTOM_PROVIDER_KEY");
	const struct plan_task *t, *u;
	char buf[128];

	(void)state;
	assert_string_equal(p->name, "everything");
	assert_string_equal(p->description, "one task of each kind");
	t = &p->tasks[0];
	assert_string_equal(t->id, "write-the-report");
	assert_false(t->id_explicit);
	assert_string_equal(t->title, "Write the Report!");
	assert_string_equal(t->prompt, "write report.md");
	assert_string_equal(t->role, "docs");
	/* adapter: auto and model: null are the task's own word: the plan's defaults stay out */
	assert_null(t->adapter);
	assert_null(t->model);
	assert_string_equal(t->effort, "max");
	assert_true(t->timeout_s == 600.0);
	assert_int_equal(t->n_requires, 3);
	assert_string_equal(t->requires[2], "python");
	assert_null(t->requires[3]);
	assert_int_equal(t->req.set, (1u << REQ_OUTPUT_MODE) | (1u << REQ_SANDBOX));
	assert_int_equal(t->req.output_mode, OUTPUT_MODE_ARTIFACT);
	assert_int_equal(t->req.sandbox, SANDBOX_TIER_CONTAINER);
	assert_int_equal(t->n_gates, 2);
	assert_string_equal(t->gates[0].name, "lint");
	assert_string_equal(t->gates[0].run, "true");
	assert_true(t->gates[0].timeout_s == ORCH_DEFAULT_GATE_TIMEOUT_S);
	assert_true(t->gates[1].timeout_s == 30.0);
	assert_string_equal(t->artifact, "out/report.md");
	assert_int_equal(t->n_attachments, 1);
	assert_string_equal(t->attachments[0], "shots/a.png");
	assert_int_equal(t->sampling.set, (1u << _SAMPLING_KEY_MAX) - 1);
	assert_true(t->sampling.temperature == 0.2);
	assert_true(t->sampling.top_p == 0.5);
	assert_int_equal(t->sampling.top_k, 3);
	assert_int_equal(t->sampling.max_tokens, 100);
	assert_string_equal(t->sampling.base_url, "https://api.example.com:8443/v1");
	assert_string_equal(t->sampling.api_key_env, "OPENAI_API_KEY");
	assert_int_equal(t->n_deps, 0);
	assert_string_equal(t->on_conflict, "fail"); /* the plan's */

	u = &p->tasks[1];
	assert_string_equal(u->id, "two");
	assert_true(u->id_explicit);
	assert_int_equal(u->id_line, 20);
	assert_int_equal(u->id_col, 9);
	assert_string_equal(u->prompt, "the Bernstein spelling of prompt");
	assert_string_equal(u->role, "backend");
	assert_string_equal(u->adapter, "codex");
	assert_string_equal(u->model, "sonnet"); /* the plan's */
	assert_null(u->effort);
	assert_true(u->timeout_s == 0);
	assert_int_equal(u->sampling.set, 1u << SAMPLING_API_KEY_ENV);
	assert_string_equal(u->sampling.api_key_env, "CUSTOM_PROVIDER_KEY");
	assert_string_equal(deps_of(p, u, buf, sizeof(buf)), "write-the-report");
	assert_string_equal(u->on_conflict, "resolve");
	plan_free(p);
}

/* The same plan without the host variable: mcp_config's api_key_env is refused. */
static void test_sampling_allow_list(void **state)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct plan *p = NULL;
	char *path = data_path("good/everything.yaml");

	(void)state;
	assert_int_equal(plan_load_file(path, NULL, &p, &is), -EINVAL);
	assert_null(p);
	assert_int_equal(is.n, 1);
	assert_int_equal(is.v[0].line, 24);
	assert_int_equal(is.v[0].col, 31);
	assert_non_null(strstr(
		is.v[0].msg,
		"field 'tasks[1].mcp_config.api_key_env': api_key_env 'CUSTOM_PROVIDER_KEY'"));
	diag_list_release(&is);
	assert_int_equal(plan_load_file(path, "X_KEY, CUSTOM_PROVIDER_KEY", &p, &is), 0);
	plan_free(p);
	diag_list_release(&is);
	free(path);
}

static void test_bernstein_plan(void **state)
{
	struct plan *p = load_data("good/bernstein.yaml");
	char buf[256];

	(void)state;
	assert_int_equal(p->form, PLAN_FORM_STAGES);
	assert_int_equal(p->n, 4);
	assert_string_equal(p->tasks[0].id, "design-the-token-format");
	assert_string_equal(p->tasks[0].role, "architect");
	assert_string_equal(p->tasks[0].prompt, "design the token format"); /* the title */
	assert_null(p->tasks[0].adapter);				    /* cli: auto */
	assert_string_equal(task(p, "implement tokens")->adapter, "codex");
	assert_string_equal(task(p, "implement tokens")->model, "gpt-5");
	assert_string_equal(task(p, "implement tokens")->effort, "high");
	assert_string_equal(deps_of(p, task(p, "implement-tokens"), buf, sizeof(buf)),
			    "design-the-token-format");
	assert_string_equal(deps_of(p, task(p, "implement-middleware"), buf, sizeof(buf)),
			    "design-the-token-format");
	/* every step of every stage listed, in depends_on order */
	assert_string_equal(deps_of(p, task(p, "test-everything"), buf, sizeof(buf)),
			    "implement-tokens, implement-middleware, design-the-token-format");
	assert_string_equal(task(p, "test everything")->role, "qa");
	plan_free(p);
}

/* "# expect: L:C: text" lines of a corpus file. */
struct expect {
	unsigned line, col;
	char msg[400];
};

static size_t parse_expects(const char *text, struct expect *e, size_t max)
{
	const char *s = text;
	size_t n = 0;

	while ((s = strstr(s, "# expect: "))) {
		const char *nl;
		int k = 0;

		s += strlen("# expect: ");
		assert_true(n < max);
		assert_true(sscanf(s, "%u:%u:%n", &e[n].line, &e[n].col, &k) >= 2);
		s += k;
		if (*s == ' ')
			s++;
		nl = strchr(s, '\n');
		assert_non_null(nl);
		assert_true((size_t)(nl - s) < sizeof(e[n].msg));
		memcpy(e[n].msg, s, (size_t)(nl - s));
		e[n].msg[nl - s] = '\0';
		n++;
	}
	return n;
}

static void test_bad_corpus(void **state)
{
	char *dir = data_path("bad");
	DIR *dh = opendir(dir);
	struct dirent *de;
	size_t files = 0, problems = 0, bad = 0;

	(void)state;
	assert_non_null(dh);
	while ((de = readdir(dh))) {
		struct diag_list is = PLAN_ISSUES_INIT;
		struct expect e[16];
		struct plan *p = NULL;
		struct sbuf path = SBUF_INIT(SIZE_MAX);
		char *text = NULL;
		size_t len, n, i;
		struct diag first;

		if (!strstr(de->d_name, ".yaml"))
			continue;
		(void)sbuf_addf(&path, "%s/%s", dir, de->d_name);
		assert_int_equal(read_file_capped(path.buf, 1 << 20, &text, &len), 0);
		n = parse_expects(text, e, 16);
		assert_true(n > 0);
		assert_int_equal(plan_load_file(path.buf, NULL, &p, &is), -EINVAL);
		assert_null(p);
		if (is.n != n) {
			print_error("%s: %zu problems expected, %zu found\n", de->d_name, n, is.n);
			for (i = 0; i < is.n; i++)
				print_error("  %u:%u: %s\n", is.v[i].line, is.v[i].col,
					    is.v[i].msg);
			bad++;
			n = 0;
		}
		for (i = 0; i < n; i++) {
			const struct diag *d = &is.v[i];

			if (d->line != e[i].line || d->col != e[i].col ||
			    strncmp(d->msg, e[i].msg, strlen(e[i].msg)) != 0 ||
			    strcmp(d->file, path.buf) != 0) {
				print_error(
					"%s: problem %zu: expected %u:%u '%s...', got %u:%u '%s'\n",
					de->d_name, i, e[i].line, e[i].col, e[i].msg, d->line,
					d->col, d->msg);
				bad++;
			}
		}
		/* the single-diag API gives the first */
		diag_clear(&first);
		assert_int_equal(plan_load(path.buf, NULL, &p, &first), -EINVAL);
		assert_int_equal(first.line, is.v[0].line);
		assert_int_equal(first.col, is.v[0].col);
		assert_string_equal(first.msg, is.v[0].msg);
		problems += n;
		files++;
		diag_list_release(&is);
		sbuf_release(&path);
		free(text);
	}
	closedir(dh);
	free(dir);
	assert_int_equal(bad, 0);
	assert_true(files >= 25);
	assert_true(problems >= 50);
}

static void test_unreadable(void **state)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct plan *p = NULL;
	struct diag d;

	(void)state;
	assert_int_equal(plan_load_file("/nonexistent/plan.yaml", NULL, &p, &is), -ENOENT);
	assert_null(p);
	assert_int_equal(is.n, 1);
	assert_non_null(strstr(is.v[0].msg, "cannot read file"));
	diag_list_release(&is);
	diag_clear(&d);
	assert_int_equal(plan_load("/nonexistent/plan.yaml", NULL, &p, &d), -ENOENT);
	assert_string_equal(d.file, "/nonexistent/plan.yaml");
}

static void test_hash(void **state)
{
	static const char a[] = "name: x\ntasks: [{title: t, prompt: p}]\n";
	static const char b[] = "# a comment changes the bytes, not the tasks\n"
				"name: x\ntasks: [{title: t, prompt: p}]\n";
	struct plan *pa = load_text(a), *pb = load_text(b);
	char hex[SHA256_HEX_LEN + 1];

	(void)state;
	hash_sha256_hex(a, strlen(a), hex);
	assert_string_equal(plan_hash(pa), hex);
	assert_int_equal(strlen(plan_hash(pa)), SHA256_HEX_LEN);
	assert_string_not_equal(plan_hash(pa), plan_hash(pb));
	assert_string_equal(pa->tasks[0].id, pb->tasks[0].id);
	plan_free(pa);
	plan_free(pb);
}

static void test_slug_and_ids(void **state)
{
	char buf[PLAN_ID_MAX + 1];
	char long_title[200];

	(void)state;
	assert_string_equal(plan_slug("Write the Report!", buf), "write-the-report");
	assert_string_equal(plan_slug("  --Fix   bug #12-- ", buf), "fix-bug-12");
	assert_string_equal(plan_slug("caf\xc3\xa9 au lait", buf), "caf-au-lait");
	assert_string_equal(plan_slug("!!!", buf), "");
	assert_string_equal(plan_slug("", buf), "");
	memset(long_title, 'a', sizeof(long_title) - 1);
	long_title[sizeof(long_title) - 1] = '\0';
	long_title[63] = ' ';
	assert_int_equal(strlen(plan_slug(long_title, buf)), 63); /* never ends in '-' */
	assert_true(plan_id_valid(buf));
	long_title[63] = 'a';
	assert_int_equal(strlen(plan_slug(long_title, buf)), PLAN_ID_MAX);
	assert_true(plan_id_valid(buf));

	assert_true(plan_id_valid("a"));
	assert_true(plan_id_valid("0-a"));
	assert_false(plan_id_valid("-a"));
	assert_false(plan_id_valid("A"));
	assert_false(plan_id_valid("a_b"));
	assert_false(plan_id_valid(""));
	assert_false(plan_id_valid(NULL));
	memset(long_title, 'a', 65);
	long_title[65] = '\0';
	assert_false(plan_id_valid(long_title));
}

static void test_find_precedence(void **state)
{
	struct plan *p = load_text("name: x\n"
				   "tasks:\n"
				   "  - {title: '!!!', prompt: p}\n"
				   "  - {title: one, prompt: p, id: two}\n"
				   "  - {title: two, prompt: p, id: three}\n"
				   "  - {title: last, prompt: p, depends_on: [two]}\n");

	(void)state;
	assert_string_equal(p->tasks[0].id, "task-1"); /* nothing left of the title */
	/* an id wins over a title */
	assert_int_equal(plan_find(p, "two"), 1);
	assert_int_equal(plan_find(p, "three"), 2);
	assert_int_equal(plan_find(p, "one"), 1);
	assert_int_equal(plan_find(p, "nosuch"), -1);
	assert_int_equal(plan_find(p, NULL), -1);
	assert_int_equal(p->tasks[3].deps[0].index, 1);
	plan_free(p);
}

static void test_topo_order(void **state)
{
	struct plan *p = load_text("name: diamond\n"
				   "tasks:\n"
				   "  - {title: d, prompt: p, depends_on: [b, c]}\n"
				   "  - {title: c, prompt: p, depends_on: [a]}\n"
				   "  - {title: b, prompt: p, depends_on: [a]}\n"
				   "  - {title: a, prompt: p}\n"
				   "  - {title: e, prompt: p}\n");
	size_t order[5], i, pos[5];

	(void)state;
	assert_int_equal(plan_topo_order(p, order), 0);
	for (i = 0; i < 5; i++)
		pos[order[i]] = i;
	/* dependencies first; among the ready ones, file order */
	assert_true(pos[3] < pos[1] && pos[3] < pos[2]);
	assert_true(pos[1] < pos[0] && pos[2] < pos[0]);
	assert_int_equal(order[0], 3); /* a */
	assert_int_equal(order[1], 1); /* c before b: file order */
	assert_int_equal(order[2], 2);
	assert_int_equal(order[3], 0);
	assert_int_equal(order[4], 4);
	/* a cycle (made by hand: a loaded plan has none) */
	p->tasks[3].deps = p->tasks[0].deps; /* a depends on b, c */
	p->tasks[3].n_deps = p->tasks[0].n_deps;
	assert_int_equal(plan_topo_order(p, order), -ELOOP);
	plan_free(p);
}

static void test_validate_again(void **state)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct plan *p = load_data("good/bernstein.yaml");

	(void)state;
	assert_int_equal(plan_validate(p, &is), 0);
	assert_int_equal(is.n, 0);
	/* break it: a duplicate title is found */
	p->tasks[1].title = p->tasks[0].title;
	assert_int_equal(plan_validate(p, &is), 1);
	assert_int_equal(is.n, 1);
	assert_non_null(strstr(is.v[0].msg, "duplicate title"));
	diag_list_release(&is);
	plan_free(p);
}

/* Problems beyond PLAN_MAX_ISSUES are counted, not kept. */
static void test_issue_cap(void **state)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct plan *p = NULL;
	size_t i;

	(void)state;
	(void)sbuf_adds(&sb, "name: x\ntasks:\n");
	for (i = 0; i < 150; i++)
		(void)sbuf_addf(&sb, "  - {title: t%zu, prompt: p, role: nobody}\n", i);
	assert_int_equal(plan_load_buf("cap.yaml", sb.buf, sb.len, NULL, &p, &is), -EINVAL);
	assert_int_equal(is.n, PLAN_MAX_ISSUES);
	assert_int_equal(is.dropped, 150 - PLAN_MAX_ISSUES);
	for (i = 1; i < is.n; i++)
		assert_true(is.v[i - 1].line < is.v[i].line);
	diag_list_release(&is);
	sbuf_release(&sb);
}

/* A long chain: no recursion depth problem, and a cycle through all of it
 * is found and named (cut). */
static void test_long_chain(void **state)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct plan *p = NULL;
	const size_t n = 5000;
	size_t i, *order = xcalloc(n, sizeof(*order));

	(void)state;
	(void)sbuf_adds(&sb, "name: chain\ntasks:\n");
	for (i = 0; i < n; i++)
		(void)sbuf_addf(&sb, "  - {title: t%zu, prompt: p%s%zu%s}\n", i,
				i ? ", depends_on: [t" : "", i ? i - 1 : 0, i ? "]" : "");
	p = load_text(sb.buf);
	assert_int_equal(p->n, n);
	assert_int_equal(plan_topo_order(p, order), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(order[i], i);
	plan_free(p);
	p = NULL;

	/* close the loop: t0 depends on the last */
	sbuf_reset(&sb);
	(void)sbuf_addf(&sb, "name: loop\ntasks:\n  - {title: t0, prompt: p, depends_on: [t%zu]}\n",
			n - 1);
	for (i = 1; i < n; i++)
		(void)sbuf_addf(&sb, "  - {title: t%zu, prompt: p, depends_on: [t%zu]}\n", i,
				i - 1);
	assert_int_equal(plan_load_buf("loop.yaml", sb.buf, sb.len, NULL, &p, &is), -EINVAL);
	assert_int_equal(is.n, 1);
	assert_non_null(strstr(is.v[0].msg, "dependency cycle: t0 -> t4999 -> t4998 -> "));
	assert_non_null(strstr(is.v[0].msg, "..."));
	diag_list_release(&is);
	sbuf_release(&sb);
	free(order);
}

static void test_json(void **state)
{
	struct plan *p = load_data("good/stages.yaml");
	json_t *j = spec_plan_json(p), *t;

	(void)state;
	assert_string_equal(json_string_value(json_object_get(j, "form")), "stages");
	assert_string_equal(json_string_value(json_object_get(j, "plan_hash")), plan_hash(p));
	t = json_array_get(json_object_get(j, "tasks"), 2);
	assert_string_equal(json_string_value(json_object_get(t, "id")), "review");
	assert_int_equal(json_array_size(json_object_get(t, "depends_on")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(t, "depends_on"), 1)),
			    "write-farewell");
	assert_string_equal(json_string_value(json_object_get(t, "stage")), "check");
	assert_true(json_is_null(json_object_get(t, "timeout")));
	json_decref(j);
	plan_free(p);
}

static void test_too_large(void **state)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	size_t n = PLAN_MAX_BYTES + 1;
	char *big = xmalloc(n);
	struct plan *p = NULL;

	(void)state;
	memset(big, '#', n);
	assert_int_equal(plan_load_buf("big.yaml", big, n, NULL, &p, &is), -EFBIG);
	assert_null(p);
	assert_int_equal(is.n, 1);
	diag_list_release(&is);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_both_forms_same_tasks),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_sampling_allow_list),
		cmocka_unit_test(test_bernstein_plan),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_slug_and_ids),
		cmocka_unit_test(test_find_precedence),
		cmocka_unit_test(test_topo_order),
		cmocka_unit_test(test_validate_again),
		cmocka_unit_test(test_issue_cap),
		cmocka_unit_test(test_long_chain),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_too_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
