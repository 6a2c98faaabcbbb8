/* orch/protect.c: which changed paths are bernstein's own configuration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orch/protect.h"

static void test_builtin_rules(void **state)
{
	(void)state;
	assert_true(protect_rule_match("bernstein.yaml", "bernstein.yaml"));
	assert_true(protect_rule_match("bernstein.yaml", "Bernstein.YAML")); /* any case */
	assert_false(protect_rule_match("bernstein.yaml", "sub/bernstein.yaml"));
	assert_false(protect_rule_match("bernstein.yaml", "bernstein.yaml.bak"));
	/* a directory rule covers what is beneath it, and the entry itself */
	assert_true(protect_rule_match(".bernstein", ".bernstein"));
	assert_true(protect_rule_match(".bernstein", ".bernstein/catalog/profiles/x.yaml"));
	assert_true(protect_rule_match("bernstein", "bernstein/catalog/pricing.yaml"));
	assert_false(protect_rule_match("bernstein", "bernsteinx/a"));
	assert_false(protect_rule_match("bernstein", "src/bernstein/a.c"));
	assert_true(protect_rule_match(".worktreeinclude", ".worktreeinclude"));
}

static void test_patterns(void **state)
{
	(void)state;
	/* '*' crosses '/': more protection, never less */
	assert_true(protect_rule_match("*.env", "a/b/c.env"));
	assert_true(protect_rule_match("plans/", "plans/one.yaml"));
	assert_true(protect_rule_match("plans", "plans/deep/one.yaml"));
	assert_true(protect_rule_match("ci/*.yml", "ci/x.yml"));
	assert_false(protect_rule_match("ci/*.yml", "cx/x.yml"));
	assert_true(protect_rule_match("Makefile", "makefile"));
	assert_false(protect_rule_match("", "x"));
	assert_false(protect_rule_match("x", ""));
}

static void test_rule_check(void **state)
{
	const char *why = NULL;

	(void)state;
	assert_int_equal(protect_rule_check("plans/", &why), 0);
	assert_int_equal(protect_rule_check("a/*.yaml", &why), 0);
	assert_int_equal(protect_rule_check("", &why), -EINVAL);
	assert_int_equal(protect_rule_check("/etc/passwd", &why), -EINVAL);
	assert_non_null(strstr(why, "absolute"));
	assert_int_equal(protect_rule_check("a/../b", &why), -EINVAL);
	assert_int_equal(protect_rule_check("./a", &why), -EINVAL);
	assert_int_equal(protect_rule_check("a//b", &why), -EINVAL);
	assert_int_equal(protect_rule_check("a\nb", &why), -EINVAL);
}

static void test_filter(void **state)
{
	struct strvec changed = STRVEC_INIT, hits = STRVEC_INIT, rules = STRVEC_INIT;
	const char *extra[] = {"deploy/*", NULL};

	(void)state;
	strvec_push(&changed, "src/main.c");
	strvec_push(&changed, "bernstein.yaml");
	strvec_push(&changed, "deploy/prod.sh");
	strvec_push(&changed, "plans/run[1].yaml");
	strvec_push(&changed, "plans/run1.yaml");
	strvec_push(&changed, ".bernstein/catalog/profiles/claude.yaml");
	strvec_push(&changed, "README.md");
	/* no such directory: only the lexical rules */
	protect_rules("/nonexistent-t/repo", extra, 1, "/nonexistent-t/repo/plans/run[1].yaml",
		      &rules);
	assert_int_equal(protect_filter(&changed, &rules, &hits), 4);
	assert_int_equal(hits.nr, 4);
	assert_string_equal(hits.v[0], "bernstein.yaml");
	assert_string_equal(hits.v[1], "deploy/prod.sh");
	/* the plan's name is a literal, not a pattern: run1.yaml is not it */
	assert_string_equal(hits.v[2], "plans/run[1].yaml");
	assert_string_equal(hits.v[3], ".bernstein/catalog/profiles/claude.yaml");
	/* again: each path once */
	assert_int_equal(protect_filter(&changed, &rules, &hits), 0);
	strvec_clear(&hits);
	strvec_clear(&rules);
	/* no extra rules, a plan outside the repository: the built-ins alone */
	protect_rules("/nonexistent-t/repo", NULL, 0, "/elsewhere/plan.yaml", &rules);
	assert_int_equal(protect_filter(&changed, &rules, &hits), 2);
	strvec_clear(&hits);
	strvec_clear(&rules);
	strvec_clear(&changed);
}

/* bernstein.yaml as a symlink: the file it resolves to is protected too */
static void test_symlinked_config(void **state)
{
	char dir[] = "/tmp/test-protect-XXXXXX", path[256];
	struct strvec rules = STRVEC_INIT, changed = STRVEC_INIT, hits = STRVEC_INIT;

	(void)state;
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/conf", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	(void)snprintf(path, sizeof(path), "%s/conf/b.yaml", dir);
	assert_int_equal(close(open(path, O_CREAT | O_WRONLY, 0600)), 0);
	(void)snprintf(path, sizeof(path), "%s/bernstein.yaml", dir);
	assert_int_equal(symlink("conf/b.yaml", path), 0);
	protect_rules(dir, NULL, 0, NULL, &rules);
	strvec_push(&changed, "conf/b.yaml");
	strvec_push(&changed, "conf/other.yaml");
	assert_int_equal(protect_filter(&changed, &rules, &hits), 1);
	assert_string_equal(hits.v[0], "conf/b.yaml");
	(void)unlink(path);
	(void)snprintf(path, sizeof(path), "%s/conf/b.yaml", dir);
	(void)unlink(path);
	(void)snprintf(path, sizeof(path), "%s/conf", dir);
	(void)rmdir(path);
	(void)rmdir(dir);
	strvec_clear(&rules);
	strvec_clear(&changed);
	strvec_clear(&hits);
}

static void test_relative(void **state)
{
	(void)state;
	assert_string_equal(protect_relative("/r/repo", "/r/repo/plans/a.yaml"), "plans/a.yaml");
	assert_string_equal(protect_relative("/r/repo/", "/r/repo/a.yaml"), "a.yaml");
	assert_null(protect_relative("/r/repo", "/r/repo2/a.yaml"));
	assert_null(protect_relative("/r/repo", "/r/repo"));
	assert_null(protect_relative("/r/repo", "plans/a.yaml"));
	assert_null(protect_relative("/r/repo", NULL));
	assert_string_equal(protect_relative("/", "/a.yaml"), "a.yaml");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_rules), cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_rule_check),    cmocka_unit_test(test_filter),
		cmocka_unit_test(test_relative),      cmocka_unit_test(test_symlinked_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
