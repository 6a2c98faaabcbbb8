/* Start-up benchmark: the median wall time of `bernstein adapters list --json`
 * against /bin/true, measured in the same run with the two interleaved (and
 * their order alternated) so machine drift cancels out. Prints the medians and
 * the ratio; it does not assert a time. Exit 0, or 1 if a command cannot run.
 *
 * usage: startup [-n RUNS] BERNSTEIN
 *
 * If `adapters list` does not exist yet (exit 2, a usage error), it falls back
 * to `bernstein --version` and says so. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_RUNS 200
#define WARMUP_RUNS  10
#define TARGET_RATIO 5.0

extern char **environ;

struct sample {
	double ms;    /* wall time of one spawn + wait */
	int status;   /* exit code, or 128 + signal */
	int spawn_rc; /* posix_spawn result (errno value), 0 = ok */
};

static double now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Runs argv with stdin and stdout on /dev/null (stderr too unless keep_err),
 * timing posix_spawn through waitpid. */
static struct sample run_once(char *const argv[], int keep_err)
{
	posix_spawn_file_actions_t fa;
	struct sample s = {0, -1, 0};
	double t0;
	pid_t pid;
	int st, r;

	(void)posix_spawn_file_actions_init(&fa);
	(void)posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	(void)posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (!keep_err)
		(void)posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);

	t0 = now_ms();
	r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	if (r != 0) {
		s.spawn_rc = r;
		goto out;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			s.spawn_rc = errno;
			goto out;
		}
	s.ms = now_ms() - t0;
	if (WIFEXITED(st))
		s.status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		s.status = 128 + WTERMSIG(st);
out:
	(void)posix_spawn_file_actions_destroy(&fa);
	return s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int check(const char *what, struct sample s)
{
	if (s.spawn_rc) {
		(void)fprintf(stderr, "startup: cannot run '%s': %s\n", what, strerror(s.spawn_rc));
		return -1;
	}
	if (s.status != 0) {
		(void)fprintf(stderr, "startup: '%s' exited with %d\n", what, s.status);
		return -1;
	}
	return 0;
}

static int parse_runs(const char *s, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 100000)
		return -EINVAL;
	*ret = v;
	return 0;
}

int main(int argc, char **argv)
{
	/* posix_spawn takes char *const[]: writable copies, no const casts. */
	char a_adapters[] = "adapters", a_list[] = "list", a_json[] = "--json";
	char a_version[] = "--version", a_true[] = "/bin/true";
	char *list_argv[] = {NULL, a_adapters, a_list, a_json, NULL};
	char *version_argv[] = {NULL, a_version, NULL};
	char *true_argv[] = {a_true, NULL};
	char **bern_argv = list_argv;
	const char *what = "bernstein adapters list --json";
	double *tb = NULL, *tt = NULL, mb, mt;
	long runs = DEFAULT_RUNS, i;
	struct sample s;
	int c, rc = 1;

	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c != 'n' || parse_runs(optarg, &runs) < 0) {
			(void)fprintf(stderr, "usage: startup [-n RUNS (1..100000)] BERNSTEIN\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		(void)fprintf(stderr, "usage: startup [-n RUNS (1..100000)] BERNSTEIN\n");
		return 2;
	}
	list_argv[0] = argv[optind];
	version_argv[0] = argv[optind];

	/* Probe: does `adapters list` exist yet? Exit 2 = usage error. */
	s = run_once(list_argv, 0);
	if (s.spawn_rc == 0 && s.status == 2) {
		printf("startup: 'adapters list --json' exits 2 (not implemented yet); "
		       "timing 'bernstein --version' instead\n");
		bern_argv = version_argv;
		what = "bernstein --version";
		s = run_once(bern_argv, 0);
	}
	if (check(what, s) < 0) {
		(void)run_once(bern_argv, 1); /* again, showing its stderr */
		return 1;
	}
	if (check("/bin/true", run_once(true_argv, 1)) < 0)
		return 1;

	tb = calloc((size_t)runs, sizeof(*tb));
	tt = calloc((size_t)runs, sizeof(*tt));
	if (!tb || !tt) {
		(void)fprintf(stderr, "startup: out of memory\n");
		goto out;
	}
	for (i = 0; i < WARMUP_RUNS; i++) {
		(void)run_once(bern_argv, 0);
		(void)run_once(true_argv, 0);
	}
	for (i = 0; i < runs; i++) {
		struct sample a, b;

		/* Alternate the order so neither always runs second. */
		if (i % 2) {
			b = run_once(true_argv, 0);
			a = run_once(bern_argv, 0);
		} else {
			a = run_once(bern_argv, 0);
			b = run_once(true_argv, 0);
		}
		if (check(what, a) < 0 || check("/bin/true", b) < 0)
			goto out;
		tb[i] = a.ms;
		tt[i] = b.ms;
	}
	mb = median(tb, (size_t)runs);
	mt = median(tt, (size_t)runs);
	printf("startup: bernstein %.2f ms, /bin/true %.2f ms, ratio %.1fx (target <= %.0fx)\n", mb,
	       mt, mt > 0 ? mb / mt : 0.0, TARGET_RATIO);
	printf("startup: median of %ld interleaved runs of '%s' vs '/bin/true'\n", runs, what);
	rc = 0;
out:
	free(tb);
	free(tt);
	return rc;
}
