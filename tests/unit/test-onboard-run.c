/* onboard/: running cases with real processes, and the record flow. The
 * agent is a #!/bin/sh script generated into a temp dir that records how it
 * was started (environment, cwd, argv) into $ONBOARD_TEST_OUT/PID/ and
 * behaves by its last argument (the prompt):
 *   "exit N"  exit N          "sleep"  sleep 30 s (for timeouts)
 *   "kill"    SIGKILL itself  a prompt with "held-out case 2": exit 5
 *   anything else: print some output on both streams, exit 0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

#include "adapter/profile.h"
#include "onboard/evidence.h"
#include "onboard/onboard.h"
#include "onboard/transcript.h"
#include "proc/contain.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"

static char tmp[64];
static char agent[128], scratch_parent[128], out_dir[128];
static struct strvec host = STRVEC_INIT;

static const char agent_script[] = "#!/bin/sh\n"
				   /* not $$: in a PID namespace of its own every
				    * run is pid 1 */
				   "d=$(mktemp -d \"$ONBOARD_TEST_OUT/run.XXXXXX\")\n"
				   "env > \"$d/env\"\n"
				   "pwd > \"$d/pwd\"\n"
				   "for a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$d/argv\"\n"
				   "eval \"last=\\${$#}\"\n"
				   "case $last in\n"
				   "exit*) exit \"${last#exit }\" ;;\n"
				   "sleep) exec sleep 30 ;;\n"
				   "kill) kill -9 $$ ;;\n"
				   "*'held-out case 2'*) exit 5 ;;\n"
				   "esac\n"
				   "echo 'some output' ; echo 'some error' >&2\n"
				   "exit 0\n";

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static int rm_rf(const char *path)
{
	char cmd[PATH_MAX + 16];

	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	return system(cmd);
}

static int setup(void **state)
{
	(void)state;
	(void)snprintf(tmp, sizeof(tmp), "/tmp/test-onboard.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	(void)snprintf(agent, sizeof(agent), "%s/agent.sh", tmp);
	(void)snprintf(scratch_parent, sizeof(scratch_parent), "%s/scratch", tmp);
	(void)snprintf(out_dir, sizeof(out_dir), "%s/out", tmp);
	write_file(agent, agent_script, 0755);
	assert_int_equal(mkdir(scratch_parent, 0700), 0);
	assert_int_equal(mkdir(out_dir, 0700), 0);
	strvec_clear(&host);
	strvec_push(&host, "PATH=/usr/bin:/bin");
	strvec_push(&host, "HOME=/home/canaryuser");
	strvec_push(&host, "USER=canaryuser");
	strvec_push(&host, "LOGNAME=canaryuser");
	strvec_push(&host, "CANARY_SECRET=s3cr3t-canary");
	strvec_push(&host, "PASS_ME=yes");
	strvec_push(&host, "LANG=C.UTF-8");
	strvec_push(&host, "TERM=xterm-256color");
	strvec_pushf(&host, "ONBOARD_TEST_OUT=%s", out_dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	strvec_clear(&host);
	return rm_rf(tmp) == 0 ? 0 : -1;
}

static const char *const env_pass[] = {"ONBOARD_TEST_OUT", "PASS_ME", "UNSET_VAR", "HOME", NULL};
static const char *const extra[] = {"--dir", "{workdir}", "--home", "{home}", NULL};

static struct recorded_invocation agent_inv(void)
{
	struct recorded_invocation inv = {
		.registry_name = "agent",
		.display_name = "Agent",
		.binary = agent,
		.subcommands = {extra + 4, 0},
		.model_flag = "--model",
		.prompt_flag = "-p",
		.extra_args = {extra, 4},
		.env_passthrough = {env_pass, 4},
	};
	return inv;
}

static struct onboard_opts opts_for(uint64_t timeout_ms)
{
	struct onboard_opts o = {
		.host_env = host.v,
		.tmp_dir = scratch_parent,
		.timeout_ms = timeout_ms,
		.kill_grace_ms = 500,
	};
	return o;
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* The only run recorded in out_dir: its FILE, read into *ret. */
static char *only_run_file(const char *file)
{
	DIR *d = opendir(out_dir);
	struct dirent *de;
	char path[PATH_MAX], *text = NULL;
	size_t len, n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		(void)snprintf(path, sizeof(path), "%s/%s/%s", out_dir, de->d_name, file);
	}
	closedir(d);
	assert_int_equal(n, 1);
	assert_int_equal(read_file_capped(path, 1 << 20, &text, &len), 0);
	return text;
}

static void clear_out(void)
{
	assert_int_equal(rm_rf(out_dir), 0);
	assert_int_equal(mkdir(out_dir, 0700), 0);
}

/* ---- tests ---- */

static void test_pass_env_cwd_argv(void **state)
{
	struct recorded_invocation inv = agent_inv();
	struct onboard_opts o = opts_for(20000);
	struct onboard_case c = {.prompt = "be nice", .model = "m1"};
	struct onboard_result res;
	char *env, *pwd, *argv, want[PATH_MAX + 64];
	struct diag d;
	int r;

	(void)state;
	clear_out();
	diag_clear(&d);
	r = onboard_run(&inv, &c, 1, &o, &res, &d);
	assert_int_equal(r, 1);
	assert_int_equal(res.status, ONBOARD_PASSED);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(onboard_status_to_string(res.status), "passed");

	env = only_run_file("env");
	pwd = only_run_file("pwd");
	argv = only_run_file("argv");
	/* the normalised environment */
	assert_non_null(strstr(env, "TERM=dumb\n"));
	assert_non_null(strstr(env, "CI=1\n"));
	assert_non_null(strstr(env, "NO_COLOR=1\n"));
	assert_non_null(strstr(env, "LANG=C.UTF-8\n"));
	assert_non_null(strstr(env, "PASS_ME=yes\n"));
	assert_non_null(strstr(env, "PATH=/usr/bin:/bin\n"));
	assert_null(strstr(env, "canaryuser")); /* USER, LOGNAME, the host HOME */
	assert_null(strstr(env, "s3cr3t-canary"));
	assert_null(strstr(env, "UNSET_VAR"));
	assert_null(strstr(env, "xterm"));
	(void)snprintf(want, sizeof(want), "HOME=%s/" ONBOARD_SCRATCH_PREFIX ".", scratch_parent);
	assert_non_null(strstr(env, want));
	assert_non_null(strstr(env, "/case-1/home\n"));
	/* cwd: the case's scratch work directory */
	(void)snprintf(want, sizeof(want), "%s/" ONBOARD_SCRATCH_PREFIX ".", scratch_parent);
	assert_memory_equal(pwd, want, strlen(want));
	assert_non_null(strstr(pwd, "/case-1/work\n"));
	/* argv: placeholders expanded to the scratch directories, in order */
	assert_non_null(strstr(argv, "--model\nm1\n--dir\n"));
	assert_non_null(strstr(argv, "/case-1/work\n--home\n"));
	assert_non_null(strstr(argv, "/case-1/home\n-p\nbe nice\n"));
	/* the scratch directory is gone */
	assert_int_equal(count_entries(scratch_parent), 0);
	free(env);
	free(pwd);
	free(argv);
}

static void test_every_failure_kind_attempted(void **state)
{
	struct recorded_invocation inv = agent_inv();
	struct onboard_opts o = opts_for(700);
	static const char *const wrong[] = {"agent", "--model", "m", NULL};
	const char *right_v[10] = {agent,    "--model", "m",  "--dir", "{workdir}",
				   "--home", "{home}",	"-p", "ok",    NULL};
	struct transcript_strv wrong_argv = {wrong, 3}, right_argv = {right_v, 9};
	struct onboard_case cases[] = {
		{.prompt = "exit 3", .model = "m"},
		{.prompt = "sleep", .model = "m"},
		{.prompt = "kill", .model = "m"},
		{.prompt = "ok", .model = "m", .expected = &wrong_argv},
		{.prompt = "ok", .model = "m", .expected = &right_argv},
		{.prompt = "exit 0", .model = "m"},
	};
	struct onboard_result res[6];
	struct diag d;
	size_t i;
	int r;

	(void)state;
	clear_out();
	diag_clear(&d);
	/* "kill" kills itself with SIGKILL, which the init of a PID namespace
	 * cannot do: the process-group tier */
	contain_set_max_tier(CONTAIN_PGROUP);
	r = onboard_run(&inv, cases, 6, &o, res, &d);
	contain_set_max_tier(CONTAIN_AUTO);
	assert_int_equal(r, 2);
	/* every case ran, in order: six runs recorded */
	assert_int_equal(count_entries(out_dir), 6);

	assert_int_equal(res[0].status, ONBOARD_EXIT_NONZERO);
	assert_int_equal(res[0].exit_code, 3);
	assert_string_equal(res[0].message, "exited with code 3");

	assert_int_equal(res[1].status, ONBOARD_TIMED_OUT);
	assert_int_equal(res[1].exit_code, 124);
	assert_non_null(strstr(res[1].message, "timed out after 700 ms"));
	assert_true(res[1].duration_ms >= 700);

	assert_int_equal(res[2].status, ONBOARD_SIGNALED);
	assert_int_equal(res[2].exit_code, 137);
	assert_non_null(strstr(res[2].message, "SIGKILL"));

	assert_int_equal(res[3].status, ONBOARD_ARGV_MISMATCH);
	assert_int_equal(res[3].exit_code, 0); /* it still ran */
	assert_non_null(strstr(res[3].message, "argv differs: the invocation builds argv[0]"));
	assert_non_null(strstr(res[3].message, "; exited with code 0"));

	assert_int_equal(res[4].status, ONBOARD_PASSED);
	assert_int_equal(res[5].status, ONBOARD_PASSED);
	for (i = 0; i < 6; i++)
		assert_non_null(onboard_status_to_string(res[i].status));
	assert_int_equal(count_entries(scratch_parent), 0);
}

static void test_missing_binary_and_exec_errors(void **state)
{
	struct recorded_invocation inv = agent_inv();
	struct onboard_opts o = opts_for(5000);
	struct onboard_case cases[2] = {{.prompt = "a"}, {.prompt = "b"}};
	struct onboard_result res[2];
	char noexec[160], garbage[160];
	struct diag d;
	int r, pass;

	(void)state;
	inv.binary = "no-such-onboard-agent-xyz";
	r = onboard_run(&inv, cases, 2, &o, res, &d);
	assert_int_equal(r, 0);
	assert_int_equal(res[0].status, ONBOARD_MISSING_BINARY);
	assert_int_equal(res[0].exit_code, 127);
	assert_int_equal(res[1].status, ONBOARD_MISSING_BINARY); /* attempted too */
	assert_non_null(strstr(res[1].message, "'no-such-onboard-agent-xyz' not found on PATH"));

	(void)snprintf(noexec, sizeof(noexec), "%s/noexec", tmp);
	write_file(noexec, "#!/bin/sh\nexit 0\n", 0644);
	(void)snprintf(garbage, sizeof(garbage), "%s/garbage", tmp);
	write_file(garbage, "\x01\x02 not a program\n", 0755);

	/* twice: a failed start leaves nothing behind that changes the next */
	for (pass = 0; pass < 2; pass++) {
		inv.binary = noexec;
		r = onboard_run(&inv, cases, 1, &o, res, &d);
		assert_int_equal(r, 0);
		assert_int_equal(res[0].status, ONBOARD_EXEC_ERROR);
		assert_int_equal(res[0].exit_code, 126);
		inv.binary = garbage;
		r = onboard_run(&inv, cases, 1, &o, res, &d);
		assert_int_equal(r, 0);
		assert_int_equal(res[0].status, ONBOARD_EXEC_ERROR);
		assert_true(res[0].exit_code >= 125 && res[0].exit_code <= 127);
		inv.binary = agent;
		clear_out();
		r = onboard_run(&inv, cases, 1, &o, res, &d);
		assert_int_equal(r, 1);
		assert_int_equal(res[0].status, ONBOARD_PASSED);
	}
	assert_int_equal(count_entries(scratch_parent), 0);
}

static void test_scratch_failure(void **state)
{
	struct recorded_invocation inv = agent_inv();
	struct onboard_opts o = opts_for(5000);
	struct onboard_case c = {.prompt = "a"};
	struct onboard_result res;
	struct diag d;

	(void)state;
	o.tmp_dir = "/nonexistent/dir";
	diag_clear(&d);
	assert_int_equal(onboard_run(&inv, &c, 1, &o, &res, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "cannot create a scratch directory in '/nonexistent/dir'"));
	o.tmp_dir = "relative";
	assert_int_equal(onboard_run(&inv, &c, 1, &o, &res, &d), -EINVAL);
}

static void test_scratch_removed_even_if_agent_locks_it(void **state)
{
	static const char *const no_extra[] = {NULL};
	struct recorded_invocation inv = agent_inv();
	struct onboard_opts o = opts_for(5000);
	struct onboard_case c = {.prompt = "ok"};
	struct onboard_result res;
	char script[160];
	struct diag d;

	(void)state;
	/* an agent that leaves a read-only tree and a dangling symlink */
	(void)snprintf(script, sizeof(script), "%s/locker.sh", tmp);
	write_file(
		script,
		"#!/bin/sh\nmkdir -p a/b/c && touch a/b/c/f && ln -s /etc/passwd a/l && chmod 0500 a/b/c a/b a\n",
		0755);
	inv.binary = script;
	inv.extra_args = (struct transcript_strv){no_extra, 0};
	assert_int_equal(onboard_run(&inv, &c, 1, &o, &res, &d), 1);
	assert_int_equal(count_entries(scratch_parent), 0);
	assert_int_equal(access("/etc/passwd", F_OK), 0); /* the link's target is untouched */
}

/* ---- record ---- */

static struct profile *agent_profile(const char *extra_yaml)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct profile *p = NULL;
	struct diag d;

	(void)sbuf_addf(&sb,
			"name: test_agent\n"
			"display_name: \"Test Agent\"\n"
			"shape: factory\n"
			"invocation:\n"
			"  binary: %s\n"
			"  model_flag: --model\n"
			"  prompt_flag: -p\n"
			"  extra_args: [--dir, \"{workdir}\"]\n"
			"  env_passthrough: [ONBOARD_TEST_OUT, PASS_ME]\n"
			"models:\n"
			"  small: real-model-id\n"
			"%s",
			agent, extra_yaml);
	diag_clear(&d);
	if (profile_load_buf("test_agent.yaml", NULL, sb.buf, sb.len, &p, &d) < 0)
		fail_msg("profile: %u:%u: %s", d.line, d.col, d.msg);
	sbuf_release(&sb);
	return p;
}

/* The smoke run's evidence: the argv as built (the binary as declared, the
 * alias resolved, placeholders unexpanded), names only, nothing of the
 * operator. */
static void test_record_evidence(void **state)
{
	struct profile *p = agent_profile("");
	struct onboard_opts o = opts_for(20000);
	struct onboard_record_request req = {
		.profile = p,
		.smoke_prompt = "greet",
		.smoke_model = "small",
		.opts = &o,
	};
	struct onboard_record rec;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct diag d;

	(void)state;
	clear_out();
	onboard_record_init(&rec);
	diag_clear(&d);
	assert_int_equal(onboard_record_run(&req, &rec, &d), 0);
	assert_true(rec.smoke_ran);
	assert_int_equal(rec.smoke.status, ONBOARD_PASSED);
	assert_string_equal(rec.model, "real-model-id"); /* the alias resolved */
	assert_int_equal(rec.evidence->exit_code, 0);
	assert_int_equal(rec.evidence->argv.n, 7);
	assert_string_equal(rec.evidence->argv.v[0], agent);
	assert_string_equal(rec.evidence->argv.v[1], "--model");
	assert_string_equal(rec.evidence->argv.v[2], "real-model-id");
	assert_string_equal(rec.evidence->argv.v[4], "{workdir}"); /* not the scratch path */
	assert_string_equal(rec.evidence->argv.v[6], "greet");
	assert_int_equal(evidence_emit(rec.evidence, &sb), 0);
	assert_null(strstr(sb.buf, "canaryuser"));
	assert_null(strstr(sb.buf, "s3cr3t"));
	assert_null(strstr(sb.buf, scratch_parent));
	assert_null(strstr(sb.buf, "some output"));
	assert_null(strstr(sb.buf, "\"USER\""));
	assert_null(strstr(sb.buf, "\"LOGNAME\""));
	assert_non_null(strstr(sb.buf,
			       "env_names:\n  - \"CI\"\n  - \"HOME\"\n  - \"LANG\"\n"
			       "  - \"NO_COLOR\"\n  - \"ONBOARD_TEST_OUT\"\n"
			       "  - \"PASS_ME\"\n  - \"PATH\"\n  - \"TERM\"\nexit_code: 0\n"));
	/* this agent fails every "held-out case 2": all four ran, the record
	 * failed, no transcript */
	assert_int_equal(count_entries(out_dir), 4);
	assert_true(rec.heldout_ran);
	assert_int_equal(rec.results[0].status, ONBOARD_PASSED);
	assert_int_equal(rec.results[1].status, ONBOARD_EXIT_NONZERO);
	assert_int_equal(rec.results[1].exit_code, 5);
	assert_int_equal(rec.results[2].status, ONBOARD_PASSED);
	assert_false(rec.passed);
	assert_null(rec.transcript);
	onboard_record_release(&rec);
	sbuf_release(&sb);
	profile_free(p);
}

static void test_record_smoke_fails(void **state)
{
	struct profile *p = agent_profile("");
	struct onboard_opts o = opts_for(20000);
	struct onboard_record_request req = {
		.profile = p,
		.smoke_prompt = "exit 4",
		.smoke_model = "m",
		.opts = &o,
	};
	struct onboard_record rec;
	struct diag d;

	(void)state;
	clear_out();
	onboard_record_init(&rec);
	assert_int_equal(onboard_record_run(&req, &rec, &d), 0);
	assert_false(rec.passed);
	assert_int_equal(rec.smoke.status, ONBOARD_EXIT_NONZERO);
	assert_int_equal(rec.smoke.exit_code, 4);
	assert_non_null(rec.evidence);
	assert_int_equal(rec.evidence->exit_code, 4);
	assert_false(rec.heldout_ran); /* nothing derived from a failed run */
	assert_null(rec.transcript);
	assert_int_equal(count_entries(out_dir), 1);
	onboard_record_release(&rec);
	profile_free(p);
}

static void test_record_full_pass_transcript(void **state)
{
	/* an agent that fails nothing: a transcript comes out, and replaying
	 * its steps passes */
	static const char passing[] = "#!/bin/sh\nexit 0\n";
	char path[160];
	struct profile *p;
	struct onboard_opts o = opts_for(20000);
	struct onboard_record_request req = {
		.smoke_prompt = "print a short greeting",
		.smoke_model = "fake-model",
		.opts = &o,
	};
	struct onboard_record rec;
	struct sbuf sb = SBUF_INIT(SIZE_MAX), yaml = SBUF_INIT(SIZE_MAX);
	struct onboard_case cases[3];
	struct onboard_result res[3];
	struct transcript *t = NULL;
	struct diag d;
	size_t i;

	(void)state;
	(void)snprintf(path, sizeof(path), "%s/passing.sh", tmp);
	write_file(path, passing, 0755);
	(void)sbuf_addf(&yaml,
			"name: passing\ndisplay_name: Passing\nshape: factory\ninvocation:\n"
			"  binary: %s\n  model_flag: --model\n  prompt_flag: -p\n"
			"  extra_args: [--mode, json]\n",
			path);
	diag_clear(&d);
	assert_int_equal(profile_load_buf("passing.yaml", NULL, yaml.buf, yaml.len, &p, &d), 0);
	req.profile = p;
	req.name = "passing-v1";
	onboard_record_init(&rec);
	assert_int_equal(onboard_record_run(&req, &rec, &d), 0);
	assert_true(rec.passed);
	assert_non_null(rec.transcript);
	assert_string_equal(rec.transcript->name, "passing-v1");
	assert_int_equal(rec.transcript->n_steps, 3);
	for (i = 0; i < 3; i++) {
		assert_string_equal(rec.transcript->steps[i].prompt, rec.heldout.cases[i].prompt);
		assert_string_equal(rec.transcript->steps[i].model, "fake-model");
	}
	assert_int_equal(transcript_emit(rec.transcript, &sb), 0);
	assert_int_equal(transcript_load_buf("t.yaml", sb.buf, sb.len, &t, &d), 0);
	for (i = 0; i < 3; i++) {
		cases[i].prompt = t->steps[i].prompt;
		cases[i].model = t->steps[i].model;
		cases[i].expected = &t->steps[i].inner_argv;
	}
	assert_int_equal(onboard_run(&t->inv, cases, 3, &o, res, &d), 3);
	transcript_free(t);
	onboard_record_release(&rec);
	sbuf_release(&sb);
	sbuf_release(&yaml);
	profile_free(p);
}

static void test_record_refusals(void **state)
{
	struct onboard_opts o = opts_for(20000);
	struct onboard_record_request req = {.smoke_prompt = "x", .smoke_model = "m", .opts = &o};
	struct onboard_record rec;
	struct profile *p = NULL;
	struct diag d;
	static const char builtin[] = "name: builtin_agent\ndisplay_name: B\nshape: module\n"
				      "builtin: true\ninvocation:\n  binary: bernstein\n"
				      "  subcommands: [mock-agent]\n  prompt_positional: true\n";
	static const char file_prompt[] = "name: file_agent\ndisplay_name: F\nshape: factory\n"
					  "invocation:\n  binary: junie\n"
					  "  prompt_file_flag: --prompt-file\n";

	(void)state;
	assert_int_equal(profile_load_buf("b.yaml", NULL, builtin, sizeof(builtin) - 1, &p, &d), 0);
	req.profile = p;
	onboard_record_init(&rec);
	diag_clear(&d);
	assert_int_equal(onboard_record_run(&req, &rec, &d), -ENOTSUP);
	assert_non_null(strstr(d.msg, "builtin"));
	assert_false(rec.smoke_ran);
	onboard_record_release(&rec);
	p = profile_free(p);

	assert_int_equal(
		profile_load_buf("f.yaml", NULL, file_prompt, sizeof(file_prompt) - 1, &p, &d), 0);
	req.profile = p;
	onboard_record_init(&rec);
	diag_clear(&d);
	assert_int_equal(onboard_record_run(&req, &rec, &d), -ENOTSUP);
	assert_non_null(strstr(d.msg, "prompt_file_flag"));
	assert_string_equal(d.file, "f.yaml");
	assert_int_equal(d.line, 6);
	onboard_record_release(&rec);
	p = profile_free(p);

	/* a bad name, a prompt that is not UTF-8 */
	p = agent_profile("");
	req.profile = p;
	req.name = "bad name";
	onboard_record_init(&rec);
	assert_int_equal(onboard_record_run(&req, &rec, &d), -EINVAL);
	req.name = NULL;
	req.smoke_prompt = "\xff";
	assert_int_equal(onboard_record_run(&req, &rec, &d), -EINVAL);
	req.smoke_prompt = NULL;
	assert_int_equal(onboard_record_run(&req, &rec, &d), -EINVAL);
	assert_false(rec.smoke_ran);
	onboard_record_release(&rec);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_env_cwd_argv),
		cmocka_unit_test(test_every_failure_kind_attempted),
		cmocka_unit_test(test_missing_binary_and_exec_errors),
		cmocka_unit_test(test_scratch_failure),
		cmocka_unit_test(test_scratch_removed_even_if_agent_locks_it),
		cmocka_unit_test(test_record_evidence),
		cmocka_unit_test(test_record_smoke_fails),
		cmocka_unit_test(test_record_full_pass_transcript),
		cmocka_unit_test(test_record_refusals),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
