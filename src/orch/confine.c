#include "orch/confine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/landlock.h"
#include "proc/probe.h"
#include "util/beneath.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* The system an agent reads (absent ones are left out). /etc is added entry
 * by entry, without etc_secrets. */
static const char *const system_ro[] = {
	"/usr",	 "/bin",      "/sbin",	     "/lib",	     "/lib32",	  "/lib64", "/libx32",
	"/proc", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full", NULL,
};

/* Beneath /etc: never readable (a directory holding one is added entry by
 * entry). */
static const char *const etc_secrets[] = {
	"shadow",    "shadow-", "gshadow",  "gshadow-",	   ".pwd.lock", "sudoers",
	"sudoers.d", "ssh",	"security", "ssl/private", "credstore", "credstore.encrypted",
	NULL,
};

/* The protected paths, real (or as given when absent). */
struct prot {
	char repo[PATH_MAX];
	char home[PATH_MAX];
	char key[PATH_MAX];
	bool has_home, has_key;
};

static void canon(const char *path, char *buf)
{
	if (!realpath(path, buf))
		(void)snprintf(buf, PATH_MAX, "%s", path);
}

/* a is b or one of its ancestors */
static bool at_or_above(const char *a, const char *b)
{
	size_t n = strlen(a);

	if (strcmp(a, "/") == 0)
		return true;
	return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/');
}

/* What x would expose, or NULL. */
static const char *exposes(const struct prot *pr, const char *x)
{
	if (at_or_above(x, pr->repo) || at_or_above(pr->repo, x))
		return "the repository (its working files, .git and .bernstein/)";
	if (pr->has_home && at_or_above(x, pr->home))
		return "the user's HOME";
	if (pr->has_key && at_or_above(x, pr->key))
		return "the audit key";
	return NULL;
}

static bool covered(const struct strvec *v, const char *x)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		if (at_or_above(v->v[i], x))
			return true;
	return false;
}

/* Add x (real) read-only: 0, 1 if absent, -EPERM with why if it exposes. */
static int add_ro(struct confine_policy *p, const struct prot *pr, const char *x,
		  const char **ret_why)
{
	char real[PATH_MAX];
	const char *why;

	if (!realpath(x, real))
		return 1;
	why = exposes(pr, real);
	if (why) {
		*ret_why = why;
		return -EPERM;
	}
	if (!covered(&p->ro, real) && !covered(&p->rw, real))
		strvec_push(&p->ro, real);
	if (!covered(&p->ro_bind, x) && !covered(&p->rw, real))
		strvec_push(&p->ro_bind, x);
	return 0;
}

/* The task's own (beneath .bernstein/ or .git, which stay unreadable). */
static void add_own(struct confine_policy *p, const char *x)
{
	char real[PATH_MAX];

	if (!x || !realpath(x, real))
		return;
	if (!covered(&p->ro, real))
		strvec_push(&p->ro, real);
	if (!covered(&p->ro_bind, real))
		strvec_push(&p->ro_bind, real);
}

static bool etc_secret(const char *rel, bool *ret_holds)
{
	size_t i, n = strlen(rel);

	*ret_holds = false;
	for (i = 0; etc_secrets[i]; i++) {
		if (strcmp(etc_secrets[i], rel) == 0)
			return true;
		if (strncmp(etc_secrets[i], rel, n) == 0 && etc_secrets[i][n] == '/')
			*ret_holds = true;
	}
	return false;
}

/* Every entry of /etc/REL but the secrets (recursing into a directory that
 * holds one). An entry that would expose a protected path is left out. */
static void add_etc(struct confine_policy *p, const struct prot *pr, const char *rel)
{
	char dir[PATH_MAX], sub[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	struct strvec names = STRVEC_INIT;
	const char *why;
	DIR *d;
	size_t i;

	(void)snprintf(dir, sizeof(dir), "/etc%s%s", rel[0] ? "/" : "", rel);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			strvec_push(&names, de->d_name);
	(void)closedir(d);
	strvec_sort(&names);
	for (i = 0; i < names.nr; i++) {
		bool holds;
		int n = snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", names.v[i]);

		if (n < 0 || (size_t)n >= sizeof(sub) || etc_secret(sub, &holds))
			continue;
		if (holds) {
			add_etc(p, pr, sub);
			continue;
		}
		if (snprintf(path, sizeof(path), "/etc/%s", sub) < (int)sizeof(path))
			(void)add_ro(p, pr, path, &why);
	}
	strvec_clear(&names);
}

/* The installation of the program at path: the node_modules tree it lives
 * in, else the prefix of its bin/ directory, else the file; the first that
 * exposes nothing. */
static void add_install(struct confine_policy *p, const struct prot *pr, const char *path)
{
	char real[PATH_MAX], cand[3][PATH_MAX], *s;
	const char *why;
	size_t n = 0, i;

	if (!path || path[0] != '/' || !realpath(path, real) || covered(&p->ro, real))
		return;
	s = strstr(real, "/node_modules/");
	if (s) {
		(void)snprintf(cand[n], PATH_MAX, "%.*s/node_modules", (int)(s - real), real);
		n++;
	}
	(void)snprintf(cand[n], PATH_MAX, "%s", real);
	s = strrchr(cand[n], '/');
	if (s && s > cand[n]) {
		*s = '\0';
		s = strrchr(cand[n], '/');
		if (s && strcmp(s, "/bin") == 0 && s > cand[n]) {
			*s = '\0';
			n++;
		}
	}
	(void)snprintf(cand[n++], PATH_MAX, "%s", real);
	for (i = 0; i < n; i++)
		if (add_ro(p, pr, cand[i], &why) == 0)
			return;
}

/* The interpreter of a #! script at path (through `env NAME` on PATH). */
static void add_interpreter(struct confine_policy *p, const struct prot *pr, const char *path,
			    const char *path_env)
{
	char line[256], word[PATH_MAX], cand[PATH_MAX];
	const char *s, *e;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	n = read(fd, line, sizeof(line) - 1);
	close_fdp(&fd);
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	s = line + 2;
	s += strspn(s, " \t");
	e = s + strcspn(s, " \t");
	(void)snprintf(word, sizeof(word), "%.*s", (int)(e - s), s);
	add_install(p, pr, word);
	if (strcmp(word, "/usr/bin/env") != 0 && strcmp(word, "/bin/env") != 0)
		return;
	/* env [-S] [-OPTS] NAME */
	for (s = e; *s;) {
		s += strspn(s, " \t");
		e = s + strcspn(s, " \t");
		if (e > s && *s != '-' && !memchr(s, '=', (size_t)(e - s)))
			break;
		s = e;
	}
	if (e == s || !path_env)
		return;
	(void)snprintf(word, sizeof(word), "%.*s", (int)(e - s), s);
	for (s = path_env; *s; s = *e ? e + 1 : e) {
		e = s + strcspn(s, ":");
		if (*s != '/')
			continue;
		n = snprintf(cand, sizeof(cand), "%.*s/%s", (int)(e - s), s, word);
		if (n > 0 && (size_t)n < sizeof(cand) && access(cand, X_OK) == 0) {
			add_install(p, pr, cand);
			return;
		}
	}
}

/* The programs the agent starts for bernstein (its MCP servers), each
 * with its installation and its interpreter. */
static void add_programs(struct confine_policy *p, const struct prot *pr,
			 const struct confine_input *in)
{
	char real[PATH_MAX];
	size_t i;

	for (i = 0; in->programs && in->programs[i]; i++) {
		add_install(p, pr, in->programs[i]);
		if (realpath(in->programs[i], real))
			add_interpreter(p, pr, real, in->path_env);
	}
}

static int refuse_path(const char *what, const char *path, const char *why, struct diag *reterr)
{
	diag_set(reterr, NULL, 0, 0, "sandbox: %s '%s' would make %s readable to the agent", what,
		 path, why);
	return -EPERM;
}

int confine_policy_build(const struct confine_input *in, struct confine_policy *ret,
			 struct diag *reterr)
{
	struct confine_policy p = CONFINE_POLICY_INIT;
	struct prot pr;
	char real[PATH_MAX], path[PATH_MAX];
	const char *why = NULL;
	const char *const rw[] = {in->tree, in->home, in->tmp, "/dev/null", NULL};
	size_t i;
	int r;

	memset(&pr, 0, sizeof(pr));
	canon(in->repo, pr.repo);
	if (in->user_home && in->user_home[0] == '/') {
		canon(in->user_home, pr.home);
		pr.has_home = true;
	}
	if (in->audit_key && in->audit_key[0] == '/') {
		canon(in->audit_key, pr.key);
		pr.has_key = true;
	}
	p.kind = in->kind;
	for (i = 0; rw[i]; i++) {
		canon(rw[i], real); /* may not exist yet for --dry-run */
		if (strvec_find(&p.rw, real) < 0)
			strvec_push(&p.rw, real);
	}
	for (i = 0; system_ro[i]; i++) {
		r = add_ro(&p, &pr, system_ro[i], &why);
		if (r < 0) {
			r = refuse_path("the system directory", system_ro[i], why, reterr);
			goto fail;
		}
	}
	add_etc(&p, &pr, "");
	add_install(&p, &pr, in->binary);
	if (in->binary && realpath(in->binary, real))
		add_interpreter(&p, &pr, real, in->path_env);
	add_install(&p, &pr, in->self_exe);
	add_programs(&p, &pr, in);
	/* the task's own, beneath .bernstein/ (which stays unreadable); the
	 * objects its clone borrows, beneath .git */
	add_own(&p, in->objects);
	add_own(&p, in->session_dir);
	for (i = 0; in->decl && i < in->decl->read.n; i++) {
		const char *x = in->decl->read.v[i];

		if (x[0] == '~') {
			if (!pr.has_home)
				continue;
			(void)snprintf(path, sizeof(path), "%s%s", in->user_home, x + 1);
			x = path;
		}
		if (add_ro(&p, &pr, x, &why) < 0) {
			r = refuse_path("runtime.sandbox.read path", in->decl->read.v[i], why,
					reterr);
			goto fail;
		}
	}
	for (i = 0; in->login && pr.has_home && in->home && i < in->login->n; i++) {
		const char *rel = in->login->v[i];
		struct stat st;

		(void)snprintf(path, sizeof(path), "%s/%s", in->user_home, rel);
		if (!realpath(path, real) || stat(real, &st) < 0 || !S_ISREG(st.st_mode))
			continue; /* the agent may log in another way */
		if (!at_or_above(pr.home, real) || strcmp(pr.home, real) == 0) {
			r = refuse_path("login file", rel, "a file outside the user's HOME",
					reterr);
			goto fail;
		}
		if (pr.has_key && strcmp(real, pr.key) == 0) {
			r = refuse_path("login file", rel, "the audit key", reterr);
			goto fail;
		}
		strvec_push(&p.login_src, real);
		strvec_pushf(&p.login_dst, "%s/%s", in->home, rel);
	}
	r = confine_net_build(in, &p, reterr);
	if (r < 0)
		goto fail;
	*ret = p;
	return 0;
fail:
	confine_policy_release(&p);
	return r;
}

int confine_policy_link_logins(const struct confine_policy *p, const char *home,
			       struct diag *reterr)
{
	size_t n = strlen(home), i;
	int r;

	for (i = 0; i < p->login_dst.nr && i < p->login_src.nr; i++) {
		const char *dst = p->login_dst.v[i];

		if (strncmp(dst, home, n) != 0 || dst[n] != '/')
			continue; /* not in that HOME: nothing to make */
		r = beneath_symlink(home, dst + n + 1, p->login_src.v[i], reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

json_t *confine_policy_json(const struct confine_policy *p)
{
	json_t *o = json_object(), *ro = json_array(), *ex = json_array();
	bool etc = false;
	size_t i;

	for (i = 0; i < p->ro.nr; i++) {
		if (strncmp(p->ro.v[i], "/etc/", 5) == 0) {
			if (!etc)
				(void)json_array_append_new(ro, json_string("/etc"));
			etc = true;
			continue;
		}
		(void)json_array_append_new(ro, json_str_lossy(p->ro.v[i]));
	}
	for (i = 0; etc_secrets[i]; i++)
		(void)json_array_append_new(ex, json_pack("s+", "/etc/", etc_secrets[i]));
	json_obj_set(o, "tier", json_string(sandbox_kind_to_string(p->kind)));
	json_obj_set(o, "read", ro);
	json_obj_set(o, "read_except", ex);
	json_obj_set(o, "write", json_strvec(&p->rw));
	json_obj_set(o, "login", json_strvec(&p->login_dst));
	json_obj_set(o, "network", confine_net_json(p));
	return o;
}

const char *confine_find_program(const char *path_env, const char *name, char *buf, size_t size)
{
	const char *s, *e;

	for (s = path_env; s && *s; s = *e ? e + 1 : e) {
		int n;

		e = s + strcspn(s, ":");
		if (*s != '/')
			continue;
		n = snprintf(buf, size, "%.*s/%s", (int)(e - s), s, name);
		if (n > 0 && (size_t)n < size && access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

/* The Landlock rules of the shim inside bwrap or a container: p's, and the
 * private pseudo-terminals there (a fresh devpts instance: the agent's own
 * shell tools open ptys; never the host's /dev/pts, which holds the user's
 * terminals). */
static void shim_rules(const struct confine_policy *p, bool tty, struct strvec *ret)
{
	size_t i;

	for (i = 0; i < p->rw.nr; i++)
		strvec_pushv(ret, (const char *const[]){"--landlock-rw", p->rw.v[i], NULL});
	strvec_pushv(ret, (const char *const[]){"--landlock-rw", "/dev/ptmx", "--landlock-rw",
						"/dev/pts", NULL});
	/* a console of its own (confine_oci_opts.terminal): the process's
	 * controlling terminal, which /dev/tty opens */
	if (tty)
		strvec_pushv(ret, (const char *const[]){"--landlock-rw", "/dev/tty", NULL});
	for (i = 0; i < p->ro_bind.nr; i++)
		strvec_pushv(ret, (const char *const[]){"--landlock-ro", p->ro_bind.v[i], NULL});
	confine_net_shim_args(p, ret);
}

static bool in_dev_or_proc(const char *x)
{
	return strcmp(x, "/proc") == 0 || strncmp(x, "/proc/", 6) == 0 ||
	       strncmp(x, "/dev/", 5) == 0;
}

void confine_bwrap_argv(const struct confine_policy *p, const char *bwrap, const char *self_exe,
			const char *cwd, bool drop_caps, const char *const *argv,
			struct strvec *ret)
{
	size_t i;

	strvec_push(ret, bwrap);
	strvec_pushv(ret, (const char *const[]){"--unshare-all", "--die-with-parent", NULL});
	if (p->network == NET_MODE_FULL)
		strvec_push(ret, "--share-net");
	if (drop_caps)
		strvec_pushv(ret, (const char *const[]){"--cap-drop", "ALL", NULL});
	/* first: the binds beneath them come after */
	strvec_pushv(ret, (const char *const[]){"--tmpfs", "/tmp", "--dev", "/dev", "--proc",
						"/proc", NULL});
	for (i = 0; i < p->ro_bind.nr; i++)
		if (!in_dev_or_proc(p->ro_bind.v[i]))
			strvec_pushv(ret, (const char *const[]){"--ro-bind", p->ro_bind.v[i],
								p->ro_bind.v[i], NULL});
	for (i = 0; i < p->rw.nr; i++)
		if (!in_dev_or_proc(p->rw.v[i]))
			strvec_pushv(ret,
				     (const char *const[]){"--bind", p->rw.v[i], p->rw.v[i], NULL});
	for (i = 0; i < p->login_src.nr; i++)
		strvec_pushv(ret, (const char *const[]){"--bind", p->login_src.v[i],
							p->login_dst.v[i], NULL});
	strvec_pushv(ret, (const char *const[]){"--chdir", cwd, "--", self_exe, "shim", NULL});
	shim_rules(p, false, ret);
	strvec_push(ret, "--");
	strvec_pushv(ret, argv);
}

static bool userns_allowed(void)
{
	char *s = NULL;
	size_t len = 0;
	bool ok = true;

	if (geteuid() == 0)
		return true;
	if (read_file_capped("/proc/sys/kernel/unprivileged_userns_clone", 64, &s, &len) == 0) {
		ok = len > 0 && s[0] != '0';
		free(s);
	}
	s = NULL;
	if (ok && read_file_capped("/proc/sys/user/max_user_namespaces", 64, &s, &len) == 0) {
		ok = len > 0 && s[0] != '0';
		free(s);
	}
	return ok;
}

unsigned confine_host_tiers(const char *path_env, const char *self_exe, const char *scratch)
{
	unsigned m = 1u << SANDBOX_KIND_NONE;
	char buf[PATH_MAX];
	char why[512];

	if (landlock_abi_version() < 1)
		return m;
	m |= 1u << SANDBOX_KIND_LANDLOCK;
	if (confine_find_program(path_env, "bwrap", buf, sizeof(buf)) && userns_allowed())
		m |= 1u << SANDBOX_KIND_BWRAP;
	if (confine_container_usable(path_env, self_exe, scratch, why, sizeof(why)) == 0)
		m |= 1u << SANDBOX_KIND_CONTAINER;
	return m;
}

enum sandbox_kind confine_strongest(unsigned host, unsigned declared)
{
	int k;

	for (k = _SANDBOX_KIND_MAX - 1; k > SANDBOX_KIND_NONE; k--)
		if (host & declared & (1u << k))
			return (enum sandbox_kind)k;
	return SANDBOX_KIND_NONE;
}

const char *confine_oci_runtime(const char *path_env, char *buf, size_t size, struct diag *reterr)
{
	char *ctl = NULL;
	size_t len = 0;
	bool hybrid = false;

	/* cgroup v1 hierarchies beside a cgroup2 one that has controllers */
	if (read_file_capped("/sys/fs/cgroup/unified/cgroup.controllers", 4096, &ctl, &len) == 0) {
		size_t i;

		for (i = 0; i < len; i++)
			if (ctl[i] > ' ')
				hybrid = true;
		free(ctl);
	}
	if (!hybrid && confine_find_program(path_env, "crun", buf, size))
		return buf;
	if (confine_find_program(path_env, "runc", buf, size))
		return buf;
	diag_set(
		reterr, NULL, 0, 0,
		"sandbox: container: no usable OCI runtime: %s (the task is not run unconfined)",
		hybrid ? "crun refuses this host's hybrid cgroups (cgroup2 at /sys/fs/cgroup/unified has controllers) and runc is not on PATH"
		       : "neither crun nor runc is on PATH");
	return NULL;
}

/* The probe's answer, kept for the life of the process (not root only). */
static int arg_probe_r = 1; /* 1: not probed yet */
static char arg_probe_why[1024];

/* Start `true` in a rootless container through runtime: 0, or -EPERM with
 * the runtime's words in why. */
static int probe_rootless(const char *runtime, const char *path_env, const char *self_exe,
			  const char *scratch, char *why, size_t size)
{
	struct confine_policy p = CONFINE_POLICY_INIT;
	struct confine_oci_opts o = {.rootless = true};
	struct strvec argv = STRVEC_INIT;
	struct probe pr = {0};
	struct probe_opts po = {.path_env = path_env, .timeout_ms = 20000};
	char dir[PATH_MAX], truebin[PATH_MAX], id[64];
	const char *const env[] = {"PATH=/usr/bin:/bin", NULL};
	struct diag d;
	size_t i;
	int r;

	diag_clear(&d);
	if (!self_exe || !confine_find_program(path_env, "true", truebin, sizeof(truebin))) {
		(void)snprintf(why, size, "no 'true' on PATH to probe the rootless container with");
		return -ENOENT;
	}
	(void)snprintf(id, sizeof(id), "bernstein-probe-%ld", (long)getpid());
	if (snprintf(dir, sizeof(dir), "%s/%s", scratch, id) >= (int)sizeof(dir)) {
		(void)snprintf(why, size, "the probe's directory beneath '%s' is too long",
			       scratch);
		return -ENAMETOOLONG;
	}
	(void)rmtree_beneath(dir);
	for (i = 0; system_ro[i]; i++)
		if (access(system_ro[i], F_OK) == 0)
			strvec_push(&p.ro_bind, system_ro[i]);
	strvec_push(&p.ro_bind, self_exe);
	strvec_push(&p.ro_bind, truebin);
	r = confine_oci_bundle(&p, dir, self_exe, "/", env, (const char *const[]){truebin, NULL},
			       &o, &d);
	if (r < 0) {
		(void)snprintf(why, size, "%.300s", d.msg);
		goto out;
	}
	confine_oci_argv(runtime, dir, id, &argv);
	pr.binary = argv.v[0];
	pr.args = (const char *const *)argv.v + 1;
	r = probe_run(&pr, 1, &po);
	if (r == 0 && pr.status != PROBE_OK) {
		r = -EPERM;
		(void)snprintf(
			why, size,
			"'%.200s run' as uid %ld (rootless, a user namespace mapping it to 0) failed: %s",
			runtime, (long)geteuid(),
			pr.first_line && *pr.first_line ? pr.first_line
							: probe_status_name(pr.status));
	} else if (r < 0) {
		(void)snprintf(why, size, "cannot run '%.200s': %s", runtime, strerror(-r));
	}
out:
	probe_release(&pr);
	strvec_clear(&argv);
	confine_policy_release(&p);
	(void)rmtree_beneath(dir);
	return r;
}

int confine_container_usable(const char *path_env, const char *self_exe, const char *scratch,
			     char *why, size_t size)
{
	char rt[PATH_MAX];
	struct diag d;

	diag_clear(&d);
	if (landlock_abi_version() < 1) {
		(void)snprintf(why, size, "the kernel does not support Landlock");
		return -EOPNOTSUPP;
	}
	if (!confine_oci_runtime(path_env, rt, sizeof(rt), &d)) {
		(void)snprintf(why, size, "%.400s", d.msg);
		return -ENOENT;
	}
	if (geteuid() == 0)
		return 0;
	if (!userns_allowed()) {
		(void)snprintf(
			why, size,
			"sandbox: container: rootless containers need unprivileged user namespaces, which this kernel does not allow (kernel.unprivileged_userns_clone or user.max_user_namespaces is 0)");
		return -EPERM;
	}
	if (arg_probe_r == 1) {
		char msg[600];
		int pr = -ENOENT;

		if (scratch && mkdir_p(scratch, 0700) >= 0)
			pr = probe_rootless(rt, path_env, self_exe, scratch, msg, sizeof(msg));
		else
			(void)snprintf(msg, sizeof(msg), "no directory to probe it in");
		arg_probe_r = pr;
		if (pr < 0)
			(void)snprintf(
				arg_probe_why, sizeof(arg_probe_why),
				"sandbox: container: rootless containers do not work here: %s",
				msg);
	}
	if (arg_probe_r < 0)
		(void)snprintf(why, size, "%s", arg_probe_why);
	return arg_probe_r;
}

void confine_oci_argv(const char *runtime, const char *dir, const char *id, struct strvec *ret)
{
	strvec_pushv(ret, (const char *const[]){runtime, "--root", NULL});
	strvec_pushf(ret, "%s/state", dir);
	strvec_pushv(ret, (const char *const[]){"run", "--bundle", dir, id, NULL});
}

bool confine_oci_oom(const struct proc *p)
{
	return p->exited && p->exit_code == 128 + SIGKILL && p->memory_hit && !p->oom_kills &&
	       !p->timed_out && !p->cancelled && p->failed_stage == SHIM_STAGE_NONE;
}

/* The bundles' state directories beneath dir (one level down too) into
 * ret. */
static void oci_states(const char *dir, int depth, struct strvec *ret)
{
	struct strvec names = STRVEC_INIT;
	struct dirent *de;
	char path[PATH_MAX];
	struct stat st;
	DIR *d;
	size_t i;

	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			strvec_push(&names, de->d_name);
	(void)closedir(d);
	strvec_sort(&names);
	for (i = 0; i < names.nr; i++) {
		bool oci = strncmp(names.v[i], "oci-", 4) == 0;

		if (snprintf(path, sizeof(path), "%s/%s%s", dir, names.v[i], oci ? "/state" : "") >=
			    (int)sizeof(path) ||
		    lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (oci)
			strvec_push(ret, path);
		else if (depth > 0)
			oci_states(path, depth - 1, ret);
	}
	strvec_clear(&names);
}

int confine_oci_sweep(const char *runtime, const char *path_env, const char *dir,
		      struct diag *reterr)
{
	struct strvec states = STRVEC_INIT, args = STRVEC_INIT;
	struct probe_opts po = {.path_env = path_env, .timeout_ms = 20000};
	struct probe *pr = NULL;
	struct diag d;
	size_t i, n = 0, k;
	int r = 0, deleted = 0;

	diag_clear(&d);
	oci_states(dir, 1, &states);
	for (i = 0; i < states.nr; i++) {
		struct dirent *de;
		DIR *sd = opendir(states.v[i]);

		while (sd && (de = readdir(sd)))
			if (de->d_name[0] != '.' && de->d_type == DT_DIR) {
				strvec_push(&args, states.v[i]);
				strvec_push(&args, de->d_name);
			}
		if (sd)
			(void)closedir(sd);
	}
	n = args.nr / 2;
	if (!n)
		goto out;
	pr = xcalloc(n, sizeof(*pr));
	for (k = 0; k < n; k++) {
		const char **a = xcalloc(6, sizeof(*a));

		a[0] = "--root";
		a[1] = args.v[2 * k];
		a[2] = "delete";
		a[3] = "--force";
		a[4] = args.v[2 * k + 1];
		pr[k].binary = runtime;
		pr[k].args = a;
	}
	r = probe_run(pr, n, &po);
	for (k = 0; k < n; k++) {
		if (r >= 0 && pr[k].status == PROBE_OK)
			deleted++;
		else if (r >= 0 && !d.msg[0])
			diag_set(&d, args.v[2 * k], 0, 0,
				 "cannot delete the container '%s' the runtime left: %s",
				 args.v[2 * k + 1],
				 pr[k].first_line && *pr[k].first_line
					 ? pr[k].first_line
					 : probe_status_name(pr[k].status));
		free((void *)(uintptr_t)pr[k].args);
		probe_release(&pr[k]);
	}
	if (r >= 0 && d.msg[0])
		r = -EIO;
	free(pr);
out:
	strvec_clear(&states);
	strvec_clear(&args);
	if (r < 0 && !d.msg[0])
		diag_set(&d, dir, 0, 0, "cannot delete the containers the runtime left: %s",
			 strerror(-r));
	if (r < 0 && reterr)
		*reterr = d;
	return r < 0 ? r : deleted;
}

static json_t *str_array(const char *const *v)
{
	json_t *a = json_array();

	for (; *v; v++)
		(void)json_array_append_new(a, json_string(*v));
	return a;
}

static json_t *oci_mount(const char *dst, const char *type, const char *src, const char *opts)
{
	json_t *m = json_object(), *o = json_array();
	char buf[128];
	const char *s, *e;

	json_obj_set(m, "destination", json_str_lossy(dst));
	json_obj_set(m, "type", json_string(type));
	json_obj_set(m, "source", json_str_lossy(src));
	for (s = opts; *s; s = *e ? e + 1 : e) {
		e = s + strcspn(s, ",");
		(void)snprintf(buf, sizeof(buf), "%.*s", (int)(e - s), s);
		(void)json_array_append_new(o, json_string(buf));
	}
	json_obj_set(m, "options", o);
	return m;
}

static json_t *id_map(uid_t host)
{
	json_t *a = json_array(), *m = json_object();

	json_obj_set(m, "containerID", json_integer(0));
	json_obj_set(m, "hostID", json_integer((json_int_t)host));
	json_obj_set(m, "size", json_integer(1));
	(void)json_array_append_new(a, m);
	return a;
}

/* The user namespace and the resources of o in the bundle's linux object
 * (nsa: its namespaces). */
static void oci_linux_extras(json_t *linux_, json_t *nsa, const struct confine_oci_opts *o)
{
	const struct contain_limits *l = o ? o->limits : NULL;

	if (o && o->rootless) {
		json_t *n = json_object();

		json_obj_set(n, "type", json_string("user"));
		(void)json_array_append_new(nsa, n);
		json_obj_set(linux_, "uidMappings", id_map(geteuid()));
		json_obj_set(linux_, "gidMappings", id_map(getegid()));
	}
	if (contain_limits_any(l)) {
		json_t *res = json_object();

		if (l->memory)
			json_obj_set(res, "memory",
				     json_pack("{sI}", "limit", (json_int_t)l->memory));
		if (l->pids)
			json_obj_set(res, "pids", json_pack("{sI}", "limit", (json_int_t)l->pids));
		if (l->cpu_milli)
			json_obj_set(res, "cpu",
				     json_pack("{sIsI}", "quota", (json_int_t)(l->cpu_milli * 100),
					       "period", (json_int_t)100000));
		json_obj_set(linux_, "resources", res);
		if (o->cgroup)
			json_obj_set(linux_, "cgroupsPath", json_str_lossy(o->cgroup));
	}
}

int confine_oci_bundle(const struct confine_policy *p, const char *dir, const char *self_exe,
		       const char *cwd, const char *const *env, const char *const *argv,
		       const struct confine_oci_opts *o, struct diag *reterr)
{
	static const char *const ns[] = {"pid", "ipc", "uts", "mount", "cgroup", NULL};
	static const char *const masked[] = {"/proc/kcore",	  "/proc/keys", "/proc/timer_list",
					     "/proc/sched_debug", "/proc/acpi", NULL};
	static const char *const ro_proc[] = {
		"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL};
	json_t *c = json_object(), *proc = json_object(), *user = json_object();
	json_t *caps = json_object(), *args = json_array(), *mounts = json_array();
	json_t *linux_ = json_object(), *nsa = json_array(), *root = json_object();
	struct strvec a = STRVEC_INIT;
	char path[PATH_MAX];
	char *text = NULL;
	size_t i;
	int r;

	/* the program: the shim sets the Landlock rules, then execs argv */
	strvec_push(&a, self_exe);
	strvec_push(&a, "shim");
	/* a poll-pty agent: not pid 1 (which gets no signal it has no handler
	 * for), its own session with the console as its terminal */
	if (o && o->terminal)
		strvec_push(&a, "--init");
	shim_rules(p, o && o->terminal, &a);
	strvec_push(&a, "--");
	strvec_pushv(&a, argv);
	for (i = 0; i < a.nr; i++)
		(void)json_array_append_new(args, json_str_lossy(a.v[i]));
	strvec_clear(&a);
	json_obj_set(user, "uid", json_integer(o && o->rootless ? 0 : (json_int_t)geteuid()));
	json_obj_set(user, "gid", json_integer(o && o->rootless ? 0 : (json_int_t)getegid()));
	json_obj_set(proc, "terminal", json_boolean(o && o->terminal));
	if (o && o->terminal && o->rows && o->cols)
		json_obj_set(proc, "consoleSize",
			     json_pack("{sIsI}", "height", (json_int_t)o->rows, "width",
				       (json_int_t)o->cols));
	json_obj_set(proc, "user", user);
	json_obj_set(proc, "args", args);
	{
		json_t *e = json_array();

		for (i = 0; env && env[i]; i++)
			(void)json_array_append_new(e, json_str_lossy(env[i]));
		json_obj_set(proc, "env", e);
	}
	json_obj_set(proc, "cwd", json_str_lossy(cwd));
	json_obj_set(caps, "bounding", json_array());
	json_obj_set(caps, "effective", json_array());
	json_obj_set(caps, "permitted", json_array());
	json_obj_set(caps, "inheritable", json_array());
	json_obj_set(caps, "ambient", json_array());
	json_obj_set(proc, "capabilities", caps);
	json_obj_set(proc, "noNewPrivileges", json_true());
	json_obj_set(c, "ociVersion", json_string("1.0.2"));
	json_obj_set(c, "process", proc);
	json_obj_set(root, "path", json_string("rootfs"));
	json_obj_set(root, "readonly", json_true());
	json_obj_set(c, "root", root);
	json_obj_set(c, "hostname", json_string("bernstein"));
	(void)json_array_append_new(mounts,
				    oci_mount("/proc", "proc", "proc", "nosuid,nodev,noexec"));
	(void)json_array_append_new(mounts, oci_mount("/dev", "tmpfs", "tmpfs",
						      "nosuid,strictatime,mode=755,size=65536k"));
	(void)json_array_append_new(mounts,
				    oci_mount("/tmp", "tmpfs", "tmpfs", "nosuid,nodev,mode=1777"));
	(void)json_array_append_new(mounts,
				    oci_mount("/dev/pts", "devpts", "devpts",
					      "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620"));
	for (i = 0; i < p->ro_bind.nr; i++)
		if (!in_dev_or_proc(p->ro_bind.v[i]))
			(void)json_array_append_new(mounts, oci_mount(p->ro_bind.v[i], "bind",
								      p->ro_bind.v[i],
								      "rbind,ro,nosuid,nodev"));
	for (i = 0; i < p->rw.nr; i++)
		if (!in_dev_or_proc(p->rw.v[i]))
			(void)json_array_append_new(
				mounts,
				oci_mount(p->rw.v[i], "bind", p->rw.v[i], "rbind,rw,nosuid,nodev"));
	for (i = 0; i < p->login_src.nr; i++)
		(void)json_array_append_new(mounts,
					    oci_mount(p->login_dst.v[i], "bind", p->login_src.v[i],
						      "bind,rw,nosuid,nodev"));
	json_obj_set(c, "mounts", mounts);
	for (i = 0; ns[i]; i++) {
		json_t *n = json_object();

		json_obj_set(n, "type", json_string(ns[i]));
		(void)json_array_append_new(nsa, n);
	}
	if (p->network != NET_MODE_FULL) {
		json_t *n = json_object();

		json_obj_set(n, "type", json_string("network"));
		(void)json_array_append_new(nsa, n);
	}
	oci_linux_extras(linux_, nsa, o);
	json_obj_set(linux_, "namespaces", nsa);
	json_obj_set(linux_, "maskedPaths", str_array(masked));
	json_obj_set(linux_, "readonlyPaths", str_array(ro_proc));
	json_obj_set(c, "linux", linux_);

	r = mkdir_p(dir, 0700);
	if (r >= 0 && snprintf(path, sizeof(path), "%s/rootfs", dir) < (int)sizeof(path))
		r = mkdir_p(path, 0700);
	if (r >= 0) {
		text = json_dumps(c, JSON_COMPACT);
		(void)snprintf(path, sizeof(path), "%s/config.json", dir);
		r = text ? atomic_replace_file(path, text, strlen(text), 0600) : -ENOMEM;
	}
	free(text);
	json_decref(c);
	if (r < 0)
		diag_set(reterr, dir, 0, 0, "cannot write the container's OCI bundle: %s",
			 strerror(-r));
	return r;
}

void confine_policy_release(struct confine_policy *p)
{
	strvec_clear(&p->ro);
	strvec_clear(&p->ro_bind);
	strvec_clear(&p->rw);
	strvec_clear(&p->login_src);
	strvec_clear(&p->login_dst);
	strvec_clear(&p->net_allow);
	strvec_clear(&p->net_tunnel);
	free(p->net_socket);
	p->net_socket = NULL;
}
