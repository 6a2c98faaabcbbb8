/* Bounded probes of external binaries: "is it on PATH, and what does
 * `BINARY --version` print?". Never hangs: every child runs in its own process
 * group with stdin on /dev/null, a minimal environment, a wall-clock deadline
 * after which the whole group is killed (SIGTERM, then SIGKILL after a short
 * grace), and a cap on captured output. Many probes run in parallel in one
 * poll loop, so probing 50 binaries costs about one timeout at worst. */
#ifndef BERNSTEIN_PROC_PROBE_H
#define BERNSTEIN_PROC_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/clock.h"
#include "util/diag.h"
#include "util/strvec.h"

/* Search a bare command name on a PATH string (the caller passes the value
 * of $PATH; NULL or "" finds nothing). A name containing '/' is checked as
 * is. Returns 0 and an absolute (or as-given) path in *ret (caller frees), or
 * -ENOENT, or -EACCES when only non-executable matches exist. */
int path_search(const char *name, const char *path_env, char **ret);

enum probe_status {
	PROBE_OK,	    /* exited 0 */
	PROBE_NOT_FOUND,    /* not on PATH */
	PROBE_SPAWN_FAILED, /* posix_spawn failed (EACCES, ENOEXEC...) */
	PROBE_EXIT_NONZERO, /* exited with a non-zero code */
	PROBE_SIGNALED,	    /* killed by a signal (not by us) */
	PROBE_TIMED_OUT,    /* deadline hit; the group was killed */
	_PROBE_STATUS_MAX,
};

struct probe {
	/* in */
	const char *binary;	 /* bare name or path */
	const char *const *args; /* NULL-terminated, without argv[0]; NULL = {"--version"} */
	/* out */
	enum probe_status status;
	char *resolved;	 /* absolute path, or NULL (owned) */
	int exit_code;	 /* for PROBE_EXIT_NONZERO / PROBE_OK */
	int term_signal; /* for PROBE_SIGNALED */
	int spawn_errno; /* for PROBE_SPAWN_FAILED */
	char *output;	 /* stdout then stderr, capped (owned, NUL-terminated) */
	size_t output_len;
	bool output_truncated;
	char *first_line; /* first non-empty line of output with ANSI escapes removed (owned) */
	uint64_t elapsed_ms;
};

struct probe_opts {
	const char *path_env;	   /* value of PATH for lookups and for the child */
	const char *const *env;	   /* complete child environment; NULL = minimal default */
	uint64_t timeout_ms;	   /* per probe; 0 = 5000 */
	size_t max_output;	   /* 0 = 65536 */
	unsigned max_parallel;	   /* 0 = 16 */
	const struct clock *clock; /* NULL = clock_system() */
};

/* Run all probes; fills each probe's out fields. Returns 0 (individual
 * failures are in each probe's status) or a negative errno for a failure of
 * the loop itself. */
int probe_run(struct probe *probes, size_t n, const struct probe_opts *opts);
void probe_release(struct probe *p);
const char *probe_status_name(enum probe_status s);

/* Remove ANSI CSI/OSC escape sequences in place; returns the new length. */
size_t ansi_strip(char *s, size_t len);

#endif
