/* Onboarding an agent CLI (docs/onboarding.md, issue #8): run cases of a
 * recorded invocation, supervised and bounded, and record a transcript.
 *
 * Every case runs:
 *   - in its own scratch directory, DIR/case-N/{home,work} under a fresh
 *     TMP/bernstein-onboard.XXXXXX that is removed afterwards: cwd is work,
 *     {workdir} and {home} expand to them;
 *   - with a normalised environment (onboard_sandbox_env()), never the
 *     caller's: PATH, LANG and LC_ALL from the host, HOME = the scratch home,
 *     TERM=dumb, CI=1, NO_COLOR=1, plus the invocation's env_passthrough
 *     names that are set in the host. This keeps the operator's secrets and
 *     identity (USER, LOGNAME, tokens not listed) away from the agent and out
 *     of the evidence. It is not a network sandbox: the agent can reach the
 *     network like any process of the operator's;
 *   - under the supervisor (proc/supervise.h): stdin /dev/null, its own
 *     process group, a timeout (SIGTERM to the group, a grace, SIGKILL),
 *     the parent-death signal;
 *   - with its output read and discarded as it comes: only the exit status
 *     is kept.
 *
 * Every case is attempted, in order; none is skipped. A case passes only if
 * the agent exits 0 and, when the case names an expected inner argv, the
 * invocation builds exactly that argv. Failures: a non-zero exit, a
 * timeout (124), a missing binary (127), an execution error (the binary
 * cannot be started: 126 or 127), death by a
 * signal (128+N), an argv that differs from the transcript's (the case
 * still runs; its exit status is reported). */
#ifndef BERNSTEIN_ONBOARD_ONBOARD_H
#define BERNSTEIN_ONBOARD_ONBOARD_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/profile.h"
#include "onboard/evidence.h"
#include "onboard/heldout.h"
#include "onboard/transcript.h"
#include "util/clock.h"
#include "util/diag.h"
#include "util/strvec.h"

#define ONBOARD_DEFAULT_TIMEOUT_MS    120000
#define ONBOARD_DEFAULT_KILL_GRACE_MS 2000
/* Exit codes of failed cases, as a shell reports them. */
#define ONBOARD_EXIT_TIMED_OUT	    124
#define ONBOARD_EXIT_NOT_EXECUTABLE 126
#define ONBOARD_EXIT_NOT_FOUND	    127
/* The scratch directory: TMP/ONBOARD_SCRATCH_PREFIX.XXXXXX */
#define ONBOARD_SCRATCH_PREFIX "bernstein-onboard"

enum onboard_status {
	ONBOARD_PASSED,		/* "passed": exited 0 (and the argv matched) */
	ONBOARD_EXIT_NONZERO,	/* "exit_nonzero" */
	ONBOARD_TIMED_OUT,	/* "timed_out": killed at the deadline; exit 124 */
	ONBOARD_MISSING_BINARY, /* "missing_binary": not found on PATH; exit 127 */
	ONBOARD_EXEC_ERROR,	/* "exec_error": found but could not be started */
	ONBOARD_SIGNALED,	/* "signaled": killed by a signal; exit 128+N */
	ONBOARD_ARGV_MISMATCH,	/* "argv_mismatch": the invocation builds another argv */
	ONBOARD_CANCELLED,	/* "cancelled": interrupted (SIGINT, SIGTERM, SIGHUP) */
	_ONBOARD_STATUS_MAX,
	_ONBOARD_STATUS_INVALID = -EINVAL,
};

const char *onboard_status_to_string(enum onboard_status s);

/* One case to run. */
struct onboard_case {
	const char *prompt;
	const char *model;			/* NULL: none */
	const struct transcript_strv *expected; /* inner argv to match; NULL: no check */
};

struct onboard_result {
	enum onboard_status status;
	int exit_code;	      /* as a shell reports it; -1 when it never started */
	uint64_t duration_ms; /* from start to exit; 0 when it never started */
	char message[512];    /* one line: what happened */
};

struct onboard_opts {
	const char *const *host_env; /* the caller's KEY=VALUE, NULL-terminated; NULL = empty */
	const char *tmp_dir;	     /* where the scratch directory goes (required) */
	uint64_t timeout_ms;	     /* per case; 0 = ONBOARD_DEFAULT_TIMEOUT_MS */
	uint64_t kill_grace_ms;	     /* 0 = ONBOARD_DEFAULT_KILL_GRACE_MS */
	const struct clock *clock;   /* NULL = clock_system() */
};

/* The normalised environment of a case (see above), sorted, appended to
 * ret. home is the scratch HOME. -EINVAL (with the name) for an invalid
 * pass-through name. */
int onboard_sandbox_env(const struct recorded_invocation *inv, const char *const *host_env,
			const char *home, struct strvec *ret, struct diag *reterr);

/* Run the n cases of inv in order into results[0, n). Returns the number of
 * cases that passed (every result filled), -ECANCELED when a signal
 * interrupted the run (the cases not finished are ONBOARD_CANCELLED), or a
 * negative errno with reterr when nothing could run (the scratch directory
 * cannot be made). */
int onboard_run(const struct recorded_invocation *inv, const struct onboard_case *cases, size_t n,
		const struct onboard_opts *opts, struct onboard_result *results,
		struct diag *reterr);

/* ---- record ---- */

struct onboard_record_request {
	const struct profile *profile; /* gate 1 passed (loaded) */
	const char *name;	       /* the transcript's name; NULL = the profile's name */
	const char *smoke_prompt;
	const char *smoke_model; /* an alias of the profile or a model id; NULL: none */
	const struct onboard_opts *opts;
};

struct onboard_record {
	struct recorded_invocation inv; /* in arena */
	const char *model;		/* the smoke model as the agent sees it (in arena) */
	struct onboard_result smoke;
	bool smoke_ran;		   /* false: refused before running */
	struct evidence *evidence; /* of the smoke run (owned); NULL when it did not run */
	struct heldout heldout;	   /* the derived cases (when the smoke passed) */
	bool heldout_ran;
	struct onboard_result results[HELDOUT_CASES];
	struct transcript *transcript; /* owned; set when everything passed */
	bool passed;		       /* the smoke run and every held-out case passed */
	struct arena arena;
};

void onboard_record_init(struct onboard_record *rec);
void onboard_record_release(struct onboard_record *rec);

/* The flow of `bernstein onboard record`: convert the profile (refusing
 * what the recorded-profile adapter cannot express: -ENOTSUP), check that
 * the rehydrated argv is the live profile's for the smoke case, run the
 * smoke case, keep its evidence, derive the three held-out cases from it,
 * run them, and, when all four passed, build the transcript. Returns 0
 * when the flow ran (rec->passed says how it went), -ECANCELED when
 * interrupted, or a negative errno with reterr. Nothing is written: the
 * caller writes rec->evidence and rec->transcript. */
int onboard_record_run(const struct onboard_record_request *req, struct onboard_record *rec,
		       struct diag *reterr);

#endif
