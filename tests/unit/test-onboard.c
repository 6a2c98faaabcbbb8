/* onboard/: transcripts (the recorded-profile adapter, the strict loader,
 * the writer), evidence and the held-out derivation. No process runs here
 * (test-onboard-run.c runs them).
 *
 * The central property, on every shipped profile: a profile converted to
 * ctor_kwargs, written as YAML and loaded back, rebuilds byte-identical
 * argv and the same environment names as the live profile. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/catalog.h"
#include "adapter/envpolicy.h"
#include "adapter/invocation.h"
#include "adapter/profile.h"
#include "onboard/evidence.h"
#include "onboard/heldout.h"
#include "onboard/onboard.h"
#include "onboard/transcript.h"
#include "onboard/yemit.h"
#include "util/sbuf.h"
#include "util/strvec.h"

/* ---- helpers ---- */

static const char *const no_strs[] = {NULL};
static const char *const pi_extra[] = {"--mode", "json", NULL};
static const char *const pi_env[] = {"PI_API_KEY", "OPENAI_API_KEY", NULL};

/* A pi-like invocation. */
static struct recorded_invocation pi_inv(void)
{
	struct recorded_invocation inv = {
		.registry_name = "pi",
		.display_name = "Pi",
		.binary = "pi",
		.subcommands = {no_strs, 0},
		.model_flag = "--model",
		.prompt_flag = "-p",
		.prompt_positional = false,
		.extra_args = {pi_extra, 2},
		.env_passthrough = {pi_env, 2},
	};
	return inv;
}

static void assert_strv_equal(const struct transcript_strv *a, const char *const *b, size_t n)
{
	size_t i;

	assert_int_equal(a->n, n);
	for (i = 0; i < n; i++)
		assert_string_equal(a->v[i], b[i]);
	assert_null(a->v[n]);
}

static struct transcript *load_ok(const char *text)
{
	struct transcript *t = NULL;
	struct diag d;
	int r;

	diag_clear(&d);
	r = transcript_load_buf("t.yaml", text, strlen(text), &t, &d);
	if (r < 0)
		fail_msg("load failed: %s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	return t;
}

/* Loading text fails with -EINVAL at line:col and a message containing
 * needle. */
static void load_fails(const char *text, unsigned line, unsigned col, const char *needle)
{
	struct transcript *t = NULL;
	struct diag d;
	int r;

	diag_clear(&d);
	r = transcript_load_buf("t.yaml", text, strlen(text), &t, &d);
	if (r != -EINVAL || !strstr(d.msg, needle) || d.line != line || d.col != col)
		fail_msg("want -EINVAL at %u:%u with '%s', got %d at %s:%u:%u: %s", line, col,
			 needle, r, d.file, d.line, d.col, d.msg);
	assert_string_equal(d.file, "t.yaml");
	assert_null(t);
}

/* A valid transcript with parts replaced: KWARGS and STEPS are the bodies. */
#define HEAD                                                                                       \
	"name: x\n"                                                                                \
	"adapter_class: bernstein.adapters.capability_profile.RecordedProfileAdapter\n"
#define KW_BODY                                                                                    \
	"  registry_name: pi\n"                                                                    \
	"  display_name: Pi\n"                                                                     \
	"  binary: pi\n"                                                                           \
	"  subcommands: []\n"                                                                      \
	"  model_flag: --model\n"                                                                  \
	"  prompt_flag: -p\n"                                                                      \
	"  prompt_positional: false\n"                                                             \
	"  extra_args: [--mode, json]\n"                                                           \
	"  env_passthrough: [PI_API_KEY]\n"
#define STEPS_OK                                                                                   \
	"steps:\n"                                                                                 \
	"  - prompt: hi\n"                                                                         \
	"    model: m\n"                                                                           \
	"    inner_argv: [pi, --model, m, --mode, json, -p, hi]\n"

/* ---- the writer and the loader ---- */

static void test_roundtrip_tricky_strings(void **state)
{
	static const char *const prompts[] = {
		"",
		"true",
		"null",
		"~",
		"x\n- item",
		"a: b",
		"#not a comment",
		"'single' \"double\" \\back\\slash",
		"line1\nline2\r\n\ttab",
		"  padded  ",
		"na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
		"\x01\x1f\x7f ctl",
		"\xc2\x85 nel \xe2\x80\xa8 ls \xe2\x80\xa9 ps \xef\xbb\xbf bom \xef\xbf\xbe",
		"{home} {workdir} {model}",
		"%s %n %%",
		"see --help",
	};
	struct recorded_invocation inv = pi_inv();
	struct transcript *t = transcript_new("tricky", &inv), *u;
	struct sbuf sb = SBUF_INIT(SIZE_MAX), sb2 = SBUF_INIT(SIZE_MAX);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(prompts) / sizeof(prompts[0]); i++)
		assert_int_equal(transcript_add_step(t, prompts[i], i % 2 ? NULL : prompts[i]), 0);
	assert_int_equal(transcript_emit(t, &sb), 0);
	u = load_ok(sb.buf);
	assert_string_equal(u->name, "tricky");
	assert_int_equal(u->n_steps, t->n_steps);
	for (i = 0; i < t->n_steps; i++) {
		assert_string_equal(u->steps[i].prompt, prompts[i]);
		if (i % 2)
			assert_null(u->steps[i].model);
		else
			assert_string_equal(u->steps[i].model, prompts[i]);
		assert_strv_equal(&u->steps[i].inner_argv, t->steps[i].inner_argv.v,
				  t->steps[i].inner_argv.n);
		assert_int_equal(u->steps[i].line, 0 + u->steps[i].line); /* set */
		assert_true(u->steps[i].line > 0);
	}
	/* a fixed point: the loaded transcript writes the same bytes */
	assert_int_equal(transcript_emit(u, &sb2), 0);
	assert_string_equal(sb.buf, sb2.buf);
	/* control characters never appear raw */
	for (i = 0; i < sb.len; i++)
		assert_true(sb.buf[i] == '\n' || (unsigned char)sb.buf[i] >= 0x20);
	assert_null(strstr(sb.buf, "\xc2\x85"));
	assert_null(strstr(sb.buf, "\xe2\x80\xa8"));
	transcript_free(u);
	transcript_free(t);
	sbuf_release(&sb);
	sbuf_release(&sb2);
}

static void test_emit_shape(void **state)
{
	struct recorded_invocation inv = pi_inv();
	struct transcript *t = transcript_new("pi", &inv);
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)state;
	assert_int_equal(transcript_add_step(t, "say hi", "fake-model"), 0);
	assert_int_equal(transcript_emit(t, &sb), 0);
	assert_string_equal(
		sb.buf,
		"# Onboarding transcript: bernstein onboard record (docs/onboarding.md).\n"
		"# Replay: bernstein onboard replay FILE\n"
		"name: \"pi\"\n"
		"adapter_class: \"bernstein.adapters.capability_profile.RecordedProfileAdapter\"\n"
		"ctor_kwargs:\n"
		"  registry_name: \"pi\"\n"
		"  display_name: \"Pi\"\n"
		"  binary: \"pi\"\n"
		"  subcommands: []\n"
		"  model_flag: \"--model\"\n"
		"  prompt_flag: \"-p\"\n"
		"  prompt_positional: false\n"
		"  extra_args:\n"
		"    - \"--mode\"\n"
		"    - \"json\"\n"
		"  env_passthrough:\n"
		"    - \"PI_API_KEY\"\n"
		"    - \"OPENAI_API_KEY\"\n"
		"steps:\n"
		"  - prompt: \"say hi\"\n"
		"    model: \"fake-model\"\n"
		"    inner_argv:\n"
		"      - \"pi\"\n"
		"      - \"--model\"\n"
		"      - \"fake-model\"\n"
		"      - \"--mode\"\n"
		"      - \"json\"\n"
		"      - \"-p\"\n"
		"      - \"say hi\"\n");
	transcript_free(t);
	sbuf_release(&sb);
}

static void test_emit_refuses_non_utf8(void **state)
{
	struct recorded_invocation inv = pi_inv();
	struct transcript *t = transcript_new("pi", &inv);
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)state;
	assert_int_equal(transcript_add_step(t, "bad \xff byte", NULL), 0);
	assert_int_equal(transcript_emit(t, &sb), -EINVAL);
	assert_int_equal(sb.len, 0);			       /* nothing half-written */
	assert_false(yemit_utf8_valid("\xc0\x80", 2));	       /* overlong NUL */
	assert_false(yemit_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
	assert_false(yemit_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	assert_true(yemit_utf8_valid("\xf4\x8f\xbf\xbf", 4));
	transcript_free(t);
	sbuf_release(&sb);
}

static void test_load_valid_and_nulls(void **state)
{
	struct transcript *t;

	(void)state;
	t = load_ok(HEAD "ctor_kwargs:\n" KW_BODY STEPS_OK);
	assert_string_equal(t->name, "x");
	assert_string_equal(t->inv.registry_name, "pi");
	assert_string_equal(t->inv.model_flag, "--model");
	assert_false(t->inv.prompt_positional);
	assert_int_equal(t->n_steps, 1);
	assert_int_equal(t->steps[0].line, 14);
	assert_int_equal(t->steps[0].col, 5);
	transcript_free(t);

	/* null flags, a positional prompt, a null model, no steps */
	t = load_ok(HEAD "ctor_kwargs:\n"
			 "  registry_name: agent-1\n"
			 "  display_name: Agent\n"
			 "  binary: /opt/agent/bin/agent\n"
			 "  subcommands: [run, exec]\n"
			 "  model_flag: null\n"
			 "  prompt_flag: ~\n"
			 "  prompt_positional: true\n"
			 "  extra_args: [--dir, \"{workdir}\"]\n"
			 "  env_passthrough: []\n"
			 "steps:\n"
			 "  - prompt: \"\"\n"
			 "    model: null\n"
			 "    inner_argv: [x]\n");
	assert_null(t->inv.model_flag);
	assert_null(t->inv.prompt_flag);
	assert_true(t->inv.prompt_positional);
	assert_null(t->steps[0].model);
	assert_string_equal(t->steps[0].prompt, "");
	transcript_free(t);

	t = load_ok(HEAD "ctor_kwargs:\n" KW_BODY "steps: []\n");
	assert_int_equal(t->n_steps, 0); /* loads; a replay of it fails */
	transcript_free(t);
}

static void test_load_strict_top_level(void **state)
{
	(void)state;
	/* exactly four keys: each one missing, one more */
	load_fails("adapter_class: bernstein.adapters.capability_profile.RecordedProfileAdapter\n"
		   "ctor_kwargs:\n" KW_BODY STEPS_OK,
		   1, 1, "missing required key 'name'");
	load_fails("name: x\nctor_kwargs:\n" KW_BODY STEPS_OK, 1, 1,
		   "missing required key 'adapter_class'");
	load_fails(HEAD STEPS_OK, 1, 1, "missing required key 'ctor_kwargs'");
	load_fails(HEAD "ctor_kwargs:\n" KW_BODY, 1, 1, "missing required key 'steps'");
	load_fails(HEAD "session_role: qa\nctor_kwargs:\n" KW_BODY STEPS_OK, 3, 1,
		   "unknown key 'session_role' in transcript");
	load_fails("", 1, 1, "missing required key 'name'");
	load_fails("- a\n- b\n", 1, 1, "transcript: expected a mapping, got a sequence");
	/* types */
	load_fails("name: [x]\n" HEAD "ctor_kwargs:\n" KW_BODY STEPS_OK, 2, 1,
		   "duplicate key 'name'");
	load_fails("name: [x]\n"
		   "adapter_class: bernstein.adapters.capability_profile.RecordedProfileAdapter\n"
		   "ctor_kwargs:\n" KW_BODY STEPS_OK,
		   1, 7, "'name': expected a string");
	load_fails(HEAD "ctor_kwargs: [a]\n" STEPS_OK, 3, 14, "'ctor_kwargs': expected a mapping");
	load_fails(HEAD "ctor_kwargs:\n" KW_BODY "steps: {a: b}\n", 13, 8,
		   "'steps': expected a sequence");
	load_fails("name: \"bad name\"\n"
		   "adapter_class: bernstein.adapters.capability_profile.RecordedProfileAdapter\n"
		   "ctor_kwargs:\n" KW_BODY STEPS_OK,
		   1, 7, "name: must be");
	load_fails("name: x\nadapter_class: bernstein.adapters.claude.ClaudeCodeAdapter\n"
		   "ctor_kwargs:\n" KW_BODY STEPS_OK,
		   2, 16, "unsupported class");
	/* YAML hazards are refused by the loader too */
	load_fails(HEAD "ctor_kwargs: &k\n" KW_BODY STEPS_OK, 3, 14, "anchor");
}

static void test_load_strict_kwargs(void **state)
{
	(void)state;
	load_fails(HEAD "ctor_kwargs:\n" KW_BODY "  cli_command: echo\n" STEPS_OK, 13, 3,
		   "unknown key 'cli_command' in ctor_kwargs");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: --model\n"
			"  prompt_flag: -p\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   4, 3, "ctor_kwargs: missing required key 'prompt_positional'");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: --model\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: \"false\"\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   10, 22, "'prompt_positional': expected a boolean");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: run\n"
			"  model_flag: --model\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: false\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   7, 16, "'subcommands': expected a list of strings");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: [--model]\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: false\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   8, 15, "ctor_kwargs.model_flag: expected a string or null");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: model\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: false\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   8, 15, "ctor_kwargs.model_flag: must be a flag");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: null\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: true\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   10, 22, "only one delivery");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: null\n"
			"  prompt_flag: null\n"
			"  prompt_positional: false\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   10, 22, "no way to deliver the prompt");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: Pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: null\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: false\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   4, 18, "ctor_kwargs.registry_name: must be an adapter name");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: bin/pi\n"
			"  subcommands: []\n"
			"  model_flag: null\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: false\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   6, 11, "ctor_kwargs.binary: must be a bare name");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: [run, --x]\n"
			"  model_flag: null\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: false\n"
			"  extra_args: []\n"
			"  env_passthrough: []\n" STEPS_OK,
		   7, 22, "ctor_kwargs.subcommands[1]");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: null\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: false\n"
			"  extra_args: [--m, \"{model}\"]\n"
			"  env_passthrough: []\n" STEPS_OK,
		   11, 21, "ctor_kwargs.extra_args[1]: only the placeholders");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: null\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: false\n"
			"  extra_args: []\n"
			"  env_passthrough: [A_KEY, 1BAD]\n" STEPS_OK,
		   12, 28, "ctor_kwargs.env_passthrough[1]: invalid environment variable name");
	load_fails(HEAD "ctor_kwargs:\n"
			"  registry_name: pi\n"
			"  display_name: Pi\n"
			"  binary: pi\n"
			"  subcommands: []\n"
			"  model_flag: null\n"
			"  prompt_flag: -p\n"
			"  prompt_positional: false\n"
			"  extra_args: []\n"
			"  env_passthrough: [A_KEY, A_KEY]\n" STEPS_OK,
		   12, 28, "'A_KEY' is listed twice");
}

static void test_load_strict_steps(void **state)
{
	(void)state;
	load_fails(HEAD "ctor_kwargs:\n" KW_BODY "steps:\n  - hello\n", 14, 5,
		   "steps[0]: expected a mapping, got a string");
	load_fails(HEAD "ctor_kwargs:\n" KW_BODY "steps:\n"
			"  - prompt: hi\n"
			"    model: m\n",
		   14, 5, "steps[0]: missing required key 'inner_argv'");
	load_fails(HEAD "ctor_kwargs:\n" KW_BODY "steps:\n"
			"  - prompt: hi\n"
			"    model: m\n"
			"    inner_argv: [a]\n"
			"    expected_pid: 1234\n",
		   17, 5, "unknown key 'expected_pid' in steps[0]");
	load_fails(HEAD "ctor_kwargs:\n" KW_BODY "steps:\n"
			"  - prompt: hi\n"
			"    model: m\n"
			"    inner_argv: []\n",
		   16, 17, "steps[0].inner_argv: must not be empty");
	load_fails(HEAD "ctor_kwargs:\n" KW_BODY STEPS_OK "  - prompt: [x]\n"
			"    model: m\n"
			"    inner_argv: [a]\n",
		   17, 13, "'prompt': expected a string");
	load_fails(HEAD "ctor_kwargs:\n" KW_BODY "steps:\n"
			"  - prompt: hi\n"
			"    model: {a: b}\n"
			"    inner_argv: [a]\n",
		   15, 12, "steps[0].model: expected a string or null");
}

static void test_load_too_many_steps_and_file(void **state)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct transcript *t = NULL;
	struct diag d;
	int i;

	(void)state;
	(void)sbuf_adds(&sb, HEAD "ctor_kwargs:\n" KW_BODY "steps:\n");
	for (i = 0; i <= TRANSCRIPT_MAX_STEPS; i++)
		(void)sbuf_adds(&sb, "  - {prompt: a, model: null, inner_argv: [pi, -p, a]}\n");
	diag_clear(&d);
	assert_int_equal(transcript_load_buf("t.yaml", sb.buf, sb.len, &t, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "more than 64 steps"));
	assert_int_equal(d.line, 13 + 1 + TRANSCRIPT_MAX_STEPS);
	sbuf_release(&sb);

	diag_clear(&d);
	assert_int_equal(transcript_load_file("/nonexistent/t.yaml", &t, &d), -ENOENT);
	assert_string_equal(d.file, "/nonexistent/t.yaml");
	assert_non_null(strstr(d.msg, "cannot read"));
}

static void test_build_argv_order(void **state)
{
	static const char *const subs[] = {"exec", "run", NULL};
	static const char *const extra[] = {"--dir", "{workdir}", "--home={home}", NULL};
	struct recorded_invocation inv = pi_inv();
	struct profile_vars vars = {.v = {NULL}};
	struct strvec argv = STRVEC_INIT;

	(void)state;
	inv.subcommands = (struct transcript_strv){subs, 2};
	inv.extra_args = (struct transcript_strv){extra, 3};
	assert_int_equal(transcript_build_argv(&inv, "m1", "do it", NULL, &argv), 0);
	assert_int_equal(argv.nr, 10);
	assert_string_equal(argv.v[0], "pi");
	assert_string_equal(argv.v[1], "exec");
	assert_string_equal(argv.v[2], "run");
	assert_string_equal(argv.v[3], "--model");
	assert_string_equal(argv.v[4], "m1");
	assert_string_equal(argv.v[5], "--dir");
	assert_string_equal(argv.v[6], "{workdir}");
	assert_string_equal(argv.v[7], "--home={home}");
	assert_string_equal(argv.v[8], "-p");
	assert_string_equal(argv.v[9], "do it");
	strvec_clear(&argv);

	/* expanded; no model: no model flag; positional prompt */
	vars.v[PH_HOME] = "/h";
	vars.v[PH_WORKDIR] = "/w";
	inv.prompt_flag = NULL;
	inv.prompt_positional = true;
	assert_int_equal(transcript_build_argv(&inv, NULL, "x", &vars, &argv), 0);
	assert_int_equal(argv.nr, 7);
	assert_string_equal(argv.v[3], "--dir");
	assert_string_equal(argv.v[4], "/w");
	assert_string_equal(argv.v[5], "--home=/h");
	assert_string_equal(argv.v[6], "x");
	strvec_clear(&argv);

	/* a placeholder without a value */
	vars.v[PH_HOME] = NULL;
	assert_int_equal(transcript_build_argv(&inv, NULL, "x", &vars, &argv), -ENOENT);
	strvec_clear(&argv);
}

/* The recorded invocation has no end-of-options marker (ctor_kwargs has nine
 * keys): a prompt or a model that starts with '-' would reach the agent as
 * an option, so neither is ever put on argv (issue #14). */
static void test_build_argv_refuses_options(void **state)
{
	static const char *const bad[] = {"--version", "-h", "--settings=x", "-", "--"};
	struct recorded_invocation inv = pi_inv();
	struct strvec argv = STRVEC_INIT;
	struct diag d;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		diag_clear(&d);
		assert_int_equal(transcript_values_check(&inv, "m1", bad[i], &d), -EINVAL);
		assert_non_null(strstr(d.msg, "the prompt starts with '-'"));
		assert_int_equal(transcript_build_argv(&inv, "m1", bad[i], NULL, &argv), -EINVAL);
		assert_int_equal(argv.nr, 0);
		diag_clear(&d);
		assert_int_equal(transcript_values_check(&inv, bad[i], "do it", &d), -EINVAL);
		assert_non_null(strstr(d.msg, "would read it as an option"));
		assert_int_equal(transcript_build_argv(&inv, bad[i], "do it", NULL, &argv),
				 -EINVAL);
		assert_int_equal(argv.nr, 0);
	}
	/* a model is not passed without a model flag; dashes inside are text */
	inv.model_flag = NULL;
	assert_int_equal(transcript_build_argv(&inv, "-x", "a -- --help", NULL, &argv), 0);
	assert_string_equal(argv.v[argv.nr - 1], "a -- --help");
	strvec_clear(&argv);
}

/* ---- every shipped profile ---- */

static int host_env_add(struct strvec *host, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < host->nr; i++)
		if (strncmp(host->v[i], name, n) == 0 && host->v[i][n] == '=')
			return 0;
	strvec_pushf(host, "%s=host:%s", name, name);
	return 1;
}

static const char *env_value(const struct strvec *env, const char *name)
{
	return envpolicy_get(env->v, name);
}

/* The environment the live profile's spawn would get (invocation_build),
 * or, for what it cannot build (modules), the allow-list with the
 * profile's pass-through names. */
static void live_env(const struct profile *p, const struct strvec *host, struct strvec *ret)
{
	struct invocation_request req = {0};
	struct invocation_plan plan;
	struct envpolicy e;
	size_t i;
	int r;

	req.profile = p;
	req.prompt = "x";
	req.workdir = "/w";
	req.session_dir = "/s";
	req.host_env = host->v;
	req.path_env = "/nonexistent";
	invocation_plan_init(&plan);
	r = invocation_build(&req, &plan, NULL);
	if (r == 0) {
		strvec_pushv(ret, plan.env.v);
		invocation_plan_release(&plan);
		return;
	}
	invocation_plan_release(&plan);
	assert_int_equal(r, -ENOTSUP); /* only modules are not built */
	envpolicy_init(&e, host->v);
	for (i = 0; i < p->invocation.env_passthrough.n; i++)
		envpolicy_pass(&e, p->invocation.env_passthrough.v[i]);
	assert_int_equal(envpolicy_build(&e, ret, NULL), 0);
	envpolicy_release(&e);
}

static void check_env(const struct profile *p, const struct transcript *t,
		      const struct strvec *host)
{
	struct strvec live = STRVEC_INIT, rehyd = STRVEC_INIT, s1 = STRVEC_INIT, s2 = STRVEC_INIT;
	struct recorded_invocation orig;
	struct arena a = ARENA_INIT;
	struct envpolicy e;
	size_t i;

	/* the pass-through list itself, in order */
	assert_int_equal(t->inv.env_passthrough.n, p->invocation.env_passthrough.n);
	for (i = 0; i < t->inv.env_passthrough.n; i++)
		assert_string_equal(t->inv.env_passthrough.v[i],
				    p->invocation.env_passthrough.v[i]);

	/* the host variables the agent gets: the same names, except where the
	 * live profile's runtime replaces a value with its own */
	live_env(p, host, &live);
	envpolicy_init(&e, host->v);
	for (i = 0; i < t->inv.env_passthrough.n; i++)
		envpolicy_pass(&e, t->inv.env_passthrough.v[i]);
	assert_int_equal(envpolicy_build(&e, &rehyd, NULL), 0);
	envpolicy_release(&e);
	for (i = 0; i < rehyd.nr; i++) {
		char name[128];
		const char *eq = strchr(rehyd.v[i], '=');
		const char *lv;

		(void)snprintf(name, sizeof(name), "%.*s", (int)(eq - rehyd.v[i]), rehyd.v[i]);
		lv = env_value(&live, name);
		if (!lv)
			fail_msg("%s: the rehydrated adapter passes %s, the live profile does not",
				 p->name, name);
	}
	for (i = 0; i < live.nr; i++) {
		char name[128], want[160];
		const char *eq = strchr(live.v[i], '=');

		(void)snprintf(name, sizeof(name), "%.*s", (int)(eq - live.v[i]), live.v[i]);
		(void)snprintf(want, sizeof(want), "host:%s", name);
		if (strcmp(eq + 1, want) == 0 && !env_value(&rehyd, name))
			fail_msg(
				"%s: the live profile passes %s from the host, the rehydrated adapter does not",
				p->name, name);
	}
	/* no secret nobody listed */
	assert_null(env_value(&rehyd, "CANARY_SECRET"));

	/* the onboarding sandbox: the same names from both */
	assert_int_equal(transcript_invocation_from_profile(p, &a, &orig, NULL), 0);
	assert_int_equal(onboard_sandbox_env(&orig, host->v, "/scratch/home", &s1, NULL), 0);
	assert_int_equal(onboard_sandbox_env(&t->inv, host->v, "/scratch/home", &s2, NULL), 0);
	assert_int_equal(s1.nr, s2.nr);
	for (i = 0; i < s1.nr; i++)
		assert_string_equal(s1.v[i], s2.v[i]);
	assert_null(env_value(&s2, "CANARY_SECRET"));
	assert_null(env_value(&s2, "USER"));
	assert_null(env_value(&s2, "LOGNAME"));
	assert_string_equal(env_value(&s2, "HOME"), "/scratch/home");

	strvec_clear(&live);
	strvec_clear(&rehyd);
	strvec_clear(&s1);
	strvec_clear(&s2);
	arena_release(&a);
}

static void check_profile(const struct profile *p, const struct strvec *host)
{
	static const char *const prompts[] = {
		"",
		"fix the bug in main.py",
		"two\nlines \"q\" 'x' \xe2\x9c\x93 $HOME",
		"a -dash -- --help",
	};
	struct profile_vars vars = {.v = {NULL}}, lit = {.v = {NULL}};
	struct recorded_invocation inv;
	struct transcript *t, *u = NULL;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	const char *models[12];
	struct arena a = ARENA_INIT;
	struct diag d;
	size_t nm = 0, i, j, k, step = 0;

	arena_init(&a, 1024);
	diag_clear(&d);
	assert_int_equal(transcript_invocation_from_profile(p, &a, &inv, &d), 0);
	assert_int_equal(transcript_invocation_check(&inv, &d), 0);
	models[nm++] = NULL;
	models[nm++] = "some-model-id";
	for (i = 0; i < p->models.n && nm < 12; i++)
		models[nm++] = p->models.keys[i];

	t = transcript_new(p->name, &inv);
	for (i = 0; i < nm; i++)
		for (j = 0; j < 4; j++)
			assert_int_equal(
				transcript_add_step(t, prompts[j], profile_model(p, models[i])), 0);
	assert_int_equal(transcript_emit(t, &sb), 0);
	diag_clear(&d);
	if (transcript_load_buf(p->name, sb.buf, sb.len, &u, &d) < 0)
		fail_msg("%s: the written transcript does not load: %u:%u: %s", p->name, d.line,
			 d.col, d.msg);

	/* the nine fields survive */
	assert_string_equal(u->inv.registry_name, p->name);
	assert_string_equal(u->inv.display_name, p->display_name);
	assert_string_equal(u->inv.binary, p->invocation.binary);
	assert_int_equal(u->inv.prompt_positional, p->invocation.prompt_positional);
	if (p->invocation.model_flag)
		assert_string_equal(u->inv.model_flag, p->invocation.model_flag);
	else
		assert_null(u->inv.model_flag);
	if (p->invocation.prompt_flag)
		assert_string_equal(u->inv.prompt_flag, p->invocation.prompt_flag);
	else
		assert_null(u->inv.prompt_flag);

	/* byte-identical argv, expanded and as stored */
	vars.v[PH_HOME] = "/scratch/home";
	vars.v[PH_WORKDIR] = "/scratch/work";
	lit.v[PH_HOME] = "{home}";
	lit.v[PH_WORKDIR] = "{workdir}";
	for (i = 0; i < nm; i++)
		for (j = 0; j < 4; j++, step++) {
			const struct transcript_step *s = &u->steps[step];
			struct strvec live = STRVEC_INIT, rehyd = STRVEC_INIT, stored = STRVEC_INIT;

			assert_int_equal(
				profile_build_argv(p, NULL, models[i], prompts[j], &vars, &live),
				0);
			assert_int_equal(
				transcript_build_argv(&u->inv, s->model, s->prompt, &vars, &rehyd),
				0);
			assert_int_equal(
				profile_build_argv(p, NULL, models[i], prompts[j], &lit, &stored),
				0);
			if (live.nr != rehyd.nr)
				fail_msg("%s: %zu tokens live, %zu rehydrated", p->name, live.nr,
					 rehyd.nr);
			for (k = 0; k < live.nr; k++)
				if (strcmp(live.v[k], rehyd.v[k]) != 0)
					fail_msg("%s: argv[%zu] '%s' live, '%s' rehydrated",
						 p->name, k, live.v[k], rehyd.v[k]);
			assert_int_equal(s->inner_argv.n, stored.nr);
			for (k = 0; k < stored.nr; k++)
				assert_string_equal(s->inner_argv.v[k], stored.v[k]);
			strvec_clear(&live);
			strvec_clear(&rehyd);
			strvec_clear(&stored);
		}
	check_env(p, u, host);
	transcript_free(t);
	transcript_free(u);
	sbuf_release(&sb);
	arena_release(&a);
}

static void test_every_shipped_profile(void **state)
{
	struct strvec host = STRVEC_INIT;
	struct profile *profiles[128];
	struct catalog *cat = NULL;
	size_t n = 0, i, j, checked = 0, refused = 0, with_profile = 0;
	struct diag d;

	(void)state;
	/* every profiles/NAME.yaml embedded in the binary */
	for (i = 0; i < catalog_embedded_count; i++) {
		const struct catalog_file *f = &catalog_embedded[i];
		char stem[PROFILE_MAX_NAME + 1];

		if (!f->name || strncmp(f->name, "profiles/", 9) != 0)
			continue;
		assert_true(n < 128);
		assert_int_equal(profile_stem(f->name, stem, sizeof(stem)), 0);
		diag_clear(&d);
		if (profile_load_buf(f->name, stem, (const char *)f->data, f->len, &profiles[n],
				     &d) < 0)
			fail_msg("%s: %s", f->name, d.msg);
		n++;
	}
	/* the same set the catalogue serves */
	diag_clear(&d);
	assert_int_equal(catalog_load(NULL, NULL, &cat, &d), 0);
	for (i = 0; i < cat->n_entries; i++)
		if (cat->entries[i]->profile)
			with_profile++;
	assert_int_equal(n, with_profile);
	assert_true(n > 0);

	/* a host environment with every name anyone might pass, plus a secret
	 * and an identity nobody may */
	for (i = 0; envpolicy_base[i]; i++)
		(void)host_env_add(&host, envpolicy_base[i]);
	for (i = 0; i < n; i++)
		for (j = 0; j < profiles[i]->invocation.env_passthrough.n; j++)
			(void)host_env_add(&host, profiles[i]->invocation.env_passthrough.v[j]);
	(void)host_env_add(&host, "CANARY_SECRET");
	(void)host_env_add(&host, "USER");
	(void)host_env_add(&host, "LOGNAME");
	(void)host_env_add(&host, "LANG");

	for (i = 0; i < n; i++) {
		const struct profile *p = profiles[i];

		if (p->runtime.acp.declared && !p->invocation.prompt_flag &&
		    !p->invocation.prompt_positional) {
			struct recorded_invocation inv;
			struct arena a = ARENA_INIT;

			/* an ACP-only profile: no prompt on argv to record */
			diag_clear(&d);
			assert_int_equal(transcript_invocation_from_profile(p, &a, &inv, &d),
					 -ENOTSUP);
			assert_non_null(strstr(d.msg, "runtime.acp"));
			arena_release(&a);
			refused++;
			continue;
		}
		if (p->invocation.prompt_file_flag) {
			struct recorded_invocation inv;
			struct arena a = ARENA_INIT;

			/* no spelling for a prompt file in ctor_kwargs: refused, never
			 * approximated */
			diag_clear(&d);
			assert_int_equal(transcript_invocation_from_profile(p, &a, &inv, &d),
					 -ENOTSUP);
			assert_non_null(strstr(d.msg, "prompt_file_flag"));
			assert_true(d.line > 0);
			arena_release(&a);
			refused++;
			continue;
		}
		if (p->runtime.pty.declared && !p->invocation.prompt_flag &&
		    !p->invocation.prompt_positional) {
			struct recorded_invocation inv;
			struct arena a = ARENA_INIT;

			/* a TUI profile (claude_tui, gemini_tui) types its prompt:
			 * refused the same way */
			diag_clear(&d);
			assert_int_equal(transcript_invocation_from_profile(p, &a, &inv, &d),
					 -ENOTSUP);
			assert_non_null(strstr(d.msg, "runtime.pty"));
			arena_release(&a);
			refused++;
			continue;
		}
		check_profile(p, &host);
		checked++;
	}
	assert_int_equal(checked + refused, n);
	assert_true(checked > refused);
	for (i = 0; i < n; i++)
		profile_free(profiles[i]);
	catalog_free(cat);
	strvec_clear(&host);
}

/* ---- evidence ---- */

static struct evidence *pi_evidence(const char *prompt, int code)
{
	static const char *const env[] = {"PATH=/bin", "HOME=/h", "CI=1", "PI_API_KEY=secret",
					  NULL};
	struct recorded_invocation inv = pi_inv();
	struct strvec argv = STRVEC_INIT;
	struct evidence *e;

	assert_int_equal(transcript_build_argv(&inv, "fake-model", prompt, NULL, &argv), 0);
	e = evidence_new(argv.v, argv.nr, env, 4, code, 1500);
	strvec_clear(&argv);
	return e;
}

static void test_evidence_roundtrip(void **state)
{
	struct evidence *e = pi_evidence("say hi", 0), *f = NULL;
	struct sbuf sb = SBUF_INIT(SIZE_MAX), sb2 = SBUF_INIT(SIZE_MAX);
	struct diag d;

	(void)state;
	assert_int_equal(evidence_emit(e, &sb), 0);
	assert_string_equal(sb.buf,
			    "# Onboarding evidence: the smoke run of bernstein onboard record\n"
			    "# (docs/onboarding.md). No output, no values, no user.\n"
			    "argv:\n"
			    "  - \"pi\"\n"
			    "  - \"--model\"\n"
			    "  - \"fake-model\"\n"
			    "  - \"--mode\"\n"
			    "  - \"json\"\n"
			    "  - \"-p\"\n"
			    "  - \"say hi\"\n"
			    "env_names:\n"
			    "  - \"CI\"\n"
			    "  - \"HOME\"\n"
			    "  - \"PATH\"\n"
			    "  - \"PI_API_KEY\"\n"
			    "exit_code: 0\n"
			    "duration_bucket: \"1s-10s\"\n");
	assert_null(strstr(sb.buf, "secret")); /* names, never values */
	diag_clear(&d);
	assert_int_equal(evidence_load_buf("e.yaml", sb.buf, sb.len, &f, &d), 0);
	assert_int_equal(evidence_emit(f, &sb2), 0);
	assert_string_equal(sb.buf, sb2.buf);
	assert_int_equal(f->duration, DURATION_1S_TO_10S);
	evidence_free(e);
	evidence_free(f);
	sbuf_release(&sb);
	sbuf_release(&sb2);

	assert_int_equal(duration_bucket_of(0), DURATION_UNDER_1S);
	assert_int_equal(duration_bucket_of(999), DURATION_UNDER_1S);
	assert_int_equal(duration_bucket_of(1000), DURATION_1S_TO_10S);
	assert_int_equal(duration_bucket_of(59999), DURATION_10S_TO_60S);
	assert_int_equal(duration_bucket_of(60000), DURATION_60S_OR_MORE);
}

static void evidence_fails(const char *text, unsigned line, unsigned col, const char *needle)
{
	struct evidence *e = NULL;
	struct diag d;
	int r;

	diag_clear(&d);
	r = evidence_load_buf("e.yaml", text, strlen(text), &e, &d);
	if (r != -EINVAL || !strstr(d.msg, needle) || d.line != line || d.col != col)
		fail_msg("want -EINVAL at %u:%u with '%s', got %d at %u:%u: %s", line, col, needle,
			 r, d.line, d.col, d.msg);
	assert_null(e);
}

static void test_evidence_strict(void **state)
{
	(void)state;
	evidence_fails("argv: [pi]\nenv_names: []\nexit_code: 0\n", 1, 1,
		       "missing required key 'duration_bucket'");
	evidence_fails("argv: [pi]\nenv_names: []\nexit_code: 0\nduration_bucket: under-1s\n"
		       "stdout: hi\n",
		       5, 1, "unknown key 'stdout'");
	evidence_fails("argv: []\nenv_names: []\nexit_code: 0\nduration_bucket: under-1s\n", 1, 7,
		       "argv: must not be empty");
	evidence_fails("argv: [pi]\nenv_names: [B, A]\nexit_code: 0\nduration_bucket: under-1s\n",
		       2, 16, "sorted and unique");
	evidence_fails("argv: [pi]\nenv_names: [A=1]\nexit_code: 0\nduration_bucket: under-1s\n", 2,
		       13, "invalid environment variable name");
	evidence_fails("argv: [pi]\nenv_names: []\nexit_code: 300\nduration_bucket: under-1s\n", 3,
		       12, "exit_code");
	evidence_fails("argv: [pi]\nenv_names: []\nexit_code: \"0\"\nduration_bucket: under-1s\n",
		       3, 12, "expected an integer");
	evidence_fails("argv: [pi]\nenv_names: []\nexit_code: 0\nduration_bucket: 5s\n", 4, 18,
		       "unknown bucket");
}

/* ---- held-out derivation ---- */

static void test_heldout_deterministic(void **state)
{
	struct recorded_invocation inv = pi_inv();
	struct evidence *e = pi_evidence("say hi", 0);
	struct heldout h1, h2, h3;
	unsigned k, j;
	struct diag d;

	(void)state;
	heldout_init(&h1);
	heldout_init(&h2);
	heldout_init(&h3);
	assert_int_equal(heldout_derive(e, &inv, "say hi", "fake-model", &h1, &d), 0);
	assert_int_equal(heldout_derive(e, &inv, "say hi", "fake-model", &h2, &d), 0);
	assert_string_equal(h1.seed, h2.seed);
	assert_int_equal(strlen(h1.seed), 64);
	for (k = 0; k < HELDOUT_CASES; k++) {
		struct strvec want = STRVEC_INIT;

		assert_string_equal(h1.cases[k].prompt, h2.cases[k].prompt);
		assert_int_equal(h1.cases[k].variant, h2.cases[k].variant);
		assert_non_null(strstr(h1.cases[k].prompt, "say hi"));
		assert_string_not_equal(h1.cases[k].prompt, "say hi");
		assert_string_equal(h1.cases[k].model, "fake-model");
		assert_non_null(heldout_variant_name(h1.cases[k].variant));
		for (j = 0; j < k; j++) {
			assert_int_not_equal(h1.cases[j].variant, h1.cases[k].variant);
			assert_string_not_equal(h1.cases[j].prompt, h1.cases[k].prompt);
		}
		/* the argv is the invocation's for that case */
		assert_int_equal(
			transcript_build_argv(&inv, "fake-model", h1.cases[k].prompt, NULL, &want),
			0);
		assert_int_equal(h1.cases[k].argv.nr, want.nr);
		for (j = 0; j < want.nr; j++)
			assert_string_equal(h1.cases[k].argv.v[j], want.v[j]);
		strvec_clear(&want);
	}

	/* the duration bucket and env names do not matter; the prompt does */
	e->duration = DURATION_60S_OR_MORE;
	e->env_names.n = 0;
	assert_int_equal(heldout_derive(e, &inv, "say hi", "fake-model", &h2, &d), 0);
	assert_string_equal(h1.seed, h2.seed);
	evidence_free(e);
	e = pi_evidence("say hello", 0);
	assert_int_equal(heldout_derive(e, &inv, "say hello", "fake-model", &h3, &d), 0);
	assert_string_not_equal(h1.seed, h3.seed);
	evidence_free(e);

	heldout_release(&h1);
	heldout_release(&h2);
	heldout_release(&h3);
}

/* Computed by tests/data/onboard/heldout-ref.py, an independent Python
 * implementation of the derivation in docs/onboarding.md. */
#define GOLDEN_SEED	"af9d274e3b5b4894a51a8d5711cf112a8311858ee2caafd08f54f9ba42d32ece"
#define GOLDEN_PROMPT_1 "print a short greeting\t(held-out case 1)"
#define GOLDEN_PROMPT_2 "held-out case 2: print a short greeting"
#define GOLDEN_PROMPT_3 "print a short greeting (held-out case 3) -- --help"

static void test_heldout_golden(void **state)
{
	/* pinned: a change here changes every recorded transcript (bump
	 * HELDOUT_DOMAIN instead of editing a variant) */
	struct recorded_invocation inv = pi_inv();
	struct evidence *e = pi_evidence("print a short greeting", 0);
	struct heldout h;
	struct diag d;

	(void)state;
	heldout_init(&h);
	assert_int_equal(heldout_derive(e, &inv, "print a short greeting", "fake-model", &h, &d),
			 0);
	assert_string_equal(h.seed, GOLDEN_SEED);
	assert_string_equal(h.cases[0].prompt, GOLDEN_PROMPT_1);
	assert_string_equal(h.cases[1].prompt, GOLDEN_PROMPT_2);
	assert_string_equal(h.cases[2].prompt, GOLDEN_PROMPT_3);
	heldout_release(&h);
	evidence_free(e);
}

static void test_heldout_refusals(void **state)
{
	struct recorded_invocation inv = pi_inv();
	struct evidence *e;
	struct heldout h;
	struct diag d;

	(void)state;
	heldout_init(&h);
	/* a failed smoke run */
	e = pi_evidence("say hi", 3);
	diag_clear(&d);
	assert_int_equal(heldout_derive(e, &inv, "say hi", "fake-model", &h, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "failed (exit code 3)"));
	evidence_free(e);
	/* evidence of another prompt, model or invocation */
	e = pi_evidence("say hi", 0);
	diag_clear(&d);
	assert_int_equal(heldout_derive(e, &inv, "say bye", "fake-model", &h, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "argv[6] is 'say hi' in the evidence, 'say bye'"));
	diag_clear(&d);
	assert_int_equal(heldout_derive(e, &inv, "say hi", "other", &h, &d), -EINVAL);
	inv.model_flag = "-m";
	diag_clear(&d);
	assert_int_equal(heldout_derive(e, &inv, "say hi", "fake-model", &h, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "'--model' in the evidence, '-m' from the profile"));
	inv = pi_inv();
	inv.extra_args.n = 0;
	diag_clear(&d);
	assert_int_equal(heldout_derive(e, &inv, "say hi", "fake-model", &h, &d), -EINVAL);
	/* not UTF-8 */
	inv = pi_inv();
	diag_clear(&d);
	assert_int_equal(heldout_derive(e, &inv, "say \xff", "fake-model", &h, &d), -EINVAL);
	evidence_free(e);
	heldout_release(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_tricky_strings),
		cmocka_unit_test(test_emit_shape),
		cmocka_unit_test(test_emit_refuses_non_utf8),
		cmocka_unit_test(test_load_valid_and_nulls),
		cmocka_unit_test(test_load_strict_top_level),
		cmocka_unit_test(test_load_strict_kwargs),
		cmocka_unit_test(test_load_strict_steps),
		cmocka_unit_test(test_load_too_many_steps_and_file),
		cmocka_unit_test(test_build_argv_order),
		cmocka_unit_test(test_build_argv_refuses_options),
		cmocka_unit_test(test_every_shipped_profile),
		cmocka_unit_test(test_evidence_roundtrip),
		cmocka_unit_test(test_evidence_strict),
		cmocka_unit_test(test_heldout_deterministic),
		cmocka_unit_test(test_heldout_golden),
		cmocka_unit_test(test_heldout_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
