/* adapter/envpolicy.h: the agent environment from an allow-list, and the
 * credential-name rule of adapter/credential.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/credential.h"
#include "adapter/envpolicy.h"
#include "util/strvec.h"

static bool has(const struct strvec *env, const char *kv)
{
	return strvec_find(env, kv) >= 0;
}

static bool has_name(const struct strvec *env, const char *name)
{
	return envpolicy_get(env->v, name) != NULL;
}

static void test_base_list(void **state)
{
	static const char *const windows[] = {
		"SYSTEMROOT",
		"WINDIR",
		"COMSPEC",
		"APPDATA",
		"LOCALAPPDATA",
		"USERPROFILE",
		"SystemDrive",
		"ProgramFiles",
		"ProgramFiles(x86)",
		"ProgramData",
		"CommonProgramFiles",
		"CommonProgramFiles(x86)",
		"USERNAME",
	};
	size_t i, n = 0;

	(void)state;
	for (i = 0; envpolicy_base[i]; i++) {
		n++;
		assert_true(envpolicy_name_valid(envpolicy_base[i]));
	}
	/* Bernstein's 51 names minus the 13 Windows-only ones */
	assert_int_equal(n, 51 - 13);
	for (i = 0; i < sizeof(windows) / sizeof(windows[0]); i++)
		assert_false(envpolicy_base_allowed(windows[i]));
	assert_true(envpolicy_base_allowed("PATH"));
	assert_true(envpolicy_base_allowed("HOME"));
	assert_true(envpolicy_base_allowed("BERNSTEIN_AUTH_TOKEN"));
	assert_false(envpolicy_base_allowed("path"));
	assert_false(envpolicy_base_allowed("BERNSTEIN_ALLOWED_API_KEY_ENVS"));
}

static void test_canary_not_passed(void **state)
{
	const char *host[] = {
		"PATH=/usr/bin:/bin",
		"HOME=/home/u",
		"CANARY_SECRET=hunter2",
		"ANTHROPIC_API_KEY=sk-ant-xyz",
		"AWS_SECRET_ACCESS_KEY=aws",
		"LANG=C.UTF-8",
		"TZ=UTC",
		NULL,
	};
	struct envpolicy e;
	struct strvec env = STRVEC_INIT;
	size_t i;

	(void)state;
	envpolicy_init(&e, host);
	assert_int_equal(envpolicy_build(&e, &env, NULL), 0);
	assert_true(has(&env, "PATH=/usr/bin:/bin"));
	assert_true(has(&env, "HOME=/home/u"));
	assert_true(has(&env, "LANG=C.UTF-8"));
	assert_false(has_name(&env, "CANARY_SECRET"));
	assert_false(has_name(&env, "ANTHROPIC_API_KEY"));
	assert_false(has_name(&env, "AWS_SECRET_ACCESS_KEY"));
	assert_false(has_name(&env, "TZ"));
	assert_int_equal(env.nr, 3);
	for (i = 0; i < env.nr; i++)
		assert_null(strstr(env.v[i], "hunter2"));
	strvec_clear(&env);

	/* named: passed */
	envpolicy_pass(&e, "ANTHROPIC_API_KEY");
	envpolicy_pass(&e, "NOT_SET_ANYWHERE");
	assert_int_equal(envpolicy_build(&e, &env, NULL), 0);
	assert_true(has(&env, "ANTHROPIC_API_KEY=sk-ant-xyz"));
	assert_false(has_name(&env, "NOT_SET_ANYWHERE")); /* only variables that are set */
	assert_false(has_name(&env, "CANARY_SECRET"));
	assert_int_equal(env.nr, 4);
	strvec_clear(&env);
	envpolicy_release(&e);
}

static void test_fixed_values_win_and_sorted(void **state)
{
	const char *host[] = {
		"XDG_CONFIG_HOME=/home/u/.config", "HOME=/home/u", "PATH=/bin",
		"HOME=/second/duplicate",	   "TERM=xterm",   NULL,
	};
	struct envpolicy e;
	struct strvec env = STRVEC_INIT;
	size_t i;

	(void)state;
	envpolicy_init(&e, host);
	envpolicy_set(&e, "HOME", "/agent/home");
	envpolicy_set(&e, "DO_NOT_TRACK", "1");
	envpolicy_set(&e, "A_VALUE", "with = sign and %s");
	envpolicy_set(&e, "DO_NOT_TRACK", "0"); /* the last set wins */
	assert_int_equal(envpolicy_build(&e, &env, NULL), 0);
	assert_true(has(&env, "HOME=/agent/home"));
	assert_false(has(&env, "HOME=/home/u"));
	assert_false(has(&env, "HOME=/second/duplicate"));
	assert_true(has(&env, "DO_NOT_TRACK=0"));
	assert_true(has(&env, "A_VALUE=with = sign and %s"));
	assert_true(has(&env, "XDG_CONFIG_HOME=/home/u/.config"));
	assert_int_equal(env.nr, 6);
	for (i = 1; i < env.nr; i++)
		assert_true(strcmp(env.v[i - 1], env.v[i]) < 0);
	/* exactly one HOME */
	for (i = 0; i < env.nr; i++)
		if (strncmp(env.v[i], "HOME=", 5) == 0)
			assert_string_equal(env.v[i], "HOME=/agent/home");
	strvec_clear(&env);
	envpolicy_release(&e);

	/* the first of duplicate host entries counts, as getenv() */
	envpolicy_init(&e, host);
	assert_int_equal(envpolicy_build(&e, &env, NULL), 0);
	assert_true(has(&env, "HOME=/home/u"));
	assert_false(has(&env, "HOME=/second/duplicate"));
	strvec_clear(&env);
	envpolicy_release(&e);
}

static void test_test_pass_env(void **state)
{
	const char *host[] = {
		"PATH=/bin",
		"ASAN_OPTIONS=detect_leaks=1",
		"UBSAN_OPTIONS=halt_on_error=1",
		"LSAN_OPTIONS=x",
		"CANARY_SECRET=hunter2",
		"BERNSTEIN_TEST_PASS_ENV= ASAN_OPTIONS , UBSAN_OPTIONS,,",
		NULL,
	};
	const char *plain[] = {"PATH=/bin", "ASAN_OPTIONS=detect_leaks=1", NULL};
	struct envpolicy e;
	struct strvec env = STRVEC_INIT;

	(void)state;
	envpolicy_init(&e, host);
	assert_int_equal(envpolicy_build(&e, &env, NULL), 0);
	assert_true(has(&env, "ASAN_OPTIONS=detect_leaks=1"));
	assert_true(has(&env, "UBSAN_OPTIONS=halt_on_error=1"));
	assert_false(has_name(&env, "LSAN_OPTIONS"));
	assert_false(has_name(&env, "CANARY_SECRET"));
	assert_false(has_name(&env, "BERNSTEIN_TEST_PASS_ENV"));
	strvec_clear(&env);
	envpolicy_release(&e);

	/* without the test variable the sanitizer options are stripped */
	envpolicy_init(&e, plain);
	assert_int_equal(envpolicy_build(&e, &env, NULL), 0);
	assert_false(has_name(&env, "ASAN_OPTIONS"));
	assert_int_equal(env.nr, 1);
	strvec_clear(&env);
	envpolicy_release(&e);
}

static void test_invalid_names(void **state)
{
	const char *host[] = {"PATH=/bin", "=weird", "NOEQUALS", NULL};
	struct envpolicy e;
	struct strvec env = STRVEC_INIT;
	struct diag d;

	(void)state;
	envpolicy_init(&e, host);
	assert_int_equal(envpolicy_build(&e, &env, NULL), 0);
	assert_int_equal(env.nr, 1); /* malformed host entries are skipped */
	strvec_clear(&env);
	envpolicy_set(&e, "BAD-NAME", "x");
	assert_int_equal(envpolicy_build(&e, &env, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "BAD-NAME"));
	assert_int_equal(env.nr, 0);
	envpolicy_release(&e);

	envpolicy_init(&e, NULL);
	envpolicy_pass(&e, "1X");
	assert_int_equal(envpolicy_build(&e, &env, &d), -EINVAL);
	envpolicy_release(&e);
	assert_true(envpolicy_name_valid("_x1"));
	assert_true(envpolicy_name_valid("npm_config_offline"));
	assert_false(envpolicy_name_valid(""));
	assert_false(envpolicy_name_valid("A B"));
	assert_null(envpolicy_get(host, "PATH_"));
	assert_string_equal(envpolicy_get(host, "PATH"), "/bin");
}

static void test_credential_names(void **state)
{
	struct diag d;
	size_t i, n = 0;

	(void)state;
	for (i = 0; credential_env_builtin[i]; i++) {
		n++;
		assert_true(credential_env_wellformed(credential_env_builtin[i]));
		assert_int_equal(credential_env_check(credential_env_builtin[i], NULL, NULL), 0);
	}
	assert_int_equal(n, 19);
	assert_int_equal(credential_env_check("ANTHROPIC_API_KEY", NULL, NULL), 0);
	assert_int_equal(credential_env_check("HF_TOKEN", NULL, NULL), 0);

	/* credential-shaped names of unrelated secrets are refused */
	assert_int_equal(credential_env_check("GITHUB_TOKEN", NULL, &d), -EPERM);
	assert_non_null(strstr(d.msg, "'GITHUB_TOKEN' is not an allowed credential variable"));
	assert_non_null(strstr(d.msg, "BERNSTEIN_ALLOWED_API_KEY_ENVS"));
	assert_int_equal(credential_env_check("AWS_SECRET_ACCESS_KEY", "", &d), -EPERM);

	/* malformed names, even if listed by the host */
	assert_int_equal(credential_env_check("openai_api_key", "openai_api_key", &d), -EPERM);
	assert_non_null(strstr(d.msg, "^[A-Z][A-Z0-9_]*$"));
	assert_int_equal(credential_env_check("1KEY", NULL, &d), -EPERM);
	assert_int_equal(credential_env_check("MY-KEY", "MY-KEY", &d), -EPERM);
	assert_int_equal(credential_env_check("", NULL, &d), -EPERM);
	assert_int_equal(credential_env_check(NULL, NULL, &d), -EPERM);

	/* the host override */
	assert_int_equal(credential_env_check("MY_GATEWAY_KEY", "OTHER, MY_GATEWAY_KEY ", NULL), 0);
	assert_int_equal(credential_env_check("MY_GATEWAY_KEY", "MY_GATEWAY", &d), -EPERM);
	assert_int_equal(credential_env_check("MY_GATEWAY", "MY_GATEWAY_KEY", &d), -EPERM);
	assert_true(credential_env_listed("B", "A,B"));
	assert_true(credential_env_listed("A", "\tA\t,B"));
	assert_false(credential_env_listed("A", NULL));
	assert_false(credential_env_listed("", ","));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base_list),
		cmocka_unit_test(test_canary_not_passed),
		cmocka_unit_test(test_fixed_values_win_and_sorted),
		cmocka_unit_test(test_test_pass_env),
		cmocka_unit_test(test_invalid_names),
		cmocka_unit_test(test_credential_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
