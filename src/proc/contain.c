/* Containment and limits of children (contain.h). */
#include "proc/contain.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/log.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define PROC_TEXT_MAX  (256 * 1024) /* /proc/self/mountinfo and cgroup, at most */
#define CG_FILE_MAX    4096	    /* a cgroup control file read */
#define KILL_ROUNDS    64	    /* sweeps of cgroup.procs before giving up */
#define REMOVE_WAIT_MS 1000	    /* for the killed to leave a cgroup */
#define TREE_DEPTH     16	    /* cgroups below a leaf an agent may have made */
#define CPU_PERIOD_US  100000

static const char *const tier_names[_CONTAIN_TIER_MAX] = {
	[CONTAIN_AUTO] = "auto",
	[CONTAIN_PIDNS] = "pidns",
	[CONTAIN_CGROUP] = "cgroup",
	[CONTAIN_PGROUP] = "pgroup",
};

static const char *const ctrl_names[_CONTAIN_CTRL_MAX] = {
	[CONTAIN_CTRL_MEMORY] = "memory",
	[CONTAIN_CTRL_PIDS] = "pids",
	[CONTAIN_CTRL_CPU] = "cpu",
};

const char *contain_tier_to_string(enum contain_tier t)
{
	return t >= 0 && t < _CONTAIN_TIER_MAX ? tier_names[t] : NULL;
}

enum contain_tier contain_tier_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _CONTAIN_TIER_MAX; i++)
		if (strcmp(tier_names[i], s) == 0)
			return (enum contain_tier)i;
	return _CONTAIN_TIER_INVALID;
}

const char *contain_ctrl_name(enum contain_ctrl c)
{
	return c >= 0 && c < _CONTAIN_CTRL_MAX ? ctrl_names[c] : "?";
}

bool contain_limits_any(const struct contain_limits *l)
{
	return l && (l->memory || l->pids || l->cpu_milli);
}

static void describe_bytes(struct sbuf *sb, uint64_t v)
{
	static const char units[] = "KMGTP";
	int u = -1;

	while (u < 4 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		(void)sbuf_addf(sb, "%" PRIu64, v);
	else
		(void)sbuf_addf(sb, "%" PRIu64 "%c", v, units[u]);
}

const char *contain_limits_describe(const struct contain_limits *l, char *buf, size_t size)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (l && l->memory) {
		(void)sbuf_adds(&sb, "memory ");
		describe_bytes(&sb, l->memory);
	}
	if (l && l->pids)
		(void)sbuf_addf(&sb, "%spids %" PRIu64, sb.len ? ", " : "", l->pids);
	if (l && l->cpu_milli) {
		(void)sbuf_addf(&sb, "%scpu %" PRIu64, sb.len ? ", " : "", l->cpu_milli / 1000);
		if (l->cpu_milli % 1000) {
			char frac[8];
			int n = snprintf(frac, sizeof(frac), ".%03u",
					 (unsigned)(l->cpu_milli % 1000));

			while (n > 1 && frac[n - 1] == '0')
				frac[--n] = '\0';
			(void)sbuf_adds(&sb, frac);
		}
	}
	(void)snprintf(buf, size, "%s", sb.len ? sb.buf : "none");
	sbuf_release(&sb);
	return buf;
}

/* ---- parsing /proc/self/cgroup and mountinfo ---- */

/* The next line of *p (NUL-terminated in place; *p moves past it), or NULL. */
static char *next_line(char **p)
{
	char *s = *p, *nl;

	if (!s || !*s)
		return NULL;
	nl = strchr(s, '\n');
	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = s + strlen(s);
	}
	return s;
}

/* Is word one of the comma-separated tokens of list? */
static bool has_token(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while (p && *p) {
		const char *end = strchrnul(p, ',');

		if ((size_t)(end - p) == n && strncmp(p, word, n) == 0)
			return true;
		p = *end ? end + 1 : NULL;
	}
	return false;
}

/* mountinfo escapes blanks, tabs, newlines and backslashes as \ooo. */
static void unescape_octal(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}

/* The blank-separated fields of a mountinfo line into f (at most max). */
static size_t split_fields(char *line, char **f, size_t max)
{
	size_t n = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(line, " ", &save); tok && n < max; tok = strtok_r(NULL, " ", &save))
		f[n++] = tok;
	return n;
}

static void set_path(char *dst, const char *a, const char *b)
{
	size_t la = strlen(a);

	/* "/sys/fs/cgroup/memory" + "/" must not give a trailing slash */
	if (strcmp(b, "/") == 0)
		(void)snprintf(dst, PATH_MAX, "%s", a);
	else if (la && a[la - 1] == '/')
		(void)snprintf(dst, PATH_MAX, "%.*s%s", (int)(la - 1), a, b);
	else
		(void)snprintf(dst, PATH_MAX, "%s%s", a, b);
}

/* Fill h->hier[i] from a mount of root mroot at mnt for the cgroup own. */
static void hier_from_mount(struct contain_hier *hh, int version, const char *mnt,
			    const char *mroot, const char *own)
{
	size_t rl = strlen(mroot);
	const char *rel;

	hh->version = version;
	(void)snprintf(hh->mount, sizeof(hh->mount), "%s", mnt);
	(void)snprintf(hh->own, sizeof(hh->own), "%s", own);
	if (strcmp(mroot, "/") == 0)
		rel = own;
	else if (strncmp(own, mroot, rl) == 0 && (own[rl] == '/' || own[rl] == '\0'))
		rel = own[rl] ? own + rl : "/";
	else
		rel = NULL;
	if (!rel) {
		hh->usable = false;
		(void)snprintf(hh->why, sizeof(hh->why),
			       "bernstein's cgroup '%.100s' is not inside the mount at '%.100s'",
			       own, mnt);
		return;
	}
	{
		char dir[PATH_MAX];

		set_path(dir, mnt, rel);
		(void)snprintf(hh->base, sizeof(hh->base), "%.*s/bernstein", PATH_MAX - 16, dir);
	}
	hh->usable = true; /* as far as the text tells */
}

int contain_parse_cgroups(const char *proc_cgroup, const char *mountinfo, struct contain_host *ret)
{
	char *cg = xstrdup(proc_cgroup ? proc_cgroup : ""),
	     *mi = xstrdup(mountinfo ? mountinfo : "");
	char *own_v1[_CONTAIN_CTRL_MAX] = {NULL}, *own_v2 = NULL;
	char *p, *line;
	bool any = false;
	int c;

	for (c = 0; c < CONTAIN_HIER_MAX; c++) {
		memset(&ret->hier[c], 0, sizeof(ret->hier[c]));
		(void)snprintf(ret->hier[c].why, sizeof(ret->hier[c].why), "%s",
			       c == CONTAIN_HIER_V2 ? "no cgroup2 file system is mounted"
						    : "no cgroup v1 hierarchy has the controller");
	}

	/* ID:CONTROLLERS:PATH; cgroup v2 is 0::PATH */
	for (p = cg; (line = next_line(&p)) != NULL;) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2 || c2[1] != '/')
			continue;
		*c1 = *c2 = '\0';
		if (strcmp(line, "0") == 0 && c1[1] == '\0') {
			own_v2 = c2 + 1;
			continue;
		}
		for (c = 0; c < _CONTAIN_CTRL_MAX; c++)
			if (has_token(c1 + 1, ctrl_names[c]))
				own_v1[c] = c2 + 1;
	}

	/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
	for (p = mi; (line = next_line(&p)) != NULL;) {
		char *f[64];
		size_t n = split_fields(line, f, 64), i;

		for (i = 6; i < n && strcmp(f[i], "-") != 0; i++)
			;
		if (i + 3 >= n)
			continue;
		unescape_octal(f[3]);
		unescape_octal(f[4]);
		if (strcmp(f[i + 1], "cgroup2") == 0) {
			if (own_v2 && !ret->hier[CONTAIN_HIER_V2].version) {
				hier_from_mount(&ret->hier[CONTAIN_HIER_V2], 2, f[4], f[3], own_v2);
				any = true;
			}
			continue;
		}
		if (strcmp(f[i + 1], "cgroup") != 0)
			continue;
		for (c = 0; c < _CONTAIN_CTRL_MAX; c++) {
			struct contain_hier *hh = &ret->hier[1 + c];

			if (hh->version || !own_v1[c] || !has_token(f[i + 3], ctrl_names[c]))
				continue;
			hier_from_mount(hh, 1, f[4], f[3], own_v1[c]);
			if (hh->usable)
				hh->ctrls = 1u << c;
			any = true;
		}
	}
	free(cg);
	free(mi);
	return any ? 0 : -EINVAL;
}

/* ---- choosing ---- */

static bool tier_supported(const struct contain_host *h, enum contain_tier t)
{
	switch (t) {
	case CONTAIN_PIDNS:
		return h->pidns;
	case CONTAIN_CGROUP:
		return h->kill_hier >= 0;
	case CONTAIN_PGROUP:
		return true;
	case CONTAIN_AUTO:
	case _CONTAIN_TIER_MAX:
	case _CONTAIN_TIER_INVALID:
	default:
		return false;
	}
}

void contain_choose(struct contain_host *h)
{
	int c, t;

	h->kill_hier = -1;
	if (h->hier[CONTAIN_HIER_V2].usable)
		h->kill_hier = CONTAIN_HIER_V2;
	for (c = 0; c < _CONTAIN_CTRL_MAX && h->kill_hier < 0; c++)
		if (h->hier[1 + c].usable)
			h->kill_hier = 1 + c;
	for (c = 0; c < _CONTAIN_CTRL_MAX; c++) {
		h->ctrl_hier[c] = -1;
		if (h->hier[CONTAIN_HIER_V2].usable && (h->hier[CONTAIN_HIER_V2].ctrls & (1u << c)))
			h->ctrl_hier[c] = CONTAIN_HIER_V2;
		else if (h->hier[1 + c].usable && (h->hier[1 + c].ctrls & (1u << c)))
			h->ctrl_hier[c] = 1 + c;
	}
	h->best = CONTAIN_PGROUP;
	for (t = CONTAIN_PIDNS; t < _CONTAIN_TIER_MAX; t++)
		if (tier_supported(h, (enum contain_tier)t)) {
			h->best = (enum contain_tier)t;
			break;
		}
	t = h->max_tier > h->best ? h->max_tier : h->best;
	while (t < CONTAIN_PGROUP && !tier_supported(h, (enum contain_tier)t))
		t++;
	h->tier = (enum contain_tier)t;
}

enum contain_tier contain_effective(const struct contain_host *h, enum contain_tier req)
{
	int t = req > h->tier ? req : h->tier;

	while (t < CONTAIN_PGROUP && !tier_supported(h, (enum contain_tier)t))
		t++;
	return (enum contain_tier)t;
}

int contain_limits_check(const struct contain_host *h, const struct contain_limits *l, char *why,
			 size_t size)
{
	static const int order[] = {CONTAIN_CTRL_MEMORY, CONTAIN_CTRL_PIDS, CONTAIN_CTRL_CPU};
	size_t i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		int c = order[i];
		uint64_t v = c == CONTAIN_CTRL_MEMORY ? l->memory
			     : c == CONTAIN_CTRL_PIDS ? l->pids
						      : l->cpu_milli;
		const struct contain_hier *v2 = &h->hier[CONTAIN_HIER_V2], *v1 = &h->hier[1 + c];

		if (!v || h->ctrl_hier[c] >= 0)
			continue;
		if (v1->version)
			(void)snprintf(
				why, size,
				"limits: %s: no cgroup %s controller is available to bernstein (cgroup v1 %s: %s)",
				ctrl_names[c], ctrl_names[c], ctrl_names[c], v1->why);
		else if (v2->version && v2->usable)
			(void)snprintf(
				why, size,
				"limits: %s: no cgroup %s controller is available to bernstein (cgroup v2 does not delegate it to '%s', and no v1 hierarchy has it)",
				ctrl_names[c], ctrl_names[c], v2->own);
		else if (v2->version)
			(void)snprintf(
				why, size,
				"limits: %s: no cgroup %s controller is available to bernstein (cgroup v2: %s)",
				ctrl_names[c], ctrl_names[c], v2->why);
		else
			(void)snprintf(
				why, size,
				"limits: %s: no cgroup %s controller is available to bernstein (no cgroup file system is mounted)",
				ctrl_names[c], ctrl_names[c]);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* ---- files ---- */

/* a "/" b into dst; its length, or 0 when it does not fit. */
static size_t cat_path(char *dst, size_t size, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la + 1 + lb + 1 > size) {
		dst[0] = '\0';
		return 0;
	}
	memcpy(dst, a, la);
	dst[la] = '/';
	memcpy(dst + la + 1, b, lb + 1);
	return la + 1 + lb;
}

static int write_str(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX];
	int fd, r;

	if (!cat_path(path, sizeof(path), dir, file))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	r = write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : -errno;
	(void)close(fd);
	return r;
}

/* A small control file's text (NUL-terminated) into buf. */
static int read_small(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	while (len + 1 < size) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	(void)close(fd);
	buf[len] = '\0';
	return 0;
}

/* "KEY N" in a flat-keyed file (memory.events, memory.oom_control). */
static uint64_t keyed_value(const char *path, const char *key)
{
	char buf[CG_FILE_MAX], *p, *line;
	size_t kl = strlen(key);

	if (read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	for (p = buf; (line = next_line(&p)) != NULL;)
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
			return strtoull(line + kl + 1, NULL, 10);
	return 0;
}

/* ---- detection ---- */

/* The new process of the probe: the namespace steps, nothing else. */
struct ns_probe {
	int err;
};

VFORK_SAFE static int ns_probe_main(void *arg)
{
	struct ns_probe *pr = arg;
	int r = contain_child_ns();

	pr->err = -r;
	_exit(r < 0 ? 1 : 0);
}

#define PROBE_STACK (64 * 1024)

/* Start a process in new PID and mount namespaces (with a user namespace
 * too when userns) that mounts a fresh /proc. 0 or a negative errno. */
static int probe_pidns(bool userns)
{
	struct ns_probe pr = {0};
	int flags = CLONE_VM | CLONE_VFORK | SIGCHLD | CLONE_NEWPID | CLONE_NEWNS;
	sigset_t all, old;
	void *stack;
	pid_t pid;
	int st = 0, r;

	if (userns)
		flags |= CLONE_NEWUSER;
	stack = mmap(NULL, PROBE_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -errno;
	(void)sigfillset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, &old);
	pid = clone(ns_probe_main, (char *)stack + PROBE_STACK, flags, &pr);
	r = pid < 0 ? -errno : 0;
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	(void)munmap(stack, PROBE_STACK);
	if (r < 0)
		return r;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (pr.err)
		return -pr.err;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
}

static void detect_pidns(struct contain_host *h)
{
	int r = -EPERM;

	h->pidns = h->userns = false;
	if (h->root) {
		r = probe_pidns(false);
		if (r == 0) {
			h->pidns = true;
			return;
		}
	}
	/* not root, or root without CAP_SYS_ADMIN: a user namespace of its own */
	{
		int ru = probe_pidns(true);

		if (ru == 0) {
			h->pidns = h->userns = true;
			return;
		}
		if (!h->root)
			r = ru;
	}
	(void)snprintf(h->pidns_why, sizeof(h->pidns_why),
		       "cannot start a process in new %snamespaces with a fresh /proc: %s",
		       h->root ? "PID and mount " : "user, PID and mount ", strerror(-r));
}

/* The v2 controllers among memory, pids, cpu listed in dir/cgroup.controllers. */
static unsigned v2_controllers(const char *dir)
{
	char path[PATH_MAX], buf[CG_FILE_MAX], *save = NULL, *tok;
	unsigned m = 0;
	int c;

	(void)cat_path(path, sizeof(path), dir, "cgroup.controllers");
	if (read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		for (c = 0; c < _CONTAIN_CTRL_MAX; c++)
			if (strcmp(tok, ctrl_names[c]) == 0)
				m |= 1u << c;
	return m;
}

static bool file_exists(const char *dir, const char *file)
{
	char path[PATH_MAX];

	(void)cat_path(path, sizeof(path), dir, file);
	return access(path, F_OK) == 0;
}

/* Whether a v2 cgroup made at base (whose parent is writable) has cgroup.kill:
 * made and removed if it did not exist. */
static bool v2_has_kill(const char *base)
{
	bool made = false, has;

	if (access(base, F_OK) != 0) {
		if (mkdir(base, 0755) < 0)
			return false;
		made = true;
	}
	has = file_exists(base, "cgroup.kill");
	if (made)
		(void)rmdir(base);
	return has;
}

/* The file-system half of the cgroup detection. */
static void check_hier(struct contain_host *h, int i)
{
	struct contain_hier *hh = &h->hier[i];
	char own_dir[PATH_MAX], parent[PATH_MAX];

	if (!hh->version || !hh->usable)
		return;
	/* own_dir: the directory of bernstein's own cgroup */
	path_dirname(hh->base, own_dir, sizeof(own_dir));
	if (access(own_dir, F_OK) != 0) {
		hh->usable = false;
		(void)snprintf(hh->why, sizeof(hh->why), "'%.200s' does not exist", own_dir);
		return;
	}
	if (i == CONTAIN_HIER_V2) {
		bool at_root = strcmp(own_dir, hh->mount) == 0;

		hh->ctrls = v2_controllers(own_dir);
		if (hh->ctrls && !at_root) {
			/* controllers only for a cgroup without processes: beside ours */
			path_dirname(own_dir, parent, sizeof(parent));
			if (access(parent, W_OK) == 0) {
				(void)snprintf(hh->base, sizeof(hh->base), "%.*s/bernstein",
					       PATH_MAX - 16, parent);
			} else {
				hh->ctrls = 0; /* kill only, inside ours */
			}
		}
	}
	path_dirname(hh->base, parent, sizeof(parent));
	if (access(parent, W_OK) != 0) {
		hh->usable = false;
		hh->ctrls = 0;
		(void)snprintf(hh->why, sizeof(hh->why),
			       "'%.200s' is not writable by bernstein (%s)", parent,
			       strerror(errno));
		return;
	}
	if (i == CONTAIN_HIER_V2)
		hh->kill_file = v2_has_kill(hh->base);
}

static void make_scope(struct contain_host *h)
{
	char buf[1024], *p;
	unsigned long long start = 0;
	struct stat st;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	int field;

	if (fd >= 0)
		(void)close(fd);
	if (n > 0) {
		buf[n] = '\0';
		/* field 22 (starttime), counted after the last ')' (field 2) */
		p = strrchr(buf, ')');
		for (field = 2; p && field < 22; field++)
			p = strchr(p + 1, ' ');
		if (p)
			start = strtoull(p + 1, NULL, 10);
	}
	if (stat("/proc/self/ns/pid", &st) < 0)
		st.st_ino = 0;
	(void)snprintf(h->scope, sizeof(h->scope), "p%ld-%llu-%llu", (long)getpid(), start,
		       (unsigned long long)st.st_ino);
}

static enum contain_tier arg_max_tier = CONTAIN_AUTO;

void contain_detect(struct contain_host *ret)
{
	char *cg = NULL, *mi = NULL;
	size_t len;
	int i;

	memset(ret, 0, sizeof(*ret));
	ret->root = geteuid() == 0;
	ret->max_tier = arg_max_tier;
	detect_pidns(ret);
	if (read_file_capped("/proc/self/cgroup", PROC_TEXT_MAX, &cg, &len) == 0 &&
	    read_file_capped("/proc/self/mountinfo", PROC_TEXT_MAX, &mi, &len) == 0)
		(void)contain_parse_cgroups(cg, mi, ret);
	else
		(void)contain_parse_cgroups("", "", ret);
	free(cg);
	free(mi);
	for (i = 0; i < CONTAIN_HIER_MAX; i++)
		check_hier(ret, i);
	make_scope(ret);
	contain_choose(ret);
}

static struct contain_host arg_host;
static pthread_once_t arg_host_once = PTHREAD_ONCE_INIT;
static pid_t arg_host_pid;

static void host_init(void)
{
	contain_detect(&arg_host);
	arg_host_pid = getpid();
	log_debug("containment: tier %s (best %s)", contain_tier_to_string(arg_host.tier),
		  contain_tier_to_string(arg_host.best));
}

const struct contain_host *contain_host(void)
{
	(void)pthread_once(&arg_host_once, host_init);
	/* a forked copy is another process: a scope of its own */
	if (arg_host_pid != getpid()) {
		make_scope(&arg_host);
		arg_host_pid = getpid();
	}
	return &arg_host;
}

void contain_set_max_tier(enum contain_tier max)
{
	arg_max_tier = max >= 0 && max < _CONTAIN_TIER_MAX ? max : CONTAIN_AUTO;
	(void)pthread_once(&arg_host_once, host_init);
	arg_host.max_tier = arg_max_tier;
	contain_choose(&arg_host);
}

/* ---- a child's cgroups ---- */

static atomic_uint arg_seq;

/* "12" or "12-NAME" with NAME's bytes outside [A-Za-z0-9._-] as '_', cut. */
static void leaf_name(const char *name, char *buf, size_t size)
{
	unsigned seq = atomic_fetch_add(&arg_seq, 1) + 1;
	size_t n = (size_t)snprintf(buf, size, "%u", seq), i;

	if (!name || !*name || n + 2 >= size)
		return;
	buf[n++] = '-';
	for (i = 0; name[i] && n + 1 < size && i < 120; i++) {
		unsigned char ch = (unsigned char)name[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';

		buf[n++] = ok ? (char)ch : '_';
	}
	buf[n] = '\0';
}

/* "+memory +pids" into dir/cgroup.subtree_control, for what it lacks. */
static int v2_enable(const char *dir, unsigned ctrls)
{
	char path[PATH_MAX], cur[CG_FILE_MAX];
	int c, r;

	(void)cat_path(path, sizeof(path), dir, "cgroup.subtree_control");
	if (read_small(path, cur, sizeof(cur)) < 0)
		cur[0] = '\0';
	for (c = 0; c < _CONTAIN_CTRL_MAX; c++) {
		char word[16], *save = NULL, *tok, copy[CG_FILE_MAX];
		bool on = false;

		if (!(ctrls & (1u << c)))
			continue;
		(void)snprintf(copy, sizeof(copy), "%s", cur);
		for (tok = strtok_r(copy, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
			on = on || strcmp(tok, ctrl_names[c]) == 0;
		if (on)
			continue;
		(void)snprintf(word, sizeof(word), "+%s", ctrl_names[c]);
		r = write_str(dir, "cgroup.subtree_control", word);
		if (r < 0)
			return r;
	}
	return 0;
}

static int mkdir_ok(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Make base/scope/leaf in hierarchy hh (for the controllers ctrls of v2);
 * dir gets the leaf. A concurrent bernstein removing an empty base or
 * scope is raced by trying again. */
static int make_leaf(const struct contain_host *h, const struct contain_hier *hh, unsigned ctrls,
		     const char *leaf, char *dir, struct diag *reterr)
{
	char scope[PATH_MAX], parent[PATH_MAX];
	int tries, r = 0;

	(void)snprintf(scope, sizeof(scope), "%s/%s", hh->base, h->scope);
	if (snprintf(dir, PATH_MAX, "%s/%s", scope, leaf) >= PATH_MAX) {
		diag_set(reterr, NULL, 0, 0, "cgroup path too long under '%s'", scope);
		return -ENAMETOOLONG;
	}
	path_dirname(hh->base, parent, sizeof(parent));
	for (tries = 0; tries < 3; tries++) {
		const char *failed = parent;

		r = 0;
		if (hh->version == 2 && ctrls)
			r = v2_enable(parent, ctrls);
		if (r == 0) {
			failed = hh->base;
			r = mkdir_ok(hh->base);
		}
		if (r == 0 && hh->version == 2 && ctrls)
			r = v2_enable(hh->base, ctrls);
		if (r == 0) {
			failed = scope;
			r = mkdir_ok(scope);
		}
		if (r == 0 && hh->version == 2 && ctrls)
			r = v2_enable(scope, ctrls);
		if (r == 0) {
			failed = dir;
			r = mkdir(dir, 0755) < 0 ? -errno : 0;
		}
		if (r == 0)
			return 0;
		if (r != -ENOENT) {
			diag_set(reterr, NULL, 0, 0, "cannot create the cgroup '%s': %s", failed,
				 strerror(-r));
			return r;
		}
	}
	diag_set(reterr, NULL, 0, 0, "cannot create the cgroup '%s': %s", dir, strerror(-r));
	return r;
}

static int write_limits(const struct contain_hier *hh, const char *dir, unsigned ctrls,
			const struct contain_limits *l, struct diag *reterr)
{
	char v[64];
	const char *file = NULL;
	int r = 0;

	if (ctrls & (1u << CONTAIN_CTRL_MEMORY)) {
		(void)snprintf(v, sizeof(v), "%" PRIu64, l->memory);
		file = hh->version == 2 ? "memory.max" : "memory.limit_in_bytes";
		r = write_str(dir, file, v);
		/* no swapping past it: the limit is what the task may use */
		if (r == 0) {
			int s = hh->version == 2 ? write_str(dir, "memory.swap.max", "0")
						 : write_str(dir, "memory.memsw.limit_in_bytes", v);

			if (s < 0 && s != -ENOENT) {
				file = hh->version == 2 ? "memory.swap.max"
							: "memory.memsw.limit_in_bytes";
				r = s;
			}
		}
	}
	if (r == 0 && (ctrls & (1u << CONTAIN_CTRL_PIDS))) {
		(void)snprintf(v, sizeof(v), "%" PRIu64, l->pids);
		file = "pids.max";
		r = write_str(dir, file, v);
	}
	if (r == 0 && (ctrls & (1u << CONTAIN_CTRL_CPU))) {
		uint64_t quota = l->cpu_milli * (CPU_PERIOD_US / 1000);

		if (hh->version == 2) {
			(void)snprintf(v, sizeof(v), "%" PRIu64 " %d", quota, CPU_PERIOD_US);
			file = "cpu.max";
			r = write_str(dir, file, v);
		} else {
			(void)snprintf(v, sizeof(v), "%d", CPU_PERIOD_US);
			file = "cpu.cfs_period_us";
			r = write_str(dir, file, v);
			if (r == 0) {
				(void)snprintf(v, sizeof(v), "%" PRIu64, quota);
				file = "cpu.cfs_quota_us";
				r = write_str(dir, file, v);
			}
		}
	}
	if (r < 0)
		diag_set(reterr, NULL, 0, 0, "cannot set '%s/%s': %s", dir, file, strerror(-r));
	return r;
}

struct contain_cg *contain_cg_free(struct contain_cg *cg)
{
	unsigned i;

	if (!cg)
		return NULL;
	for (i = 0; i < cg->n; i++)
		free(cg->dir[i]);
	free(cg);
	return NULL;
}

int contain_cg_create(const struct contain_host *h, const char *name,
		      const struct contain_limits *l, bool for_kill, struct contain_cg **ret,
		      int *procs_fds, struct diag *reterr)
{
	static const struct contain_limits none = {0};
	struct contain_cg *cg = xcalloc(1, sizeof(*cg));
	unsigned ctrls_of[CONTAIN_HIER_MAX] = {0};
	bool want[CONTAIN_HIER_MAX] = {false};
	char leaf[160], why[512];
	int i, c, r = 0;

	if (!l)
		l = &none;
	cg->kill_idx = cg->oom_idx = -1;
	for (i = 0; i < CONTAIN_HIER_MAX; i++)
		procs_fds[i] = -1;
	r = contain_limits_check(h, l, why, sizeof(why));
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "%s", why);
		goto fail;
	}
	for (c = 0; c < _CONTAIN_CTRL_MAX; c++) {
		uint64_t v = c == CONTAIN_CTRL_MEMORY ? l->memory
			     : c == CONTAIN_CTRL_PIDS ? l->pids
						      : l->cpu_milli;

		if (!v)
			continue;
		want[h->ctrl_hier[c]] = true;
		ctrls_of[h->ctrl_hier[c]] |= 1u << c;
	}
	if (for_kill) {
		if (h->kill_hier < 0) {
			diag_set(reterr, NULL, 0, 0, "no cgroup hierarchy is usable by bernstein");
			r = -EOPNOTSUPP;
			goto fail;
		}
		want[h->kill_hier] = true;
	}
	/* v1 controllers mounted together are one hierarchy: one cgroup */
	for (i = 1; i < CONTAIN_HIER_MAX; i++) {
		int j;

		for (j = 1; j < i && want[i]; j++)
			if (want[j] && strcmp(h->hier[j].base, h->hier[i].base) == 0) {
				ctrls_of[j] |= ctrls_of[i];
				want[i] = false;
			}
	}
	leaf_name(name, leaf, sizeof(leaf));
	for (i = 0; i < CONTAIN_HIER_MAX; i++) {
		const struct contain_hier *hh = &h->hier[i];
		char dir[PATH_MAX], path[PATH_MAX];
		unsigned k = cg->n;

		if (!want[i])
			continue;
		r = make_leaf(h, hh, hh->version == 2 ? ctrls_of[i] : 0, leaf, dir, reterr);
		if (r < 0)
			goto fail;
		cg->hier[k] = i;
		cg->dir[k] = xstrdup(dir);
		cg->n++;
		if (hh->version == 2 && hh->kill_file)
			cg->kill_idx = (int)k;
		if (ctrls_of[i] & (1u << CONTAIN_CTRL_MEMORY))
			cg->oom_idx = (int)k;
		r = write_limits(hh, dir, ctrls_of[i], l, reterr);
		if (r < 0)
			goto fail;
		(void)cat_path(path, sizeof(path), dir, "cgroup.procs");
		procs_fds[k] = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (procs_fds[k] < 0) {
			r = -errno;
			diag_set(reterr, NULL, 0, 0, "cannot open '%s': %s", path, strerror(-r));
			goto fail;
		}
	}
	*ret = cg;
	return 0;
fail:
	for (i = 0; i < CONTAIN_HIER_MAX; i++)
		close_fdp(&procs_fds[i]);
	(void)contain_cg_remove(cg);
	contain_cg_free(cg);
	return r;
}

/* dir/FILE's number, 0 when unreadable. */
static uint64_t cg_number(const char *dir, const char *file)
{
	char path[PATH_MAX], buf[64];

	if (!cat_path(path, sizeof(path), dir, file) || read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	return strtoull(buf, NULL, 10);
}

bool contain_cg_memory_hit(const struct contain_cg *cg)
{
	static const char *const v1[][3] = {
		{"memory.failcnt", "memory.max_usage_in_bytes", "memory.limit_in_bytes"},
		{"memory.memsw.failcnt", "memory.memsw.max_usage_in_bytes",
		 "memory.memsw.limit_in_bytes"},
	};
	char path[PATH_MAX];
	const char *dir;
	size_t i;

	if (!cg || cg->oom_idx < 0)
		return false;
	dir = cg->dir[cg->oom_idx];
	if (cg->hier[cg->oom_idx] == CONTAIN_HIER_V2) {
		(void)cat_path(path, sizeof(path), dir, "memory.events");
		return keyed_value(path, "max") > 0;
	}
	/* a failure counted, or the peak at the limit (kernels that count
	 * failures for the root cgroup only) */
	for (i = 0; i < sizeof(v1) / sizeof(v1[0]); i++) {
		uint64_t limit = cg_number(dir, v1[i][2]);

		if (cg_number(dir, v1[i][0]) > 0 ||
		    (limit > 0 && cg_number(dir, v1[i][1]) >= limit))
			return true;
	}
	return false;
}

/* ---- killing and removing: async-signal-safe below (the keeper) ---- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000L};

	(void)nanosleep(&ts, NULL);
}

/* SIGKILL every pid listed in dir/cgroup.procs; how many were listed. */
static int kill_listed(const char *dir)
{
	char path[PATH_MAX], buf[4096];
	long pid = -1;
	int fd, listed = 0;

	(void)cat_path(path, sizeof(path), dir, "cgroup.procs");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf)), i;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				pid = (pid < 0 ? 0 : pid * 10) + (buf[i] - '0');
				continue;
			}
			if (pid > 0) {
				(void)kill((pid_t)pid, SIGKILL);
				listed++;
			}
			pid = -1;
		}
	}
	if (pid > 0) {
		(void)kill((pid_t)pid, SIGKILL);
		listed++;
	}
	(void)close(fd);
	return listed;
}

/* Call fn(dir, name, arg) on each sub-directory of dir not starting with
 * '.'; the sum of what fn returned. getdents64 into a buffer on the stack:
 * no allocation, so the keeper may walk too. */
static int each_subdir(const char *dir, int (*fn)(const char *dir, const char *name, void *arg),
		       void *arg)
{
	char buf[2048];
	int fd, total = 0;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (fd >= 0) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf)), off;

		if (n <= 0)
			break;
		for (off = 0; off < n;) {
			unsigned short reclen;
			unsigned char type = (unsigned char)buf[off + 18];
			const char *name = buf + off + 19;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (type == DT_DIR && name[0] != '.')
				total += fn(dir, name, arg);
		}
	}
	if (fd >= 0)
		(void)close(fd);
	return total;
}

/* The oom_kill of dir's memory.oom_control and of its sub-cgroups' (v1
 * counts a kill in the victim's own cgroup only: an OCI runtime puts the
 * container in a cgroup beneath the task's). */
struct oom_sum {
	int depth;
	uint64_t kills;
};

static int v1_oom_sub(const char *dir, const char *name, void *arg)
{
	struct oom_sum *up = arg, sub = {.depth = up->depth + 1};
	char path[PATH_MAX], file[PATH_MAX];

	if (!cat_path(path, sizeof(path), dir, name))
		return 0;
	if (sub.depth < TREE_DEPTH)
		(void)each_subdir(path, v1_oom_sub, &sub);
	up->kills += sub.kills;
	if (cat_path(file, sizeof(file), path, "memory.oom_control"))
		up->kills += keyed_value(file, "oom_kill");
	return 0;
}

uint64_t contain_cg_oom_kills(const struct contain_cg *cg)
{
	struct oom_sum sum = {0};
	char path[PATH_MAX];
	const char *dir;

	if (!cg || cg->oom_idx < 0)
		return 0;
	dir = cg->dir[cg->oom_idx];
	if (cg->hier[cg->oom_idx] == CONTAIN_HIER_V2) {
		/* v2's memory.events counts the kills beneath too */
		(void)cat_path(path, sizeof(path), dir, "memory.events");
		return keyed_value(path, "oom_kill");
	}
	(void)each_subdir(dir, v1_oom_sub, &sum);
	(void)cat_path(path, sizeof(path), dir, "memory.oom_control");
	return sum.kills + keyed_value(path, "oom_kill");
}

struct walk {
	int depth;
	int (*fn)(const char *dir);
};

static int walk_tree(const char *dir, int depth, int (*fn)(const char *dir));

static int walk_sub(const char *dir, const char *name, void *arg)
{
	const struct walk *w = arg;
	char sub[PATH_MAX];

	return cat_path(sub, sizeof(sub), dir, name) ? walk_tree(sub, w->depth + 1, w->fn) : 0;
}

/* Call fn on dir's sub-directories, depth first, then on dir. */
static int walk_tree(const char *dir, int depth, int (*fn)(const char *dir))
{
	struct walk w = {.depth = depth, .fn = fn};

	return (depth < TREE_DEPTH ? each_subdir(dir, walk_sub, &w) : 0) + fn(dir);
}

static int rmdir_one(const char *dir)
{
	return rmdir(dir) < 0 && errno != ENOENT ? 1 : 0;
}

int contain_kill_tree(const char *dir)
{
	char path[PATH_MAX];
	uint64_t until;
	int round, left = 0;
	int fd;

	(void)cat_path(path, sizeof(path), dir, "cgroup.kill");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "1", 1);
		(void)close(fd);
	}
	/* cgroup v1 (or a failed cgroup.kill): kill what is listed until none
	 * is; a process forking meanwhile is caught by the next round */
	for (round = 0; round < KILL_ROUNDS; round++) {
		if (walk_tree(dir, 0, kill_listed) == 0)
			break;
		nap_ms(round < 8 ? 1 : 10);
	}
	/* a killed process leaves its cgroup when it has exited */
	until = mono_ms() + REMOVE_WAIT_MS;
	do {
		left = walk_tree(dir, 0, rmdir_one);
		if (left)
			nap_ms(2);
	} while (left && mono_ms() < until);
	return left ? -EBUSY : 0;
}

int contain_cg_kill(const struct contain_cg *cg)
{
	unsigned i;
	int round;

	if (!cg)
		return 0;
	if (cg->kill_idx >= 0) {
		int r = write_str(cg->dir[cg->kill_idx], "cgroup.kill", "1");

		if (r == 0)
			return 0;
	}
	for (round = 0; round < KILL_ROUNDS; round++) {
		int listed = 0;

		for (i = 0; i < cg->n; i++)
			listed += walk_tree(cg->dir[i], 0, kill_listed);
		if (!listed)
			return 0;
		nap_ms(round < 8 ? 1 : 10);
	}
	return -EAGAIN;
}

int contain_cg_remove(struct contain_cg *cg)
{
	unsigned i;
	int r = 0;

	if (!cg)
		return 0;
	for (i = 0; i < cg->n; i++) {
		char scope[PATH_MAX], base[PATH_MAX];

		if (contain_kill_tree(cg->dir[i]) < 0) {
			log_debug("cannot remove the cgroup '%s'", cg->dir[i]);
			r = -EBUSY;
			continue;
		}
		/* the scope and bernstein's directory go when empty */
		path_dirname(cg->dir[i], scope, sizeof(scope));
		path_dirname(scope, base, sizeof(base));
		if (rmdir(scope) == 0)
			(void)rmdir(base);
	}
	return r;
}

unsigned contain_scope_dirs(const struct contain_host *h, char (*dirs)[PATH_MAX])
{
	unsigned n = 0;
	int i;

	for (i = 0; i < CONTAIN_HIER_MAX; i++) {
		unsigned k;
		bool dup = false;

		if (!h->hier[i].usable)
			continue;
		(void)snprintf(dirs[n], PATH_MAX, "%.*s/%s", PATH_MAX - 100, h->hier[i].base,
			       h->scope);
		for (k = 0; k < n; k++)
			dup = dup || strcmp(dirs[k], dirs[n]) == 0;
		if (!dup)
			n++;
	}
	return n;
}

/* Is the scope name p<pid>-<start>-<ns> one of a live process? Only a
 * process of this PID namespace can be judged: others are alive. */
static bool scope_alive(const char *name, unsigned long long own_ns)
{
	char path[64], buf[1024], *p, *end;
	unsigned long long pid, start, ns, real_start = 0;
	ssize_t n;
	int fd, field;

	if (name[0] != 'p')
		return true;
	pid = strtoull(name + 1, &end, 10);
	if (*end != '-')
		return true;
	start = strtoull(end + 1, &end, 10);
	if (*end != '-')
		return true;
	ns = strtoull(end + 1, &end, 10);
	if (*end || ns != own_ns || pid == 0)
		return true;
	(void)snprintf(path, sizeof(path), "/proc/%llu/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		real_start = strtoull(p + 1, NULL, 10);
	return real_start == start;
}

struct sweep {
	const char *own_scope;
	unsigned long long own_ns;
};

/* A scope of a dead bernstein under a hierarchy's base: killed, removed. */
static int sweep_scope(const char *base, const char *name, void *arg)
{
	const struct sweep *sw = arg;
	char dir[PATH_MAX];

	if (strcmp(name, sw->own_scope) == 0 || scope_alive(name, sw->own_ns) ||
	    !cat_path(dir, sizeof(dir), base, name))
		return 0;
	log_debug("removing the cgroups of a dead bernstein: '%s'", dir);
	return contain_kill_tree(dir) == 0 ? 1 : 0;
}

int contain_sweep_stale(const struct contain_host *h)
{
	struct stat st;
	struct sweep sw = {.own_scope = h->scope};
	int i, removed = 0;

	if (stat("/proc/self/ns/pid", &st) < 0)
		return -errno;
	sw.own_ns = (unsigned long long)st.st_ino;
	for (i = 0; i < CONTAIN_HIER_MAX; i++) {
		const struct contain_hier *hh = &h->hier[i];

		if (!hh->usable)
			continue;
		removed += each_subdir(hh->base, sweep_scope, &sw);
		(void)rmdir(hh->base);
	}
	return removed;
}

bool contain_init_default_action(pid_t pid, int sig)
{
	char path[64], buf[CG_FILE_MAX], *p, *line;
	unsigned long long ign = 0, cgt = 0, bit;
	bool got_ign = false, got_cgt = false;

	if (pid <= 0 || sig <= 0 || sig > 64)
		return false;
	(void)snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return false;
	for (p = buf; (line = next_line(&p)) != NULL;) {
		if (strncmp(line, "SigIgn:", 7) == 0) {
			ign = strtoull(line + 7, NULL, 16);
			got_ign = true;
		} else if (strncmp(line, "SigCgt:", 7) == 0) {
			cgt = strtoull(line + 7, NULL, 16);
			got_cgt = true;
		}
	}
	bit = 1ull << (sig - 1);
	return got_ign && got_cgt && !(ign & bit) && !(cgt & bit);
}

/* ---- in the child ---- */

VFORK_SAFE int contain_child_enter(const int *procs_fds, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (procs_fds[i] >= 0 && write(procs_fds[i], "0", 1) != 1)
			return -errno;
	return 0;
}

VFORK_SAFE int contain_child_ns(void)
{
	/* nothing mounted here reaches the parent's namespace, and the new
	 * /proc shows this namespace's processes only */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
	return 0;
}
