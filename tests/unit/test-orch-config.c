/* bernstein.yaml (src/orch/config.h): the defaults, every key of a full
 * file, the broken corpus of tests/data/orch/config/bad/ (each file names
 * its expected FILE:LINE:COL and message in a '# expect:' line), the
 * api_key_env allow-list with the host variable, the slot precedence, the
 * init template and the YAML/JSON renderings. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/profile.h"
#include "orch/config-internal.h"
#include "orch/config.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/url.h"
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

	(void)sbuf_addf(&sb, "%s/tests/data/orch/config/%s", srcdir(), rel);
	return sbuf_detach(&sb, NULL);
}

static struct orch_config *load_text(const char *text, const char *allowed)
{
	struct orch_config *c = NULL;
	struct diag d;

	diag_clear(&d);
	if (orch_config_load_buf("mem.yaml", text, strlen(text), allowed, &c, &d) < 0)
		fail_msg("mem.yaml:%u:%u: %s", d.line, d.col, d.msg);
	return c;
}

static struct diag load_text_fail(const char *text, const char *allowed)
{
	struct orch_config *c = NULL;
	struct diag d;

	diag_clear(&d);
	assert_int_equal(orch_config_load_buf("mem.yaml", text, strlen(text), allowed, &c, &d),
			 -EINVAL);
	assert_null(c);
	return d;
}

static struct orch_config *load_data(const char *rel)
{
	struct orch_config *c = NULL;
	char *path = data_path(rel);
	struct diag d;

	diag_clear(&d);
	if (orch_config_load(path, NULL, &c, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	free(path);
	return c;
}

/* Equal as configurations: the JSON renderings without "source". */
static void assert_same_config(const struct orch_config *a, const struct orch_config *b)
{
	json_t *ja = orch_config_json(a), *jb = orch_config_json(b);

	(void)json_object_del(ja, "source");
	(void)json_object_del(jb, "source");
	if (!json_equal(ja, jb)) {
		char *sa = json_dumps(ja, JSON_SORT_KEYS), *sb = json_dumps(jb, JSON_SORT_KEYS);

		print_error("%s\n!=\n%s\n", sa, sb);
		free(sa);
		free(sb);
		fail();
	}
	json_decref(ja);
	json_decref(jb);
}

static void assert_defaults(const struct orch_config *c)
{
	assert_string_equal(c->adapter, "auto");
	assert_int_equal(c->auto_order.nr, 6);
	assert_string_equal(c->auto_order.v[0], "claude");
	assert_string_equal(c->auto_order.v[5], "pi");
	assert_null(c->model);
	assert_int_equal(c->parallel, 4);
	assert_true(c->timeout_s == 1800.0);
	assert_true(c->kill_grace_s == 5.0);
	assert_int_equal(c->max_retries, 2);
	assert_true(c->retry_backoff_s == 2.0);
	assert_int_equal(c->preference.nr, 0);
	assert_int_equal(c->n_gates, 0);
	assert_int_equal(c->merge, MERGE_AUTO);
	assert_int_equal(c->on_conflict, CONFLICT_REBASE);
	assert_null(c->resolver.adapter);
	assert_null(c->resolver.model);
	assert_null(c->mode);
	assert_int_equal(c->n_roles, 0);
	assert_int_equal(c->n_modes, 3);
}

/* ---- tests ---- */

static void test_defaults(void **state)
{
	struct orch_config *c = orch_config_new_default();
	const struct mode_profile *m;

	(void)state;
	assert_defaults(c);
	assert_null(c->source);
	/* the built-in mode profiles (anchor-core 6.4): temperature only */
	m = orch_config_mode(c, "smart");
	assert_non_null(m);
	assert_true(m->builtin);
	assert_int_equal(m->sampling.set, 1u << SAMPLING_TEMPERATURE);
	assert_true(m->sampling.temperature == 0.2);
	m = orch_config_mode(c, "deep");
	assert_true(m->sampling.temperature == 0.3);
	m = orch_config_mode(c, "fast");
	assert_true(m->sampling.temperature == 0.0);
	assert_int_equal(m->sampling.set, 1u << SAMPLING_TEMPERATURE);
	assert_null(orch_config_mode(c, "turbo"));
	assert_null(orch_config_role(c, "backend"));
	assert_null(orch_config_free(c));
	assert_null(orch_config_free(NULL));
}

static void test_missing_file(void **state)
{
	struct orch_config *c = NULL;
	struct diag d;

	(void)state;
	diag_clear(&d);
	assert_int_equal(orch_config_load("/nonexistent/bernstein.yaml", NULL, &c, &d), -ENOENT);
	assert_null(c);
	assert_string_equal(d.file, "/nonexistent/bernstein.yaml");
	assert_non_null(strstr(d.msg, "cannot read"));
}

static void test_full(void **state)
{
	struct orch_config *c = load_data("good/full.yaml");
	const struct role_policy *rp;
	const struct mode_profile *m;

	(void)state;
	assert_non_null(strstr(c->source, "good/full.yaml"));
	assert_string_equal(c->adapter, "claude");
	assert_string_equal(c->model, "sonnet");
	assert_int_equal(c->parallel, 8);
	assert_true(c->timeout_s == 90.5);
	assert_true(c->kill_grace_s == 2.0);
	assert_int_equal(c->max_retries, 5);
	assert_true(c->retry_backoff_s == 0.0);
	assert_int_equal(c->preference.nr, 2);
	assert_string_equal(c->preference.v[0], "claude");
	assert_string_equal(c->preference.v[1], "codex");
	assert_int_equal(c->n_gates, 2);
	assert_string_equal(c->gates[0].name, "tests");
	assert_string_equal(c->gates[0].run, "make test");
	assert_true(c->gates[0].timeout_s == 600.0);
	assert_int_equal(c->gates[0].line, 11);
	assert_int_equal(c->gates[0].col, 5);
	assert_string_equal(c->gates[1].name, "lint");
	assert_string_equal(c->gates[1].run, "make lint");
	assert_true(c->gates[1].timeout_s == ORCH_DEFAULT_GATE_TIMEOUT_S);
	assert_int_equal(c->merge, MERGE_NONE);
	assert_string_equal(c->mode, "careful");

	/* built-ins first; "fast" replaced in place; "careful" appended */
	assert_int_equal(c->n_modes, 4);
	assert_string_equal(c->modes[2].name, "fast");
	assert_false(c->modes[2].builtin);
	assert_int_equal(c->modes[2].line, 18);
	assert_true(c->modes[2].sampling.temperature == 0.5);
	assert_true(c->modes[0].builtin);
	m = orch_config_mode(c, "careful");
	assert_ptr_equal(m, &c->modes[3]);
	assert_false(m->builtin);
	assert_int_equal(m->sampling.set, (1u << SAMPLING_TEMPERATURE) | (1u << SAMPLING_TOP_P) |
						  (1u << SAMPLING_TOP_K) |
						  (1u << SAMPLING_MAX_TOKENS));
	assert_true(m->sampling.temperature == 0.1);
	assert_true(m->sampling.top_p == 0.9);
	assert_int_equal(m->sampling.top_k, 40);
	assert_int_equal(m->sampling.max_tokens, 4096);

	assert_int_equal(c->n_roles, 2);
	rp = orch_config_role(c, "backend");
	assert_non_null(rp);
	assert_string_equal(rp->adapter, "qwen");
	assert_string_equal(rp->model, "coder-model");
	assert_string_equal(rp->effort, "high");
	assert_string_equal(rp->base_url, "http://127.0.0.1:8080/v1");
	assert_string_equal(rp->api_key_env, "OPENAI_API_KEY");
	assert_null(rp->provider);
	assert_int_equal(rp->line, 20);
	assert_int_equal(rp->col, 3);
	rp = orch_config_role(c, "qa");
	assert_string_equal(rp->adapter, "codex"); /* Bernstein's cli: */
	assert_string_equal(rp->provider, "openai");
	assert_string_equal(rp->model, "gpt-5");
	assert_null(rp->effort);
	assert_null(rp->base_url);
	assert_null(rp->api_key_env);
	assert_null(orch_config_role(c, "docs"));
	orch_config_free(c);
}

static void test_empty_and_nulls_are_defaults(void **state)
{
	struct orch_config *c;

	(void)state;
	c = load_data("good/empty.yaml");
	assert_defaults(c);
	orch_config_free(c);
	c = load_data("good/nulls.yaml");
	assert_defaults(c);
	orch_config_free(c);
}

/* "# expect: L:C: message prefix" */
static void parse_expect(const char *text, unsigned *line, unsigned *col, char *msg, size_t size)
{
	const char *e = strstr(text, "# expect: ");
	const char *nl;
	int n = 0;

	assert_non_null(e);
	e += strlen("# expect: ");
	assert_int_equal(sscanf(e, "%u:%u:%n", line, col, &n) >= 2, 1);
	e += n;
	if (*e == ' ')
		e++;
	nl = strchr(e, '\n');
	assert_non_null(nl);
	assert_true((size_t)(nl - e) < size);
	memcpy(msg, e, (size_t)(nl - e));
	msg[nl - e] = '\0';
}

static void test_bad_corpus(void **state)
{
	char *dir = data_path("bad");
	DIR *dh = opendir(dir);
	struct dirent *de;
	size_t n = 0, bad = 0;

	(void)state;
	assert_non_null(dh);
	while ((de = readdir(dh))) {
		struct orch_config *c = NULL;
		char *path, *text = NULL, msg[512];
		unsigned line = 0, col = 0;
		struct diag d;
		size_t len;
		int r;

		if (!strstr(de->d_name, ".yaml"))
			continue;
		path = xstrdup(dir);
		path = xrealloc(path, strlen(dir) + strlen(de->d_name) + 2);
		(void)snprintf(path + strlen(dir), strlen(de->d_name) + 2, "/%s", de->d_name);
		assert_int_equal(read_file_capped(path, 1 << 20, &text, &len), 0);
		parse_expect(text, &line, &col, msg, sizeof(msg));
		diag_clear(&d);
		r = orch_config_load(path, NULL, &c, &d);
		if (r != -EINVAL || d.line != line || d.col != col ||
		    strncmp(d.msg, msg, strlen(msg)) != 0 || strcmp(d.file, path) != 0) {
			print_error("%s: expected -EINVAL at %u:%u '%s...', got %d at %u:%u '%s'\n",
				    de->d_name, line, col, msg, r, d.line, d.col, d.msg);
			bad++;
		}
		assert_null(c);
		free(text);
		free(path);
		n++;
	}
	closedir(dh);
	free(dir);
	assert_int_equal(bad, 0);
	assert_true(n >= 40);
}

static void test_api_key_env_allow_list(void **state)
{
	static const char text[] = "role_model_policy:\n"
				   "  backend: {api_key_env: CORP_LLM_KEY}\n";
	struct orch_config *c;
	struct diag d;

	(void)state;
	/* not a known provider key: refused without the host variable ... */
	d = load_text_fail(text, NULL);
	assert_int_equal(d.line, 2);
	assert_int_equal(d.col, 26);
	assert_non_null(strstr(d.msg, "field 'role_model_policy.backend.api_key_env'"));
	assert_non_null(strstr(d.msg, "BERNSTEIN_ALLOWED_API_KEY_ENVS"));
	/* ... and when the host variable lists other names */
	d = load_text_fail(text, "OTHER_KEY,CORP_LLM_KEYS");
	assert_int_equal(d.line, 2);
	/* admitted when the host variable lists it (blanks stripped) */
	c = load_text(text, "OTHER_KEY, CORP_LLM_KEY ");
	assert_string_equal(orch_config_role(c, "backend")->api_key_env, "CORP_LLM_KEY");
	orch_config_free(c);
	/* a known provider key needs no host variable */
	c = load_text("role_model_policy:\n  qa: {api_key_env: ANTHROPIC_API_KEY}\n", NULL);
	assert_string_equal(orch_config_role(c, "qa")->api_key_env, "ANTHROPIC_API_KEY");
	orch_config_free(c);
	/* the host variable cannot admit a malformed name */
	d = load_text_fail("role_model_policy:\n  qa: {api_key_env: corp_key}\n", "corp_key");
	assert_non_null(strstr(d.msg, "^[A-Z][A-Z0-9_]*$"));
}

/* base_url goes through url_check() (util/url.h, whose own test has every
 * rule): in bernstein.yaml its message sits at the value's node, after the
 * field path. */
static void test_base_url_rule(void **state)
{
	static const char *const good[] = {
		"http://localhost",
		"http://127.0.0.1:8080/v1",
		"https://api.example.com/v1/",
		"https://api.example.com:443",
		"http://[::1]:11434/v1",
		"http://my_host:1/a/b",
		NULL,
	};
	static const char *const bad[] = {
		"ftp://example.com",
		"http://",
		"http:///v1",
		"http://host:0",
		"http://host:65536",
		"http://host:123456",
		"http://host:",
		"http://host:80x",
		"http://.host",
		"http://-host",
		"http://ho st",
		"http://host/a b",
		"http://host/{x}",
		"http://host/\"q\"",
		"http://[::1",
		"http://[]",
		"localhost:8080",
		"HTTP://host",
		"http://my_host:1/a/b?x=1",
		"http://user:pw@host/v1",
		NULL,
	};
	struct orch_config *c;
	struct sbuf text = SBUF_INIT(SIZE_MAX);
	struct diag d, want;
	size_t i;

	(void)state;
	for (i = 0; good[i]; i++) {
		sbuf_reset(&text);
		(void)sbuf_addf(&text, "role_model_policy:\n  qa: {base_url: '%s'}\n", good[i]);
		c = load_text(text.buf, NULL);
		assert_string_equal(orch_config_role(c, "qa")->base_url, good[i]);
		orch_config_free(c);
	}
	for (i = 0; bad[i]; i++) {
		char msg[sizeof(d.msg) + 64];

		sbuf_reset(&text);
		(void)sbuf_addf(&text, "role_model_policy:\n  qa: {base_url: '%s'}\n", bad[i]);
		d = load_text_fail(text.buf, NULL);
		diag_clear(&want);
		assert_int_equal(url_check(bad[i], NULL, &want), -EINVAL);
		(void)snprintf(msg, sizeof(msg), "field 'role_model_policy.qa.base_url': %s",
			       want.msg);
		if (d.line != 2 || d.col != 18 || strcmp(d.msg, msg) != 0)
			fail_msg("'%s':\n  got  %u:%u: %s\n  want 2:18: %s", bad[i], d.line, d.col,
				 d.msg, msg);
	}
	/* the message never repeats credentials */
	d = load_text_fail("role_model_policy:\n  qa: {base_url: \"http://user:pw@host/v1\"}\n",
			   NULL);
	assert_null(strstr(d.msg, "pw"));
	sbuf_release(&text);
}

static struct invocation_sampling slots(const struct orch_config *c, const char *role,
					const struct profile *p,
					const struct invocation_sampling *task)
{
	struct invocation_sampling s;

	memset(&s, 0xa5, sizeof(s)); /* fully overwritten */
	orch_config_slots(c, role, p, NULL, task, &s);
	return s;
}

static struct invocation_sampling slots_ep(const struct orch_config *c, const char *role,
					   const struct orch_endpoint *ep,
					   const struct invocation_sampling *task)
{
	struct invocation_sampling s;

	memset(&s, 0xa5, sizeof(s));
	orch_config_slots(c, role, NULL, ep, task, &s);
	return s;
}

/* endpoints: per adapter, and where it stands among the other sources:
 * task sampling > role policy > plan endpoints > bernstein.yaml endpoints */
static void test_endpoints_precedence(void **state)
{
	static const char text[] =
		"model: global-model\n"
		"endpoints:\n"
		"  codex: {base_url: \"http://yaml.example/v1\", api_key_env: OPENAI_API_KEY, model: yaml-m}\n"
		"  claude: {api_key_env: ANTHROPIC_API_KEY}\n"
		"role_model_policy:\n"
		"  backend: {base_url: \"http://role.example/v1\"}\n"
		"  qa: {model: role-m}\n";
	struct orch_config *c = load_text(text, NULL);
	struct orch_endpoint pe = {.adapter = "codex", .base_url = "http://plan.example/v1"};
	struct orch_endpoints plan = {.v = &pe, .n = 1};
	struct invocation_sampling task = {0}, s;
	const struct orch_endpoint *ep;

	(void)state;
	/* bernstein.yaml's entry for codex; none for gemini */
	ep = orch_config_endpoint(c, NULL, "codex");
	assert_non_null(ep);
	assert_string_equal(ep->base_url, "http://yaml.example/v1");
	assert_null(orch_config_endpoint(c, NULL, "gemini"));
	assert_null(orch_config_endpoint(c, NULL, NULL));
	s = slots_ep(c, "docs", ep, NULL);
	assert_int_equal(s.set, (1u << SAMPLING_BASE_URL) | (1u << SAMPLING_API_KEY_ENV));
	assert_string_equal(s.base_url, "http://yaml.example/v1");
	assert_string_equal(s.api_key_env, "OPENAI_API_KEY");
	assert_string_equal(orch_config_model(c, "docs", ep, NULL), "yaml-m");
	/* the plan's entry replaces bernstein.yaml's as a whole: no key of it is mixed in */
	ep = orch_config_endpoint(c, &plan, "codex");
	assert_ptr_equal(ep, &pe);
	s = slots_ep(c, "docs", ep, NULL);
	assert_int_equal(s.set, 1u << SAMPLING_BASE_URL);
	assert_string_equal(s.base_url, "http://plan.example/v1");
	assert_string_equal(orch_config_model(c, "docs", ep, NULL), "global-model");
	/* other adapters still get bernstein.yaml's */
	assert_string_equal(orch_config_endpoint(c, &plan, "claude")->api_key_env,
			    "ANTHROPIC_API_KEY");
	/* the role's base_url beats the endpoint's, its key variable stays */
	ep = orch_config_endpoint(c, NULL, "codex");
	s = slots_ep(c, "backend", ep, NULL);
	assert_string_equal(s.base_url, "http://role.example/v1");
	assert_string_equal(s.api_key_env, "OPENAI_API_KEY");
	/* the task's sampling beats both */
	task.set = 1u << SAMPLING_API_KEY_ENV;
	task.api_key_env = "GROQ_API_KEY";
	s = slots_ep(c, "backend", ep, &task);
	assert_string_equal(s.base_url, "http://role.example/v1");
	assert_string_equal(s.api_key_env, "GROQ_API_KEY");
	/* model: task > role > endpoint > bernstein.yaml's model: */
	assert_string_equal(orch_config_model(c, "qa", ep, "task-m"), "task-m");
	assert_string_equal(orch_config_model(c, "qa", ep, NULL), "role-m");
	assert_string_equal(orch_config_model(c, "docs", NULL, NULL), "global-model");
	assert_null(orch_config_model(NULL, "docs", NULL, NULL));
	orch_config_free(c);
}

/* endpoints: every bad entry at its FILE:LINE:COL, naming the field */
static void test_endpoints_errors(void **state)
{
	static const struct {
		const char *text;
		unsigned line, col;
		const char *msg;
	} bad[] = {
		{"endpoints: [claude]\n", 1, 12,
		 "field 'endpoints': expected a mapping of adapters, got a sequence"},
		{"endpoints:\n  auto: {model: m}\n", 2, 3, "field 'endpoints.auto': 'auto' is not"},
		{"endpoints:\n  Claude: {model: m}\n", 2, 3,
		 "field 'endpoints.Claude': invalid adapter name 'Claude'"},
		{"endpoints:\n  claude: \"http://x\"\n", 2, 11,
		 "field 'endpoints.claude': expected a mapping {base_url, api_key_env, model}"},
		{"endpoints:\n  claude: {}\n", 2, 11, "field 'endpoints.claude': empty"},
		{"endpoints:\n  claude: {url: x}\n", 2, 12, "unknown key 'url'"},
		{"endpoints:\n  claude: {base_url: \"ftp://x\"}\n", 2, 22,
		 "field 'endpoints.claude.base_url': base_url 'ftp://x': the scheme"},
		{"endpoints:\n  claude: {api_key_env: GITHUB_TOKEN}\n", 2, 25,
		 "field 'endpoints.claude.api_key_env': api_key_env 'GITHUB_TOKEN' is not an allowed"},
		{"endpoints:\n  claude: {model: \"-rf\"}\n", 2, 19,
		 "field 'endpoints.claude.model': model '-rf': starts with '-'"},
		{"endpoints:\n  claude: {model: \"a b\"}\n", 2, 19,
		 "field 'endpoints.claude.model': model 'a b': holds a blank"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct diag d = load_text_fail(bad[i].text, NULL);

		if (d.line != bad[i].line || d.col != bad[i].col || !strstr(d.msg, bad[i].msg))
			fail_msg("%zu: got %u:%u: %s\n want %u:%u: %s", i, d.line, d.col, d.msg,
				 bad[i].line, bad[i].col, bad[i].msg);
	}
	/* the host's allow-list admits another name */
	orch_config_free(load_text("endpoints:\n  claude: {api_key_env: CORP_KEY}\n", "CORP_KEY"));
}

/* config show renders endpoints: that load back to the same entries */
static void test_endpoints_roundtrip(void **state)
{
	static const char text[] =
		"endpoints:\n"
		"  codex: {base_url: \"http://127.0.0.1:9/v1\", api_key_env: OPENAI_API_KEY, model: gpt-5.5}\n"
		"  pi: {model: \"m/1\"}\n";
	struct orch_config *c = load_text(text, NULL), *c2;
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	json_t *j1, *j2;

	(void)state;
	assert_int_equal(orch_config_to_yaml(c, &out), 0);
	c2 = load_text(out.buf, NULL);
	j1 = orch_config_json(c);
	j2 = orch_config_json(c2);
	json_object_del(j1, "source");
	json_object_del(j2, "source");
	assert_true(json_equal(j1, j2));
	assert_int_equal(json_object_size(json_object_get(j1, "endpoints")), 2);
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(json_object_get(j1, "endpoints"), "codex"), "model")),
		"gpt-5.5");
	json_decref(j1);
	json_decref(j2);
	sbuf_release(&out);
	orch_config_free(c);
	orch_config_free(c2);
}

static void test_slot_precedence(void **state)
{
	static const char text[] =
		"mode: mine\n"
		"modes:\n"
		"  mine: {temperature: 0.7, top_p: 0.8, max_tokens: 99}\n"
		"role_model_policy:\n"
		"  backend: {base_url: \"http://role.example/v1\", api_key_env: GROQ_API_KEY}\n"
		"  qa: {model: m}\n";
	struct orch_config *c = load_text(text, NULL);
	struct profile sampler, plain;
	struct invocation_sampling task = {0}, s;
	const unsigned mode_bits =
		(1u << SAMPLING_TEMPERATURE) | (1u << SAMPLING_TOP_P) | (1u << SAMPLING_MAX_TOKENS);
	const unsigned role_bits = (1u << SAMPLING_BASE_URL) | (1u << SAMPLING_API_KEY_ENV);

	(void)state;
	memset(&sampler, 0, sizeof(sampler));
	memset(&plain, 0, sizeof(plain));
	sampler.caps.supports_sampling_params = true;
	/* the narrow capabilities do not let the mode profile in: only the coarse one */
	plain.caps.supports_temperature = true;
	plain.caps.supports_top_p = true;
	plain.caps.supports_max_tokens = true;

	/* nothing requested, no source: nothing set */
	s = slots(NULL, NULL, NULL, NULL);
	assert_int_equal(s.set, 0);
	s = slots(c, "docs", NULL, NULL);
	assert_int_equal(s.set, 0);

	/* the mode profile only for an adapter declaring supports_sampling_params */
	s = slots(c, "docs", &plain, NULL);
	assert_int_equal(s.set, 0);
	s = slots(c, "docs", &sampler, NULL);
	assert_int_equal(s.set, mode_bits);
	assert_true(s.temperature == 0.7);
	assert_true(s.top_p == 0.8);
	assert_int_equal(s.max_tokens, 99);

	/* role_model_policy adds its endpoint, whatever the adapter declares */
	s = slots(c, "backend", &plain, NULL);
	assert_int_equal(s.set, role_bits);
	assert_string_equal(s.base_url, "http://role.example/v1");
	assert_string_equal(s.api_key_env, "GROQ_API_KEY");
	s = slots(c, "backend", &sampler, NULL);
	assert_int_equal(s.set, mode_bits | role_bits);
	/* a role entry without endpoint keys adds nothing */
	s = slots(c, "qa", &plain, NULL);
	assert_int_equal(s.set, 0);

	/* the task's explicit slots always win; the others fill only what is unset */
	task.set = (1u << SAMPLING_TEMPERATURE) | (1u << SAMPLING_API_KEY_ENV) |
		   (1u << SAMPLING_TOP_K);
	task.temperature = 0.0;
	task.api_key_env = "OPENAI_API_KEY";
	task.top_k = 5;
	task.top_p = 0.123; /* not set: must not leak */
	s = slots(c, "backend", &sampler, &task);
	assert_int_equal(s.set, mode_bits | role_bits | (1u << SAMPLING_TOP_K));
	assert_true(s.temperature == 0.0);		      /* task, not the mode's 0.7 */
	assert_string_equal(s.api_key_env, "OPENAI_API_KEY"); /* task, not the role's */
	assert_string_equal(s.base_url, "http://role.example/v1");
	assert_int_equal(s.top_k, 5);
	assert_true(s.top_p == 0.8); /* the mode's */
	assert_int_equal(s.max_tokens, 99);

	/* the task alone, without a configuration */
	s = slots(NULL, "backend", &sampler, &task);
	assert_int_equal(s.set, task.set);
	assert_true(s.temperature == 0.0);
	orch_config_free(c);

	/* no mode: selected: built-in profiles stay out */
	c = load_text("role_model_policy: {}\n", NULL);
	s = slots(c, "backend", &sampler, NULL);
	assert_int_equal(s.set, 0);
	orch_config_free(c);
	/* a built-in mode */
	c = load_text("mode: deep\n", NULL);
	s = slots(c, "backend", &sampler, NULL);
	assert_int_equal(s.set, 1u << SAMPLING_TEMPERATURE);
	assert_true(s.temperature == 0.3);
	orch_config_free(c);
}

static void test_template_loads_to_defaults(void **state)
{
	struct orch_config *c = load_text(orch_config_template(), NULL);
	struct orch_config *def = orch_config_new_default();
	const char *keys[] = {"adapter:",
			      "model:",
			      "parallel:",
			      "timeout:",
			      "kill_grace:",
			      "max_retries:",
			      "retry_backoff:",
			      "preference:",
			      "auto:",
			      "gates:",
			      "merge:",
			      "mode:",
			      "modes:",
			      "role_model_policy:",
			      NULL};
	size_t i;

	(void)state;
	assert_defaults(c);
	assert_same_config(c, def);
	/* every key is written out (and so documented) */
	for (i = 0; keys[i]; i++) {
		char line[64];

		(void)snprintf(line, sizeof(line), "\n%s", keys[i]);
		if (!strstr(orch_config_template(), line))
			fail_msg("the template lacks '%s'", keys[i]);
	}
	orch_config_free(c);
	orch_config_free(def);
}

/* The commented examples ("#   key: ...") of the template load too. */
static void test_template_examples_load(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	const char *line = orch_config_template();
	struct orch_config *c;
	size_t n = 0;

	(void)state;
	while (*line) {
		size_t len = strcspn(line, "\n");

		if (len > 4 && strncmp(line, "#   ", 4) == 0) {
			(void)sbuf_add(&sb, line + 4, len - 4);
			(void)sbuf_addc(&sb, '\n');
			n++;
		}
		line += len + (line[len] == '\n');
	}
	assert_true(n >= 6);
	c = load_text(sb.buf, NULL);
	assert_int_equal(c->n_gates, 1);
	assert_string_equal(c->gates[0].run, "make test");
	assert_non_null(orch_config_mode(c, "careful"));
	assert_string_equal(orch_config_role(c, "backend")->adapter, "qwen");
	assert_string_equal(orch_endpoints_find(&c->endpoints, "codex")->api_key_env,
			    "OPENAI_API_KEY");
	orch_config_free(c);
	sbuf_release(&sb);
}

static void test_yaml_round_trip(void **state)
{
	static const char *const files[] = {"good/full.yaml", "good/empty.yaml", NULL};
	size_t i;

	(void)state;
	for (i = 0; files[i]; i++) {
		struct orch_config *c = load_data(files[i]), *back;
		struct sbuf sb = SBUF_INIT(SIZE_MAX);

		assert_int_equal(orch_config_to_yaml(c, &sb), 0);
		back = load_text(sb.buf, NULL);
		assert_same_config(c, back);
		orch_config_free(back);
		orch_config_free(c);
		sbuf_release(&sb);
	}
}

static void test_round_trip_odd_strings(void **state)
{
	static const char text[] = "model: \"a \\\"quoted\\\" name: with # and \\u00e9\"\n"
				   "gates:\n"
				   "  - {name: \"t: 1\", run: \"printf '%s\\\\n' x | grep -q x\"}\n"
				   "retry_backoff: 0.1\n"
				   "timeout: 1e3\n";
	struct orch_config *c = load_text(text, NULL), *back;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)state;
	assert_string_equal(c->model, "a \"quoted\" name: with # and \xc3\xa9");
	assert_string_equal(c->gates[0].run, "printf '%s\\n' x | grep -q x");
	assert_true(c->timeout_s == 1000.0);
	assert_int_equal(orch_config_to_yaml(c, &sb), 0);
	back = load_text(sb.buf, NULL);
	assert_same_config(c, back);
	assert_true(back->retry_backoff_s == 0.1);
	orch_config_free(back);
	orch_config_free(c);
	sbuf_release(&sb);
}

/* limits: bernstein.yaml's and a role's survive the YAML round trip. */
static void test_limits_round_trip(void **state)
{
	static const char text[] = "limits: {memory: 512M, pids: 64, cpu: 1.5}\n"
				   "role_model_policy:\n"
				   "  qa: {model: m, limits: {pids: 24}}\n"
				   "  docs: {limits: {memory: 1G, cpu: 0.25}}\n";
	struct orch_config *c = load_text(text, NULL), *back;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	const struct role_policy *qa, *docs;

	(void)state;
	assert_int_equal(orch_config_to_yaml(c, &sb), 0);
	back = load_text(sb.buf, NULL);
	assert_true(back->limits.memory == (uint64_t)512 << 20);
	assert_true(back->limits.pids == 64 && back->limits.cpu_milli == 1500);
	qa = orch_config_role(back, "qa");
	docs = orch_config_role(back, "docs");
	assert_non_null(qa);
	assert_non_null(docs);
	assert_true(qa->limits.pids == 24 && !qa->limits.memory && !qa->limits.cpu_milli);
	assert_string_equal(qa->model, "m");
	assert_true(docs->limits.memory == (uint64_t)1 << 30 && docs->limits.cpu_milli == 250);
	orch_config_free(back);
	orch_config_free(c);
	sbuf_release(&sb);
}

/* worktree_setup: bernstein.yaml's and a role's, merged key by key for the
 * role's tasks; the YAML round trip and the JSON keep the keys given. */
static void test_wtsetup(void **state)
{
	static const char text[] =
		"worktree_setup: {copy_files: [.env], symlink_dirs: [node_modules], "
		"setup_command: \"npm ci\", timeout: 120}\n"
		"role_model_policy:\n"
		"  qa: {worktree_setup: {setup_command: \"make deps\", symlink_dirs: []}}\n"
		"  docs: {worktree_setup: {setup_command: null}}\n";
	struct orch_config *c = load_text(text, NULL), *back;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct orch_wtsetup w;
	json_t *j;

	(void)state;
	orch_config_wtsetup(c, "backend", &w);
	assert_string_equal(w.setup_command, "npm ci");
	assert_true(wtsetup_timeout(&w) == 120);
	assert_int_equal(w.n_links, 1);
	orch_config_wtsetup(c, "qa", &w);
	assert_string_equal(w.setup_command, "make deps");
	assert_true(wtsetup_timeout(&w) == 120);
	assert_int_equal(w.n_copy, 1);
	assert_string_equal(w.copy_files[0], ".env");
	assert_int_equal(w.n_links, 0);
	orch_config_wtsetup(c, "docs", &w);
	assert_null(w.setup_command);
	assert_int_equal(w.n_links, 1);
	assert_int_equal(orch_config_to_yaml(c, &sb), 0);
	back = load_text(sb.buf, NULL);
	orch_config_wtsetup(back, "qa", &w);
	assert_string_equal(w.setup_command, "make deps");
	assert_int_equal(w.n_links, 0);
	assert_true(wtsetup_timeout(&w) == 120);
	orch_config_wtsetup(back, "docs", &w);
	assert_null(w.setup_command);
	assert_true(orch_config_role(back, "docs")->wtsetup.set == WTSETUP_COMMAND);
	j = orch_config_json(back);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "worktree_setup"),
							      "setup_command")),
			    "npm ci");
	assert_true(json_is_null(json_object_get(
		json_object_get(json_object_get(json_object_get(j, "role_model_policy"), "docs"),
				"worktree_setup"),
		"setup_command")));
	json_decref(j);
	orch_config_free(back);
	orch_config_free(c);
	sbuf_release(&sb);
}

static void test_json(void **state)
{
	struct orch_config *c = load_data("good/full.yaml");
	json_t *j = orch_config_json(c), *m;

	(void)state;
	assert_string_equal(json_string_value(json_object_get(j, "merge")), "none");
	assert_int_equal(json_integer_value(json_object_get(j, "parallel")), 8);
	assert_true(json_real_value(json_object_get(j, "timeout")) == 90.5);
	m = json_object_get(json_object_get(j, "modes"), "smart");
	assert_true(json_is_true(json_object_get(m, "builtin")));
	m = json_object_get(json_object_get(j, "modes"), "fast");
	assert_true(json_is_false(json_object_get(m, "builtin")));
	m = json_object_get(json_object_get(j, "role_model_policy"), "qa");
	assert_string_equal(json_string_value(json_object_get(m, "adapter")), "codex");
	assert_true(json_is_null(json_object_get(m, "base_url")));
	json_decref(j);
	orch_config_free(c);
}

static void test_too_large(void **state)
{
	size_t n = ORCH_CONFIG_MAX_BYTES + 1;
	char *big = xmalloc(n + 1);
	struct orch_config *c = NULL;
	struct diag d;

	(void)state;
	memset(big, '#', n);
	big[n] = '\0';
	diag_clear(&d);
	assert_int_equal(orch_config_load_buf("big.yaml", big, n, NULL, &c, &d), -EFBIG);
	assert_null(c);
	assert_string_equal(d.file, "big.yaml");
	free(big);
}

/* merge: review | pr (and no-ff, the old name of auto); pr: its settings,
 * shown and written back. */
static void test_merge_policies(void **state)
{
	struct orch_config *c, *back;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *j;

	(void)state;
	c = load_text("merge: no-ff\n", NULL);
	assert_int_equal(c->merge, MERGE_AUTO);
	orch_config_free(c);
	c = load_text("merge: review\n", NULL);
	assert_int_equal(c->merge, MERGE_REVIEW);
	orch_config_free(c);
	c = load_text("merge: pr\n", NULL);
	assert_int_equal(c->merge, MERGE_PR);
	assert_string_equal(c->pr.remote, "origin");
	assert_null(c->pr.base);
	assert_null(c->pr.repo);
	assert_true(c->pr.draft);
	orch_config_free(c);
	c = load_text(
		"merge: pr\npr: {remote: \"git@github.com:acme/w.git\", base: dev, repo: acme/w, draft: false}\n",
		NULL);
	assert_string_equal(c->pr.remote, "git@github.com:acme/w.git");
	assert_string_equal(c->pr.base, "dev");
	assert_string_equal(c->pr.repo, "acme/w");
	assert_false(c->pr.draft);
	j = orch_config_json(c);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "pr"), "base")),
			    "dev");
	json_decref(j);
	assert_int_equal(orch_config_to_yaml(c, &sb), 0);
	back = load_text(sb.buf, NULL);
	assert_int_equal(back->merge, MERGE_PR);
	assert_string_equal(back->pr.remote, c->pr.remote);
	assert_string_equal(back->pr.base, "dev");
	assert_string_equal(back->pr.repo, "acme/w");
	assert_false(back->pr.draft);
	orch_config_free(back);
	orch_config_free(c);
	sbuf_release(&sb);
}

/* checkout: its values, the default, JSON and the YAML round trip. */
static void test_checkout(void **state)
{
	struct orch_config *c, *back;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *j;

	(void)state;
	c = load_text("adapter: mock\n", NULL);
	assert_int_equal(c->checkout, CHECKOUT_MODE_AUTO);
	j = orch_config_json(c);
	assert_null(json_object_get(j, "checkout")); /* shown when set */
	json_decref(j);
	orch_config_free(c);
	c = load_text("checkout: worktree\n", NULL);
	assert_int_equal(c->checkout, CHECKOUT_MODE_WORKTREE);
	orch_config_free(c);
	c = load_text("checkout: overlay\n", NULL);
	assert_int_equal(c->checkout, CHECKOUT_MODE_OVERLAY);
	j = orch_config_json(c);
	assert_string_equal(json_string_value(json_object_get(j, "checkout")), "overlay");
	json_decref(j);
	assert_int_equal(orch_config_to_yaml(c, &sb), 0);
	back = load_text(sb.buf, NULL);
	assert_int_equal(back->checkout, CHECKOUT_MODE_OVERLAY);
	orch_config_free(back);
	orch_config_free(c);
	sbuf_release(&sb);
}

/* on_conflict: at the top and a role's, resolver:, and their round trip. */
static void test_on_conflict(void **state)
{
	struct orch_config *c, *back;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *j;

	(void)state;
	c = load_text("on_conflict: fail\n", NULL);
	assert_int_equal(c->on_conflict, CONFLICT_FAIL);
	assert_int_equal(orch_config_on_conflict(c, "backend"), CONFLICT_FAIL);
	orch_config_free(c);
	c = load_text("on_conflict: resolve\n"
		      "resolver: {adapter: mock, model: big}\n"
		      "role_model_policy:\n"
		      "  docs: {on_conflict: fail}\n"
		      "  resolver: {adapter: codex, model: small}\n",
		      NULL);
	assert_int_equal(c->on_conflict, CONFLICT_RESOLVE);
	assert_string_equal(c->resolver.adapter, "mock");
	assert_string_equal(c->resolver.model, "big");
	assert_int_equal(orch_config_on_conflict(c, "docs"), CONFLICT_FAIL);
	assert_int_equal(orch_config_on_conflict(c, "backend"), CONFLICT_RESOLVE);
	assert_int_equal(orch_config_on_conflict(c, "resolver"), CONFLICT_RESOLVE);
	j = orch_config_json(c);
	assert_string_equal(json_string_value(json_object_get(j, "on_conflict")), "resolve");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j, "resolver"), "adapter")),
		"mock");
	json_decref(j);
	assert_int_equal(orch_config_to_yaml(c, &sb), 0);
	back = load_text(sb.buf, NULL);
	assert_same_config(c, back);
	assert_int_equal(orch_config_on_conflict(back, "docs"), CONFLICT_FAIL);
	orch_config_free(back);
	orch_config_free(c);
	sbuf_release(&sb);
	/* the default is not written out: the JSON of old configurations stays */
	c = load_text("on_conflict: rebase\n", NULL);
	j = orch_config_json(c);
	assert_null(json_object_get(j, "on_conflict"));
	json_decref(j);
	orch_config_free(c);
	assert_string_equal(conflict_policy_to_string(CONFLICT_RESOLVE), "resolve");
	assert_int_equal(conflict_policy_from_string("fail"), CONFLICT_FAIL);
	assert_int_equal(conflict_policy_from_string("merge"), _CONFLICT_POLICY_INVALID);
	assert_int_equal(conflict_policy_from_string(NULL), _CONFLICT_POLICY_INVALID);
	assert_null(conflict_policy_to_string(_CONFLICT_POLICY_MAX));
}

static void test_names(void **state)
{
	(void)state;
	assert_true(orch_role_known("backend"));
	assert_true(orch_role_known("data"));
	assert_true(orch_role_known("ci-fixer"));
	assert_false(orch_role_known("Backend"));
	assert_false(orch_role_known(""));
	assert_false(orch_role_known(NULL));
	assert_string_equal(merge_policy_to_string(MERGE_NONE), "none");
	assert_int_equal(merge_policy_from_string("no-ff"), MERGE_AUTO);
	assert_int_equal(merge_policy_from_string("auto"), MERGE_AUTO);
	assert_int_equal(merge_policy_from_string("review"), MERGE_REVIEW);
	assert_int_equal(merge_policy_from_string("pr"), MERGE_PR);
	assert_string_equal(merge_policy_to_string(MERGE_AUTO), "auto");
	assert_int_equal(merge_policy_from_string("ff"), _MERGE_POLICY_INVALID);
	assert_null(merge_policy_to_string(_MERGE_POLICY_MAX));
}

/* hooks: and notify: (orch/hooks.h): values, defaults, errors at their
 * line:col, and the webhook never shown whole */
static void test_hooks_notify(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{"hooks: [a]\n", "mem.yaml:1:8: field 'hooks': expected a mapping of hooks"},
		{"hooks:\n  pre_tsk: x\n", "mem.yaml:2:3: unknown key 'pre_tsk' in hooks"},
		{"hooks:\n  pre_task: [x]\n",
		 "mem.yaml:2:13: field 'hooks.pre_task': expected a command (a string) or {run, timeout}"},
		{"hooks:\n  post_task: {timeout: 3}\n",
		 "mem.yaml:2:14: field 'hooks.post_task': missing required key 'run'"},
		{"hooks:\n  on_run_end: {run: x, timeout: 0}\n",
		 "mem.yaml:2:33: field 'hooks.on_run_end.timeout': 0 is out of range"},
		{"notify:\n  on: [task_exploded]\n", "mem.yaml:2:8: field 'notify.on[0]'"},
		{"notify:\n  webhook: \"http://u:SECRETSECRET@h:99999/x\"\n",
		 "mem.yaml:2:12: field 'notify.webhook': webhook 'http://***@h:99999/***': invalid port '99999'"},
		{"notify:\n  webhook: http://h/x\n  webhook_env: HOOK\n",
		 "mem.yaml:3:16: field 'notify.webhook_env': give webhook or webhook_env, not both"},
		{"notify:\n  webhook_env: lower\n",
		 "mem.yaml:2:16: field 'notify.webhook_env': expected a variable name"},
		{"notify:\n  retries: 11\n", "mem.yaml:2:12: field 'notify.retries'"},
		{"notify:\n  desktop: yes\n",
		 "mem.yaml:2:12: field 'notify.desktop': expected true or false"},
	};
	struct orch_config *c;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *j;
	char *dump;
	size_t i;

	(void)state;
	c = load_text(
		"hooks:\n  pre_task: ./check\n  pre_merge: {run: make lint, timeout: 2.5}\n"
		"notify:\n  webhook: \"https://u:SECRETSECRET@hooks.example.com/T/SECRETPATH\"\n"
		"  on: [run_done, task_failed]\n",
		NULL);
	assert_string_equal(c->hooks.h[HOOK_PRE_TASK].run, "./check");
	assert_true(c->hooks.h[HOOK_PRE_TASK].timeout_s == HOOK_DEFAULT_TIMEOUT_S);
	assert_string_equal(c->hooks.h[HOOK_PRE_MERGE].run, "make lint");
	assert_true(c->hooks.h[HOOK_PRE_MERGE].timeout_s == 2.5);
	assert_null(c->hooks.h[HOOK_POST_TASK].run);
	assert_int_equal(c->notify.on, (1u << NOTIFY_RUN_DONE) | (1u << NOTIFY_TASK_FAILED));
	assert_false(c->notify.desktop);
	assert_int_equal(c->notify.retries, NOTIFY_DEFAULT_RETRIES);
	j = orch_config_json(c);
	dump = json_dumps(j, 0);
	assert_null(strstr(dump, "SECRET"));
	assert_non_null(strstr(dump, "https://***@hooks.example.com/***"));
	free(dump);
	json_decref(j);
	assert_int_equal(orch_config_to_yaml(c, &sb), 0);
	assert_null(strstr(sb.buf, "SECRET"));
	sbuf_release(&sb);
	orch_config_free(c);
	c = load_text("notify: {desktop: true}\n", NULL);
	assert_int_equal(c->notify.on, NOTIFY_DEFAULT_ON);
	assert_true(c->notify.desktop);
	orch_config_free(c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct diag d = load_text_fail(bad[i].text, NULL);
		char full[8192];

		(void)snprintf(full, sizeof(full), "%.64s:%u:%u: %.1024s", d.file, d.line, d.col,
			       d.msg);
		if (strncmp(full, bad[i].msg, strlen(bad[i].msg)) != 0)
			fail_msg("'%s':\n  got  %s\n  want %s...", bad[i].text, full, bad[i].msg);
		assert_null(strstr(full, "SECRET"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_empty_and_nulls_are_defaults),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_api_key_env_allow_list),
		cmocka_unit_test(test_base_url_rule),
		cmocka_unit_test(test_slot_precedence),
		cmocka_unit_test(test_endpoints_precedence),
		cmocka_unit_test(test_endpoints_errors),
		cmocka_unit_test(test_endpoints_roundtrip),
		cmocka_unit_test(test_template_loads_to_defaults),
		cmocka_unit_test(test_template_examples_load),
		cmocka_unit_test(test_yaml_round_trip),
		cmocka_unit_test(test_round_trip_odd_strings),
		cmocka_unit_test(test_limits_round_trip),
		cmocka_unit_test(test_wtsetup),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_merge_policies),
		cmocka_unit_test(test_checkout),
		cmocka_unit_test(test_on_conflict),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_hooks_notify),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
