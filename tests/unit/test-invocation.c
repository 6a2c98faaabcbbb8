/* adapter/invocation.h: the plan built from a profile and a request (every
 * rule), the sampling gate, credential names, session-id derivation and
 * the secrets a caller redacts. Shipped profiles come from the embedded catalogue; the rest
 * are written inline. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter/catalog.h"
#include "adapter/invocation.h"
#include "adapter/profile.h"
#include "adapter/session.h"
#include "adapter/strategy.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#define WORKDIR "/work/tree"
#define SESSION "/work/tree/.bernstein/runs/r1/s1"
#define STATE	SESSION "/home"

static struct catalog *cat;

static const char *host_env[] = {
	"PATH=/usr/bin:/bin",
	"HOME=/home/user",
	"LANG=C.UTF-8",
	"XDG_CONFIG_HOME=/home/user/.config",
	"CANARY_SECRET=hunter2-canary",
	"ANTHROPIC_API_KEY=sk-ant-host-key",
	"GATEWAY_KEY=gw-secret-value",
	"GITHUB_TOKEN=ghp_secret",
	"BERNSTEIN_ALLOWED_API_KEY_ENVS=GATEWAY_KEY",
	NULL,
};

static int setup(void **state)
{
	struct diag d;

	(void)state;
	if (catalog_load(NULL, NULL, &cat, &d) < 0) {
		fprintf(stderr, "catalog: %s\n", d.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cat = catalog_free(cat);
	return 0;
}

static const struct profile *shipped(const char *name)
{
	const struct registry_entry *e = catalog_find(cat, name);

	assert_non_null(e);
	assert_non_null(e->profile);
	return e->profile;
}

static struct profile *load(const char *name, const char *text)
{
	struct profile *p = NULL;
	struct diag d;

	if (profile_load_buf("mem.yaml", name, text, strlen(text), &p, &d) < 0)
		fail_msg("profile %s: %s:%u:%u: %s", name, d.file, d.line, d.col, d.msg);
	return p;
}

static void req_init(struct invocation_request *r, const struct profile *p, const char *prompt)
{
	memset(r, 0, sizeof(*r));
	r->profile = p;
	r->catalog = cat;
	r->prompt = prompt;
	r->dangerous = true;
	r->workdir = WORKDIR;
	r->session_dir = SESSION;
	r->host_env = host_env;
}

static int build(const struct invocation_request *r, struct invocation_plan *plan, struct diag *d)
{
	invocation_plan_init(plan);
	diag_clear(d);
	return invocation_build(r, plan, d);
}

static long idx(const struct strvec *sv, const char *s)
{
	return strvec_find(sv, s);
}

static const char *env_of(const struct invocation_plan *plan, const char *name)
{
	size_t n = strlen(name), i;

	for (i = 0; i < plan->env.nr; i++)
		if (strncmp(plan->env.v[i], name, n) == 0 && plan->env.v[i][n] == '=')
			return plan->env.v[i] + n + 1;
	return NULL;
}

/* The plan's file at path; fails the test when there is none. */
static const struct invocation_file *file_of(const struct invocation_plan *plan, const char *path)
{
	static const struct invocation_file none = {.path = NULL, .content = NULL};
	size_t i;

	for (i = 0; i < plan->n_files; i++)
		if (strcmp(plan->files[i].path, path) == 0)
			return &plan->files[i];
	fail_msg("the plan has no file '%s'", path);
	return &none;
}

static bool warned(const struct invocation_plan *plan, const char *text)
{
	size_t i;

	for (i = 0; i < plan->warnings.nr; i++)
		if (strstr(plan->warnings.v[i], text))
			return true;
	return false;
}

/* The argv as one string, words separated by '|' (argv[0] left out). */
static char *joined(const struct invocation_plan *plan)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t i;

	for (i = 1; i < plan->argv.nr; i++)
		(void)sbuf_addf(&sb, "%s%s", i > 1 ? "|" : "", plan->argv.v[i]);
	return sbuf_detach(&sb, NULL);
}

static void assert_argv(const struct invocation_plan *plan, const char *want)
{
	char *got = joined(plan);

	if (strcmp(got, want) != 0)
		fail_msg("argv\n  got:  %s\n  want: %s", got, want);
	free(got);
}

/* ---- session ids ---- */

static void test_session_id_vectors(void **state)
{
	char out[SESSION_UUID_LEN + 1];

	(void)state;
	assert_int_equal(session_id_derive("conv-1", "codex", out), 0);
	assert_string_equal(out, "9856177f-240e-59dd-b924-eea87f1cdd49");
	assert_int_equal(session_id_derive("conv-1", "claude", out), 0);
	assert_string_equal(out, "b19021e8-3303-540b-b04b-fb960463e3c1");
	assert_int_equal(session_id_derive("qa-abc123", "codex", out), 0);
	assert_string_equal(out, "34dd78bc-f03b-5824-8896-99ec9c8c72b2");
	assert_true(session_id_is_uuid(out));
	assert_int_equal(session_id_derive("", "codex", out), -EINVAL);
	assert_int_equal(session_id_derive("x", NULL, out), -EINVAL);

	assert_true(session_id_is_uuid("B19021E8-3303-540B-B04B-FB960463E3C1"));
	assert_false(session_id_is_uuid("b19021e8-3303-540b-b04b-fb960463e3c"));
	assert_false(session_id_is_uuid("b19021e8x3303-540b-b04b-fb960463e3c1"));
	assert_false(session_id_is_uuid("g19021e8-3303-540b-b04b-fb960463e3c1"));

	assert_int_equal(session_id_check("ses_01JABC", NULL), 0);
	assert_int_equal(session_id_check("-x", NULL), -EINVAL);
	assert_int_equal(session_id_check("a b", NULL), -EINVAL);
	assert_int_equal(session_id_check("a\nb", NULL), -EINVAL);
	assert_int_equal(session_id_check("", NULL), -EINVAL);
}

/* ---- the sampling gate ---- */

static const char gate_yaml[] = "name: %s\n"
				"display_name: Gate\n"
				"shape: module\n"
				"invocation:\n"
				"  binary: gate-agent\n"
				"  prompt_positional: true\n"
				"capabilities:\n%s";

static struct profile *gate_profile(const char *caps)
{
	char buf[1024];

	(void)snprintf(buf, sizeof(buf), gate_yaml, "gate", caps);
	return load("gate", buf);
}

static void set(struct invocation_sampling *s, const char *k, const char *v)
{
	struct diag d;

	if (invocation_sampling_set(s, k, v, &d) < 0)
		fail_msg("--set %s=%s: %s", k, v, d.msg);
}

static void test_sampling_set(void **state)
{
	struct invocation_sampling s = {0};
	struct diag d;

	(void)state;
	set(&s, "temperature", "0.5");
	set(&s, "top_p", "1");
	set(&s, "top_k", "40");
	set(&s, "max_tokens", "1024");
	set(&s, "base_url", "http://127.0.0.1:8080/v1");
	set(&s, "api_key_env", "OPENAI_API_KEY");
	assert_int_equal(s.set, (1u << _SAMPLING_KEY_MAX) - 1);
	assert_true(s.temperature == 0.5);
	assert_int_equal(s.top_k, 40);
	assert_int_equal(s.max_tokens, 1024);

	assert_int_equal(invocation_sampling_set(&s, "seed", "1", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "unknown parameter 'seed'"));
	assert_int_equal(invocation_sampling_set(&s, "temperature", "hot", &d), -EINVAL);
	assert_int_equal(invocation_sampling_set(&s, "temperature", "-1", &d), -EINVAL);
	assert_int_equal(invocation_sampling_set(&s, "top_p", "1.5", &d), -EINVAL);
	assert_int_equal(invocation_sampling_set(&s, "top_k", "2.5", &d), -EINVAL);
	assert_int_equal(invocation_sampling_set(&s, "max_tokens", "0", &d), -EINVAL);
	assert_int_equal(invocation_sampling_set(&s, "base_url", "ftp://x", &d), -EINVAL);
	assert_int_equal(invocation_sampling_set(&s, "base_url", "http://a\"b", &d), -EINVAL);
	assert_int_equal(invocation_sampling_set(&s, "base_url", "http://", &d), -EINVAL);
	assert_int_equal(invocation_sampling_set(&s, "api_key_env", "", &d), -EINVAL);
	assert_int_equal(sampling_key_from_string("top_k"), SAMPLING_TOP_K);
	assert_string_equal(sampling_key_to_string(SAMPLING_API_KEY_ENV), "api_key_env");
}

static void test_sampling_gate(void **state)
{
	struct invocation_sampling s = {0};
	struct profile *none, *narrow, *endpoint, *coarse;
	struct diag d;

	(void)state;
	none = gate_profile("  tool_use: true\n");
	narrow = gate_profile("  supports_max_tokens: true\n");
	endpoint = load("gate", "name: gate\ndisplay_name: G\nshape: module\ninvocation:\n"
				"  binary: g\n  prompt_positional: true\ncapabilities:\n"
				"  supports_endpoint: true\n  supports_top_k: true\n");
	coarse = gate_profile("  supports_sampling_params: true\n");

	/* nothing requested: nothing to refuse */
	assert_int_equal(invocation_check_sampling(none, &s, NULL), 0);

	set(&s, "base_url", "https://gw.example/v1");
	set(&s, "temperature", "0.2");
	set(&s, "max_tokens", "100");
	assert_int_equal(invocation_check_sampling(none, &s, &d), -EPERM);
	assert_string_equal(
		d.msg,
		"Adapter 'gate' does not declare the 'supports_sampling_params' capability but sampling/endpoint parameters were requested: temperature, max_tokens, base_url. Refusing to spawn instead of silently dropping them.");

	/* only the unsupported keys are listed */
	assert_int_equal(invocation_check_sampling(narrow, &s, &d), -EPERM);
	assert_non_null(strstr(d.msg, "requested: temperature, base_url."));
	assert_null(strstr(d.msg, "max_tokens"));

	memset(&s, 0, sizeof(s));
	set(&s, "max_tokens", "100");
	assert_int_equal(invocation_check_sampling(narrow, &s, NULL), 0);

	memset(&s, 0, sizeof(s));
	set(&s, "base_url", "https://gw.example/v1");
	set(&s, "api_key_env", "OPENAI_API_KEY");
	set(&s, "top_k", "5");
	assert_int_equal(invocation_check_sampling(endpoint, &s, NULL), 0);
	set(&s, "top_p", "0.9");
	assert_int_equal(invocation_check_sampling(endpoint, &s, &d), -EPERM);
	assert_non_null(strstr(d.msg, "were requested: top_p. Refusing"));

	/* the coarse capability admits every key */
	set(&s, "temperature", "1");
	set(&s, "max_tokens", "7");
	assert_int_equal(invocation_check_sampling(coarse, &s, NULL), 0);

	profile_free(none);
	profile_free(narrow);
	profile_free(endpoint);
	profile_free(coarse);
}

/* A factory profile that admits a sampling key has no spelling for it:
 * refused, never dropped. */
static void test_sampling_never_dropped(void **state)
{
	struct profile *p = load("narrow", "name: narrow\ndisplay_name: N\nshape: factory\n"
					   "invocation:\n  binary: narrow-agent\n"
					   "  prompt_positional: true\n"
					   "capabilities:\n  supports_max_tokens: true\n");
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;

	(void)state;
	req_init(&r, p, "hi");
	set(&r.sampling, "max_tokens", "10");
	assert_int_equal(build(&r, &plan, &d), -EPERM);
	assert_non_null(strstr(d.msg, "admits 'max_tokens' but its profile declares no way"));
	assert_int_equal(plan.argv.nr, 0);
	invocation_plan_release(&plan);
	profile_free(p);
}

/* ---- endpoints and credentials ---- */

static void test_endpoint_claude(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	size_t i;

	(void)state;
	req_init(&r, shipped("claude"), "do it");
	set(&r.sampling, "base_url", "http://127.0.0.1:9/v1");
	set(&r.sampling, "api_key_env", "GATEWAY_KEY");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(plan.endpoint);
	assert_string_equal(env_of(&plan, "ANTHROPIC_BASE_URL"), "http://127.0.0.1:9/v1");
	assert_string_equal(env_of(&plan, "ANTHROPIC_API_KEY"), "gw-secret-value");
	assert_string_equal(env_of(&plan, "GATEWAY_KEY"), "gw-secret-value");
	/* the key never goes on argv or into files */
	for (i = 0; i < plan.argv.nr; i++)
		assert_null(strstr(plan.argv.v[i], "gw-secret-value"));
	for (i = 0; i < plan.n_files; i++)
		assert_null(strstr(plan.files[i].content, "gw-secret-value"));
	assert_true(idx(&plan.secrets, "gw-secret-value") >= 0);
	assert_null(env_of(&plan, "CANARY_SECRET"));
	assert_null(env_of(&plan, "GITHUB_TOKEN"));
	assert_null(env_of(&plan, "BERNSTEIN_ALLOWED_API_KEY_ENVS"));
	invocation_plan_release(&plan);

	/* base_url alone: the spelling needs api_key_env too */
	req_init(&r, shipped("claude"), "do it");
	set(&r.sampling, "base_url", "http://127.0.0.1:9/v1");
	assert_int_equal(build(&r, &plan, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "needs api_key_env"));
	invocation_plan_release(&plan);
}

static void test_credentials(void **state)
{
	static const char *no_override[] = {"PATH=/bin", "GATEWAY_KEY=v-12345", NULL};
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;

	(void)state;
	req_init(&r, shipped("claude"), "x");
	set(&r.sampling, "base_url", "http://h/v1");
	set(&r.sampling, "api_key_env", "GITHUB_TOKEN");
	assert_int_equal(build(&r, &plan, &d), -EPERM);
	assert_non_null(strstr(d.msg, "'GITHUB_TOKEN' is not an allowed credential variable name"));
	invocation_plan_release(&plan);

	/* GATEWAY_KEY is admitted by the host list only */
	req_init(&r, shipped("claude"), "x");
	r.host_env = no_override;
	set(&r.sampling, "base_url", "http://h/v1");
	set(&r.sampling, "api_key_env", "GATEWAY_KEY");
	assert_int_equal(build(&r, &plan, &d), -EPERM);
	invocation_plan_release(&plan);
	r.host_env = host_env;
	assert_int_equal(build(&r, &plan, &d), 0);
	invocation_plan_release(&plan);

	/* allowed but not set */
	req_init(&r, shipped("claude"), "x");
	set(&r.sampling, "base_url", "http://h/v1");
	set(&r.sampling, "api_key_env", "OPENAI_API_KEY");
	assert_int_equal(build(&r, &plan, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "'OPENAI_API_KEY' but it is not set"));
	invocation_plan_release(&plan);
}

/* Every shipped profile that declares an endpoint takes base_url +
 * api_key_env, the six installable CLIs among them. */
static void test_endpoint_all_six(void **state)
{
	static const char *const six[] = {"claude", "codex", "gemini", "qwen", "opencode", "pi"};
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(six) / sizeof(six[0]); i++) {
		req_init(&r, shipped(six[i]), "write hello.txt");
		r.model = "fake-model";
		set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
		set(&r.sampling, "api_key_env", "ANTHROPIC_API_KEY");
		if (build(&r, &plan, &d) < 0)
			fail_msg("%s: %s", six[i], d.msg);
		assert_true(plan.endpoint);
		for (j = 0; j < plan.argv.nr; j++)
			assert_null(strstr(plan.argv.v[j], "sk-ant-host-key"));
		for (j = 0; j < plan.n_files; j++)
			assert_null(strstr(plan.files[j].content, "sk-ant-host-key"));
		/* the URL reaches the agent through env, args or a file */
		{
			bool seen = false;

			for (j = 0; j < plan.env.nr; j++)
				seen |= strstr(plan.env.v[j], "127.0.0.1:4000") != NULL;
			for (j = 0; j < plan.n_files; j++)
				seen |= strstr(plan.files[j].content, "127.0.0.1:4000") != NULL;
			assert_true(seen);
		}
		assert_string_equal(env_of(&plan, "ANTHROPIC_API_KEY"), "sk-ant-host-key");
		invocation_plan_release(&plan);
	}

	/* codex: the provider table replaces the plain config file */
	req_init(&r, shipped("codex"), "x");
	r.model = "m1";
	set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
	set(&r.sampling, "api_key_env", "GATEWAY_KEY");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.n_files, 1);
	assert_non_null(
		strstr(file_of(&plan, ".codex/config.toml")->content, "env_key = \"GATEWAY_KEY\""));
	assert_non_null(strstr(file_of(&plan, ".codex/config.toml")->content,
			       "base_url = \"http://127.0.0.1:4000/v1\""));
	invocation_plan_release(&plan);

	/* opencode: the model is spelled local/MODEL */
	req_init(&r, shipped("opencode"), "x");
	r.model = "qwen3";
	set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
	set(&r.sampling, "api_key_env", "GATEWAY_KEY");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "run|-m|local/qwen3|--format|json|--auto|--|x");
	assert_string_equal(plan.model, "qwen3");
	assert_false(plan.model_defaulted);
	invocation_plan_release(&plan);

	/* qwen: endpoint args, and the prompt on stdin (prompt_guard long-prompt) */
	req_init(&r, shipped("qwen"), "x");
	set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
	set(&r.sampling, "api_key_env", "GATEWAY_KEY");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "-o|stream-json|--auth-type|openai|--yolo");
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_STDIN);
	assert_string_equal(env_of(&plan, "OPENAI_API_KEY"), "gw-secret-value");
	invocation_plan_release(&plan);
}

/* Without -m, an endpoint's templates get the profile's default model:
 * every one of the six works with base_url + api_key_env alone. */
static void test_endpoint_default_model(void **state)
{
	static const char *const six[] = {"claude", "codex", "gemini", "qwen", "opencode", "pi"};
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(six) / sizeof(six[0]); i++) {
		req_init(&r, shipped(six[i]), "write hello.txt");
		set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
		set(&r.sampling, "api_key_env", "GATEWAY_KEY");
		if (build(&r, &plan, &d) < 0)
			fail_msg("%s without -m: %s", six[i], d.msg);
		invocation_plan_release(&plan);
	}

	/* codex: the known slug, on argv (its tools depend on it) */
	req_init(&r, shipped("codex"), "x");
	set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
	set(&r.sampling, "api_key_env", "GATEWAY_KEY");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(
		&plan,
		"exec|-m|gpt-5.5|--json|--skip-git-repo-check|--dangerously-bypass-approvals-and-sandbox|--|x");
	assert_string_equal(plan.model, "gpt-5.5");
	assert_true(plan.model_defaulted);
	invocation_plan_release(&plan);
	/* -m wins */
	r.model = "o4-mini";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(idx(&plan.argv, "o4-mini") >= 0);
	assert_true(idx(&plan.argv, "gpt-5.5") < 0);
	assert_false(plan.model_defaulted);
	invocation_plan_release(&plan);
	/* no endpoint: the agent's own default (no -m) */
	req_init(&r, shipped("codex"), "x");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(idx(&plan.argv, "-m") < 0);
	assert_null(plan.model);
	invocation_plan_release(&plan);

	/* opencode and pi: the default in the argv and the provider file */
	req_init(&r, shipped("opencode"), "x");
	set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
	set(&r.sampling, "api_key_env", "GATEWAY_KEY");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "run|-m|local/gpt-5.5|--format|json|--auto|--|x");
	assert_non_null(strstr(file_of(&plan, ".config/opencode/opencode.json")->content,
			       "\"models\": {\"gpt-5.5\": {\"name\": \"gpt-5.5\"}}"));
	invocation_plan_release(&plan);
	req_init(&r, shipped("pi"), "x");
	set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
	set(&r.sampling, "api_key_env", "GATEWAY_KEY");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "--model|gpt-5.5|--mode|json|--provider|local|-p");
	assert_non_null(strstr(file_of(&plan, ".pi/agent/models.json")->content,
			       "[{\"id\": \"gpt-5.5\"}]"));
	invocation_plan_release(&plan);

	/* a profile without a default still needs -m when its template does */
	{
		struct profile *p = load(
			"tmpl",
			"name: tmpl\ndisplay_name: T\nshape: factory\n"
			"invocation: {binary: t, prompt_positional: true}\n"
			"capabilities: {supports_endpoint: true}\n"
			"runtime: {endpoint: {env: {M: '{model}', U: '{base_url}', K: '{api_key}'}}}\n");

		req_init(&r, p, "x");
		set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
		set(&r.sampling, "api_key_env", "GATEWAY_KEY");
		assert_int_equal(build(&r, &plan, &d), -EINVAL);
		assert_string_equal(
			d.msg,
			"profile 'tmpl': runtime.endpoint.env.M needs a model (its template uses {model})");
		invocation_plan_release(&plan);
		profile_free(p);
	}
}

/* base_url is checked where it enters: --set, and a request built by hand. */
static void test_base_url_rules(void **state)
{
	struct invocation_sampling s = {0};
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;

	(void)state;
	assert_int_equal(invocation_sampling_set(&s, "base_url", "http://u:p@h:4000/v1", &d),
			 -EINVAL);
	assert_string_equal(
		d.msg,
		"base_url 'http://***@h:4000/v1': credentials in the URL (user@host) are not allowed; give the key with api_key_env");
	assert_int_equal(invocation_sampling_set(&s, "base_url", "http://h:99999/v1", &d), -EINVAL);
	assert_string_equal(
		d.msg,
		"base_url 'http://h:99999/v1': invalid port '99999' (a number from 1 to 65535)");
	assert_int_equal(invocation_sampling_set(&s, "base_url", "http://h/v1?x=1", &d), -EINVAL);
	assert_int_equal(invocation_sampling_set(&s, "base_url", "http://h_/v1", &d), 0);
	assert_int_equal(invocation_sampling_set(&s, "base_url", "https://[::1]:8443/v1", &d), 0);
	assert_string_equal(s.base_url, "https://[::1]:8443/v1");

	/* a request that skipped --set is checked by the builder */
	req_init(&r, shipped("claude"), "x");
	r.sampling.set = (1u << SAMPLING_BASE_URL) | (1u << SAMPLING_API_KEY_ENV);
	r.sampling.base_url = "http://h:0/v1";
	r.sampling.api_key_env = "GATEWAY_KEY";
	assert_int_equal(build(&r, &plan, &d), -EINVAL);
	assert_string_equal(
		d.msg, "base_url 'http://h:0/v1': invalid port '0' (a number from 1 to 65535)");
	assert_int_equal(plan.argv.nr, 0);
	invocation_plan_release(&plan);
}

/* ---- the hooks channel ---- */

#define HOOKS_PROFILE                                                                              \
	"name: hk\ndisplay_name: H\nshape: factory\n"                                              \
	"invocation: {binary: hk-agent, prompt_flag: -p}\n"                                        \
	"runtime:\n  home: isolated\n"                                                             \
	"  files:\n    - {path: .hk/settings.json, content: '{\"telemetry\": false}'}\n"           \
	"    - {path: .hk/other.json, content: '{}'}\n"                                            \
	"  hooks:\n    args: [--hook-socket, '{hooks_socket}']\n"                                  \
	"    env: {HK_HOOK: '{hook_command} --event Stop'}\n"                                      \
	"    files:\n      - path: .hk/settings.json\n        content: |\n"                        \
	"          {\"hooks\": {\"Stop\": [{\"command\": \"{hook_command}\"}]}}\n"

static void test_hooks_channel(void **state)
{
	struct profile *p = load("hk", HOOKS_PROFILE);
	struct adapter_strategy hooks = strategy_default, none = strategy_default;
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	size_t i;

	(void)state;
	hooks.event_channel = EVENT_CHANNEL_HOOKS;
	req_init(&r, p, "go");
	r.strategy = &hooks;
	r.bernstein_exe = "/opt/bern/bin/bernstein";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(plan.hooks);
	assert_string_equal(plan.hooks_socket, SESSION "/hooks.sock");
	assert_argv(&plan, "--hook-socket|" SESSION "/hooks.sock|-p|go");
	assert_string_equal(env_of(&plan, "HK_HOOK"),
			    "'/opt/bern/bin/bernstein' hook-post --socket '" SESSION
			    "/hooks.sock' --event Stop");
	/* the hooks file replaces the plain one of the same path */
	assert_int_equal(plan.n_files, 2);
	assert_string_equal(
		file_of(&plan, ".hk/settings.json")->content,
		"{\"hooks\": {\"Stop\": [{\"command\": \"'/opt/bern/bin/bernstein' hook-post --socket '" SESSION
		"/hooks.sock'\"}]}}\n");
	assert_string_equal(file_of(&plan, ".hk/other.json")->content, "{}");
	for (i = 0; i < plan.warnings.nr; i++) /* the binary is missing here, nothing else */
		assert_null(strstr(plan.warnings.v[i], "hooks"));
	/* the stdout reader is unchanged (none) */
	assert_int_equal(plan.dialect, DIALECT_NONE);
	invocation_plan_release(&plan);

	/* not the hooks channel: nothing of it */
	r.strategy = &none;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_false(plan.hooks);
	assert_null(plan.hooks_socket);
	assert_argv(&plan, "-p|go");
	assert_null(env_of(&plan, "HK_HOOK"));
	assert_string_equal(file_of(&plan, ".hk/settings.json")->content, "{\"telemetry\": false}");
	invocation_plan_release(&plan);

	/* a binary path the command cannot quote */
	r.strategy = &hooks;
	r.bernstein_exe = "/opt/it's/bernstein";
	assert_int_equal(build(&r, &plan, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "the hook command cannot name '/opt/it's/bernstein'"));
	invocation_plan_release(&plan);
	r.bernstein_exe = "bernstein";
	assert_int_equal(build(&r, &plan, &d), -EINVAL);
	invocation_plan_release(&plan);
	/* without bernstein_exe: this binary */
	r.bernstein_exe = NULL;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_non_null(strstr(env_of(&plan, "HK_HOOK"), "/test-invocation' hook-post --socket"));
	invocation_plan_release(&plan);
	profile_free(p);

	/* the hooks channel without runtime.hooks: a warning, stdout only */
	req_init(&r, shipped("composio"), "go");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.strategy.event_channel, EVENT_CHANNEL_HOOKS);
	assert_false(plan.hooks);
	assert_true(
		idx(&plan.warnings,
		    "event channel hooks: profile 'composio' declares no runtime.hooks; reading its output only") >=
		0);
	invocation_plan_release(&plan);
	/* the built-in runner reports on stdout: no hooks */
	req_init(&r, shipped("openai_agents"), "go");
	r.model = "m";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.strategy.event_channel, EVENT_CHANNEL_HOOKS);
	assert_false(plan.hooks);
	for (i = 0; i < plan.warnings.nr; i++)
		assert_null(strstr(plan.warnings.v[i], "hooks"));
	invocation_plan_release(&plan);
}

/* ---- the environment ---- */

static void test_env_isolated(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	size_t i;

	(void)state;
	req_init(&r, shipped("claude"), "hello");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_string_equal(plan.state_dir, STATE);
	assert_string_equal(env_of(&plan, "HOME"), STATE);
	assert_string_equal(env_of(&plan, "XDG_CONFIG_HOME"), STATE "/.config");
	assert_string_equal(env_of(&plan, "DO_NOT_TRACK"), "1");
	assert_string_equal(env_of(&plan, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), "1");
	assert_string_equal(env_of(&plan, "PATH"), "/usr/bin:/bin");
	/* declared pass-through */
	assert_string_equal(env_of(&plan, "ANTHROPIC_API_KEY"), "sk-ant-host-key");
	assert_true(idx(&plan.secrets, "sk-ant-host-key") >= 0);
	assert_null(env_of(&plan, "CANARY_SECRET"));
	for (i = 0; i < plan.env.nr; i++) {
		assert_null(strstr(plan.env.v[i], "hunter2"));
		if (i)
			assert_true(strcmp(plan.env.v[i - 1], plan.env.v[i]) < 0);
	}
	assert_string_equal(plan.cwd, WORKDIR);
	invocation_plan_release(&plan);

	/* files go to the state directory, expanded */
	req_init(&r, shipped("codex"), "hello");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_string_equal(env_of(&plan, "CODEX_HOME"), STATE "/.codex");
	assert_non_null(file_of(&plan, ".codex/config.toml"));
	assert_int_equal(file_of(&plan, ".codex/config.toml")->base, INVOCATION_BASE_STATE);
	assert_int_equal(file_of(&plan, ".codex/config.toml")->mode, 0600);
	invocation_plan_release(&plan);

	/* a reused state directory (resume) */
	req_init(&r, shipped("claude"), "hello");
	r.state_dir = "/work/tree/.bernstein/runs/r0/s0/home";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(plan.state_reused);
	assert_string_equal(env_of(&plan, "HOME"), "/work/tree/.bernstein/runs/r0/s0/home");
	invocation_plan_release(&plan);

	/* home: inherit keeps the user's HOME and XDG directories */
	req_init(&r, shipped("aider"), "hello");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_null(plan.state_dir);
	assert_string_equal(env_of(&plan, "HOME"), "/home/user");
	assert_string_equal(env_of(&plan, "XDG_CONFIG_HOME"), "/home/user/.config");
	invocation_plan_release(&plan);
}

/* ---- resume ---- */

static void test_resume_by_strategy(void **state)
{
	struct adapter_strategy unsupported = strategy_default;
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	struct profile *p;

	(void)state;
	/* flag: before the prompt */
	req_init(&r, shipped("claude"), "go on");
	r.resume_id = "819ea001-cdcb-46b3-8cd8-3ed48e47f3a7";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(
		&plan,
		"--output-format|stream-json|--verbose|--dangerously-skip-permissions|--resume|819ea001-cdcb-46b3-8cd8-3ed48e47f3a7|-p|--|go on");
	assert_string_equal(plan.resume_id, "819ea001-cdcb-46b3-8cd8-3ed48e47f3a7");
	invocation_plan_release(&plan);

	/* subcommand: codex exec [opts] resume ID PROMPT */
	req_init(&r, shipped("codex"), "go on");
	r.model = "gpt-5";
	r.resume_id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(
		&plan,
		"exec|-m|gpt-5|--json|--skip-git-repo-check|--dangerously-bypass-approvals-and-sandbox|resume|0199a213-81c0-7800-8aa1-bbab2a035a53|--|go on");
	invocation_plan_release(&plan);

	/* unsupported: a fresh session and a warning */
	req_init(&r, shipped("claude"), "go on");
	unsupported.dangerous_mode = DANGEROUS_MODE_CLI_FLAG;
	r.strategy = &unsupported;
	r.resume_id = "819ea001-cdcb-46b3-8cd8-3ed48e47f3a7";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(idx(&plan.argv, "--resume") < 0);
	assert_null(plan.resume_id);
	assert_true(warned(&plan, "resume unsupported by claude: starting a fresh session"));
	invocation_plan_release(&plan);

	/* an adapter whose matrix row says unsupported */
	req_init(&r, shipped("aider"), "go on");
	r.resume_id = "abc";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(warned(&plan, "resume unsupported by aider: starting a fresh session"));
	invocation_plan_release(&plan);

	/* a bad id is refused */
	req_init(&r, shipped("claude"), "go on");
	r.resume_id = "--help";
	assert_int_equal(build(&r, &plan, &d), -EINVAL);
	invocation_plan_release(&plan);

	/* flag-pair, and the other positions */
	p = load(
		"pair",
		"name: pair\ndisplay_name: P\nshape: factory\n"
		"strategy: {resume: flag-pair, dangerous_mode: always-on, event_channel: text-signals}\n"
		"invocation:\n  binary: pair-agent\n  subcommands: [run]\n"
		"  prompt_positional: true\n  extra_args: [--quiet]\n"
		"runtime:\n  resume: {args: [--continue-from, \"{session_id}\", --fork], position: after-subcommands}\n");
	req_init(&r, p, "next");
	r.resume_id = "s-1";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "run|--continue-from|s-1|--fork|--quiet|next");
	assert_int_equal(plan.dialect, DIALECT_TEXT_SIGNALS);
	invocation_plan_release(&plan);
	profile_free(p);

	p = load("tail",
		 "name: tail\ndisplay_name: T\nshape: factory\n"
		 "strategy: {resume: flag, dangerous_mode: always-on, event_channel: none}\n"
		 "invocation:\n  binary: tail-agent\n  prompt_flag: -f\n"
		 "runtime:\n  resume: {args: [--resume, \"{session_id}\"], position: end}\n");
	req_init(&r, p, "script");
	r.resume_id = "s-2";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "-f|script|--resume|s-2");
	assert_int_equal(plan.dialect, DIALECT_NONE);
	invocation_plan_release(&plan);
	profile_free(p);
}

/* ---- dangerous mode ---- */

static void test_dangerous_by_strategy(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;

	(void)state;
	/* cli-flag: the args, and the env declared with them */
	req_init(&r, shipped("claude"), "p");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(idx(&plan.argv, "--dangerously-skip-permissions") > 0);
	assert_string_equal(env_of(&plan, "IS_SANDBOX"), "1");
	assert_true(plan.dangerous);
	assert_int_equal(plan.warnings.nr, 1); /* the binary is not installed here */
	invocation_plan_release(&plan);

	/* not requested: nothing */
	r.dangerous = false;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(idx(&plan.argv, "--dangerously-skip-permissions") < 0);
	assert_null(env_of(&plan, "IS_SANDBOX"));
	assert_false(plan.dangerous);
	invocation_plan_release(&plan);

	/* env-var: goose */
	req_init(&r, shipped("goose"), "p");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_string_equal(env_of(&plan, "GOOSE_MODE"), "auto");
	assert_argv(&plan, "run|--instruction|p");
	invocation_plan_release(&plan);

	/* always-on: pi adds nothing, warns nothing */
	req_init(&r, shipped("pi"), "p");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "--mode|json|-p");
	assert_false(warned(&plan, "dangerous"));
	invocation_plan_release(&plan);

	/* unsupported: spawn without it, with a warning */
	req_init(&r, shipped("aider"), "p");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(warned(&plan, "dangerous mode unsupported by aider: spawning without it"));
	invocation_plan_release(&plan);
}

/* ---- pre-assigned session ids ---- */

static void test_session_preassign(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;

	(void)state;
	req_init(&r, shipped("claude"), "p");
	r.session_id = "conv-1";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_string_equal(plan.session_id, "b19021e8-3303-540b-b04b-fb960463e3c1");
	assert_argv(
		&plan,
		"--output-format|stream-json|--verbose|--dangerously-skip-permissions|--session-id|b19021e8-3303-540b-b04b-fb960463e3c1|-p|--|p");
	invocation_plan_release(&plan);

	/* a UUID is used as given (lower-cased) */
	r.session_id = "B19021E8-3303-540B-B04B-FB960463E3C1";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_string_equal(plan.session_id, "b19021e8-3303-540b-b04b-fb960463e3c1");
	invocation_plan_release(&plan);

	/* ignored when resuming */
	r.resume_id = "819ea001-cdcb-46b3-8cd8-3ed48e47f3a7";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_null(plan.session_id);
	assert_true(idx(&plan.argv, "--session-id") < 0);
	assert_true(warned(&plan, "ignored when resuming"));
	invocation_plan_release(&plan);

	/* codex has no spelling: dropped with a warning */
	req_init(&r, shipped("codex"), "p");
	r.session_id = "conv-1";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_null(plan.session_id);
	assert_true(warned(&plan, "session id pre-assignment unsupported by codex"));
	invocation_plan_release(&plan);
}

/* ---- the prompt ---- */

static char *big_prompt(size_t n)
{
	char *s = xmalloc(n + 1);

	memset(s, 'x', n);
	s[n] = '\0';
	return s;
}

static void test_long_prompt(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	char *fits = big_prompt(INVOCATION_MAX_ARG_STRLEN - 1);
	char *over = big_prompt(INVOCATION_MAX_ARG_STRLEN);
	struct profile *p;

	(void)state;
	/* MAX_ARG_STRLEN counts the NUL: 131071 bytes still fit */
	req_init(&r, shipped("claude"), fits);
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_ARGV);
	assert_string_equal(plan.argv.v[plan.argv.nr - 1], fits);
	assert_null(plan.stdin_path);
	invocation_plan_release(&plan);

	/* claude: stdin, the tokens [-p] */
	req_init(&r, shipped("claude"), over);
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_STDIN);
	assert_true(plan.prompt_too_long);
	assert_string_equal(plan.stdin_path, SESSION "/prompt.txt");
	assert_string_equal(plan.argv.v[plan.argv.nr - 1], "-p");
	assert_int_equal(file_of(&plan, "prompt.txt")->len, INVOCATION_MAX_ARG_STRLEN);
	assert_int_equal(file_of(&plan, "prompt.txt")->base, INVOCATION_BASE_SESSION);
	assert_int_equal(file_of(&plan, "prompt.txt")->mode, 0600);
	invocation_plan_release(&plan);

	/* gemini: stdin without -p */
	req_init(&r, shipped("gemini"), over);
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "-o|stream-json|--yolo|--skip-trust");
	invocation_plan_release(&plan);

	/* the total: a shorter prompt that does not fit with the rest */
	req_init(&r, shipped("codex"), fits);
	r.arg_total_max = INVOCATION_ARG_HEADROOM + 64 * 1024;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_STDIN);
	assert_string_equal(plan.argv.v[plan.argv.nr - 1], "-");
	invocation_plan_release(&plan);

	/* a smaller per-string limit, given by the caller */
	req_init(&r, shipped("codex"), "0123456789");
	r.arg_strlen_max = 10;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_STDIN);
	invocation_plan_release(&plan);

	/* via: file, with {prompt_file} */
	p = load(
		"viafile",
		"name: viafile\ndisplay_name: V\nshape: factory\n"
		"invocation:\n  binary: v-agent\n  prompt_flag: --message\n"
		"runtime:\n  long_prompt: {via: file, args: [--message-file, \"{prompt_file}\"]}\n");
	req_init(&r, p, over);
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_FILE);
	assert_null(plan.stdin_path);
	assert_argv(&plan, "--message-file|" SESSION "/prompt.txt");
	invocation_plan_release(&plan);
	req_init(&r, p, "short");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "--message|short");
	invocation_plan_release(&plan);
	profile_free(p);

	/* no long_prompt: refused */
	req_init(&r, shipped("aider"), over);
	assert_int_equal(build(&r, &plan, &d), -E2BIG);
	assert_non_null(strstr(d.msg, "declares no runtime.long_prompt"));
	invocation_plan_release(&plan);

	/* prompt_file_flag: always a file */
	req_init(&r, shipped("junie"), "short");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_FILE);
	assert_string_equal(plan.argv.v[plan.argv.nr - 1], SESSION "/prompt.txt");
	assert_string_equal(file_of(&plan, "prompt.txt")->content, "short");
	invocation_plan_release(&plan);

	free(fits);
	free(over);
}

/* ---- attachments ---- */

static void test_attachments(void **state)
{
	char dir[] = "/tmp/test-invocation.XXXXXX", path[64];
	const char *att[1];
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/shot.png", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\x89PNG", 4), 4);
	(void)close(fd);
	att[0] = path;

	req_init(&r, shipped("qwen"), "describe it");
	r.attachments = att;
	r.n_attachments = 1;
	assert_int_equal(build(&r, &plan, &d), -EPERM);
	assert_string_equal(
		d.msg,
		"adapter 'qwen' does not support multimodal attachments; adapters that could take them: antigravity, claude, gemini");
	invocation_plan_release(&plan);

	req_init(&r, shipped("claude"), "describe it");
	r.attachments = att;
	r.n_attachments = 1;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_non_null(strstr(plan.argv.v[plan.argv.nr - 1], path));
	assert_non_null(strstr(plan.argv.v[plan.argv.nr - 1], "describe it"));
	invocation_plan_release(&plan);

	(void)unlink(path);
	assert_int_equal(build(&r, &plan, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "cannot read attachment"));
	invocation_plan_release(&plan);
	(void)rmdir(dir);
}

/* ---- model, binary, modules ---- */

static void test_model_and_binary(void **state)
{
	struct profile *p;
	struct strvec ref = STRVEC_INIT;
	struct invocation_request r;
	struct invocation_plan plan;
	struct profile_vars vars = {{0}};
	struct diag d;
	size_t i;

	(void)state;
	req_init(&r, shipped("claude"), "p");
	r.model = "sonnet";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(idx(&plan.argv, "--model"), 1);
	assert_string_equal(plan.argv.v[2], "claude-sonnet-4-6");
	assert_false(plan.binary_found);
	assert_string_equal(plan.argv.v[0], "claude");
	assert_true(warned(&plan, "agent binary 'claude' not found on PATH"));
	invocation_plan_release(&plan);
	r.model = "-x";
	assert_int_equal(build(&r, &plan, &d), -EINVAL);
	invocation_plan_release(&plan);
	r.model = "a\"b";
	assert_int_equal(build(&r, &plan, &d), -EINVAL);
	invocation_plan_release(&plan);

	/* a profile without runtime gives profile_build_argv()'s argv, with
	 * argv[0] resolved on PATH */
	p = load(
		"plain",
		"name: plain\ndisplay_name: P\nshape: factory\n"
		"strategy: {resume: unsupported, dangerous_mode: unsupported, event_channel: text-signals}\n"
		"invocation:\n  binary: sh\n  subcommands: [sub]\n  model_flag: --model\n"
		"  prompt_flag: --prompt\n  extra_args: [--x, \"{workdir}\"]\n");
	req_init(&r, p, "the prompt");
	r.model = "m";
	r.dangerous = false;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(plan.binary_found);
	assert_true(plan.argv.v[0][0] == '/');
	vars.v[PH_WORKDIR] = WORKDIR;
	assert_int_equal(profile_build_argv(p, NULL, "m", "the prompt", &vars, &ref), 0);
	assert_int_equal(ref.nr, plan.argv.nr);
	for (i = 1; i < ref.nr; i++)
		assert_string_equal(ref.v[i], plan.argv.v[i]);
	assert_int_equal(plan.warnings.nr, 0);
	strvec_clear(&ref);
	invocation_plan_release(&plan);

	/* a path given by the caller overrides the environment's PATH */
	r.path_env = "/nonexistent";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_false(plan.binary_found);
	invocation_plan_release(&plan);
	profile_free(p);
}

static void test_modules(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	const struct invocation_file *m;
	json_t *j;

	(void)state;
	/* mock (bernstein mock-agent): built from its declaration like a
	 * factory profile, argv[0] this binary */
	req_init(&r, shipped("mock"), "write a.txt hi");
	r.model = "some-model"; /* no model flag: not passed */
	r.session_id = "conv-1";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_string_equal(plan.argv.v[0], INVOCATION_SELF_EXE);
	assert_true(plan.binary_found);
	assert_argv(
		&plan,
		"mock-agent|--session-id|32b2c54a-a04d-5759-a20e-c59c0ba5deb7|--|write a.txt hi");
	assert_int_equal(plan.dialect, DIALECT_RUNNER);
	assert_string_equal(plan.state_dir, STATE);
	assert_string_equal(env_of(&plan, "HOME"), STATE);
	assert_int_equal(plan.warnings.nr, 0);
	invocation_plan_release(&plan);
	r.resume_id = "conv-1";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "mock-agent|--resume|conv-1|--|write a.txt hi");
	invocation_plan_release(&plan);
	req_init(&r, shipped("generic"), "p");
	assert_int_equal(build(&r, &plan, &d), -ENOTSUP);
	invocation_plan_release(&plan);

	/* openai_agents: the built-in runner and its manifest */
	req_init(&r, shipped("openai_agents"), "write hello.txt");
	r.model = "gpt-4o-mini";
	r.timeout_s = 60;
	set(&r.sampling, "temperature", "0.25");
	set(&r.sampling, "top_k", "3");
	set(&r.sampling, "base_url", "http://127.0.0.1:4000/v1");
	set(&r.sampling, "api_key_env", "GATEWAY_KEY");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_string_equal(plan.argv.v[0], INVOCATION_SELF_EXE);
	assert_argv(&plan, "runner|--session-dir|" STATE "|--manifest|" SESSION "/manifest.json");
	assert_int_equal(plan.dialect, DIALECT_RUNNER);
	assert_string_equal(env_of(&plan, "GATEWAY_KEY"), "gw-secret-value");
	assert_string_equal(env_of(&plan, "BERNSTEIN_ALLOWED_API_KEY_ENVS"), "GATEWAY_KEY");
	m = file_of(&plan, "manifest.json");
	assert_null(strstr(m->content, "gw-secret-value"));
	j = json_loads(m->content, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "prompt")), "write hello.txt");
	assert_string_equal(json_string_value(json_object_get(j, "model")), "gpt-4o-mini");
	assert_string_equal(json_string_value(json_object_get(j, "workdir")), WORKDIR);
	assert_string_equal(json_string_value(json_object_get(j, "session_id")), "s1");
	assert_true(json_real_value(json_object_get(j, "temperature")) == 0.25);
	assert_int_equal(json_integer_value(json_object_get(j, "top_k")), 3);
	assert_string_equal(json_string_value(json_object_get(j, "api_key_env")), "GATEWAY_KEY");
	assert_int_equal(json_integer_value(json_object_get(j, "timeout_seconds")), 60);
	/* no sandbox asked: none named; no git access: none granted */
	assert_null(json_object_get(j, "sandbox_provider"));
	assert_null(json_object_get(j, "allow_git_dir"));
	json_decref(j);
	invocation_plan_release(&plan);

	/* a task run under sandbox: landlock: the runner learns its tier */
	req_init(&r, shipped("openai_agents"), "write hello.txt");
	r.model = "gpt-4o-mini";
	r.sandbox = "landlock";
	assert_int_equal(build(&r, &plan, &d), 0);
	j = json_loads(file_of(&plan, "manifest.json")->content, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "sandbox_provider")), "landlock");
	json_decref(j);
	invocation_plan_release(&plan);

	/* resume: --resume, and the manifest keeps the session's id */
	req_init(&r, shipped("openai_agents"), "again");
	r.model = "gpt-4o-mini";
	r.resume_id = "s0";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "runner|--session-dir|" STATE "|--resume|s0|--manifest|" SESSION
			   "/manifest.json");
	j = json_loads(file_of(&plan, "manifest.json")->content, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "session_id")), "s0");
	json_decref(j);
	invocation_plan_release(&plan);

	/* a model is required */
	req_init(&r, shipped("openai_agents"), "again");
	assert_int_equal(build(&r, &plan, &d), -EINVAL);
	invocation_plan_release(&plan);
}

/* The acp channel: runtime.acp.args in place of the prompt tokens, the
 * prompt kept for session/prompt whatever its length or first character, a
 * resume kept for session/load without tokens, no pre-assigned session id;
 * the permission policy allows everything only with dangerous mode. */
static void test_acp_plan(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct strvec want = STRVEC_INIT;
	char *big = xmalloc(300000);
	struct diag d;

	(void)state;
	req_init(&r, shipped("gemini_acp"), "--version");
	r.model = "gemini-2.5-pro";
	r.resume_id = "11111111-2222-3333-4444-555555555555";
	r.session_id = "pre";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.dialect, DIALECT_ACP);
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_ACP);
	assert_string_equal(plan.acp_prompt, "--version");
	assert_null(plan.stdin_path);
	assert_string_equal(plan.resume_id, "11111111-2222-3333-4444-555555555555");
	assert_null(plan.session_id);
	assert_true(plan.acp_allow_all);
	strvec_push(&want, plan.argv.v[0]);
	strvec_pushv(&want, (const char *[]){"-m", "gemini-2.5-pro", "--yolo", "--skip-trust",
					     "--acp", NULL});
	assert_int_equal(plan.argv.nr, want.nr);
	for (size_t i = 0; i < want.nr; i++)
		assert_string_equal(plan.argv.v[i], want.v[i]);
	strvec_clear(&want);
	invocation_plan_release(&plan);

	/* no argv limit: the prompt is a JSON-RPC frame's */
	memset(big, 'x', 299999);
	big[299999] = '\0';
	req_init(&r, shipped("qwen_acp"), big);
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_false(plan.prompt_too_long);
	assert_int_equal(strlen(plan.acp_prompt), 299999);
	assert_string_equal(plan.argv.v[plan.argv.nr - 1], "--acp");
	invocation_plan_release(&plan);
	free(big);

	/* without dangerous mode bernstein's policy confines the agent */
	req_init(&r, shipped("opencode_acp"), "p");
	r.dangerous = false;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_false(plan.acp_allow_all);
	assert_string_equal(plan.argv.v[plan.argv.nr - 1], "acp");
	invocation_plan_release(&plan);
}

/* Every shipped profile builds a plan (or is a module refused as such). */
static void test_every_shipped_profile(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	size_t i, n = 0;

	(void)state;
	for (i = 0; i < cat->n_entries; i++) {
		const struct registry_entry *e = cat->entries[i];
		int rc;

		if (!e->profile)
			continue;
		n++;
		req_init(&r, e->profile, "hello world");
		r.model = "some-model";
		r.resume_id = "abc-123";
		rc = build(&r, &plan, &d);
		if (e->profile->shape == PROFILE_SHAPE_MODULE &&
		    strcmp(e->name, "openai_agents") != 0 && strcmp(e->name, "mock") != 0) {
			assert_int_equal(rc, -ENOTSUP);
		} else {
			if (rc < 0)
				fail_msg("%s: %s", e->name, d.msg);
			assert_true(plan.argv.nr >= (plan.dialect == DIALECT_ACP ? 1u : 2u));
			assert_null(env_of(&plan, "CANARY_SECRET"));
			assert_string_equal(plan.cwd, WORKDIR);
		}
		invocation_plan_release(&plan);
	}
	assert_true(n >= 39);
}

/* ---- the prompt guard (issue #14: a prompt is never an option) ---- */

static const char *const hostile[] = {"--version", "-h", "--settings=x", "-", "--"};

/* Where the prompt went in plan: it is text to the agent when it is not on
 * argv at all (stdin or a file holding exactly it), or is glued to its flag
 * (FLAG=PROMPT), or is the last token with "--" just before it. */
static void assert_prompt_is_text(const struct profile *p, const struct invocation_plan *plan,
				  const char *prompt)
{
	size_t i, n = plan->argv.nr;
	const char *last = plan->argv.v[n - 1];

	if (plan->prompt_via != PROMPT_DELIVERY_ARGV) {
		/* a file: the prompt file, never the text itself on argv */
		for (i = 1; i < n; i++)
			if (strcmp(plan->argv.v[i], prompt) == 0 && strcmp(prompt, "-") != 0 &&
			    strcmp(prompt, "--") != 0)
				fail_msg("%s: prompt '%s' off argv, yet argv[%zu] holds it",
					 p->name, prompt, i);
		assert_string_equal(file_of(plan, "prompt.txt")->content, prompt);
		return;
	}
	if (p->invocation.prompt_guard == PROMPT_GUARD_GLUED) {
		char want[128];

		(void)snprintf(want, sizeof(want), "%s=%s", p->invocation.prompt_flag, prompt);
		assert_string_equal(last, want);
		return;
	}
	if (strcmp(last, prompt) != 0 || n < 2 || strcmp(plan->argv.v[n - 2], "--") != 0)
		fail_msg("%s: prompt '%s' on argv without '--' before it (last '%s')", p->name,
			 prompt, last);
	assert_string_not_equal(prompt, "-");
}

static void test_prompt_guard(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	struct profile *p;
	size_t i;

	(void)state;
	/* the six measured CLIs: each hostile prompt reaches the agent as text */
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		static const char *const six[] = {"claude",   "codex", "gemini", "qwen",
						  "opencode", "pi",    "mock"};
		size_t k;

		for (k = 0; k < sizeof(six) / sizeof(six[0]); k++) {
			req_init(&r, shipped(six[k]), hostile[i]);
			if (build(&r, &plan, &d) < 0)
				fail_msg("%s, prompt '%s': %s", six[k], hostile[i], d.msg);
			assert_prompt_is_text(shipped(six[k]), &plan, hostile[i]);
			invocation_plan_release(&plan);
		}
	}

	/* the exact argv of each form */
	req_init(&r, shipped("claude"), "--settings=evil.json");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(
		&plan,
		"--output-format|stream-json|--verbose|--dangerously-skip-permissions|-p|--|--settings=evil.json");
	assert_int_equal(plan.warnings.nr, 1); /* only: the binary is not installed here */
	invocation_plan_release(&plan);
	req_init(&r, shipped("codex"), "review");
	r.resume_id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(
		&plan,
		"exec|--json|--skip-git-repo-check|--dangerously-bypass-approvals-and-sandbox|resume|0199a213-81c0-7800-8aa1-bbab2a035a53|--|review");
	invocation_plan_release(&plan);
	req_init(&r, shipped("gemini"), "-p=x --yolo");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "-o|stream-json|--yolo|--skip-trust|-p=-p=x --yolo");
	invocation_plan_release(&plan);
	req_init(&r, shipped("qwen"), "mcp");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "-o|stream-json|--yolo");
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_STDIN);
	assert_false(plan.prompt_too_long);
	assert_string_equal(plan.stdin_path, SESSION "/prompt.txt");
	assert_false(warned(&plan, "option"));
	invocation_plan_release(&plan);
	req_init(&r, shipped("pi"), "@/etc/passwd");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "--mode|json|-p");
	assert_string_equal(file_of(&plan, "prompt.txt")->content, "@/etc/passwd");
	invocation_plan_release(&plan);

	/* '-' after '--' is still stdin's marker (codex, mock): on stdin, warned */
	req_init(&r, shipped("codex"), "-");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(
		&plan,
		"exec|--json|--skip-git-repo-check|--dangerously-bypass-approvals-and-sandbox|-");
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_STDIN);
	assert_false(plan.prompt_too_long);
	assert_true(warned(
		&plan,
		"the prompt is '-' (the stdin marker, also after '--'): it goes to codex by stdin so that it cannot be read as an option"));
	invocation_plan_release(&plan);

	/* glued: the per-string limit counts FLAG= too */
	req_init(&r, shipped("gemini"), "0123456");
	r.arg_strlen_max = 10;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_STDIN);
	assert_true(plan.prompt_too_long);
	invocation_plan_release(&plan);
	r.arg_strlen_max = 11;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_ARGV);
	assert_string_equal(plan.argv.v[plan.argv.nr - 1], "-p=0123456");
	invocation_plan_release(&plan);

	/* unguarded, with a long form: a dash prompt moves off argv, warned */
	p = load(
		"unguarded",
		"name: unguarded\ndisplay_name: U\nshape: factory\n"
		"invocation:\n  binary: u-agent\n  prompt_flag: --message\n"
		"runtime:\n  long_prompt: {via: file, args: [--message-file, \"{prompt_file}\"]}\n");
	req_init(&r, p, "--help");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "--message-file|" SESSION "/prompt.txt");
	assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_FILE);
	assert_true(warned(&plan, "the prompt starts with '-': it goes to unguarded by a file"));
	invocation_plan_release(&plan);
	req_init(&r, p, "say -- --help");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_argv(&plan, "--message|say -- --help");
	invocation_plan_release(&plan);
	profile_free(p);

	/* unguarded, no long form: refused, nothing built */
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		req_init(&r, shipped("aider"), hostile[i]);
		assert_int_equal(build(&r, &plan, &d), -EPERM);
		assert_string_equal(
			d.msg,
			"the prompt starts with '-' and profile 'aider' has no safe way to pass it (no invocation.prompt_guard, no runtime.long_prompt): refusing to spawn rather than let 'aider' read it as an option");
		assert_int_equal(plan.argv.nr, 0);
		invocation_plan_release(&plan);
	}
	/* prompt_flag '--' (aichat) ends the options itself: only '-' is refused */
	req_init(&r, shipped("aichat"), "--version");
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_string_equal(plan.argv.v[plan.argv.nr - 2], "--");
	assert_string_equal(plan.argv.v[plan.argv.nr - 1], "--version");
	invocation_plan_release(&plan);
	req_init(&r, shipped("aichat"), "-");
	assert_int_equal(build(&r, &plan, &d), -EPERM);
	assert_non_null(strstr(d.msg, "the prompt is '-' (the stdin marker, also after '--')"));
	invocation_plan_release(&plan);

	/* models and ids that look like options never reach argv */
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		req_init(&r, shipped("claude"), "p");
		r.model = hostile[i];
		assert_int_equal(build(&r, &plan, &d), -EINVAL);
		invocation_plan_release(&plan);
		req_init(&r, shipped("claude"), "p");
		r.resume_id = hostile[i];
		assert_int_equal(build(&r, &plan, &d), -EINVAL);
		invocation_plan_release(&plan);
		req_init(&r, shipped("claude"), "p");
		r.session_id = hostile[i];
		assert_int_equal(build(&r, &plan, &d), -EINVAL);
		invocation_plan_release(&plan);
	}
	/* an attachment is an absolute path, and it goes into the prompt text */
	{
		const char *att[] = {"-rf"};

		req_init(&r, shipped("claude"), "look");
		r.attachments = att;
		r.n_attachments = 1;
		assert_int_equal(build(&r, &plan, &d), -EINVAL);
		assert_string_equal(d.msg, "attachment '-rf' is not an absolute path");
		invocation_plan_release(&plan);
	}
}

/* Every shipped profile, every hostile prompt: the prompt reaches the agent
 * as text, or the spawn is refused before anything is built. */
static void test_prompt_guard_every_profile(void **state)
{
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;
	size_t i, k, refused = 0, n = 0;

	(void)state;
	for (i = 0; i < cat->n_entries; i++) {
		const struct registry_entry *e = cat->entries[i];

		if (!e->profile ||
		    (e->profile->shape == PROFILE_SHAPE_MODULE &&
		     strcmp(e->name, "openai_agents") != 0 && strcmp(e->name, "mock") != 0))
			continue;
		for (k = 0; k < sizeof(hostile) / sizeof(hostile[0]); k++) {
			int rc;

			req_init(&r, e->profile, hostile[k]);
			r.model = "some-model";
			rc = build(&r, &plan, &d);
			n++;
			if (rc == -EPERM) {
				assert_non_null(strstr(d.msg, "read it as an option"));
				refused++;
			} else if (rc < 0) {
				fail_msg("%s, prompt '%s': %s", e->name, hostile[k], d.msg);
			} else if (plan.dialect == DIALECT_ACP) {
				/* over ACP the prompt is session/prompt's: never on argv */
				assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_ACP);
				assert_string_equal(plan.acp_prompt, hostile[k]);
				assert_true(idx(&plan.argv, hostile[k]) < 0);
				assert_null(plan.stdin_path);
			} else if (strcmp(e->name, "openai_agents") == 0) {
				assert_int_equal(plan.prompt_via, PROMPT_DELIVERY_FILE);
			} else if (e->profile->invocation.prompt_file_flag) {
				assert_string_equal(file_of(&plan, "prompt.txt")->content,
						    hostile[k]);
			} else {
				assert_prompt_is_text(e->profile, &plan, hostile[k]);
			}
			invocation_plan_release(&plan);
		}
	}
	assert_true(n >= 5 * 36);
	assert_true(refused > 0);
}

/* plan->secrets: every value of the agent's environment that holds a secret
 * (a profile's pass-through keys and tokens, bernstein's own hook secrets, a
 * name the host allows), not the other values; a value too short to look
 * for is named in a warning. */
static void test_secrets_complete(void **state)
{
	static const char *env[] = {
		"PATH=/usr/bin:/bin",
		"HOME=/home/user",
		"AMP_API_KEY=amp-secret-value",
		"SRC_ACCESS_TOKEN=src-token-value",
		"SRC_ENDPOINT=https://sourcegraph.example",
		"GOOGLE_CLOUD_PROJECT=my-project-name",
		"SHORT_TOKEN=abc",
		"CUSTOM_GW=custom-gateway-value",
		"BERNSTEIN_ALLOWED_API_KEY_ENVS=CUSTOM_GW",
		"BERNSTEIN_AUTH_TOKEN=bernstein-auth-value",
		"BERNSTEIN_HOOK_SECRET=bernstein-hook-value",
		"CANARY_SECRET=hunter2-canary",
		NULL,
	};
	struct profile *p = load(
		"keys",
		"name: keys\ndisplay_name: K\nshape: factory\n"
		"invocation:\n  binary: keys-agent\n"
		"  prompt_positional: true\n"
		"  env_passthrough: [AMP_API_KEY, SRC_ACCESS_TOKEN, SRC_ENDPOINT, GOOGLE_CLOUD_PROJECT, SHORT_TOKEN, CUSTOM_GW]\n");
	struct invocation_request r;
	struct invocation_plan plan;
	struct diag d;

	(void)state;
	req_init(&r, p, "hi");
	r.host_env = env;
	assert_int_equal(build(&r, &plan, &d), 0);
	assert_true(idx(&plan.secrets, "amp-secret-value") >= 0);
	assert_true(idx(&plan.secrets, "src-token-value") >= 0);
	assert_true(idx(&plan.secrets, "custom-gateway-value") >= 0);
	assert_true(idx(&plan.secrets, "bernstein-auth-value") >= 0);
	assert_true(idx(&plan.secrets, "bernstein-hook-value") >= 0);
	assert_true(idx(&plan.secrets, "https://sourcegraph.example") < 0);
	assert_true(idx(&plan.secrets, "my-project-name") < 0);
	assert_true(idx(&plan.secrets, "/usr/bin:/bin") < 0);
	assert_true(idx(&plan.secrets, "hunter2-canary") < 0); /* not given to the agent */
	assert_true(idx(&plan.secrets, "abc") < 0);
	assert_true(warned(&plan, "the value of 'SHORT_TOKEN' is shorter than 8 bytes"));
	invocation_plan_release(&plan);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_id_vectors),
		cmocka_unit_test(test_sampling_set),
		cmocka_unit_test(test_sampling_gate),
		cmocka_unit_test(test_sampling_never_dropped),
		cmocka_unit_test(test_endpoint_claude),
		cmocka_unit_test(test_credentials),
		cmocka_unit_test(test_endpoint_all_six),
		cmocka_unit_test(test_endpoint_default_model),
		cmocka_unit_test(test_base_url_rules),
		cmocka_unit_test(test_hooks_channel),
		cmocka_unit_test(test_env_isolated),
		cmocka_unit_test(test_resume_by_strategy),
		cmocka_unit_test(test_dangerous_by_strategy),
		cmocka_unit_test(test_session_preassign),
		cmocka_unit_test(test_long_prompt),
		cmocka_unit_test(test_attachments),
		cmocka_unit_test(test_model_and_binary),
		cmocka_unit_test(test_modules),
		cmocka_unit_test(test_every_shipped_profile),
		cmocka_unit_test(test_acp_plan),
		cmocka_unit_test(test_secrets_complete),
		cmocka_unit_test(test_prompt_guard),
		cmocka_unit_test(test_prompt_guard_every_profile),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
