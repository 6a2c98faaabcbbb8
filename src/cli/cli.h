/* Command-line front end: the only layer that parses argv, prints, reads the
 * environment and chooses exit codes. */
#ifndef BERNSTEIN_CLI_CLI_H
#define BERNSTEIN_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/exit.h"
#include "util/diag.h"

struct cli_ctx;
struct cmd;

typedef int cmd_fn(int argc, char **argv, struct cli_ctx *ctx);

enum cmd_flags {
	CMD_NEEDS_STATE = 1 << 0, /* open state.db before fn */
	CMD_NEEDS_REPO = 1 << 1,  /* must run inside a git work tree */
	CMD_HIDDEN = 1 << 2,	  /* not listed in help */
	/* load every lazily loaded library (util/lazy.h) before fn: a command
	 * that starts agents (run, resume, spawn, demo, plan generate, and the
	 * controls that may resume a run) fails before it starts anything,
	 * never half-way */
	CMD_LOAD_LIBS = 1 << 3,
};

struct cmd {
	const char *name;
	cmd_fn *fn;
	const struct cmd *sub; /* non-NULL: a command group */
	enum cmd_flags flags;
	const char *summary; /* one line for the group listing */
	const char *usage;   /* "[NAME] [--json] [--strict]" (after the command path) */
	const char *help;    /* description and options, printed after the usage line */
};

struct cli_ctx {
	const char *progname; /* "bernstein" */
	const char *dir;      /* -C DIR, already chdir()ed into; NULL if not given */
	bool json;	      /* --json (global, or a command's own) */
	int verbosity;	      /* -q = -1, default 0, each -v +1 */
	FILE *out, *err;
	char **envp;	       /* the process environment; read it with cli_getenv() */
	const struct cmd *cmd; /* the command being run */
	char cmd_path[128];    /* "adapters check" */
	/* the top-level command table, for help; NULL in the one-command
	 * executables (bernstein-runner) */
	const struct cmd *root;
};

extern const struct cmd cli_commands[];

/* The bernstein executable: global options, then root's commands. (The table
 * is a parameter so that cli.c does not pull every command into the small
 * executables that link it.) */
int cli_main(int argc, char **argv, char **envp, const struct cmd *root);
int cli_dispatch(const struct cmd *tab, int argc, char **argv, struct cli_ctx *ctx);

/* Full help of the current command (ctx->cmd) on stdout; returns 0. */
int cli_help(struct cli_ctx *ctx);
/* One line "bernstein: <msg>" plus "see 'bernstein <cmd> -h'" on stderr;
 * returns BEXIT_USAGE. */
int cli_usage_error(struct cli_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "bernstein: <msg>" on stderr (or a JSON error object with --json). Returns code. */
int cli_error(struct cli_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "bernstein: FILE:L:C: msg" on stderr (JSON with --json). Returns code. */
int cli_diag(struct cli_ctx *ctx, int code, const struct diag *d);
/* The exit code for a loader's error (docs/exit-codes.md): 3 when the
 * content is invalid (-EINVAL, -EFBIG: larger than the loader's cap), 4
 * when the file cannot be read (missing, a directory, a FIFO, a device...). */
int cli_load_exit(int r);
void cli_warn(struct cli_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *cli_getenv(const struct cli_ctx *ctx, const char *name);
/* BERNSTEIN_CONTAIN (auto, pidns, cgroup or pgroup): the operator's cap on
 * the containment of every child (docs/supervision.md). 0, or the exit code
 * after an error message for a value that names no tier. */
int cli_contain_env(struct cli_ctx *ctx);
/* Kill and remove what bernstein processes that died left in their cgroups
 * (contain_sweep_stale()); a warning when there was something. Commands
 * that start agents call it first (run, resume, demo, spawn). */
void cli_contain_sweep(struct cli_ctx *ctx);

/* The first call of main() of every bernstein executable: the environment
 * moves to the heap (the C library's environ included, so getenv() in
 * libcurl, OpenSSL and glibc keeps working), the block the kernel shows in
 * /proc/PID/environ is zeroed (util/envscrub.h), and the process becomes
 * non-dumpable (PR_SET_DUMPABLE 0): no other process of the same uid can
 * read its /proc/PID/environ, mem or fd entries or attach a debugger, and
 * no core dump is written. Processes forked from it inherit both; an execve
 * gets the heap copy (execv) or the environment it is given. Returns the
 * environment to use as cli_ctx.envp. */
char **cli_environ_take(char **envp);
/* Report a library that cannot be loaded on first use (util/lazy.h) as
 * "bernstein: COMMAND: cannot load SQLite (libsqlite3.so.0): WHY" on ctx's
 * stderr (a JSON error with --json; stderr when ctx is NULL), then _exit
 * with BEXIT_LIBRARY. ctx must outlive the command. */
void cli_lazy_init(struct cli_ctx *ctx);

/* The path of an executable installed beside this one ("bernstein-runner"
 * next to bernstein, "bernstein" next to bernstein-runner), from
 * /proc/self/exe. 0, or -errno / -ENAMETOOLONG. */
int cli_sibling_path(const char *name, char *buf, size_t size);

/* The --help entry every command's getopt_long option table carries; the
 * command answers 'h' with `return cli_help(ctx);` (see cmd_version). */
#define CLI_OPT_HELP                                                                               \
	{                                                                                          \
		"help", 0, NULL, 'h'                                                               \
	}

#endif
