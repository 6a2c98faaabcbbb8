/* Evidence of an onboarding smoke run; see evidence.h. */
#include "onboard/evidence.h"

#include <stdlib.h>
#include <string.h>

#include "adapter/envpolicy.h"
#include "onboard/yemit.h"
#include "util/fsutil.h"
#include "util/xalloc.h"
#include "util/yaml.h"
#include "util/banned.h"

static const char *const bucket_names[_DURATION_BUCKET_MAX] = {
	[DURATION_UNDER_1S] = "under-1s",
	[DURATION_1S_TO_10S] = "1s-10s",
	[DURATION_10S_TO_60S] = "10s-60s",
	[DURATION_60S_OR_MORE] = "60s-or-more",
};

enum duration_bucket duration_bucket_of(uint64_t ms)
{
	if (ms < 1000)
		return DURATION_UNDER_1S;
	if (ms < 10000)
		return DURATION_1S_TO_10S;
	if (ms < 60000)
		return DURATION_10S_TO_60S;
	return DURATION_60S_OR_MORE;
}

const char *duration_bucket_to_string(enum duration_bucket b)
{
	return b >= 0 && b < _DURATION_BUCKET_MAX ? bucket_names[b] : NULL;
}

enum duration_bucket duration_bucket_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _DURATION_BUCKET_MAX; i++)
		if (strcmp(bucket_names[i], s) == 0)
			return (enum duration_bucket)i;
	return _DURATION_BUCKET_INVALID;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

struct evidence *evidence_new(const char *const *argv, size_t argc, const char *const *env,
			      size_t n_env, int exit_code, uint64_t duration_ms)
{
	struct evidence *e = xcalloc(1, sizeof(*e));
	const char **av = NULL, **names = NULL;
	size_t i, n = 0;

	arena_init(&e->arena, 4096);
	av = arena_alloc(&e->arena, st_mult(argc + 1, sizeof(*av)));
	for (i = 0; i < argc; i++)
		av[i] = arena_strdup(&e->arena, argv[i]);
	e->argv = (struct transcript_strv){.v = av, .n = argc};
	names = arena_alloc(&e->arena, st_mult(n_env + 1, sizeof(*names)));
	for (i = 0; i < n_env; i++) {
		const char *eq = strchr(env[i], '=');

		names[n++] = arena_strndup(&e->arena, env[i],
					   eq ? (size_t)(eq - env[i]) : strlen(env[i]));
	}
	qsort(names, n, sizeof(*names), cmp_str);
	/* unique (an environment built by us has no duplicates; be safe) */
	for (i = 1; i < n;) {
		if (strcmp(names[i - 1], names[i]) == 0) {
			memmove(&names[i], &names[i + 1], (n - i - 1) * sizeof(*names));
			n--;
		} else {
			i++;
		}
	}
	names[n] = NULL;
	e->env_names = (struct transcript_strv){.v = names, .n = n};
	e->exit_code = exit_code;
	e->duration = duration_bucket_of(duration_ms);
	return e;
}

struct evidence *evidence_free(struct evidence *e)
{
	if (!e)
		return NULL;
	arena_release(&e->arena);
	free(e);
	return NULL;
}

static const struct yfield evidence_fields[] = {
	{"argv", YT_STRLIST, YF_REQUIRED, NULL, NULL},
	{"env_names", YT_STRLIST, YF_REQUIRED, NULL, NULL},
	{"exit_code", YT_INT, YF_REQUIRED, NULL, NULL},
	{"duration_bucket", YT_STR, YF_REQUIRED, NULL, NULL},
	{NULL, 0, 0, NULL, NULL},
};

static struct transcript_strv strlist(struct arena *a, const struct ynode *seq)
{
	const char **out = arena_alloc(a, st_mult(seq->n + 1, sizeof(*out)));
	size_t i;

	for (i = 0; i < seq->n; i++)
		out[i] = arena_strdup(a, seq->items[i]->str);
	out[seq->n] = NULL;
	return (struct transcript_strv){.v = out, .n = seq->n};
}

int evidence_load_buf(const char *source, const char *buf, size_t len, struct evidence **ret,
		      struct diag *reterr)
{
	const struct yaml_limits lim = {.max_bytes = EVIDENCE_MAX_BYTES};
	struct evidence *e = NULL;
	struct ydoc *doc = NULL;
	const struct ynode *root, *v;
	int64_t code;
	size_t i;
	int r;

	r = yaml_load_buf(source, buf, len, &lim, &doc, reterr);
	if (r < 0)
		goto out;
	root = doc->root;
	r = yaml_check_map(doc, root, evidence_fields, "evidence", reterr);
	if (r < 0)
		goto out;
	e = xcalloc(1, sizeof(*e));
	arena_init(&e->arena, 4096);

	v = ynode_get(root, "argv");
	if (v->n == 0) {
		yaml_diag(doc, v, reterr, "argv: must not be empty");
		r = -EINVAL;
		goto out;
	}
	e->argv = strlist(&e->arena, v);

	v = ynode_get(root, "env_names");
	for (i = 0; i < v->n; i++) {
		if (!envpolicy_name_valid(v->items[i]->str)) {
			yaml_diag(doc, v->items[i], reterr,
				  "env_names[%zu]: invalid environment variable name", i);
			r = -EINVAL;
			goto out;
		}
		if (i > 0 && strcmp(v->items[i - 1]->str, v->items[i]->str) >= 0) {
			yaml_diag(doc, v->items[i], reterr,
				  "env_names[%zu]: the names must be sorted and unique", i);
			r = -EINVAL;
			goto out;
		}
	}
	e->env_names = strlist(&e->arena, v);

	r = yaml_get_int(doc, root, "exit_code", 0, 255, &code, reterr);
	if (r < 0)
		goto out;
	e->exit_code = (int)code;

	v = ynode_get(root, "duration_bucket");
	e->duration = duration_bucket_from_string(v->str);
	if (e->duration < 0) {
		yaml_diag(
			doc, v, reterr,
			"duration_bucket: unknown bucket (expected one of: under-1s, 1s-10s, 10s-60s, 60s-or-more)");
		r = -EINVAL;
		goto out;
	}
	*ret = e;
	e = NULL;
out:
	evidence_free(e);
	ydoc_free(doc);
	return r;
}

int evidence_load_file(const char *path, struct evidence **ret, struct diag *reterr)
{
	char *text = NULL;
	size_t len;
	int r;

	r = read_file_capped(path, EVIDENCE_MAX_BYTES, &text, &len);
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot read the evidence: %s",
			 r == -EFBIG ? "larger than 1 MiB" : file_strerror(r));
		return r;
	}
	r = evidence_load_buf(path, text, len, ret, reterr);
	free(text);
	return r;
}

int evidence_emit(const struct evidence *e, struct sbuf *out)
{
	size_t start = out->len;
	int r;

	r = sbuf_adds(out, "# Onboarding evidence: the smoke run of bernstein onboard record\n"
			   "# (docs/onboarding.md). No output, no values, no user.\n");
	if (r >= 0)
		r = yemit_list(out, 0, "argv", e->argv.v, e->argv.n);
	if (r >= 0)
		r = yemit_list(out, 0, "env_names", e->env_names.v, e->env_names.n);
	if (r >= 0)
		r = sbuf_addf(out, "exit_code: %d\nduration_bucket: \"%s\"\n", e->exit_code,
			      duration_bucket_to_string(e->duration));
	if (r < 0)
		sbuf_setlen(out, start);
	return r < 0 ? r : 0;
}
