/* Deterministic held-out cases; see heldout.h. */
#include "onboard/heldout.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onboard/yemit.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* The prompt variants: PROMPT is the smoke prompt, N the case number. Never
 * change one (the derivation of every transcript would change); add a
 * HELDOUT_DOMAIN version instead. */
struct variant {
	const char *name;
	const char *before; /* then PROMPT */
	const char *middle; /* then N */
	const char *after;
};

static const struct variant variants[HELDOUT_VARIANTS] = {
	{"prefixed", "held-out case ", NULL, NULL},
	{"multi-line", "", "\n\n(held-out case ", ": answer in one line)"},
	{"quotes", "", " (held-out case ", "; \"double\" and 'single' quotes)"},
	{"unicode", "", " (held-out case ",
	 ": na\xc3\xafve caf\xc3\xa9, \xe6\x97\xa5\xe6\x9c\xac, \xe2\x9c\x93)"},
	{"padded", "  ", "  (held-out case ", ")  "},
	{"shell-metacharacters", "", "; held-out case ", ": $HOME `true` * && | ; not for a shell"},
	{"tab", "", "\t(held-out case ", ")"},
	{"flag-like", "", " (held-out case ", ") -- --help"},
};

const char *heldout_variant_name(unsigned i)
{
	return i < HELDOUT_VARIANTS ? variants[i].name : NULL;
}

void heldout_init(struct heldout *h)
{
	unsigned i;

	memset(h, 0, sizeof(*h));
	for (i = 0; i < HELDOUT_CASES; i++)
		strvec_init(&h->cases[i].argv);
}

void heldout_release(struct heldout *h)
{
	unsigned i;

	for (i = 0; i < HELDOUT_CASES; i++) {
		free(h->cases[i].prompt);
		free(h->cases[i].model);
		strvec_clear(&h->cases[i].argv);
	}
	heldout_init(h);
}

static char *variant_prompt(const struct variant *v, const char *prompt, unsigned n)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (!v->middle) {
		/* "held-out case N: PROMPT" */
		(void)sbuf_addf(&sb, "%s%u: %s", v->before, n, prompt);
	} else {
		(void)sbuf_addf(&sb, "%s%s%s%u%s", v->before, prompt, v->middle, n, v->after);
	}
	return sbuf_detach(&sb, NULL);
}

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *jstrv(const struct transcript_strv *v)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < v->n; i++)
		if (json_array_append_new(a, jstr(v->v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* Set o[key] = v (stolen); false when v is NULL (not UTF-8). */
static bool jset(json_t *o, const char *key, json_t *v)
{
	return v && json_object_set_new(o, key, v) == 0;
}

/* The seed (see heldout.h), as raw bytes. -EINVAL: a string is not UTF-8. */
static int seed_of(const struct evidence *ev, const struct recorded_invocation *inv,
		   const char *prompt, const char *model, uint8_t seed[SHA256_LEN])
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *root = json_object(), *e = json_object(), *k = json_object();
	bool ok;
	int r;

	ok = jset(e, "argv", jstrv(&ev->argv)) && jset(e, "exit_code", json_integer(ev->exit_code));
	ok = ok && jset(k, "registry_name", jstr(inv->registry_name)) &&
	     jset(k, "display_name", jstr(inv->display_name)) &&
	     jset(k, "binary", jstr(inv->binary)) &&
	     jset(k, "subcommands", jstrv(&inv->subcommands)) &&
	     jset(k, "model_flag", jstr(inv->model_flag)) &&
	     jset(k, "prompt_flag", jstr(inv->prompt_flag)) &&
	     jset(k, "prompt_positional", json_boolean(inv->prompt_positional)) &&
	     jset(k, "extra_args", jstrv(&inv->extra_args)) &&
	     jset(k, "env_passthrough", jstrv(&inv->env_passthrough));
	ok = ok && jset(root, "domain", json_string(HELDOUT_DOMAIN)) && jset(root, "evidence", e);
	e = NULL;
	ok = ok && jset(root, "invocation", k);
	k = NULL;
	ok = ok && jset(root, "smoke_prompt", jstr(prompt)) &&
	     jset(root, "smoke_model", jstr(model));
	r = ok ? json_canon_jcs(root, &sb) : -EINVAL;
	if (r >= 0)
		hash_sha256(sb.buf, sb.len, seed);
	json_decref(e);
	json_decref(k);
	json_decref(root);
	sbuf_release(&sb);
	return r < 0 ? r : 0;
}

static int check_evidence(const struct evidence *ev, const struct recorded_invocation *inv,
			  const char *prompt, const char *model, struct diag *reterr)
{
	struct strvec argv = STRVEC_INIT;
	size_t i;
	int r;

	if (ev->exit_code != 0) {
		diag_set(
			reterr, NULL, 0, 0,
			"the evidence is of a smoke run that failed (exit code %d): held-out cases are derived only from a passed run",
			ev->exit_code);
		return -EINVAL;
	}
	r = transcript_build_argv(inv, model, prompt, NULL, &argv);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot build the smoke argv: %s", strerror(-r));
		goto out;
	}
	for (i = 0; i < argv.nr && i < ev->argv.n; i++)
		if (strcmp(argv.v[i], ev->argv.v[i]) != 0)
			break;
	if (i < argv.nr || i < ev->argv.n) {
		diag_set(
			reterr, NULL, 0, 0,
			"the evidence is not of this invocation with this smoke prompt and model: argv[%zu] is %s%s%s in the evidence, %s%s%s from the profile",
			i, i < ev->argv.n ? "'" : "", i < ev->argv.n ? ev->argv.v[i] : "missing",
			i < ev->argv.n ? "'" : "", i < argv.nr ? "'" : "",
			i < argv.nr ? argv.v[i] : "missing", i < argv.nr ? "'" : "");
		r = -EINVAL;
	}
out:
	strvec_clear(&argv);
	return r;
}

static uint32_t be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

int heldout_derive(const struct evidence *ev, const struct recorded_invocation *inv,
		   const char *smoke_prompt, const char *smoke_model, struct heldout *ret,
		   struct diag *reterr)
{
	unsigned perm[HELDOUT_VARIANTS], k;
	uint8_t seed[SHA256_LEN];
	struct heldout h;
	int r;

	heldout_init(&h);
	if (!smoke_prompt || !yemit_utf8_valid(smoke_prompt, strlen(smoke_prompt)) ||
	    (smoke_model && !yemit_utf8_valid(smoke_model, strlen(smoke_model)))) {
		diag_set(reterr, NULL, 0, 0,
			 "the smoke prompt (required) and model must be valid UTF-8");
		return -EINVAL;
	}
	r = check_evidence(ev, inv, smoke_prompt, smoke_model, reterr);
	if (r < 0)
		return r;
	r = seed_of(ev, inv, smoke_prompt, smoke_model, seed);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot derive the seed: a string is not valid UTF-8");
		return r;
	}
	hash_hex(seed, SHA256_LEN, h.seed);
	for (k = 0; k < HELDOUT_VARIANTS; k++)
		perm[k] = k;
	for (k = 0; k < HELDOUT_CASES; k++) {
		unsigned j = k + be32(seed + (size_t)4 * k) % (HELDOUT_VARIANTS - k), t = perm[k];

		perm[k] = perm[j];
		perm[j] = t;
	}
	for (k = 0; k < HELDOUT_CASES; k++) {
		struct heldout_case *c = &h.cases[k];

		c->variant = perm[k];
		c->prompt = variant_prompt(&variants[perm[k]], smoke_prompt, k + 1);
		c->model = smoke_model ? xstrdup(smoke_model) : NULL;
		r = transcript_build_argv(inv, c->model, c->prompt, NULL, &c->argv);
		if (r < 0) {
			diag_set(reterr, NULL, 0, 0, "cannot build the argv of case %u: %s", k + 1,
				 strerror(-r));
			heldout_release(&h);
			return r;
		}
	}
	heldout_release(ret);
	*ret = h;
	return 0;
}
