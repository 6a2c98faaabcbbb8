/* Goal mode: the planner's prompt and the policy of a generated plan
 * (orch/goal.h, docs/goal-mode.md). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "orch/config.h"
#include "orch/goal.h"
#include "util/fsutil.h"
#include "util/xalloc.h"
#include "util/yaml.h"

static const struct {
	const char *name;
	unsigned bit;
} allow_names[] = {
	{"gates", GOAL_ALLOW_GATES},	 {"setup", GOAL_ALLOW_SETUP},
	{"sandbox", GOAL_ALLOW_SANDBOX}, {"endpoints", GOAL_ALLOW_ENDPOINTS},
	{"budget", GOAL_ALLOW_BUDGET},
};

#define N_ALLOW (sizeof(allow_names) / sizeof(allow_names[0]))

int goal_allow_parse(const char *list, unsigned *ret, struct diag *reterr)
{
	unsigned bits = 0;
	const char *p = list;

	if (!list || !*list) {
		diag_set(reterr, NULL, 0, 0,
			 "empty --allow (known: gates, setup, sandbox, endpoints, budget)");
		return -EINVAL;
	}
	while (*p) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < N_ALLOW; i++)
			if (strlen(allow_names[i].name) == n &&
			    strncmp(p, allow_names[i].name, n) == 0)
				break;
		if (i == N_ALLOW) {
			diag_set(
				reterr, NULL, 0, 0,
				"unknown class '%.*s' (known: gates, setup, sandbox, endpoints, budget)",
				(int)(n > 64 ? 64 : n), p);
			return -EINVAL;
		}
		bits |= allow_names[i].bit;
		p += n;
		if (*p == ',')
			p++;
	}
	*ret |= bits;
	return 0;
}

const char *goal_allow_format(unsigned allow, char *buf, size_t size)
{
	size_t i, off = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	for (i = 0; i < N_ALLOW; i++) {
		int k;

		if (!(allow & allow_names[i].bit))
			continue;
		k = snprintf(buf + off, size - off, "%s%s", off ? "," : "", allow_names[i].name);
		if (k < 0 || (size_t)k >= size - off)
			break;
		off += (size_t)k;
	}
	if (!buf[0])
		(void)snprintf(buf, size, "none");
	return buf;
}

/* ---- the policy ---- */

struct walk {
	const char *name;
	const struct goal_policy *pol;
	struct diag_list *is;
	struct strvec *shown;
	size_t n;
};

static void refuse(struct walk *w, const struct ynode *at, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void refuse(struct walk *w, const struct ynode *at, const char *path, const char *fmt, ...)
{
	struct diag d;
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag_set(&d, w->name, at->line, at->col, "field '%s': %s", path, msg);
	if (w->is)
		diag_list_add(w->is, &d);
	w->n++;
}

static bool allowed(const struct walk *w, unsigned bit)
{
	return (w->pol->allow & bit) != 0;
}

static bool adapter_usable(const struct walk *w, const char *name)
{
	size_t i;

	if (strcmp(name, "auto") == 0)
		return true;
	for (i = 0; w->pol->adapters && w->pol->adapters[i]; i++)
		if (strcmp(w->pol->adapters[i], name) == 0)
			return true;
	return false;
}

/* "PATH: VALUE" with each control byte of the value as \xNN: what the user
 * confirms is what runs, and no escape sequence or carriage return in it
 * can hide a part of it on a terminal. */
static void show(struct walk *w, const char *path, const struct ynode *v)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	const unsigned char *c;

	if (!w->shown || !v || v->kind != YNODE_SCALAR)
		return;
	(void)sbuf_addf(&sb, "%s: ", path);
	for (c = (const unsigned char *)v->str; *c; c++) {
		if (*c < 0x20 || *c == 0x7f)
			(void)sbuf_addf(&sb, "\\x%02x", *c);
		else
			(void)sbuf_add(&sb, c, 1);
	}
	strvec_push(w->shown, sb.buf);
	sbuf_release(&sb);
}

static void check_adapter(struct walk *w, const struct ynode *v, const char *path)
{
	if (!v || v->kind != YNODE_SCALAR || ynode_is_null(v))
		return;
	if (!adapter_usable(w, v->str))
		refuse(w, v, path,
		       "adapter '%s' is not usable here (a generated plan may only name the usable adapters it was given)",
		       v->str);
}

static void show_given(struct walk *w, const char *path)
{
	if (w->shown)
		strvec_pushf(w->shown, "%s: (given)", path);
}

/* One governed key: k its key node, v its value, path its field name. */
typedef void key_fn(struct walk *w, const struct ynode *k, const struct ynode *v, const char *path);

static void key_never(struct walk *w, const struct ynode *k, const struct ynode *v,
		      const char *path)
{
	(void)v;
	refuse(w, k, path,
	       "%s is never taken from a generated plan (configure it in bernstein.yaml)", k->str);
}

static void key_gates(struct walk *w, const struct ynode *k, const struct ynode *v,
		      const char *path)
{
	char sub[320];
	size_t j;

	if (!allowed(w, GOAL_ALLOW_GATES)) {
		refuse(w, k, path,
		       "%s run commands on the host: refused in a generated plan (the user may allow them with --allow gates)",
		       "gates");
		return;
	}
	for (j = 0; v->kind == YNODE_SEQ && j < v->n; j++) {
		(void)snprintf(sub, sizeof(sub), "%s[%zu].run", path, j);
		show(w, sub, ynode_get(v->items[j], "run"));
	}
}

static void key_setup(struct walk *w, const struct ynode *k, const struct ynode *v,
		      const char *path)
{
	char sub[320];
	size_t j, q;

	if (!allowed(w, GOAL_ALLOW_SETUP)) {
		refuse(w, k, path,
		       "%s runs a command and copies files on the host: refused in a generated plan (the user may allow it with --allow setup)",
		       "worktree_setup");
		return;
	}
	for (j = 0; v->kind == YNODE_MAP && j < v->n; j++) {
		(void)snprintf(sub, sizeof(sub), "%s.%s", path, v->keys[j]->str);
		if (v->items[j]->kind == YNODE_SCALAR)
			show(w, sub, v->items[j]);
		for (q = 0; v->items[j]->kind == YNODE_SEQ && q < v->items[j]->n; q++)
			show(w, sub, v->items[j]->items[q]);
	}
}

static void key_confine(struct walk *w, const struct ynode *k, const struct ynode *v,
			const char *path)
{
	bool weak = strcmp(k->str, "limits") == 0;

	if (v->kind == YNODE_SCALAR && strcmp(k->str, "sandbox") == 0)
		weak = strcmp(v->str, "none") == 0 || strcmp(v->str, "auto") == 0;
	else if (v->kind == YNODE_SCALAR && strcmp(k->str, "network") == 0)
		weak = strcmp(v->str, "full") == 0;
	else if (strcmp(k->str, "executor") == 0) /* off this host, unsandboxed (executors.md) */
		weak = v->kind != YNODE_SCALAR || strcmp(v->str, "local") != 0;
	if (!weak)
		return;
	if (!allowed(w, GOAL_ALLOW_SANDBOX))
		refuse(w, v, path,
		       "%s would weaken a task's confinement: refused in a generated plan (the user may allow it with --allow sandbox)",
		       k->str);
	else if (v->kind == YNODE_SCALAR)
		show(w, path, v);
	else
		show_given(w, path);
}

static void key_endpoints(struct walk *w, const struct ynode *k, const struct ynode *v,
			  const char *path)
{
	char sub[320];
	size_t j;

	if (!allowed(w, GOAL_ALLOW_ENDPOINTS)) {
		refuse(w, k, path,
		       "%s send the agents' traffic and keys elsewhere: refused in a generated plan (the user may allow them with --allow endpoints)",
		       "endpoints");
		return;
	}
	for (j = 0; v->kind == YNODE_MAP && j < v->n; j++) {
		(void)snprintf(sub, sizeof(sub), "%s.%s.base_url", path, v->keys[j]->str);
		show(w, sub, ynode_get(v->items[j], "base_url"));
	}
}

static void key_sampling(struct walk *w, const struct ynode *k, const struct ynode *v,
			 const char *path)
{
	static const char *const ep_keys[] = {"base_url", "api_key_env"};
	char sub[320];
	size_t j;

	(void)k;
	for (j = 0; j < 2; j++) {
		const struct ynode *e = ynode_get(v, ep_keys[j]);

		if (!e)
			continue;
		(void)snprintf(sub, sizeof(sub), "%s.%s", path, ep_keys[j]);
		if (!allowed(w, GOAL_ALLOW_ENDPOINTS))
			refuse(w, e, sub,
			       "%s points an agent elsewhere: refused in a generated plan (the user may allow it with --allow endpoints)",
			       ep_keys[j]);
		else
			show(w, sub, e);
	}
}

static void key_budget(struct walk *w, const struct ynode *k, const struct ynode *v,
		       const char *path)
{
	(void)v;
	if (!allowed(w, GOAL_ALLOW_BUDGET))
		refuse(w, k, path,
		       "%s sets what the run may spend: refused in a generated plan (the user may allow it with --allow budget)",
		       "a budget");
	else
		show_given(w, path);
}

static void key_adapter(struct walk *w, const struct ynode *k, const struct ynode *v,
			const char *path)
{
	(void)k;
	check_adapter(w, v, path);
}

static void key_fallback(struct walk *w, const struct ynode *k, const struct ynode *v,
			 const char *path)
{
	char sub[320];
	size_t j;

	(void)k;
	for (j = 0; v->kind == YNODE_SEQ && j < v->n; j++) {
		(void)snprintf(sub, sizeof(sub), "%s[%zu]", path, j);
		check_adapter(w, v->items[j], sub);
	}
}

/* Whether a path a task names stays within the repository: relative, no
 * ".." component. */
static bool path_within(const char *p)
{
	const char *c = p;

	if (!*p || *p == '/' || *p == '~')
		return false;
	while (*c) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.')
			return false;
		c += n;
		while (*c == '/')
			c++;
	}
	return true;
}

/* context_files:, files:, attachments: (a list or one path): within the
 * repository, whatever reads them later. */
static void key_paths(struct walk *w, const struct ynode *k, const struct ynode *v,
		      const char *path)
{
	char sub[320];
	size_t j;

	(void)k;
	if (v->kind == YNODE_SCALAR && !ynode_is_null(v) && !path_within(v->str)) {
		refuse(w, v, path,
		       "'%s' is outside the repository: a generated plan names files within it only",
		       v->str);
		return;
	}
	for (j = 0; v->kind == YNODE_SEQ && j < v->n; j++) {
		const struct ynode *e = v->items[j];

		(void)snprintf(sub, sizeof(sub), "%s[%zu]", path, j);
		if (e->kind == YNODE_SCALAR && !path_within(e->str))
			refuse(w, e, sub,
			       "'%s' is outside the repository: a generated plan names files within it only",
			       e->str);
	}
}

/* context_files: within the repository, and files git tracks: their text
 * goes into the agents' prompts, so an ignored file (.env) never does. */
static void key_context(struct walk *w, const struct ynode *k, const struct ynode *v,
			const char *path)
{
	char sub[320];
	size_t j;

	key_paths(w, k, v, path); /* outside the repository: refused there */
	if (!w->pol->tracked)
		return;
	if (v->kind == YNODE_SCALAR && !ynode_is_null(v) && path_within(v->str) &&
	    !w->pol->tracked(w->pol->tracked_ctx, v->str))
		refuse(w, v, path,
		       "'%s' is not a file git tracks: a generated plan gives the agents only files they could read in their own tree",
		       v->str);
	for (j = 0; v->kind == YNODE_SEQ && j < v->n; j++) {
		const struct ynode *e = v->items[j];

		(void)snprintf(sub, sizeof(sub), "%s[%zu]", path, j);
		if (e->kind == YNODE_SCALAR && path_within(e->str) &&
		    !w->pol->tracked(w->pol->tracked_ctx, e->str))
			refuse(w, e, sub,
			       "'%s' is not a file git tracks: a generated plan gives the agents only files they could read in their own tree",
			       e->str);
	}
}

static const struct {
	const char *key;
	key_fn *fn;
} governed[] = {
	{"hooks", key_never},		{"mcp_servers", key_never},    {"gates", key_gates},
	{"notify", key_never},		{"worktree_setup", key_setup}, {"sandbox", key_confine},
	{"network", key_confine},	{"limits", key_confine},       {"endpoints", key_endpoints},
	{"sampling", key_sampling},	{"mcp_config", key_sampling},  {"budget", key_budget},
	{"adapter", key_adapter},	{"cli", key_adapter},	       {"fallback", key_fallback},
	{"context_files", key_context}, {"files", key_paths},	       {"attachments", key_paths},
	{"executor", key_confine},
};

/* The governed keys of a plan's top level or of a task/step (base: its
 * field path, "" for the top level). */
static void check_map(struct walk *w, const struct ynode *m, const char *base)
{
	char path[256];
	size_t i, g;

	if (!m || m->kind != YNODE_MAP)
		return;
	for (i = 0; i < m->n; i++) {
		for (g = 0; g < sizeof(governed) / sizeof(governed[0]); g++)
			if (strcmp(m->keys[i]->str, governed[g].key) == 0)
				break;
		if (g == sizeof(governed) / sizeof(governed[0]))
			continue;
		(void)snprintf(path, sizeof(path), "%s%s%s", base, *base ? "." : "",
			       m->keys[i]->str);
		governed[g].fn(w, m->keys[i], m->items[i], path);
	}
}

size_t goal_policy_check(const char *name, const char *buf, size_t len,
			 const struct goal_policy *pol, struct diag_list *is, struct strvec *shown)
{
	struct walk w = {.name = name, .pol = pol, .is = is, .shown = shown};
	struct ydoc *doc = NULL;
	const struct ynode *tasks, *stages;
	char path[128];
	size_t i, j;

	if (yaml_load_buf(name, buf, len, NULL, &doc, NULL) < 0)
		return 0;
	check_map(&w, doc->root, "");
	tasks = ynode_get(doc->root, "tasks");
	if (tasks && tasks->kind == YNODE_SEQ)
		for (i = 0; i < tasks->n; i++) {
			(void)snprintf(path, sizeof(path), "tasks[%zu]", i);
			check_map(&w, tasks->items[i], path);
		}
	stages = ynode_get(doc->root, "stages");
	if (stages && stages->kind == YNODE_SEQ)
		for (i = 0; i < stages->n; i++) {
			const struct ynode *steps = ynode_get(stages->items[i], "steps");

			if (!steps || steps->kind != YNODE_SEQ)
				continue;
			for (j = 0; j < steps->n; j++) {
				(void)snprintf(path, sizeof(path), "stages[%zu].steps[%zu]", i, j);
				check_map(&w, steps->items[j], path);
			}
		}
	ydoc_free(doc);
	if (is)
		diag_list_sort(is);
	return w.n;
}

/* ---- the repository summary ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#define LANG_EXTS 32

/* What the walk of the view gathers: the first paths, how many more, and
 * the files of each language (by extension). */
struct tree_walk {
	const char *top;
	struct strvec files;
	size_t more;
	size_t lang_files[LANG_EXTS]; /* by lang_slot() */
};

/* Languages by file extension, for the planner's summary. */
static const struct {
	const char *ext;
	const char *lang;
} lang_exts[] = {
	{"c", "C"},
	{"h", "C"},
	{"cc", "C++"},
	{"cpp", "C++"},
	{"cxx", "C++"},
	{"hpp", "C++"},
	{"py", "Python"},
	{"js", "JavaScript"},
	{"mjs", "JavaScript"},
	{"cjs", "JavaScript"},
	{"jsx", "JavaScript"},
	{"ts", "TypeScript"},
	{"tsx", "TypeScript"},
	{"go", "Go"},
	{"rs", "Rust"},
	{"java", "Java"},
	{"kt", "Kotlin"},
	{"rb", "Ruby"},
	{"php", "PHP"},
	{"cs", "C#"},
	{"swift", "Swift"},
	{"sh", "Shell"},
	{"scala", "Scala"},
	{"ex", "Elixir"},
	{"exs", "Elixir"},
	{"hs", "Haskell"},
	{"lua", "Lua"},
	{"zig", "Zig"},
	{"m", "Objective-C"},
	{"dart", "Dart"},
	{"ml", "OCaml"},
	{"sql", "SQL"},
};

_Static_assert(ARRAY_SIZE(lang_exts) == LANG_EXTS, "a count per lang_exts entry");

/* The first entry of lang_exts with i's language: where its files count. */
static size_t lang_slot(size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (strcmp(lang_exts[j].lang, lang_exts[i].lang) == 0)
			return j;
	return i;
}

static void count_language(struct tree_walk *w, const char *name)
{
	const char *dot = strrchr(name, '.');
	size_t i;

	if (!dot || dot == name)
		return;
	for (i = 0; i < ARRAY_SIZE(lang_exts); i++)
		if (strcmp(dot + 1, lang_exts[i].ext) == 0) {
			w->lang_files[lang_slot(i)]++;
			return;
		}
}

static void walk_dir(struct tree_walk *w, const char *rel, unsigned depth)
{
	char path[PATH_MAX];
	struct strvec names = STRVEC_INIT;
	DIR *d;
	struct dirent *de;
	size_t i;

	(void)snprintf(path, sizeof(path), "%s%s%s", w->top, *rel ? "/" : "", rel);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, ".git") != 0 && strcmp(de->d_name, ".bernstein") != 0)
			strvec_push(&names, de->d_name);
	(void)closedir(d);
	if (names.nr > 1)
		qsort(names.v, names.nr, sizeof(char *), cmp_str);
	for (i = 0; i < names.nr; i++) {
		char rp[PATH_MAX], full[PATH_MAX];
		struct stat st;

		if ((size_t)snprintf(rp, sizeof(rp), "%s%s%s", rel, *rel ? "/" : "", names.v[i]) >=
			    sizeof(rp) ||
		    (size_t)snprintf(full, sizeof(full), "%s/%s", w->top, rp) >= sizeof(full))
			continue;
		if (lstat(full, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth < 12)
				walk_dir(w, rp, depth + 1);
			continue;
		}
		if (S_ISREG(st.st_mode))
			count_language(w, names.v[i]);
		if (w->files.nr < GOAL_SUMMARY_FILES)
			strvec_push(&w->files, rp);
		else
			w->more++;
	}
	strvec_clear(&names);
}

/* "Languages (files): C 120, Shell 14", the most files first. */
static int put_languages(const struct tree_walk *w, struct sbuf *out)
{
	bool done[LANG_EXTS] = {false};
	size_t i, shown = 0;
	int r = 0;

	for (;;) {
		size_t best = SIZE_MAX;

		for (i = 0; i < LANG_EXTS; i++)
			if (!done[i] && w->lang_files[i] &&
			    (best == SIZE_MAX || w->lang_files[i] > w->lang_files[best]))
				best = i;
		if (best == SIZE_MAX)
			break;
		done[best] = true;
		r |= sbuf_addf(out, "%s%s %zu",
			       shown++ ? ", " : "\nLanguages (files): ", lang_exts[best].lang,
			       w->lang_files[best]);
	}
	if (shown)
		r |= sbuf_add(out, "\n", 1);
	return r;
}

/* A regular file at the top of the view (a symlink is not followed: it could
 * point anywhere on the host), its text capped at 256 KiB; NULL if none. */
static char *top_file(const char *top, const char *name)
{
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", top, name) >= sizeof(path) ||
	    lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    read_file_capped(path, (size_t)256 << 10, &text, &len) < 0)
		return NULL;
	return text;
}

static bool has_top_file(const char *top, const char *name)
{
	char *t = top_file(top, name);

	free(t);
	return t != NULL;
}

/* A Makefile rule "target:" at the start of a line. */
static bool make_has_target(const char *text, const char *target)
{
	size_t n = strlen(target);
	const char *p;

	for (p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, target, n) == 0 && p[n] == ':' && p[n + 1] != '=')
			return true;
	return false;
}

/* package.json's scripts.test, unless it is npm's placeholder. */
static bool npm_has_test(const char *text)
{
	const char *k = strstr(text, "\"scripts\"");
	const char *t = k ? strstr(k, "\"test\"") : NULL;

	return t && !strstr(t, "no test specified");
}

static bool has_cmd(const struct strvec *cmds, const char *cmd)
{
	size_t i;

	for (i = 0; i < cmds->nr; i++)
		if (strcmp(cmds->v[i], cmd) == 0)
			return true;
	return false;
}

static void put_makefile_tests(const char *top, struct strvec *cmds)
{
	static const char *const names[] = {"GNUmakefile", "Makefile", "makefile"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		char *t = top_file(top, names[i]);

		if (!t)
			continue;
		if (make_has_target(t, "test"))
			strvec_push(cmds, "make test");
		else if (make_has_target(t, "check"))
			strvec_push(cmds, "make check");
		free(t);
		return;
	}
}

/* The test commands the files at the top of the view suggest. */
static void infer_tests(const char *top, struct strvec *cmds)
{
	static const struct {
		const char *file;
		const char *needle; /* in its text; NULL: the file is enough */
		const char *cmd;
	} marks[] = {
		{"Cargo.toml", NULL, "cargo test"},
		{"go.mod", NULL, "go test ./..."},
		{"pytest.ini", NULL, "pytest"},
		{"pyproject.toml", "pytest", "pytest"},
		{"tox.ini", NULL, "tox"},
		{"meson.build", NULL, "meson test -C build"},
		{"CMakeLists.txt", "enable_testing", "ctest --test-dir build"},
		{"pom.xml", NULL, "mvn test"},
		{"build.gradle", NULL, "gradle test"},
		{"build.gradle.kts", NULL, "gradle test"},
		{"mix.exs", NULL, "mix test"},
		{"Rakefile", NULL, "rake test"},
	};
	char *t;
	size_t i;

	put_makefile_tests(top, cmds);
	t = top_file(top, "package.json");
	if (t && npm_has_test(t))
		strvec_push(cmds, "npm test");
	free(t);
	for (i = 0; i < ARRAY_SIZE(marks); i++) {
		bool hit;

		if (marks[i].needle) {
			t = top_file(top, marks[i].file);
			hit = t && strstr(t, marks[i].needle);
			free(t);
		} else {
			hit = has_top_file(top, marks[i].file);
		}
		if (hit && !has_cmd(cmds, marks[i].cmd))
			strvec_push(cmds, marks[i].cmd);
	}
}

static int put_heads(const char *dir, struct sbuf *out)
{
	static const char *const heads[] = {"README.md", "AGENTS.md", "CLAUDE.md"};
	size_t i;
	int r = 0;

	for (i = 0; i < ARRAY_SIZE(heads); i++) {
		char *text = top_file(dir, heads[i]);
		size_t len;

		if (!text)
			continue;
		len = strlen(text);
		r |= sbuf_addf(out, "\nThe head of %s%s:\n", heads[i],
			       len > GOAL_SUMMARY_HEAD ? " (cut)" : "");
		r |= sbuf_add(out, text, len > GOAL_SUMMARY_HEAD ? GOAL_SUMMARY_HEAD : len);
		r |= sbuf_add(out, "\n", 1);
		free(text);
	}
	return r;
}

int goal_repo_summary(const char *dir, struct sbuf *out)
{
	struct tree_walk w = {.top = dir, .files = STRVEC_INIT};
	struct strvec tests = STRVEC_INIT;
	size_t i;
	int r = 0;

	walk_dir(&w, "", 0);
	r |= sbuf_addf(out, "Files of the repository (%zu%s):\n", w.files.nr + w.more,
		       w.more ? ", the first ones listed" : "");
	for (i = 0; i < w.files.nr; i++)
		r |= sbuf_addf(out, "  %s\n", w.files.v[i]);
	if (w.more)
		r |= sbuf_addf(out, "  ... and %zu more\n", w.more);
	r |= put_languages(&w, out);
	infer_tests(dir, &tests);
	for (i = 0; i < tests.nr; i++)
		r |= sbuf_addf(out, "%s%s",
			       i ? ", " : "Test commands (inferred from its files): ", tests.v[i]);
	if (tests.nr)
		r |= sbuf_add(out, "\n", 1);
	r |= put_heads(dir, out);
	strvec_clear(&w.files);
	strvec_clear(&tests);
	return r < 0 ? -ENOBUFS : 0;
}

/* ---- the prompt ---- */

static const char schema_text[] =
	"The plan file (YAML; bernstein's docs/plans.md, condensed):\n"
	"  name: STRING                      required\n"
	"  description: STRING               optional: the goal in a sentence\n"
	"  tasks:                            required, a non-empty list; each task:\n"
	"    - title: STRING                 required, unique\n"
	"      id: [a-z0-9][a-z0-9-]*        optional (default: a slug of the title)\n"
	"      prompt: STRING                required: what the agent is asked, self-contained\n"
	"      role: ROLE                    optional (default backend)\n"
	"      depends_on: [ID or TITLE]     optional: tasks that must be done first\n"
	"      adapter: ADAPTER              optional: one of the usable adapters above\n"
	"      model: STRING                 optional\n"
	"      effort: low|medium|normal|high|max   optional\n"
	"      requires: [capability:...]    optional routing requirements\n"
	"      timeout: SECONDS              optional\n"
	"      artifact: PATH                optional: the one file the task must produce\n"
	"                                    (relative to the repository, no '..')\n"
	"\n"
	"Example:\n"
	"  name: add-greeting\n"
	"  description: add a greeting and document it\n"
	"  tasks:\n"
	"    - title: write greeting\n"
	"      id: greet\n"
	"      prompt: \"Create hello.txt containing 'hello'.\"\n"
	"    - title: document greeting\n"
	"      role: docs\n"
	"      depends_on: [greet]\n"
	"      prompt: \"Mention hello.txt in README.md.\"\n";

static const char policy_text[] =
	"The plan may only contain tasks. Do not write gates, hooks, worktree_setup,\n"
	"sandbox or network settings, limits, an executor, endpoints, sampling base_url\n"
	"or api_key_env, budget or mcp servers: they are refused, and the repository's\n"
	"own configuration already supplies what is needed.\n";

int goal_prompt_build(const struct goal_prompt *gp, struct sbuf *out)
{
	size_t i;
	int r = 0;

	if (gp->resumed && gp->problems) {
		r |= sbuf_addf(
			out,
			"The plan you wrote in %s has these problems:\n%s\n"
			"Fix every one of them and write the whole corrected plan to %s again.\n",
			gp->plan_file, gp->problems, gp->plan_file);
		return r < 0 ? -ENOBUFS : 0;
	}
	r |= sbuf_addf(
		out,
		"You are the planner of bernstein, an orchestrator of coding agents. Do not\n"
		"change the repository: split the goal below into tasks that other agents\n"
		"will carry out, and write the plan as a YAML file named %s at the top\n"
		"of your working directory. Write only that file; then stop.\n\n",
		gp->plan_file);
	r |= sbuf_addf(out, "The goal:\n%s\n\n", gp->goal);
	r |= sbuf_addf(out, "%s\n", gp->summary ? gp->summary : "");
	if (gp->adapter_caps && gp->adapters && gp->adapters[0]) {
		r |= sbuf_adds(
			out,
			"The usable adapters (agents) a task may name, each with the capabilities it declares\n"
			"(a task's requires: [capability:NAME] routes only to an adapter that has NAME):\n");
		for (i = 0; gp->adapters[i]; i++)
			r |= sbuf_addf(out, "  %s: %s\n", gp->adapters[i], gp->adapter_caps[i]);
		r |= sbuf_adds(out, "Roles:");
	} else {
		r |= sbuf_add(out, "The usable adapters (agents) a task may name:", 45);
		for (i = 0; gp->adapters && gp->adapters[i]; i++)
			r |= sbuf_addf(out, "%s%s", i ? ", " : " ", gp->adapters[i]);
		r |= sbuf_addf(out, "%s\nRoles:", gp->adapters && gp->adapters[0] ? "" : " (none)");
	}
	for (i = 0; orch_roles[i]; i++)
		r |= sbuf_addf(out, "%s%s", i ? ", " : " ", orch_roles[i]);
	r |= sbuf_addf(out, "\n\n%s\n%s", schema_text, policy_text);
	if (gp->problems)
		r |= sbuf_addf(
			out, "\nYour previous plan had these problems; fix every one of them:\n%s",
			gp->problems);
	return r < 0 ? -ENOBUFS : 0;
}
