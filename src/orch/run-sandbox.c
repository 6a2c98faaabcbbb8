/* A task's sandbox: its tier, network, policy and the confined process
 * spec of its agent and gates (orch/confine.h, run-internal.h). */
#include "orch/run-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/envpolicy.h"
#include "adapter/profile.h"
#include "orch/config.h"
#include "proc/contain.h"
#include "proc/landlock.h"
#include "proc/ptydrive.h"
#include "route/select.h"
#include "util/fsutil.h"
#include "util/randid.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/banned.h"

/* The run's directory, where the container tier is probed (not root). */
static char *run_scratch(const struct loop *l)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s/%s", l->e->repo, AGENTRUN_RUNS_DIR, l->run.id);
	return sbuf_detach(&sb, NULL);
}

static unsigned host_tiers(struct loop *l)
{
	if (!l->host_tiers_known) {
		char *dir = run_scratch(l);

		l->host_tiers = confine_host_tiers(envpolicy_get(l->e->host_env, "PATH"),
						   l->e->self_exe, dir);
		l->host_tiers_known = true;
		free(dir);
	}
	return l->host_tiers;
}

/* The network mode t asks for (its own or its plan's, else its role's,
 * else bernstein.yaml's), or -1: the default (orch/confine.h). */
static int task_net_wanted(const struct loop *l, const struct otask *t)
{
	return run_spec(t)->network >= 0 ? run_spec(t)->network
					 : orch_config_network(l->e->cfg, t->row.role);
}

/* The tiers with a network namespace, when t asks for llm or none. */
static unsigned task_net_tiers(const struct loop *l, const struct otask *t)
{
	int w = task_net_wanted(l, t);

	if (w < 0 || w == NET_MODE_FULL)
		return ~0u;
	return (1u << SANDBOX_KIND_BWRAP) | (1u << SANDBOX_KIND_CONTAINER);
}

/* t's sandbox tier: the one recorded when it was first routed
 * ("sandbox_tier" in its spec: kept by a retry and a resume, so its clone
 * stays a clone), else its own sandbox: (or its plan's), else its role's,
 * else bernstein.yaml's; auto is
 * the strongest tier this host provides that the routed adapter's profile
 * declares (none before routing, or when none fits). */
enum sandbox_kind run_task_tier(struct loop *l, const struct otask *t)
{
	enum sandbox_mode m = run_spec(t)->has_sandbox
				      ? run_spec(t)->sandbox
				      : orch_config_sandbox(l->e->cfg, t->row.role);

	if (run_spec(t)->has_tier)
		return run_spec(t)->tier;
	switch (m) {
	case SANDBOX_AUTO: {
		const struct registry_entry *entry =
			t->row.adapter ? catalog_find(l->e->cat, t->row.adapter) : NULL;

		if (!entry || !entry->profile)
			return SANDBOX_KIND_NONE;
		return confine_strongest(host_tiers(l) & task_net_tiers(l, t),
					 entry->profile->runtime.sandbox.tiers);
	}
	case SANDBOX_LANDLOCK:
		return SANDBOX_KIND_LANDLOCK;
	case SANDBOX_BWRAP:
		return SANDBOX_KIND_BWRAP;
	case SANDBOX_CONTAINER:
		return SANDBOX_KIND_CONTAINER;
	default:
		return SANDBOX_KIND_NONE;
	}
}

/* The tiers this host provides that t may get, before it is routed (for
 * capability:sandbox=T: select_input.host_tiers): every one for auto, the
 * one it names, or none. */
unsigned run_task_offered_tiers(struct loop *l, const struct otask *t)
{
	enum sandbox_mode m = run_spec(t)->has_sandbox
				      ? run_spec(t)->sandbox
				      : orch_config_sandbox(l->e->cfg, t->row.role);
	unsigned want;

	switch (m) {
	case SANDBOX_AUTO:
		want = ~0u;
		want &= task_net_tiers(l, t);
		break;
	case SANDBOX_LANDLOCK:
		want = 1u << SANDBOX_KIND_LANDLOCK;
		break;
	case SANDBOX_BWRAP:
		want = 1u << SANDBOX_KIND_BWRAP;
		break;
	case SANDBOX_CONTAINER:
		want = 1u << SANDBOX_KIND_CONTAINER;
		break;
	default:
		return 0;
	}
	return host_tiers(l) & want & ~(1u << SANDBOX_KIND_NONE);
}

/* Whether t runs sandboxed (any tier): a clone of its own, confined. */
bool run_task_sandboxed(struct loop *l, const struct otask *t)
{
	return run_task_tier(l, t) != SANDBOX_KIND_NONE;
}

/* Overlay trees not taken, and why: said once a run (a warning and the
 * audit record checkout.fallback). */
static void overlay_refused(struct loop *l, const struct otask *t, const char *why)
{
	const char *wanted = l->overlay == 2 ? "reflink" : "overlay";
	char both[1024];

	/* a non-root user's: and why it had no namespace of its own */
	if (l->e->overlay_userns_why) {
		(void)snprintf(both, sizeof(both), "%s; no user namespace of its own: %s", why,
			       l->e->overlay_userns_why);
		why = both;
	}
	l->overlay = -1;
	run_warn(
		l, t,
		"checkout: %s: not used, every tree is a `git worktree add` (a sandboxed task's a plain clone): %s",
		wanted, why);
	(void)run_audit(
		l, "checkout.fallback", "run", l->run.id,
		json_pack("{s:s, s:s, s:s}", "wanted", wanted, "got", "worktree", "reason", why));
}

/* Overlay trees refused but reflink copies taken (co->fallback says why):
 * said once a run; the tasks after get reflink trees at once (a sandboxed
 * task's a reflink clone). */
static void overlay_reflinked(struct loop *l, const struct otask *t, const char *why)
{
	char both[1024];

	if (l->e->overlay_userns_why) {
		(void)snprintf(both, sizeof(both), "%s; no user namespace of its own: %s", why,
			       l->e->overlay_userns_why);
		why = both;
	}
	l->overlay = 2;
	run_warn(
		l, t,
		"checkout: overlay: not used, every tree is made of reflink copies of a shared base checkout: %s",
		why);
	(void)run_audit(
		l, "checkout.fallback", "run", l->run.id,
		json_pack("{s:s, s:s, s:s}", "wanted", "overlay", "got", "reflink", "reason", why));
}

/* Whether a task gets an overlay tree (checkout:, decided
 * once): overlay, or auto in a repository of CHECKOUT_OVERLAY_AUTO_FILES
 * files or more; not when BERNSTEIN_OVERLAY=off is in the host's
 * environment (then said why), nor after a mount was refused. */
static bool overlay_wanted(struct loop *l, const struct otask *t)
{
	enum checkout_mode m = l->e->cfg->checkout;
	const char *knob = envpolicy_get(l->e->host_env, RUN_OVERLAY_ENV);
	uint32_t files = 0;

	if (l->overlay)
		return l->overlay > 0;
	l->overlay = -1;
	if (m == CHECKOUT_MODE_WORKTREE)
		return false;
	if (m == CHECKOUT_MODE_REFLINK) {
		l->overlay = 2;
		return true;
	}
	if (m == CHECKOUT_MODE_AUTO && (checkout_overlay_repo_files(l->e->repo, &files) < 0 ||
					files < CHECKOUT_OVERLAY_AUTO_FILES))
		return false;
	if (knob && strcmp(knob, "off") == 0) {
		overlay_refused(l, t, RUN_OVERLAY_ENV "=off is set");
		return false;
	}
	l->overlay = 1;
	/* a non-root user's overlays: in the namespace the run entered */
	if (l->e->overlay_userns)
		(void)run_audit(l, "checkout.userns", "run", l->run.id,
				json_pack("{s:s, s:I, s:I}", "namespace", "user+mount", "uid",
					  (json_int_t)geteuid(), "gid", (json_int_t)getegid()));
	return true;
}

/* t's checkout (orch/checkout.h), bound on first use: a clone of its own
 * when t runs sandboxed (its files an overlay when checkout: says so), else
 * an overlay worktree when checkout: says so, else a worktree of the
 * repository. The one place that asks which kind it
 * is. NULL while t has none (before dispatch named it). */
struct checkout *run_task_checkout(struct loop *l, struct otask *t)
{
	enum checkout_kind kind;

	if (!checkout_bound(&t->co)) {
		if (!t->row.worktree || !t->row.branch)
			return NULL;
		/* l->overlay 2: reflink trees (a sandboxed task's a reflink clone) */
		if (run_task_sandboxed(l, t))
			kind = !overlay_wanted(l, t) ? CHECKOUT_CLONE
			       : l->overlay == 2     ? CHECKOUT_CLONE_REFLINK
						     : CHECKOUT_CLONE_OVERLAY;
		else
			kind = !overlay_wanted(l, t) ? CHECKOUT_WORKTREE
			       : l->overlay == 2     ? CHECKOUT_REFLINK
						     : CHECKOUT_OVERLAY;
		checkout_bind(&t->co, kind, l->e->repo, l->e->git_env, t->row.worktree,
			      t->row.branch);
	}
	return &t->co;
}

/* t's checkout was made: an overlay refused (co->fallback) is said once,
 * and the tasks after it get plain worktrees at once. */
void run_checkout_made(struct loop *l, struct otask *t)
{
	if (!t->co.fallback || l->overlay < 0)
		return;
	if (!checkout_is_reflink(&t->co))
		overlay_refused(l, t, t->co.fallback);
	else if (l->overlay == 1)
		overlay_reflinked(l, t, t->co.fallback);
}

/* The shared base checkouts of overlay trees that no tree uses any more
 * removed: at the end of an execution. */
void run_overlay_gc(struct loop *l)
{
	struct diag d;

	diag_clear(&d);
	if (checkout_overlay_gc(l->e->repo, l->e->git_env, NULL, &d) < 0)
		run_warn(l, NULL, "checkout: overlay: cannot remove an unused base checkout: %s",
			 d.msg);
}

/* t's endpoint (the base_url its agent is pointed at), or NULL: borrowed
 * from its spec or the configuration. */
static const char *task_endpoint(struct loop *l, const struct otask *t)
{
	const struct registry_entry *entry =
		t->row.adapter ? catalog_find(l->e->cat, t->row.adapter) : NULL;
	struct invocation_sampling out;

	orch_config_slots(l->e->cfg, t->row.role, entry ? entry->profile : NULL,
			  orch_config_endpoint(l->e->cfg, &run_spec(t)->endpoints, t->row.adapter),
			  &run_spec(t)->sampling, &out);
	return (out.set & (1u << SAMPLING_BASE_URL)) ? out.base_url : NULL;
}

/* t's network mode in its tier (orch/confine.h). */
static enum net_mode run_task_network(struct loop *l, const struct otask *t)
{
	return confine_net_default(task_net_wanted(l, t), run_task_tier(l, t), task_endpoint(l, t));
}

/* t's sandbox policy (orch/confine.h), built once per attempt: binary is
 * the agent's argv[0] (NULL for a gate after a resume), session_dir its
 * session directory (NULL: none yet). */
int run_task_policy(struct loop *l, struct otask *t, const char *binary, const char *session_dir,
		    const char *home, const char *tmp, struct diag *reterr)
{
	const struct registry_entry *entry;
	char *objects = NULL;
	struct confine_input in = {
		.kind = run_task_tier(l, t),
		.repo = l->e->repo,
		.user_home = envpolicy_get(l->e->host_env, "HOME"),
		.audit_key = l->e->audit_key_path,
		.tree = t->row.worktree,
		.home = home,
		.tmp = tmp,
		.session_dir = session_dir,
		.binary = binary,
		.self_exe = l->e->self_exe,
		.path_env = envpolicy_get(l->e->host_env, "PATH"),
		.network = run_task_network(l, t),
		.endpoint = task_endpoint(l, t),
		.programs = (const char *const *)run_plan(t)->mcp_programs.v,
	};
	char *sock = NULL;
	int r;

	if (t->sb_built)
		return 0;
	if (in.network == NET_MODE_LLM)
		in.net_socket = sock = session_dir ? agentrun_path(session_dir, CONFINE_NET_SOCKET)
				       : t->session_dir
					       ? agentrun_path(t->session_dir, CONFINE_NET_SOCKET)
					       : run_session_path(l, t, CONFINE_NET_SOCKET);
	r = worktree_repo_objects(l->e->repo, l->e->git_env, &objects, reterr);
	if (r < 0)
		return r;
	in.objects = objects;
	entry = t->row.adapter ? catalog_find(l->e->cat, t->row.adapter) : NULL;
	if (entry && entry->profile) {
		in.decl = &entry->profile->runtime.sandbox;
		in.login = &entry->profile->runtime.login;
	}
	r = confine_policy_build(&in, run_sb(t), reterr);
	free(objects);
	free(sock);
	if (r < 0)
		return r;
	run_worktree_setup_ro(l, t, run_sb(t)); /* symlink_dirs: read-only */
	t->sb_built = true;
	return 0;
}

/* The agent (or a gate) of a sandboxed task: read-write its clone, its
 * HOME, a private TMPDIR (set in its environment) and /dev/null; read-only
 * what t's policy allows; Landlock set before its execve, or for bwrap,
 * argv run in bubblewrap with the same Landlock rules inside; no Landlock
 * (or no bwrap), no agent (never best effort). */
int run_confine_spec(struct loop *l, struct otask *t, const char *home, const char *tmp,
		     struct proc_spec *spec, struct diag *reterr)
{
	const char *path_env = envpolicy_get(l->e->host_env, "PATH");
	const char *cwd = spec->cwd ? spec->cwd : t->row.worktree;
	struct strvec env = STRVEC_INIT, argv = STRVEC_INIT;
	char prog[PATH_MAX];
	size_t i;
	int r;

	r = mkdir_p(home, 0700);
	if (r >= 0)
		r = mkdir_p(tmp, 0700);
	if (r < 0) {
		diag_set(reterr, tmp, 0, 0, "cannot create the agent's HOME or TMPDIR: %s",
			 strerror(-r));
		return r;
	}
	r = run_task_policy(l, t, NULL, NULL, home, tmp, reterr);
	if (r >= 0 && run_sb(t)->kind == SANDBOX_KIND_LANDLOCK)
		r = confine_policy_link_logins(run_sb(t), home, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < spec->env.nr; i++)
		if (strncmp(spec->env.v[i], "TMPDIR=", 7) != 0)
			strvec_push(&env, spec->env.v[i]);
	strvec_pushf(&env, "TMPDIR=%s", tmp);
	confine_net_env(run_sb(t), &env);
	strvec_clear(&spec->env);
	spec->env = env;
	switch (run_sb(t)->kind) {
	case SANDBOX_KIND_BWRAP:
		if (!confine_find_program(path_env, "bwrap", prog, sizeof(prog))) {
			diag_set(
				reterr, NULL, 0, 0,
				"sandbox: bwrap: bubblewrap (bwrap) is not on PATH (the task is not run unconfined)");
			return -ENOENT;
		}
		confine_bwrap_argv(run_sb(t), prog, l->e->self_exe, cwd, geteuid() == 0,
				   (const char *const *)spec->argv.v, &argv);
		/* bwrap makes user and PID namespaces of its own, which it
		 * cannot inside a user namespace of ours that has no uid map
		 * (not root): there its own PID namespace and --die-with-parent
		 * contain the agent, and ours is not asked for */
		if (geteuid() != 0 && spec->contain < CONTAIN_CGROUP)
			spec->contain = CONTAIN_CGROUP;
		break;
	case SANDBOX_KIND_CONTAINER: {
		/* a bundle per start (agent or gate), beside the session's files,
		 * where the agent cannot write */
		char hex[20], id[160], *dir;
		struct sbuf sb = SBUF_INIT(SIZE_MAX);
		struct confine_oci_opts o = {.rootless = geteuid() != 0, .cgroup = id};

		o.limits = &spec->limits;
		/* a poll-pty agent: a console of its own in the container, the
		 * runtime on its pty in the foreground (confine_oci_opts) */
		if (spec->pty && spec->pty->declared) {
			o.terminal = true;
			ptydrive_rows_cols(spec->pty, &o.rows, &o.cols);
		}
		if (!confine_oci_runtime(path_env, prog, sizeof(prog), reterr))
			return -ENOENT;
		randid_hex(hex, 8, l->e->clk->now_ns(l->e->clk));
		if (t->session_dir)
			(void)sbuf_addf(&sb, "%s/oci-%s", t->session_dir, hex);
		else
			(void)sbuf_addf(&sb, "%s/%s/%s/%s/oci-%s", l->e->repo, AGENTRUN_RUNS_DIR,
					l->run.id, t->row.session, hex);
		dir = sbuf_detach(&sb, NULL);
		(void)snprintf(id, sizeof(id), "bernstein-%s-%s", t->row.session, hex);
		r = confine_oci_bundle(run_sb(t), dir, l->e->self_exe, cwd,
				       (const char *const *)spec->env.v,
				       (const char *const *)spec->argv.v, &o, reterr);
		if (r >= 0)
			confine_oci_argv(prog, dir, id, &argv);
		/* rootless: the runtime makes the user namespace, as bwrap does */
		if (o.rootless && spec->contain < CONTAIN_CGROUP)
			spec->contain = CONTAIN_CGROUP;
		free(dir);
		if (r < 0)
			return r;
		break;
	}
	default:
		strvec_pushv(&spec->shim.landlock_rw, run_sb(t)->rw.v);
		strvec_pushv(&spec->shim.landlock_rw, run_sb(t)->login_src.v); /* each file alone */
		strvec_pushv(&spec->shim.landlock_ro, run_sb(t)->ro.v);
		spec->shim.landlock_best_effort = false;
		return 0;
	}
	strvec_clear(&spec->argv);
	spec->argv = argv;
	if (run_sb(t)->network == NET_MODE_LLM) {
		/* the sandbox's command behind the proxy (orch/confine.h) */
		char *log = t->session_dir ? agentrun_path(t->session_dir, CONFINE_NET_LOG)
					   : run_session_path(l, t, CONFINE_NET_LOG);

		argv = (struct strvec)STRVEC_INIT;
		confine_net_wrap(run_sb(t), l->e->self_exe, log, (const char *const *)spec->argv.v,
				 &argv);
		free(log);
		strvec_clear(&spec->argv);
		spec->argv = argv;
	}
	return 0;
}

/* Why t cannot have its tier and network here, into msg (one line), or
 * NULL: never run unconfined, nor with the host's network, instead. */
const char *run_tier_refusal(struct loop *l, const struct otask *t, char *msg, size_t size)
{
	const char *path_env = envpolicy_get(l->e->host_env, "PATH");
	enum sandbox_kind k = run_task_tier(l, t);
	const struct registry_entry *entry =
		t->row.adapter ? catalog_find(l->e->cat, t->row.adapter) : NULL;
	const char *why = NULL;
	struct diag d;

	diag_clear(&d);
	if (confine_net_refusal(run_task_network(l, t), k, task_endpoint(l, t),
				entry && entry->profile ? &entry->profile->runtime.sandbox.hosts
							: NULL,
				msg, size))
		return msg;
	if (k == SANDBOX_KIND_NONE)
		return NULL;
	if (landlock_abi_version() < 0)
		why = "sandbox: landlock: the kernel does not support Landlock (the task is not run unconfined)";
	else if (k == SANDBOX_KIND_BWRAP && !confine_find_program(path_env, "bwrap", msg, size))
		why = "sandbox: bwrap: bubblewrap (bwrap) is not on PATH (the task is not run unconfined)";
	if (!why && k == SANDBOX_KIND_CONTAINER) {
		/* a runtime, and as another user than root a probe container
		 * that worked (confine_container_usable): the reason in msg */
		char *dir = run_scratch(l);
		int r = confine_container_usable(path_env, l->e->self_exe, dir, msg, size);

		free(dir);
		return r < 0 ? msg : NULL;
	}
	if (!why)
		return NULL;
	(void)snprintf(msg, size, "%s", why);
	return msg;
}

void run_container_sweep(struct loop *l, const struct otask *t)
{
	const char *path_env = envpolicy_get(l->e->host_env, "PATH");
	char rt[PATH_MAX], *dir;
	struct diag d;

	if (!t->row.session || run_task_tier(l, t) != SANDBOX_KIND_CONTAINER)
		return;
	diag_clear(&d);
	if (!confine_oci_runtime(path_env, rt, sizeof(rt), &d))
		return;
	dir = run_session_path(l, t, NULL);
	if (confine_oci_sweep(rt, path_env, dir, &d) < 0)
		run_warn(l, t, "sandbox: container: %s", d.msg);
	free(dir);
}

void run_net_event(const struct otask *t, const char *msg)
{
	char *ev = t->session_dir ? agentrun_path(t->session_dir, "events.jsonl") : NULL;

	if (ev)
		(void)confine_event_append(ev, msg);
	free(ev);
}

bool run_net_watch(struct otask *t)
{
	char who[ORCH_MAX_NAME + 16], *log, *ev;

	if (!t->sb_built || run_sb(t)->network != NET_MODE_LLM || !t->session_dir ||
	    !(t->gate_live || (t->live && t->prep != PREP_RUNNING)))
		return false;
	log = agentrun_path(t->session_dir, CONFINE_NET_LOG);
	if (t->gate_live || t->prep == PREP_SETUP) {
		if (t->gate_live)
			(void)snprintf(who, sizeof(who), "gate '%s'",
				       t->gates[t->gate_next].name ? t->gates[t->gate_next].name
								   : "?");
		else
			(void)snprintf(who, sizeof(who), "worktree setup");
		ev = agentrun_path(t->session_dir, "events.jsonl");
		(void)confine_net_watch_poll(&t->nw, log, who, confine_net_emit_file, ev);
		free(ev);
	} else if (t->ar) {
		(void)confine_net_watch_poll(&t->nw, log, NULL, confine_net_emit_agent, t->ar);
	}
	free(log);
	return true;
}
