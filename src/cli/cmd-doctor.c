/* bernstein doctor: whether this host and repository are ready for a run:
 * the agents that are usable (binary found, credentials present: an API key
 * variable or the CLI's own login files), the repository (git, clean,
 * .bernstein/ ignored, bernstein.yaml valid), the sandbox tiers, and what
 * the host lets bernstein do for its children (the containment tier, the
 * cgroup hierarchies, the limits it can enforce), detected the way every
 * spawn detects it (docs/supervision.md, "Containment"). Each problem comes
 * with a fix. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/credential.h"
#include "adapter/usable.h"
#include "cli/catalog-paths.h"
#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/output.h"
#include "cli/repo-config.h"
#include "orch/config.h"
#include "orch/confine.h"
#include "orch/worktree.h"
#include "proc/contain.h"
#include "proc/landlock.h"
#include "proc/probe.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

const char doctor_usage[] = "[--json]";
const char doctor_help[] =
	"Reports whether this host and repository are ready for a run, each problem\n"
	"with its fix: the agents that are usable (binary on PATH, and credentials:\n"
	"an API key variable the profile passes or its endpoints: entry in\n"
	"bernstein.yaml names, or the CLI's own login files), the\n"
	"repository (git, clean, .bernstein/ ignored, bernstein.yaml valid), the\n"
	"sandbox tiers (landlock, bwrap, container) this host gives a task for the\n"
	"user running it and why not where it does not (as a user other than root a\n"
	"rootless container is started once to find out), and how bernstein\n"
	"contains the processes it starts here: the tier in use (pidns: a PID\n"
	"namespace per child; cgroup: a cgroup per child; pgroup: its process group\n"
	"only), the strongest one the host allows and why a stronger one is not, the\n"
	"cgroup hierarchies bernstein may use, and which limits (memory, pids, cpu)\n"
	"it can enforce. BERNSTEIN_CONTAIN caps the tier. Exits 0: it is a report.\n"
	"See docs/supervision.md (\"Containment\") and docs/security.md.\n"
	"\n"
	"Options:\n"
	"  --json      one JSON object\n";

/* The sandbox tiers for this user. */
struct tiers {
	int landlock_abi;
	bool bwrap, container;
	const char *runtime; /* the container's OCI runtime, or NULL */
	char runtime_buf[PATH_MAX];
	char container_why[1024];
};

static void detect_tiers(struct cli_ctx *ctx, struct tiers *t)
{
	const char *path = cli_getenv(ctx, "PATH"), *tmp = cli_getenv(ctx, "TMPDIR");
	char self[PATH_MAX], scratch[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	unsigned m;
	struct diag d;

	memset(t, 0, sizeof(*t));
	diag_clear(&d);
	self[n > 0 ? n : 0] = '\0';
	(void)snprintf(scratch, sizeof(scratch), "%s/bernstein-doctor.XXXXXX",
		       tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(scratch))
		scratch[0] = '\0';
	t->landlock_abi = landlock_abi_version();
	m = confine_host_tiers(path, n > 0 ? self : NULL, scratch[0] ? scratch : NULL);
	t->bwrap = m & (1u << SANDBOX_KIND_BWRAP);
	t->container = m & (1u << SANDBOX_KIND_CONTAINER);
	t->runtime = confine_oci_runtime(path, t->runtime_buf, sizeof(t->runtime_buf), &d);
	if (!t->container)
		(void)confine_container_usable(path, n > 0 ? self : NULL,
					       scratch[0] ? scratch : NULL, t->container_why,
					       sizeof(t->container_why));
	if (scratch[0])
		(void)rmdir(scratch);
}

static json_t *tier_json(bool ok, const char *why)
{
	json_t *o = json_object();

	cli_jset(o, "available", json_boolean(ok));
	cli_jset(o, "error", ok ? json_null() : cli_jstr(why));
	return o;
}

static json_t *tiers_json(const struct tiers *t)
{
	json_t *o = json_object(), *c;

	cli_jset(o, "uid", json_integer((json_int_t)geteuid()));
	cli_jset(o, "landlock",
		 tier_json(t->landlock_abi > 0, "the kernel does not support Landlock"));
	if (t->landlock_abi > 0)
		cli_jset(json_object_get(o, "landlock"), "abi", json_integer(t->landlock_abi));
	cli_jset(
		o, "bwrap",
		tier_json(t->bwrap, t->landlock_abi > 0
					    ? "bwrap is not on PATH or cannot make a user namespace"
					    : "the kernel does not support Landlock"));
	c = tier_json(t->container, t->container_why);
	cli_jset(c, "runtime", t->runtime ? cli_jstr(t->runtime) : json_null());
	cli_jset(c, "rootless", json_boolean(geteuid() != 0));
	cli_jset(o, "container", c);
	return o;
}

static const char *hier_label(int i, char *buf, size_t size)
{
	if (i == CONTAIN_HIER_V2)
		(void)snprintf(buf, size, "cgroup v2");
	else
		(void)snprintf(buf, size, "cgroup v1 %s",
			       contain_ctrl_name((enum contain_ctrl)(i - 1)));
	return buf;
}

static json_t *ctrls_json(unsigned ctrls)
{
	json_t *a = json_array();
	int c;

	for (c = 0; c < _CONTAIN_CTRL_MAX; c++)
		if (ctrls & (1u << c))
			(void)json_array_append_new(a, json_string(contain_ctrl_name(c)));
	return a;
}

/* ---- readiness: agents, repository, sandbox ---- */

/* One line of the report: what was looked at, whether it is fine, what was
 * found and, when it is not fine, how to fix it. */
struct finding {
	const char *section; /* "agents", "repository", "sandbox" */
	char *name;
	bool ok;
	char *detail;
	char *fix; /* NULL when ok */
};

struct findings {
	struct finding *v;
	size_t n, alloc;
	size_t not_installed; /* agents whose binary is not on PATH */
};

static void add_finding(struct findings *f, const char *section, const char *name, bool ok,
			char *detail, char *fix)
{
	if (f->n == f->alloc) {
		f->alloc = f->alloc ? 2 * f->alloc : 16;
		f->v = xrealloc(f->v, st_mult(f->alloc, sizeof(*f->v)));
	}
	f->v[f->n++] = (struct finding){section, xstrdup(name), ok, detail, fix};
}

static char *joinv(const struct strvec *v, const char *sep)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t i;

	for (i = 0; i < v->nr; i++)
		(void)sbuf_addf(&sb, "%s%s", i ? sep : "", v->v[i]);
	return sbuf_detach(&sb, NULL);
}

/* An installed agent: usable when it has credentials, an API key variable
 * it passes through or one of its login files (or its profile declares
 * neither: the CLI logs in its own way, which bernstein cannot see). */
static void check_agent(const struct registry_entry *e, const struct usable *u, struct findings *f)
{
	struct sbuf d = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&d, "%s", u->binary);
	if (u->keys_set.nr) {
		char *x = joinv(&u->keys_set, ", ");

		(void)sbuf_addf(&d, "; key: %s", x);
		free(x);
	}
	if (u->logins_have.nr) {
		char *x = joinv(&u->logins_have, ", ");

		(void)sbuf_addf(&d, "; login: %s", x);
		free(x);
	}
	if (u->own_login)
		(void)sbuf_addf(&d, "; credentials: its own (the profile declares none)");
	add_finding(f, "agents", e->name, u->usable, sbuf_detach(&d, NULL),
		    u->usable ? NULL : xstrdup(u->lacks));
}

/* The repository's bernstein.yaml, quietly (check_repo() reports it), or
 * NULL. */
static struct orch_config *repo_config(struct cli_ctx *ctx)
{
	struct catalog_paths paths;
	struct orch_config *cfg = NULL;
	struct sbuf path = SBUF_INIT(SIZE_MAX);
	struct diag d;

	catalog_paths_find(ctx, &paths);
	if (paths.repo) {
		(void)sbuf_addf(&path, "%s/%s", paths.repo, ORCH_CONFIG_FILE);
		diag_clear(&d);
		if (orch_config_load(path.buf, cli_getenv(ctx, CREDENTIAL_HOST_ALLOW_ENV), &cfg,
				     &d) < 0)
			cfg = NULL;
	}
	sbuf_release(&path);
	catalog_paths_release(&paths);
	return cfg;
}

static void check_agents(struct cli_ctx *ctx, const struct catalog *cat, struct findings *f)
{
	struct usable_env env = repo_usable_env(ctx);
	struct orch_config *cfg = repo_config(ctx);
	size_t i;

	for (i = 0; i < cat->n_entries; i++) {
		const struct registry_entry *e = cat->entries[i];
		const struct orch_endpoint *ep;
		struct usable u;

		if (e->builtin || !e->binary || !e->profile ||
		    e->profile->shape != PROFILE_SHAPE_FACTORY)
			continue;
		/* the key variable bernstein.yaml's endpoints: gives it counts */
		ep = orch_config_endpoint(cfg, NULL, e->name);
		env.extra_key_env = ep ? ep->api_key_env : NULL;
		usable_check(e, &env, &u);
		if (!u.installed)
			f->not_installed++;
		else
			check_agent(e, &u, f);
		usable_release(&u);
	}
	orch_config_free(cfg);
	if (f->n == 0)
		add_finding(
			f, "agents", "(none)", false, xstrdup("no agent CLI is on PATH"),
			xstrdup("install one (README.md, \"Quickstart\"); `bernstein adapters` lists them all"));
}

static void check_repo(struct cli_ctx *ctx, struct findings *f)
{
	const char *envv[] = {NULL, NULL, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", NULL};
	struct strvec env = STRVEC_INIT;
	char cwd[PATH_MAX], path[PATH_MAX], *top = NULL;
	struct orch_config *cfg = NULL;
	struct diag d;
	bool clean = false;
	int r;

	diag_clear(&d);
	if (cli_getenv(ctx, "PATH"))
		strvec_pushf(&env, "PATH=%s", cli_getenv(ctx, "PATH"));
	if (cli_getenv(ctx, "HOME"))
		strvec_pushf(&env, "HOME=%s", cli_getenv(ctx, "HOME"));
	strvec_pushv(&env, envv + 2);
	if (!getcwd(cwd, sizeof(cwd)) ||
	    git_toplevel(cwd, (const char *const *)env.v, &top, &d) < 0) {
		add_finding(f, "repository", "git", false,
			    xstrdup("the current directory is not in a git repository"),
			    xstrdup("run bernstein in your repository, or `git init` one"));
		goto out;
	}
	add_finding(f, "repository", "git", true, xstrdup(top), NULL);
	r = git_is_clean(top, (const char *const *)env.v, &clean, &d);
	add_finding(f, "repository", "clean", r >= 0 && clean,
		    xstrdup(r < 0   ? d.msg
			    : clean ? "no uncommitted changes"
				    : "uncommitted changes"),
		    r >= 0 && clean
			    ? NULL
			    : xstrdup("commit or stash them: a run's tasks start from HEAD"));
	{
		struct probe pr = {.binary = "git",
				   .args = (const char *const[]){"-C", top, "check-ignore", "-q",
								 ".bernstein/", NULL}};
		struct probe_opts po = {.path_env = cli_getenv(ctx, "PATH"),
					.env = (const char *const *)env.v};
		bool ign = probe_run(&pr, 1, &po) >= 0 && pr.status == PROBE_OK;

		add_finding(
			f, "repository", ".bernstein/ ignored", ign,
			xstrdup(ign ? "git ignores it" : "git does not ignore it"),
			ign ? NULL
			    : xstrdup("add the line '.bernstein/' to .gitignore (bernstein init does)"));
		probe_release(&pr);
	}
	(void)snprintf(path, sizeof(path), "%s/bernstein.yaml", top);
	r = orch_config_load(path, cli_getenv(ctx, CREDENTIAL_HOST_ALLOW_ENV), &cfg, &d);
	if (r == -ENOENT) {
		add_finding(f, "repository", "bernstein.yaml", true,
			    xstrdup("absent: the defaults (bernstein init writes one)"), NULL);
	} else {
		char msg[1024];

		add_finding(f, "repository", "bernstein.yaml", r >= 0,
			    xstrdup(r >= 0 ? "valid" : diag_format(&d, msg, sizeof(msg))),
			    r >= 0 ? NULL : xstrdup("fix the field named (docs/configuration.md)"));
	}
	cfg = orch_config_free(cfg);
out:
	free(top);
	strvec_clear(&env);
}

/* ---- executor: slurm ---- */

static bool uses_slurm(const struct orch_config *c)
{
	size_t i;

	if (c->executor == EXECUTOR_SLURM)
		return true;
	for (i = 0; i < c->n_roles; i++)
		if (c->roles[i].has_executor && c->roles[i].executor == EXECUTOR_SLURM)
			return true;
	return false;
}

/* Whether a TCP connection to host:port opens within 2 s (why: errno). */
static bool tcp_reachable(const char *host, const char *port, int *ret_err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	struct pollfd p = {.events = POLLOUT};
	socklen_t sl = sizeof(int);
	int fd, err = EHOSTUNREACH;

	if (getaddrinfo(host, port, &hints, &ai) != 0) {
		*ret_err = ENOENT;
		return false;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		err = 0;
	} else if (fd >= 0 && errno == EINPROGRESS) {
		p.fd = fd;
		err = poll(&p, 1, 2000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) == 0
			      ? err
			      : ETIMEDOUT;
	} else {
		err = errno;
	}
	if (fd >= 0)
		(void)close(fd);
	freeaddrinfo(ai);
	*ret_err = err;
	return err == 0;
}

/* The hub where nodes clone it: a git:// address answers; a path exists. */
static void check_hub_url(const char *url, struct findings *f)
{
	char host[256], port[16] = "9418";
	const char *h, *e, *c;
	int err = 0;

	if (url[0] == '/') {
		add_finding(f, "executor", "hub_url", true,
			    sbuf_strf("%s: a path (every node must see it)", url), NULL);
		return;
	}
	if (strncmp(url, "git://", 6) != 0) {
		add_finding(f, "executor", "hub_url", true,
			    sbuf_strf("%s: not checked from here (nodes reach it)", url), NULL);
		return;
	}
	h = url + 6;
	e = h + strcspn(h, "/");
	c = memchr(h, ':', (size_t)(e - h));
	(void)snprintf(host, sizeof(host), "%.*s", (int)((c ? c : e) - h), h);
	if (c)
		(void)snprintf(port, sizeof(port), "%.*s", (int)(e - c - 1), c + 1);
	if (tcp_reachable(host, port, &err))
		add_finding(f, "executor", "hub_url", true, sbuf_strf("%s answers", url), NULL);
	else
		add_finding(
			f, "executor", "hub_url", false, sbuf_strf("%s: %s", url, strerror(err)),
			xstrdup("serve the hub there: git daemon --export-all --enable=receive-pack --base-path=DIR --listen=ADDR (docs/executors.md)"));
}

static void check_hub(const struct executor_slurm *s, struct findings *f)
{
	char *head = sbuf_strf("%s/HEAD", s->hub), dir[PATH_MAX];

	path_dirname(s->hub, dir, sizeof(dir));
	if (access(head, R_OK) == 0)
		add_finding(f, "executor", "hub", true, sbuf_strf("%s: a repository", s->hub),
			    NULL);
	else if (access(dir, W_OK | X_OK) == 0)
		add_finding(f, "executor", "hub", true,
			    sbuf_strf("%s: absent, made by the first task", s->hub), NULL);
	else
		add_finding(f, "executor", "hub", false,
			    sbuf_strf("%s: cannot be made (%s is not writable)", s->hub, dir),
			    xstrdup("point slurm.hub at a directory this user may write"));
	free(head);
	if (!s->hub_url && s->git_daemon)
		add_finding(
			f, "executor", "hub_url", true,
			sbuf_strf("git daemon on %s, started by bernstein for a run's Slurm tasks",
				  s->git_daemon),
			NULL);
	else
		check_hub_url(s->hub_url ? s->hub_url : s->hub, f);
}

/* executor: slurm in bernstein.yaml: its settings, the Slurm client, the
 * controller, the hub (docs/executors.md). Nothing when no task uses it. */
static void check_executor(struct cli_ctx *ctx, struct findings *f)
{
	struct orch_config *cfg = repo_config(ctx);
	struct strvec env = STRVEC_INIT;
	struct probe pr[2] = {{.binary = "sbatch"},
			      {.binary = "scontrol", .args = (const char *const[]){"ping", NULL}}};
	struct probe_opts po = {.path_env = cli_getenv(ctx, "PATH")};
	char why[512];
	bool up;

	if (!cfg || !uses_slurm(cfg)) {
		orch_config_free(cfg);
		return;
	}
	if (executor_slurm_check(&cfg->slurm, why, sizeof(why)) < 0)
		add_finding(f, "executor", "slurm settings", false, xstrdup(why),
			    xstrdup("set slurm.hub and slurm.listen (docs/executors.md)"));
	else
		add_finding(f, "executor", "slurm settings", true,
			    sbuf_strf("hub %s; nodes dial %s", cfg->slurm.hub, cfg->slurm.listen),
			    NULL);
	if (po.path_env)
		strvec_pushf(&env, "PATH=%s", po.path_env);
	if (cli_getenv(ctx, "SLURM_CONF"))
		strvec_pushf(&env, "SLURM_CONF=%s", cli_getenv(ctx, "SLURM_CONF"));
	strvec_push(&env, "LC_ALL=C");
	po.env = (const char *const *)env.v;
	(void)probe_run(pr, 2, &po);
	add_finding(
		f, "executor", "slurm client", pr[0].status == PROBE_OK,
		xstrdup(pr[0].status == PROBE_OK && pr[0].first_line ? pr[0].first_line
								     : "sbatch is not on PATH"),
		pr[0].status == PROBE_OK
			? NULL
			: xstrdup("install the Slurm client (Debian: slurm-client) and its munge"));
	up = pr[1].status == PROBE_OK && pr[1].output && strstr(pr[1].output, "is UP");
	add_finding(
		f, "executor", "slurm controller", up,
		xstrdup(pr[1].first_line ? pr[1].first_line : "scontrol ping said nothing"),
		up ? NULL
		   : xstrdup("start slurmctld, or point SLURM_CONF at the cluster's slurm.conf (munged must run)"));
	if (cfg->slurm.hub)
		check_hub(&cfg->slurm, f);
	probe_release(&pr[0]);
	probe_release(&pr[1]);
	strvec_clear(&env);
	orch_config_free(cfg);
}

/* The sandbox tiers for the user running doctor, one finding each. */
static void check_sandbox(const struct tiers *t, struct findings *f)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (t->landlock_abi > 0) {
		(void)sbuf_addf(&sb, "yes (ABI %d)", t->landlock_abi);
		add_finding(f, "sandbox", "landlock", true, sbuf_detach(&sb, NULL), NULL);
	} else {
		add_finding(
			f, "sandbox", "landlock", false,
			xstrdup("no: the kernel does not support Landlock"),
			xstrdup("a kernel with Landlock (5.13 or later, lsm=landlock) gives the landlock tier (docs/security.md)"));
	}
	if (t->bwrap)
		add_finding(f, "sandbox", "bwrap", true, xstrdup("yes"), NULL);
	else
		add_finding(
			f, "sandbox", "bwrap", false,
			xstrdup("no: bwrap is not on PATH or cannot make a user namespace"),
			xstrdup("install bubblewrap (apt-get install bubblewrap) on a kernel with Landlock and user namespaces"));
	if (t->container) {
		(void)sbuf_addf(&sb, "yes (%s%s)", t->runtime,
				geteuid() != 0 ? ", rootless: a user namespace maps this uid to 0"
					       : "");
		add_finding(f, "sandbox", "container", true, sbuf_detach(&sb, NULL), NULL);
	} else {
		(void)sbuf_addf(&sb, "no: %s", t->container_why);
		add_finding(f, "sandbox", "container", false, sbuf_detach(&sb, NULL),
			    xstrdup("install crun or runc (docs/runs.md, \"Sandboxed tasks\")"));
	}
}

static void findings_release(struct findings *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].detail);
		free(f->v[i].fix);
	}
	free(f->v);
}

static json_t *findings_json(const struct findings *f)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; i < f->n; i++) {
		const struct finding *x = &f->v[i];
		json_t *a = json_object_get(o, x->section), *e = json_object();

		if (!a) {
			a = json_array();
			cli_jset(o, x->section, a);
		}
		cli_jset(e, "name", cli_jstr(x->name));
		cli_jset(e, "ok", json_boolean(x->ok));
		cli_jset(e, "detail", cli_jstr(x->detail));
		cli_jset(e, "fix", cli_jstr(x->fix));
		(void)json_array_append_new(a, e);
	}
	cli_jset(o, "agents_not_installed", json_integer((json_int_t)f->not_installed));
	return o;
}

static void findings_text(struct cli_ctx *ctx, const struct findings *f)
{
	const char *section = NULL;
	size_t i;

	for (i = 0; i < f->n; i++) {
		const struct finding *x = &f->v[i];

		if (!section || strcmp(section, x->section) != 0) {
			section = x->section;
			(void)fprintf(ctx->out, "%s:\n", section);
		}
		(void)fprintf(ctx->out, "  %-20s %s: %s\n", x->name, x->ok ? "ok" : "NOT OK",
			      x->detail);
		if (x->fix)
			(void)fprintf(ctx->out, "  %-20s fix: %s\n", "", x->fix);
		if (strcmp(x->section, "agents") == 0 &&
		    (i + 1 == f->n || strcmp(f->v[i + 1].section, "agents") != 0) &&
		    f->not_installed)
			(void)fprintf(
				ctx->out,
				"  (%zu other adapters not installed: `bernstein adapters` lists them)\n",
				f->not_installed);
	}
}

static int doctor_json(struct cli_ctx *ctx, const struct contain_host *h, const struct findings *f,
		       const struct tiers *t)
{
	json_t *root = findings_json(f), *cg = json_array(), *lim = json_object();
	char label[64];
	int i;

	cli_jset(root, "tier", cli_jstr(contain_tier_to_string(h->tier)));
	cli_jset(root, "best", cli_jstr(contain_tier_to_string(h->best)));
	cli_jset(root, "root", json_boolean(h->root));
	cli_jset(root, "pidns", json_boolean(h->pidns));
	cli_jset(root, "userns", json_boolean(h->userns));
	cli_jset(root, "pidns_error", h->pidns ? json_null() : cli_jstr(h->pidns_why));
	for (i = 0; i < CONTAIN_HIER_MAX; i++) {
		const struct contain_hier *hh = &h->hier[i];
		json_t *o;

		if (!hh->version)
			continue;
		o = json_object();
		cli_jset(o, "name", cli_jstr(hier_label(i, label, sizeof(label))));
		cli_jset(o, "mount", cli_jstr(hh->mount));
		cli_jset(o, "own", cli_jstr(hh->own));
		cli_jset(o, "base", cli_jstr(hh->base));
		cli_jset(o, "usable", json_boolean(hh->usable));
		cli_jset(o, "error", hh->usable ? json_null() : cli_jstr(hh->why));
		cli_jset(o, "cgroup_kill", json_boolean(hh->kill_file));
		cli_jset(o, "controllers", ctrls_json(hh->ctrls));
		(void)json_array_append_new(cg, o);
	}
	cli_jset(root, "cgroups", cg);
	for (i = 0; i < _CONTAIN_CTRL_MAX; i++) {
		json_t *o = json_object();
		int where = h->ctrl_hier[i];

		cli_jset(o, "enforced", json_boolean(where >= 0));
		cli_jset(o, "via",
			 where >= 0 ? cli_jstr(hier_label(where, label, sizeof(label)))
				    : json_null());
		cli_jset(lim, contain_ctrl_name((enum contain_ctrl)i), o);
	}
	cli_jset(root, "limits", lim);
	cli_jset(root, "sandbox_tiers", tiers_json(t));
	return cli_print_json(ctx, root);
}

static void doctor_text(struct cli_ctx *ctx, const struct contain_host *h)
{
	char label[64];
	int i;

	(void)fprintf(ctx->out, "containment: %s (the strongest this host allows: %s)\n",
		      contain_tier_to_string(h->tier), contain_tier_to_string(h->best));
	if (h->pidns)
		(void)fprintf(ctx->out, "  pid namespace: yes%s\n",
			      h->userns ? " (in a user namespace of its own)" : "");
	else
		(void)fprintf(ctx->out, "  pid namespace: no: %s\n", h->pidns_why);
	for (i = 0; i < CONTAIN_HIER_MAX; i++) {
		const struct contain_hier *hh = &h->hier[i];

		if (!hh->version)
			continue;
		(void)fprintf(ctx->out, "  %s at %s: ", hier_label(i, label, sizeof(label)),
			      hh->mount);
		if (hh->usable)
			(void)fprintf(ctx->out, "usable (%s)%s\n", hh->base,
				      hh->kill_file ? ", cgroup.kill" : "");
		else
			(void)fprintf(ctx->out, "not usable: %s\n", hh->why);
	}
	(void)fprintf(ctx->out, "limits:\n");
	for (i = 0; i < _CONTAIN_CTRL_MAX; i++) {
		int where = h->ctrl_hier[i];

		(void)fprintf(ctx->out, "  %-7s %s\n", contain_ctrl_name((enum contain_ctrl)i),
			      where >= 0 ? hier_label(where, label, sizeof(label))
					 : "cannot be enforced");
	}
}

int cmd_doctor(int argc, char **argv, struct cli_ctx *ctx)
{
	const struct contain_host *h;
	struct findings f = {0};
	struct catalog *cat = NULL;
	struct tiers t;
	int r = cli_json_only_args(argc, argv, ctx, "doctor");

	if (r >= 0)
		return r;
	r = catalog_paths_load(ctx, &cat);
	if (r != 0)
		return r;
	check_agents(ctx, cat, &f);
	check_repo(ctx, &f);
	check_executor(ctx, &f);
	detect_tiers(ctx, &t);
	check_sandbox(&t, &f);
	h = contain_host();
	if (ctx->json) {
		r = doctor_json(ctx, h, &f, &t);
	} else {
		findings_text(ctx, &f);
		doctor_text(ctx, h);
		r = 0;
	}
	findings_release(&f);
	catalog_free(cat);
	return r;
}
