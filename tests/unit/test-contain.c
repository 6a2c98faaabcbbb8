/* Containment (proc/contain.h) with real processes, and the detection's
 * parsing and choices without any.
 *
 * The fake agent's "daemon FILE" leaves processes that escape its process
 * group (a double fork, setsid, SIGTERM and SIGHUP ignored) and append to
 * FILE every 10 ms; they are found from outside by FILE in their argv (their
 * pids may be those of the agent's PID namespace). For each tier the host
 * supports: nothing remains after the agent exits, after its timeout, after a
 * cancel, after SIGKILL of the supervisor, and (pidns; cgroup after
 * contain_sweep_stale()) after SIGKILL of the supervisor and its keeper. The
 * process-group tier is shown to leave them (what it does not promise). Then
 * the PID namespace's view of /proc, its init's signal semantics, and the
 * limits (memory -> OOM kill counted, pids, cpu as a ratio). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/contain.h"
#include "proc/supervise.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#include "test-procs.h"

#define END ((const char *)NULL)

static const char *fake_agent;
static char scratch[64];

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- parsing and choosing, no processes ---- */

/* This machine kind: cgroup v1 controllers, cgroup2 with nothing delegated. */
static const char hybrid_cgroup[] = "9:name=systemd:/\n"
				    "8:pids:/\n"
				    "4:memory:/process_api/abc\n"
				    "2:cpuacct:/\n"
				    "1:cpu:/\n"
				    "0::/\n";
static const char hybrid_mountinfo[] =
	"30 24 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
	"33 30 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"34 30 0:30 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	"35 30 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static void test_parse_hybrid(void **state)
{
	struct contain_host h;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(contain_parse_cgroups(hybrid_cgroup, hybrid_mountinfo, &h), 0);
	assert_int_equal(h.hier[CONTAIN_HIER_V2].version, 2);
	assert_true(h.hier[CONTAIN_HIER_V2].usable);
	assert_string_equal(h.hier[CONTAIN_HIER_V2].base, "/sys/fs/cgroup/unified/bernstein");
	assert_int_equal(h.hier[1 + CONTAIN_CTRL_MEMORY].version, 1);
	assert_string_equal(h.hier[1 + CONTAIN_CTRL_MEMORY].own, "/process_api/abc");
	assert_string_equal(h.hier[1 + CONTAIN_CTRL_MEMORY].base,
			    "/sys/fs/cgroup/memory/process_api/abc/bernstein");
	assert_int_equal(h.hier[1 + CONTAIN_CTRL_MEMORY].ctrls, 1u << CONTAIN_CTRL_MEMORY);
	assert_string_equal(h.hier[1 + CONTAIN_CTRL_PIDS].base, "/sys/fs/cgroup/pids/bernstein");
	/* "cpu" is not "cpuacct" */
	assert_string_equal(h.hier[1 + CONTAIN_CTRL_CPU].base, "/sys/fs/cgroup/cpu/bernstein");

	/* v2 delegates nothing here: limits in v1, the kill through v2 */
	h.pidns = false;
	contain_choose(&h);
	assert_int_equal(h.kill_hier, CONTAIN_HIER_V2);
	assert_int_equal(h.ctrl_hier[CONTAIN_CTRL_MEMORY], 1 + CONTAIN_CTRL_MEMORY);
	assert_int_equal(h.ctrl_hier[CONTAIN_CTRL_PIDS], 1 + CONTAIN_CTRL_PIDS);
	assert_int_equal(h.ctrl_hier[CONTAIN_CTRL_CPU], 1 + CONTAIN_CTRL_CPU);
	assert_int_equal(h.best, CONTAIN_CGROUP);
	assert_int_equal(h.tier, CONTAIN_CGROUP);
	h.pidns = true;
	contain_choose(&h);
	assert_int_equal(h.tier, CONTAIN_PIDNS);
	/* the operator's cap */
	h.max_tier = CONTAIN_CGROUP;
	contain_choose(&h);
	assert_int_equal(h.best, CONTAIN_PIDNS);
	assert_int_equal(h.tier, CONTAIN_CGROUP);
	assert_int_equal(contain_effective(&h, CONTAIN_AUTO), CONTAIN_CGROUP);
	assert_int_equal(contain_effective(&h, CONTAIN_PIDNS), CONTAIN_CGROUP);
	assert_int_equal(contain_effective(&h, CONTAIN_PGROUP), CONTAIN_PGROUP);
}

static void test_parse_v2_only(void **state)
{
	struct contain_host h;
	struct contain_limits l = {.memory = 64 << 20};
	char why[512];

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(
		contain_parse_cgroups(
			"0::/user.slice/user-1000.slice/user@1000.service/app.slice/b.scope\n",
			"40 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			&h),
		0);
	assert_string_equal(
		h.hier[CONTAIN_HIER_V2].base,
		"/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/b.scope/bernstein");
	assert_int_equal(h.hier[1 + CONTAIN_CTRL_MEMORY].version, 0);
	/* nothing delegated (the file-system check says what is): kill only */
	contain_choose(&h);
	assert_int_equal(h.best, CONTAIN_CGROUP);
	assert_int_equal(h.ctrl_hier[CONTAIN_CTRL_MEMORY], -1);
	assert_int_equal(contain_limits_check(&h, &l, why, sizeof(why)), -EOPNOTSUPP);
	assert_string_equal(
		why,
		"limits: memory: no cgroup memory controller is available to bernstein (cgroup v2 does not delegate it to '/user.slice/user-1000.slice/user@1000.service/app.slice/b.scope', and no v1 hierarchy has it)");
	/* delegated */
	h.hier[CONTAIN_HIER_V2].ctrls = 1u << CONTAIN_CTRL_MEMORY;
	contain_choose(&h);
	assert_int_equal(h.ctrl_hier[CONTAIN_CTRL_MEMORY], CONTAIN_HIER_V2);
	assert_int_equal(contain_limits_check(&h, &l, why, sizeof(why)), 0);
	l.pids = 10;
	assert_int_equal(contain_limits_check(&h, &l, why, sizeof(why)), -EOPNOTSUPP);
	assert_non_null(strstr(why, "limits: pids: "));
}

static void test_parse_odd(void **state)
{
	struct contain_host h;
	struct contain_limits l = {.cpu_milli = 500};
	char why[512];

	(void)state;
	memset(&h, 0, sizeof(h));
	/* co-mounted cpu,cpuacct; a mount whose root is not bernstein's cgroup's
	 * ancestor (a cgroup namespace elsewhere); a blank in a mount point */
	assert_int_equal(contain_parse_cgroups(
				 "3:cpu,cpuacct:/a/b\n"
				 "2:memory:/x\n",
				 "1 0 0:1 / /cg/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
				 "2 0 0:2 /elsewhere /cg/my\\040mem rw - cgroup cgroup rw,memory\n",
				 &h),
			 0);
	assert_string_equal(h.hier[1 + CONTAIN_CTRL_CPU].base, "/cg/cpu,cpuacct/a/b/bernstein");
	assert_int_equal(h.hier[1 + CONTAIN_CTRL_MEMORY].version, 1);
	assert_false(h.hier[1 + CONTAIN_CTRL_MEMORY].usable);
	assert_string_equal(h.hier[1 + CONTAIN_CTRL_MEMORY].why,
			    "bernstein's cgroup '/x' is not inside the mount at '/cg/my mem'");
	assert_int_equal(h.hier[CONTAIN_HIER_V2].version, 0);
	contain_choose(&h);
	assert_int_equal(h.kill_hier, 1 + CONTAIN_CTRL_CPU);
	assert_int_equal(contain_limits_check(&h, &l, why, sizeof(why)), 0);
	l.memory = 1 << 30;
	assert_int_equal(contain_limits_check(&h, &l, why, sizeof(why)), -EOPNOTSUPP);
	assert_string_equal(
		why,
		"limits: memory: no cgroup memory controller is available to bernstein (cgroup v1 memory: bernstein's cgroup '/x' is not inside the mount at '/cg/my mem')");

	/* nothing at all */
	memset(&h, 0, sizeof(h));
	assert_int_equal(contain_parse_cgroups("", "", &h), -EINVAL);
	contain_choose(&h);
	assert_int_equal(h.best, CONTAIN_PGROUP);
	assert_int_equal(h.kill_hier, -1);
	l = (struct contain_limits){.pids = 5};
	assert_int_equal(contain_limits_check(&h, &l, why, sizeof(why)), -EOPNOTSUPP);
	assert_string_equal(
		why,
		"limits: pids: no cgroup pids controller is available to bernstein (no cgroup file system is mounted)");
}

static void test_names(void **state)
{
	struct contain_limits l = {.memory = 512ull << 20, .pids = 256, .cpu_milli = 1500};
	char buf[128];

	(void)state;
	assert_string_equal(contain_limits_describe(&l, buf, sizeof(buf)),
			    "memory 512M, pids 256, cpu 1.5");
	l = (struct contain_limits){.memory = 1000, .cpu_milli = 250};
	assert_string_equal(contain_limits_describe(&l, buf, sizeof(buf)), "memory 1000, cpu 0.25");
	l = (struct contain_limits){0};
	assert_string_equal(contain_limits_describe(&l, buf, sizeof(buf)), "none");
	assert_false(contain_limits_any(&l));
	assert_int_equal(contain_tier_from_string("pidns"), CONTAIN_PIDNS);
	assert_int_equal(contain_tier_from_string("cgroup"), CONTAIN_CGROUP);
	assert_int_equal(contain_tier_from_string("pgroup"), CONTAIN_PGROUP);
	assert_int_equal(contain_tier_from_string("auto"), CONTAIN_AUTO);
	assert_int_equal(contain_tier_from_string("vm"), _CONTAIN_TIER_INVALID);
	assert_string_equal(contain_tier_to_string(CONTAIN_CGROUP), "cgroup");
}

/* ---- one supervised agent ---- */

struct one {
	struct strvec args;
	enum contain_tier tier;
	struct contain_limits limits;
	uint64_t timeout_ms, grace_ms;
	int signal_on_ready; /* raise this when the agent prints "ready" */
	struct proc result;
	struct sbuf out, err;
	bool started;
};

static void one_init(struct one *o, enum contain_tier tier, ...)
{
	const char *a;
	va_list ap;

	memset(o, 0, sizeof(*o));
	strvec_init(&o->args);
	sbuf_init(&o->out, SIZE_MAX);
	sbuf_init(&o->err, SIZE_MAX);
	o->tier = tier;
	o->grace_ms = 300;
	va_start(ap, tier);
	while ((a = va_arg(ap, const char *)))
		strvec_push(&o->args, a);
	va_end(ap);
}

static void one_release(struct one *o)
{
	strvec_clear(&o->args);
	sbuf_release(&o->out);
	sbuf_release(&o->err);
	free(o->result.path);
	free(o->result.start_error);
}

static const char *const base_env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};

static int one_next(void *ctx, struct proc_spec *spec, void **ret_task)
{
	struct one *o = ctx;

	if (o->started)
		return 0;
	o->started = true;
	strvec_push(&spec->argv, fake_agent);
	strvec_pushv(&spec->argv, o->args.v);
	strvec_pushv(&spec->env, base_env);
	spec->timeout_ms = o->timeout_ms;
	spec->kill_grace_ms = o->grace_ms;
	spec->contain = o->tier;
	spec->limits = o->limits;
	spec->cgroup_name = "unit.test";
	*ret_task = o;
	return 1;
}

static int line_fd = -1; /* forward every line here too (a helper's pipe) */

static void one_line(void *ctx, void *task, int stream, const char *line, size_t len)
{
	struct one *o = ctx;

	(void)task;
	assert_int_equal(sbuf_add(stream == 1 ? &o->out : &o->err, line, len), 0);
	assert_int_equal(sbuf_addc(stream == 1 ? &o->out : &o->err, '\n'), 0);
	if (line_fd >= 0 &&
	    (write(line_fd, line, len) != (ssize_t)len || write(line_fd, "\n", 1) != 1))
		_exit(98);
	if (stream == 1 && len == 5 && memcmp(line, "ready", 5) == 0 && o->signal_on_ready)
		raise(o->signal_on_ready);
}

static void one_exit(void *ctx, void *task, const struct proc *p)
{
	struct one *o = ctx;

	(void)task;
	o->result = *p;
	o->result.path = p->path ? xstrdup(p->path) : NULL;
	o->result.start_error = p->start_error ? xstrdup(p->start_error) : NULL;
	o->result.cg = NULL;
}

static const struct supervisor_ops one_ops = {
	.next_task = one_next,
	.on_line = one_line,
	.on_exit = one_exit,
};

static int one_run(struct one *o)
{
	struct supervisor_opts so = {.max_parallel = 1};

	return supervise_run(&one_ops, o, &so, NULL);
}

/* ---- processes left behind ---- */

/* A fresh marker file for "daemon"; its escapees carry it in their argv. */
static char *marker(const char *what)
{
	static unsigned n;
	char *p = xmalloc(PATH_MAX);

	(void)snprintf(p, PATH_MAX, "%s/%s-%u.beat", scratch, what, ++n);
	return p;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Nothing with m in its argv runs, and m stops growing. */
static void assert_none_left(const char *m)
{
	off_t a, b;

	assert_true(procs_wait_none(m, 5000));
	a = file_size(m);
	sleep_ms(100); /* not synchronisation: a window in which it would grow */
	b = file_size(m);
	assert_true(a == b);
}

/* SIGKILL what has m in its argv (what a weaker tier left). */
static void kill_marked(const char *m)
{
	DIR *d;
	struct dirent *de;
	int round;

	for (round = 0; round < 50 && procs_with_arg(m) > 0; round++) {
		d = opendir("/proc");
		while (d && (de = readdir(d))) {
			char path[64], buf[8192];
			ssize_t len;
			size_t i;
			int fd;

			if (de->d_name[0] < '1' || de->d_name[0] > '9' || strlen(de->d_name) > 20)
				continue;
			(void)snprintf(path, sizeof(path), "/proc/%.20s/cmdline", de->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			len = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			for (i = 0; len > 0 && i < (size_t)len; i += strlen(buf + i) + 1)
				if (strcmp(buf + i, m) == 0)
					(void)kill((pid_t)strtol(de->d_name, NULL, 10), SIGKILL);
		}
		if (d)
			closedir(d);
		sleep_ms(10);
	}
}

static const enum contain_tier tiers[] = {CONTAIN_PIDNS, CONTAIN_CGROUP, CONTAIN_PGROUP};

/* Whether the host gives tier t (the test is skipped for it otherwise). */
static bool have(enum contain_tier t)
{
	if (contain_effective(contain_host(), t) == t)
		return true;
	print_message("# tier %s: not on this host, skipped\n", contain_tier_to_string(t));
	return false;
}

/* The agent leaves escapees and exits 0. */
static void test_agent_exits(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(tiers) / sizeof(tiers[0]); i++) {
		struct one o;
		char *m = marker("exit");

		if (!have(tiers[i])) {
			free(m);
			continue;
		}
		one_init(&o, tiers[i], "daemon", m, "exit", "0", END);
		assert_int_equal(one_run(&o), 0);
		assert_int_equal(o.result.exit_code, 0);
		assert_int_equal(o.result.tier, tiers[i]);
		if (tiers[i] == CONTAIN_PGROUP) {
			/* what the weakest tier does not promise */
			assert_true(procs_with_arg(m) > 0);
			kill_marked(m);
		}
		assert_none_left(m);
		one_release(&o);
		free(m);
	}
}

/* ignore-term, escapees, then the timeout; and a cancel (SIGTERM to the
 * supervisor). */
static void test_timeout_and_cancel(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct one o;
		char *m;

		if (!have(tiers[i]))
			continue;
		m = marker("timeout");
		one_init(&o, tiers[i], "ignore-term", "daemon", m, "emit", "ready", "sleep",
			 "60000", END);
		o.timeout_ms = 300;
		assert_int_equal(one_run(&o), 0);
		assert_true(o.result.timed_out);
		assert_none_left(m);
		one_release(&o);
		free(m);

		m = marker("cancel");
		one_init(&o, tiers[i], "ignore-term", "daemon", m, "emit", "ready", "sleep",
			 "60000", END);
		o.signal_on_ready = SIGTERM;
		assert_int_equal(one_run(&o), -ECANCELED);
		assert_true(o.result.cancelled);
		assert_none_left(m);
		one_release(&o);
		free(m);
	}
}

/* The children of pid whose argv[0] is not the fake agent: the keeper. */
static pid_t keeper_of(pid_t pid)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = -1;

	while (d && (de = readdir(d))) {
		char path[64], buf[1024], *rp;
		ssize_t n;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || strlen(de->d_name) > 20)
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%.20s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		rp = strrchr(buf, ')');
		if (!rp || strtol(rp + 4, NULL, 10) != pid)
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%.20s/cmdline", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0 && (buf[n] = '\0', strcmp(buf, fake_agent) != 0))
			found = (pid_t)strtol(de->d_name, NULL, 10);
	}
	if (d)
		closedir(d);
	return found;
}

/* A helper process supervises the agent; it is SIGKILLed (and its keeper
 * too, with also_keeper) once the agent said "ready". */
static void kill_supervisor(enum contain_tier tier, const char *m, bool also_keeper)
{
	struct sbuf got = SBUF_INIT(SIZE_MAX);
	uint64_t end = procs_mono_ms() + 20000;
	pid_t sup;
	int fds[2], st;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	sup = fork();
	assert_true(sup >= 0);
	if (sup == 0) {
		struct one o;

		close(fds[0]);
		alarm(60); /* never outlive a broken test */
		line_fd = fds[1];
		one_init(&o, tier, "ignore-term", "daemon", m, "emit", "ready", "sleep", "60000",
			 END);
		(void)one_run(&o);
		_exit(99);
	}
	close(fds[1]);
	while (!strstr(got.buf, "ready\n")) {
		char buf[256];
		ssize_t n = read(fds[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n > 0);
		assert_int_equal(sbuf_add(&got, buf, (size_t)n), 0);
		assert_true(procs_mono_ms() < end);
	}
	close(fds[0]);
	sbuf_release(&got);
	assert_true(procs_with_arg(m) > 0);
	if (also_keeper) {
		pid_t k = keeper_of(sup);

		assert_true(k > 0);
		assert_int_equal(kill(k, SIGKILL), 0);
	}
	assert_int_equal(kill(sup, SIGKILL), 0);
	assert_int_equal(waitpid(sup, &st, 0), sup);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static void test_supervisor_killed(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		char *m;

		if (!have(tiers[i]))
			continue;
		/* the parent-death signal, and the keeper */
		m = marker("sigkill");
		kill_supervisor(tiers[i], m, false);
		assert_none_left(m);
		free(m);

		/* without the keeper: the PID namespace dies with its init; the
		 * cgroup stays until a later bernstein sweeps it */
		m = marker("sigkill-keeper");
		kill_supervisor(tiers[i], m, true);
		if (tiers[i] == CONTAIN_CGROUP) {
			assert_true(procs_with_arg(m) > 0);
			assert_true(contain_sweep_stale(contain_host()) >= 1);
		}
		assert_none_left(m);
		free(m);
	}
}

/* In its PID namespace the agent sees its own processes only. */
static void test_proc_view(void **state)
{
	struct one o;
	char self[32];

	(void)state;
	if (!have(CONTAIN_PIDNS))
		return;
	one_init(&o, CONTAIN_AUTO, "spawn-grandchild", "5000", "dump-procs", "dump-ids", END);
	assert_int_equal(one_run(&o), 0);
	assert_non_null(strstr(o.out.buf, "ids pid=1 ppid=0 pgid=1 sid=1\n"));
	assert_non_null(strstr(o.out.buf, "procs 1:fake-agent 2:fake-agent\n"));
	(void)snprintf(self, sizeof(self), " %ld:", (long)getpid());
	assert_null(strstr(o.out.buf, self));
	one_release(&o);
}

/* The agent is its namespace's init: a SIGTERM it does not handle would be
 * ignored, so the supervisor sends SIGKILL at once instead of waiting for
 * the grace; one it handles is delivered; one it raises itself is ignored. */
static void test_init_signals(void **state)
{
	struct one o;
	uint64_t t0;

	(void)state;
	if (!have(CONTAIN_PIDNS))
		return;
	one_init(&o, CONTAIN_PIDNS, "emit", "ready", "sleep", "60000", END);
	o.timeout_ms = 200;
	o.grace_ms = 60000;
	t0 = procs_mono_ms();
	assert_int_equal(one_run(&o), 0);
	assert_true(procs_mono_ms() - t0 < 30000); /* not the grace */
	assert_true(o.result.timed_out);
	assert_int_equal(o.result.term_signal, SIGKILL);
	one_release(&o);

	one_init(&o, CONTAIN_PIDNS, "trap-term", "emit", "ready", "sleep", "60000", END);
	o.timeout_ms = 2000; /* after trap-term surely ran */
	o.grace_ms = 60000;
	t0 = procs_mono_ms();
	assert_int_equal(one_run(&o), 0);
	assert_true(procs_mono_ms() - t0 < 30000);
	assert_true(o.result.timed_out);
	assert_int_equal(o.result.term_signal, 0);
	assert_int_equal(o.result.exit_code, 0);
	assert_string_equal(o.err.buf, "term\n");
	one_release(&o);

	one_init(&o, CONTAIN_PIDNS, "kill-self", "TERM", "emit", "still here", END);
	assert_int_equal(one_run(&o), 0);
	assert_int_equal(o.result.exit_code, 0);
	assert_string_equal(o.out.buf, "still here\n");
	one_release(&o);
}

/* ---- limits ---- */

static bool can_limit(const struct contain_limits *l)
{
	char why[512];

	if (contain_limits_check(contain_host(), l, why, sizeof(why)) == 0)
		return true;
	print_message("# %s: skipped\n", why);
	return false;
}

static void test_limits(void **state)
{
	/* 128 MiB: an ASan build's agent needs well over 32 MiB to start */
	struct contain_limits mem = {.memory = 128 << 20}, pids = {.pids = 16},
			      cpu = {.cpu_milli = 200};
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		enum contain_tier t = tiers[i];
		struct one o;

		if (!have(t))
			continue;
		if (can_limit(&mem)) {
			one_init(&o, t, "emit", "ready", "alloc", "768", "emit", "survived", END);
			o.limits = mem;
			assert_int_equal(one_run(&o), 0);
			assert_int_equal(o.result.term_signal, SIGKILL);
			assert_true(o.result.oom_kills >= 1);
			assert_null(strstr(o.out.buf, "survived"));
			one_release(&o);
			/* below it: no OOM kill counted */
			one_init(&o, t, "alloc", "4", END);
			o.limits = mem;
			assert_int_equal(one_run(&o), 0);
			assert_int_equal(o.result.exit_code, 0);
			assert_int_equal(o.result.oom_kills, 0);
			one_release(&o);
		}
		if (can_limit(&pids)) {
			long k = -1;
			const char *f;

			one_init(&o, t, "fork-bomb", "200", END);
			o.limits = pids;
			assert_int_equal(one_run(&o), 0);
			f = strstr(o.out.buf, "fork-bomb ");
			assert_non_null(f);
			k = strtol(f + 10, NULL, 10);
			assert_true(k < 16);
			assert_non_null(strstr(o.out.buf, "EAGAIN"));
			one_release(&o);
		}
		if (can_limit(&cpu)) {
			const char *w, *c;
			double ratio;

			one_init(&o, t, "spin", "1500", END);
			o.limits = cpu;
			assert_int_equal(one_run(&o), 0);
			w = strstr(o.out.buf, "wall_ms=");
			c = strstr(o.out.buf, "cpu_ms=");
			assert_non_null(w);
			assert_non_null(c);
			ratio = strtod(c + 7, NULL) / strtod(w + 8, NULL);
			print_message("# cpu 0.2: %.2f of a CPU\n", ratio);
			assert_true(ratio < 0.4);
			one_release(&o);
		}
	}
}

/* A child's cgroups go with it; so does an emptied scope. */
static void test_cgroups_removed(void **state)
{
	char(*dirs)[PATH_MAX] = xcalloc(CONTAIN_HIER_MAX, PATH_MAX);
	struct contain_limits l = {.pids = 100};
	unsigned n, i;
	struct one o;

	(void)state;
	if (!can_limit(&l)) {
		free(dirs);
		return;
	}
	one_init(&o, CONTAIN_AUTO, "exit", "0", END);
	o.limits = l;
	assert_int_equal(one_run(&o), 0);
	n = contain_scope_dirs(contain_host(), dirs);
	for (i = 0; i < n; i++)
		assert_int_not_equal(access(dirs[i], F_OK), 0);
	one_release(&o);
	free(dirs);
}

static int setup(void **state)
{
	(void)state;
	(void)snprintf(scratch, sizeof(scratch), "/tmp/bernstein-contain.XXXXXX");
	if (!mkdtemp(scratch))
		return -1;
	print_message("# host: tier %s\n", contain_tier_to_string(contain_host()->tier));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_hybrid),	  cmocka_unit_test(test_parse_v2_only),
		cmocka_unit_test(test_parse_odd),	  cmocka_unit_test(test_names),
		cmocka_unit_test(test_agent_exits),	  cmocka_unit_test(test_timeout_and_cancel),
		cmocka_unit_test(test_supervisor_killed), cmocka_unit_test(test_proc_view),
		cmocka_unit_test(test_init_signals),	  cmocka_unit_test(test_limits),
		cmocka_unit_test(test_cgroups_removed),
	};

	fake_agent = getenv("FAKE_AGENT");
	if (!fake_agent) {
		fprintf(stderr, "FAKE_AGENT must be set (meson test does it)\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
