/* Process benchmarks for src/proc/: each prints its measurement, a baseline
 * measured in the same run and their ratio against a target. It asserts
 * nothing about wall-clock time (exit 1 only if something cannot run).
 *
 * usage: proc-bench spawn [-n N] [-p PARALLEL]
 *          N trivial agents (/bin/true) through supervise() (the shim's steps
 *          in each child: proc/spawn.h), PARALLEL at a time, vs a bare
 *          posix_spawn + waitpid loop. Target: <= 2x. Then the same batch
 *          contained in the process group only (BERNSTEIN_CONTAIN=pgroup's
 *          tier): the cost of the host's containment tier (a PID namespace
 *          and a /proc mount per child), as a ratio.
 *        proc-bench rss [-n CHILDREN]
 *          the supervisor's peak RSS (VmHWM) with CHILDREN live agents.
 *          Target: < 32 MB.
 *        proc-bench drain [-b BYTES] [-l LOGFILE]
 *          one agent writing BYTES of 128-byte JSON lines, framed and logged
 *          (to LOGFILE, default /dev/null) by the supervisor, vs
 *          `cat > /dev/null` of the same stream. Target: >= 0.5x cat's speed.
 *        -c CHUNK (any mode): the supervisor's read size (default 64 KiB).
 *
 * The agents are this binary re-executed (`proc-bench flood BYTES`,
 * `proc-bench sleep MS`), so nothing else needs building. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/supervise.h"
#include "util/strvec.h"

static const char *const bench_env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};

static char self_exe[4096];
static size_t read_chunk; /* -c: supervise_opts.read_chunk, 0 = default */

static double now_s(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long vm_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, klen) == 0)
			kb = strtol(line + klen, NULL, 10);
	if (f)
		(void)fclose(f);
	return kb;
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ---- the agent modes ---- */

static int agent_flood(long long total)
{
	enum { LINE = 128, LINES = 512 };
	static char buf[LINE * LINES];
	char line[LINE];
	int i;

	memset(line, 'x', sizeof(line));
	memcpy(line, "{\"type\":\"flood\",\"pad\":\"", 23);
	memcpy(line + LINE - 3, "\"}\n", 3);
	for (i = 0; i < LINES; i++)
		memcpy(buf + (size_t)i * LINE, line, LINE);
	while (total > 0) {
		size_t n = total < (long long)sizeof(buf) ? (size_t)total : sizeof(buf);
		ssize_t w = write(1, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return 3;
		total -= w;
	}
	return 0;
}

static int agent_sleep(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return 0;
}

/* ---- a task source: N copies of one argv ---- */

struct batch {
	const char *const *argv;
	const char *log_path;
	unsigned total, started, finished, failed;
	unsigned live, max_live;
	uint64_t lines;
	enum contain_tier tier; /* CONTAIN_AUTO: the host's */
};

static int batch_next(void *ctx, struct proc_spec *spec, void **ret_task)
{
	struct batch *b = ctx;

	if (b->started == b->total)
		return 0;
	b->started++;
	strvec_pushv(&spec->argv, b->argv);
	strvec_pushv(&spec->env, bench_env);
	spec->log_path = b->log_path;
	spec->timeout_ms = 600000;
	spec->contain = b->tier;
	*ret_task = NULL;
	return 1;
}

static void batch_start(void *ctx, void *task, const struct proc *p)
{
	struct batch *b = ctx;

	(void)task;
	(void)p;
	if (++b->live > b->max_live)
		b->max_live = b->live;
}

static void batch_line(void *ctx, void *task, int stream, const char *line, size_t len)
{
	struct batch *b = ctx;

	(void)task;
	(void)stream;
	(void)line;
	(void)len;
	b->lines++;
}

static void batch_exit(void *ctx, void *task, const struct proc *p)
{
	struct batch *b = ctx;

	(void)task;
	if (p->failed_stage == SHIM_STAGE_NONE)
		b->live--;
	b->finished++;
	if (p->exit_code != 0)
		b->failed++;
}

static const struct supervisor_ops batch_ops = {
	.next_task = batch_next,
	.on_start = batch_start,
	.on_line = batch_line,
	.on_exit = batch_exit,
};

static int run_batch(struct batch *b, unsigned parallel)
{
	struct supervisor_opts o = {.max_parallel = parallel, .read_chunk = read_chunk};
	struct diag d = {0};
	int r;

	r = supervise_run(&batch_ops, b, &o, &d);
	if (r < 0) {
		fprintf(stderr, "proc-bench: supervise: %s\n", d.msg[0] ? d.msg : strerror(-r));
		return -1;
	}
	if (b->failed) {
		fprintf(stderr, "proc-bench: %u of %u agents failed\n", b->failed, b->total);
		return -1;
	}
	return 0;
}

/* ---- benchmarks ---- */

static int bench_spawn(unsigned n, unsigned parallel)
{
	const char *const argv[] = {"/bin/true", NULL};
	struct batch b = {.argv = argv, .total = n};
	struct batch bp = {.argv = argv, .total = n, .tier = CONTAIN_PGROUP};
	double t0, bare, sup, pg;
	unsigned i;

	t0 = now_s();
	for (i = 0; i < n; i++) {
		pid_t pid;
		int st;

		if (posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)(uintptr_t)argv,
				(char *const *)(uintptr_t)bench_env) != 0 ||
		    waitpid(pid, &st, 0) != pid) {
			fprintf(stderr, "proc-bench: cannot run %s\n", argv[0]);
			return 1;
		}
	}
	bare = now_s() - t0;

	t0 = now_s();
	if (run_batch(&b, parallel) < 0)
		return 1;
	sup = now_s() - t0;

	t0 = now_s();
	if (run_batch(&bp, parallel) < 0)
		return 1;
	pg = now_s() - t0;

	printf("spawn: %u x /bin/true\n", n);
	printf("  bare posix_spawn+waitpid loop     %8.3f s  %7.0f/s\n", bare, n / bare);
	printf("  supervise, %3u at a time          %8.3f s  %7.0f/s\n", parallel, sup, n / sup);
	printf("  ratio supervise / bare: %.2fx (target <= 2x)\n", sup / bare);
	printf("  supervise, process group only     %8.3f s  %7.0f/s\n", pg, n / pg);
	printf("  ratio containment %s / process group: %.2fx\n",
	       contain_tier_to_string(contain_effective(contain_host(), CONTAIN_AUTO)), sup / pg);
	return 0;
}

static int bench_rss(unsigned n)
{
	const char *const argv[] = {self_exe, "sleep", "3000", NULL};
	struct batch b = {.argv = argv, .total = n};
	long before = vm_kb("VmHWM:"), after;

	raise_nofile();
	if (run_batch(&b, n) < 0)
		return 1;
	after = vm_kb("VmHWM:");
	printf("rss: %u live agents (max live at once: %u)\n", n, b.max_live);
	printf("  supervisor VmHWM before %ld kB, after %ld kB (+%ld kB, %.1f kB per child)\n",
	       before, after, after - before, (double)(after - before) / n);
	printf("  peak %.1f MB (target < 32 MB)\n", (double)after / 1024.0);
	return 0;
}

static int spawn_fd(pid_t *pid, const char *const *argv, int in, int out)
{
	posix_spawn_file_actions_t fa;
	int r;

	(void)posix_spawn_file_actions_init(&fa);
	if (in >= 0)
		(void)posix_spawn_file_actions_adddup2(&fa, in, 0);
	if (out >= 0)
		(void)posix_spawn_file_actions_adddup2(&fa, out, 1);
	r = posix_spawn(pid, argv[0], &fa, NULL, (char *const *)(uintptr_t)argv,
			(char *const *)(uintptr_t)bench_env);
	(void)posix_spawn_file_actions_destroy(&fa);
	return r;
}

static int bench_drain(long long bytes, const char *logfile)
{
	char nbuf[32];
	const char *const flood[] = {self_exe, "flood", nbuf, NULL};
	const char *const cat[] = {"/bin/cat", NULL};
	struct batch b = {.argv = flood, .total = 1, .log_path = logfile};
	double t0, base, sup;
	pid_t p1, p2;
	int fds[2], devnull, st;

	(void)snprintf(nbuf, sizeof(nbuf), "%lld", bytes);
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0 || pipe2(fds, O_CLOEXEC) < 0)
		return 1;
	t0 = now_s();
	if (spawn_fd(&p1, flood, -1, fds[1]) != 0 || spawn_fd(&p2, cat, fds[0], devnull) != 0) {
		fprintf(stderr, "proc-bench: cannot start the baseline\n");
		return 1;
	}
	(void)close(fds[0]);
	(void)close(fds[1]);
	(void)waitpid(p1, &st, 0);
	(void)waitpid(p2, &st, 0);
	base = now_s() - t0;
	(void)close(devnull);

	t0 = now_s();
	if (run_batch(&b, 1) < 0)
		return 1;
	sup = now_s() - t0;
	if (b.lines != (uint64_t)(bytes / 128)) {
		fprintf(stderr, "proc-bench: got %llu lines, expected %lld\n",
			(unsigned long long)b.lines, bytes / 128);
		return 1;
	}

	printf("drain: %lld MB of 128-byte JSON lines from one agent\n", bytes >> 20);
	printf("  flood | cat > /dev/null             %8.3f s  %7.0f MB/s\n", base,
	       (double)bytes / 1048576.0 / base);
	printf("  supervise (frame, on_line, log %s) %8.3f s  %7.0f MB/s  %llu lines\n", logfile,
	       sup, (double)bytes / 1048576.0 / sup, (unsigned long long)b.lines);
	printf("  throughput ratio supervise / cat: %.2fx (target >= 0.5x); VmHWM %ld kB\n",
	       base / sup, vm_kb("VmHWM:"));
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: proc-bench spawn [-n N] [-p PARALLEL]\n"
			"       proc-bench rss [-n CHILDREN]\n"
			"       proc-bench drain [-b BYTES] [-l LOGFILE]\n");
	return 2;
}

int main(int argc, char **argv)
{
	long long n = -1, par = 64, bytes = 1LL << 30;
	const char *mode, *logfile = "/dev/null";
	ssize_t len;
	int c;

	if (argc >= 3 && strcmp(argv[1], "flood") == 0)
		return agent_flood(strtoll(argv[2], NULL, 10));
	if (argc >= 3 && strcmp(argv[1], "sleep") == 0)
		return agent_sleep(strtol(argv[2], NULL, 10));
	if (argc < 2)
		return usage();
	mode = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "n:p:b:l:c:")) != -1) {
		switch (c) {
		case 'n':
			n = strtoll(optarg, NULL, 10);
			break;
		case 'p':
			par = strtoll(optarg, NULL, 10);
			break;
		case 'b':
			bytes = strtoll(optarg, NULL, 10);
			break;
		case 'l':
			logfile = optarg;
			break;
		case 'c':
			read_chunk = (size_t)strtoll(optarg, NULL, 10);
			break;
		default:
			return usage();
		}
	}
	if (optind != argc || par < 1 || bytes < 128)
		return usage();
	len = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (len <= 0)
		return 1;
	self_exe[len] = '\0';

	(void)setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "spawn") == 0)
		return bench_spawn(n > 0 ? (unsigned)n : 1000, (unsigned)par);
	if (strcmp(mode, "rss") == 0)
		return bench_rss(n > 0 ? (unsigned)n : 256);
	if (strcmp(mode, "drain") == 0)
		return bench_drain(bytes, logfile);
	return usage();
}
