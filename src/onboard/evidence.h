/* The evidence of an onboarding smoke run (docs/onboarding.md): what
 * `bernstein onboard record` keeps of the one known-good invocation, and
 * nothing more. A YAML document with exactly four keys:
 *
 *   argv:            the exact argv, as the invocation builds it: argv[0] is
 *                    the binary as declared (not the path it resolved to)
 *                    and {home}/{workdir} stay unexpanded, so no path of the
 *                    machine (and no user name inside one) is kept
 *   env_names:       the NAMES of the variables the agent got, sorted; never
 *                    a value
 *   exit_code:       how it ended, as a shell reports it (0..255)
 *   duration_bucket: under-1s, 1s-10s, 10s-60s or 60s-or-more
 *
 * No output, no environment value, no operator identity, no time stamp.
 * Loading is strict (util/yaml.h), errors with FILE:LINE:COL. */
#ifndef BERNSTEIN_ONBOARD_EVIDENCE_H
#define BERNSTEIN_ONBOARD_EVIDENCE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "onboard/transcript.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/sbuf.h"
#include "util/strvec.h"

#define EVIDENCE_MAX_BYTES (1024 * 1024)

enum duration_bucket {
	DURATION_UNDER_1S,    /* "under-1s" */
	DURATION_1S_TO_10S,   /* "1s-10s" */
	DURATION_10S_TO_60S,  /* "10s-60s" */
	DURATION_60S_OR_MORE, /* "60s-or-more" */
	_DURATION_BUCKET_MAX,
	_DURATION_BUCKET_INVALID = -EINVAL,
};

/* Everything lives in ->arena. */
struct evidence {
	struct arena arena;
	struct transcript_strv argv;
	struct transcript_strv env_names; /* sorted, unique */
	int exit_code;
	enum duration_bucket duration;
};

enum duration_bucket duration_bucket_of(uint64_t ms);
const char *duration_bucket_to_string(enum duration_bucket b);
enum duration_bucket duration_bucket_from_string(const char *s);

/* New evidence: argv (copied), the names of env (KEY=VALUE entries; the
 * values are dropped here), exit code and duration. */
struct evidence *evidence_new(const char *const *argv, size_t argc, const char *const *env,
			      size_t n_env, int exit_code, uint64_t duration_ms);
/* -EINVAL (YAML or schema, FILE:LINE:COL), -EFBIG. */
int evidence_load_buf(const char *source, const char *buf, size_t len, struct evidence **ret,
		      struct diag *reterr);
int evidence_load_file(const char *path, struct evidence **ret, struct diag *reterr);
struct evidence *evidence_free(struct evidence *e);
/* The YAML, appended to out; deterministic. -EINVAL (not UTF-8), -ENOBUFS. */
int evidence_emit(const struct evidence *e, struct sbuf *out);

#endif
