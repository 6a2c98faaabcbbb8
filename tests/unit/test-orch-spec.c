/* The recorded task (src/orch/spec.h): plan -> spec -> JSON -> spec gives
 * the same task and the same bytes for every task of the plans in
 * tests/data/orch/plans/good/; numbers stay numbers; what earlier versions
 * stored (literal texts below) still reads; every bad key or value is
 * refused naming it. */
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
#include "util/sbuf.h"

static const char *srcdir(void)
{
	const char *s = getenv("SRCDIR");

	return s && s[0] ? s : ".";
}

static struct plan *load(const char *rel)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct plan *p = NULL;
	struct diag d;

	(void)sbuf_addf(&sb, "%s/tests/data/orch/plans/good/%s", srcdir(), rel);
	diag_clear(&d);
	if (plan_load(sb.buf, "CUSTOM_PROVIDER_KEY", &p, &d) < 0)
		fail_msg("%s: %s", sb.buf, d.msg);
	sbuf_release(&sb);
	return p;
}

static struct plan *load_text(const char *text)
{
	struct diag_list is = PLAN_ISSUES_INIT;
	struct plan *p = NULL;

	if (plan_load_buf("mem.yaml", text, strlen(text), "OPENAI_API_KEY", &p, &is) < 0)
		fail_msg("mem.yaml: %s", is.n ? is.v[0].msg : "?");
	diag_list_release(&is);
	return p;
}

/* spec -> text -> spec -> text: the same text, the same JSON. */
static void round_trip(const struct task_spec *s)
{
	struct task_spec back;
	char *t1 = spec_dump(s), *t2;
	struct diag d;

	spec_init(&back);
	diag_clear(&d);
	if (spec_parse_text(t1, strlen(t1), &back, &d) < 0)
		fail_msg("%s: %s", t1, d.msg);
	t2 = spec_dump(&back);
	assert_string_equal(t1, t2);
	assert_int_equal(back.req.set, s->req.set);
	assert_int_equal(back.sampling.set, s->sampling.set);
	assert_true(back.sampling.temperature == s->sampling.temperature);
	assert_true(back.sampling.top_p == s->sampling.top_p);
	assert_true(back.timeout_s == s->timeout_s);
	assert_memory_equal(&back.limits, &s->limits, sizeof(s->limits));
	assert_int_equal(back.n_gates, s->n_gates);
	free(t1);
	free(t2);
	spec_release(&back);
}

static void test_round_trip_plans(void **state)
{
	static const char *const files[] = {"bernstein.yaml", "everything.yaml", "stages.yaml",
					    "tasks.yaml"};
	size_t f, i;

	(void)state;
	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct plan *p = load(files[f]);

		for (i = 0; i < p->n; i++) {
			struct task_spec s;

			spec_from_plan(p, i, &s);
			round_trip(&s);
			/* and as dispatch records it, with its tier */
			s.has_tier = true;
			s.tier = SANDBOX_KIND_BWRAP;
			round_trip(&s);
			spec_release(&s);
		}
		plan_free(p);
	}
}

static void test_numbers_stay_numbers(void **state)
{
	struct plan *p = load_text("name: n\n"
				   "tasks:\n"
				   "  - title: a\n"
				   "    prompt: x\n"
				   "    sandbox: landlock\n"
				   "    on_conflict: resolve\n"
				   "    timeout: 2.5\n"
				   "    limits: {memory: 64M, pids: 100, cpu: 1.5}\n"
				   "    gates: [{name: g, run: 'true', timeout: 0.25}]\n"
				   "    sampling: {temperature: 0.1, top_p: 0.3, top_k: 7, "
				   "max_tokens: 9, base_url: 'https://h.example/v1', "
				   "api_key_env: OPENAI_API_KEY}\n");
	struct task_spec s, back;
	struct diag d;
	char *text;

	(void)state;
	spec_from_plan(p, 0, &s);
	text = spec_dump(&s);
	assert_non_null(strstr(text, "\"temperature\":0.10000000000000001"));
	assert_non_null(strstr(text, "\"top_k\":7"));
	assert_non_null(strstr(text, "\"cpu\":1.5"));
	assert_non_null(strstr(text, "\"timeout\":2.5"));
	assert_non_null(strstr(text, "\"sandbox\":\"landlock\""));
	assert_null(strstr(text, "sandbox_tier"));
	assert_non_null(strstr(text, "\"on_conflict\":\"resolve\""));
	spec_init(&back);
	assert_int_equal(spec_parse_text(text, strlen(text), &back, &d), 0);
	assert_true(back.sampling.temperature == 0.1);
	assert_true(back.sampling.top_p == 0.3);
	assert_int_equal(back.sampling.top_k, 7);
	assert_int_equal(back.sampling.max_tokens, 9);
	assert_string_equal(back.sampling.base_url, "https://h.example/v1");
	assert_string_equal(back.sampling.api_key_env, "OPENAI_API_KEY");
	assert_true(back.timeout_s == 2.5);
	assert_int_equal(back.limits.memory, 64u << 20);
	assert_int_equal(back.limits.pids, 100);
	assert_int_equal(back.limits.cpu_milli, 1500);
	assert_true(back.has_sandbox);
	assert_int_equal(back.sandbox, SANDBOX_LANDLOCK);
	assert_false(back.has_tier);
	assert_true(back.has_on_conflict);
	assert_int_equal(back.on_conflict, CONFLICT_RESOLVE);
	assert_null(back.conflict_from);
	{
		/* run-conflict.c's journal survives the round trip */
		struct task_spec again;
		char *t2;

		back.conflict_from = "0123456789abcdef0123456789abcdef01234567";
		t2 = spec_dump(&back);
		spec_init(&again);
		assert_int_equal(spec_parse_text(t2, strlen(t2), &again, &d), 0);
		assert_string_equal(again.conflict_from, back.conflict_from);
		spec_release(&again);
		free(t2);
		back.conflict_from = NULL;
	}
	assert_int_equal(back.n_gates, 1);
	assert_true(back.gates[0].timeout_s == 0.25);
	assert_string_equal(back.gates[0].run, "true");
	free(text);
	spec_release(&back);
	spec_release(&s);
	plan_free(p);
}

/* worktree_setup: the plan's top level, each key a task gives over it;
 * recorded with the keys given, read back the same. */
static void test_worktree_setup(void **state)
{
	struct plan *p = load_text(
		"name: n\n"
		"worktree_setup: {copy_files: [.env], setup_command: make deps, "
		"timeout: 30}\n"
		"tasks:\n"
		"  - {title: a, prompt: x}\n"
		"  - title: b\n"
		"    prompt: x\n"
		"    worktree_setup: {setup_command: null, symlink_dirs: [node_modules]}\n"
		"  - {title: c, prompt: x, worktree_setup: {copy_files: []}}\n");
	struct task_spec s, back;
	struct diag d;
	char *text;

	(void)state;
	spec_from_plan(p, 0, &s);
	text = spec_dump(&s);
	assert_non_null(strstr(text, "\"worktree_setup\":{\"copy_files\":[\".env\"],"
				     "\"setup_command\":\"make deps\",\"timeout\":30}"));
	free(text);
	round_trip(&s);
	spec_release(&s);
	/* b: the plan's copy_files and timeout, its own command (none) and links */
	spec_from_plan(p, 1, &s);
	text = spec_dump(&s);
	spec_init(&back);
	diag_clear(&d);
	assert_int_equal(spec_parse_text(text, strlen(text), &back, &d), 0);
	assert_int_equal(back.wtsetup.set,
			 WTSETUP_COPY | WTSETUP_LINKS | WTSETUP_COMMAND | WTSETUP_TIMEOUT);
	assert_null(back.wtsetup.setup_command);
	assert_int_equal(back.wtsetup.n_copy, 1);
	assert_string_equal(back.wtsetup.copy_files[0], ".env");
	assert_int_equal(back.wtsetup.n_links, 1);
	assert_string_equal(back.wtsetup.symlink_dirs[0], "node_modules");
	assert_true(wtsetup_timeout(&back.wtsetup) == 30);
	free(text);
	spec_release(&back);
	spec_release(&s);
	/* c: an empty list over the plan's is no copy at all */
	spec_from_plan(p, 2, &s);
	assert_true(s.wtsetup.set & WTSETUP_COPY);
	assert_int_equal(s.wtsetup.n_copy, 0);
	assert_string_equal(s.wtsetup.setup_command, "make deps");
	round_trip(&s);
	spec_release(&s);
	plan_free(p);
}

/* What bernstein stored before task_spec existed (plan_json()'s task
 * object, and dispatch's sandbox_tier added to it), byte for byte. */
static void test_reads_stored_forms(void **state)
{
	static const char old[] =
		"{\"adapter\":null,\"artifact\":\"out/r.md\",\"attachments\":[\"a.png\"],"
		"\"column\":5,\"depends_on\":[\"one\"],\"effort\":\"max\",\"gates\":[{\"name\":"
		"\"lint\",\"run\":\"true\",\"timeout\":300}],\"id\":\"two\",\"line\":7,"
		"\"model\":null,\"prompt\":\"do it\",\"requires\":[\"capability:sandbox="
		"container\",\"python\"],\"role\":\"docs\",\"sampling\":{\"api_key_env\":"
		"\"K\",\"temperature\":0.20000000000000001},\"sandbox_tier\":\"none\",\"stage\":null,"
		"\"timeout\":600,\"title\":\"Two\"}";
	static const char empty[] = "{}";
	struct task_spec s;
	struct diag d;
	char *back;

	(void)state;
	spec_init(&s);
	assert_int_equal(spec_parse_text(old, strlen(old), &s, &d), 0);
	assert_string_equal(s.id, "two");
	assert_string_equal(s.title, "Two");
	assert_null(s.adapter);
	assert_string_equal(s.artifact, "out/r.md");
	assert_int_equal(s.n_depends_on, 1);
	assert_string_equal(s.depends_on[0], "one");
	assert_int_equal(s.n_requires, 2);
	assert_true(s.req.set & (1u << REQ_SANDBOX));
	assert_true(s.has_tier);
	assert_int_equal(s.tier, SANDBOX_KIND_NONE);
	assert_false(s.has_sandbox);
	assert_true(s.timeout_s == 600);
	assert_true(s.sampling.temperature == 0.2);
	assert_int_equal(s.line, 7);
	assert_int_equal(s.col, 5);
	back = spec_dump(&s);
	assert_string_equal(back, old);
	free(back);
	spec_release(&s);

	spec_init(&s);
	assert_int_equal(spec_parse_text(empty, 2, &s, &d), 0);
	assert_null(s.id);
	assert_int_equal(s.n_requires, 0);
	assert_non_null(s.requires);
	assert_null(s.requires[0]);
	spec_release(&s);
}

static void refused(const char *text, const char *needle)
{
	struct task_spec s;
	struct diag d;

	spec_init(&s);
	diag_clear(&d);
	if (spec_parse_text(text, strlen(text), &s, &d) != -EBADMSG)
		fail_msg("accepted: %s", text);
	if (!strstr(d.msg, needle))
		fail_msg("%s: '%s' does not name '%s'", text, d.msg, needle);
	/* left empty */
	assert_null(s.id);
	assert_int_equal(s.n_gates, 0);
	spec_release(&s);
}

static void test_strict(void **state)
{
	(void)state;
	refused("[]", "not a JSON object");
	refused("{\"id\":\"a\",\"bogus\":1}", "'bogus': unknown key");
	refused("{\"id\":\"a\",\"id\":\"b\"}", "duplicate");
	refused("{\"id\":\"a\"} x", "end of file");
	refused("{\"id\":1}", "'id': not a string");
	refused("{\"prompt\":[]}", "'prompt'");
	refused("{\"depends_on\":[1]}", "'depends_on'");
	refused("{\"depends_on\":\"a\"}", "'depends_on'");
	refused("{\"requires\":[\"capability:bogus=1\"]}", "'requires'");
	refused("{\"timeout\":\"10\"}", "'timeout'");
	refused("{\"timeout\":0}", "'timeout'");
	refused("{\"timeout\":-1}", "'timeout'");
	refused("{\"sandbox\":\"chroot\"}", "'sandbox'");
	refused("{\"sandbox\":null}", "'sandbox'");
	refused("{\"on_conflict\":\"merge\"}", "'on_conflict'");
	refused("{\"conflict_from\":\"main\"}", "'conflict_from'");
	refused("{\"conflict_from\":\"0123456789ABCDEF0123456789abcdef01234567\"}",
		"'conflict_from'");
	refused("{\"on_conflict\":null}", "'on_conflict'");
	refused("{\"sandbox_tier\":\"auto\"}", "'sandbox_tier'");
	refused("{\"limits\":[]}", "'limits'");
	refused("{\"limits\":{\"memory\":1}}", "'limits.memory'");
	refused("{\"limits\":{\"pids\":-1}}", "'limits.pids'");
	refused("{\"limits\":{\"cpu\":\"1\"}}", "'limits.cpu'");
	refused("{\"limits\":{\"cpu\":0.0001}}", "'limits.cpu'");
	refused("{\"limits\":{\"swap\":1}}", "'limits.swap'");
	refused("{\"gates\":{}}", "'gates'");
	refused("{\"gates\":[{\"name\":\"a\",\"run\":\"b\"}]}", "'gates'");
	refused("{\"gates\":[{\"name\":\"a\",\"run\":\"b\",\"timeout\":0}]}", "'gates'");
	refused("{\"gates\":[{\"name\":\"a\",\"run\":\"b\",\"timeout\":1,\"x\":1}]}", "'gates'");
	refused("{\"gates\":[{\"name\":\"g\",\"run\":\"true\",\"timeout\":1},7]}", "'gates'");
	refused("{\"sampling\":[]}", "'sampling'");
	refused("{\"sampling\":{\"top_p\":2}}", "'sampling.top_p'");
	refused("{\"sampling\":{\"temperature\":\"0.2\"}}", "'sampling.temperature'");
	refused("{\"sampling\":{\"top_k\":1.5}}", "'sampling.top_k'");
	refused("{\"sampling\":{\"max_tokens\":0}}", "'sampling.max_tokens'");
	refused("{\"sampling\":{\"base_url\":\"file:///etc\"}}", "'sampling.base_url'");
	refused("{\"sampling\":{\"api_key_env\":\"\"}}", "'sampling.api_key_env'");
	refused("{\"sampling\":{\"seed\":1}}", "'sampling.seed'");
	refused("{\"endpoints\":[]}", "'endpoints'");
	refused("{\"endpoints\":{\"auto\":{\"model\":\"m\"}}}", "'endpoints'");
	refused("{\"endpoints\":{\"codex\":{}}}", "'endpoints'");
	refused("{\"endpoints\":{\"codex\":{\"url\":\"http://h\"}}}", "'endpoints'");
	refused("{\"endpoints\":{\"codex\":{\"base_url\":\"file:///etc\"}}}", "'endpoints'");
	refused("{\"endpoints\":{\"codex\":{\"api_key_env\":\"lower\"}}}", "'endpoints'");
	refused("{\"endpoints\":{\"codex\":{\"model\":\"-x\"}}}", "'endpoints'");
	refused("{\"endpoints\":{\"codex\":{\"model\":1}}}", "'endpoints'");
	refused("{\"worktree_setup\":[]}", "'worktree_setup'");
	refused("{\"worktree_setup\":{\"copy_files\":[\"../x\"]}}", "'..'");
	refused("{\"worktree_setup\":{\"symlink_dirs\":[\"/etc\"]}}", "absolute");
	refused("{\"worktree_setup\":{\"copy_files\":[\".git/config\"]}}", ".git");
	refused("{\"worktree_setup\":{\"setup_command\":\"\"}}", "setup_command");
	refused("{\"worktree_setup\":{\"timeout\":0}}", "timeout");
	refused("{\"worktree_setup\":{\"run\":\"x\"}}", "unknown key");
	refused("{\"line\":-1}", "'line'");
	refused("{\"column\":\"3\"}", "'column'");
}

/* a plan's endpoints: go with every task's spec and come back */
static void test_endpoints(void **state)
{
	struct plan *p = load_text(
		"name: n\n"
		"endpoints:\n"
		"  codex: {base_url: 'http://127.0.0.1:9/v1', api_key_env: OPENAI_API_KEY}\n"
		"  pi: {model: m1}\n"
		"tasks:\n"
		"  - {title: a, prompt: x}\n"
		"  - {title: b, prompt: y}\n");
	struct task_spec s;
	char *text;

	(void)state;
	assert_int_equal(p->endpoints.n, 2);
	spec_from_plan(p, 1, &s);
	assert_int_equal(s.endpoints.n, 2);
	assert_string_equal(s.endpoints.v[0].adapter, "codex");
	assert_string_equal(s.endpoints.v[1].model, "m1");
	text = spec_dump(&s);
	assert_non_null(
		strstr(text, "\"endpoints\":{\"codex\":{\"api_key_env\":\"OPENAI_API_KEY\","
			     "\"base_url\":\"http://127.0.0.1:9/v1\"},\"pi\":{\"model\":\"m1\"}}"));
	round_trip(&s);
	free(text);
	spec_release(&s);
	plan_free(p);
	/* a plan without them records no key */
	p = load_text("name: n\ntasks:\n  - {title: a, prompt: x}\n");
	spec_from_plan(p, 0, &s);
	text = spec_dump(&s);
	assert_null(strstr(text, "endpoints"));
	free(text);
	spec_release(&s);
	plan_free(p);
}

static void test_too_large(void **state)
{
	size_t n = SPEC_MAX_BYTES + 16, i;
	char *big = malloc(n + 1);
	struct task_spec s;
	struct diag d;

	(void)state;
	assert_non_null(big);
	memcpy(big, "{\"prompt\":\"", 11);
	for (i = 11; i < n - 2; i++)
		big[i] = 'a';
	memcpy(big + n - 2, "\"}", 3);
	spec_init(&s);
	assert_int_equal(spec_parse_text(big, n, &s, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "larger than"));
	spec_release(&s);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_plans),
		cmocka_unit_test(test_numbers_stay_numbers),
		cmocka_unit_test(test_worktree_setup),
		cmocka_unit_test(test_reads_stored_forms),
		cmocka_unit_test(test_strict),
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_too_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
