/* Task context (src/orch/context.h): the rendered prompt's template and
 * sections, the per-file and total caps with their truncation notes, fences
 * longer than the file's backtick runs, binary files not shown, and the
 * confinement refusals (a symlink out of the repository, .git/, .bernstein/,
 * '..', not a regular file, missing) on a real directory; files: overlap;
 * the plan keys and their spec round trip. */
#include <errno.h>
#include <fcntl.h>
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

#include "orch/context.h"
#include "orch/plan.h"
#include "orch/spec.h"
#include "util/sbuf.h"

static char top[PATH_MAX];
static int topfd = -1;

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	FILE *f;

	(void)snprintf(p, sizeof(p), "%s/%s", top, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	(void)fputs(text, f);
	(void)fclose(f);
}

static int setup(void **state)
{
	char p[PATH_MAX * 2];

	(void)state;
	(void)snprintf(top, sizeof(top), "/tmp/test-orch-context-XXXXXX");
	assert_non_null(mkdtemp(top));
	(void)snprintf(p, sizeof(p), "%s/repo", top);
	assert_int_equal(mkdir(p, 0755), 0);
	(void)snprintf(p, sizeof(p), "%s/repo/.git", top);
	assert_int_equal(mkdir(p, 0755), 0);
	(void)snprintf(p, sizeof(p), "%s/repo/.bernstein", top);
	assert_int_equal(mkdir(p, 0755), 0);
	(void)snprintf(p, sizeof(p), "%s/repo/docs", top);
	assert_int_equal(mkdir(p, 0755), 0);
	put("secret.txt", "outside\n");
	put("repo/docs/a.md", "alpha\n");
	put("repo/.git/config", "[core]\n");
	put("repo/.bernstein/state", "x\n");
	put("repo/ticks.md", "a ```` run\n");
	put("repo/big.txt", "0123456789abcdefghij\n");
	(void)snprintf(p, sizeof(p), "%s/repo/out", top);
	assert_int_equal(symlink("../secret.txt", p), 0);
	(void)snprintf(p, sizeof(p), "%s/repo/abs", top);
	{
		char target[PATH_MAX * 2];

		(void)snprintf(target, sizeof(target), "%s/secret.txt", top);
		assert_int_equal(symlink(target, p), 0);
	}
	(void)snprintf(p, sizeof(p), "%s/repo/in", top);
	assert_int_equal(symlink("docs/a.md", p), 0);
	(void)snprintf(p, sizeof(p), "%s/repo/gitlink", top);
	assert_int_equal(symlink(".git/config", p), 0);
	{
		char bin[] = "ab\0cd";
		FILE *f;

		(void)snprintf(p, sizeof(p), "%s/repo/bin.dat", top);
		f = fopen(p, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(bin, 1, 5, f), 5);
		(void)fclose(f);
	}
	(void)snprintf(p, sizeof(p), "%s/repo", top);
	topfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(topfd >= 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	(void)close(topfd);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

static char *render(struct context_input *in, int *ret_r, struct diag *d)
{
	char *out = NULL;

	in->repo_fd = topfd;
	diag_clear(d);
	*ret_r = context_render(in, &out, d);
	return out;
}

static void test_template(void **state)
{
	static const char *const cons[] = {"no new dependencies", "keep the API", NULL};
	static const char *const files[] = {"docs/a.md", "in", NULL};
	struct context_dep deps[] = {{"schema", "design the schema", "completed"}};
	struct orch_gate gates[] = {{"test", "make test", 60, 0, 0}};
	struct context_input in = {
		.goal = "Add JWT auth",
		.role = "qa",
		.preamble = "You are QA.",
		.prompt = "Write the tests.",
		.constraints = cons,
		.n_constraints = 2,
		.context_files = files,
		.n_context_files = 2,
		.deps = deps,
		.n_deps = 1,
		.gates = gates,
		.n_gates = 1,
		.artifact = "report.md",
	};
	struct diag d;
	int r;
	char *out;

	(void)state;
	out = render(&in, &r, &d);
	assert_int_equal(r, 0);
	assert_string_equal(
		out,
		"# Goal\nAdd JWT auth\n\n"
		"# Role: qa\nYou are QA.\n\n"
		"# Task\nWrite the tests.\n"
		"\n# Constraints\n- no new dependencies\n- keep the API\n"
		"\n# Context files\nFiles of the repository, as they are on the base branch's checkout now:\n"
		"\n## docs/a.md\n```\nalpha\n```\n"
		"\n## in\n```\nalpha\n```\n"
		"\n# Tasks this one depends on\n- design the schema (schema): completed\n"
		"\n# How the work will be checked\n- gate test: `make test` must exit 0\n"
		"- the file report.md must exist when you finish\n");
	free(out);

	/* nothing but the prompt: only the task section */
	{
		struct context_input bare = {.prompt = "p"};

		out = render(&bare, &r, &d);
		assert_int_equal(r, 0);
		assert_string_equal(out, "# Task\np\n");
		free(out);
	}
}

static void test_caps_and_fences(void **state)
{
	static const char *const files[] = {"big.txt", "ticks.md", "bin.dat", NULL};
	struct context_input in = {.prompt = "p",
				   .context_files = files,
				   .n_context_files = 3,
				   .file_max = 10,
				   .total_max = 15};
	struct diag d;
	int r;
	char *out;

	(void)state;
	out = render(&in, &r, &d);
	assert_int_equal(r, 0);
	/* big.txt: 10 of 21 bytes; ticks.md: the 5 left of the total */
	assert_non_null(strstr(
		out,
		"## big.txt\n```\n0123456789\n```\n(truncated: the first 10 of 21 bytes are shown)\n"));
	assert_non_null(strstr(
		out,
		"## ticks.md\n````\na ```\n````\n(truncated: the first 5 of 11 bytes are shown; the context files' total cap is reached)\n"));
	assert_non_null(strstr(
		out,
		"## bin.dat\n(not shown: the context files' total cap of 15 bytes is reached)\n"));
	free(out);

	/* a fence longer than the file's longest backtick run; a binary file */
	in.file_max = in.total_max = 0;
	out = render(&in, &r, &d);
	assert_int_equal(r, 0);
	assert_non_null(strstr(out, "## ticks.md\n`````\na ```` run\n`````\n"));
	assert_non_null(strstr(out, "## bin.dat\n(not shown: a binary file of 5 bytes)\n"));
	free(out);
}

static void refused(const char *path, int want, const char *msg)
{
	const char *files[] = {path, NULL};
	struct context_input in = {.prompt = "p", .context_files = files, .n_context_files = 1};
	struct diag d;
	int r;
	char *out = render(&in, &r, &d);

	assert_null(out);
	if (r != want)
		fail_msg("%s: %d, wanted %d (%s)", path, r, want, d.msg);
	if (!strstr(d.msg, msg))
		fail_msg("%s: '%s' does not say '%s'", path, d.msg, msg);
}

static void test_confinement(void **state)
{
	(void)state;
	refused("out", -EXDEV, "context file 'out' leaves the repository");
	refused("abs", -EXDEV, "context file 'abs' leaves the repository");
	refused("../secret.txt", -EPERM, "context file '../secret.txt' is refused");
	refused("/etc/passwd", -EPERM, "is refused");
	refused(".git/config", -EPERM, "is refused");
	refused("gitlink", -EPERM, "is refused");
	refused(".bernstein/state", -EPERM, "is refused");
	refused("docs", -EINVAL, "context file 'docs' is not a regular file");
	refused("nosuch", -ENOENT, "context file 'nosuch' does not exist");
}

static void test_overlap(void **state)
{
	static const char *const a[] = {"src/auth.c", NULL};
	static const char *const b[] = {"src/*.c", NULL};
	static const char *const c[] = {"src", NULL};
	static const char *const d[] = {"docs/x.md", "lib/y.c", NULL};
	static const char *const e[] = {"src/auth.h", NULL};

	(void)state;
	assert_true(context_files_overlap(a, 1, a, 1));
	assert_true(context_files_overlap(a, 1, b, 1));
	assert_true(context_files_overlap(b, 1, a, 1));
	assert_true(context_files_overlap(c, 1, a, 1));
	assert_true(context_files_overlap(a, 1, c, 1));
	assert_false(context_files_overlap(a, 1, d, 2));
	assert_false(context_files_overlap(a, 1, e, 1));
	assert_false(context_files_overlap(b, 1, e, 1));
	assert_false(context_files_overlap(a, 1, NULL, 0));
}

static const char plan_text[] = "name: ctx\n"
				"description: Add JWT auth\n"
				"constraints: [plan-wide]\n"
				"tasks:\n"
				"  - title: a\n"
				"    prompt: pa\n"
				"    files: [src/auth.c]\n"
				"  - title: b\n"
				"    prompt: pb\n"
				"    constraints: []\n"
				"    context_files: [docs/a.md, out]\n"
				"  - title: c\n"
				"    prompt: pc\n";

static void test_plan_and_spec(void **state)
{
	struct diag_list issues = PLAN_ISSUES_INIT;
	struct plan *p = NULL;
	size_t i;

	(void)state;
	assert_int_equal(
		plan_load_buf("ctx.yaml", plan_text, sizeof(plan_text) - 1, NULL, &p, &issues), 0);
	assert_int_equal(p->tasks[0].n_constraints, 1);
	assert_string_equal(p->tasks[0].constraints[0], "plan-wide");
	assert_int_equal(p->tasks[0].n_files, 1);
	assert_non_null(p->tasks[1].constraints);
	assert_int_equal(p->tasks[1].n_constraints, 0);
	assert_int_equal(p->tasks[1].n_context_files, 2);
	/* the refusal at its PLAN:LINE:COL */
	assert_int_equal(context_check_plan(p, topfd, &issues), 1);
	assert_string_equal(issues.v[0].file, "ctx.yaml");
	assert_int_equal(issues.v[0].line, 11);
	assert_int_equal(issues.v[0].col, 32);
	assert_non_null(strstr(issues.v[0].msg, "context file 'out' leaves the repository"));
	for (i = 0; i < p->n; i++) {
		struct task_spec s, back;
		char *j1, *j2;
		struct diag d;

		spec_from_plan(p, i, &s);
		assert_true(spec_renders(&s));
		assert_string_equal(s.goal, "Add JWT auth");
		j1 = spec_dump(&s);
		spec_init(&back);
		diag_clear(&d);
		if (spec_parse_text(j1, strlen(j1), &back, &d) < 0)
			fail_msg("%s: %s", j1, d.msg);
		j2 = spec_dump(&back);
		assert_string_equal(j1, j2);
		assert_int_equal(back.n_files, s.n_files);
		free(j1);
		free(j2);
		spec_release(&s);
		spec_release(&back);
	}
	plan_free(p);
	diag_list_release(&issues);

	/* a plan with none of them: no goal, nothing new recorded */
	{
		static const char bare[] =
			"name: b\ndescription: d\ntasks:\n  - {title: a, prompt: p}\n";
		struct task_spec s;
		char *j;

		assert_int_equal(plan_load_buf("b.yaml", bare, sizeof(bare) - 1, NULL, &p, NULL),
				 0);
		spec_from_plan(p, 0, &s);
		assert_false(spec_renders(&s));
		j = spec_dump(&s);
		assert_null(strstr(j, "goal"));
		assert_null(strstr(j, "constraints"));
		assert_null(strstr(j, "files"));
		free(j);
		spec_release(&s);
		plan_free(p);
	}

	/* the recorded form is strict about the new keys too */
	{
		static const char *const bad[] = {"{\"files\":\"x\"}", "{\"constraints\":[1]}",
						  "{\"context_files\":{}}", "{\"goal\":3}"};
		struct task_spec s;
		struct diag d;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			spec_init(&s);
			diag_clear(&d);
			assert_int_equal(spec_parse_text(bad[i], strlen(bad[i]), &s, &d), -EBADMSG);
			assert_non_null(strchr(d.msg, '\''));
			spec_release(&s);
		}
	}

	/* paths that leave the repository are refused at load */
	{
		static const char bad[] =
			"name: b\ntasks:\n  - title: a\n    prompt: p\n    context_files: [../x]\n    files: [/etc/passwd]\n";
		struct diag_list l = PLAN_ISSUES_INIT;

		assert_int_equal(plan_load_buf("bad.yaml", bad, sizeof(bad) - 1, NULL, &p, &l),
				 -EINVAL);
		assert_int_equal(l.n, 2);
		assert_int_equal(l.v[0].line, 5);
		assert_non_null(strstr(l.v[0].msg, "context file '../x' has a '..' component"));
		assert_int_equal(l.v[1].line, 6);
		assert_non_null(strstr(l.v[1].msg, "file '/etc/passwd' is absolute"));
		diag_list_release(&l);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_template),      cmocka_unit_test(test_caps_and_fences),
		cmocka_unit_test(test_confinement),   cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_plan_and_spec),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
