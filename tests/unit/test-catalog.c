/* The catalogue (registry + strategy matrix), its override layers, the
 * conformance check, the strategy resolver and the broken-file corpus of
 * tests/data/catalog/. */
#include <errno.h>
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
#include "adapter/strategy.h"
#include "util/fsutil.h"
#include "util/strvec.h"
#include "util/xalloc.h"

/* The 45 registry names of the Python system (anchor-adapters.md §1.15), and
 * the four ACP profiles (claude_acp, gemini_acp, opencode_acp, qwen_acp) and
 * the two TUI profiles (claude_tui, gemini_tui: event channel poll-pty). */
static const char *const registry_names[] = {
	"aichat",
	"aider",
	"amp",
	"antigravity",
	"auggie",
	"autohand",
	"charm",
	"claude",
	"claude_acp",
	"claude_tui",
	"cline",
	"clm",
	"cloudflare",
	"codebuff",
	"codex",
	"cody",
	"composio",
	"continue",
	"copilot",
	"cursor",
	"devin_terminal",
	"droid",
	"forge",
	"gemini",
	"gemini_acp",
	"gemini_tui",
	"generic",
	"goose",
	"gptme",
	"hermes",
	"iac",
	"junie",
	"kilo",
	"kimi",
	"kiro",
	"letta_code",
	"mistral",
	"mock",
	"ollama",
	"open_interpreter",
	"openai_agents",
	"opencode",
	"opencode_acp",
	"openhands",
	"pi",
	"plandex",
	"q_dev",
	"qwen",
	"qwen_acp",
	"ralphex",
	"rovo",
};

/* ---- helpers ---- */

struct tmpdir {
	char path[64];
	struct strvec files; /* created files and dirs, removed in reverse */
};

static void tmp_init(struct tmpdir *t)
{
	(void)snprintf(t->path, sizeof(t->path), "/tmp/test-catalog.XXXXXX");
	assert_non_null(mkdtemp(t->path));
	strvec_init(&t->files);
}

static const char *tmp_mkdir(struct tmpdir *t, const char *rel)
{
	const char *p = strvec_pushf(&t->files, "%s/%s", t->path, rel);

	assert_int_equal(mkdir_p(p, 0700), 0);
	return p;
}

static const char *tmp_write(struct tmpdir *t, const char *rel, const char *text)
{
	const char *p = strvec_pushf(&t->files, "%s/%s", t->path, rel);

	assert_int_equal(atomic_write_file(p, text, strlen(text), 0600), 0);
	return p;
}

static void tmp_release(struct tmpdir *t)
{
	size_t i;

	for (i = t->files.nr; i-- > 0;)
		if (unlink(t->files.v[i]) < 0)
			(void)rmdir(t->files.v[i]);
	/* directories made by mkdir_p for nested paths */
	for (i = t->files.nr; i-- > 0;) {
		char *p = xstrdup(t->files.v[i]), *s;

		while ((s = strrchr(p, '/')) && (size_t)(s - p) > strlen(t->path)) {
			*s = '\0';
			(void)rmdir(p);
		}
		free(p);
	}
	assert_int_equal(rmdir(t->path), 0);
	strvec_clear(&t->files);
}

static struct catalog *load_embedded(void)
{
	struct catalog *cat = NULL;
	struct diag d;

	diag_clear(&d);
	if (catalog_load(NULL, NULL, &cat, &d) < 0)
		fail_msg("embedded catalogue: %s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	return cat;
}

static const char *srcdir(void)
{
	const char *s = getenv("SRCDIR");

	return s && s[0] ? s : ".";
}

static struct adapter_strategy mk(enum resume_strategy r, enum dangerous_mode dm,
				  enum event_channel e, enum output_mode o, enum session_state s)
{
	struct adapter_strategy st = {r, dm, e, o, s};

	return st;
}

static void assert_strategy(const struct adapter_strategy *got, const struct adapter_strategy *want,
			    const char *name)
{
	int a;

	for (a = 0; a < _AXIS_MAX; a++)
		if (axis_get(got, (enum axis)a) != axis_get(want, (enum axis)a))
			fail_msg("%s: %s is '%s', expected '%s'", name, axis_name((enum axis)a),
				 axis_to_string((enum axis)a, axis_get(got, (enum axis)a)),
				 axis_to_string((enum axis)a, axis_get(want, (enum axis)a)));
}

/* ---- the embedded catalogue ---- */

static void test_embedded_files(void **state)
{
	const struct catalog_file *f;
	size_t n = 0;

	(void)state;
	for (f = catalog_embedded; f->name; f++) {
		assert_non_null(f->data);
		assert_int_equal(f->data[f->len], '\0');
		assert_int_equal(strlen((const char *)f->data), f->len);
		if (n > 0)
			assert_true(strcmp(f[-1].name, f->name) < 0); /* sorted */
		n++;
	}
	assert_int_equal(n, catalog_embedded_count);
	assert_non_null(catalog_embedded_find("registry.yaml"));
	assert_non_null(catalog_embedded_find("strategy-matrix.yaml"));
	assert_null(catalog_embedded_find("nope.yaml"));
}

static void test_embedded_registry_has_the_45(void **state)
{
	struct catalog *cat = load_embedded();
	size_t i;

	(void)state;
	assert_int_equal(cat->n_entries, ARRAY_SIZE(registry_names));
	for (i = 0; i < cat->n_entries; i++) /* sorted, and exactly these names */
		assert_string_equal(cat->entries[i]->name, registry_names[i]);
	for (i = 0; i < ARRAY_SIZE(registry_names); i++) {
		const struct registry_entry *e = catalog_find(cat, registry_names[i]);

		assert_non_null(e);
		assert_non_null(e->display_name);
		assert_true(e->origin.line > 0);
		/* a capability profile, or a registry.yaml entry (never both) */
		if (e->profile) {
			struct strvec want = STRVEC_INIT;

			strvec_pushf(&want, "<embedded>/profiles/%s.yaml", e->name);
			assert_string_equal(e->origin.file, want.v[0]);
			strvec_clear(&want);
		} else {
			assert_string_equal(e->origin.file, "<embedded>/registry.yaml");
		}
		assert_non_null(catalog_matrix_find(cat, registry_names[i]));
	}
	catalog_free(cat);
}

static void test_embedded_passes_conformance(void **state)
{
	struct catalog *cat = load_embedded();
	struct strvec missing = STRVEC_INIT;
	struct diag d;

	(void)state;
	diag_clear(&d);
	assert_int_equal(catalog_check(cat, NULL, &d), 0);
	assert_string_equal(d.msg, ""); /* untouched on success */
	assert_int_equal(catalog_undeclared(cat, NULL, &missing), 0);
	assert_int_equal(missing.nr, 0);
	assert_int_equal(cat->n_rows, 51);
	catalog_free(cat);
}

struct row_want {
	const char *name;
	struct adapter_strategy s;
};

static void test_corrected_rows(void **state)
{
	const struct row_want rows[] = {
		/* the real CLIs (agent-clis.md) */
		{"claude", mk(RESUME_FLAG, DANGEROUS_MODE_CLI_FLAG, EVENT_CHANNEL_STREAM_JSON,
			      OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
		{"codex", mk(RESUME_SUBCOMMAND, DANGEROUS_MODE_CLI_FLAG, EVENT_CHANNEL_STREAM_JSON,
			     OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
		{"gemini", mk(RESUME_FLAG, DANGEROUS_MODE_CLI_FLAG, EVENT_CHANNEL_STREAM_JSON,
			      OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
		{"qwen", mk(RESUME_FLAG, DANGEROUS_MODE_CLI_FLAG, EVENT_CHANNEL_STREAM_JSON,
			    OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
		{"opencode", mk(RESUME_FLAG, DANGEROUS_MODE_CLI_FLAG, EVENT_CHANNEL_STREAM_JSON,
				OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
		{"pi", mk(RESUME_FLAG, DANGEROUS_MODE_ALWAYS_ON, EVENT_CHANNEL_STREAM_JSON,
			  OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
		/* newer upstream */
		{"goose", mk(RESUME_UNSUPPORTED, DANGEROUS_MODE_ENV_VAR, EVENT_CHANNEL_TEXT_SIGNALS,
			     OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
		{"hermes",
		 mk(RESUME_UNSUPPORTED, DANGEROUS_MODE_ALWAYS_ON, EVENT_CHANNEL_TEXT_SIGNALS,
		    OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
		{"copilot",
		 mk(RESUME_UNSUPPORTED, DANGEROUS_MODE_CLI_FLAG, EVENT_CHANNEL_TEXT_SIGNALS,
		    OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
		{"letta_code",
		 mk(RESUME_UNSUPPORTED, DANGEROUS_MODE_CLI_FLAG, EVENT_CHANNEL_STREAM_JSON,
		    OUTPUT_MODE_GIT_DIFF, SESSION_STATE_PERSISTENT_AGENT)},
		/* bernstein's own offline agent (docs/mock.md) */
		{"mock", mk(RESUME_FLAG, DANGEROUS_MODE_ALWAYS_ON, EVENT_CHANNEL_STREAM_JSON,
			    OUTPUT_MODE_GIT_DIFF, SESSION_STATE_STATELESS)},
	};
	struct catalog *cat = load_embedded();
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct matrix_row *row = catalog_matrix_find(cat, rows[i].name);

		assert_non_null(row);
		assert_strategy(&row->decl.strategy, &rows[i].s, rows[i].name);
		/* each deviation from the Python matrix says why */
		if (!row->decl.note || !row->decl.note[0])
			fail_msg("%s: no note", rows[i].name);
		assert_string_equal(row->decl.origin.file, "<embedded>/strategy-matrix.yaml");
	}
	catalog_free(cat);
}

/* Every other row is the Python matrix's (anchor-adapters.md §2.1 R/D/E),
 * git-diff and stateless. */
static void test_python_rows(void **state)
{
	const enum resume_strategy U = RESUME_UNSUPPORTED;
	const enum dangerous_mode DU = DANGEROUS_MODE_UNSUPPORTED, CF = DANGEROUS_MODE_CLI_FLAG;
	const enum event_channel T = EVENT_CHANNEL_TEXT_SIGNALS;
	const enum output_mode G = OUTPUT_MODE_GIT_DIFF;
	const enum session_state S = SESSION_STATE_STATELESS;
	const struct row_want rows[] = {
		{"aichat", mk(U, DU, T, G, S)},
		{"aider", mk(U, DU, T, G, S)},
		{"amp", mk(U, DU, T, G, S)},
		{"antigravity", mk(U, CF, EVENT_CHANNEL_STREAM_JSON, G, S)},
		{"auggie", mk(U, DU, T, G, S)},
		{"autohand", mk(U, DU, T, G, S)},
		{"charm", mk(U, CF, T, G, S)},
		{"cline", mk(U, CF, T, G, S)},
		{"clm", mk(U, DU, T, G, S)},
		{"cloudflare", mk(U, DU, EVENT_CHANNEL_HOOKS, G, S)},
		{"codebuff", mk(U, DU, T, G, S)},
		{"cody", mk(U, DU, T, G, S)},
		{"composio", mk(U, DU, EVENT_CHANNEL_HOOKS, G, S)},
		{"continue", mk(U, DU, T, G, S)},
		{"cursor", mk(U, CF, EVENT_CHANNEL_STREAM_JSON, G, S)},
		{"devin_terminal", mk(U, DU, EVENT_CHANNEL_POLL_PTY, G, S)},
		{"droid", mk(U, DU, T, G, S)},
		{"forge", mk(U, DU, T, G, S)},
		{"generic", mk(U, DU, T, G, S)},
		{"gptme", mk(U, DU, T, G, S)},
		{"iac", mk(U, DU, T, G, S)},
		{"junie", mk(U, DU, T, G, S)},
		{"kilo", mk(U, DU, T, G, S)},
		{"kimi", mk(U, CF, T, G, S)},
		{"kiro", mk(U, DU, T, G, S)},
		{"mistral", mk(U, DU, T, G, S)},
		{"ollama", mk(U, DU, T, G, S)},
		{"open_interpreter", mk(U, DU, T, G, S)},
		{"openai_agents",
		 mk(RESUME_FLAG, DANGEROUS_MODE_ALWAYS_ON, EVENT_CHANNEL_HOOKS, G, S)},
		{"openhands", mk(U, DU, T, G, S)},
		{"plandex", mk(U, DU, T, G, S)},
		{"q_dev", mk(U, DU, T, G, S)},
		{"ralphex", mk(U, DU, T, G, S)},
		{"rovo", mk(U, CF, T, G, S)},
		{"claude_tui", mk(U, CF, EVENT_CHANNEL_POLL_PTY, G, S)},
		{"gemini_tui", mk(U, CF, EVENT_CHANNEL_POLL_PTY, G, S)},
	};
	struct catalog *cat = load_embedded();
	size_t i;

	(void)state;
	assert_int_equal(ARRAY_SIZE(rows) + 11, 47); /* plus the eleven corrected rows */
	for (i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct matrix_row *row = catalog_matrix_find(cat, rows[i].name);

		assert_non_null(row);
		assert_strategy(&row->decl.strategy, &rows[i].s, rows[i].name);
	}
	/* output mode and session state: git-diff everywhere, one persistent agent */
	for (i = 0; i < cat->n_rows; i++) {
		assert_int_equal(cat->rows[i]->decl.strategy.output_mode, OUTPUT_MODE_GIT_DIFF);
		assert_int_equal(cat->rows[i]->decl.strategy.session_state,
				 strcmp(cat->rows[i]->name, "letta_code") == 0
					 ? SESSION_STATE_PERSISTENT_AGENT
					 : SESSION_STATE_STATELESS);
	}
	catalog_free(cat);
}

static void test_registry_binaries(void **state)
{
	static const char *const bins[][3] = {
		{"claude", "Claude Code", "claude"},
		{"codex", "Codex", "codex"},
		{"charm", "Charm", "crush"},
		{"cloudflare", "Cloudflare Agents", "wrangler"},
		{"clm", "clm", "aider"},
		{"ollama", "Ollama (local)", "aider"},
		{"iac", "IaC (Terraform/Pulumi)", "terraform"},
		{"generic", "Generic CLI", "generic-cli"},
		{"antigravity", "Gemini", "antigravity"},
		{"gemini", "Gemini", "gemini"},
		{"composio", "Composio Agent Orchestrator", "ao"},
		{"continue", "Continue.dev", "cn"},
		{"cursor", "Cursor", "cursor-agent"},
		{"devin_terminal", "devin_terminal", "devin"},
		{"kiro", "Kiro", "kiro-cli"},
		{"letta_code", "Letta Code", "letta"},
		{"mistral", "Mistral Vibe", "vibe"},
		{"open_interpreter", "Open Interpreter", "interpreter"},
		{"q_dev", "q_dev", "q"},
		{"qwen", "Qwen CLI", "qwen"},
		{"rovo", "Rovo Dev", "acli"},
	};
	struct catalog *cat = load_embedded();
	const struct registry_entry *e;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bins); i++) {
		e = catalog_find(cat, bins[i][0]);
		assert_non_null(e);
		assert_string_equal(e->display_name, bins[i][1]);
		assert_false(e->builtin);
		assert_string_equal(e->binary, bins[i][2]);
		assert_string_equal(e->version_args[0], "--version");
		assert_null(e->version_args[1]);
		assert_null(e->strategy); /* the shipped registry has no inline overrides */
	}
	for (i = 0; i < 2; i++) {
		e = catalog_find(cat, i ? "openai_agents" : "mock");
		assert_non_null(e);
		assert_true(e->builtin);
		assert_null(e->binary);
	}
	/* only those two are built in */
	for (i = 0; i < cat->n_entries; i++)
		assert_int_equal(cat->entries[i]->builtin,
				 strcmp(cat->entries[i]->name, "mock") == 0 ||
					 strcmp(cat->entries[i]->name, "openai_agents") == 0);
	catalog_free(cat);
}

/* ---- override layers ---- */

static void test_user_dir_replaces_row(void **state)
{
	struct tmpdir t = {.path = {0}, .files = STRVEC_INIT};
	struct catalog *cat = NULL;
	struct strategy_resolved res;
	struct diag d;
	const char *user, *mfile;

	(void)state;
	tmp_init(&t);
	user = tmp_mkdir(&t, "user");
	mfile = tmp_write(&t, "user/strategy-matrix.yaml",
			  "adapters:\n"
			  "  claude:\n"
			  "    resume: unsupported\n"
			  "    dangerous_mode: unsupported\n"
			  "    event_channel: text-signals\n"
			  "  letta_code:\n"
			  "    resume: flag-pair\n"
			  "    dangerous_mode: cli-flag\n"
			  "    event_channel: acp\n");
	assert_int_equal(catalog_load(user, NULL, &cat, &d), 0);
	assert_int_equal(strategy_resolve(cat, "claude", NULL, &res), STRATEGY_SOURCE_MATRIX);
	assert_int_equal(res.strategy.resume, RESUME_UNSUPPORTED);
	assert_int_equal(res.strategy.dangerous_mode, DANGEROUS_MODE_UNSUPPORTED);
	assert_int_equal(res.strategy.event_channel, EVENT_CHANNEL_TEXT_SIGNALS);
	assert_string_equal(res.decl->origin.file, mfile);
	assert_int_equal(res.decl->origin.line, 2);
	assert_int_equal(res.decl->axis_origin[AXIS_RESUME].line, 3);
	assert_int_equal(res.decl->axis_origin[AXIS_RESUME].col, 13);
	assert_null(res.decl->note); /* the embedded note went with the row */
	/* the whole row is replaced, not merged: letta_code loses persistent-agent */
	(void)strategy_resolve(cat, "letta_code", NULL, &res);
	assert_int_equal(res.strategy.resume, RESUME_FLAG_PAIR);
	assert_int_equal(res.strategy.event_channel, EVENT_CHANNEL_ACP);
	assert_int_equal(res.strategy.session_state, SESSION_STATE_STATELESS);
	assert_int_equal(res.axis_source[AXIS_SESSION_STATE], STRATEGY_SOURCE_DEFAULT);
	assert_int_equal(res.axis_source[AXIS_EVENT_CHANNEL], STRATEGY_SOURCE_MATRIX);
	/* other rows keep the embedded declaration */
	(void)strategy_resolve(cat, "codex", NULL, &res);
	assert_int_equal(res.strategy.resume, RESUME_SUBCOMMAND);
	assert_string_equal(res.decl->origin.file, "<embedded>/strategy-matrix.yaml");
	assert_int_equal(cat->n_rows, 51);
	assert_int_equal(catalog_check(cat, NULL, &d), 0);
	catalog_free(cat);
	tmp_release(&t);
}

static void test_repo_dir_beats_user_dir(void **state)
{
	struct tmpdir t = {.path = {0}, .files = STRVEC_INIT};
	struct catalog *cat = NULL;
	struct strategy_resolved res;
	struct diag d;
	const char *user, *repo, *rfile;

	(void)state;
	tmp_init(&t);
	user = tmp_mkdir(&t, "user");
	repo = tmp_mkdir(&t, "repo/.bernstein/catalog");
	tmp_write(&t, "user/strategy-matrix.yaml",
		  "adapters:\n"
		  "  claude: {resume: subcommand, dangerous_mode: env-var, event_channel: hooks}\n"
		  "  clm: {resume: flag, dangerous_mode: cli-flag, event_channel: none}\n");
	tmp_write(&t, "user/registry.yaml",
		  "adapters:\n"
		  "  claude: {display_name: \"Claude (user)\", binary: claude-user}\n");
	rfile = tmp_write(&t, "repo/.bernstein/catalog/strategy-matrix.yaml",
			  "adapters:\n"
			  "  claude:\n"
			  "    resume: flag-pair\n"
			  "    dangerous_mode: always-on\n"
			  "    event_channel: poll-pty\n"
			  "    output_mode: artifact\n"
			  "    session_state: persistent-agent\n"
			  "    note: repo says so\n");
	assert_int_equal(catalog_load(user, repo, &cat, &d), 0);
	(void)strategy_resolve(cat, "claude", NULL, &res);
	assert_strategy(&res.strategy,
			&(struct adapter_strategy){RESUME_FLAG_PAIR, DANGEROUS_MODE_ALWAYS_ON,
						   EVENT_CHANNEL_POLL_PTY, OUTPUT_MODE_ARTIFACT,
						   SESSION_STATE_PERSISTENT_AGENT},
			"claude");
	assert_string_equal(res.decl->origin.file, rfile);
	assert_string_equal(res.decl->note, "repo says so");
	assert_int_equal(res.axis_source[AXIS_OUTPUT_MODE], STRATEGY_SOURCE_MATRIX);
	/* the user layer still applies where the repo says nothing */
	(void)strategy_resolve(cat, "clm", NULL, &res);
	assert_int_equal(res.strategy.resume, RESUME_FLAG);
	assert_int_equal(res.strategy.event_channel, EVENT_CHANNEL_NONE);
	assert_string_equal(catalog_find(cat, "claude")->binary, "claude-user");
	/* a registry entry of a higher layer replaces the embedded profile */
	assert_null(catalog_find(cat, "claude")->profile);
	assert_string_equal(catalog_find(cat, "claude")->display_name, "Claude (user)");
	assert_int_equal(cat->n_entries, 51);
	catalog_free(cat);
	tmp_release(&t);
}

static void test_new_adapter_without_row_fails(void **state)
{
	struct tmpdir t = {.path = {0}, .files = STRVEC_INIT};
	struct catalog *cat = NULL;
	struct strvec missing = STRVEC_INIT;
	struct diag d;
	const char *repo;

	(void)state;
	tmp_init(&t);
	repo = tmp_mkdir(&t, "repo");
	tmp_write(&t, "repo/registry.yaml",
		  "adapters:\n"
		  "  zed:\n"
		  "    display_name: Zed Agent\n"
		  "    binary: zed-agent\n");
	assert_int_equal(catalog_load(NULL, repo, &cat, &d), 0);
	assert_int_equal(cat->n_entries, 52);
	assert_non_null(catalog_find(cat, "zed"));
	diag_clear(&d);
	assert_int_equal(catalog_check(cat, NULL, &d), -EINVAL);
	assert_string_equal(
		d.msg,
		"adapters missing a strategy declaration in the strategy matrix (resume / dangerous-mode / event-channel): zed");
	assert_string_equal(d.file, "");
	assert_int_equal(catalog_undeclared(cat, NULL, &missing), 1);
	assert_string_equal(missing.v[0], "zed");
	/* an undeclared adapter resolves to the conservative default */
	assert_int_equal(strategy_resolve(cat, "zed", NULL, &(struct strategy_resolved){0}),
			 STRATEGY_SOURCE_DEFAULT);
	strvec_clear(&missing);
	catalog_free(cat);
	tmp_release(&t);
}

static void test_several_missing_sorted(void **state)
{
	struct tmpdir t = {.path = {0}, .files = STRVEC_INIT};
	struct catalog *cat = NULL;
	struct diag d;
	const char *repo;
	const char *only[] = {"claude", "zeta", "alpha", NULL};

	(void)state;
	tmp_init(&t);
	repo = tmp_mkdir(&t, "repo");
	/* not in sorted order in the file; one with only an inline strategy */
	tmp_write(&t, "repo/registry.yaml",
		  "adapters:\n"
		  "  zeta: {display_name: Zeta, binary: zeta}\n"
		  "  alpha: {display_name: Alpha, binary: alpha}\n"
		  "  mid:\n"
		  "    display_name: Mid\n"
		  "    binary: mid\n"
		  "    strategy: {resume: flag, dangerous_mode: cli-flag, event_channel: acp}\n"
		  "  declared: {display_name: Declared, binary: declared}\n");
	tmp_write(&t, "repo/strategy-matrix.yaml",
		  "adapters:\n"
		  "  declared: {resume: flag, dangerous_mode: cli-flag, event_channel: acp}\n");
	assert_int_equal(catalog_load(NULL, repo, &cat, &d), 0);
	assert_int_equal(catalog_check(cat, NULL, &d), -EINVAL);
	assert_string_equal(
		d.msg,
		"adapters missing a strategy declaration in the strategy matrix (resume / dangerous-mode / event-channel): alpha, mid, zeta");
	/* a subset of names */
	assert_int_equal(catalog_check(cat, only, &d), -EINVAL);
	assert_string_equal(
		d.msg,
		"adapters missing a strategy declaration in the strategy matrix (resume / dangerous-mode / event-channel): alpha, zeta");
	assert_int_equal(catalog_check(cat, (const char *[]){"claude", "declared", NULL}, &d), 0);
	/* the inline block is what mid runs with, all the same */
	{
		struct strategy_resolved res;

		assert_int_equal(strategy_resolve(cat, "mid", NULL, &res), STRATEGY_SOURCE_INLINE);
		assert_int_equal(res.strategy.event_channel, EVENT_CHANNEL_ACP);
	}
	catalog_free(cat);
	tmp_release(&t);
}

static void test_check_message_too_long(void **state)
{
	struct catalog *cat = catalog_new();
	struct strvec missing = STRVEC_INIT;
	char buf[8192];
	size_t len = 0, i;
	struct diag d;

	(void)state;
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "adapters:\n");
	for (i = 0; i < 60; i++)
		len += (size_t)snprintf(
			buf + len, sizeof(buf) - len,
			"  adapter_with_a_long_name_%02zu: {display_name: X, binary: x}\n", i);
	assert_int_equal(catalog_add_buf(cat, CATALOG_KIND_REGISTRY, "r.yaml", buf, len, &d), 0);
	assert_int_equal(catalog_check(cat, NULL, &d), -EINVAL);
	assert_true(strlen(d.msg) < sizeof(d.msg) - 1);
	assert_memory_equal(d.msg, CATALOG_UNDECLARED_MSG, strlen(CATALOG_UNDECLARED_MSG));
	assert_non_null(strstr(d.msg, "adapter_with_a_long_name_00, adapter_with_a_long_name_01"));
	assert_non_null(strstr(d.msg, " more)"));
	/* the list itself is complete */
	assert_int_equal(catalog_undeclared(cat, NULL, &missing), 60);
	assert_string_equal(missing.v[59], "adapter_with_a_long_name_59");
	strvec_clear(&missing);
	catalog_free(cat);
}

/* ---- the resolver ---- */

static const char resolver_registry[] = "adapters:\n"
					"  a:\n"
					"    display_name: A\n"
					"    binary: a\n"
					"    strategy:\n"
					"      resume: subcommand\n"
					"      dangerous_mode: env-var\n"
					"      event_channel: hooks\n"
					"  b: {display_name: B, binary: b}\n";
static const char resolver_matrix[] =
	"adapters:\n"
	"  a: {resume: flag, dangerous_mode: cli-flag, event_channel: stream-json}\n"
	"  b: {resume: flag-pair, dangerous_mode: always-on, event_channel: none, output_mode: artifact}\n"
	"  matrix_only: {resume: flag, dangerous_mode: cli-flag, event_channel: acp}\n";

static struct catalog *resolver_catalog(void)
{
	struct catalog *cat = catalog_new();
	struct diag d;

	assert_int_equal(catalog_add_buf(cat, CATALOG_KIND_REGISTRY, "reg.yaml", resolver_registry,
					 strlen(resolver_registry), &d),
			 0);
	assert_int_equal(catalog_add_buf(cat, CATALOG_KIND_MATRIX, "mat.yaml", resolver_matrix,
					 strlen(resolver_matrix), &d),
			 0);
	return cat;
}

static void test_resolver_inline_first(void **state)
{
	struct catalog *cat = resolver_catalog();
	struct strategy_resolved res;
	int a;

	(void)state;
	assert_int_equal(strategy_resolve(cat, "a", NULL, &res), STRATEGY_SOURCE_INLINE);
	assert_int_equal(res.source, STRATEGY_SOURCE_INLINE);
	assert_int_equal(res.strategy.resume, RESUME_SUBCOMMAND);
	assert_int_equal(res.strategy.dangerous_mode, DANGEROUS_MODE_ENV_VAR);
	assert_int_equal(res.strategy.event_channel, EVENT_CHANNEL_HOOKS);
	assert_ptr_equal(res.decl, catalog_find(cat, "a")->strategy);
	assert_string_equal(res.decl->origin.file, "reg.yaml");
	assert_int_equal(res.decl->origin.line, 6); /* the block's first key */
	for (a = 0; a < 3; a++)
		assert_int_equal(res.axis_source[a], STRATEGY_SOURCE_INLINE);
	assert_int_equal(res.axis_source[AXIS_OUTPUT_MODE], STRATEGY_SOURCE_DEFAULT);
	assert_int_equal(res.axis_source[AXIS_SESSION_STATE], STRATEGY_SOURCE_DEFAULT);
	assert_string_equal(strategy_source_name(res.source), "inline");
	catalog_free(cat);
}

static void test_resolver_override_beats_registry_inline(void **state)
{
	struct catalog *cat = resolver_catalog();
	struct strategy_resolved res;
	struct strategy_decl over;

	(void)state;
	memset(&over, 0, sizeof(over));
	over.strategy = strategy_default;
	over.strategy.resume = RESUME_FLAG_PAIR;
	over.strategy.session_state = SESSION_STATE_PERSISTENT_AGENT;
	over.axis_declared[AXIS_RESUME] = true;
	over.axis_declared[AXIS_SESSION_STATE] = true;
	assert_int_equal(strategy_resolve(cat, "a", &over, &res), STRATEGY_SOURCE_INLINE);
	assert_ptr_equal(res.decl, &over);
	assert_int_equal(res.strategy.resume, RESUME_FLAG_PAIR);
	assert_int_equal(res.strategy.session_state, SESSION_STATE_PERSISTENT_AGENT);
	assert_int_equal(res.axis_source[AXIS_DANGEROUS_MODE], STRATEGY_SOURCE_DEFAULT);
	/* works without a catalogue as well */
	assert_int_equal(strategy_resolve(NULL, "anything", &over, &res), STRATEGY_SOURCE_INLINE);
	assert_int_equal(res.strategy.resume, RESUME_FLAG_PAIR);
	catalog_free(cat);
}

static void test_resolver_matrix_second(void **state)
{
	struct catalog *cat = resolver_catalog();
	struct strategy_resolved res;

	(void)state;
	assert_int_equal(strategy_resolve(cat, "b", NULL, &res), STRATEGY_SOURCE_MATRIX);
	assert_int_equal(res.strategy.resume, RESUME_FLAG_PAIR);
	assert_int_equal(res.strategy.dangerous_mode, DANGEROUS_MODE_ALWAYS_ON);
	assert_int_equal(res.strategy.event_channel, EVENT_CHANNEL_NONE);
	assert_int_equal(res.strategy.output_mode, OUTPUT_MODE_ARTIFACT);
	assert_int_equal(res.strategy.session_state, SESSION_STATE_STATELESS);
	assert_int_equal(res.axis_source[AXIS_OUTPUT_MODE], STRATEGY_SOURCE_MATRIX);
	assert_int_equal(res.axis_source[AXIS_SESSION_STATE], STRATEGY_SOURCE_DEFAULT);
	assert_string_equal(res.decl->origin.file, "mat.yaml");
	assert_int_equal(res.decl->origin.line, 3);
	assert_string_equal(strategy_source_name(res.source), "matrix");
	/* a matrix row without a registry entry still resolves by name */
	assert_int_equal(strategy_resolve(cat, "matrix_only", NULL, &res), STRATEGY_SOURCE_MATRIX);
	assert_int_equal(res.strategy.event_channel, EVENT_CHANNEL_ACP);
	assert_int_equal(strategy_for(cat, "b").output_mode, OUTPUT_MODE_ARTIFACT);
	catalog_free(cat);
}

static void test_resolver_default_last(void **state)
{
	struct catalog *cat = resolver_catalog();
	struct strategy_resolved res;
	struct adapter_strategy s;
	int a;

	(void)state;
	memset(&res, 0x5a, sizeof(res));
	assert_int_equal(strategy_resolve(cat, "unknown-adapter", NULL, &res),
			 STRATEGY_SOURCE_DEFAULT);
	assert_null(res.decl);
	assert_strategy(&res.strategy, &strategy_default, "unknown-adapter");
	for (a = 0; a < _AXIS_MAX; a++)
		assert_int_equal(res.axis_source[a], STRATEGY_SOURCE_DEFAULT);
	assert_string_equal(strategy_source_name(res.source), "default");
	assert_string_equal(strategy_resume_capability(&res.strategy), "fallback-fresh");
	/* no catalogue at all */
	assert_int_equal(strategy_resolve(NULL, "claude", NULL, &res), STRATEGY_SOURCE_DEFAULT);
	s = strategy_for(NULL, NULL);
	assert_strategy(&s, &strategy_default, "(null)");
	catalog_free(cat);
}

/* Strategy is declared, never probed: with no PATH at all, loading and
 * resolving give the same answers (the API takes no PATH either). */
static void test_resolve_without_path(void **state)
{
	const char *old = getenv("PATH");
	char *saved = old ? xstrdup(old) : NULL;
	struct catalog *cat;
	struct adapter_strategy s;

	(void)state;
	assert_int_equal(unsetenv("PATH"), 0);
	cat = load_embedded();
	s = strategy_for(cat, "claude");
	assert_strategy(&s,
			&(struct adapter_strategy){RESUME_FLAG, DANGEROUS_MODE_CLI_FLAG,
						   EVENT_CHANNEL_STREAM_JSON, OUTPUT_MODE_GIT_DIFF,
						   SESSION_STATE_STATELESS},
			"claude");
	assert_int_equal(catalog_check(cat, NULL, NULL), 0);
	catalog_free(cat);
	assert_int_equal(setenv("PATH", "", 1), 0);
	cat = load_embedded();
	assert_int_equal(strategy_for(cat, "codex").resume, RESUME_SUBCOMMAND);
	catalog_free(cat);
	if (saved)
		assert_int_equal(setenv("PATH", saved, 1), 0);
	free(saved);
}

/* ---- broken input ---- */

struct broken {
	const char *file;
	enum catalog_kind kind;
	unsigned line, col;
	const char *msg; /* the exact message, or a part of it when partial */
	bool partial;
};

static const struct broken corpus[] = {
	{"matrix-unknown-value.yaml", CATALOG_KIND_MATRIX, 4, 13,
	 "'resume': unknown value 'sometimes' (expected one of: flag, flag-pair, subcommand, unsupported)",
	 false},
	{"matrix-duplicate-key.yaml", CATALOG_KIND_MATRIX, 6, 5, "duplicate key 'resume'", true},
	{"matrix-duplicate-adapter.yaml", CATALOG_KIND_MATRIX, 6, 3, "duplicate key 'claude'",
	 true},
	{"matrix-alias.yaml", CATALOG_KIND_MATRIX, 2, 11, "alias", true},
	{"matrix-wrong-type.yaml", CATALOG_KIND_MATRIX, 3, 13,
	 "'resume': expected a string, got a sequence", false},
	{"matrix-null-value.yaml", CATALOG_KIND_MATRIX, 3, 12, "'resume': expected a string", true},
	{"matrix-unknown-key.yaml", CATALOG_KIND_MATRIX, 6, 5,
	 "unknown key 'resume_flag' in strategy of 'claude' (expected one of: resume, dangerous_mode, event_channel, output_mode, session_state, note)",
	 false},
	{"matrix-missing-axis.yaml", CATALOG_KIND_MATRIX, 3, 5,
	 "strategy of 'aider': missing required key 'event_channel'", false},
	{"matrix-truncated.yaml", CATALOG_KIND_MATRIX, 6, 30, "end of stream", true},
	{"matrix-garbage.bin", CATALOG_KIND_MATRIX, 1, 8, "NUL", true},
	{"matrix-not-a-map.yaml", CATALOG_KIND_MATRIX, 2, 3, "'adapters': expected a mapping",
	 true},
	{"matrix-row-scalar.yaml", CATALOG_KIND_MATRIX, 2, 11,
	 "strategy of 'claude': expected a mapping", true},
	{"matrix-empty.yaml", CATALOG_KIND_MATRIX, 1, 1,
	 "strategy matrix: missing required key 'adapters'", false},
	{"matrix-top-level-key.yaml", CATALOG_KIND_MATRIX, 1, 1, "unknown key 'version'", true},
	{"matrix-tab-indent.yaml", CATALOG_KIND_MATRIX, 2, 1, "cannot start any token", true},
	{"registry-wrong-type.yaml", CATALOG_KIND_REGISTRY, 5, 14,
	 "'builtin': expected a boolean, got a string", false},
	{"registry-missing-binary.yaml", CATALOG_KIND_REGISTRY, 3, 5,
	 "registry entry 'claude': missing required key 'binary' (or 'builtin: true')", false},
	{"registry-builtin-and-binary.yaml", CATALOG_KIND_REGISTRY, 5, 13,
	 "registry entry 'mock': 'binary' cannot be combined with 'builtin: true'", false},
	{"registry-bad-name.yaml", CATALOG_KIND_REGISTRY, 2, 3,
	 "invalid adapter name 'Claude Code'", true},
	{"registry-inline-unknown-value.yaml", CATALOG_KIND_REGISTRY, 7, 23,
	 "'dangerous_mode': unknown value 'yolo' (expected one of: cli-flag, env-var, always-on, unsupported)",
	 false},
	{"registry-version-args-type.yaml", CATALOG_KIND_REGISTRY, 5, 19,
	 "'version_args': expected a list of strings", true},
	{"registry-empty-binary.yaml", CATALOG_KIND_REGISTRY, 4, 13, "'binary' must not be empty",
	 false},
};

static void test_broken_corpus(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(corpus); i++) {
		const struct broken *b = &corpus[i];
		struct catalog *cat = load_embedded();
		struct strvec path = STRVEC_INIT;
		struct diag d;
		int r;

		strvec_pushf(&path, "%s/tests/data/catalog/%s", srcdir(), b->file);
		diag_clear(&d);
		r = catalog_add_file(cat, b->kind, path.v[0], &d);
		if (r != -EINVAL)
			fail_msg("%s: returned %d, expected -EINVAL", b->file, r);
		assert_string_equal(d.file, path.v[0]);
		if (d.line != b->line || d.col != b->col)
			fail_msg("%s: error at %u:%u, expected %u:%u (%s)", b->file, d.line, d.col,
				 b->line, b->col, d.msg);
		if (b->partial ? !strstr(d.msg, b->msg) : strcmp(d.msg, b->msg) != 0)
			fail_msg("%s: message '%s', expected %s'%s'", b->file, d.msg,
				 b->partial ? "it to contain " : "", b->msg);
		/* the catalogue is unchanged by the failed file */
		assert_int_equal(cat->n_rows, 51);
		assert_int_equal(cat->n_entries, 51);
		assert_int_equal(strategy_for(cat, "claude").resume, RESUME_FLAG);
		assert_string_equal(catalog_find(cat, "claude")->binary, "claude");
		strvec_clear(&path);
		catalog_free(cat);
	}
}

static void test_ten_megabytes(void **state)
{
	struct tmpdir t = {.path = {0}, .files = STRVEC_INIT};
	struct catalog *cat = catalog_new();
	const size_t size = 10 * 1024 * 1024;
	char *big = xmalloc(size);
	const char *path;
	struct diag d;
	size_t i;

	(void)state;
	tmp_init(&t);
	memcpy(big, "adapters:\n", 10);
	for (i = 10; i < size; i++)
		big[i] = (i % 64 == 63) ? '\n' : '#';
	big[size - 1] = '\0';
	path = tmp_write(&t, "big.yaml", big);
	diag_clear(&d);
	assert_int_equal(catalog_add_file(cat, CATALOG_KIND_MATRIX, path, &d), -EFBIG);
	assert_string_equal(d.file, path);
	assert_int_equal(d.line, 1);
	assert_int_equal(d.col, 1);
	assert_non_null(strstr(d.msg, "larger than"));
	/* and from memory */
	diag_clear(&d);
	assert_int_equal(catalog_add_buf(cat, CATALOG_KIND_MATRIX, "mem.yaml", big, size - 1, &d),
			 -EFBIG);
	assert_string_equal(d.file, "mem.yaml");
	assert_true(d.line >= 1 && d.col >= 1);
	assert_int_equal(cat->n_rows, 0);
	free(big);
	catalog_free(cat);
	tmp_release(&t);
}

static void test_failed_file_not_half_merged(void **state)
{
	static const char text[] =
		"adapters:\n"
		"  claude: {resume: unsupported, dangerous_mode: unsupported, event_channel: none}\n"
		"  codex: {resume: flag, dangerous_mode: cli-flag}\n";
	struct catalog *cat = load_embedded();
	struct diag d;

	(void)state;
	assert_int_equal(
		catalog_add_buf(cat, CATALOG_KIND_MATRIX, "half.yaml", text, strlen(text), &d),
		-EINVAL);
	assert_int_equal(d.line, 3);
	assert_int_equal(strategy_for(cat, "claude").resume, RESUME_FLAG); /* not replaced */
	catalog_free(cat);
}

static void test_dirs(void **state)
{
	struct tmpdir t = {.path = {0}, .files = STRVEC_INIT};
	struct catalog *cat = catalog_new();
	const char *file;
	struct diag d;

	(void)state;
	tmp_init(&t);
	/* absent directories and NULL add nothing */
	assert_int_equal(catalog_add_dir(cat, NULL, &d), 0);
	assert_int_equal(catalog_add_dir(cat, "", &d), 0);
	assert_int_equal(catalog_add_dir(cat, "/nonexistent/bernstein/catalog", &d), 0);
	assert_int_equal(catalog_add_file(cat, CATALOG_KIND_MATRIX, "/nonexistent/x.yaml", &d),
			 -ENOENT);
	/* a directory with only one of the two files */
	tmp_mkdir(&t, "only-registry");
	tmp_write(&t, "only-registry/registry.yaml",
		  "adapters:\n  solo: {display_name: Solo, binary: solo, version_args: [-V]}\n");
	assert_int_equal(catalog_add_dir(cat, tmp_mkdir(&t, "only-registry"), &d), 0);
	assert_int_equal(cat->n_entries, 1);
	assert_int_equal(cat->n_rows, 0);
	assert_string_equal(catalog_find(cat, "solo")->version_args[0], "-V");
	assert_null(catalog_find(cat, "solo")->version_args[1]);
	/* a trailing slash is fine */
	{
		struct strvec p = STRVEC_INIT;

		strvec_pushf(&p, "%s/only-registry/", t.path);
		assert_int_equal(catalog_add_dir(cat, p.v[0], &d), 0);
		strvec_clear(&p);
	}
	/* a file where the directory should be is an error, not ignored */
	file = tmp_write(&t, "not-a-dir", "x");
	diag_clear(&d);
	assert_true(catalog_add_dir(cat, file, &d) < 0);
	assert_non_null(strstr(d.file, "not-a-dir/"));
	catalog_free(cat);
	tmp_release(&t);
}

static void test_kind_from_name(void **state)
{
	(void)state;
	assert_int_equal(catalog_kind_from_name("strategy-matrix.yaml"), CATALOG_KIND_MATRIX);
	assert_int_equal(catalog_kind_from_name("registry.yaml"), CATALOG_KIND_REGISTRY);
	assert_int_equal(catalog_kind_from_name("registry.yml"), _CATALOG_KIND_INVALID);
	assert_int_equal(catalog_kind_from_name(NULL), _CATALOG_KIND_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_embedded_files),
		cmocka_unit_test(test_embedded_registry_has_the_45),
		cmocka_unit_test(test_embedded_passes_conformance),
		cmocka_unit_test(test_corrected_rows),
		cmocka_unit_test(test_python_rows),
		cmocka_unit_test(test_registry_binaries),
		cmocka_unit_test(test_user_dir_replaces_row),
		cmocka_unit_test(test_repo_dir_beats_user_dir),
		cmocka_unit_test(test_new_adapter_without_row_fails),
		cmocka_unit_test(test_several_missing_sorted),
		cmocka_unit_test(test_check_message_too_long),
		cmocka_unit_test(test_resolver_inline_first),
		cmocka_unit_test(test_resolver_override_beats_registry_inline),
		cmocka_unit_test(test_resolver_matrix_second),
		cmocka_unit_test(test_resolver_default_last),
		cmocka_unit_test(test_resolve_without_path),
		cmocka_unit_test(test_broken_corpus),
		cmocka_unit_test(test_ten_megabytes),
		cmocka_unit_test(test_failed_file_not_half_merged),
		cmocka_unit_test(test_dirs),
		cmocka_unit_test(test_kind_from_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
