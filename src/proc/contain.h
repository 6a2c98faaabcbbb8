/* Containment of every child bernstein starts, and its resource limits
 * (docs/supervision.md, "Containment").
 *
 * Nothing a child starts may outlive it, bernstein's death (SIGKILL included)
 * or a cancel: not a process that calls setsid(), double-forks, ignores
 * SIGTERM or is re-parented to init. What the host allows is detected once
 * per process, and the strongest tier is used for every child:
 *
 *   pidns   the child is pid 1 of a PID namespace of its own (and a mount
 *           namespace with a fresh /proc, so it sees only its own processes;
 *           through a user namespace when bernstein is not root). When it
 *           dies, the kernel SIGKILLs every process of the namespace; its
 *           parent-death signal reaches it from bernstein's namespace.
 *   cgroup  the child runs in a cgroup of its own, killed whole when the
 *           task ends or by the keeper when bernstein dies (cgroup.kill on
 *           cgroup v2, else every pid of cgroup.procs until none is left).
 *   pgroup  only its own process group, the keeper and the subreaper: a
 *           process that leaves the group (setsid) escapes.
 *
 * Limits (memory, pids, cpu) need a cgroup with the controller: v2 where it
 * is delegated to bernstein's cgroup, else v1. Children with limits get a
 * cgroup whatever the tier. A cgroup lives at
 *   <bernstein's own cgroup>/bernstein/<scope>/<leaf>
 * in each hierarchy used (v2: beside bernstein's own cgroup, in its parent,
 * when v2 controllers are needed and bernstein's own cgroup is not the root,
 * because v2 gives controllers only to cgroups without processes of their
 * own), where the scope names this bernstein process (its pid, its start
 * time and its PID namespace), so that contain_sweep_stale() can kill and
 * remove what a dead bernstein left.
 *
 * This module is in proc/ and makes no policy: spawn.c applies it. */
#ifndef BERNSTEIN_PROC_CONTAIN_H
#define BERNSTEIN_PROC_CONTAIN_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/child.h"
#include "util/diag.h"

/* Strongest first. As a request (struct proc_spec, contain_set_max_tier()),
 * the strongest tier allowed; CONTAIN_AUTO: whatever the host allows. */
enum contain_tier {
	CONTAIN_AUTO,	/* "auto" */
	CONTAIN_PIDNS,	/* "pidns" */
	CONTAIN_CGROUP, /* "cgroup" */
	CONTAIN_PGROUP, /* "pgroup" */
	_CONTAIN_TIER_MAX,
	_CONTAIN_TIER_INVALID = -EINVAL,
};

const char *contain_tier_to_string(enum contain_tier t);
enum contain_tier contain_tier_from_string(const char *s);

enum contain_ctrl {
	CONTAIN_CTRL_MEMORY, /* "memory" */
	CONTAIN_CTRL_PIDS,   /* "pids" */
	CONTAIN_CTRL_CPU,    /* "cpu" */
	_CONTAIN_CTRL_MAX,
};

const char *contain_ctrl_name(enum contain_ctrl c);

/* Resource limits of one child and everything it starts; 0 = none. */
struct contain_limits {
	uint64_t memory;    /* bytes (memory.max / memory.limit_in_bytes; swap too) */
	uint64_t pids;	    /* processes and threads (pids.max) */
	uint64_t cpu_milli; /* thousandths of a CPU (cpu.max / cpu.cfs_quota_us) */
};

#define CONTAIN_MIN_MEMORY    ((uint64_t)1 << 20)     /* 1 MiB */
#define CONTAIN_MAX_MEMORY    ((uint64_t)1 << 50)     /* 1 PiB */
#define CONTAIN_MAX_PIDS      4194304		      /* the kernel's pid_max ceiling */
#define CONTAIN_MIN_CPU_MILLI 10		      /* 1 ms per 100 ms period */
#define CONTAIN_MAX_CPU_MILLI ((uint64_t)1024 * 1000) /* 1024 CPUs */

bool contain_limits_any(const struct contain_limits *l);
/* "memory 512M, pids 256, cpu 1.5" (only what is set; "none"). */
const char *contain_limits_describe(const struct contain_limits *l, char *buf, size_t size);

/* One cgroup hierarchy bernstein may use. */
#define CONTAIN_HIER_V2	 0
#define CONTAIN_HIER_MAX (1 + _CONTAIN_CTRL_MAX) /* v2, then the v1 one of each controller */

struct contain_hier {
	int version;	      /* 2 or 1; 0: not mounted */
	bool usable;	      /* bernstein may create its cgroups here */
	unsigned ctrls;	      /* bit (1 << enum contain_ctrl): the limits it can enforce */
	bool kill_file;	      /* cgroup.kill (v2, Linux 5.14+) */
	char mount[PATH_MAX]; /* where the hierarchy is mounted */
	char own[PATH_MAX];   /* bernstein's own cgroup in it ("/process_api/x") */
	char base[PATH_MAX];  /* the directory of bernstein's cgroups (absolute) */
	char why[256];	      /* !usable: why not */
};

struct contain_host {
	bool root;	     /* effective uid 0 */
	bool pidns;	     /* a PID namespace with a fresh /proc works */
	bool userns;	     /* ... only inside a user namespace of its own */
	char pidns_why[256]; /* !pidns: why not */
	struct contain_hier hier[CONTAIN_HIER_MAX];
	int kill_hier; /* the hierarchy a "cgroup" tier child is killed through; -1 */
	int ctrl_hier[_CONTAIN_CTRL_MAX]; /* where each limit is enforced; -1: nowhere */
	enum contain_tier best;		  /* the strongest tier the host allows */
	enum contain_tier tier;		  /* best, or weaker if the operator said so */
	enum contain_tier max_tier;	  /* the operator's cap (contain_set_max_tier()) */
	char scope[96];			  /* this process's scope name */
};

/* Cap the tier every later child gets (the cli passes BERNSTEIN_CONTAIN):
 * CONTAIN_AUTO for none. Takes effect for the cached detection at once. */
void contain_set_max_tier(enum contain_tier max);

/* The host, detected on first use and cached for the life of the process
 * (thread-safe). Never NULL. */
const struct contain_host *contain_host(void);

/* Detect now, without the cache (doctor, tests): probes a PID namespace by
 * starting a process in one, reads /proc/self/cgroup and mountinfo. */
void contain_detect(struct contain_host *ret);

/* The cgroup part of the detection from the text of /proc/self/cgroup and
 * /proc/self/mountinfo (unit-testable): fills ret->hier[] (mount, own, base,
 * version, ctrls; usable only as far as the text tells: the file-system
 * checks are contain_detect()'s) and leaves the rest. 0 or -EINVAL when
 * neither text has a cgroup. */
int contain_parse_cgroups(const char *proc_cgroup, const char *mountinfo, struct contain_host *ret);

/* Choose the tier and where each controller and the kill go, from what
 * ret->pidns and ret->hier[].usable say. */
void contain_choose(struct contain_host *h);

/* The tier a child asking for req (CONTAIN_AUTO: no cap) gets on h: the
 * strongest supported one no stronger than req and h->tier. */
enum contain_tier contain_effective(const struct contain_host *h, enum contain_tier req);

/* Can h enforce l? 0, or -EOPNOTSUPP with the reason (which limit, why) in
 * why: "limits: memory: no cgroup memory controller is available to
 * bernstein (cgroup v1 memory: /sys/fs/cgroup/memory/x is not writable)". */
int contain_limits_check(const struct contain_host *h, const struct contain_limits *l, char *why,
			 size_t size);

/* The cgroups of one child. */
struct contain_cg {
	unsigned n;
	int hier[CONTAIN_HIER_MAX];  /* which hierarchy */
	char *dir[CONTAIN_HIER_MAX]; /* the leaf directory (absolute) */
	int kill_idx;		     /* the one with cgroup.kill, or -1 (sweep them all) */
	int oom_idx;		     /* the one with the memory limit, or -1 */
};

/* Create the cgroups a child needs: with limits, in the hierarchy of each
 * limited controller; for the cgroup tier (for_kill), in the kill hierarchy.
 * name (optional) is sanitized into the leaf's name after a sequence number.
 * The limits are written; *procs_fds (at least CONTAIN_HIER_MAX) gets an
 * open O_WRONLY cgroup.procs of each, in the order of ret's dirs, for the
 * child to enter with contain_child_enter(). Returns 0, or a negative errno
 * with reterr (nothing is left behind). */
int contain_cg_create(const struct contain_host *h, const char *name,
		      const struct contain_limits *l, bool for_kill, struct contain_cg **ret,
		      int *procs_fds, struct diag *reterr);
/* SIGKILL every process in cg (and its sub-cgroups): cgroup.kill where
 * there is one, else rounds of cgroup.procs until empty. 0 or -EAGAIN when
 * something was still there after the last round. */
int contain_cg_kill(const struct contain_cg *cg);
/* How many processes the kernel's OOM killer killed in cg (0 without a
 * memory limit). */
uint64_t contain_cg_oom_kills(const struct contain_cg *cg);
/* Whether cg's memory limit was reached at least once (v1 memory.failcnt
 * or memory.memsw.failcnt, v2 memory.events max): an OCI runtime removes
 * the container's own cgroup, and with it v1's count of the kills there,
 * before it exits. */
bool contain_cg_memory_hit(const struct contain_cg *cg);
/* Kill what is left and remove the cgroups (children first), waiting a
 * little for the killed to leave. 0, or a negative errno when a directory
 * would not go (it stays for contain_sweep_stale()). */
int contain_cg_remove(struct contain_cg *cg);
/* Frees (does not remove); returns NULL. */
struct contain_cg *contain_cg_free(struct contain_cg *cg);

/* The directories of this process's scope in each usable hierarchy, for the
 * keeper: up to CONTAIN_HIER_MAX into dirs (each PATH_MAX); their number. */
unsigned contain_scope_dirs(const struct contain_host *h, char (*dirs)[PATH_MAX]);

/* Kill and remove every process of the cgroup tree at dir and the tree
 * itself (async-signal-safe: the keeper calls it after bernstein died).
 * 0, or a negative errno when something would not go. */
int contain_kill_tree(const char *dir);

/* Kill and remove the scopes other bernstein processes left behind: those
 * of a process of this PID namespace that is gone (or whose pid was reused).
 * Returns how many scopes were removed, or a negative errno. */
int contain_sweep_stale(const struct contain_host *h);

/* Whether pid (the init of its PID namespace) would be ended by sig: it
 * neither catches nor ignores it. A namespace's init only receives the
 * signals it has a handler for (SIGKILL from bernstein's namespace aside),
 * so the caller sends SIGKILL instead. False when pid cannot be read. */
bool contain_init_default_action(pid_t pid, int sig);

/* In the child of proc_spawn(), before anything else: enter the cgroups
 * (write "0" to each cgroup.procs fd). System calls only. */
VFORK_SAFE int contain_child_enter(const int *procs_fds, unsigned n);
/* In the child of proc_spawn() started in new PID and mount namespaces:
 * make every mount private and mount a fresh /proc. System calls only. */
VFORK_SAFE int contain_child_ns(void);

#endif
