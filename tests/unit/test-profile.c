/* Capability profiles: the schema and its validation (gate 1), the content
 * address, the contract cross-check (gate 2), registry integration (gate 3),
 * the shipped catalogue against the measured CLIs, and the broken-profile
 * corpus of tests/data/profiles/bad/. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter/argv-order.h"
#include "adapter/catalog.h"
#include "adapter/contract.h"
#include "adapter/profile.h"

static size_t profile_canonical_len(const struct profile *p)
{
	size_t n;

	(void)profile_canonical_bytes(p, &n);
	return n;
}
#include "adapter/strategy.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/strvec.h"
#include "util/xalloc.h"

/* ---- helpers ---- */

static const char *srcdir(void)
{
	const char *s = getenv("SRCDIR");

	return s && s[0] ? s : ".";
}

static struct profile *load(const char *name, const char *text)
{
	struct profile *p = NULL;
	struct diag d;

	diag_clear(&d);
	if (profile_load_buf("mem.yaml", name, text, strlen(text), &p, &d) < 0)
		fail_msg("%s: %u:%u: %s", name, d.line, d.col, d.msg);
	return p;
}

/* Load text expecting failure; returns the diag. */
static struct diag load_fail(const char *name, const char *text)
{
	struct profile *p = NULL;
	struct diag d;

	diag_clear(&d);
	assert_int_equal(profile_load_buf("mem.yaml", name, text, strlen(text), &p, &d), -EINVAL);
	assert_null(p);
	return d;
}

static struct catalog *load_catalog(const char *user, const char *repo)
{
	struct catalog *cat = NULL;
	struct diag d;

	diag_clear(&d);
	if (catalog_load(user, repo, &cat, &d) < 0)
		fail_msg("catalogue: %s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	return cat;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

struct tmpdir {
	char path[64];
};

static void tmp_init(struct tmpdir *t)
{
	(void)snprintf(t->path, sizeof(t->path), "/tmp/test-profile.XXXXXX");
	assert_non_null(mkdtemp(t->path));
}

static char *tmp_write(struct tmpdir *t, const char *rel, const char *text)
{
	struct strvec p = STRVEC_INIT;
	char dir[PATH_MAX], *r;

	strvec_pushf(&p, "%s/%s", t->path, rel);
	path_dirname(p.v[0], dir, sizeof(dir));
	assert_int_equal(mkdir_p(dir, 0700), 0);
	assert_int_equal(atomic_write_file(p.v[0], text, strlen(text), 0600), 0);
	r = xstrdup(p.v[0]);
	strvec_clear(&p);
	return r;
}

static void tmp_release(struct tmpdir *t)
{
	assert_int_equal(nftw(t->path, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void assert_argv(const struct strvec *got, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++) {
		if (i >= got->nr)
			fail_msg("argv too short: no [%zu] '%s'", i, want[i]);
		if (strcmp(got->v[i], want[i]) != 0)
			fail_msg("argv[%zu] is '%s', expected '%s'", i, got->v[i], want[i]);
	}
	if (got->nr != i)
		fail_msg("argv has %zu elements, expected %zu (extra '%s')", got->nr, i, got->v[i]);
}

static const char *const registry_only[] = {"clm",	  "cloudflare", "iac",
					    "letta_code", "ollama",	"ralphex"};

static bool is_registry_only(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(registry_only); i++)
		if (strcmp(registry_only[i], name) == 0)
			return true;
	return false;
}

/* ---- the shipped catalogue ---- */

static void test_shipped_split(void **state)
{
	struct catalog *cat = load_catalog(NULL, NULL);
	size_t i, profiles = 0;

	(void)state;
	assert_int_equal(cat->n_entries, 51);
	for (i = 0; i < cat->n_entries; i++) {
		const struct registry_entry *e = cat->entries[i];

		if (is_registry_only(e->name)) {
			assert_null(e->profile);
			assert_string_equal(e->origin.file, "<embedded>/registry.yaml");
			continue;
		}
		if (!e->profile)
			fail_msg("%s: no capability profile", e->name);
		profiles++;
		/* an ordinary registry entry built from its profile */
		assert_string_equal(e->name, e->profile->name);
		assert_string_equal(e->display_name, e->profile->display_name);
		assert_int_equal(e->builtin, e->profile->builtin);
		if (!e->builtin)
			assert_string_equal(e->binary, e->profile->invocation.binary);
		assert_ptr_equal(e->strategy, e->profile->strategy);
		assert_int_equal(e->layer, 0);
	}
	assert_int_equal(profiles, 45);
	/* every embedded profile file is one of them, named after its file */
	for (const struct catalog_file *f = catalog_embedded; f->name; f++) {
		char stem[PROFILE_MAX_NAME + 2];

		if (strncmp(f->name, "profiles/", 9) != 0)
			continue;
		assert_int_equal(profile_stem(f->name, stem, sizeof(stem)), 0);
		assert_non_null(catalog_find(cat, stem));
		assert_non_null(catalog_find(cat, stem)->profile);
	}
	/* conformance: all of them declared in the matrix */
	assert_int_equal(catalog_check(cat, NULL, NULL), 0);
	catalog_free(cat);
}

/* Shipped profiles agree with their matrix row, pass every gate, claim vision
 * only where multimodal.yaml grants it, and have copy in use-cases.yaml. */
static void test_shipped_gates(void **state)
{
	struct catalog *cat = load_catalog(NULL, NULL);
	size_t i, a, n_vision = 0;

	(void)state;
	assert_non_null(cat->contracts);
	for (i = 0; i < cat->n_entries; i++) {
		const struct registry_entry *e = cat->entries[i];
		const struct profile *p = e->profile;
		const struct matrix_row *row = catalog_matrix_find(cat, e->name);
		const struct use_case *u = catalog_use_case(cat, e->name);
		struct diag_list is = PROFILE_ISSUES_INIT;

		assert_non_null(row);
		if (!u || !u->summary[0] || !u->install[0])
			fail_msg("%s: no copy in use-cases.yaml", e->name);
		if (!p)
			continue;
		if (p->strategy)
			for (a = 0; a < _AXIS_MAX; a++)
				if (axis_get(&p->strategy->strategy, (enum axis)a) !=
				    axis_get(&row->decl.strategy, (enum axis)a))
					fail_msg("%s: inline %s differs from the matrix", p->name,
						 axis_name((enum axis)a));
		if (p->caps.vision) {
			n_vision++;
			assert_true(catalog_vision(cat, p->name));
		}
		if (catalog_check_profile(cat, p, CATALOG_CHECK_STANDALONE, &is))
			fail_msg("%s: %s:%u:%u: %s", p->name, is.v[0].file, is.v[0].line,
				 is.v[0].col, is.v[0].msg);
		diag_list_release(&is);
		/* the hash is SHA-256 of the bytes kept as canonical */
		{
			char hex[SHA256_HEX_LEN + 1];

			hash_sha256_hex(profile_canonical_bytes(p, NULL), profile_canonical_len(p),
					hex);
			assert_string_equal(hex, profile_hash(p));
		}
	}
	/* multimodal.yaml: exactly Bernstein's three, and all three use it */
	assert_int_equal(cat->n_multimodal, 3);
	assert_true(catalog_vision(cat, "claude"));
	assert_true(catalog_vision(cat, "gemini"));
	assert_true(catalog_vision(cat, "antigravity"));
	assert_false(catalog_vision(cat, "codex"));
	assert_int_equal(n_vision, 3);
	assert_int_equal(cat->n_use_cases, 51);
	catalog_free(cat);
}

static const struct profile *shipped(const struct catalog *cat, const char *name)
{
	const struct registry_entry *e = catalog_find(cat, name);

	assert_non_null(e);
	assert_non_null(e->profile);
	return e->profile;
}

static void build(const struct profile *p, const char *model, const char *prompt,
		  struct strvec *argv)
{
	struct profile_vars v = {.v = {NULL}};

	v.v[PH_WORKDIR] = "/w";
	v.v[PH_HOME] = "/h";
	strvec_clear(argv);
	assert_int_equal(profile_build_argv(p, NULL, model, prompt, &v, argv), 0);
}

static bool has_env(const struct profile_map *m, const char *k, const char *v)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (strcmp(m->keys[i], k) == 0)
			return strcmp(m->values[i], v) == 0;
	return false;
}

static bool strv_is(const struct profile_strv *sv, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++)
		if (i >= sv->n || strcmp(sv->v[i], want[i]) != 0)
			return false;
	return i == sv->n;
}

/* The six CLIs measured in research/agent-clis.md. */
static void test_six_clis(void **state)
{
	struct catalog *cat = load_catalog(NULL, NULL);
	struct strvec argv = STRVEC_INIT;
	const struct profile *p;
	const char *six[] = {"claude", "codex", "gemini", "qwen", "opencode", "pi"};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(six); i++) {
		p = shipped(cat, six[i]);
		assert_int_equal(p->shape, PROFILE_SHAPE_FACTORY);
		/* backed by the contract of the same name */
		assert_non_null(contract_index_find(cat->contracts, six[i]));
		assert_string_equal(p->contract, six[i]);
		/* a private agent HOME, a JSON event dialect, stdin for long prompts */
		assert_int_equal(p->runtime.home, AGENT_HOME_ISOLATED);
		assert_true(p->runtime.dialect_declared);
		assert_string_equal(event_dialect_to_string(p->runtime.dialect), six[i]);
		assert_true(p->runtime.long_prompt.declared);
		assert_int_equal(p->runtime.long_prompt.via, PROMPT_VIA_STDIN);
		assert_true(p->caps.supports_endpoint);
		assert_true(p->runtime.endpoint.declared);
		assert_true(p->runtime.resume.declared);
	}

	p = shipped(cat, "claude");
	build(p, "sonnet", "fix it", &argv);
	assert_argv(&argv,
		    (const char *[]){"claude", "--model", "claude-sonnet-4-6", "--output-format",
				     "stream-json", "--verbose", "-p", "fix it", NULL});
	assert_true(strv_is(&p->runtime.resume.args,
			    (const char *[]){"--resume", "{session_id}", NULL}));
	assert_true(strv_is(&p->runtime.dangerous.args,
			    (const char *[]){"--dangerously-skip-permissions", NULL}));
	assert_true(has_env(&p->runtime.dangerous.env, "IS_SANDBOX", "1"));
	assert_true(strv_is(&p->runtime.session_id.args,
			    (const char *[]){"--session-id", "{session_id}", NULL}));
	assert_int_equal(p->runtime.session_id.format, SESSION_ID_FORMAT_UUID);
	assert_true(has_env(&p->runtime.env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"));
	assert_true(has_env(&p->runtime.env, "DISABLE_AUTOUPDATER", "1"));
	assert_true(has_env(&p->runtime.endpoint.env, "ANTHROPIC_BASE_URL", "{base_url}"));
	assert_true(p->caps.vision);

	p = shipped(cat, "codex");
	build(p, "gpt-5.5", "fix it", &argv);
	assert_argv(&argv, (const char *[]){"codex", "exec", "-m", "gpt-5.5", "--json",
					    "--skip-git-repo-check", "fix it", NULL});
	assert_true(
		strv_is(&p->runtime.resume.args, (const char *[]){"resume", "{session_id}", NULL}));
	assert_int_equal(p->runtime.resume.position, RESUME_POSITION_BEFORE_PROMPT);
	assert_true(strv_is(&p->runtime.dangerous.args,
			    (const char *[]){"--dangerously-bypass-approvals-and-sandbox", NULL}));
	assert_false(p->runtime.session_id.declared); /* no pre-assign */
	assert_true(strv_is(&p->runtime.long_prompt.args, (const char *[]){"-", NULL}));
	assert_int_equal(p->runtime.files.n, 1);
	assert_string_equal(p->runtime.files.v[0].path, ".codex/config.toml");
	assert_int_equal(p->runtime.files.v[0].mode, 0600);
	assert_non_null(strstr(p->runtime.files.v[0].content, "[analytics]\nenabled = false"));
	assert_non_null(strstr(p->runtime.files.v[0].content, "plugins = false"));
	assert_non_null(
		strstr(p->runtime.files.v[0].content, "check_for_update_on_startup = false"));
	assert_int_equal(p->runtime.endpoint.files.n, 1);
	assert_string_equal(p->runtime.endpoint.files.v[0].path, ".codex/config.toml");
	assert_non_null(
		strstr(p->runtime.endpoint.files.v[0].content,
		       "[model_providers.local]\nname = \"local\"\nbase_url = \"{base_url}\"\n"
		       "env_key = \"{api_key_env}\"\nwire_api = \"responses\""));

	p = shipped(cat, "gemini");
	build(p, "gemini-2.5-pro", "fix it", &argv);
	assert_argv(&argv, (const char *[]){"gemini", "-m", "gemini-2.5-pro", "-o", "stream-json",
					    "-p", "fix it", NULL});
	assert_true(strv_is(&p->runtime.dangerous.args,
			    (const char *[]){"--yolo", "--skip-trust", NULL}));
	assert_int_equal(p->runtime.long_prompt.args.n, 0); /* stdin without -p */
	assert_non_null(strstr(p->runtime.files.v[0].content, "\"usageStatisticsEnabled\": false"));
	assert_non_null(
		strstr(p->runtime.files.v[0].content, "\"selectedType\": \"gemini-api-key\""));

	p = shipped(cat, "qwen");
	build(p, "haiku", "fix it", &argv);
	assert_argv(&argv, (const char *[]){"qwen", "-m", "qwen3-coder-plus", "-o", "stream-json",
					    "fix it", NULL});
	assert_true(strv_is(&p->runtime.dangerous.args, (const char *[]){"--yolo", NULL}));
	assert_true(strv_is(&p->runtime.endpoint.args,
			    (const char *[]){"--auth-type", "openai", NULL}));

	p = shipped(cat, "opencode");
	build(p, "anthropic/claude-sonnet-4-6", "fix it", &argv);
	assert_argv(&argv, (const char *[]){"opencode", "run", "-m", "anthropic/claude-sonnet-4-6",
					    "--format", "json", "fix it", NULL});
	assert_true(strv_is(&p->runtime.resume.args,
			    (const char *[]){"--session", "{session_id}", NULL}));
	assert_true(strv_is(&p->runtime.dangerous.args, (const char *[]){"--auto", NULL}));
	assert_true(has_env(&p->runtime.env, "OPENCODE_DISABLE_MODELS_FETCH", "1"));
	assert_true(has_env(&p->runtime.env, "npm_config_offline", "true"));
	assert_string_equal(p->runtime.endpoint.model, "local/{model}");

	p = shipped(cat, "pi");
	build(p, "google/gemini-2.5-flash", "fix it", &argv);
	assert_argv(&argv, (const char *[]){"pi", "--model", "google/gemini-2.5-flash", "--mode",
					    "json", "-p", "fix it", NULL});
	assert_true(strv_is(&p->runtime.resume.args,
			    (const char *[]){"--session", "{session_id}", NULL}));
	assert_int_equal(p->runtime.dangerous.args.n + p->runtime.dangerous.env.n, 0);
	assert_true(has_env(&p->runtime.env, "PI_OFFLINE", "1"));

	/* the module profiles */
	p = shipped(cat, "openai_agents");
	assert_int_equal(p->shape, PROFILE_SHAPE_MODULE);
	assert_true(p->builtin);
	assert_true(p->caps.supports_sampling_params);
	p = shipped(cat, "mock");
	assert_int_equal(p->shape, PROFILE_SHAPE_MODULE);
	assert_true(p->builtin);
	p = shipped(cat, "generic");
	assert_int_equal(p->shape, PROFILE_SHAPE_MODULE);
	assert_false(p->builtin);
	/* registry names whose contract file has another name */
	assert_string_equal(shipped(cat, "charm")->contract, "crush");
	assert_string_equal(shipped(cat, "continue")->contract, "continue_dev");
	strvec_clear(&argv);
	catalog_free(cat);
}

/* Agents nobody has profiled: the generic profile with another binary. */
static void test_generic_adapter(void **state)
{
	struct catalog *cat = load_catalog(NULL, NULL);
	const struct profile *g = shipped(cat, "generic");
	struct strvec argv = STRVEC_INIT;

	(void)state;
	assert_int_equal(profile_build_argv(g, "my-agent", "m1", "do it", NULL, &argv), 0);
	assert_argv(&argv,
		    (const char *[]){"my-agent", "--model", "m1", "--prompt", "do it", NULL});
	strvec_clear(&argv);
	/* no model: the flag is left out */
	assert_int_equal(profile_build_argv(g, "my-agent", NULL, "do it", NULL, &argv), 0);
	assert_argv(&argv, (const char *[]){"my-agent", "--prompt", "do it", NULL});
	strvec_clear(&argv);
	catalog_free(cat);
}

/* ---- the content address ---- */

static const char mini[] = "name: mini\n"
			   "display_name: Mini\n"
			   "shape: factory\n"
			   "invocation:\n"
			   "  binary: mini-agent\n"
			   "  prompt_positional: true\n";

/* The same declaration with every default spelled out, and notes. */
static const char mini_explicit[] = "# comments and order do not matter\n"
				    "notes: not hashed\n"
				    "shape: factory\n"
				    "name: mini\n"
				    "display_name: 'Mini'\n"
				    "builtin: false\n"
				    "contract: mini\n"
				    "version_args: [--version]\n"
				    "invocation:\n"
				    "  binary: mini-agent\n"
				    "  subcommands: []\n"
				    "  prompt_positional: true\n"
				    "  prompt_guard: none\n"
				    "  extra_args: []\n"
				    "  env_passthrough: []\n"
				    "capabilities:\n"
				    "  vision: false\n"
				    "  sandbox: none\n"
				    "  max_parallel_workers: 1\n"
				    "  supports_endpoint: false\n"
				    "models: {}\n"
				    "runtime:\n"
				    "  home: inherit\n"
				    "  env: {}\n"
				    "  files: []\n"
				    "  dangerous: {args: [], env: {}}\n";

/* The exact object hashed, written out by hand (docs/profile-format.md). */
static const char mini_canonical[] =
	"{\"builtin\":false,\"capabilities\":{\"agents_md\":false,\"computer_use\":false,\"local_models\":false,\"max_parallel_workers\":1,\"mcp_client\":false,\"mcp_server\":false,\"native_subagents\":false,\"sandbox\":\"none\",\"streaming\":false,\"supports_endpoint\":false,\"supports_max_tokens\":false,\"supports_sampling_params\":false,\"supports_temperature\":false,\"supports_top_k\":false,\"supports_top_p\":false,\"tool_use\":false,\"vision\":false},\"contract\":\"mini\",\"display_name\":\"Mini\",\"invocation\":{\"binary\":\"mini-agent\",\"env_passthrough\":[],\"extra_args\":[],\"model_flag\":null,\"prompt_file_flag\":null,\"prompt_flag\":null,\"prompt_guard\":\"none\",\"prompt_positional\":true,\"subcommands\":[]},\"models\":{},\"name\":\"mini\",\"runtime\":{\"dangerous\":{\"args\":[],\"env\":{}},\"endpoint\":{\"args\":[],\"default_model\":null,\"env\":{},\"files\":[],\"model\":\"{model}\"},\"env\":{},\"events\":{\"dialect\":null},\"files\":[],\"git_dir\":\"refused\",\"home\":\"inherit\",\"hooks\":null,\"long_prompt\":null,\"resume\":null,\"session_id\":null},\"shape\":\"factory\",\"strategy\":null,\"version_args\":[\"--version\"]}";

static void test_hash(void **state)
{
	struct profile *a = load("mini", mini), *b = load("mini", mini_explicit), *c;
	char hex[SHA256_HEX_LEN + 1];
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *j;

	(void)state;
	assert_string_equal(profile_canonical_bytes(a, NULL), mini_canonical);
	assert_int_equal(profile_canonical_len(a), strlen(mini_canonical));
	hash_sha256_hex(mini_canonical, strlen(mini_canonical), hex);
	assert_string_equal(profile_hash(a), hex);
	/* two files that mean the same hash the same; notes are not hashed */
	assert_string_equal(profile_hash(b), profile_hash(a));
	assert_string_equal(b->notes, "not hashed");
	/* profile_canonical() is what was hashed */
	j = profile_canonical(a);
	assert_int_equal(json_canon_jcs(j, &sb), 0);
	assert_string_equal(sb.buf, mini_canonical);
	json_decref(j);
	sbuf_release(&sb);
	/* any change of meaning changes it */
	c = load("mini", "name: mini\ndisplay_name: Mini2\nshape: factory\n"
			 "invocation: {binary: mini-agent, prompt_positional: true}\n");
	assert_string_not_equal(profile_hash(c), profile_hash(a));
	profile_free(c);
	c = load("mini", "name: mini\ndisplay_name: Mini\nshape: factory\n"
			 "invocation: {binary: mini-agent, prompt_positional: true}\n"
			 "capabilities: {max_parallel_workers: 2}\n");
	assert_string_not_equal(profile_hash(c), profile_hash(a));
	assert_non_null(strstr(profile_canonical_bytes(c, NULL), "\"max_parallel_workers\":2,"));
	profile_free(c);
	/* an inline strategy is hashed with all five axes, its note is not */
	c = load(
		"mini",
		"name: mini\ndisplay_name: Mini\nshape: factory\n"
		"invocation: {binary: mini-agent, prompt_positional: true}\n"
		"strategy: {resume: unsupported, dangerous_mode: unsupported, event_channel: text-signals, note: prose}\n");
	assert_non_null(strstr(
		profile_canonical_bytes(c, NULL),
		"\"strategy\":{\"dangerous_mode\":\"unsupported\",\"event_channel\":\"text-signals\",\"output_mode\":\"git-diff\",\"resume\":\"unsupported\",\"session_state\":\"stateless\"}"));
	assert_null(strstr(profile_canonical_bytes(c, NULL), "prose"));
	profile_free(c);
	profile_free(a);
	profile_free(b);
}

/* runtime.endpoint.default_model and runtime.hooks: parsed, checked, hashed. */
#define HOOKS_HEAD                                                                                 \
	"name: x\ndisplay_name: X\nshape: factory\n"                                               \
	"invocation: {binary: x, prompt_positional: true}\n"

static void test_default_model_and_hooks(void **state)
{
	struct profile *p, *q;
	struct adapter_strategy s = strategy_default;
	struct diag d;
	json_t *j;

	(void)state;
	p = load(
		"x", HOOKS_HEAD
		"capabilities: {supports_endpoint: true}\n"
		"runtime:\n  endpoint: {default_model: gpt-5.5, env: {U: '{base_url}'}}\n"
		"  home: isolated\n"
		"  hooks:\n    env: {X_HOOK: '{hooks_socket}'}\n    args: [--hooks]\n"
		"    files: [{path: .x/settings.json, content: '{\"cmd\": \"{hook_command}\"}'}]\n");
	assert_string_equal(p->runtime.endpoint.default_model, "gpt-5.5");
	assert_true(p->runtime.hooks.declared);
	assert_int_equal(p->runtime.hooks.args.n, 1);
	assert_int_equal(p->runtime.hooks.env.n, 1);
	assert_int_equal(p->runtime.hooks.files.n, 1);
	j = profile_canonical(p);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(json_object_get(j, "runtime"), "endpoint"),
				    "default_model")),
			    "gpt-5.5");
	assert_int_equal(json_object_size(json_object_get(json_object_get(j, "runtime"), "hooks")),
			 3);
	json_decref(j);
	/* the default model is part of the declaration: another one, another hash */
	q = load(
		"x", HOOKS_HEAD
		"capabilities: {supports_endpoint: true}\n"
		"runtime:\n  endpoint: {default_model: gpt-5.4, env: {U: '{base_url}'}}\n"
		"  home: isolated\n"
		"  hooks:\n    env: {X_HOOK: '{hooks_socket}'}\n    args: [--hooks]\n"
		"    files: [{path: .x/settings.json, content: '{\"cmd\": \"{hook_command}\"}'}]\n");
	assert_string_not_equal(profile_hash(p), profile_hash(q));
	profile_free(q);

	/* an inline strategy that does not read hooks contradicts runtime.hooks */
	s.event_channel = EVENT_CHANNEL_HOOKS;
	assert_int_equal(profile_check_strategy(p, &s, true, "inline", &d), 0);
	s.event_channel = EVENT_CHANNEL_NONE;
	assert_int_equal(profile_check_strategy(p, &s, false, "matrix", &d), 0);
	assert_int_equal(profile_check_strategy(p, &s, true, "inline", &d), -EINVAL);
	assert_string_equal(
		d.msg,
		"field 'runtime.hooks': the profile's own strategy reads event channel 'none', not hooks: runtime.hooks would never be used");
	profile_free(p);

	/* default_model */
	d = load_fail("x", HOOKS_HEAD "capabilities: {supports_endpoint: true}\n"
				      "runtime: {endpoint: {default_model: '-m', env: {U: x}}}\n");
	assert_string_equal(
		d.msg,
		"field 'runtime.endpoint.default_model': must be a model id (not empty, not starting with '-')");
	d = load_fail("x", HOOKS_HEAD "capabilities: {supports_endpoint: true}\n"
				      "runtime: {endpoint: {default_model: 'a b', env: {U: x}}}\n");
	assert_non_null(strstr(
		d.msg,
		"field 'runtime.endpoint.default_model': must be printable ASCII without blanks"));
	d = load_fail("x",
		      HOOKS_HEAD "capabilities: {supports_endpoint: true}\n"
				 "runtime: {endpoint: {default_model: '{model}', env: {U: x}}}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.endpoint.default_model': must be printable"));
	d = load_fail("x", HOOKS_HEAD "capabilities: {supports_endpoint: true}\n"
				      "runtime: {endpoint: {default_model: [a], env: {U: x}}}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.endpoint.default_model':"));

	/* hooks */
	d = load_fail("x", HOOKS_HEAD "runtime: {hooks: {}}\n");
	assert_string_equal(
		d.msg,
		"field 'runtime.hooks': declares nothing: give args, env or files that make the agent run {hook_command}");
	d = load_fail("x", HOOKS_HEAD "runtime: {hooks: {env: {A: b}}}\n");
	assert_string_equal(
		d.msg,
		"field 'runtime.hooks': never uses {hook_command} or {hooks_socket}: the agent's hooks would not reach bernstein");
	d = load_fail("x", HOOKS_HEAD "runtime: {hooks: {env: {A: '{hooks_socket}'}, bogus: 1}}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.hooks.bogus':"));
	d = load_fail("x", HOOKS_HEAD
		      "runtime: {hooks: {files: [{path: a, content: '{hook_command}'}]}}\n");
	assert_string_equal(
		d.msg,
		"field 'runtime.hooks.files': files are written into a private agent HOME, never the user's: set runtime.home: isolated");
	/* the placeholders belong to runtime.hooks */
	d = load_fail("x", HOOKS_HEAD "runtime: {env: {A: '{hook_command}'}}\n");
	assert_non_null(strstr(
		d.msg, "field 'runtime.env.A': placeholder '{hook_command}' is not allowed here"));
	d = load_fail("x", HOOKS_HEAD "runtime: {hooks: {env: {A: '{api_key}'}}}\n");
	assert_non_null(strstr(d.msg, "placeholder '{api_key}' is not allowed here"));
	d = load_fail("x",
		      HOOKS_HEAD "runtime: {hooks: {args: ['--x={hooks_socket}', '{hookz}']}}\n");
	assert_non_null(strstr(
		d.msg,
		"unknown placeholder '{hookz}' (known: {session_id}, {model}, {prompt_file}, {base_url}, {api_key_env}, {api_key}, {home}, {workdir}, {hook_command}, {hooks_socket}, {mcp_config})"));
	/* runtime.mcp: a format, and a way to the rendered file */
	d = load_fail("x", HOOKS_HEAD "runtime: {mcp: {format: claude}}\n");
	assert_string_equal(
		d.msg,
		"field 'runtime.mcp': never uses {mcp_config}: give args or env that point the agent at the rendered file, or a file to merge into");
	d = load_fail("x", HOOKS_HEAD "runtime: {mcp: {format: cursor, args: ['{mcp_config}']}}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.mcp.format':"));
	d = load_fail("x",
		      HOOKS_HEAD "runtime: {mcp: {format: codex, file: .codex/config.toml}}\n");
	assert_non_null(strstr(d.msg, "is not a runtime.files (or runtime.endpoint.files) path"));
	d = load_fail("x", HOOKS_HEAD "runtime: {env: {A: '{mcp_config}'}}\n");
	assert_non_null(strstr(d.msg, "placeholder '{mcp_config}' is not allowed here"));
	/* one file cannot be both the endpoint's and the hooks' */
	d = load_fail("x",
		      HOOKS_HEAD "capabilities: {supports_endpoint: true}\n"
				 "runtime:\n  home: isolated\n"
				 "  endpoint: {files: [{path: c.json, content: '{base_url}'}]}\n"
				 "  hooks: {files: [{path: c.json, content: '{hook_command}'}]}\n");
	assert_string_equal(
		d.msg,
		"field 'runtime.hooks.files[0]': 'c.json' is also a runtime.endpoint file: one file cannot be both");
	assert_int_equal(d.line, 9);
}

/* ---- gate 1 on its own ---- */

static void test_validation_messages(void **state)
{
	struct diag d;

	(void)state;
	/* every error names file, line, column and field */
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "capabilities: {max_parallel_workers: -1}\n");
	assert_string_equal(d.file, "mem.yaml");
	assert_int_equal(d.line, 5);
	assert_int_equal(d.col, 38);
	assert_string_equal(
		d.msg, "field 'capabilities.max_parallel_workers': must be at least 1 (got -1)");
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_flag: -p, prompt_file_flag: --file}\n");
	assert_non_null(strstr(
		d.msg,
		"field 'invocation.prompt_file_flag': the prompt can have only one delivery"));
	/* runtime.git_dir: refused (the default) or allowed, and allowed only
	 * where bernstein's own file tools are what it lifts */
	{
		struct profile *g = load("x", "name: x\ndisplay_name: X\nshape: module\n"
					      "invocation: {binary: x, prompt_positional: true}\n"
					      "runtime: {git_dir: allowed}\n");

		assert_int_equal(g->runtime.git_dir, GIT_DIR_ALLOWED);
		assert_non_null(
			strstr(profile_canonical_bytes(g, NULL), "\"git_dir\":\"allowed\""));
		(void)profile_free(g);
	}
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {git_dir: allowed}\n");
	assert_int_equal(d.line, 5);
	assert_non_null(strstr(d.msg, "field 'runtime.git_dir': 'allowed' lifts a refusal"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: module\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {git_dir: yes}\n");
	assert_non_null(strstr(d.msg, "unknown value 'yes' (expected one of: refused, allowed)"));
	/* runtime.sandbox: the tiers an agent works in, the paths it reads;
	 * runtime.login: its login files (in a private HOME only); only a
	 * declared one of each is hashed */
	{
		struct profile *g = load(
			"x",
			"name: x\ndisplay_name: X\nshape: factory\n"
			"invocation: {binary: x, prompt_positional: true}\n"
			"runtime: {home: isolated, login: [.x/auth.json], sandbox: {tiers: [bwrap, landlock], read: [/srv/models, ~/.cache/x]}}\n");

		assert_true(g->runtime.sandbox.declared);
		assert_int_equal(g->runtime.sandbox.tiers,
				 (1u << SANDBOX_KIND_LANDLOCK) | (1u << SANDBOX_KIND_BWRAP));
		assert_int_equal(g->runtime.sandbox.read.n, 2);
		assert_true(g->runtime.login_declared);
		assert_string_equal(g->runtime.login.v[0], ".x/auth.json");
		assert_non_null(strstr(
			profile_canonical_bytes(g, NULL),
			"\"sandbox\":{\"read\":[\"/srv/models\",\"~/.cache/x\"],\"tiers\":[\"landlock\",\"bwrap\"]}"));
		assert_non_null(
			strstr(profile_canonical_bytes(g, NULL), "\"login\":[\".x/auth.json\"]"));
		(void)profile_free(g);
		g = load("x", "name: x\ndisplay_name: X\nshape: factory\n"
			      "invocation: {binary: x, prompt_positional: true}\n");
		assert_false(g->runtime.sandbox.declared);
		assert_false(g->runtime.login_declared);
		assert_null(strstr(profile_canonical_bytes(g, NULL), "\"sandbox\":{"));
		assert_null(strstr(profile_canonical_bytes(g, NULL), "\"login\":"));
		(void)profile_free(g);
	}
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {sandbox: {tiers: [none]}}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.sandbox.tiers[0]': unknown tier 'none'"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {sandbox: {tiers: [bwrap, bwrap]}}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.sandbox.tiers[1]': 'bwrap' is listed twice"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {sandbox: {read: [/usr/../home]}}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.sandbox.read[0]': every component"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {sandbox: {read: [relative/path]}}\n");
	assert_non_null(strstr(d.msg, "a read path is absolute or starts with '~/'"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {sandbox: {read: ['~/']}}\n");
	assert_non_null(strstr(d.msg, "must name something below the HOME"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {home: isolated, login: [/etc/passwd]}\n");
	assert_non_null(
		strstr(d.msg, "field 'runtime.login[0]': a login file is relative to the HOME"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {home: isolated, login: [.x/../.ssh/id_rsa]}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.login[0]': every component"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {login: [.x/auth.json]}\n");
	assert_non_null(strstr(d.msg, "set runtime.home: isolated"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {home: isolated, sandbox: {login: [.x/auth.json]}}\n");
	assert_non_null(strstr(d.msg, "login files moved to runtime.login"));
	/* a lone '-' is the stdin marker of long_prompt only */
	(void)profile_free(load("x", "name: x\ndisplay_name: X\nshape: factory\n"
				     "invocation: {binary: x, prompt_positional: true}\n"
				     "runtime: {long_prompt: {via: stdin, args: ['-']}}\n"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime: {long_prompt: {via: file, args: ['-', '{prompt_file}']}}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.long_prompt.args[0]': '-' is not a flag"));
	/* {api_key} only in endpoint.env, never on argv or in a file */
	(void)profile_free(load("x", "name: x\ndisplay_name: X\nshape: factory\n"
				     "invocation: {binary: x, prompt_positional: true}\n"
				     "capabilities: {supports_endpoint: true}\n"
				     "runtime: {endpoint: {env: {X_KEY: '{api_key}'}}}\n"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "capabilities: {supports_endpoint: true}\n"
			   "runtime:\n  home: isolated\n"
			   "  endpoint: {files: [{path: k, content: '{api_key}'}]}\n");
	assert_non_null(strstr(d.msg, "placeholder '{api_key}' is not allowed here"));
	/* text that only looks like a placeholder is literal */
	(void)profile_free(load(
		"x",
		"name: x\ndisplay_name: X\nshape: factory\n"
		"invocation: {binary: x, prompt_positional: true, extra_args: ['{\"a\":1}', '{Home}', '{env:X}']}\n"));
	/* the long form is pointless when the prompt always goes in a file */
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_file_flag: --prompt-file}\n"
			   "runtime: {long_prompt: {via: stdin}}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.long_prompt':"));
	/* files paths: relative, no '..', unique */
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime:\n  home: isolated\n  files:\n"
			   "    - {path: a/b, content: x}\n    - {path: a/b, content: y}\n");
	assert_non_null(strstr(d.msg, "field 'runtime.files[1].path': 'a/b' is already written"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime:\n  home: isolated\n  files: [{path: /etc/x, content: x}]\n");
	assert_non_null(strstr(d.msg, "must be relative to the agent HOME"));
	d = load_fail("x", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n"
			   "runtime:\n  home: isolated\n"
			   "  files: [{path: a, mode: '4755', content: x}]\n");
	assert_non_null(strstr(d.msg, "invalid mode"));
	/* the file stem */
	d = load_fail("y", "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n");
	assert_non_null(strstr(d.msg, "does not match the file name 'y.yaml'"));
	/* too large */
	{
		size_t n = PROFILE_MAX_FILE_BYTES + 10;
		char *big = xmalloc(n + 1);
		struct profile *p = NULL;

		memset(big, '#', n);
		big[n] = '\0';
		diag_clear(&d);
		assert_int_equal(profile_load_buf("big.yaml", NULL, big, n, &p, &d), -EFBIG);
		assert_int_equal(d.line, 1);
		assert_int_equal(d.col, 1);
		free(big);
	}
}

/* The strategy-dependent rules, for each shape. */
static void test_strategy_rules(void **state)
{
	struct profile *bare = load("x", "name: x\ndisplay_name: X\nshape: factory\n"
					 "invocation: {binary: x, prompt_positional: true}\n");
	struct profile *mod = load("x", "name: x\ndisplay_name: X\nshape: module\n"
					"invocation: {binary: x, prompt_positional: true}\n");
	struct profile *full = load("x", "name: x\ndisplay_name: X\nshape: factory\n"
					 "invocation: {binary: x, prompt_positional: true}\n"
					 "runtime:\n"
					 "  resume: {args: [--resume, '{session_id}']}\n"
					 "  dangerous: {args: [--yolo], env: {X_SANDBOX: '1'}}\n"
					 "  events: {dialect: claude}\n");
	struct profile *sub = load(
		"x", "name: x\ndisplay_name: X\nshape: factory\n"
		     "invocation: {binary: x, prompt_positional: true}\n"
		     "runtime:\n"
		     "  resume: {args: [resume, '{session_id}'], position: after-subcommands}\n");
	struct profile *pair = load(
		"x", "name: x\ndisplay_name: X\nshape: factory\n"
		     "invocation: {binary: x, prompt_positional: true}\n"
		     "runtime: {resume: {args: [--resume, '{session_id}', --fork-session]}}\n");
	struct profile *dang =
		load("x", "name: x\ndisplay_name: X\nshape: factory\n"
			  "invocation: {binary: x, prompt_positional: true}\n"
			  "runtime: {dangerous: {args: [--yolo], env: {X_SANDBOX: '1'}}}\n");
	struct adapter_strategy s = strategy_default;
	struct diag d;

	(void)state;
	/* the default strategy asks for nothing */
	assert_int_equal(profile_check_strategy(bare, &s, false, "w", &d), 0);
	/* resume */
	s.resume = RESUME_FLAG;
	diag_clear(&d);
	assert_int_equal(profile_check_strategy(bare, &s, false, "matrix m:3", &d), -EINVAL);
	assert_string_equal(
		d.msg,
		"field 'runtime.resume': the resume strategy is 'flag' (matrix m:3) but the profile does not say how resume is spelled");
	assert_int_equal(profile_check_strategy(mod, &s, false, "w", &d), 0); /* a module's job */
	assert_int_equal(profile_check_strategy(full, &s, false, "w", &d), 0);
	assert_int_equal(profile_check_strategy(sub, &s, false, "w", &d), -EINVAL);
	assert_int_equal(profile_check_strategy(pair, &s, false, "w", &d), -EINVAL);
	s.resume = RESUME_SUBCOMMAND;
	assert_int_equal(profile_check_strategy(sub, &s, false, "w", &d), 0);
	assert_int_equal(profile_check_strategy(full, &s, false, "w", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "starts with the subcommand token"));
	s.resume = RESUME_FLAG_PAIR;
	assert_int_equal(profile_check_strategy(pair, &s, false, "w", &d), 0);
	assert_int_equal(profile_check_strategy(full, &s, false, "w", &d), -EINVAL);
	/* a spelling a matrix row turns off is unused; an inline one contradicts */
	s.resume = RESUME_UNSUPPORTED;
	assert_int_equal(profile_check_strategy(full, &s, false, "w", &d), 0);
	assert_int_equal(profile_check_strategy(full, &s, true, "w", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "resume is unsupported"));
	/* dangerous mode */
	s = strategy_default;
	s.dangerous_mode = DANGEROUS_MODE_CLI_FLAG;
	assert_int_equal(profile_check_strategy(bare, &s, false, "w", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "field 'runtime.dangerous.args': dangerous mode 'cli-flag'"));
	assert_int_equal(profile_check_strategy(dang, &s, true, "w", &d), 0);
	s.dangerous_mode = DANGEROUS_MODE_ENV_VAR;
	assert_int_equal(profile_check_strategy(bare, &s, false, "w", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "field 'runtime.dangerous.env': dangerous mode 'env-var'"));
	assert_int_equal(profile_check_strategy(dang, &s, false, "w", &d), 0);
	assert_int_equal(profile_check_strategy(dang, &s, true, "w", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "applied through runtime.dangerous.env only"));
	s.dangerous_mode = DANGEROUS_MODE_ALWAYS_ON;
	assert_int_equal(profile_check_strategy(dang, &s, false, "w", &d), 0);
	assert_int_equal(profile_check_strategy(dang, &s, true, "w", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "dangerous mode is 'always-on': there is nothing to apply"));
	assert_int_equal(profile_check_strategy(bare, &s, true, "w", &d), 0);
	/* events */
	s = strategy_default;
	s.event_channel = EVENT_CHANNEL_STREAM_JSON;
	assert_int_equal(profile_check_strategy(bare, &s, false, "w", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "field 'runtime.events.dialect':"));
	assert_int_equal(profile_check_strategy(full, &s, false, "w", &d), 0);
	assert_int_equal(profile_check_strategy(mod, &s, false, "w", &d), 0);
	s.event_channel = EVENT_CHANNEL_TEXT_SIGNALS;
	s.resume = RESUME_FLAG;
	s.dangerous_mode = DANGEROUS_MODE_CLI_FLAG;
	assert_int_equal(profile_check_strategy(full, &s, false, "w", &d), 0);
	assert_int_equal(profile_check_strategy(full, &s, true, "w", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "the dialect can only be text-signals"));
	profile_free(dang);
	profile_free(bare);
	profile_free(mod);
	profile_free(full);
	profile_free(sub);
	profile_free(pair);
}

/* ---- gate 2 ---- */

static void test_contract_discrepancies(void **state)
{
	static const char ctext[] = "binary: tool\n"
				    "required_flags: [-m, --json, --yolo, -p]\n"
				    "required_subcommands: [exec]\n";
	struct contract *c = NULL;
	struct diag_list is = PROFILE_ISSUES_INIT;
	struct profile *p;
	struct diag d;

	(void)state;
	diag_clear(&d);
	assert_int_equal(contract_load_buf("tool", "tool.yaml", ctext, strlen(ctext), &c, &d), 0);
	/* declaring less than the contract is fine; "--" and values are not flags */
	p = load(
		"tool",
		"name: tool\ndisplay_name: T\nshape: factory\n"
		"invocation: {binary: tool, subcommands: [exec], model_flag: -m, prompt_flag: '--', extra_args: [--json=true, stream-json]}\n");
	assert_int_equal(profile_contract_discrepancies(p, c, NULL, &is), 0);
	profile_free(p);
	/* more than the contract: each discrepancy, at its node, in file order */
	p = load("tool", "name: tool\ndisplay_name: T\nshape: factory\n"
			 "invocation:\n"
			 "  binary: other-tool\n"
			 "  subcommands: [exec, run]\n"
			 "  model_flag: --model\n"
			 "  prompt_positional: true\n"
			 "  extra_args: [--json, --full-auto=1, value, -x]\n"
			 "runtime: {dangerous: {args: [--not-checked]}}\n");
	assert_int_equal(profile_contract_discrepancies(p, c, "c.yaml", &is), 5);
	assert_int_equal(is.v[0].line, 5);
	assert_string_equal(
		is.v[0].msg,
		"field 'invocation.binary': profile declares binary 'other-tool' but contract 'tool' (c.yaml) pins 'tool'");
	assert_string_equal(
		is.v[1].msg,
		"field 'invocation.subcommands[1]': subcommand 'run' is not in contract 'tool' (c.yaml)");
	assert_string_equal(
		is.v[2].msg,
		"field 'invocation.model_flag': flag '--model' is not in contract 'tool' (c.yaml)");
	assert_string_equal(
		is.v[3].msg,
		"field 'invocation.extra_args[1]': flag '--full-auto' is not in contract 'tool' (c.yaml)");
	assert_string_equal(
		is.v[4].msg,
		"field 'invocation.extra_args[3]': flag '-x' is not in contract 'tool' (c.yaml)");
	assert_int_equal(is.v[4].line, 9);
	assert_int_equal(is.v[4].col, 46);
	diag_list_release(&is);
	profile_free(p);
	contract_free(c);
}

/* ---- templates ---- */

static void test_expand(void **state)
{
	struct profile_vars v = {.v = {NULL}};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct catalog *cat;
	const struct profile *p;
	struct strvec argv = STRVEC_INIT;

	(void)state;
	v.v[PH_API_KEY_ENV] = "LOCAL_KEY";
	v.v[PH_HOME] = "/h";
	assert_int_equal(profile_expand("{\"apiKey\": \"{env:{api_key_env}}\"} {home}/x", &v, &sb),
			 0);
	assert_string_equal(sb.buf, "{\"apiKey\": \"{env:LOCAL_KEY}\"} /h/x");
	sbuf_reset(&sb);
	assert_int_equal(profile_expand("{unknown_name} stays", &v, &sb), 0);
	assert_string_equal(sb.buf, "{unknown_name} stays");
	sbuf_reset(&sb);
	assert_int_equal(profile_expand("{base_url}/v1", &v, &sb), -ENOENT);
	sbuf_release(&sb);
	/* extra args expand; a prompt file goes after its flag */
	cat = load_catalog(NULL, NULL);
	p = shipped(cat, "cursor");
	assert_int_equal(profile_build_argv(p, NULL, NULL, "p", NULL, &argv), -ENOENT);
	strvec_clear(&argv);
	v.v[PH_WORKDIR] = "/wt";
	assert_int_equal(profile_build_argv(p, NULL, NULL, "p", &v, &argv), 0);
	assert_argv(&argv,
		    (const char *[]){"cursor-agent", "-p", "--workspace", "/wt", "--output-format",
				     "stream-json", "--trust", "--approve-mcps", "p", NULL});
	strvec_clear(&argv);
	p = shipped(cat, "junie");
	v.v[PH_PROMPT_FILE] = "/run/prompt.txt";
	assert_int_equal(profile_build_argv(p, NULL, "m", "ignored", &v, &argv), 0);
	assert_argv(&argv, (const char *[]){"junie", "run", "--model", "m", "--headless",
					    "--prompt-file", "/run/prompt.txt", NULL});
	strvec_clear(&argv);
	catalog_free(cat);
}

/* The one order of an agent's argv: every piece in its place, resume in
 * each of its three positions, and the prompt tokens of each guard. */
static void test_argv_order(void **state)
{
	static const char *const sub[] = {"exec", NULL}, *const resume[] = {"--resume", "S", NULL},
				 *const model[] = {"-m", "M", NULL}, *const extra[] = {"--x", NULL},
				 *const endpoint[] = {"--base", NULL},
				 *const hooks[] = {"--hook", NULL},
				 *const dangerous[] = {"--yolo", NULL},
				 *const session[] = {"--sid", "U", NULL},
				 *const module[] = {"--session-dir", "D", NULL};
	struct strvec prompt = STRVEC_INIT, argv = STRVEC_INIT;
	struct argv_parts parts = {
		.argv0 = "agent",
		.subcommands = sub,
		.resume = resume,
		.model = model,
		.extra = extra,
		.endpoint = endpoint,
		.hooks = hooks,
		.dangerous = dangerous,
		.session = session,
		.module = module,
	};

	(void)state;
	argv_order_prompt("-p", PROMPT_GUARD_SEPARATOR, "-do it", &prompt);
	assert_argv(&prompt, (const char *[]){"-p", "--", "-do it", NULL});
	parts.prompt = prompt.v;
	parts.resume_position = RESUME_POSITION_BEFORE_PROMPT;
	argv_order_assemble(&parts, &argv);
	assert_argv(&argv, (const char *[]){"agent", "exec", "-m", "M", "--x", "--base", "--hook",
					    "--yolo", "--sid", "U", "--session-dir", "D",
					    "--resume", "S", "-p", "--", "-do it", NULL});
	strvec_clear(&argv);
	parts.resume_position = RESUME_POSITION_AFTER_SUBCOMMANDS;
	argv_order_assemble(&parts, &argv);
	assert_argv(&argv, (const char *[]){"agent", "exec", "--resume", "S", "-m", "M", "--x",
					    "--base", "--hook", "--yolo", "--sid", "U",
					    "--session-dir", "D", "-p", "--", "-do it", NULL});
	strvec_clear(&argv);
	strvec_clear(&prompt);
	argv_order_prompt("--prompt", PROMPT_GUARD_GLUED, "-x", &prompt);
	argv_order_prompt(NULL, PROMPT_GUARD_NONE, "y", &prompt);
	assert_argv(&prompt, (const char *[]){"--prompt=-x", "y", NULL});
	parts.prompt = prompt.v;
	parts.resume_position = RESUME_POSITION_END;
	parts.model = parts.endpoint = parts.hooks = parts.module = NULL;
	argv_order_assemble(&parts, &argv);
	assert_argv(&argv, (const char *[]){"agent", "exec", "--x", "--yolo", "--sid", "U",
					    "--prompt=-x", "y", "--resume", "S", NULL});
	strvec_clear(&argv);
	strvec_clear(&prompt);
}

/* ---- gate 3: the catalogue ---- */

static void test_catalog_layers(void **state)
{
	struct tmpdir t = {{0}};
	struct catalog *cat = NULL;
	struct strvec dir = STRVEC_INIT;
	char *f1, *f2;
	struct diag d;

	(void)state;
	tmp_init(&t);
	strvec_pushf(&dir, "%s/repo", t.path);
	/* a user profile replaces the embedded one and adds a new adapter */
	f1 = tmp_write(&t, "repo/profiles/claude.yaml",
		       "name: claude\ndisplay_name: My Claude\nshape: factory\n"
		       "invocation: {binary: claude, prompt_flag: -p, model_flag: --model}\n"
		       "runtime:\n  resume: {args: [--resume, '{session_id}']}\n"
		       "  dangerous: {args: [--dangerously-skip-permissions]}\n"
		       "  events: {dialect: claude}\n");
	f2 = tmp_write(&t, "repo/profiles/zed.yaml",
		       "name: zed\ndisplay_name: Zed\nshape: factory\n"
		       "invocation: {binary: zed-agent, prompt_positional: true}\n");
	cat = load_catalog(NULL, dir.v[0]);
	assert_int_equal(cat->n_entries, 52);
	assert_string_equal(catalog_find(cat, "claude")->display_name, "My Claude");
	assert_string_equal(catalog_find(cat, "claude")->origin.file, f1);
	assert_int_equal(catalog_find(cat, "claude")->layer, 1);
	assert_string_equal(catalog_find(cat, "zed")->profile->source, f2);
	assert_string_equal(catalog_find(cat, "zed")->binary, "zed-agent");
	/* zed has no matrix row: it resolves to the default, and check says so */
	assert_int_equal(catalog_check(cat, NULL, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "event-channel): zed"));
	catalog_free(cat);
	free(f1);
	free(f2);

	/* a profile and a registry entry of one name in one layer */
	f1 = tmp_write(&t, "repo/registry.yaml",
		       "adapters:\n  zed: {display_name: Z, binary: z}\n");
	diag_clear(&d);
	assert_int_equal(catalog_load(NULL, dir.v[0], &cat, &d), -EINVAL);
	assert_non_null(strstr(d.file, "/repo/profiles/zed.yaml"));
	assert_int_equal(d.line, 1);
	assert_non_null(strstr(d.msg, "adapter 'zed' has a registry entry ("));
	assert_non_null(strstr(d.msg, "/repo/registry.yaml:2) and a capability profile"));
	free(f1);

	/* a registry entry of a higher layer replaces an embedded profile */
	f1 = tmp_write(&t, "repo/registry.yaml",
		       "adapters:\n  codex: {display_name: C, binary: c}\n");
	cat = load_catalog(NULL, dir.v[0]);
	assert_null(catalog_find(cat, "codex")->profile);
	assert_string_equal(catalog_find(cat, "codex")->binary, "c");
	catalog_free(cat);
	assert_int_equal(unlink(f1), 0);
	free(f1);

	/* gate 2 at load: a profile outrunning its contract is refused */
	f1 = tmp_write(
		&t, "repo/profiles/zed.yaml",
		"name: zed\ndisplay_name: Zed\nshape: factory\ncontract: codex\n"
		"invocation: {binary: codex, prompt_positional: true, extra_args: [--full-auto]}\n");
	diag_clear(&d);
	assert_int_equal(catalog_load(NULL, dir.v[0], &cat, &d), -EINVAL);
	assert_string_equal(d.file, f1);
	assert_int_equal(d.line, 5);
	assert_string_equal(
		d.msg,
		"field 'invocation.extra_args[0]': flag '--full-auto' is not in contract 'codex' (<embedded>/contracts/codex.yaml)");
	free(f1);

	/* vision needs multimodal.yaml's grant; a repo table may grant it */
	f1 = tmp_write(&t, "repo/profiles/zed.yaml",
		       "name: zed\ndisplay_name: Zed\nshape: factory\n"
		       "invocation: {binary: zed-agent, prompt_positional: true}\n"
		       "capabilities: {vision: true}\n");
	diag_clear(&d);
	assert_int_equal(catalog_load(NULL, dir.v[0], &cat, &d), -EINVAL);
	assert_int_equal(d.line, 5);
	assert_non_null(
		strstr(d.msg, "field 'capabilities.vision': multimodal.yaml does not grant 'zed'"));
	free(f1);
	f1 = tmp_write(&t, "repo/multimodal.yaml", "adapters:\n  zed: yes\n");
	diag_clear(&d);
	assert_int_equal(catalog_load(NULL, dir.v[0], &cat, &d), -EINVAL);
	assert_int_equal(d.line, 2);
	assert_string_equal(d.msg, "'zed': expected a boolean, got a string");
	free(f1);
	f1 = tmp_write(&t, "repo/multimodal.yaml", "adapters:\n  zed: true\n  claude: false\n");
	cat = load_catalog(NULL, dir.v[0]);
	assert_true(catalog_vision(cat, "zed"));
	assert_false(catalog_vision(cat, "claude"));
	catalog_free(cat);
	free(f1);

	/* use-cases.yaml: both keys, non-empty; a higher layer replaces a row */
	f1 = tmp_write(&t, "repo/use-cases.yaml", "agents:\n  zed: {summary: fast}\n");
	diag_clear(&d);
	assert_int_equal(catalog_load(NULL, dir.v[0], &cat, &d), -EINVAL);
	assert_string_equal(d.msg, "use case of 'zed': missing required key 'install'");
	free(f1);
	f1 = tmp_write(&t, "repo/use-cases.yaml",
		       "agents:\n  zed: {summary: fast, install: get it}\n"
		       "  claude: {summary: mine, install: '  '}\n");
	diag_clear(&d);
	assert_int_equal(catalog_load(NULL, dir.v[0], &cat, &d), -EINVAL);
	assert_string_equal(d.msg, "'install' must not be empty");
	free(f1);
	f1 = tmp_write(&t, "repo/use-cases.yaml",
		       "agents:\n  zed: {summary: fast, install: get it}\n"
		       "  claude: {summary: mine, install: npm i}\n");
	cat = load_catalog(NULL, dir.v[0]);
	assert_string_equal(catalog_use_case(cat, "zed")->install, "get it");
	assert_string_equal(catalog_use_case(cat, "claude")->summary, "mine");
	assert_non_null(catalog_use_case(cat, "codex"));
	assert_null(catalog_use_case(cat, "nosuch"));
	assert_int_equal(cat->n_use_cases, 52);
	catalog_free(cat);
	free(f1);

	/* a matrix row turning resume on needs the profile to spell it */
	f1 = tmp_write(
		&t, "repo/strategy-matrix.yaml",
		"adapters:\n  zed: {resume: flag, dangerous_mode: unsupported, event_channel: text-signals}\n");
	diag_clear(&d);
	assert_int_equal(catalog_load(NULL, dir.v[0], &cat, &d), -EINVAL);
	assert_non_null(strstr(
		d.msg, "field 'runtime.resume': the resume strategy is 'flag' (strategy matrix "));
	free(f1);
	strvec_clear(&dir);
	tmp_release(&t);
}

/* ---- the corpus ---- */

struct bad {
	const char *file;
	unsigned line, col;
	const char *msg; /* a part of the message */
};

static const struct bad corpus[] = {
	{"alias.yaml", 6, 11, "anchors and aliases are not allowed"},
	{"api_key_in_args.yaml", 12, 23,
	 "field 'runtime.endpoint.args[1]': placeholder '{api_key}' is not allowed here"},
	{"bad_env_name.yaml", 8, 21, "field 'invocation.env_passthrough[0]': invalid environment"},
	{"bad_shape.yaml", 4, 8, "field 'shape': unknown value 'plugin'"},
	{"blank_binary.yaml", 6, 11, "field 'invocation.binary': must not be blank"},
	{"blank_display_name.yaml", 3, 15, "field 'display_name': must not be blank"},
	{"blank_name.yaml", 2, 7, "field 'name': invalid profile name ''"},
	{"builtin_factory.yaml", 8, 10, "field 'builtin': a built-in adapter"},
	{"conflicting_agent.yaml", 2, 7,
	 "field 'name': adapter 'conflicting_agent' already has a registry entry"},
	{"dangerous_env_var_with_args.yaml", 14, 12,
	 "field 'runtime.dangerous.args': the profile's own strategy says dangerous mode is 'env-var'"},
	{"dangerous_without_flag.yaml", 2, 7,
	 "field 'runtime.dangerous.args': dangerous mode 'cli-flag'"},
	{"dangling_contract.yaml", 8, 11, "field 'contract': no contract 'nosuch'"},
	{"duplicate_env.yaml", 11, 5, "duplicate key 'NO_COLOR'"},
	{"duplicate_key.yaml", 8, 3, "duplicate key 'binary'"},
	{"empty.yaml", 1, 1, "field 'name': missing (required)"},
	{"empty_arg.yaml", 8, 24,
	 "field 'invocation.extra_args[1]': an argument must not be empty"},
	{"empty_model_flag.yaml", 7, 15, "field 'invocation.model_flag': must not be empty"},
	{"empty_prompt_flag.yaml", 7, 16, "field 'invocation.prompt_flag': must not be empty"},
	{"endpoint_without_capability.yaml", 10, 5,
	 "field 'runtime.endpoint': requires capabilities.supports_endpoint: true"},
	{"file_mode_integer.yaml", 12, 13,
	 "field 'runtime.files[0].mode': expected a quoted octal string"},
	{"file_path_escape.yaml", 11, 13,
	 "field 'runtime.files[0].path': must be a plain relative path"},
	{"files_without_isolated_home.yaml", 10, 5,
	 "field 'runtime.files': files are written into a private agent HOME"},
	{"garbage.yaml", 1, 8, "NUL bytes are not allowed"},
	{"lone_dash_arg.yaml", 8, 16, "field 'invocation.extra_args[0]': '-' is not a flag"},
	{"long_prompt_file_without_path.yaml", 11, 11,
	 "field 'runtime.long_prompt.args': via: file needs \"{prompt_file}\""},
	{"missing_binary.yaml", 6, 3, "field 'invocation.binary': missing (required)"},
	{"model_alias_dash.yaml", 10, 9, "field 'models.evil': a model id must not start with '-'"},
	{"model_flag_not_a_flag.yaml", 7, 15, "field 'invocation.model_flag': must be a flag"},
	{"name_mismatch.yaml", 2, 7,
	 "field 'name': 'other_name' does not match the file name 'name_mismatch.yaml'"},
	{"no_prompt_delivery.yaml", 6, 3, "field 'invocation': no way to deliver the prompt"},
	{"not_a_mapping.yaml", 2, 1, "a profile is a mapping, got a sequence"},
	{"placeholder_not_allowed.yaml", 8, 27,
	 "field 'invocation.extra_args[1]': placeholder '{session_id}' is not allowed here"},
	{"prompt_guard_glued_positional.yaml", 8, 17,
	 "field 'invocation.prompt_guard': 'glued' passes PROMPT_FLAG=PROMPT as one token: it needs a prompt_flag"},
	{"prompt_guard_long_prompt_undeclared.yaml", 8, 17,
	 "field 'invocation.prompt_guard': 'long-prompt' delivers every prompt by runtime.long_prompt, which is not declared"},
	{"prompt_guard_prompt_file.yaml", 8, 17,
	 "field 'invocation.prompt_guard': the prompt is always in a file"},
	{"prompt_guard_resume_end.yaml", 12, 15,
	 "field 'runtime.resume.position': 'end' puts the resume tokens after the prompt"},
	{"prompt_guard_separator_twice.yaml", 8, 17,
	 "field 'invocation.prompt_guard': prompt_flag '--' already ends the options"},
	{"prompt_guard_unknown.yaml", 8, 17,
	 "field 'invocation.prompt_guard': unknown value 'quoted' (expected one of: none, separator, glued, long-prompt)"},
	{"prompt_positional_false.yaml", 7, 22,
	 "field 'invocation.prompt_positional': no way to deliver the prompt"},
	{"resume_flag_misspelled.yaml", 14, 12,
	 "field 'runtime.resume.args': resume strategy 'flag' (the profile's strategy) is spelled [FLAG, \"{session_id}\"]"},
	{"resume_flag_pair_short.yaml", 14, 12,
	 "field 'runtime.resume.args': resume strategy 'flag-pair'"},
	{"resume_matrix_flag.yaml", 2, 7,
	 "field 'runtime.resume': the resume strategy is 'flag' (strategy matrix "},
	{"resume_subcommand_as_flag.yaml", 14, 12,
	 "field 'runtime.resume.args': resume strategy 'subcommand'"},
	{"resume_unsupported_spelled.yaml", 14, 5,
	 "field 'runtime.resume': the profile's own strategy says resume is unsupported"},
	{"resume_without_session_token.yaml", 10, 11,
	 "field 'runtime.resume.args': must contain the token \"{session_id}\" exactly once"},
	{"resume_without_spelling.yaml", 2, 7,
	 "field 'runtime.resume': the resume strategy is 'flag' (the profile's strategy) but the profile does not say how resume is spelled"},
	{"strategy_missing_axis.yaml", 9, 3, "field 'strategy.event_channel': missing (required)"},
	{"stream_json_without_dialect.yaml", 2, 7,
	 "field 'runtime.events.dialect': event channel 'stream-json'"},
	{"subcommand_is_a_flag.yaml", 7, 17,
	 "field 'invocation.subcommands[0]': a subcommand must not start with '-'"},
	{"supports_endpoint_without_spelling.yaml", 9, 22,
	 "field 'capabilities.supports_endpoint': no runtime.endpoint"},
	{"truncated.yaml", 5, 1, "unexpected end of stream"},
	{"two_prompt_deliveries.yaml", 8, 22,
	 "field 'invocation.prompt_positional': the prompt can have only one delivery"},
	{"undeclared_agent.yaml", 2, 7,
	 "field 'name': 'undeclared_agent' has no row in the strategy matrix"},
	{"unknown_axis_value.yaml", 9, 11,
	 "field 'strategy.resume': unknown value 'sometimes' (expected one of: flag, flag-pair, subcommand, unsupported)"},
	{"unknown_capability.yaml", 9, 3, "field 'capabilities.telepathy': unknown key"},
	{"unknown_dialect.yaml", 9, 21, "field 'runtime.events.dialect': unknown value 'cursor'"},
	{"unknown_key.yaml", 8, 1, "field 'argz': unknown key (expected one of: name,"},
	{"unknown_nested_key.yaml", 8, 3, "field 'invocation.extra_arg': unknown key"},
	{"unknown_placeholder.yaml", 10, 22,
	 "field 'runtime.resume.args[1]': unknown placeholder '{sessionid}'"},
	{"unknown_sandbox.yaml", 9, 12, "field 'capabilities.sandbox': unknown value 'vm'"},
	{"vision_not_granted.yaml", 9, 11,
	 "field 'capabilities.vision': multimodal.yaml does not grant 'vision_not_granted'"},
	{"workers_quoted.yaml", 9, 25,
	 "field 'capabilities.max_parallel_workers': expected an integer, got a string"},
	{"wrong_type_subcommands.yaml", 7, 16,
	 "field 'invocation.subcommands': expected a list of strings, got a string"},
	{"zero_workers.yaml", 9, 25,
	 "field 'capabilities.max_parallel_workers': must be at least 1 (got 0)"},
	{"contract/claude.yaml", 7, 11,
	 "field 'invocation.binary': profile declares binary 'claude-code' but contract 'claude'"},
	{"contract/codex.yaml", 8, 23,
	 "field 'invocation.subcommands[1]': subcommand 'run' is not in contract 'codex'"},
};

/* Every file of the corpus fails with exactly one expected problem (first
 * one, for the contract files), checked against the embedded catalogue plus
 * tests/data/profiles/catalog as the repository layer; and every file of
 * the directory is in the table. */
static void test_bad_corpus(void **state)
{
	struct strvec repo = STRVEC_INIT;
	struct catalog *cat;
	size_t i, n_files = 0;
	DIR *dir;
	struct dirent *de;

	(void)state;
	strvec_pushf(&repo, "%s/tests/data/profiles/catalog", srcdir());
	cat = load_catalog(NULL, repo.v[0]);
	for (i = 0; i < ARRAY_SIZE(corpus); i++) {
		const struct bad *b = &corpus[i];
		struct diag_list is = PROFILE_ISSUES_INIT;
		struct strvec path = STRVEC_INIT;
		struct profile *p = NULL;
		struct diag d;

		strvec_pushf(&path, "%s/tests/data/profiles/bad/%s", srcdir(), b->file);
		diag_clear(&d);
		if (profile_load_file(path.v[0], &p, &d) < 0)
			diag_list_add(&is, &d);
		else
			(void)catalog_check_profile(cat, p, CATALOG_CHECK_STANDALONE, &is);
		if (is.n == 0)
			fail_msg("%s: accepted", b->file);
		if (is.n > 1 && strncmp(b->file, "contract/", 9) != 0)
			fail_msg("%s: %zu problems, the second: %s", b->file, is.n, is.v[1].msg);
		assert_string_equal(is.v[0].file, path.v[0]);
		if (is.v[0].line != b->line || is.v[0].col != b->col)
			fail_msg("%s: at %u:%u, expected %u:%u (%s)", b->file, is.v[0].line,
				 is.v[0].col, b->line, b->col, is.v[0].msg);
		if (!strstr(is.v[0].msg, b->msg))
			fail_msg("%s: '%s' does not contain '%s'", b->file, is.v[0].msg, b->msg);
		diag_list_release(&is);
		profile_free(p);
		strvec_clear(&path);
	}
	strvec_clear(&repo);
	strvec_pushf(&repo, "%s/tests/data/profiles/bad", srcdir());
	dir = opendir(repo.v[0]);
	assert_non_null(dir);
	while ((de = readdir(dir)))
		if (strstr(de->d_name, ".yaml")) {
			bool found = false;

			for (i = 0; i < ARRAY_SIZE(corpus); i++)
				found |= strcmp(corpus[i].file, de->d_name) == 0;
			if (!found)
				fail_msg("bad/%s is not in the test table", de->d_name);
			n_files++;
		}
	closedir(dir);
	assert_int_equal(n_files + 2, ARRAY_SIZE(corpus)); /* plus contract/ */
	strvec_clear(&repo);
	catalog_free(cat);
}

static void test_good_files(void **state)
{
	const char *files[] = {"good_agent.yaml", "minimal_agent.yaml"};
	struct strvec repo = STRVEC_INIT;
	struct catalog *cat;
	size_t i;

	(void)state;
	strvec_pushf(&repo, "%s/tests/data/profiles/catalog", srcdir());
	cat = load_catalog(NULL, repo.v[0]);
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		struct diag_list is = PROFILE_ISSUES_INIT;
		struct strvec path = STRVEC_INIT;
		struct profile *p = NULL;
		struct diag d;

		strvec_pushf(&path, "%s/tests/data/profiles/good/%s", srcdir(), files[i]);
		diag_clear(&d);
		if (profile_load_file(path.v[0], &p, &d) < 0)
			fail_msg("%s:%u:%u: %s", files[i], d.line, d.col, d.msg);
		if (catalog_check_profile(cat, p, CATALOG_CHECK_STANDALONE, &is))
			fail_msg("%s: %s", files[i], is.v[0].msg);
		if (i == 0) {
			assert_int_equal(p->caps.max_parallel_workers, 4);
			assert_int_equal(p->caps.sandbox, SANDBOX_TIER_PROCESS);
			assert_int_equal(p->runtime.files.v[0].mode, 0640);
			assert_int_equal(p->runtime.endpoint.files.v[0].mode, 0600);
			assert_int_equal(p->runtime.resume.position,
					 RESUME_POSITION_AFTER_SUBCOMMANDS);
			assert_int_equal(p->runtime.session_id.format, SESSION_ID_FORMAT_ANY);
			assert_string_equal(profile_model(p, "fast"), "good-model-mini");
			assert_string_equal(profile_model(p, "other"), "other");
			assert_string_equal(p->version_args[0], "version");
			assert_null(catalog_find(cat, "good_agent")); /* checked on its own */
		}
		diag_list_release(&is);
		profile_free(p);
		strvec_clear(&path);
	}
	strvec_clear(&repo);
	catalog_free(cat);
}

static void test_names(void **state)
{
	char stem[PROFILE_MAX_NAME + 2];
	struct profile *p = NULL;
	struct diag d;

	(void)state;
	assert_true(profile_name_valid("open_interpreter"));
	assert_false(profile_name_valid("Claude"));
	assert_false(profile_name_valid("9lives"));
	assert_false(profile_name_valid("kebab-case"));
	assert_false(profile_name_valid(""));
	assert_int_equal(profile_stem("a/b/claude.yaml", stem, sizeof(stem)), 0);
	assert_string_equal(stem, "claude");
	assert_int_equal(profile_stem("claude.yml", stem, sizeof(stem)), -EINVAL);
	assert_int_equal(profile_stem(".yaml", stem, sizeof(stem)), -EINVAL);
	diag_clear(&d);
	assert_int_equal(profile_load_file("/nonexistent/x.yaml", &p, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "cannot read"));
	assert_int_equal(profile_load_file("/nonexistent/x.txt", &p, &d), -EINVAL);
	assert_null(p);
	assert_string_equal(sandbox_tier_to_string(SANDBOX_TIER_MICROVM), "microvm");
	assert_int_equal(sandbox_tier_from_string("container"), SANDBOX_TIER_CONTAINER);
	assert_int_equal(sandbox_tier_from_string("vm"), _SANDBOX_TIER_INVALID);
	assert_null(profile_shape_to_string(_PROFILE_SHAPE_MAX));
	assert_string_equal(prompt_guard_to_string(PROMPT_GUARD_NONE), "none");
	assert_string_equal(prompt_guard_to_string(PROMPT_GUARD_LONG_PROMPT), "long-prompt");
	assert_null(prompt_guard_to_string(_PROMPT_GUARD_MAX));
	assert_string_equal(profile_placeholder_name(PH_API_KEY_ENV), "api_key_env");
}

/* runtime.sandbox.hosts: the provider's hosts, spelled HOST:PORT (443 by
 * default), hashed only when listed */
static void test_sandbox_hosts(void **state)
{
	const char *head = "name: x\ndisplay_name: X\nshape: factory\n"
			   "invocation: {binary: x, prompt_positional: true}\n";
	char text[512];
	struct profile *g;
	struct diag d;

	(void)state;
	(void)snprintf(text, sizeof(text),
		       "%sruntime: {sandbox: {hosts: [API.Example.com, "
		       "\"10.0.0.1:8443\", \"[::1]:9\"]}}\n",
		       head);
	g = load("x", text);
	assert_int_equal(g->runtime.sandbox.hosts.n, 3);
	assert_string_equal(g->runtime.sandbox.hosts.v[0], "api.example.com:443");
	assert_string_equal(g->runtime.sandbox.hosts.v[1], "10.0.0.1:8443");
	assert_string_equal(g->runtime.sandbox.hosts.v[2], "[::1]:9");
	assert_null(g->runtime.sandbox.hosts.v[3]);
	assert_int_equal(g->runtime.sandbox.hosts.at[0].line, 5);
	assert_non_null(
		strstr(profile_canonical_bytes(g, NULL),
		       "\"hosts\":[\"api.example.com:443\",\"10.0.0.1:8443\",\"[::1]:9\"]"));
	(void)profile_free(g);
	(void)snprintf(text, sizeof(text), "%sruntime: {sandbox: {tiers: [bwrap]}}\n", head);
	g = load("x", text);
	assert_int_equal(g->runtime.sandbox.hosts.n, 0);
	assert_null(strstr(profile_canonical_bytes(g, NULL), "\"hosts\""));
	(void)profile_free(g);
	(void)snprintf(text, sizeof(text), "%sruntime: {sandbox: {hosts: [a.com, A.com:443]}}\n",
		       head);
	d = load_fail("x", text);
	assert_non_null(
		strstr(d.msg, "field 'runtime.sandbox.hosts[1]': 'A.com:443' is listed twice"));
	(void)snprintf(text, sizeof(text), "%sruntime: {sandbox: {hosts: [\"a.com:0\"]}}\n", head);
	d = load_fail("x", text);
	assert_non_null(strstr(
		d.msg, "field 'runtime.sandbox.hosts[0]': 'a.com:0' is not HOST or HOST:PORT"));
	(void)snprintf(text, sizeof(text), "%sruntime: {sandbox: {hosts: [\"https://a.com/\"]}}\n",
		       head);
	d = load_fail("x", text);
	assert_non_null(strstr(d.msg, "is not HOST or HOST:PORT"));
	(void)snprintf(text, sizeof(text), "%sruntime: {sandbox: {hosts: [\"a b\"]}}\n", head);
	d = load_fail("x", text);
	assert_int_equal(d.line, 5);
	assert_non_null(strstr(d.msg, "is not HOST or HOST:PORT"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_split),
		cmocka_unit_test(test_shipped_gates),
		cmocka_unit_test(test_six_clis),
		cmocka_unit_test(test_generic_adapter),
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_default_model_and_hooks),
		cmocka_unit_test(test_validation_messages),
		cmocka_unit_test(test_strategy_rules),
		cmocka_unit_test(test_contract_discrepancies),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_argv_order),
		cmocka_unit_test(test_catalog_layers),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_good_files),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_sandbox_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
