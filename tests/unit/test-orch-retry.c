/* orch/retry.h: the policy parsed, resolved key by key (task > role >
 * bernstein.yaml, with max_retries and retry_backoff as the defaults), the
 * decision after an attempt, the escalation model, the recorded form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "orch/retry.h"
#include "util/arena.h"
#include "util/yaml.h"

static int load(struct arena *a, const char *text, struct retry_policy *p, struct ydoc **doc,
		struct diag *d)
{
	const struct ynode *n;
	int r;

	memset(p, 0, sizeof(*p));
	diag_clear(d);
	r = yaml_load_buf("t.yaml", text, strlen(text), NULL, doc, d);
	if (r < 0)
		return r;
	n = ynode_get((*doc)->root, "retry");
	r = n ? retry_get_yaml(a, *doc, n, "retry", p, d) : 0;
	n = ynode_get((*doc)->root, "fallback");
	if (r == 0 && n)
		r = retry_get_fallback(a, *doc, n, "fallback", p, d);
	return r;
}

static void test_resolve(void **state)
{
	struct retry_policy task = {0}, role = {0}, cfg = {0};
	static const char *const rm[] = {"r1", "r2", NULL};
	static const char *const fb[] = {"codex", NULL};
	struct retry_resolved p;

	(void)state;
	/* nothing anywhere: max_retries' meaning, rate limits only */
	retry_resolve(&task, &role, &cfg, 3, 2.0, &p);
	assert_int_equal(p.max_attempts, 3);
	assert_int_equal(p.on, RETRY_ON_LEGACY);
	/* ... and a node lost under a slurm job: neither is the agent's doing */
	assert_int_equal(retry_decide(&p, OUTCOME_LOST, 1, 0), RETRY_AGAIN);
	assert_int_equal(retry_decide(&p, OUTCOME_LOST, 3, 0), RETRY_NO);
	assert_int_equal(retry_decide(&p, OUTCOME_FAILED, 1, 0), RETRY_NO);
	assert_true(p.backoff_s == 2.0);
	assert_int_equal(p.n_models, 0);
	/* a fallback anywhere: the default outcomes */
	cfg.fallback = fb;
	cfg.n_fallback = 1;
	retry_resolve(&task, &role, &cfg, 3, 2.0, &p);
	assert_int_equal(p.on, RETRY_ON_DEFAULT);
	assert_int_equal(p.n_fallback, 1);
	/* key by key: the task's max_attempts, the role's models, cfg's on */
	cfg.on = RETRY_ON_BIT(OUTCOME_FAILED);
	cfg.max_attempts = 5;
	role.models = rm;
	role.n_models = 2;
	role.max_attempts = 4;
	task.max_attempts = 2;
	retry_resolve(&task, &role, &cfg, 3, 2.0, &p);
	assert_int_equal(p.max_attempts, 2);
	assert_int_equal(p.on, RETRY_ON_BIT(OUTCOME_FAILED));
	assert_int_equal(p.n_models, 2);
	assert_string_equal(retry_model(&p, 1), "r1");
	assert_string_equal(retry_model(&p, 2), "r2");
	assert_string_equal(retry_model(&p, 7), "r2");
}

static void test_decide(void **state)
{
	static const char *const fb[] = {"codex", "gemini", NULL};
	struct retry_resolved p = {.max_attempts = 2,
				   .on = RETRY_ON_DEFAULT | RETRY_ON_BIT(OUTCOME_BINARY_MISSING),
				   .fallback = fb,
				   .n_fallback = 2};

	(void)state;
	assert_int_equal(retry_decide(&p, OUTCOME_FAILED, 1, 0), RETRY_AGAIN);
	assert_int_equal(retry_decide(&p, OUTCOME_LOST, 1, 0), RETRY_AGAIN);
	assert_int_equal(retry_decide(&p, OUTCOME_FAILED, 2, 0), RETRY_FALLBACK);
	assert_int_equal(retry_decide(&p, OUTCOME_FAILED, 2, 1), RETRY_FALLBACK);
	assert_int_equal(retry_decide(&p, OUTCOME_FAILED, 2, 2), RETRY_NO);
	/* a missing binary goes straight to the next adapter */
	assert_int_equal(retry_decide(&p, OUTCOME_BINARY_MISSING, 1, 0), RETRY_FALLBACK);
	/* never retried: what on: does not name, and cancelled */
	assert_int_equal(retry_decide(&p, OUTCOME_PERMISSION_BLOCKED, 1, 0), RETRY_NO);
	assert_int_equal(retry_decide(&p, OUTCOME_CANCELLED, 1, 0), RETRY_NO);
	assert_int_equal(retry_decide(&p, OUTCOME_COMPLETED, 1, 0), RETRY_NO);
}

static void test_parse(void **state)
{
	struct arena a;
	struct retry_policy p, q;
	struct ydoc *doc = NULL;
	struct diag d;
	char msg[160];
	json_t *j;

	(void)state;
	arena_init(&a, 256);
	assert_int_equal(
		load(&a,
		     "retry: {max_attempts: 3, on: [crashed, failed], backoff: 0.5, models: [a, b]}\n"
		     "fallback: [codex, gemini]\n",
		     &p, &doc, &d),
		0);
	assert_int_equal(p.max_attempts, 3);
	assert_int_equal(p.on, RETRY_ON_BIT(OUTCOME_KILLED) | RETRY_ON_BIT(OUTCOME_FAILED));
	assert_true(p.has_backoff && p.backoff_s == 0.5);
	assert_int_equal(p.n_models, 2);
	assert_int_equal(p.n_fallback, 2);
	assert_int_equal(p.fallback_lines[1], 2);
	/* the recorded form, and back */
	j = retry_policy_json(&p);
	memset(&q, 0, sizeof(q));
	assert_int_equal(retry_policy_parse_json(&a, j, &q, msg, sizeof(msg)), 0);
	assert_int_equal(q.max_attempts, 3);
	assert_int_equal(q.on, p.on);
	assert_string_equal(q.models[1], "b");
	json_decref(j);
	j = retry_fallback_json(&p);
	assert_int_equal(retry_fallback_parse_json(&a, j, &q, msg, sizeof(msg)), 0);
	assert_string_equal(q.fallback[1], "gemini");
	json_decref(j);
	j = json_pack("{s:i}", "max_attempts", 0);
	assert_int_equal(retry_policy_parse_json(&a, j, &q, msg, sizeof(msg)), -EBADMSG);
	json_decref(j);
	j = json_pack("[s]", "-x");
	assert_int_equal(retry_fallback_parse_json(&a, j, &q, msg, sizeof(msg)), -EBADMSG);
	json_decref(j);
	doc = ydoc_free(doc);
	assert_int_equal(load(&a, "retry: {on: [lost]}\n", &p, &doc, &d), 0);
	assert_int_equal(p.on, RETRY_ON_BIT(OUTCOME_LOST));
	doc = ydoc_free(doc);

	/* refusals, each at its node */
	assert_int_equal(load(&a, "retry: {max_attempts: 22}\n", &p, &doc, &d), -EINVAL);
	assert_int_equal(d.line, 1);
	assert_int_equal(d.col, 23);
	doc = ydoc_free(doc);
	assert_int_equal(load(&a, "retry: {on: []}\n", &p, &doc, &d), -EINVAL);
	doc = ydoc_free(doc);
	assert_int_equal(load(&a, "retry: {models: [ok, 'a b']}\n", &p, &doc, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "retry.models[1]"));
	doc = ydoc_free(doc);
	assert_int_equal(load(&a, "fallback: []\n", &p, &doc, &d), -EINVAL);
	doc = ydoc_free(doc);
	assert_int_equal(load(&a, "fallback: [Codex]\n", &p, &doc, &d), -EINVAL);
	doc = ydoc_free(doc);
	arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
