/* Start-up benchmark: the median wall time of `bernstein adapters list --json`
 * against /bin/true, measured in the same run with the commands interleaved
 * (and their order rotated) so machine drift cancels out. Prints the medians
 * and the ratio; it does not assert a time. Exit 0, or 1 if a command cannot
 * run.
 *
 * usage: startup [-n RUNS] [-g PROFILE] BERNSTEIN
 *
 * The plain run loads the embedded catalogue alone, whose gates are skipped
 * (it is immutable and checked by the tests; src/adapter/catalog.c,
 * catalog_validate()). With -g, a third command is interleaved: the same
 * `adapters list --json` with XDG_CONFIG_HOME pointing at a scratch directory
 * whose bernstein/catalog/profiles/ holds a copy of PROFILE (a shipped profile:
 * a harmless override). A user directory contributing a file is what forces
 * all the gates over the WHOLE catalogue (every profile against its matrix
 * row, multimodal.yaml and its contract, every contract parsed), the path a
 * real user with one override takes at every start-up. The plain run gets an
 * empty XDG_CONFIG_HOME, and both run from the scratch directory, so that no
 * user or repository catalogue of the machine takes part. `bernstein
 * --version` is interleaved too: the floor of a command that reads no
 * catalogue and loads no library on first use (src/util/lazy.h).
 *
 * If `adapters list` does not exist yet (exit 2, a usage error), it falls back
 * to `bernstein --version` and says so. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_RUNS 200
#define WARMUP_RUNS  10
/* issue #24: the embedded catalogue compiled in; the gated load parses */
#define TARGET_RATIO 2.0
#define TARGET_GATED 5.0
#define MAX_PROFILE  (1024 * 1024)

extern char **environ;

struct sample {
	double ms;    /* wall time of one spawn + wait */
	int status;   /* exit code, or 128 + signal */
	int spawn_rc; /* posix_spawn result (errno value), 0 = ok */
};

/* One timed command. */
struct bench_cmd {
	const char *what;
	char **argv;
	char **envp;
	double *t; /* RUNS samples */
};

static double now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Runs argv with stdin and stdout on /dev/null (stderr too unless keep_err),
 * timing posix_spawn through waitpid. */
static struct sample run_once(char *const argv[], char *const envp[], int keep_err)
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
	r = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
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

/* "a" "/" "b" into a fresh string, or NULL. */
static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *r = malloc(la + lb + 2);

	if (!r)
		return NULL;
	memcpy(r, a, la);
	r[la] = '/';
	memcpy(r + la + 1, b, lb + 1);
	return r;
}

/* environ without XDG_CONFIG_HOME, plus XDG_CONFIG_HOME=dir. */
static char **env_with_xdg(const char *dir)
{
	static const char key[] = "XDG_CONFIG_HOME=";
	size_t n = 0, i, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], key, sizeof(key) - 1) != 0)
			env[k++] = environ[i];
	env[k] = malloc(sizeof(key) + strlen(dir));
	if (!env[k]) {
		free((void *)env);
		return NULL;
	}
	memcpy(env[k], key, sizeof(key) - 1);
	memcpy(env[k] + sizeof(key) - 1, dir, strlen(dir) + 1);
	return env;
}

static void env_free(char **env)
{
	size_t i;

	if (!env)
		return;
	for (i = 0; env[i]; i++)
		if (strncmp(env[i], "XDG_CONFIG_HOME=", 16) == 0)
			free(env[i]);
	free((void *)env);
}

/* Copies the file src to dst (at most MAX_PROFILE bytes). */
static int copy_file(const char *src, const char *dst)
{
	char *buf = malloc(MAX_PROFILE);
	size_t n;
	FILE *in = NULL, *out = NULL;
	int r = -1;

	if (!buf)
		return -1;
	in = fopen(src, "rbe");
	if (!in)
		goto out;
	n = fread(buf, 1, MAX_PROFILE, in);
	if (ferror(in) || !feof(in))
		goto out;
	out = fopen(dst, "wbe");
	if (!out)
		goto out;
	if (fwrite(buf, 1, n, out) != n)
		goto out;
	r = 0;
out:
	if (in)
		(void)fclose(in);
	if (out && fclose(out) != 0)
		r = -1;
	free(buf);
	return r;
}

/* The scratch tree: ROOT/plain (empty) and ROOT/gated/bernstein/catalog/
 * profiles/BASENAME (a copy of profile, when given). */
struct scratch {
	char root[PATH_MAX];
	char *plain, *gated, *dirs[4], *file;
};

static void scratch_remove(struct scratch *s)
{
	int i;

	if (s->file) {
		(void)unlink(s->file);
		free(s->file);
	}
	for (i = 3; i >= 0; i--) {
		if (s->dirs[i]) {
			(void)rmdir(s->dirs[i]);
			free(s->dirs[i]);
		}
	}
	if (s->plain) {
		(void)rmdir(s->plain);
		free(s->plain);
	}
	if (s->root[0])
		(void)rmdir(s->root);
	memset(s, 0, sizeof(*s));
}

static int scratch_make(struct scratch *s, const char *profile)
{
	static const char *const parts[] = {"gated", "bernstein", "catalog", "profiles"};
	const char *tmp = getenv("TMPDIR"), *base;
	int i, n;

	memset(s, 0, sizeof(*s));
	if (!tmp || !tmp[0])
		tmp = "/tmp";
	n = snprintf(s->root, sizeof(s->root), "%s/bernstein-startup.XXXXXX", tmp);
	if (n < 0 || (size_t)n >= sizeof(s->root) || !mkdtemp(s->root)) {
		(void)fprintf(stderr, "startup: cannot create a directory in '%s': %s\n", tmp,
			      strerror(errno));
		s->root[0] = '\0';
		return -1;
	}
	s->plain = join(s->root, "plain");
	if (!s->plain || mkdir(s->plain, 0700) < 0)
		goto fail;
	if (!profile)
		return 0;
	for (i = 0; i < 4; i++) {
		s->dirs[i] = join(i ? s->dirs[i - 1] : s->root, parts[i]);
		if (!s->dirs[i] || mkdir(s->dirs[i], 0700) < 0)
			goto fail;
	}
	s->gated = s->dirs[0];
	base = strrchr(profile, '/');
	base = base ? base + 1 : profile;
	s->file = join(s->dirs[3], base);
	if (!s->file || copy_file(profile, s->file) < 0) {
		(void)fprintf(stderr, "startup: cannot copy '%s' into the override directory\n",
			      profile);
		return -1;
	}
	return 0;
fail:
	(void)fprintf(stderr, "startup: cannot set up the scratch directory '%s': %s\n", s->root,
		      strerror(errno));
	return -1;
}

/* The override directory must really be read (or the "gated" numbers would
 * time the plain path): a broken profile beside the copy makes the command
 * fail with exit 3, an invalid catalogue. */
static int check_gated(struct bench_cmd *b, const struct scratch *sc)
{
	static const char broken[] = "name: zz-bench-check\nno_such_key: 1\n";
	char *path = join(sc->dirs[3], "zz-bench-check.yaml");
	struct sample s;
	FILE *f;
	int r = -1;

	if (!path)
		return -1;
	f = fopen(path, "we");
	if (!f || fwrite(broken, 1, sizeof(broken) - 1, f) != sizeof(broken) - 1) {
		if (f)
			(void)fclose(f);
		goto out;
	}
	if (fclose(f) != 0)
		goto out;
	s = run_once(b->argv, b->envp, 0);
	if (s.spawn_rc == 0 && s.status == 3)
		r = 0;
	else
		(void)fprintf(
			stderr,
			"startup: a broken profile in the override directory did not make '%s' exit 3 (got %d): XDG_CONFIG_HOME is not read as assumed\n",
			b->what, s.spawn_rc ? -1 : s.status);
out:
	(void)unlink(path);
	free(path);
	return r;
}

static void usage(void)
{
	(void)fprintf(stderr, "usage: startup [-n RUNS (1..100000)] [-g PROFILE] BERNSTEIN\n");
}

int main(int argc, char **argv)
{
	/* posix_spawn takes char *const[]: writable copies, no const casts. */
	char a_adapters[] = "adapters", a_list[] = "list", a_json[] = "--json";
	char a_version[] = "--version", a_true[] = "/bin/true";
	char *list_argv[] = {NULL, a_adapters, a_list, a_json, NULL};
	char *version_argv[] = {NULL, a_version, NULL};
	char *true_argv[] = {a_true, NULL};
	char bern[PATH_MAX];
	const char *profile = NULL;
	struct bench_cmd cmds[4];
	struct scratch sc;
	size_t ncmd = 3, k;
	double med[4];
	long runs = DEFAULT_RUNS, i;
	struct sample s;
	int c, rc = 1;

	memset(cmds, 0, sizeof(cmds));
	memset(&sc, 0, sizeof(sc));
	while ((c = getopt(argc, argv, "n:g:")) != -1) {
		if (c == 'g') {
			profile = optarg;
			continue;
		}
		if (c != 'n' || parse_runs(optarg, &runs) < 0) {
			usage();
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage();
		return 2;
	}
	/* Absolute: the commands run from the scratch directory. */
	if (!realpath(argv[optind], bern)) {
		(void)fprintf(stderr, "startup: '%s': %s\n", argv[optind], strerror(errno));
		return 1;
	}
	list_argv[0] = bern;
	version_argv[0] = bern;
	if (scratch_make(&sc, profile) < 0)
		goto out;
	if (chdir(sc.root) < 0) {
		(void)fprintf(stderr, "startup: cannot change to '%s': %s\n", sc.root,
			      strerror(errno));
		goto out;
	}

	cmds[0].what = "bernstein adapters list --json";
	cmds[0].argv = list_argv;
	cmds[0].envp = env_with_xdg(sc.plain);
	cmds[1].what = "/bin/true";
	cmds[1].argv = true_argv;
	cmds[1].envp = environ;
	/* the floor: a command that reads no catalogue and loads no library */
	cmds[2].what = "bernstein --version";
	cmds[2].argv = version_argv;
	cmds[2].envp = env_with_xdg(sc.plain);
	if (profile) {
		cmds[3].what = "bernstein adapters list --json (all gates)";
		cmds[3].argv = list_argv;
		cmds[3].envp = env_with_xdg(sc.gated);
		ncmd = 4;
	}
	for (k = 0; k < ncmd; k++) {
		cmds[k].t = calloc((size_t)runs, sizeof(double));
		if (!cmds[k].envp || !cmds[k].t) {
			(void)fprintf(stderr, "startup: out of memory\n");
			goto out;
		}
	}

	/* Probe: does `adapters list` exist yet? Exit 2 = usage error. */
	s = run_once(list_argv, cmds[0].envp, 0);
	if (s.spawn_rc == 0 && s.status == 2) {
		printf("startup: 'adapters list --json' exits 2 (not implemented yet); timing 'bernstein --version' instead\n");
		for (k = 0; k < ncmd; k++)
			if (cmds[k].argv == list_argv)
				cmds[k].argv = version_argv;
		cmds[0].what = "bernstein --version";
		if (ncmd == 4)
			cmds[3].what = "bernstein --version (override directory)";
	}
	for (k = 0; k < ncmd; k++) {
		if (check(cmds[k].what, run_once(cmds[k].argv, cmds[k].envp, 0)) < 0) {
			(void)run_once(cmds[k].argv, cmds[k].envp, 1); /* again, showing stderr */
			goto out;
		}
	}
	if (ncmd == 4 && cmds[3].argv == list_argv && check_gated(&cmds[3], &sc) < 0)
		goto out;

	for (i = 0; i < WARMUP_RUNS; i++)
		for (k = 0; k < ncmd; k++)
			(void)run_once(cmds[k].argv, cmds[k].envp, 0);
	for (i = 0; i < runs; i++) {
		/* Rotate the order so that no command always runs first. */
		for (k = 0; k < ncmd; k++) {
			struct bench_cmd *b = &cmds[((size_t)i + k) % ncmd];

			s = run_once(b->argv, b->envp, 0);
			if (check(b->what, s) < 0)
				goto out;
			b->t[i] = s.ms;
		}
	}
	for (k = 0; k < ncmd; k++)
		med[k] = median(cmds[k].t, (size_t)runs);
	printf("startup: bernstein %.2f ms, /bin/true %.2f ms, ratio %.1fx (target <= %.0fx)\n",
	       med[0], med[1], med[1] > 0 ? med[0] / med[1] : 0.0, TARGET_RATIO);
	printf("startup: median of %ld interleaved runs of '%s' vs '/bin/true'\n", runs,
	       cmds[0].what);
	printf("version: bernstein %.2f ms, /bin/true %.2f ms, ratio %.1fx ('bernstein --version', in the same runs: no catalogue, no lazily loaded library)\n",
	       med[2], med[1], med[1] > 0 ? med[2] / med[1] : 0.0);
	if (ncmd == 4) {
		printf("catalog-load: bernstein %.2f ms, /bin/true %.2f ms, ratio %.1fx (target <= %.0fx)\n",
		       med[3], med[1], med[1] > 0 ? med[3] / med[1] : 0.0, TARGET_GATED);
		printf("catalog-load: the whole catalogue with every gate forced (a user override directory holding a copy of '%s'), in the same runs\n",
		       profile);
	}
	rc = 0;
out:
	for (k = 0; k < 4; k++) {
		free(cmds[k].t);
		if (cmds[k].envp != environ)
			env_free(cmds[k].envp);
	}
	scratch_remove(&sc);
	return rc;
}
