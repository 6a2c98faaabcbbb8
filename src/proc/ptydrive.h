/* Driving an agent's TUI through a pseudo-terminal (event channel poll-pty
 * with runtime.pty in its profile; docs/event-stream.md, "poll-pty").
 *
 * A ptydrive keeps the agent's screen in a terminal emulator (libvterm: a
 * small, well-kept C VT220/xterm emulator, the one neovim's :terminal uses;
 * Debian libvterm-dev) fed with every byte read from the pty's master, and
 * reads it as the profile's patterns (POSIX extended regexes, matched against
 * the screen's text with REG_NEWLINE) say:
 *
 *   - ready: the agent waits for input. The first time, the prompt is typed
 *     (wrapped in bracketed paste when conf.paste), and conf.submit_delay_ms
 *     later the submit key;
 *   - permission[i].pattern: a permission prompt; answered once per
 *     appearance with its allow keys, or its deny keys when the task's policy
 *     does not allow (ptydrive_new's allow);
 *   - working: the agent is busy;
 *   - done: the agent finished its turn (when working does not match); or,
 *     without it, the screen unchanged for idle_done_ms with working not
 *     matching and ready matching (or no ready pattern).
 *
 * At done it types conf.exit_keys (if any), submit_delay_ms later the submit
 * key, and exit_wait_ms after that asks the supervisor to stop the agent
 * (PTYDRIVE_HANGUP; at once without exit keys). When the agent exits
 * first, the driver reports what its last screen said.
 *
 * What it reports is NDJSON lines of its own (never the agent's bytes: no
 * escape sequence passes), one object each with the key "pty":
 *   {"pty":"status","status":"ready|working|permission|done|exited"}
 *   {"pty":"permission","prompt":ROW,"answer":"allow|deny"}
 *   {"pty":"text","text":NEW_ROWS}       the agent's message since the prompt
 *   {"pty":"result","ok":true,"by":"done|idle"}
 * which the poll-pty dialect turns into events (adapter/dialect.h). The
 * message is the screen diff: rows (scrolled-off ones included) not seen on
 * any screen before the prompt was submitted, without blank rows, the prompt's echo and rows
 * that match a pattern or conf.ignore (the TUI's chrome).
 *
 * Replies the emulator owes the program (cursor position reports, device
 * attributes) are written back as keys, as a real terminal would. */
#ifndef BERNSTEIN_PROC_PTYDRIVE_H
#define BERNSTEIN_PROC_PTYDRIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"
#include "util/sbuf.h"

#define PTYDRIVE_MAX_PERMS		 8
#define PTYDRIVE_MAX_IGNORE		 16
#define PTYDRIVE_DEFAULT_ROWS		 40
#define PTYDRIVE_DEFAULT_COLS		 120
#define PTYDRIVE_MIN_SIZE		 8
#define PTYDRIVE_MAX_SIZE		 500
#define PTYDRIVE_DEFAULT_IDLE_MS	 2000
#define PTYDRIVE_DEFAULT_EXIT_MS	 3000
#define PTYDRIVE_DEFAULT_SUBMIT_DELAY_MS 300
#define PTYDRIVE_POLL_MS		 100	     /* the screen is read at least this often */
#define PTYDRIVE_TEXT_MAX		 (64 * 1024) /* bytes of message text kept */
#define PTYDRIVE_MAX_ANSWERS		 64	     /* permission answers per task, then no more */

struct ptydrive_perm {
	const char *pattern; /* ERE */
	const char *allow;   /* keys typed when the policy allows */
	const char *deny;    /* keys typed otherwise */
};

/* The profile's runtime.pty, as data (strings borrowed). */
struct ptydrive_conf {
	bool declared;
	unsigned rows, cols;		    /* 0: the defaults */
	const char *term;		    /* TERM for the agent; NULL: xterm-256color */
	const char *ready, *working, *done; /* ERE or NULL */
	const char *ignore[PTYDRIVE_MAX_IGNORE];
	size_t n_ignore;
	struct ptydrive_perm perms[PTYDRIVE_MAX_PERMS];
	size_t n_perms;
	uint64_t idle_done_ms;	  /* 0: PTYDRIVE_DEFAULT_IDLE_MS */
	bool paste;		  /* type the prompt as a bracketed paste */
	const char *submit;	  /* NULL: "\r" */
	uint64_t submit_delay_ms; /* 0: the default */
	const char *exit_keys;	  /* typed when done, then submit; NULL: none (hang up) */
	uint64_t exit_wait_ms;	  /* 0: the default */
};

/* Check that every pattern compiles: 0, or -EINVAL with the pattern's key
 * ("ready", "permission[2].pattern") and regerror's text in reterr. */
int ptydrive_conf_check(const struct ptydrive_conf *conf, struct diag *reterr);

struct ptydrive;

enum ptydrive_action {
	PTYDRIVE_NONE,
	PTYDRIVE_HANGUP, /* done, and the agent did not leave after its exit keys */
};

/* A driver for one agent: conf and prompt are copied as needed (conf's
 * strings are borrowed: they must outlive it). allow: the task's policy lets
 * the agent's permission prompts be accepted. now: CLOCK_MONOTONIC ms. */
int ptydrive_new(const struct ptydrive_conf *conf, const char *prompt, bool allow, uint64_t now,
		 struct ptydrive **ret, struct diag *reterr);
struct ptydrive *ptydrive_free(struct ptydrive *d);

void ptydrive_rows_cols(const struct ptydrive_conf *conf, unsigned *rows, unsigned *cols);

/* Bytes read from the master. */
void ptydrive_feed(struct ptydrive *d, const char *buf, size_t n);
/* Read the screen at now: report lines are appended to lines (NDJSON, each
 * with its newline), keys to type to keys. Returns the action due. */
enum ptydrive_action ptydrive_step(struct ptydrive *d, uint64_t now, struct sbuf *lines,
				   struct sbuf *keys);
/* The pty reached its end (the agent and all that held it are gone): the
 * last report. */
void ptydrive_eof(struct ptydrive *d, uint64_t now, struct sbuf *lines);
/* When ptydrive_step wants to run again (CLOCK_MONOTONIC ms), 0 never. */
uint64_t ptydrive_next_ms(const struct ptydrive *d);

/* The screen's text now, rows joined by '\n', trailing blanks trimmed
 * (tests, diagnostics). Caller frees. */
char *ptydrive_screen_text(struct ptydrive *d);

#endif
