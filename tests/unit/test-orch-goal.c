/* Goal mode's policy and prompt (src/orch/goal.h): each governed key is
 * refused at its line:col unless its class is allowed, allowed commands
 * are shown verbatim, a stronger sandbox is not a downgrade, the stages
 * form is walked too, and the prompt carries the goal, the adapters, the
 * roles, the schema and the problems. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "orch/goal.h"
#include "util/fsutil.h"

static const char *const usable[] = {"mock", "openai_agents", NULL};

struct result {
	struct diag_list is;
	struct strvec shown;
	size_t n;
};

static void policy(const char *text, unsigned allow, struct result *r)
{
	struct goal_policy pol = {.allow = allow, .adapters = usable};

	r->is = (struct diag_list)DIAG_LIST_INIT(100);
	r->shown = (struct strvec)STRVEC_INIT;
	r->n = goal_policy_check("p.yaml", text, strlen(text), &pol, &r->is, &r->shown);
}

static void result_release(struct result *r)
{
	diag_list_release(&r->is);
	strvec_clear(&r->shown);
}

static bool has(const struct result *r, unsigned line, unsigned col, const char *needle)
{
	size_t i;

	for (i = 0; i < r->is.n; i++)
		if (r->is.v[i].line == line && r->is.v[i].col == col &&
		    strstr(r->is.v[i].msg, needle))
			return true;
	return false;
}

static const char hostile[] = "name: x\n"						    /* 1 */
			      "endpoints:\n"						    /* 2 */
			      "  codex: {base_url: \"http://e/v1\"}\n"			    /* 3 */
			      "budget: 100\n"						    /* 4 */
			      "tasks:\n"						    /* 5 */
			      "  - title: a\n"						    /* 6 */
			      "    prompt: p\n"						    /* 7 */
			      "    gates: [{name: g, run: \"touch C\"}]\n"		    /* 8 */
			      "    worktree_setup: {setup_command: \"make x\"}\n"	    /* 9 */
			      "    network: full\n"					    /* 10 */
			      "    sampling: {base_url: \"http://e/v1\", temperature: 1}\n" /* 11 */
			      "    fallback: [mock, claude]\n";				    /* 12 */

static void test_refused_by_default(void **state)
{
	struct result r;

	(void)state;
	policy(hostile, 0, &r);
	assert_int_equal(r.n, 7);
	assert_true(has(&r, 2, 1, "field 'endpoints'"));
	assert_true(has(&r, 4, 1, "field 'budget'"));
	assert_true(has(&r, 8, 5, "field 'tasks[0].gates': gates run commands on the host"));
	assert_true(has(&r, 9, 5, "field 'tasks[0].worktree_setup'"));
	assert_true(has(&r, 10, 14, "field 'tasks[0].network': network would weaken"));
	assert_true(has(&r, 11, 26, "field 'tasks[0].sampling.base_url'"));
	assert_true(
		has(&r, 12, 22, "field 'tasks[0].fallback[1]': adapter 'claude' is not usable"));
	assert_int_equal(r.shown.nr, 0);
	result_release(&r);
}

/* executor: anything but local runs the task off this host, unsandboxed:
 * a confinement class, refused unless --allow sandbox (then shown). */
static void test_executor(void **state)
{
	static const char plan[] = "name: x\n"
				   "executor: slurm\n"
				   "tasks:\n"
				   "  - {title: a, prompt: b, executor: local}\n"
				   "  - {title: c, prompt: d, executor: slurm}\n";
	struct result r;

	(void)state;
	policy(plan, 0, &r);
	assert_int_equal(r.n, 2);
	assert_true(has(&r, 2, 11, "field 'executor': executor would weaken"));
	assert_true(has(&r, 5, 37, "field 'tasks[1].executor': executor would weaken"));
	result_release(&r);
	policy(plan, GOAL_ALLOW_SANDBOX, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.shown.nr, 2);
	assert_string_equal(r.shown.v[0], "executor: slurm");
	result_release(&r);
}

static void test_allowed_classes_shown(void **state)
{
	struct result r;

	(void)state;
	policy(hostile, GOAL_ALLOW_GATES | GOAL_ALLOW_SETUP, &r);
	assert_int_equal(r.n, 5);
	assert_false(has(&r, 8, 5, "gates"));
	assert_int_equal(r.shown.nr, 2);
	assert_string_equal(r.shown.v[0], "tasks[0].gates[0].run: touch C");
	assert_string_equal(r.shown.v[1], "tasks[0].worktree_setup.setup_command: make x");
	result_release(&r);

	policy(hostile,
	       GOAL_ALLOW_GATES | GOAL_ALLOW_SETUP | GOAL_ALLOW_SANDBOX | GOAL_ALLOW_ENDPOINTS |
		       GOAL_ALLOW_BUDGET,
	       &r);
	/* an unusable adapter is never a class the user can allow */
	assert_int_equal(r.n, 1);
	assert_true(has(&r, 12, 22, "adapter 'claude'"));
	result_release(&r);
}

/* mcp_servers: (top level, a task, a stage's step) starts commands on the
 * host through the agent: never in a generated plan, whatever --allow says */
static void test_mcp_servers_never(void **state)
{
	static const char text[] =
		"name: x\n"
		"mcp_servers: {fs: {command: npx}}\n"
		"tasks:\n"
		"  - title: a\n"
		"    prompt: p\n"
		"    mcp_servers: {evil: {command: sh, args: [-c, \"touch C\"]}}\n";
	struct result r;

	(void)state;
	policy(text,
	       GOAL_ALLOW_GATES | GOAL_ALLOW_SETUP | GOAL_ALLOW_SANDBOX | GOAL_ALLOW_ENDPOINTS |
		       GOAL_ALLOW_BUDGET,
	       &r);
	assert_int_equal(r.n, 2);
	assert_true(has(&r, 2, 1, "field 'mcp_servers'"));
	assert_true(has(&r, 6, 5, "field 'tasks[0].mcp_servers'"));
	assert_int_equal(r.shown.nr, 0);
	result_release(&r);
}

/* A plan's hooks: and notify: (commands on the host, facts sent out) are
 * never taken from a generated plan, whatever --allow says. */
static void test_hooks_notify_never(void **state)
{
	static const char text[] = "name: x\n"
				   "hooks: {post_task: \"touch C\"}\n"
				   "notify: {webhook_env: X, on: [run_done]}\n"
				   "tasks:\n"
				   "  - {title: a, prompt: p}\n";
	struct result r;

	(void)state;
	policy(text,
	       GOAL_ALLOW_GATES | GOAL_ALLOW_SETUP | GOAL_ALLOW_SANDBOX | GOAL_ALLOW_ENDPOINTS |
		       GOAL_ALLOW_BUDGET,
	       &r);
	assert_int_equal(r.n, 2);
	assert_true(has(&r, 2, 1, "field 'hooks': hooks is never taken"));
	assert_true(has(&r, 3, 1, "field 'notify': notify is never taken"));
	assert_int_equal(r.shown.nr, 0);
	result_release(&r);
}

static void test_stronger_sandbox_and_stages(void **state)
{
	struct result r;

	(void)state;
	policy("name: x\nsandbox: bwrap\nnetwork: none\ntasks:\n  - {title: a, prompt: p, "
	       "sandbox: landlock, adapter: auto}\n",
	       0, &r);
	assert_int_equal(r.n, 0);
	result_release(&r);

	policy("name: s\ncli: codex\nstages:\n  - name: b\n    steps:\n      - goal: a\n"
	       "        hooks: {pre_task: [x]}\n        sandbox: none\n",
	       GOAL_ALLOW_SANDBOX, &r);
	assert_int_equal(r.n, 2);
	assert_true(has(&r, 2, 6, "field 'cli': adapter 'codex'"));
	assert_true(has(&r, 7, 9, "field 'stages[0].steps[0].hooks': hooks is never taken"));
	assert_int_equal(r.shown.nr, 1);
	assert_string_equal(r.shown.v[0], "stages[0].steps[0].sandbox: none");
	result_release(&r);
}

static void test_shown_escaped(void **state)
{
	struct result r;

	(void)state;
	/* a carriage return and an escape sequence cannot hide a part of the
	 * command on the confirmation's terminal */
	policy("name: x\ntasks:\n  - {title: a, prompt: p, gates: [{name: g, run: \"rm -rf ~\\rtrue "
	       "\\e[2K\"}]}\n",
	       GOAL_ALLOW_GATES, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.shown.nr, 1);
	assert_string_equal(r.shown.v[0], "tasks[0].gates[0].run: rm -rf ~\\x0dtrue \\x1b[2K");
	result_release(&r);
}

static void test_paths_within(void **state)
{
	struct result r;

	(void)state;
	policy("name: x\ncontext_files: [docs/a.md]\ntasks:\n"
	       "  - title: a\n"
	       "    prompt: p\n"
	       "    context_files: [src/x.c, /etc/passwd, a/../../b, ~/.ssh/id_rsa]\n"
	       "    files: \"..\"\n"
	       "    attachments: [ok.png, ../up.png]\n",
	       GOAL_ALLOW_GATES | GOAL_ALLOW_SETUP | GOAL_ALLOW_SANDBOX | GOAL_ALLOW_ENDPOINTS |
		       GOAL_ALLOW_BUDGET,
	       &r);
	assert_int_equal(r.n, 5);
	assert_true(has(&r, 6, 30, "field 'tasks[0].context_files[1]': '/etc/passwd' is outside"));
	assert_true(has(&r, 6, 43, "'a/../../b' is outside"));
	assert_true(has(&r, 6, 54, "'~/.ssh/id_rsa' is outside"));
	assert_true(has(&r, 7, 12, "field 'tasks[0].files': '..' is outside"));
	assert_true(has(&r, 8, 27, "field 'tasks[0].attachments[1]'"));
	result_release(&r);
}

/* tracked() for the test: what git tracks in a repository with docs/a.md
 * and src/x.c committed and .env ignored */
static bool fake_tracked(void *ctx, const char *path)
{
	(void)ctx;
	return strcmp(path, "docs/a.md") == 0 || strcmp(path, "src/x.c") == 0;
}

/* context_files must be tracked files: an ignored .env never reaches an
 * agent's prompt through a generated plan */
static void test_context_tracked(void **state)
{
	struct goal_policy pol = {.allow = 0, .adapters = usable, .tracked = fake_tracked};
	struct result r;
	const char *text = "name: x\ncontext_files: [docs/a.md]\ntasks:\n"
			   "  - title: a\n"
			   "    prompt: p\n"
			   "    context_files: [src/x.c, .env, /etc/passwd]\n";

	(void)state;
	r.is = (struct diag_list)DIAG_LIST_INIT(100);
	r.shown = (struct strvec)STRVEC_INIT;
	r.n = goal_policy_check("p.yaml", text, strlen(text), &pol, &r.is, &r.shown);
	/* /etc/passwd: outside (once, not also untracked); .env: not tracked */
	assert_int_equal(r.n, 2);
	assert_true(has(&r, 6, 30, "'.env' is not a file git tracks"));
	assert_true(has(&r, 6, 36, "'/etc/passwd' is outside"));
	result_release(&r);
}

static void test_not_yaml(void **state)
{
	struct result r;

	(void)state;
	policy("tasks: [\n", 0, &r);
	assert_int_equal(r.n, 0); /* the plan loader says why */
	result_release(&r);
}

static void test_allow_parse(void **state)
{
	struct diag d;
	unsigned a = 0;
	char buf[64];

	(void)state;
	assert_int_equal(goal_allow_parse("gates,setup", &a, &d), 0);
	assert_int_equal(goal_allow_parse("budget", &a, &d), 0);
	assert_string_equal(goal_allow_format(a, buf, sizeof(buf)), "gates,setup,budget");
	assert_int_equal(goal_allow_parse("gates,hooks", &a, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "unknown class 'hooks'"));
	assert_int_equal(goal_allow_parse("", &a, &d), -EINVAL);
	assert_string_equal(goal_allow_format(0, buf, sizeof(buf)), "none");
}

static void test_prompt(void **state)
{
	struct sbuf sb = SBUF_INIT(GOAL_PROMPT_MAX);
	struct goal_prompt gp = {
		.goal = "Add JWT auth",
		.summary = "Files of the repository (1):\n  a.c\n",
		.adapters = usable,
		.plan_file = GOAL_PLAN_FILE,
	};

	(void)state;
	assert_int_equal(goal_prompt_build(&gp, &sb), 0);
	assert_non_null(strstr(sb.buf, "Add JWT auth"));
	assert_non_null(strstr(sb.buf, "  a.c\n"));
	assert_non_null(strstr(sb.buf, ": mock, openai_agents\n"));
	assert_non_null(strstr(sb.buf, "prompt-engineer"));
	assert_non_null(strstr(sb.buf, "depends_on"));
	assert_non_null(strstr(sb.buf, "bernstein-plan.yaml"));
	assert_null(strstr(sb.buf, "problems"));
	sbuf_reset(&sb);
	gp.problems = "d.yaml:3:5: field 'x': bad\n";
	gp.resumed = true;
	assert_int_equal(goal_prompt_build(&gp, &sb), 0);
	assert_non_null(strstr(sb.buf, "d.yaml:3:5: field 'x': bad"));
	assert_null(strstr(sb.buf, "Add JWT auth")); /* the session has it */
	/* with what each adapter offers: one line each */
	{
		static const char *const caps[] = {"resume, tool_use", "endpoint, sampling", NULL};

		sbuf_reset(&sb);
		gp.problems = NULL;
		gp.resumed = false;
		gp.adapter_caps = caps;
		assert_int_equal(goal_prompt_build(&gp, &sb), 0);
		assert_non_null(strstr(sb.buf, "\n  mock: resume, tool_use\n"));
		assert_non_null(strstr(sb.buf, "\n  openai_agents: endpoint, sampling\n"));
		assert_non_null(strstr(sb.buf, "[capability:NAME]"));
	}
	sbuf_release(&sb);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char path[512];

	(void)snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(atomic_write_file(path, text, strlen(text), 0644), 0);
}

/* The summary names the languages by file count and the test commands the
 * top-level files suggest; a symlinked marker is not read (nor followed),
 * npm's placeholder test script is no test command. */
static void test_summary_languages_tests(void **state)
{
	char dir[] = "/tmp/goal-summary-XXXXXX", path[512];
	struct sbuf sb = SBUF_INIT(GOAL_PROMPT_MAX);

	(void)state;
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/src", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	put(dir, "src/a.c", "int a;\n");
	put(dir, "src/b.c", "int b;\n");
	put(dir, "src/a.h", "int a;\n");
	put(dir, "tool.py", "print(1)\n");
	put(dir, "Makefile", "CC = cc\ntest: all\n\t./run\n");
	put(dir, "Cargo.toml", "[package]\n");
	put(dir, "README.md", "# Demo\nSUMMARY-README-MARK\n");
	(void)snprintf(path, sizeof(path), "%s/go.mod", dir);
	assert_int_equal(symlink("/etc/hostname", path), 0);
	assert_int_equal(goal_repo_summary(dir, &sb), 0);
	assert_non_null(strstr(sb.buf, "Languages (files): C 3, Python 1\n"));
	assert_non_null(
		strstr(sb.buf, "Test commands (inferred from its files): make test, cargo test\n"));
	assert_null(strstr(sb.buf, "go test ./..."));
	assert_non_null(strstr(sb.buf, "SUMMARY-README-MARK"));
	assert_non_null(strstr(sb.buf, "  src/a.c\n"));
	/* npm: a real test script counts, the placeholder does not */
	put(dir, "package.json",
	    "{\"scripts\": {\"test\": \"echo \\\"Error: no test specified\\\" && exit 1\"}}");
	sbuf_reset(&sb);
	assert_int_equal(goal_repo_summary(dir, &sb), 0);
	assert_null(strstr(sb.buf, "npm test"));
	put(dir, "package.json", "{\"scripts\": {\"test\": \"vitest run\"}}");
	put(dir, "Makefile", "check:\n\ttrue\n");
	sbuf_reset(&sb);
	assert_int_equal(goal_repo_summary(dir, &sb), 0);
	assert_non_null(strstr(sb.buf, ": make check, npm test, cargo test\n"));
	sbuf_release(&sb);
	(void)snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused_by_default),
		cmocka_unit_test(test_allowed_classes_shown),
		cmocka_unit_test(test_executor),
		cmocka_unit_test(test_mcp_servers_never),
		cmocka_unit_test(test_hooks_notify_never),
		cmocka_unit_test(test_stronger_sandbox_and_stages),
		cmocka_unit_test(test_shown_escaped),
		cmocka_unit_test(test_paths_within),
		cmocka_unit_test(test_context_tracked),
		cmocka_unit_test(test_not_yaml),
		cmocka_unit_test(test_allow_parse),
		cmocka_unit_test(test_prompt),
		cmocka_unit_test(test_summary_languages_tests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
