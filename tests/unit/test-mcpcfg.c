/* MCP servers for CLI agents: adapter/mcpcfg.h (the four renderings and the
 * ACP array), the shipped profiles' runtime.mcp through invocation_build()
 * (argv, env, files, ${NAME} values and secrets, refusals), and
 * orch/mcpservers.h (loading, precedence by name, the recorded JSON). */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/catalog.h"
#include "adapter/invocation.h"
#include "adapter/mcpcfg.h"
#include "adapter/profile.h"
#include "cli/plan-gates.h"
#include "orch/config.h"
#include "orch/plan.h"
#include "orch/mcpservers.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#define WORKDIR "/work/tree"
#define SESSION "/work/tree/.bernstein/runs/r1/s1"
#define SECRET	"mcp-secret-value-0123456789"

static struct catalog *cat;

static const char *host_env[] = {
	"PATH=/usr/bin:/bin",
	"HOME=/home/user",
	"LANG=C.UTF-8",
	"MCP_TOKEN=" SECRET,
	"NOT_ALLOWED=nope-nope-nope",
	"BERNSTEIN_ALLOWED_API_KEY_ENVS=MCP_TOKEN",
	NULL,
};

static const char *const fs_args[] = {"-y", "@modelcontextprotocol/server-filesystem", ".", NULL};
static const char *const fs_ek[] = {"LOG", "TOKEN", NULL};
static const char *const fs_ev[] = {"warn \"q\"", "${MCP_TOKEN}", NULL};
static const char *const docs_hk[] = {"Authorization", NULL};
static const char *const docs_hv[] = {"${MCP_TOKEN}", NULL};

static const struct mcp_server servers[] = {
	{.name = "fs",
	 .command = "npx",
	 .args = fs_args,
	 .n_args = 3,
	 .env_keys = fs_ek,
	 .env_values = fs_ev,
	 .n_env = 2},
	{.name = "docs",
	 .url = "https://mcp.example.com/mcp",
	 .header_keys = docs_hk,
	 .header_values = docs_hv,
	 .n_headers = 1},
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

static json_t *render_json(enum mcp_format f, const char *base)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	json_error_t err;
	struct diag d;
	json_t *j;

	assert_int_equal(mcpcfg_render(f, servers, 2, base, &out, &d), 0);
	j = json_loads(out.buf, JSON_REJECT_DUPLICATES, &err);
	if (!j)
		fail_msg("not JSON: %s\n%s", err.text, out.buf);
	sbuf_release(&out);
	return j;
}

static const char *jget(const json_t *j, const char *path)
{
	char buf[256], *save = NULL, *k;
	const json_t *x = j;

	(void)snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, ".", &save); k && x; k = strtok_r(NULL, ".", &save)) {
		if (json_is_array(x))
			x = json_array_get(x, (size_t)strtoul(k, NULL, 10));
		else
			x = json_object_get(x, k);
	}
	return json_string_value(x);
}

static void test_render_claude(void **state)
{
	json_t *j = render_json(MCP_FORMAT_CLAUDE, NULL);

	(void)state;
	assert_string_equal(jget(j, "mcpServers.fs.type"), "stdio");
	assert_string_equal(jget(j, "mcpServers.fs.command"), "npx");
	assert_string_equal(jget(j, "mcpServers.fs.args.1"),
			    "@modelcontextprotocol/server-filesystem");
	assert_string_equal(jget(j, "mcpServers.fs.env.LOG"), "warn \"q\"");
	assert_string_equal(jget(j, "mcpServers.docs.type"), "http");
	assert_string_equal(jget(j, "mcpServers.docs.url"), "https://mcp.example.com/mcp");
	assert_string_equal(jget(j, "mcpServers.docs.headers.Authorization"), "${MCP_TOKEN}");
	json_decref(j);
}

static void test_render_gemini_merges(void **state)
{
	json_t *j =
		render_json(MCP_FORMAT_GEMINI, "{\"privacy\": {\"usageStatisticsEnabled\": false},"
					       " \"mcpServers\": {\"old\": {\"command\": \"x\"},"
					       " \"fs\": {\"command\": \"replaced\"}}}");

	(void)state;
	assert_false(json_is_true(
		json_object_get(json_object_get(j, "privacy"), "usageStatisticsEnabled")));
	assert_string_equal(jget(j, "mcpServers.old.command"), "x");
	assert_string_equal(jget(j, "mcpServers.fs.command"), "npx");
	assert_string_equal(jget(j, "mcpServers.fs.args.2"), ".");
	assert_null(jget(j, "mcpServers.fs.type"));
	assert_string_equal(jget(j, "mcpServers.docs.httpUrl"), "https://mcp.example.com/mcp");
	json_decref(j);
}

static void test_render_opencode(void **state)
{
	json_t *j = render_json(MCP_FORMAT_OPENCODE, NULL);

	(void)state;
	assert_string_equal(jget(j, "mcp.fs.type"), "local");
	assert_string_equal(jget(j, "mcp.fs.command.0"), "npx");
	assert_string_equal(jget(j, "mcp.fs.command.3"), ".");
	assert_string_equal(jget(j, "mcp.fs.environment.LOG"), "warn \"q\"");
	assert_true(json_is_true(
		json_object_get(json_object_get(json_object_get(j, "mcp"), "fs"), "enabled")));
	assert_string_equal(jget(j, "mcp.docs.type"), "remote");
	assert_string_equal(jget(j, "mcp.docs.headers.Authorization"), "${MCP_TOKEN}");
	json_decref(j);
}

static void test_render_codex(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	struct diag d;

	(void)state;
	assert_int_equal(mcpcfg_render(MCP_FORMAT_CODEX, servers, 2, "[analytics]\nenabled = false",
				       &out, &d),
			 0);
	assert_string_equal(out.buf,
			    "[analytics]\nenabled = false\n"
			    "\n[mcp_servers.fs]\n"
			    "command = \"npx\"\n"
			    "args = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"]\n"
			    "\n[mcp_servers.fs.env]\n"
			    "\"LOG\" = \"warn \\\"q\\\"\"\n"
			    "\"TOKEN\" = \"${MCP_TOKEN}\"\n"
			    "\n[mcp_servers.docs]\n"
			    "url = \"https://mcp.example.com/mcp\"\n"
			    "\n[mcp_servers.docs.http_headers]\n"
			    "\"Authorization\" = \"${MCP_TOKEN}\"\n");
	sbuf_release(&out);
}

static void test_render_refusals(void **state)
{
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	struct mcp_server bad = {.name = "a b", .command = "x"};
	struct diag d;

	(void)state;
	assert_int_equal(mcpcfg_render(MCP_FORMAT_CLAUDE, servers, 2, "[1, 2]", &out, &d), -EINVAL);
	assert_int_equal(mcpcfg_render(MCP_FORMAT_CLAUDE, &bad, 1, NULL, &out, &d), -EINVAL);
	bad.name = "ok";
	bad.url = "http://x";
	assert_int_equal(mcpcfg_render(MCP_FORMAT_CODEX, &bad, 1, NULL, &out, &d), -EINVAL);
	assert_false(mcpcfg_name_valid(""));
	assert_true(mcpcfg_name_valid("gh_2-x"));
	sbuf_release(&out);
}

static void test_acp_json(void **state)
{
	json_t *a = mcpcfg_acp_json(servers, 2);

	(void)state;
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(jget(a, "0.name"), "fs");
	assert_string_equal(jget(a, "0.command"), "npx");
	assert_string_equal(jget(a, "0.env.1.name"), "TOKEN");
	assert_string_equal(jget(a, "1.type"), "http");
	assert_string_equal(jget(a, "1.headers.0.name"), "Authorization");
	json_decref(a);
}

/* ---- through invocation_build() ---- */

static const struct profile *shipped(const char *name)
{
	const struct registry_entry *e = catalog_find(cat, name);

	assert_non_null(e);
	assert_non_null(e->profile);
	return e->profile;
}

static int build(const char *adapter, const struct mcp_server *v, size_t n,
		 struct invocation_plan *plan, struct diag *d)
{
	struct invocation_request r;

	memset(&r, 0, sizeof(r));
	r.profile = shipped(adapter);
	r.catalog = cat;
	r.prompt = "hi";
	r.dangerous = true;
	r.workdir = WORKDIR;
	r.session_dir = SESSION;
	r.host_env = host_env;
	r.mcp_servers = v;
	r.n_mcp_servers = n;
	if (strcmp(adapter, "openai_agents") == 0)
		r.model = "gpt-5.5";
	invocation_plan_init(plan);
	diag_clear(d);
	return invocation_build(&r, plan, d);
}

static const struct invocation_file *file_at(const struct invocation_plan *p,
					     enum invocation_base base, const char *path)
{
	size_t i;

	for (i = 0; i < p->n_files; i++)
		if (p->files[i].base == base && strcmp(p->files[i].path, path) == 0)
			return &p->files[i];
	fail_msg("no file %s", path);
	return NULL;
}

static const char *env_of(const struct invocation_plan *plan, const char *name)
{
	size_t n = strlen(name), i;

	for (i = 0; i < plan->env.nr; i++)
		if (strncmp(plan->env.v[i], name, n) == 0 && plan->env.v[i][n] == '=')
			return plan->env.v[i] + n + 1;
	return NULL;
}

/* The secret is only in the rendered file and on the secrets list. */
static void assert_secret_contained(const struct invocation_plan *p)
{
	size_t i;

	for (i = 0; i < p->argv.nr; i++)
		assert_null(strstr(p->argv.v[i], SECRET));
	for (i = 0; i < p->env.nr; i++)
		assert_null(strstr(p->env.v[i], SECRET));
	assert_true(strvec_find(&p->secrets, SECRET) >= 0);
}

static void test_claude(void **state)
{
	struct invocation_plan p;
	const struct invocation_file *f;
	struct diag d;
	long i;

	(void)state;
	assert_int_equal(build("claude", servers, 2, &p, &d), 0);
	i = strvec_find(&p.argv, "--mcp-config");
	assert_true(i > 0);
	assert_string_equal(p.argv.v[i + 1], SESSION "/mcp-config.json");
	assert_string_equal(p.argv.v[i + 2], "--strict-mcp-config");
	/* before the prompt's -p -- */
	assert_true(i < strvec_find(&p.argv, "--"));
	assert_string_equal(p.mcp_config, SESSION "/mcp-config.json");
	assert_int_equal(p.n_mcp_servers, 2);
	f = file_at(&p, INVOCATION_BASE_SESSION, "mcp-config.json");
	assert_int_equal(f->mode, 0600);
	assert_non_null(strstr(f->content, "\"TOKEN\": \"" SECRET "\""));
	assert_non_null(strstr(f->content, "\"Authorization\": \"" SECRET "\""));
	assert_secret_contained(&p);
	/* the ACP array, resolved */
	assert_non_null(p.mcp_acp);
	assert_non_null(strstr(p.mcp_acp, "\"name\":\"TOKEN\",\"value\":\"" SECRET "\""));
	invocation_plan_release(&p);
}

static void test_gemini_qwen_opencode(void **state)
{
	/* gemini and qwen: merged into their settings.json in the private HOME */
	static const struct {
		const char *adapter, *file, *keep;
	} m[] = {
		{"gemini", ".gemini/settings.json", "\"selectedType\": \"gemini-api-key\""},
		{"qwen", ".qwen/settings.json", "\"usageStatisticsEnabled\": false"},
	};
	struct invocation_plan p;
	const struct invocation_file *f;
	struct diag d;
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		if (build(m[k].adapter, servers, 2, &p, &d) < 0)
			fail_msg("%s: %s", m[k].adapter, d.msg);
		assert_null(p.mcp_config);
		f = file_at(&p, INVOCATION_BASE_STATE, m[k].file);
		assert_non_null(strstr(f->content, "\"mcpServers\""));
		assert_non_null(strstr(f->content, "\"httpUrl\": \"https://mcp.example.com/mcp\""));
		assert_non_null(strstr(f->content, m[k].keep)); /* the profile's own settings */
		assert_non_null(strstr(f->content, SECRET));
		assert_non_null(strstr(p.mcp_cleanup, m[k].file));
		if (strcmp(m[k].adapter, "qwen") == 0) /* its migration backup */
			assert_true(p.mcp_cleanup_more.nr == 1 &&
				    strstr(p.mcp_cleanup_more.v[0], ".qwen/settings.json.orig"));
		assert_secret_contained(&p);
		invocation_plan_release(&p);
	}
	/* opencode: a per-attempt file named by OPENCODE_CONFIG */
	if (build("opencode", servers, 2, &p, &d) < 0)
		fail_msg("opencode: %s", d.msg);
	assert_string_equal(env_of(&p, "OPENCODE_CONFIG"), SESSION "/mcp-config.json");
	assert_string_equal(p.mcp_cleanup, SESSION "/mcp-config.json");
	f = file_at(&p, INVOCATION_BASE_SESSION, "mcp-config.json");
	assert_non_null(strstr(f->content, "\"mcp\""));
	assert_non_null(strstr(f->content, SECRET));
	assert_secret_contained(&p);
	invocation_plan_release(&p);
}

static void test_codex_merges_home_file(void **state)
{
	struct invocation_plan p;
	const struct invocation_file *f;
	struct diag d;

	(void)state;
	assert_int_equal(build("codex", servers, 2, &p, &d), 0);
	assert_null(p.mcp_config);
	f = file_at(&p, INVOCATION_BASE_STATE, ".codex/config.toml");
	assert_non_null(strstr(f->content, "check_for_update_on_startup = false"));
	assert_non_null(strstr(f->content, "[mcp_servers.fs]\ncommand = \"npx\""));
	assert_non_null(strstr(f->content, "\"TOKEN\" = \"" SECRET "\""));
	assert_int_equal(f->len, strlen(f->content));
	assert_secret_contained(&p);
	invocation_plan_release(&p);
}

static void test_runner_manifest(void **state)
{
	struct invocation_plan p;
	const struct invocation_file *f;
	struct diag d;

	(void)state;
	/* stdio into the manifest; a url server refused */
	assert_int_equal(build("openai_agents", servers, 1, &p, &d), 0);
	f = file_at(&p, INVOCATION_BASE_SESSION, INVOCATION_MANIFEST_FILE);
	assert_non_null(strstr(f->content, "\"mcp_servers\""));
	assert_non_null(strstr(f->content, SECRET));
	invocation_plan_release(&p);
	assert_int_equal(build("openai_agents", servers, 2, &p, &d), -EPERM);
	assert_non_null(strstr(d.msg, "stdio MCP servers only"));
	invocation_plan_release(&p);
}

static void test_refusals(void **state)
{
	static const char *const ev_bad[] = {"${NOT_ALLOWED}", NULL};
	static const char *const ev_unset[] = {"${OPENAI_API_KEY}", NULL};
	static const char *const ek[] = {"X", NULL};
	struct mcp_server s = {.name = "x", .command = "srv", .env_keys = ek, .n_env = 1};
	struct invocation_plan p;
	struct diag d;

	(void)state;
	/* a profile with no runtime.mcp: never spawned without them */
	assert_int_equal(build("aider", servers, 1, &p, &d), -EPERM);
	assert_non_null(strstr(d.msg, "no way to take MCP servers"));
	invocation_plan_release(&p);
	s.env_values = ev_bad;
	assert_int_equal(build("claude", &s, 1, &p, &d), -EPERM);
	assert_non_null(strstr(d.msg, "${NOT_ALLOWED} is not on the agent's allow-list"));
	invocation_plan_release(&p);
	s.env_values = ev_unset;
	assert_int_equal(build("claude", &s, 1, &p, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "is not set"));
	invocation_plan_release(&p);
	/* none: nothing rendered, the argv as before */
	assert_int_equal(build("claude", NULL, 0, &p, &d), 0);
	assert_int_equal(strvec_find(&p.argv, "--mcp-config"), -1);
	assert_null(p.mcp_config);
	invocation_plan_release(&p);
}

/* ---- orch/mcpservers.h ---- */

static struct orch_config *cfg(const char *text)
{
	struct orch_config *c = NULL;
	struct diag d;

	if (orch_config_load_buf("mem.yaml", text, strlen(text), "MCP_TOKEN", &c, &d) < 0)
		fail_msg("%u:%u: %s", d.line, d.col, d.msg);
	return c;
}

static bool has(const struct orch_mcp_servers *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return true;
	return false;
}

static const struct mcp_server *find(const struct orch_mcp_servers *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return &s->v[i];
	fail_msg("no server %s", name);
	abort();
}

static void test_precedence(void **state)
{
	struct orch_config *c = cfg("mcp_servers:\n"
				    "  a: {command: from-config}\n"
				    "  b: {command: from-config}\n"
				    "  c: {command: from-config}\n"
				    "  d: {command: from-config}\n"
				    "role_model_policy:\n"
				    "  qa:\n"
				    "    mcp_servers: {b: {command: from-role}, c: null}\n");
	static const char *const pa[] = {NULL};
	struct mcp_server plan_v[] = {{.name = "a", .command = "from-plan", .args = pa},
				      {.name = "b", .command = "from-plan", .args = pa}};
	struct mcp_server task_v[] = {{.name = "d"}, {.name = "e", .url = "http://127.0.0.1:9/m"}};
	struct orch_mcp_servers plan = {plan_v, 2}, task = {task_v, 2}, r;
	struct arena a = ARENA_INIT;

	(void)state;
	orch_config_mcp_servers(c, "qa", &plan, &task, &a, &r);
	assert_int_equal(r.n, 3);
	assert_string_equal(find(&r, "a")->command, "from-plan");
	assert_string_equal(find(&r, "b")->command, "from-role");
	assert_false(has(&r, "c")); /* removed by the role */
	assert_false(has(&r, "d")); /* removed by the task */
	assert_string_equal(find(&r, "e")->url, "http://127.0.0.1:9/m");
	/* another role: the plan over the configuration */
	orch_config_mcp_servers(c, "backend", &plan, NULL, &a, &r);
	assert_int_equal(r.n, 4);
	assert_string_equal(find(&r, "b")->command, "from-plan");
	assert_string_equal(find(&r, "c")->command, "from-config");
	arena_release(&a);
	orch_config_free(c);
}

static void test_json_round_trip(void **state)
{
	struct orch_config *c = cfg(
		"mcp_servers:\n"
		"  fs: {command: npx, args: [-y, x], env: {K: \"${MCP_TOKEN}\", L: v}}\n"
		"  docs: {url: \"https://mcp.example.com/mcp\", headers: {X-Key: \"${MCP_TOKEN}\"}}\n"
		"  gone: null\n");
	struct orch_mcp_servers back;
	struct arena a = ARENA_INIT;
	char msg[200], *s1, *s2;
	json_t *j, *j2;

	(void)state;
	j = orch_mcp_servers_json(&c->mcp_servers);
	s1 = json_dumps(j, JSON_SORT_KEYS);
	assert_non_null(strstr(s1, "\"K\": \"${MCP_TOKEN}\"")); /* the reference, never a value */
	assert_non_null(strstr(s1, "\"gone\": null"));
	assert_int_equal(orch_mcp_servers_parse_json(&a, j, &back, msg, sizeof(msg)), 0);
	j2 = orch_mcp_servers_json(&back);
	s2 = json_dumps(j2, JSON_SORT_KEYS);
	assert_string_equal(s1, s2);
	json_decref(j2);
	j2 = json_loads("{\"x\": {\"command\": \"-evil\"}}", 0, NULL);
	assert_int_equal(orch_mcp_servers_parse_json(&a, j2, &back, msg, sizeof(msg)), -EBADMSG);
	json_decref(j2);
	j2 = json_loads("{\"x\": {\"command\": \"a\", \"url\": \"http://x\"}}", 0, NULL);
	assert_int_equal(orch_mcp_servers_parse_json(&a, j2, &back, msg, sizeof(msg)), -EBADMSG);
	json_decref(j2);
	free(s1);
	free(s2);
	json_decref(j);
	arena_release(&a);
	orch_config_free(c);
}

/* plan validate says what dispatch would refuse */
static void test_plan_gate(void **state)
{
	static const char text[] =
		"name: x\n"
		"mcp_servers: {fs: {command: npx}, web: {url: \"http://127.0.0.1:9/m\"}}\n"
		"tasks:\n"
		"  - {title: a, prompt: p, adapter: aider}\n"
		"  - {title: b, prompt: p, adapter: claude}\n"
		"  - {title: c, prompt: p, adapter: aider, mcp_servers: {fs: null, web: null}}\n"
		"  - {title: d, prompt: p, adapter: openai_agents, model: m}\n";
	struct diag_list is = DIAG_LIST_INIT(16);
	struct plan *p = NULL;
	struct diag_list pis = DIAG_LIST_INIT(16);

	(void)state;
	assert_int_equal(plan_load_buf("p.yaml", text, strlen(text), NULL, &p, &pis), 0);
	assert_int_equal(plan_gates_check(p, cat, NULL, &is), 2);
	assert_int_equal(is.v[0].line, 4);
	assert_non_null(strstr(
		is.v[0].msg,
		"field 'tasks[0].mcp_servers': task 'a' would be refused at dispatch on 'aider'"));
	assert_non_null(strstr(is.v[1].msg, "stdio MCP servers only"));
	diag_list_release(&is);
	diag_list_release(&pis);
	plan_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_claude),
		cmocka_unit_test(test_render_gemini_merges),
		cmocka_unit_test(test_render_opencode),
		cmocka_unit_test(test_render_codex),
		cmocka_unit_test(test_render_refusals),
		cmocka_unit_test(test_acp_json),
		cmocka_unit_test(test_claude),
		cmocka_unit_test(test_gemini_qwen_opencode),
		cmocka_unit_test(test_codex_merges_home_file),
		cmocka_unit_test(test_runner_manifest),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_plan_gate),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
