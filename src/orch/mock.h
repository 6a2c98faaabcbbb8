/* The mock agent (`bernstein mock-agent`, the `mock` adapter; docs/mock.md):
 * a deterministic, offline stand-in for a coding agent that carries out the
 * instruction lines of its prompt.
 *
 * Parsing (mock_parse) is pure: it reads the prompt and returns the script,
 * or the first bad instruction with its line and column. Running (mock_run)
 * carries the script out in a workdir and writes one JSON event per line in
 * the runner dialect (adapter/dialect-runner.c) to an fd: start, progress,
 * tool_call, tool_result, usage, completion, error. It never prints
 * otherwise, never reads the environment (HOME, PATH come in the options)
 * and never exits: the agent's exit status is its return value.
 *
 * Grammar: one instruction per line, anywhere in the prompt; leading and
 * trailing blanks (space, tab, CR) are ignored; a line whose first word is
 * not a keyword is prose and ignored. Keywords are lower case and exact.
 *
 *   write PATH [TEXT...]     create/overwrite PATH with TEXT + "\n"
 *   append PATH [TEXT...]    append TEXT + "\n" (created when missing)
 *   delete PATH              remove the file
 *   commit MESSAGE...        git add -A and git commit in the workdir
 *   say TEXT...              a progress (text) event
 *   sleep SECONDS            decimal allowed, at most MOCK_SLEEP_MAX
 *   hang                     sleep until killed
 *   fail [MESSAGE...]        an error event, exit 1
 *   exit N                   exit N (0..255) at once, no completion event
 *   rate-limit [SECONDS]     an error event (kind rate_limit, HTTP 429,
 *                            retry_after_s SECONDS, default 1), exit 1
 *   once MARKER INSTR...     INSTR only when MARKER does not exist; MARKER
 *                            is created first (so "once .rl rate-limit 0"
 *                            fails the first attempt only)
 *   usage IN OUT             a usage event (token counts)
 *   session ID               the session id to announce
 *
 * PATH and MARKER are relative to the workdir and confined beneath it
 * (util/beneath.h); a MARKER may instead be "~/REL" or an absolute path under
 * HOME, confined beneath HOME. Neither reaches into .bernstein, nor into .git
 * unless mock_opts.allow_git_dir (checked when the instruction runs, on the
 * real path too). TEXT is the rest of the line, verbatim. */
#ifndef BERNSTEIN_ORCH_MOCK_H
#define BERNSTEIN_ORCH_MOCK_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/session.h"
#include "util/arena.h"
#include "util/diag.h"

#define MOCK_MODEL	      "mock"
#define MOCK_ADAPTER	      "mock" /* the adapter name session ids are derived with */
#define MOCK_MAX_INSTRUCTIONS 10000
#define MOCK_SLEEP_MAX	      86400.0 /* seconds */
#define MOCK_RATE_LIMIT_DEF   1	      /* seconds */
#define MOCK_SESSION_ID_MAX   128
#define MOCK_SESSIONS_DIR     ".mock/sessions" /* under HOME */
#define MOCK_PROMPT_MAX	      (16u << 20)      /* a prompt read from stdin */
#define MOCK_GIT_TIMEOUT_MS   60000

/* The agent's exit statuses (besides `exit N`). */
enum mock_status {
	MOCK_EXIT_OK = 0,     /* every instruction carried out */
	MOCK_EXIT_FAILED = 1, /* fail, rate-limit, an I/O or git failure, unknown session */
	MOCK_EXIT_REFUSED = 2 /* a bad instruction or a path outside the workdir */
};

enum mock_op {
	MOCK_WRITE,
	MOCK_APPEND,
	MOCK_DELETE,
	MOCK_COMMIT,
	MOCK_SAY,
	MOCK_SLEEP,
	MOCK_HANG,
	MOCK_FAIL,
	MOCK_EXIT,
	MOCK_RATE_LIMIT,
	MOCK_USAGE,
	MOCK_SESSION,
	_MOCK_OP_MAX,
	_MOCK_OP_INVALID = -EINVAL,
};

enum mock_base {
	MOCK_BASE_WORKDIR, /* relative to the workdir */
	MOCK_BASE_HOME,	   /* relative to HOME ("~/x", or an absolute path under HOME) */
};

struct mock_instr {
	enum mock_op op;
	unsigned line;	  /* 1-based line of the prompt */
	const char *path; /* write, append, delete */
	/* write, append (without the newline), commit, say, fail (NULL: none),
	 * session; NUL-terminated, text_len bytes */
	const char *text;
	size_t text_len;
	double seconds;	    /* sleep, rate-limit */
	int64_t a, b;	    /* exit: a; usage: a input, b output tokens */
	const char *marker; /* once: the marker; NULL for an unconditional instruction */
	enum mock_base marker_base;
};

struct mock_script {
	struct arena arena; /* every string and the array */
	struct mock_instr *v;
	size_t n;
	const char *session_id; /* the first `session ID`, or NULL */
};

/* The keyword of op ("write", "rate-limit"), NULL for an invalid op. */
const char *mock_op_to_string(enum mock_op op);
enum mock_op mock_op_from_string(const char *s, size_t len);

/* Parse the instruction lines of prompt (len bytes; NUL bytes only on prose
 * lines). home (may be NULL) is HOME's path, for markers given as absolute
 * paths under it. 0 and *ret filled (release with mock_script_release(),
 * also after a failure), or, with the line and column in reterr (file
 * "prompt"): -EINVAL a bad instruction, -EPERM a PATH or MARKER outside the
 * workdir (or HOME), -E2BIG more than MOCK_MAX_INSTRUCTIONS. */
int mock_parse(const char *prompt, size_t len, const char *home, struct mock_script *ret,
	       struct diag *reterr);
void mock_script_release(struct mock_script *s);

/* A session id the mock accepts (it names a file under HOME): what
 * adapter/session.h accepts, at most MOCK_SESSION_ID_MAX bytes, without '/',
 * not "." or "..". 0 or -EINVAL with the reason in reterr. */
int mock_session_id_check(const char *id, struct diag *reterr);

/* The session id announced when neither a `session` instruction nor
 * --session-id gives one: the UUID derived (adapter/session.h) from the
 * SHA-256 of the prompt bytes as the conversation id and "mock". */
void mock_session_default(const char *prompt, size_t len, char out[SESSION_UUID_LEN + 1]);

struct mock_opts {
	const char *workdir;		/* the workdir's absolute path (git -C) */
	int workdir_fd;			/* a directory fd of the workdir (O_PATH is enough) */
	const char *home;		/* HOME's absolute path (git's HOME), or NULL */
	int home_fd;			/* a directory fd of HOME, -1 when there is none */
	int out_fd;			/* the events */
	const char *resume_id;		/* --resume: the session to continue, or NULL */
	const char *session_id;		/* --session-id, or NULL */
	const char *default_session_id; /* mock_session_default() of the prompt */
	const char *path_env;		/* PATH, to find git and for git */
	bool allow_git_dir;		/* file instructions may touch .git (--allow-git-dir) */
	uint64_t git_timeout_ms;	/* 0: MOCK_GIT_TIMEOUT_MS */
};

/* Carry out s (see the grammar above) and return the agent's exit status:
 * 0, 1, 2 (enum mock_status) or the N of `exit N`. The session is announced
 * first (start); a fresh session creates HOME/.mock/sessions/ID, a resumed
 * one must have it. `hang` returns only if the process is not killed. */
int mock_run(const struct mock_script *s, const struct mock_opts *o);

/* For a prompt mock_parse() refused with parse_error: a start event, then
 * the error event (kind "path_refused" for -EPERM, else "syntax"). Returns
 * the exit status (2). */
int mock_refuse(const struct mock_opts *o, int parse_error, const struct diag *d);

#endif
