/* adapter/contract: loading (strict schema, broken-file corpus), the pure
 * help matcher (token-bounded flags, whitespace-bounded subcommands, ANSI),
 * the shipped contracts against the stored help texts of the pinned CLIs
 * (tests/data/help/), the runtime-failure guard, catalogue layering, and the
 * live check against small #!/bin/sh fake CLIs in a temp dir. */
#include <errno.h>
#include <ftw.h>
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

#include "adapter/contract.h"
#include "util/fsutil.h"
#include "util/strvec.h"
#include "util/xalloc.h"

static char tmp[64];
static char path_env[256];

/* ---- helpers ---------------------------------------------------------------- */

static const char *srcdir(void)
{
	const char *s = getenv("SRCDIR");

	return s && s[0] ? s : ".";
}

static char *read_src(const char *rel, size_t *ret_len)
{
	char path[4096];
	char *text = NULL;
	int r;

	(void)snprintf(path, sizeof(path), "%s/%s", srcdir(), rel);
	r = read_file_capped(path, 1 << 20, &text, ret_len);
	if (r < 0)
		fail_msg("cannot read '%s': %s (is SRCDIR set?)", path, strerror(-r));
	return text;
}

static struct contract *load(const char *name, const char *yaml)
{
	struct contract *c = NULL;
	struct diag d;
	int r;

	diag_clear(&d);
	r = contract_load_buf(name, "test.yaml", yaml, strlen(yaml), &c, &d);
	if (r < 0)
		fail_msg("load '%s': %s:%u:%u: %s", name, d.file, d.line, d.col, d.msg);
	return c;
}

static int load_err(const char *yaml, struct diag *d)
{
	struct contract *c = NULL;
	int r;

	diag_clear(d);
	r = contract_load_buf("x", "bad.yaml", yaml, strlen(yaml), &c, d);
	assert_null(c);
	return r;
}

static bool has(const char *text, const char *flag)
{
	return contract_flag_advertised(text, strlen(text), flag);
}

static bool has_sub(const char *text, const char *sub)
{
	return contract_subcommand_advertised(text, strlen(text), sub);
}

static void write_file(const char *rel, const char *text, mode_t mode)
{
	char p[512];
	size_t len = strlen(text);
	FILE *f;

	(void)snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	f = fopen(p, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static void mkdir_tmp(const char *rel)
{
	char p[512];

	(void)snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	assert_int_equal(mkdir_p(p, 0755), 0);
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup_tmp(void **state)
{
	(void)state;
	(void)snprintf(tmp, sizeof(tmp), "/tmp/test-contract-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	(void)snprintf(path_env, sizeof(path_env), "%s/bin:/usr/bin:/bin", tmp);
	return 0;
}

static int teardown_tmp(void **state)
{
	(void)state;
	return nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- matcher ---------------------------------------------------------------- */

static void test_flag_is_token_bounded(void **state)
{
	(void)state;
	/* -m inside --model is not -m */
	assert_false(has("  --model <M>  the model", "-m"));
	assert_true(has("  -m, --model <M>", "-m"));
	assert_true(has("  --model <M>", "--model"));
	/* renamed by pluralising: drift, not a match */
	assert_false(has("  --instructions TEXT", "--instruction"));
	assert_true(has("  --instruction TEXT", "--instruction"));
	/* terminators: '=', ',', '<', '[', end of text, start of text */
	assert_true(has("--model=NAME", "--model"));
	assert_true(has("--yolo", "--yolo"));
	assert_true(has("x [--yolo]", "--yolo"));
	assert_false(has("--yolo-mode", "--yolo"));
	assert_false(has("--allow-dangerously-skip-permissions", "--dangerously-skip-permissions"));
	assert_false(has("x_--json", "--json"));
	assert_false(has("a-m", "-m"));
	/* case-insensitive (ASCII) */
	assert_true(has("  --MODEL x", "--model"));
	assert_true(has("  --allowedTools", "--allowedtools"));
	/* a later occurrence counts when the first is bounded badly */
	assert_true(has("--modelx and then --model", "--model"));
	/* degenerate inputs */
	assert_false(has("anything", ""));
	assert_false(has("", "-m"));
	assert_false(contract_flag_advertised(NULL, 0, "-m"));
	/* NUL bytes in the output do not end the search */
	assert_true(contract_flag_advertised("ab\0 -m x", 8, "-m"));
	assert_false(contract_flag_advertised("ab\0 -mx", 7, "-m"));
}

static void test_subcommand_is_whitespace_bounded(void **state)
{
	(void)state;
	assert_true(has_sub("opencode run [message..]", "run"));
	assert_true(has_sub("run", "run"));
	assert_true(has_sub("Commands:\n  exec\tRun\n", "exec"));
	assert_true(has_sub("  RESUME  Resume a session", "resume"));
	assert_false(has_sub("  runs  many", "run"));
	assert_false(has_sub("  rerun", "run"));
	assert_false(has_sub("  run, or", "run")); /* (\s|$) after: a comma is not */
	assert_false(has_sub("  [run]", "run"));
	assert_true(has_sub("  session list  ", "session list"));
	assert_false(has_sub("x", ""));
}

static void test_match_help_messages_and_ansi(void **state)
{
	struct contract *c = load("codex", "binary: codex\n"
					   "required_flags: [\"--json\", \"-m\", \"-o\"]\n"
					   "required_subcommands: [exec]\n"
					   "help_command: [codex, exec, --help]\n");
	const char *help = "Usage: codex \x1b[1mexec\x1b[0m [OPTIONS]\n"
			   "  \x1b[32m--json\x1b[0m  events\n"
			   "  --model <M>\n";
	struct strvec f = STRVEC_INIT;

	(void)state;
	assert_int_equal(contract_match_help(c, help, strlen(help), &f), 2);
	assert_int_equal(f.nr, 2);
	assert_string_equal(f.v[0], "missing required flag '-m' in `codex exec --help`");
	assert_string_equal(f.v[1], "missing required flag '-o' in `codex exec --help`");
	strvec_clear(&f);
	/* count only */
	assert_int_equal(contract_match_help(c, "", 0, NULL), 4);
	help = "codex exec\n -m, --model\n -o, --output-last-message\n --json\n";
	assert_int_equal(contract_match_help(c, help, strlen(help), &f), 0);
	assert_int_equal(f.nr, 0);
	contract_free(c);

	c = load("goose", "required_subcommands: [run]\nhelp_command: [goose, run, --help]\n");
	assert_int_equal(contract_match_help(c, "goose runs", 10, &f), 1);
	assert_string_equal(f.v[0], "missing required subcommand 'run' in `goose run --help`");
	strvec_clear(&f);
	contract_free(c);
}

/* The runtime-failure guard: a broken probe, not drift. */
static void test_probe_failure_classification(void **state)
{
	struct contract *two = load("two", "required_flags: [\"--a\", \"--b\"]\n");
	struct contract *one = load("one", "required_flags: [\"--a\"]\n");
	struct contract *none = load("none", "binary: none\n");

	(void)state;
	/* printed nothing (or only whitespace / escapes): broken, whatever the code */
	assert_string_equal(contract_probe_failure(two, "", 0, 1), "no output");
	assert_string_equal(contract_probe_failure(two, " \n\t ", 4, 0), "no output");
	assert_string_equal(contract_probe_failure(two, "\x1b[0m\n", 5, 1), "no output");
	assert_string_equal(contract_probe_failure(one, "", 0, 1), "no output");
	assert_string_equal(contract_probe_failure(one, NULL, 0, 0), "no output");
	/* exited non-zero and advertised none of >= 2 tokens */
	assert_string_equal(contract_probe_failure(two, "Error: boom\n", 12, 1),
			    "no required tokens advertised");
	/* ... but with exit 0 that is drift (a redesigned help) */
	assert_null(contract_probe_failure(two, "Error: boom\n", 12, 0));
	/* one token of one missing: drift, not a broken probe */
	assert_null(contract_probe_failure(one, "Error: boom\n", 12, 1));
	/* some token present: normal matching */
	assert_null(contract_probe_failure(two, "--a only\n", 9, 1));
	/* nothing required: never a runtime failure */
	assert_null(contract_probe_failure(none, "", 0, 1));
	contract_free(two);
	contract_free(one);
	contract_free(none);
}

/* ---- the shipped contracts on the stored help texts ------------------------- */

static const struct {
	const char *name;
	const char *help;
} pinned[] = {
	{"claude", "tests/data/help/claude.txt"},
	{"codex", "tests/data/help/codex-exec.txt"},
	{"gemini", "tests/data/help/gemini.txt"},
	{"qwen", "tests/data/help/qwen.txt"},
	{"opencode", "tests/data/help/opencode-run.txt"},
	{"pi", "tests/data/help/pi.txt"},
};

static void test_pinned_contracts_match_stored_help(void **state)
{
	struct contract_index *idx = NULL;
	struct diag d;
	size_t i, j, missing;

	(void)state;
	diag_clear(&d);
	assert_int_equal(contract_index_build(NULL, NULL, &idx, &d), 0);
	for (i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++) {
		const struct contract_entry *e = contract_index_find(idx, pinned[i].name);
		struct contract *c = NULL;
		struct strvec f = STRVEC_INIT;
		size_t len = 0;
		char *help;

		assert_non_null(e);
		assert_non_null(e->data); /* embedded */
		if (contract_index_load(e, &c, &d) < 0)
			fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
		help = read_src(pinned[i].help, &len);
		missing = contract_match_help(c, help, len, &f);
		for (j = 0; j < f.nr; j++)
			print_error("%s: %s\n", pinned[i].name, f.v[j]);
		assert_int_equal(missing, 0);
		assert_int_equal(f.nr, 0);
		assert_null(contract_probe_failure(c, help, len, 0));
		/* a contract pinning a little surface is no test: */
		assert_true(c->n_required_flags >= 4);
		assert_string_equal(c->adapter, pinned[i].name);
		assert_int_equal(c->install_method, CONTRACT_INSTALL_NPM);
		/* the session id flag, when declared, is itself verified */
		if (c->session_id_flag)
			assert_true(contract_flag_advertised(help, len, c->session_id_flag));
		strvec_clear(&f);
		free(help);
		contract_free(c);
	}
	contract_index_free(idx);
}

/* The facts of agent-clis.md the brief names, one by one. */
static void test_pinned_facts(void **state)
{
	struct contract_index *idx = NULL;
	struct contract *c = NULL;
	struct diag d;
	size_t len;
	char *help;

	(void)state;
	assert_int_equal(contract_index_build(NULL, NULL, &idx, &d), 0);

	/* codex: exec --help, no --full-auto any more */
	assert_int_equal(contract_index_load(contract_index_find(idx, "codex"), &c, &d), 0);
	assert_int_equal(c->n_help_command, 3);
	assert_string_equal(c->help_command[1], "exec");
	assert_null(c->session_id_flag);
	help = read_src("tests/data/help/codex-exec.txt", &len);
	assert_false(contract_flag_advertised(help, len, "--full-auto"));
	assert_true(
		contract_flag_advertised(help, len, "--dangerously-bypass-approvals-and-sandbox"));
	free(help);
	c = contract_free(c);

	/* claude: the skip flag is --dangerously-skip-permissions, stream-json needs --verbose */
	assert_int_equal(contract_index_load(contract_index_find(idx, "claude"), &c, &d), 0);
	assert_string_equal(c->session_id_flag, "--session-id");
	help = read_src("tests/data/help/claude.txt", &len);
	assert_false(contract_flag_advertised(help, len, "--full-auto"));
	free(help);
	c = contract_free(c);

	/* opencode: run subcommand and its own help */
	assert_int_equal(contract_index_load(contract_index_find(idx, "opencode"), &c, &d), 0);
	assert_int_equal(c->n_required_subcommands, 1);
	assert_string_equal(c->required_subcommands[0], "run");
	assert_string_equal(c->help_command[1], "run");
	c = contract_free(c);
	contract_index_free(idx);
}

static void test_drift_is_reported_on_stored_help(void **state)
{
	size_t len;
	char *help = read_src("tests/data/help/claude.txt", &len);
	struct contract *c = load("claude", "required_flags: [\"--model\", \"--full-auto\"]\n");
	struct strvec f = STRVEC_INIT;

	(void)state;
	assert_int_equal(contract_match_help(c, help, len, &f), 1);
	assert_string_equal(f.v[0], "missing required flag '--full-auto' in `claude --help`");
	assert_null(contract_probe_failure(c, help, len, 0));
	strvec_clear(&f);
	contract_free(c);
	free(help);
}

static void test_every_shipped_contract_loads(void **state)
{
	static const char *const expected[] = {
		"aichat",	"aider", "amp",	    "antigravity", "claude", "codex",
		"continue_dev", "crush", "forge",   "gemini",	   "goose",  "gptme",
		"opencode",	"pi",	 "plandex", "q_dev",	   "qwen",
	};
	struct contract_index *idx = NULL;
	struct diag d;
	size_t i;

	(void)state;
	assert_int_equal(contract_index_build(NULL, NULL, &idx, &d), 0);
	assert_int_equal(idx->n, sizeof(expected) / sizeof(expected[0]));
	for (i = 0; i < idx->n; i++) {
		struct contract *c = NULL, *disk = NULL;
		char path[4096];

		assert_string_equal(idx->v[i].name, expected[i]);
		if (contract_index_load(&idx->v[i], &c, &d) < 0)
			fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
		assert_string_equal(c->adapter, c->name);
		assert_true(c->binary[0]);
		assert_true(c->n_help_command >= 2);
		assert_true(c->n_required_flags + c->n_required_subcommands >= 1);
		/* the embedded copy is the file in the source tree */
		(void)snprintf(path, sizeof(path), "%s/catalog/contracts/%s.yaml", srcdir(),
			       c->name);
		assert_int_equal(contract_load_file(path, &disk, &d), 0);
		assert_string_equal(disk->name, c->name);
		assert_int_equal(disk->n_required_flags, c->n_required_flags);
		contract_free(disk);
		contract_free(c);
	}
	/* the documented special cases of Bernstein's set */
	{
		struct contract *c = NULL;

		assert_int_equal(contract_index_load(contract_index_find(idx, "q_dev"), &c, &d), 0);
		assert_string_equal(c->binary, "q");
		assert_true(c->auth_required_for_models);
		assert_int_equal(c->n_secret_env, 1);
		assert_string_equal(c->secret_env[0], "AMAZON_Q_TOKEN");
		c = contract_free(c);
		assert_int_equal(
			contract_index_load(contract_index_find(idx, "continue_dev"), &c, &d), 0);
		assert_string_equal(c->binary, "cn");
		c = contract_free(c);
	}
	assert_null(contract_index_find(idx, "nope"));
	contract_index_free(idx);
}

/* ---- loading ---------------------------------------------------------------- */

static void test_defaults_and_forms(void **state)
{
	struct contract *c;

	(void)state;
	c = load("empty", "");
	assert_string_equal(c->adapter, "empty");
	assert_string_equal(c->binary, "empty");
	assert_int_equal(c->n_help_command, 2);
	assert_string_equal(c->help_command[0], "empty");
	assert_string_equal(c->help_command[1], "--help");
	assert_null(c->help_command[2]);
	assert_int_equal(c->n_required_flags, 0);
	assert_null(c->required_flags[0]);
	assert_int_equal(c->n_secret_env, 0);
	assert_null(c->session_id_flag);
	assert_int_equal(c->install_method, CONTRACT_INSTALL_UNSPECIFIED);
	assert_string_equal(c->install_spec, "");
	assert_int_equal(c->auth_basis, CONTRACT_AUTH_UNKNOWN);
	contract_free(c);

	c = load("multi", "adapter: other\n"
			  "binary: \"\"\n"
			  "install: {method: npm, spec: \"x@1.2.3\"}\n"
			  "auth:\n"
			  "  required_for_help: true\n"
			  "  secret_env: [A_KEY, B_KEY]\n"
			  "  basis: subscription_oauth\n"
			  "expected_models: {command: [x, models], required_present: [m1]}\n"
			  "session_id_flag: \"\"\n");
	assert_string_equal(c->adapter, "other");
	assert_string_equal(c->binary, "");
	assert_int_equal(c->n_help_command, 0); /* no binary, no default */
	assert_int_equal(c->install_method, CONTRACT_INSTALL_NPM);
	assert_string_equal(c->install_spec, "x@1.2.3");
	assert_true(c->auth_required_for_help);
	assert_int_equal(c->n_secret_env, 2);
	assert_string_equal(c->secret_env[1], "B_KEY");
	assert_int_equal(c->auth_basis, CONTRACT_AUTH_SUBSCRIPTION_OAUTH);
	assert_int_equal(c->n_models_command, 2);
	assert_string_equal(c->models_required[0], "m1");
	assert_null(c->session_id_flag);
	contract_free(c);

	c = load("one", "auth: {secret_env: ONE_KEY}\nsession_id_flag: --sid\n");
	assert_int_equal(c->n_secret_env, 1);
	assert_string_equal(c->secret_env[0], "ONE_KEY");
	assert_string_equal(c->session_id_flag, "--sid");
	contract_free(c);

	c = load("nul", "auth: {secret_env: null}\nsession_id_flag: null\nhelp_command: []\n");
	assert_int_equal(c->n_secret_env, 0);
	assert_null(c->session_id_flag);
	assert_int_equal(c->n_help_command, 2);
	contract_free(c);

	assert_string_equal(contract_install_method_to_string(CONTRACT_INSTALL_PIPX), "pipx");
	assert_string_equal(contract_auth_basis_to_string(CONTRACT_AUTH_API_KEY), "api_key");
	assert_null(contract_install_method_to_string(_CONTRACT_INSTALL_MAX));
}

static void test_names(void **state)
{
	struct diag d;
	struct contract *c = NULL;

	(void)state;
	assert_true(contract_name_valid("claude"));
	assert_true(contract_name_valid("continue_dev"));
	assert_true(contract_name_valid("q-dev2"));
	assert_false(contract_name_valid(""));
	assert_false(contract_name_valid(NULL));
	assert_false(contract_name_valid("Claude"));
	assert_false(contract_name_valid("_x"));
	assert_false(contract_name_valid("../x"));
	assert_false(contract_name_valid("a.b"));
	assert_false(contract_name_valid(
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
	diag_clear(&d);
	assert_int_equal(contract_load_buf("Bad", "Bad.yaml", "", 0, &c, &d), -EINVAL);
	assert_null(c);
	assert_string_equal(d.file, "Bad.yaml");
	assert_non_null(strstr(d.msg, "invalid contract name 'Bad'"));
}

/* Every file of tests/data/contracts/ is rejected with FILE:LINE:COL. */
static void test_broken_corpus(void **state)
{
	static const struct {
		const char *file;
		const char *msg;
		unsigned line; /* 0: any line > 0 */
	} cases[] = {
		{"unknown-key.yaml", "unknown key 'required_flagz'", 3},
		{"wrong-type.yaml", "'required_flags'", 2},
		{"duplicate-key.yaml", "duplicate", 3},
		{"alias.yaml", "alias", 0},
		{"truncated.yaml", "", 0},
		{"garbage.yaml", "", 0},
		{"bad-secret-env.yaml", "is not an environment variable name", 3},
		{"empty-flag.yaml", "empty string", 4},
		{"bad-install-method.yaml", "unknown value 'brew'", 3},
		{"bad-bool.yaml", "'required_for_help'", 3},
		{"unknown-nested-key.yaml", "unknown key 'required'", 4},
		{"bad-session-flag.yaml", "'session_id_flag': expected a string or null", 2},
		{"not-a-map.yaml", "expected a mapping", 1},
		{"empty-adapter.yaml", "'adapter' must not be empty", 1},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[4096];
		struct contract *c = NULL;
		struct diag d;
		int r;

		(void)snprintf(path, sizeof(path), "%s/tests/data/contracts/%s", srcdir(),
			       cases[i].file);
		diag_clear(&d);
		r = contract_load_file(path, &c, &d);
		if (r != -EINVAL || !strstr(d.msg, cases[i].msg) || d.line == 0 || d.col == 0 ||
		    (cases[i].line && d.line != cases[i].line))
			fail_msg("%s: r=%d %s:%u:%u: %s", cases[i].file, r, d.file, d.line, d.col,
				 d.msg);
		assert_null(c);
		assert_string_equal(d.file, path);
	}
}

static void test_load_errors_in_buffers(void **state)
{
	struct diag d;

	(void)state;
	assert_int_equal(load_err("required_flags: [\"-m\", [a]]\n", &d), -EINVAL);
	assert_int_equal(load_err("required_flags: [\"-m\", null]\n", &d), -EINVAL);
	(void)load_err("help_command: [a, \"\"]\n", &d);
	assert_non_null(strstr(d.msg, "empty string in help_command"));
	assert_int_equal(d.line, 1);
	assert_int_equal(d.col, 19);
	assert_int_equal(load_err("auth: {secret_env: {a: b}}\n", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "expected a string or a list of strings"));
	assert_int_equal(load_err("auth: {secret_env: [[A]]}\n", &d), -EINVAL);
	assert_int_equal(load_err("auth: {basis: oauth}\n", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "api_key"));
	assert_int_equal(load_err("install: npm\n", &d), -EINVAL);
	assert_int_equal(load_err("binary: [a]\n", &d), -EINVAL);
	assert_int_equal(load_err("a: 1\n---\nb: 2\n", &d), -EINVAL);
}

/* ---- catalogue layering ----------------------------------------------------- */

static void test_index_layers(void **state)
{
	struct contract_index *idx = NULL;
	const struct contract_entry *e;
	struct contract *c = NULL;
	struct diag d;
	char user[512], repo[512];
	size_t embedded_n;

	(void)state;
	assert_int_equal(contract_index_build(NULL, NULL, &idx, &d), 0);
	embedded_n = idx->n;
	idx = contract_index_free(idx);

	mkdir_tmp("user/contracts");
	mkdir_tmp("repo/contracts");
	write_file("user/contracts/claude.yaml", "binary: user-claude\nrequired_flags: [-p]\n",
		   0644);
	write_file("user/contracts/extra.yaml", "binary: extra\nrequired_flags: [-p]\n", 0644);
	write_file("repo/contracts/claude.yaml", "binary: repo-claude\nrequired_flags: [-p]\n",
		   0644);
	write_file("repo/contracts/.hidden.yaml", "garbage: [", 0644);
	write_file("repo/contracts/notes.txt", "not a contract", 0644);
	(void)snprintf(user, sizeof(user), "%s/user", tmp);
	(void)snprintf(repo, sizeof(repo), "%s/repo", tmp);

	assert_int_equal(contract_index_build(user, repo, &idx, &d), 0);
	assert_int_equal(idx->n, embedded_n + 1);
	e = contract_index_find(idx, "claude");
	assert_non_null(e);
	assert_null(e->data);
	assert_non_null(strstr(e->source, "/repo/contracts/claude.yaml"));
	assert_int_equal(contract_index_load(e, &c, &d), 0);
	assert_string_equal(c->binary, "repo-claude");
	c = contract_free(c);
	e = contract_index_find(idx, "extra");
	assert_non_null(e);
	assert_int_equal(contract_index_load(e, &c, &d), 0);
	assert_string_equal(c->binary, "extra");
	c = contract_free(c);
	/* embedded ones are named for diagnostics */
	e = contract_index_find(idx, "codex");
	assert_string_equal(e->source, "<embedded>/contracts/codex.yaml");
	idx = contract_index_free(idx);

	/* user only; a missing repo dir is fine */
	assert_int_equal(contract_index_build(user, "/nonexistent/dir", &idx, &d), 0);
	assert_int_equal(contract_index_load(contract_index_find(idx, "claude"), &c, &d), 0);
	assert_string_equal(c->binary, "user-claude");
	c = contract_free(c);
	idx = contract_index_free(idx);

	/* an empty override (or one pinning nothing) would switch drift
	 * checking off: refused */
	write_file("repo/contracts/claude.yaml", "", 0644);
	assert_int_equal(contract_index_build(user, repo, &idx, &d), 0);
	assert_int_equal(contract_index_load(contract_index_find(idx, "claude"), &c, &d), -EINVAL);
	assert_null(c);
	assert_non_null(strstr(d.msg, "pins no required_flags or required_subcommands"));
	idx = contract_index_free(idx);
	write_file("repo/contracts/claude.yaml", "binary: claude\nrequired_subcommands: []\n",
		   0644);
	assert_int_equal(contract_index_build(user, repo, &idx, &d), 0);
	assert_int_equal(contract_index_load(contract_index_find(idx, "claude"), &c, &d), -EINVAL);
	idx = contract_index_free(idx);

	/* a broken override is reported with its position when loaded */
	write_file("repo/contracts/claude.yaml", "binary: x\nbinaryy: y\n", 0644);
	assert_int_equal(contract_index_build(user, repo, &idx, &d), 0);
	assert_int_equal(contract_index_load(contract_index_find(idx, "claude"), &c, &d), -EINVAL);
	assert_int_equal(d.line, 2);
	assert_int_equal(d.col, 1);
	assert_non_null(strstr(d.file, "repo/contracts/claude.yaml"));
	idx = contract_index_free(idx);

	/* an invalid file name is an error */
	write_file("repo/contracts/Bad Name.yaml", "", 0644);
	assert_int_equal(contract_index_build(user, repo, &idx, &d), -EINVAL);
	assert_null(idx);
	assert_non_null(strstr(d.file, "Bad Name.yaml"));
}

/* ---- the live check against fake CLIs --------------------------------------- */

static const char *envp_default[8];

static void make_env(const char **envp, const char *extra)
{
	static char pathvar[300];

	(void)snprintf(pathvar, sizeof(pathvar), "PATH=%s", path_env);
	envp[0] = pathvar;
	envp[1] = "HOME=/nonexistent-home";
	envp[2] = "SECRET_TOKEN=hunter2";
	envp[3] = "TERM=xterm-256color";
	envp[4] = "LANG=C.UTF-8";
	envp[5] = extra;
	envp[6] = NULL;
}

static void check(const char *yaml, const char **envp, uint64_t timeout_ms,
		  struct contract_result *res)
{
	struct contract *c = load("fake", yaml);
	struct contract_check_opts o = {
		.envp = envp, .help_timeout_ms = timeout_ms, .models_timeout_ms = timeout_ms};

	*res = (struct contract_result)CONTRACT_RESULT_INIT;
	assert_int_equal(contract_check(c, &o, res), 0);
	contract_free(c);
}

static void test_check_passes_and_drifts(void **state)
{
	struct contract_result r;

	(void)state;
	mkdir_tmp("bin");
	write_file("bin/okcli",
		   "#!/bin/sh\n[ \"$1\" = --help ] || exit 9\n"
		   "printf '\\033[1mUsage\\033[0m: okcli [options]\\n  -m, --model M\\n"
		   "  --json\\n'\n",
		   0755);
	make_env(envp_default, NULL);

	check("binary: okcli\nrequired_flags: [\"-m\", \"--json\"]\n", envp_default, 10000, &r);
	assert_true(r.binary_installed);
	assert_true(r.help_checked);
	assert_int_equal(r.help_exit_code, 0);
	assert_null(r.skipped_reason);
	assert_null(r.runtime_failure);
	assert_true(contract_result_passed(&r));
	assert_false(contract_result_drifted(&r));
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_PASSED);
	assert_string_equal(r.adapter, "fake");
	assert_string_equal(r.binary, "okcli");
	contract_result_release(&r);

	check("binary: okcli\nrequired_flags: [\"-m\", \"--full-auto\", \"--yolo\"]\n",
	      envp_default, 10000, &r);
	assert_true(contract_result_drifted(&r));
	assert_false(contract_result_passed(&r));
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_DRIFTED);
	assert_null(r.runtime_failure);
	assert_int_equal(r.capability_failures.nr, 2);
	assert_string_equal(r.capability_failures.v[0],
			    "missing required flag '--full-auto' in `okcli --help`");
	contract_result_release(&r);
}

static void test_check_runtime_failures(void **state)
{
	struct contract_result r;

	(void)state;
	mkdir_tmp("bin");
	write_file("bin/silent", "#!/bin/sh\nexit 1\n", 0755);
	write_file("bin/crashy",
		   "#!/bin/sh\nprintf '\\377\\001Error: \\033[31mboom\\033[0m\\n'\n"
		   "exit 3\n",
		   0755);
	write_file("bin/hang", "#!/bin/sh\nprintf 'partial --a'\nexec sleep 30\n", 0755);
	write_file("bin/noexec", "#!/nonexistent/interpreter\n", 0755);
	make_env(envp_default, NULL);

	check("binary: silent\nrequired_flags: [\"--a\", \"--b\"]\n", envp_default, 10000, &r);
	assert_int_equal(r.help_exit_code, 1);
	assert_false(contract_result_drifted(&r));
	assert_false(contract_result_passed(&r));
	assert_non_null(r.runtime_failure);
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_RUNTIME_FAILURE);
	assert_string_equal(
		r.runtime_failure,
		"`silent --help` exited 1 with no output; upstream CLI runtime failure, not contract drift: <no output>");
	contract_result_release(&r);

	/* exit non-zero, none of 2 advertised: the snippet is sanitised */
	check("binary: crashy\nrequired_flags: [\"--a\", \"--b\"]\n", envp_default, 10000, &r);
	assert_int_equal(r.help_exit_code, 3);
	assert_non_null(r.runtime_failure);
	assert_non_null(strstr(r.runtime_failure, "exited 3 with no required tokens advertised"));
	assert_non_null(strstr(r.runtime_failure, ": ??Error: boom"));
	{
		json_t *j = json_string(r.runtime_failure); /* valid UTF-8 */

		assert_non_null(j);
		json_decref(j);
	}
	contract_result_release(&r);

	/* the quoted output is one line */
	write_file("bin/twolines", "#!/bin/sh\nprintf 'usage: x\\n\\tmore\\n'\nexit 2\n", 0755);
	check("binary: twolines\nrequired_flags: [\"--a\", \"--b\"]\n", envp_default, 10000, &r);
	assert_non_null(r.runtime_failure);
	assert_non_null(strstr(r.runtime_failure, ": usage: x  more"));
	assert_null(strchr(r.runtime_failure, '\n'));
	contract_result_release(&r);

	/* the same with a single required token is drift */
	check("binary: crashy\nrequired_flags: [\"--a\"]\n", envp_default, 10000, &r);
	assert_null(r.runtime_failure);
	assert_true(contract_result_drifted(&r));
	contract_result_release(&r);

	/* a hanging help is killed at the deadline: a runtime failure, no hang */
	check("binary: hang\nrequired_flags: [\"--a\"]\n", envp_default, 1500, &r);
	assert_true(r.timed_out);
	assert_int_equal(r.help_exit_code, 124);
	assert_non_null(r.runtime_failure);
	assert_non_null(strstr(r.runtime_failure, "`hang --help` timed out after 1500ms"));
	assert_non_null(strstr(r.runtime_failure, "partial --a"));
	assert_false(contract_result_passed(&r));
	assert_false(contract_result_drifted(&r));
	contract_result_release(&r);

	check("binary: noexec\nrequired_flags: [\"--a\"]\n", envp_default, 10000, &r);
	assert_true(r.binary_installed);
	assert_non_null(r.runtime_failure);
	assert_int_equal(r.help_exit_code, 126);
	assert_non_null(strstr(r.runtime_failure, "could not be started"));
	contract_result_release(&r);
}

static void test_check_skips(void **state)
{
	struct contract_result r;
	const char *envp[8];

	(void)state;
	mkdir_tmp("bin");
	write_file("bin/okcli", "#!/bin/sh\necho '--a --b'\n", 0755);
	make_env(envp_default, NULL);

	check("binary: not-there-xyz\nrequired_flags: [\"--a\"]\n", envp_default, 10000, &r);
	assert_false(r.binary_installed);
	assert_string_equal(r.skipped_reason, "not-there-xyz not installed");
	assert_false(contract_result_passed(&r));
	assert_false(contract_result_drifted(&r));
	assert_null(r.runtime_failure);
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_NOT_INSTALLED);
	contract_result_release(&r);

	check("binary: \"\"\n", envp_default, 10000, &r);
	assert_string_equal(r.skipped_reason, "contract has no binary");
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_SKIPPED);
	contract_result_release(&r);

	/* help needs a secret that is unset (blank counts as unset) */
	make_env(envp, "BLANK_KEY=  ");
	check("binary: okcli\nauth: {required_for_help: true, secret_env: [MISSING_KEY, BLANK_KEY]}\nrequired_flags: [\"--a\"]\n",
	      envp, 10000, &r);
	assert_true(r.binary_installed);
	assert_false(r.help_checked);
	assert_string_equal(r.skipped_reason,
			    "--help requires MISSING_KEY or BLANK_KEY which is unset; skipping");
	assert_false(contract_result_passed(&r));
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_SKIPPED);
	contract_result_release(&r);

	/* ... and runs when it is set */
	check("binary: okcli\nauth: {required_for_help: true, secret_env: SECRET_TOKEN}\n"
	      "required_flags: [\"--a\"]\n",
	      envp_default, 10000, &r);
	assert_true(contract_result_passed(&r));
	contract_result_release(&r);

	/* help_command naming another binary that is missing */
	check("binary: okcli\nhelp_command: [gone-xyz, --help]\nrequired_flags: [\"--a\"]\n",
	      envp_default, 10000, &r);
	assert_false(r.binary_installed);
	assert_int_equal(r.help_exit_code, 127);
	assert_string_equal(r.skipped_reason, "<binary 'gone-xyz' not found in PATH>");
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_NOT_INSTALLED);
	contract_result_release(&r);
}

/* The classification's order and names, on results built by hand. */
static void test_verdict(void **state)
{
	struct contract_result r = CONTRACT_RESULT_INIT;

	(void)state;
	r.binary = xstrdup("x");
	/* nothing ran and the binary was not found */
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_NOT_INSTALLED);
	/* found, but not checked (a missing secret, or the check could not run) */
	r.binary_installed = true;
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_SKIPPED);
	r.help_checked = true;
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_PASSED);
	r.runtime_failure = xstrdup("broken");
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_RUNTIME_FAILURE);
	/* drift wins over a runtime failure, as in contract-check's exit code */
	strvec_push(&r.model_failures, "model 'm' not present");
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_DRIFTED);
	contract_result_release(&r);
	/* a contract without a binary is skipped, never "not installed" */
	r.binary = xstrdup("");
	assert_int_equal(contract_result_verdict(&r), CONTRACT_VERDICT_SKIPPED);
	contract_result_release(&r);

	assert_string_equal(contract_verdict_to_string(CONTRACT_VERDICT_PASSED), "passed");
	assert_string_equal(contract_verdict_to_string(CONTRACT_VERDICT_DRIFTED), "drifted");
	assert_string_equal(contract_verdict_to_string(CONTRACT_VERDICT_RUNTIME_FAILURE),
			    "runtime-failure");
	assert_string_equal(contract_verdict_to_string(CONTRACT_VERDICT_NOT_INSTALLED),
			    "not-installed");
	assert_string_equal(contract_verdict_to_string(CONTRACT_VERDICT_SKIPPED), "skipped");
	assert_null(contract_verdict_to_string(_CONTRACT_VERDICT_MAX));
	assert_null(contract_verdict_to_string(_CONTRACT_VERDICT_INVALID));
}

/* The help command sees only the allow-listed environment. */
static void test_check_environment(void **state)
{
	struct contract_result r;
	struct strvec env = STRVEC_INIT;
	static const char *const extra[] = {"SECRET_TOKEN", "UNSET_ONE", NULL};
	size_t i;

	(void)state;
	mkdir_tmp("bin");
	write_file("bin/envcli", "#!/bin/sh\necho --env-dump; env\n", 0755);
	make_env(envp_default, NULL);
	check("binary: envcli\nrequired_flags: [\"--env-dump\", \"TERM=dumb\", \"CI=1\", \"NO_COLOR=1\", \"DO_NOT_TRACK=1\", \"LANG=C.UTF-8\", \"HOME=/nonexistent-home\"]\n",
	      envp_default, 10000, &r);
	for (i = 0; i < r.capability_failures.nr; i++)
		print_error("%s\n", r.capability_failures.v[i]);
	assert_true(contract_result_passed(&r));
	contract_result_release(&r);
	/* no secret, no TERM from the caller */
	check("binary: envcli\nrequired_flags: [\"SECRET_TOKEN\", \"xterm-256color\"]\n",
	      envp_default, 10000, &r);
	assert_int_equal(r.capability_failures.nr, 2);
	contract_result_release(&r);

	contract_sandbox_env(envp_default, extra, &env);
	assert_int_equal(env.nr, 8); /* CI DO_NOT_TRACK HOME LANG NO_COLOR PATH SECRET TERM */
	assert_string_equal(env.v[0], "CI=1");
	assert_string_equal(env.v[6], "SECRET_TOKEN=hunter2");
	assert_string_equal(env.v[7], "TERM=dumb");
	strvec_clear(&env);
}

static void test_check_models(void **state)
{
	struct contract_result r;

	(void)state;
	mkdir_tmp("bin");
	write_file("bin/modcli",
		   "#!/bin/sh\nif [ \"$1\" = models ]; then\n"
		   "  [ -n \"$SECRET_TOKEN\" ] || exit 5\n"
		   "  echo 'GPT-5'; echo 'sonnet-4'; exit 0\nfi\necho '--m --n'\n",
		   0755);
	make_env(envp_default, NULL);

	check("binary: modcli\nrequired_flags: [\"--m\"]\nauth: {secret_env: SECRET_TOKEN}\n"
	      "expected_models: {command: [modcli, models], required_present: [gpt-5, opus]}\n",
	      envp_default, 10000, &r);
	assert_true(r.models_checked);
	assert_int_equal(r.model_failures.nr, 1);
	assert_string_equal(r.model_failures.v[0],
			    "model 'opus' not present in `modcli models` output");
	assert_true(contract_result_drifted(&r));
	contract_result_release(&r);

	/* without the secret passed through, the model command fails: exit 5 */
	check("binary: modcli\nrequired_flags: [\"--m\"]\n"
	      "expected_models: {command: [modcli, models], required_present: [gpt-5]}\n",
	      envp_default, 10000, &r);
	assert_false(r.models_checked);
	assert_int_equal(r.model_failures.nr, 1);
	assert_string_equal(r.model_failures.v[0], "`modcli models` exited 5: <no output>");
	contract_result_release(&r);

	check("binary: modcli\nrequired_flags: [\"--m\"]\n"
	      "expected_models: {command: [no-such-lister, ls], required_present: [gpt-5]}\n",
	      envp_default, 10000, &r);
	assert_int_equal(r.model_failures.nr, 1);
	assert_string_equal(r.model_failures.v[0],
			    "`no-such-lister ls`: 'no-such-lister' not found in PATH");
	contract_result_release(&r);

	/* models need auth that is missing: help-only, still a pass */
	check("binary: modcli\nrequired_flags: [\"--m\"]\n"
	      "auth: {required_for_models: true, secret_env: NOT_SET_KEY}\n"
	      "expected_models: {command: [modcli, models], required_present: [gpt-5]}\n",
	      envp_default, 10000, &r);
	assert_false(r.models_checked);
	assert_string_equal(r.skipped_reason, "model check needs NOT_SET_KEY; running help-only");
	assert_true(contract_result_passed(&r));
	contract_result_release(&r);
}

/* contract_check_all runs help commands in parallel: three 1 s helps take
 * less than 3 s. */
static void test_check_all_parallel(void **state)
{
	struct contract *cs[3];
	struct contract_result res[3];
	struct contract_check_opts o = {.envp = envp_default};
	struct timespec a, b;
	double secs;
	size_t i;

	(void)state;
	mkdir_tmp("bin");
	write_file("bin/slowcli", "#!/bin/sh\nsleep 1\necho '--x'\n", 0755);
	make_env(envp_default, NULL);
	for (i = 0; i < 3; i++) {
		cs[i] = load("slow", "binary: slowcli\nrequired_flags: [\"--x\"]\n");
		res[i] = (struct contract_result)CONTRACT_RESULT_INIT;
	}
	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &a), 0);
	assert_int_equal(contract_check_all((const struct contract *const *)cs, 3, &o, res), 0);
	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &b), 0);
	secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	assert_true(secs < 2.9); /* one at a time would take 3 s at least */
	for (i = 0; i < 3; i++) {
		assert_true(contract_result_passed(&res[i]));
		contract_result_release(&res[i]);
		contract_free(cs[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flag_is_token_bounded),
		cmocka_unit_test(test_subcommand_is_whitespace_bounded),
		cmocka_unit_test(test_match_help_messages_and_ansi),
		cmocka_unit_test(test_probe_failure_classification),
		cmocka_unit_test(test_pinned_contracts_match_stored_help),
		cmocka_unit_test(test_pinned_facts),
		cmocka_unit_test(test_drift_is_reported_on_stored_help),
		cmocka_unit_test(test_every_shipped_contract_loads),
		cmocka_unit_test(test_defaults_and_forms),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_broken_corpus),
		cmocka_unit_test(test_load_errors_in_buffers),
		cmocka_unit_test(test_verdict),
		cmocka_unit_test_setup_teardown(test_index_layers, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_check_passes_and_drifts, setup_tmp,
						teardown_tmp),
		cmocka_unit_test_setup_teardown(test_check_runtime_failures, setup_tmp,
						teardown_tmp),
		cmocka_unit_test_setup_teardown(test_check_skips, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_check_environment, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_check_models, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_check_all_parallel, setup_tmp, teardown_tmp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
