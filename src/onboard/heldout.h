/* The three held-out cases of an onboarding (docs/onboarding.md), derived
 * deterministically from (evidence, invocation, smoke prompt, smoke model):
 * the same inputs always give the same three cases, on any machine.
 *
 * The evidence must be of a passed smoke run (exit code 0) of this very
 * invocation: its argv must be the argv the invocation builds for the smoke
 * prompt and model (placeholders unexpanded), else the inputs do not belong
 * together and nothing is derived (-EINVAL).
 *
 * The seed is SHA-256 over the RFC 8785 canonical JSON of
 *   {"domain": HELDOUT_DOMAIN,
 *    "evidence": {"argv": [...], "exit_code": 0},
 *    "invocation": {the nine ctor_kwargs},
 *    "smoke_model": M, "smoke_prompt": P}
 * (the evidence's environment names and duration bucket are left out: they
 * vary between machines and runs of the same invocation). Its first twelve
 * bytes, as three big-endian 32-bit numbers, pick three distinct prompt
 * variants out of HELDOUT_VARIANTS (a partial Fisher-Yates shuffle), one per
 * case; case n (1-based) is its variant's text around the smoke prompt,
 * with n in it, so the three prompts differ from each other and from the
 * smoke prompt. Each variant
 * probes one thing an argv must carry intact: a newline, quotes, non-ASCII,
 * padding, shell metacharacters, a tab, a flag-like tail, a prefix. The
 * model of every case is the smoke model: a model the operator's endpoint
 * has not been shown to serve would test the endpoint, not the profile. */
#ifndef BERNSTEIN_ONBOARD_HELDOUT_H
#define BERNSTEIN_ONBOARD_HELDOUT_H

#include "onboard/evidence.h"
#include "onboard/transcript.h"
#include "util/diag.h"
#include "util/hash.h"
#include "util/strvec.h"

#define HELDOUT_CASES	 3
#define HELDOUT_VARIANTS 8
#define HELDOUT_DOMAIN	 "bernstein.onboard.heldout.v1"

struct heldout_case {
	char *prompt;	    /* owned */
	char *model;	    /* owned; NULL: none */
	unsigned variant;   /* index of the prompt variant */
	struct strvec argv; /* the inner argv, placeholders unexpanded */
};

struct heldout {
	char seed[SHA256_HEX_LEN + 1];
	struct heldout_case cases[HELDOUT_CASES];
};

void heldout_init(struct heldout *h);
void heldout_release(struct heldout *h);

/* Derive the three cases into *ret (initialised; overwritten on success).
 * smoke_model is the model as the agent sees it (an alias resolved), or
 * NULL. -EINVAL with the reason: evidence of a failed run, evidence of
 * another invocation or prompt, a prompt or model that is not UTF-8. */
int heldout_derive(const struct evidence *ev, const struct recorded_invocation *inv,
		   const char *smoke_prompt, const char *smoke_model, struct heldout *ret,
		   struct diag *reterr);

/* A short name of variant i ("multi-line", "quotes", ...), NULL if none. */
const char *heldout_variant_name(unsigned i);

#endif
