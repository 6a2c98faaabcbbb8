/* The runner manifest (src/runner/manifest.c) and the api_key_env rules
 * (src/runner/credential.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter/credential.h"
#include "runner/loop.h"
#include "runner/manifest.h"

#define BASE                                                                                       \
	"\"session_id\": \"s-1\", \"prompt\": \"do it\", \"workdir\": \"/tmp\", \"model\": \"m\""

static struct runner_manifest *parse_ok(const char *json)
{
	struct runner_manifest *m = NULL;
	struct diag d = {0};
	int r = runner_manifest_parse("m.json", json, strlen(json), &m, &d);

	if (r != 0)
		fail_msg("parse failed (%d): %s", r, d.msg);
	assert_non_null(m);
	return m;
}

/* Parse must fail with code; the message must mention needle. */
static void parse_bad(const char *json, int code, const char *needle)
{
	struct runner_manifest *m = NULL;
	struct diag d = {0};
	int r = runner_manifest_parse("m.json", json, strlen(json), &m, &d);

	if (r != code)
		fail_msg("'%s': expected %d, got %d (%s)", json, code, r, d.msg);
	assert_null(m);
	if (!strstr(d.msg, needle))
		fail_msg("'%s': message '%s' lacks '%s'", json, d.msg, needle);
	assert_string_equal(d.file, "m.json");
}

static void test_minimal_defaults(void **state)
{
	struct runner_manifest *m = parse_ok("{" BASE "}");

	(void)state;
	assert_string_equal(m->session_id, "s-1");
	assert_string_equal(m->prompt, "do it");
	assert_string_equal(m->workdir, "/tmp");
	assert_string_equal(m->model, "m");
	assert_string_equal(m->effort, "high");
	assert_int_equal(m->max_tokens, 200000);
	assert_false(m->has_max_tokens);
	assert_int_equal(m->timeout_seconds, 1800);
	assert_string_equal(m->task_scope, "medium");
	assert_true(m->budget_multiplier == 1.0);
	assert_string_equal(m->system_addendum, "");
	assert_string_equal(m->sandbox_provider, "unix_local");
	assert_int_equal(m->ntools, 0);
	assert_non_null(m->tools);
	assert_null(m->tools[0]);
	assert_int_equal(m->tool_source, MANIFEST_TOOLS_GATEWAY);
	assert_int_equal(m->nmcp_servers, 0);
	assert_false(m->has_temperature);
	assert_false(m->has_top_p);
	assert_false(m->has_top_k);
	assert_null(m->base_url);
	assert_null(m->api_key_env);
	assert_null(m->heartbeat_dir);
	assert_false(m->has_allow_run_command);
	assert_false(m->allow_git_dir);
	assert_false(m->has_max_turns);
	assert_true(m->stream);
	runner_manifest_free(m);
}

static void test_all_fields(void **state)
{
	struct runner_manifest *m = parse_ok(
		"{" BASE
		", \"effort\": \"low\", \"max_tokens\": 123, \"timeout_seconds\": 9, \"task_scope\": \"large\", \"budget_multiplier\": 2.5, \"system_addendum\": \"be brief\", \"sandbox_provider\": \"landlock\", \"tools\": [\"read_file\", {\"name\": \"list_dir\"}], \"tool_source\": \"builtin\", \"temperature\": 0.5, \"top_p\": 1, \"top_k\": 40, \"base_url\": \"http://127.0.0.1:9/v1///\", \"api_key_env\": \"GROQ_API_KEY\", \"heartbeat_dir\": \"/tmp/hb\", \"allow_run_command\": false, \"max_turns\": 3, \"allow_git_dir\": true, \"stream\": false, \"mcp_servers\": {\"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"x\"], \"env\": {\"A\": \"1\"}, \"cwd\": \"/w\"}, \"other\": {\"type\": \"stdio\", \"command\": \"/bin/o\"}}}");

	(void)state;
	assert_string_equal(m->effort, "low");
	assert_true(m->has_max_tokens);
	assert_int_equal(m->max_tokens, 123);
	assert_int_equal(m->timeout_seconds, 9);
	assert_string_equal(m->task_scope, "large");
	assert_true(m->budget_multiplier == 2.5);
	assert_string_equal(m->system_addendum, "be brief");
	assert_string_equal(m->sandbox_provider, "landlock");
	assert_int_equal(m->ntools, 2);
	assert_string_equal(m->tools[0], "read_file");
	assert_string_equal(m->tools[1], "list_dir");
	assert_null(m->tools[2]);
	assert_int_equal(m->tool_source, MANIFEST_TOOLS_BUILTIN);
	assert_true(m->has_temperature && m->temperature == 0.5);
	assert_true(m->has_top_p && m->top_p == 1.0);
	assert_true(m->has_top_k && m->top_k == 40);
	assert_string_equal(m->base_url, "http://127.0.0.1:9/v1"); /* trailing slashes dropped */
	assert_string_equal(m->api_key_env, "GROQ_API_KEY");
	assert_string_equal(m->heartbeat_dir, "/tmp/hb");
	assert_true(m->has_allow_run_command);
	assert_false(m->allow_run_command);
	assert_true(m->allow_git_dir);
	assert_true(m->has_max_turns);
	assert_int_equal(m->max_turns, 3);
	assert_false(m->stream);
	assert_int_equal(m->nmcp_servers, 2);
	assert_string_equal(m->mcp_servers[0].name, "fs");
	assert_string_equal(m->mcp_servers[0].command, "npx");
	assert_string_equal(m->mcp_servers[0].args[0], "-y");
	assert_string_equal(m->mcp_servers[0].args[1], "x");
	assert_null(m->mcp_servers[0].args[2]);
	assert_string_equal(m->mcp_servers[0].env[0], "A=1");
	assert_null(m->mcp_servers[0].env[1]);
	assert_string_equal(m->mcp_servers[0].cwd, "/w");
	assert_string_equal(m->mcp_servers[1].command, "/bin/o");
	assert_null(m->mcp_servers[1].args[0]);
	assert_null(m->mcp_servers[1].env[0]);
	assert_null(m->mcp_servers[1].cwd);
	runner_manifest_free(m);
}

static void test_unknown_and_null(void **state)
{
	struct runner_manifest *m;

	(void)state;
	/* unknown keys are ignored; null means "not set" */
	m = parse_ok(
		"{" BASE
		", \"task_id\": \"T-1\", \"council\": {\"x\": [1, 2]}, \"temperature\": null, \"base_url\": null, \"max_turns\": null, \"tool_source\": \"something-else\", \"sandbox_provider\": \"\"}");
	assert_false(m->has_temperature);
	assert_null(m->base_url);
	assert_false(m->has_max_turns);
	assert_int_equal(m->tool_source, MANIFEST_TOOLS_GATEWAY);
	assert_string_equal(m->tool_source_raw, "something-else");
	assert_string_equal(m->sandbox_provider, "unix_local");
	runner_manifest_free(m);
	/* an empty prompt is allowed */
	m = parse_ok(
		"{\"session_id\": \"a\", \"prompt\": \"\", \"workdir\": \"w\", \"model\": \"m\"}");
	assert_string_equal(m->prompt, "");
	runner_manifest_free(m);
}

static void test_not_json(void **state)
{
	(void)state;
	parse_bad("", -EBADMSG, "");
	parse_bad("{", -EBADMSG, "");
	parse_bad("[1, 2]", -EBADMSG, "must be a JSON object, got an array");
	parse_bad("\"x\"", -EBADMSG, "must be a JSON object");
	parse_bad("{" BASE "} trailing", -EBADMSG, "");
	parse_bad("{" BASE ", \"model\": \"twice\"}", -EBADMSG, "duplicate");
}

static void test_required(void **state)
{
	(void)state;
	parse_bad("{\"prompt\": \"p\", \"workdir\": \"w\", \"model\": \"m\"}", -EINVAL,
		  "field 'session_id': missing");
	parse_bad("{\"session_id\": \"s\", \"workdir\": \"w\", \"model\": \"m\"}", -EINVAL,
		  "field 'prompt': missing");
	parse_bad("{\"session_id\": \"s\", \"prompt\": \"p\", \"model\": \"m\"}", -EINVAL,
		  "field 'workdir': missing");
	parse_bad("{\"session_id\": \"s\", \"prompt\": \"p\", \"workdir\": \"w\"}", -EINVAL,
		  "field 'model': missing");
	parse_bad("{\"session_id\": \"s\", \"prompt\": \"p\", \"workdir\": \"w\", \"model\": \"\"}",
		  -EINVAL, "field 'model': must not be empty");
	parse_bad("{\"session_id\": 5, \"prompt\": \"p\", \"workdir\": \"w\", \"model\": \"m\"}",
		  -EINVAL, "field 'session_id': expected a string, got an integer");
}

static void test_types(void **state)
{
	(void)state;
	parse_bad("{" BASE ", \"max_tokens\": \"10\"}", -EINVAL,
		  "field 'max_tokens': expected an integer, got a string");
	parse_bad("{" BASE ", \"max_tokens\": 1.5}", -EINVAL,
		  "field 'max_tokens': expected an integer, got a number");
	parse_bad("{" BASE ", \"max_tokens\": 0}", -EINVAL,
		  "field 'max_tokens': must be at least 1");
	parse_bad("{" BASE ", \"top_k\": true}", -EINVAL,
		  "field 'top_k': expected an integer, got a boolean");
	parse_bad("{" BASE ", \"top_k\": -1}", -EINVAL, "field 'top_k': must be at least 0");
	parse_bad("{" BASE ", \"temperature\": true}", -EINVAL,
		  "field 'temperature': expected a number, got a boolean");
	parse_bad("{" BASE ", \"temperature\": \"0.5\"}", -EINVAL,
		  "field 'temperature': expected a number");
	parse_bad("{" BASE ", \"temperature\": -0.1}", -EINVAL,
		  "field 'temperature': must be at least 0");
	parse_bad("{" BASE ", \"top_p\": 1.5}", -EINVAL, "field 'top_p': must be between 0 and 1");
	parse_bad("{" BASE ", \"timeout_seconds\": 0}", -EINVAL, "field 'timeout_seconds'");
	parse_bad("{" BASE ", \"max_turns\": 0}", -EINVAL, "field 'max_turns': must be at least 1");
	parse_bad("{" BASE ", \"max_turns\": \"3\"}", -EINVAL,
		  "field 'max_turns': expected an integer");
	parse_bad("{" BASE ", \"allow_run_command\": 1}", -EINVAL,
		  "field 'allow_run_command': expected true or false, got an integer");
	parse_bad("{" BASE ", \"allow_git_dir\": \"yes\"}", -EINVAL,
		  "field 'allow_git_dir': expected true or false, got a string");
	parse_bad("{" BASE ", \"stream\": \"yes\"}", -EINVAL, "field 'stream'");
	parse_bad("{" BASE ", \"api_key_env\": \"\"}", -EINVAL,
		  "field 'api_key_env': must not be empty");
	parse_bad("{" BASE ", \"api_key_env\": 7}", -EINVAL,
		  "field 'api_key_env': expected a string");
	parse_bad("{" BASE ", \"base_url\": \"ftp://x\"}", -EINVAL, "field 'base_url'");
	parse_bad("{" BASE ", \"base_url\": \"http://\"}", -EINVAL, "field 'base_url'");
	parse_bad("{" BASE ", \"base_url\": \"https://a b\"}", -EINVAL, "field 'base_url'");
	parse_bad("{" BASE ", \"base_url\": \"file:///etc/passwd\"}", -EINVAL, "field 'base_url'");
	parse_bad("{" BASE ", \"system_addendum\": [\"x\"]}", -EINVAL,
		  "field 'system_addendum': expected a string, got an array");
	parse_bad("{" BASE ", \"tools\": \"read_file\"}", -EINVAL,
		  "field 'tools': expected an array");
	parse_bad("{" BASE ", \"tools\": [1]}", -EINVAL, "field 'tools': element 0");
	parse_bad("{" BASE ", \"tools\": [{\"nom\": \"x\"}]}", -EINVAL, "field 'tools': element 0");
	parse_bad("{" BASE ", \"prompt\": \"a\\u0000b\"}", -EBADMSG, "");
}

static void test_mcp_servers(void **state)
{
	(void)state;
	parse_bad("{" BASE ", \"mcp_servers\": []}", -EINVAL,
		  "field 'mcp_servers': expected an object of servers, got an array");
	parse_bad("{" BASE ", \"mcp_servers\": {\"a\": 1}}", -EINVAL,
		  "field 'mcp_servers.a': expected an object");
	parse_bad("{" BASE ", \"mcp_servers\": {\"a\": {}}}", -EINVAL,
		  "field 'mcp_servers.a': missing 'command'");
	parse_bad("{" BASE ", \"mcp_servers\": {\"a\": {\"url\": \"http://x\"}}}", -EINVAL,
		  "only stdio servers");
	parse_bad("{" BASE ", \"mcp_servers\": {\"a\": {\"type\": \"sse\", \"command\": \"x\"}}}",
		  -EINVAL, "only stdio servers");
	parse_bad("{" BASE ", \"mcp_servers\": {\"a\": {\"command\": \"x\", \"args\": \"-y\"}}}",
		  -EINVAL, "field 'mcp_servers.a.args': expected an array of strings");
	parse_bad("{" BASE ", \"mcp_servers\": {\"a\": {\"command\": \"x\", \"args\": [1]}}}",
		  -EINVAL, "mcp_servers.a.args': element 0");
	parse_bad("{" BASE ", \"mcp_servers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": 1}}}}",
		  -EINVAL, "field 'mcp_servers.a.env'");
	parse_bad("{" BASE
		  ", \"mcp_servers\": {\"a\": {\"command\": \"x\", \"env\": {\"K=V\": \"1\"}}}}",
		  -EINVAL, "field 'mcp_servers.a.env'");
	parse_bad("{" BASE ", \"mcp_servers\": {\"a\": {\"command\": \"\"}}}", -EINVAL,
		  "mcp_servers.a: field 'command': must not be empty");
}

static void test_session_ids(void **state)
{
	static const char *const good[] = {"a", "s-1", "A.b_c-9", "x.transcript", NULL};
	static const char *const bad[] = {"", ".", "..", "a/b", "../x", "a b", "a\\b", "é", NULL};
	char json[512];
	size_t i;

	(void)state;
	for (i = 0; good[i]; i++)
		assert_true(runner_manifest_session_id_ok(good[i]));
	for (i = 0; bad[i]; i++) {
		assert_false(runner_manifest_session_id_ok(bad[i]));
		if (!*bad[i])
			continue;
		(void)snprintf(
			json, sizeof(json),
			"{\"session_id\": \"%s\", \"prompt\": \"p\", \"workdir\": \"w\", \"model\": \"m\"}",
			strcmp(bad[i], "a\\b") == 0 ? "a\\\\b" : bad[i]);
		parse_bad(json, -EINVAL, "field 'session_id'");
	}
	memset(json, 'x', 129);
	json[129] = '\0';
	assert_false(runner_manifest_session_id_ok(json));
	json[128] = '\0';
	assert_true(runner_manifest_session_id_ok(json));
}

static void test_load(void **state)
{
	struct runner_manifest *m = NULL;
	struct diag d = {0};
	char path[] = "/tmp/bernstein-manifest-XXXXXX";
	int fd;

	(void)state;
	assert_int_equal(runner_manifest_load("/nonexistent/m.json", &m, &d), -ENOENT);
	assert_null(m);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{" BASE "}", strlen("{" BASE "}")),
			 (ssize_t)strlen("{" BASE "}"));
	(void)close(fd);
	assert_int_equal(runner_manifest_load(path, &m, &d), 0);
	assert_string_equal(m->path, path);
	runner_manifest_free(m);
	(void)unlink(path);
	assert_null(runner_manifest_free(NULL));
}

/* ---- credentials ---- */

static void test_credential_builtin(void **state)
{
	struct diag d = {0};
	size_t n;

	(void)state;
	for (n = 0; credential_env_builtin[n]; n++)
		assert_int_equal(credential_env_check(credential_env_builtin[n], NULL, &d), 0);
	assert_int_equal(n, 19);
	assert_int_equal(credential_env_check("OPENAI_API_KEY", NULL, &d), 0);
	assert_int_equal(credential_env_check("HF_TOKEN", NULL, &d), 0);
	assert_int_equal(credential_env_check("LLM_API_KEY", "", &d), 0);
}

static void test_credential_rejected(void **state)
{
	static const char *const bad[] = {
		"GITHUB_TOKEN",
		"AWS_SECRET_ACCESS_KEY",
		"AWS_ACCESS_KEY_ID",
		"GH_TOKEN",
		"NPM_TOKEN",
		"SSH_AUTH_SOCK",
		"HOME",
		"PATH",
		"DATABASE_URL",
		"OPENAI_API_KEY2",
		"XOPENAI_API_KEY",
		"BERNSTEIN_ALLOWED_API_KEY_ENVS",
		NULL,
	};
	static const char *const malformed[] = {
		"",
		"openai_api_key",
		"1OPENAI",
		"_OPENAI",
		"OPENAI-API-KEY",
		"OPENAI API KEY",
		"OPENAI_API_KEY ",
		"OPENAİ_API_KEY",
		"A=B",
		"A$B",
		NULL,
	};
	struct diag d = {0};
	size_t i;

	(void)state;
	for (i = 0; bad[i]; i++) {
		memset(&d, 0, sizeof(d));
		assert_int_equal(credential_env_check(bad[i], NULL, &d), -EPERM);
		assert_non_null(strstr(d.msg, "is not an allowed credential variable name"));
		assert_non_null(strstr(d.msg, bad[i]));
		assert_non_null(strstr(d.msg, "BERNSTEIN_ALLOWED_API_KEY_ENVS"));
	}
	for (i = 0; malformed[i]; i++) {
		memset(&d, 0, sizeof(d));
		assert_false(credential_env_wellformed(malformed[i]));
		/* even the host override cannot admit a malformed name */
		assert_int_equal(credential_env_check(malformed[i], malformed[i], &d), -EPERM);
		assert_non_null(strstr(d.msg, "^[A-Z][A-Z0-9_]*$"));
	}
	assert_int_equal(credential_env_check(NULL, NULL, &d), -EPERM);
}

static void test_credential_host_override(void **state)
{
	struct diag d = {0};

	(void)state;
	assert_int_equal(credential_env_check("MY_LLM_KEY", NULL, &d), -EPERM);
	assert_int_equal(credential_env_check("MY_LLM_KEY", "MY_LLM_KEY", &d), 0);
	assert_int_equal(credential_env_check("MY_LLM_KEY", " OTHER_KEY , MY_LLM_KEY ", &d), 0);
	assert_int_equal(credential_env_check("MY_LLM_KEY", "OTHER,\tMY_LLM_KEY\n", &d), 0);
	assert_int_equal(credential_env_check("MY_LLM_KEY", "MY_LLM_KEYS", &d), -EPERM);
	assert_int_equal(credential_env_check("MY_LLM_KEY", "MY_LLM", &d), -EPERM);
	assert_int_equal(credential_env_check("MY_LLM_KEY", "MY_LLM_KEY_2,XMY_LLM_KEY", &d),
			 -EPERM);
	assert_int_equal(credential_env_check("MY_LLM_KEY", ",,", &d), -EPERM);
	assert_int_equal(credential_env_check("GITHUB_TOKEN", "GITHUB_TOKEN", &d), 0);
	assert_true(credential_env_listed("B", "A,B,C"));
	assert_false(credential_env_listed("B", "A;B"));
	assert_false(credential_env_listed("", ""));
}

static void test_run_command_gate(void **state)
{
	struct runner_manifest *m;

	(void)state;
	assert_true(runner_sandboxed("landlock"));
	assert_true(runner_sandboxed("docker"));
	assert_true(runner_sandboxed("e2b"));
	assert_true(runner_sandboxed("modal"));
	assert_false(runner_sandboxed("unix_local"));
	assert_false(runner_sandboxed("worktree"));
	assert_false(runner_sandboxed(NULL));

	m = parse_ok("{" BASE "}");
	assert_false(runner_allow_run_command(m, false));
	assert_true(runner_allow_run_command(m, true)); /* the operator's opt-in */
	runner_manifest_free(m);
	m = parse_ok("{" BASE ", \"sandbox_provider\": \"landlock\"}");
	assert_true(runner_allow_run_command(m, false));
	runner_manifest_free(m);
	m = parse_ok("{" BASE ", \"sandbox_provider\": \"docker\", \"allow_run_command\": false}");
	assert_false(runner_allow_run_command(m, true)); /* an explicit no wins */
	runner_manifest_free(m);
	m = parse_ok("{" BASE ", \"allow_run_command\": true}");
	assert_true(runner_allow_run_command(m, false));
	runner_manifest_free(m);
}

static void test_transcript_path(void **state)
{
	char *p;

	(void)state;
	p = runner_transcript_path("/run/s", "abc");
	assert_string_equal(p, "/run/s/abc.transcript.json");
	free(p);
	p = runner_transcript_path(NULL, "abc");
	assert_string_equal(p, "./abc.transcript.json");
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal_defaults),
		cmocka_unit_test(test_all_fields),
		cmocka_unit_test(test_unknown_and_null),
		cmocka_unit_test(test_not_json),
		cmocka_unit_test(test_required),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_mcp_servers),
		cmocka_unit_test(test_session_ids),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_credential_builtin),
		cmocka_unit_test(test_credential_rejected),
		cmocka_unit_test(test_credential_host_override),
		cmocka_unit_test(test_run_command_gate),
		cmocka_unit_test(test_transcript_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
