/* What a sandboxed task's agent (and its gates) may read and write: one
 * policy per task, computed once from data (docs/security.md, issue #25).
 *
 * Reads are an allow-list, never '/':
 *   - the system: /usr, /bin, /sbin, /lib*, /etc without its secrets
 *     (shadow, gshadow, sudoers, ssh/, security/, ssl/private), /proc, and
 *     /dev/zero, /dev/random, /dev/urandom, /dev/full;
 *   - the agent's installation, resolved from its binary and, for a #!
 *     script, its interpreter (the node_modules tree it lives in, the prefix
 *     of a bin/ directory, else the file alone), and this bernstein binary
 *     (the hook command, the shim);
 *   - the task's own session directory (its prompt file, its manifest);
 *   - the repository's object store, which the task's clone borrows
 *     (`git clone --shared`): every committed object is readable;
 *   - the profile's runtime.sandbox.read paths;
 * writes (and reads) only beneath the task's tree, the agent's private HOME,
 * its private TMPDIR and /dev/null, and the profile's runtime.login files
 * of the user's HOME (each file alone: the agent can read and replace its
 * own login token, nothing else there).
 *
 * Never readable, whatever the data says: the user's HOME itself, the
 * repository (its working files, .git and .bernstein/: state.db, logs, other
 * tasks' trees) and the audit key. A read path equal to or above one of them
 * (or inside the repository or the key's directory) is refused by name;
 * an installation that would expose one is narrowed to its file. */
#ifndef BERNSTEIN_ORCH_CONFINE_H
#define BERNSTEIN_ORCH_CONFINE_H

#include <jansson.h>

#include "adapter/profile.h"
#include "proc/contain.h"
#include "proc/netproxy.h"
#include "proc/sandbox.h"
#include "proc/spawn.h"
#include "util/diag.h"
#include "util/strvec.h"

struct confine_input {
	enum sandbox_kind kind;
	const char *repo;	 /* the main checkout (absolute) */
	const char *user_home;	 /* the user's HOME, or NULL */
	const char *audit_key;	 /* the audit key's path, or NULL */
	const char *objects;	 /* the repository's object store, which the clone
				    borrows (alternates): read-only */
	const char *tree;	 /* the task's clone: read-write */
	const char *home;	 /* the agent's private HOME: read-write */
	const char *tmp;	 /* its private TMPDIR: read-write */
	const char *session_dir; /* the attempt's session directory: read-only, or NULL */
	const char *binary;	 /* the agent's argv[0] (absolute), or NULL */
	const char *self_exe;	 /* this bernstein binary, or NULL */
	const char *path_env;	 /* PATH, to find a script's `#!/usr/bin/env` interpreter */
	const struct profile_sandbox *decl; /* the profile's runtime.sandbox, or NULL */
	enum net_mode network;		    /* full (0) unless set (confine-net.c) */
	const char *endpoint;		    /* the agent's endpoint URL (base_url), or NULL */
	const char *net_socket;		    /* llm: the proxy's socket (its directory is bound
					       read-only into the sandbox) */
	const struct profile_strv *login;   /* the profile's runtime.login, or NULL */
	/* programs the agent starts for bernstein (the stdio MCP servers of
	 * mcp_servers:, absolute, NULL-terminated), readable with their
	 * installation and interpreter as the agent's own; NULL: none */
	const char *const *programs;
};

struct confine_policy {
	enum sandbox_kind kind;
	struct strvec ro;	  /* read and execute beneath each (real paths) */
	struct strvec ro_bind;	  /* the same as given (/bin, /etc/localtime): what bwrap
				     binds, and the Landlock rules inside it */
	struct strvec rw;	  /* read-write beneath each */
	struct strvec login_src;  /* a login file of the user's HOME (read-write) ... */
	struct strvec login_dst;  /* ... and where it appears in the agent's HOME */
	enum net_mode network;	  /* full: the host's network; llm, none: a namespace of its own */
	struct strvec net_allow;  /* llm: HOST:PORT the proxy allows */
	struct strvec net_tunnel; /* llm: the loopback HOST:PORT the bridge also listens on */
	unsigned net_proxy_port;  /* llm: the bridge's proxy port on 127.0.0.1 */
	char *net_socket;	  /* llm: the proxy's socket */
};

#define CONFINE_POLICY_INIT                                                                        \
	{                                                                                          \
		.ro = STRVEC_INIT, .ro_bind = STRVEC_INIT, .rw = STRVEC_INIT,                      \
		.login_src = STRVEC_INIT, .login_dst = STRVEC_INIT, .net_allow = STRVEC_INIT,      \
		.net_tunnel = STRVEC_INIT                                                          \
	}

/* Build the policy for in (paths that do not exist are left out). -EPERM
 * with the path and what it would expose in reterr when a declared read
 * path would expose a protected one; -ENOMEM never (xalloc). */
int confine_policy_build(const struct confine_input *in, struct confine_policy *ret,
			 struct diag *reterr);

/* Make each login file appear in the agent's HOME home: a symlink to the
 * user's file (read-write through the policy: the Landlock tier gives the
 * file alone), unless something is already there; its directories are made
 * and walked never through a symlink (util/beneath.h beneath_symlink: the
 * agent controls its HOME between attempts). */
int confine_policy_link_logins(const struct confine_policy *p, const char *home,
			       struct diag *reterr);

/* The tiers this host provides (bit 1u << enum sandbox_kind; NONE always):
 * landlock when the kernel has Landlock; bwrap when it does too and bwrap
 * is on path_env and can make a user namespace (root, or unprivileged user
 * namespaces enabled); container when it does and confine_container_usable()
 * says so. Looked at once per run. */
unsigned confine_host_tiers(const char *path_env, const char *self_exe, const char *scratch);

/* Whether the container tier works here for this user: 0, or a negative
 * errno with the exact host condition in why (no OCI runtime; as a user
 * other than root: no unprivileged user namespaces, or the rootless runtime
 * failed to start a probe container, with its words). As root the kernel
 * facts and the runtime tell; otherwise a container running `true` through
 * `self_exe shim` is started once (in a directory made and removed beneath
 * scratch) and the answer kept for the life of the process. */
int confine_container_usable(const char *path_env, const char *self_exe, const char *scratch,
			     char *why, size_t size);

/* The strongest tier of both masks, else SANDBOX_KIND_NONE. */
enum sandbox_kind confine_strongest(unsigned host, unsigned declared);

/* The absolute path of program name on path_env into buf, or NULL. */
const char *confine_find_program(const char *path_env, const char *name, char *buf, size_t size);

/* argv (argv[0] absolute) run in bubblewrap under p, into *ret: its own
 * namespaces (user, mount, PID, IPC, UTS, cgroup; the network's too unless
 * p->network is full), dying with bernstein, a root holding only p's paths
 * (ro_bind read-only, rw read-write, the login files read-only in the
 * agent's HOME), a private /tmp, /dev and /proc, cwd as its working
 * directory, every capability dropped when drop_caps (bernstein runs as
 * root: root keeps its capabilities inside otherwise and can remount '/'
 * read-write), then `self_exe shim` setting the same Landlock rules inside
 * (and, for llm, the network bridge: confine_net_shim_args()) before the
 * execve of argv. */
void confine_bwrap_argv(const struct confine_policy *p, const char *bwrap, const char *self_exe,
			const char *cwd, bool drop_caps, const char *const *argv,
			struct strvec *ret);

/* The OCI runtime the container tier uses on this host, into buf (an
 * absolute path): crun, unless the host has hybrid cgroups with controllers
 * on cgroup2 (crun 1.8 refuses them; bernstein does not change the host),
 * else runc. NULL with the reason in reterr when none is usable. */
const char *confine_oci_runtime(const char *path_env, char *buf, size_t size, struct diag *reterr);

/* How confine_oci_bundle() writes the parts of a bundle beyond the policy. */
struct confine_oci_opts {
	/* bernstein is not root: a user namespace mapping the caller's uid and
	 * gid to 0 inside (rootless crun and runc need root mapped), the
	 * process run as that 0, which holds no capability */
	bool rootless;
	/* linux.resources (memory.limit, pids.limit, cpu quota and period), or
	 * NULL; cgroupsPath is then `cgroup`, relative to the runtime's own
	 * cgroup: bernstein starts the runtime in the task's cgroups, so the
	 * container's is beneath them, where the sweep finds it */
	const struct contain_limits *limits;
	const char *cgroup;
	/* a poll-pty agent (runtime.pty): process.terminal with consoleSize
	 * rows x cols. The runtime, run in the foreground on bernstein's pty
	 * (its stdin, stdout and stderr), makes the container's console (a pty
	 * of the container's devpts), makes it the controlling terminal of the
	 * container's process, and copies the bytes between it and its own
	 * stdio; it forwards the signals it gets (the terminal's SIGINT and
	 * SIGHUP among them; runc also resizes the console on SIGWINCH). The
	 * Landlock rules inside add /dev/tty (the process's own terminal). */
	bool terminal;
	unsigned rows, cols;
};

/* Write the OCI bundle that runs argv (argv[0] absolute) under p into dir
 * (created 0700, with an empty rootfs/): config.json binds exactly p's
 * paths (read-only, read-write, the login files) into a read-only root,
 * with a private /tmp, /dev and /proc, its own PID, IPC, UTS, mount and
 * cgroup namespaces (and network, unless p->network is full), no
 * capability, no_new_privs, cwd as its working directory, env as its
 * environment, and `self_exe shim` setting the same Landlock rules before
 * the execve of argv; o (may be NULL) adds a user namespace and limits.
 * 0 or a negative errno with reterr. */
int confine_oci_bundle(const struct confine_policy *p, const char *dir, const char *self_exe,
		       const char *cwd, const char *const *env, const char *const *argv,
		       const struct confine_oci_opts *o, struct diag *reterr);

/* The runtime's command line into ret: `runtime --root DIR/state run
 * --bundle DIR ID`: its state in the bundle's directory (bernstein's, not
 * the agent's), never /run/crun or /run/runc, which are root's. */
void confine_oci_argv(const char *runtime, const char *dir, const char *id, struct strvec *ret);

/* Whether a container's end was its memory limit's OOM kill: its runtime
 * exited 137 (the container's init died of SIGKILL, which nothing inside
 * can send it: an init ignores a signal from its own namespace) after the
 * limit was reached, and bernstein neither timed it out nor cancelled it.
 * The kernel's own count is lost with the cgroup the runtime removes. */
bool confine_oci_oom(const struct proc *p);

/* Delete the containers a runtime left in the state of the bundles beneath
 * dir (the state/ of each oci-ID/ in dir or in a directory of dir): a runtime killed by
 * SIGKILL (the group kill after its grace, bernstein and its keeper killed)
 * cannot delete its container, whose processes are gone (the shim's
 * parent-death signal) but whose state and cgroups stay. Each one left is
 * `RUNTIME --root STATE delete --force ID` (kills what may remain, removes
 * the cgroups and the state). Returns how many were deleted, or a negative
 * errno with reterr when one could not be (the first reason). */
int confine_oci_sweep(const char *runtime, const char *path_env, const char *dir,
		      struct diag *reterr);

/* {"tier", "read": [...], "write": [...], "login": [...]} for --dry-run and
 * the task's events. */
json_t *confine_policy_json(const struct confine_policy *p);

void confine_policy_release(struct confine_policy *p);

/* ---- the network (confine-net.c; proc/netproxy.h, docs/security.md) ---- */

#define CONFINE_NET_SOCKET "net.sock"	       /* in the session directory */
#define CONFINE_NET_LOG	   "net-refused.jsonl" /* the proxy's refusals, beside it */

struct agentrun;

/* Whether tier k gives the agent a network namespace of its own (bwrap,
 * container): only there can llm and none be honoured. */
bool confine_tier_has_netns(enum sandbox_kind k);

/* The mode a task gets: its own (wanted >= 0: asked for in the plan or
 * bernstein.yaml), else the default: llm when the tier has a network
 * namespace and the endpoint (base_url) is known, else full. */
enum net_mode confine_net_default(int wanted, enum sandbox_kind k, const char *endpoint);

/* Why mode cannot be had in tier k with this endpoint, into why (one
 * line), or NULL when it can: llm and none need a tier with a network
 * namespace; llm needs an http(s) endpoint URL, or without one (NULL) the
 * agent's provider hosts (hosts: the profile's runtime.sandbox.hosts, may
 * be NULL). */
const char *confine_net_refusal(enum net_mode mode, enum sandbox_kind k, const char *endpoint,
				const struct profile_strv *hosts, char *why, size_t size);

/* Fill p's network fields from in (called by confine_policy_build): for
 * llm the proxy allows the endpoint's HOST:PORT, or without an endpoint
 * each of in->decl->hosts; a loopback one is tunnelled too. 0 or
 * -EOPNOTSUPP / -EINVAL with the reason in reterr. */
int confine_net_build(const struct confine_input *in, struct confine_policy *p,
		      struct diag *reterr);

/* The shim's bridge options for p (llm), appended to ret. */
void confine_net_shim_args(const struct confine_policy *p, struct strvec *ret);

/* llm: the environment the agent gets to find the proxy (HTTPS_PROXY,
 * HTTP_PROXY, their lower-case forms, ALL_PROXY; NO_PROXY empty) replaces
 * those names in env. Nothing for the other modes. */
void confine_net_env(const struct confine_policy *p, struct strvec *env);

/* llm: argv (the sandbox's command) behind `self_exe netproxy`, with the
 * refusal log at log, into ret; for the other modes argv as it is. */
void confine_net_wrap(const struct confine_policy *p, const char *self_exe, const char *log,
		      const char *const *argv, struct strvec *ret);

/* Each host the proxy refused (SESSION_DIR/CONFINE_NET_LOG) as a warning
 * event of the session ar: "network: the proxy refused 'HOST:PORT' (N
 * times): not an allowed host". The number of hosts reported. */
size_t confine_net_report(const char *session_dir, struct agentrun *ar);

/* Refusals as they happen: what of a refusal log was read, and the hosts
 * reported from it (at most CONFINE_NET_WATCH_MAX). Zero-initialised. */
#define CONFINE_NET_WATCH_MAX 256
struct confine_net_watch {
	uint64_t off;
	struct strvec seen;
};

typedef void confine_net_emit_fn(void *userdata, const char *msg);

/* Each host refused for the first time in the complete lines of log
 * (SESSION_DIR/CONFINE_NET_LOG) past w->off, as emit(userdata, "[WHO: ]network:
 * the proxy refused 'HOST:PORT': not an allowed host (...)"); who names a
 * gate, NULL for the agent. Called while the agent or gate runs (the run
 * loop's tick), so `bernstein logs -f` shows a refusal when it happens. The
 * number reported. */
size_t confine_net_watch_poll(struct confine_net_watch *w, const char *log, const char *who,
			      confine_net_emit_fn *emit, void *userdata);
/* Start w at the end of log as it is now (a gate's refusals follow the
 * agent's in the same log), forgetting the hosts seen. */
void confine_net_watch_skip(struct confine_net_watch *w, const char *log);
void confine_net_watch_release(struct confine_net_watch *w);

/* Append a warning event of bernstein's own (dialect "bernstein") with msg
 * to the events file events (an attempt's events.jsonl after its agent
 * ended: a gate's refusals, a gate that could not be confined). 0 or a
 * negative errno. */
int confine_event_append(const char *events, const char *msg);

/* emit functions for confine_net_watch_poll(): userdata is the agent's
 * struct agentrun (agentrun_warning()), or an events file's path
 * (confine_event_append()) */
void confine_net_emit_agent(void *userdata, const char *msg);
void confine_net_emit_file(void *userdata, const char *msg);

/* {"mode", "allow": [...], "tunnel": [...], "proxy"} of p. */
json_t *confine_net_json(const struct confine_policy *p);

#endif
