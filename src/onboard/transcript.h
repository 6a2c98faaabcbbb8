/* Onboarding transcripts (docs/onboarding.md): the replayable record of an
 * agent CLI's invocation, in the GoldenTranscript shape of seed 001.
 *
 * A transcript is a YAML document with exactly four top-level keys:
 *
 *   name: "pi"                         what the transcript is called
 *   adapter_class: "bernstein.adapters.capability_profile.RecordedProfileAdapter"
 *   ctor_kwargs:                       the recorded invocation, YAML-safe
 *     registry_name, display_name, binary, subcommands, model_flag,
 *     prompt_flag, prompt_positional, extra_args, env_passthrough
 *   steps:                             the held-out cases
 *     - prompt: "..."
 *       model: "..."                   or null
 *       inner_argv: ["pi", ...]        the argv the invocation must build
 *
 * The recorded-profile adapter rehydrates the exact invocation from
 * ctor_kwargs: transcript_build_argv() builds, token for token, what
 * profile_build_argv() builds for the live profile (binary, subcommands,
 * [model flag, model], extra args, then [prompt flag] prompt), and the
 * environment allow-list is env_passthrough, in order. Models are stored as
 * the agent sees them (a profile's alias already resolved), since the
 * adapter has no alias table. Placeholders in extra args ({home},
 * {workdir}) stay unexpanded in the file and in inner_argv; they are
 * expanded only when a case runs.
 *
 * Loading is strict (util/yaml.h), every error with FILE:LINE:COL: exactly
 * the four keys, exactly the nine ctor_kwargs, exactly prompt, model and
 * inner_argv per step, each with its type. An empty step list loads (a
 * replay of it fails; it is not an invalid file). */
#ifndef BERNSTEIN_ONBOARD_TRANSCRIPT_H
#define BERNSTEIN_ONBOARD_TRANSCRIPT_H

#include <stdbool.h>
#include <stddef.h>

#include "adapter/profile.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/sbuf.h"
#include "util/strvec.h"

/* The stable class name of the recorded-profile adapter. */
#define TRANSCRIPT_ADAPTER_CLASS "bernstein.adapters.capability_profile.RecordedProfileAdapter"
/* Largest transcript file accepted. */
#define TRANSCRIPT_MAX_BYTES (1024 * 1024)
/* Most steps in one transcript. */
#define TRANSCRIPT_MAX_STEPS 64
/* Transcript names: [A-Za-z0-9][A-Za-z0-9_.-]*, at most this many bytes. */
#define TRANSCRIPT_MAX_NAME 64

/* An array of strings (v[n] == NULL). */
struct transcript_strv {
	const char *const *v;
	size_t n;
};

/* The ctor_kwargs of the recorded-profile adapter. Exactly one prompt
 * delivery: prompt_flag (not NULL) or prompt_positional. */
struct recorded_invocation {
	const char *registry_name;
	const char *display_name;
	const char *binary; /* a bare name (looked up on PATH) or an absolute path */
	struct transcript_strv subcommands;
	const char *model_flag;	 /* NULL: the model is not passed */
	const char *prompt_flag; /* NULL when prompt_positional */
	bool prompt_positional;
	struct transcript_strv extra_args;
	struct transcript_strv env_passthrough;
};

struct transcript_step {
	const char *prompt;
	const char *model; /* NULL: none */
	struct transcript_strv inner_argv;
	unsigned line, col; /* where the step is in the file; 0 when built */
};

/* Everything lives in ->arena. */
struct transcript {
	struct arena arena;
	const char *source; /* the file name in diagnostics, or NULL */
	const char *name;
	const char *adapter_class;
	struct recorded_invocation inv;
	struct transcript_step *steps;
	size_t n_steps, alloc_steps;
};

/* [A-Za-z0-9][A-Za-z0-9_.-]*, at most TRANSCRIPT_MAX_NAME bytes. */
bool transcript_name_valid(const char *name);

/* The recorded invocation of profile p, strings copied into arena.
 * -ENOTSUP (with the reason) when the adapter cannot express it: a profile
 * that delivers the prompt in a file (prompt_file_flag) has no spelling in
 * ctor_kwargs. Builtin profiles convert (their binary is the declared one);
 * refusing them is the caller's choice. */
int transcript_invocation_from_profile(const struct profile *p, struct arena *arena,
				       struct recorded_invocation *ret, struct diag *reterr);

/* The argv of one case, appended to argv: binary, subcommands, [model_flag,
 * model] (when both are set), extra args, [prompt_flag] prompt (the order
 * of adapter/argv-order.h). Placeholders of extra args are expanded from
 * vars ({home}, {workdir}); vars NULL keeps them as written (the form
 * stored in inner_argv). argv untouched on error: errors as
 * profile_expand() (-ENOENT: a placeholder without a value), and -EINVAL
 * when transcript_values_check() refuses prompt or model. */
int transcript_build_argv(const struct recorded_invocation *inv, const char *model,
			  const char *prompt, const struct profile_vars *vars, struct strvec *argv);
/* A prompt or model the recorded invocation can pass: neither may start
 * with '-' (ctor_kwargs has no end-of-options marker, so the agent would
 * read it as an option: a prompt of --version, a model of --settings=x).
 * 0, or -EINVAL with the reason in reterr. */
int transcript_values_check(const struct recorded_invocation *inv, const char *model,
			    const char *prompt, struct diag *reterr);

/* A new transcript called name with invocation inv (copied), no steps. */
struct transcript *transcript_new(const char *name, const struct recorded_invocation *inv);
/* Append a step: prompt, model and the inner argv the invocation builds for
 * them (placeholders unexpanded). -E2BIG past TRANSCRIPT_MAX_STEPS. */
int transcript_add_step(struct transcript *t, const char *prompt, const char *model);

/* Load a transcript from memory; source names it in diagnostics. -EINVAL
 * (YAML or schema, FILE:LINE:COL), -EFBIG (larger than
 * TRANSCRIPT_MAX_BYTES). */
int transcript_load_buf(const char *source, const char *buf, size_t len, struct transcript **ret,
			struct diag *reterr);
int transcript_load_file(const char *path, struct transcript **ret, struct diag *reterr);
struct transcript *transcript_free(struct transcript *t);

/* The YAML of t, appended to out (a comment line, then the four keys).
 * Deterministic: the same transcript always gives the same bytes.
 * -EINVAL when a string is not valid UTF-8, -ENOBUFS at out's cap. */
int transcript_emit(const struct transcript *t, struct sbuf *out);

/* Check a recorded invocation as the loader does (names, flags, exactly one
 * prompt delivery, placeholders, env names). 0 or -EINVAL with
 * "ctor_kwargs.FIELD: ..." in reterr. */
int transcript_invocation_check(const struct recorded_invocation *inv, struct diag *reterr);

#endif
