/* Restricted exec for run_command (rexec.h). */
#include "runner/rexec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/capture.h"
#include "proc/probe.h"
#include "proc/reaper.h"
#include "proc/spawn.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* Exact names refused as argv[0]: shells, interpreters and programs whose
 * job is to run another program (or to wreck the machine). */
static const char *const denied[] = {
	/* shells */
	"sh",
	"bash",
	"dash",
	"zsh",
	"fish",
	"ksh",
	"mksh",
	"pdksh",
	"oksh",
	"ksh93",
	"csh",
	"tcsh",
	"ash",
	"rbash",
	"yash",
	"elvish",
	"nu",
	"xonsh",
	"pwsh",
	"powershell",
	"rc",
	"es",
	"scsh",
	/* multi-call binaries */
	"busybox",
	"toybox",
	/* interpreters (versioned names are caught by the prefixes below) */
	"awk",
	"gawk",
	"mawk",
	"nawk",
	"dc",
	"m4",
	"expect",
	"tclsh",
	"wish",
	"deno",
	"bun",
	"nodejs",
	"osascript",
	"rscript",
	"Rscript",
	"R",
	"julia",
	"guile",
	"racket",
	"sbcl",
	"clisp",
	"ecl",
	"irb",
	"jshell",
	"groovy",
	"scala",
	"kotlin",
	"erl",
	"escript",
	"elixir",
	"iex",
	"ghci",
	"runghc",
	"runhaskell",
	"ocaml",
	"swipl",
	"gdb",
	"lldb",
	"vim",
	"vi",
	"nvim",
	"emacs",
	"ed",
	"ex",
	"script",
	"screen",
	"tmux",
	/* command runners */
	"env",
	"exec",
	"command",
	"builtin",
	"eval",
	"xargs",
	"parallel",
	"nohup",
	"setsid",
	"timeout",
	"nice",
	"ionice",
	"chrt",
	"taskset",
	"stdbuf",
	"unbuffer",
	"time",
	"watch",
	"flock",
	"chroot",
	"unshare",
	"nsenter",
	"setpriv",
	"capsh",
	"prlimit",
	"runuser",
	"strace",
	"ltrace",
	"valgrind",
	"faketime",
	"fakeroot",
	"firejail",
	"bwrap",
	"systemd-run",
	"start-stop-daemon",
	"daemonize",
	"at",
	"batch",
	"crontab",
	"ssh",
	"sshpass",
	"su",
	"sudo",
	"doas",
	"pkexec",
	"sg",
	"newgrp",
	"ld.so",
	"ld-linux.so.2",
	"ld-linux-x86-64.so.2",
	"ld-linux-aarch64.so.1",
	"run-parts",
	/* dangerous to the machine (Bernstein's list) */
	"mkfs",
	"shutdown",
	"reboot",
	"halt",
	"poweroff",
	"init",
	"telinit",
	"systemctl",
	"fdisk",
	"sfdisk",
	"parted",
	"dd",
	"visudo",
	"wipefs",
	"mkswap",
	"swapon",
	"mount",
	"umount",
	"insmod",
	"rmmod",
	"modprobe",
	"kexec",
	NULL,
};

/* Refused with any suffix of digits and dots (python3.11, perl5.36, node18). */
static const char *const denied_versioned[] = {
	"python", "pypy",   "perl",    "ruby", "php",  "lua", "luajit", "node",	 "tclsh", "wish",
	"jruby",  "jython", "ipython", "ksh",  "bash", "sh",  "zsh",	"guile", "pwsh",  NULL,
};

/* Refused as a prefix followed by '.' or '-' (mkfs.ext4, ld-linux-...). */
static const char *const denied_prefix[] = {
	"mkfs", "ld-linux", "python", "perl", "ruby", "node", "php", "lua", NULL,
};

static bool name_denied(const char *name)
{
	size_t i, n;

	for (i = 0; denied[i]; i++)
		if (strcmp(name, denied[i]) == 0)
			return true;
	for (i = 0; denied_versioned[i]; i++) {
		const char *p;

		n = strlen(denied_versioned[i]);
		if (strncmp(name, denied_versioned[i], n) != 0)
			continue;
		for (p = name + n; *p && ((*p >= '0' && *p <= '9') || *p == '.'); p++)
			;
		if (!*p)
			return true;
	}
	for (i = 0; denied_prefix[i]; i++) {
		n = strlen(denied_prefix[i]);
		if (strncmp(name, denied_prefix[i], n) == 0 && (name[n] == '.' || name[n] == '-'))
			return true;
	}
	return false;
}

int rexec_check_name(const char *name, struct diag *reterr)
{
	const unsigned char *p;

	if (!name || !*name) {
		diag_set(reterr, NULL, 0, 0, "argv[0] is empty");
		return -EINVAL;
	}
	if (strchr(name, '/')) {
		diag_set(reterr, NULL, 0, 0,
			 "argv[0] '%s' must be a bare command name (no path separators)", name);
		return -EPERM;
	}
	if (strlen(name) > NAME_MAX) {
		diag_set(reterr, NULL, 0, 0, "argv[0] is longer than %d bytes", NAME_MAX);
		return -EINVAL;
	}
	for (p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p == 0x7f) {
			diag_set(reterr, NULL, 0, 0, "argv[0] contains a control character");
			return -EPERM;
		}
	if (name[0] == '-' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		diag_set(reterr, NULL, 0, 0, "argv[0] '%s' is not a command name", name);
		return -EPERM;
	}
	if (name_denied(name)) {
		diag_set(
			reterr, NULL, 0, 0,
			"argv[0] '%s' is a shell, interpreter or command runner, which run_command does not run",
			name);
		return -EPERM;
	}
	return 0;
}

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

int rexec_resolve(const char *name, const char *path_env, const char *workdir, char **ret,
		  struct diag *reterr)
{
	struct sbuf clean = SBUF_INIT(SIZE_MAX);
	char *found = NULL, *real = NULL;
	const char *p, *end, *base;
	int r;

	r = rexec_check_name(name, reterr);
	if (r < 0)
		return r;
	/* Only absolute PATH entries, and none inside the workdir. */
	for (p = path_env ? path_env : "";; p = end + 1) {
		end = strchrnul(p, ':');
		if (end > p && *p == '/') {
			char dir[PATH_MAX];
			size_t dl = (size_t)(end - p);

			if (dl < sizeof(dir)) {
				char *rd;

				memcpy(dir, p, dl);
				dir[dl] = '\0';
				rd = realpath(dir, NULL);
				if (!(workdir && (path_under(dir, workdir) ||
						  (rd && path_under(rd, workdir))))) {
					if (clean.len)
						(void)sbuf_addc(&clean, ':');
					(void)sbuf_add(&clean, p, dl);
				}
				free(rd);
			}
		}
		if (!*end)
			break;
	}
	r = path_search(name, clean.buf, &found);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "command '%s' not found on PATH", name);
		goto out;
	}
	real = realpath(found, NULL);
	if (!real) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot resolve '%s': %s", found, strerror(errno));
		goto out;
	}
	if (workdir && path_under(real, workdir)) {
		diag_set(reterr, NULL, 0, 0, "command '%s' resolves inside the workdir", name);
		r = -EPERM;
		goto out;
	}
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	if (name_denied(base)) {
		diag_set(
			reterr, NULL, 0, 0,
			"argv[0] '%s' resolves to '%s', a shell, interpreter or command runner, which run_command does not run",
			name, base);
		r = -EPERM;
		goto out;
	}
	*ret = found;
	found = NULL;
	r = 0;
out:
	free(found);
	free(real);
	sbuf_release(&clean);
	return r;
}

void rexec_result_release(struct rexec_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err);
	free(r->start_error);
	memset(r, 0, sizeof(*r));
}

struct orphans {
	const pid_t *keep;
	size_t nkeep;
};

/* The command is reaped and its tree killed: now what left the tree too
 * (kill_orphans), but the processes to keep. */
static void kill_orphans(void *ctx)
{
	const struct orphans *o = ctx;

	(void)reaper_kill_children(o->keep, o->nkeep, 0);
}

int rexec_run(const char *const *argv, const struct rexec_opts *o, struct rexec_result *ret,
	      struct diag *reterr)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture c = {0};
	struct capture_opts co = {.max_parallel = 1, .drain_ms = 1000};
	struct orphans orph = {o->keep, o->nkeep};
	struct rexec_result res = {0};
	int r;

	strvec_pushv(&spec.argv, argv);
	strvec_pushv(&spec.env, o->env ? o->env : strvec_empty);
	spec.cwd = o->cwd;
	if (o->landlock) {
		strvec_push(&spec.shim.landlock_rw, o->cwd);
		strvec_push(&spec.shim.landlock_rw, "/dev/null");
		strvec_push(&spec.shim.landlock_ro, "/");
		spec.shim.landlock_best_effort = false;
	}
	c.spec = &spec;
	c.timeout_ms = o->timeout_ms ? o->timeout_ms : 120000;
	c.kill_grace_ms = 0; /* SIGKILL at the deadline */
	c.max_out = c.max_err = o->max_output;
	if (o->kill_orphans) {
		c.on_reaped = kill_orphans;
		c.ctx = &orph;
	}
	r = proc_capture(&c, 1, &co);
	if (r < 0)
		goto out;
	if (c.start_result < 0 && o->landlock && c.failed_stage != SHIM_STAGE_SPAWN &&
	    c.failed_stage != SHIM_STAGE_EXEC) {
		/* the sandbox's own steps failed: the command did not run */
		struct sbuf m = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&m, "the sandbox could not start the command (%s): %s",
				shim_stage_name(c.failed_stage),
				c.start_error ? c.start_error : "");
		res.start_error = sbuf_detach(&m, NULL);
		res.exit_code = shim_exit_code(c.failed_stage, c.start_errno);
		*ret = res;
		goto out;
	}
	if (c.start_result < 0) {
		diag_set(reterr, NULL, 0, 0, "%s", c.start_error ? c.start_error : "cannot start");
		r = c.start_result;
		goto out;
	}
	res.exit_code = c.exit_code;
	res.term_signal = c.timed_out ? SIGKILL : c.term_signal;
	res.timed_out = c.timed_out;
	res.out_dropped = c.out_dropped;
	res.err_dropped = c.err_dropped;
	res.out = sbuf_detach(&c.out, &res.out_len);
	res.err = sbuf_detach(&c.err, &res.err_len);
	*ret = res;
out:
	capture_release(&c);
	proc_spec_release(&spec);
	return r;
}
