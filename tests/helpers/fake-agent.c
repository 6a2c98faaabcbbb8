/* fake-agent: a scriptable stand-in for a CLI coding agent (libuv's
 * spawn_helper, git's test-tool). Directives come from argv, in order, or
 * from a file with -f FILE (one directive per line: the name, a space, and
 * the rest of the line as its argument; blank lines and # comments skipped).
 *
 *   emit JSON            JSON + newline on stdout
 *   emit-raw BYTES       BYTES with C escapes (\n \t \r \0 \\ \xHH) on stdout
 *   partial-line TEXT    TEXT without a newline on stdout
 *   flood N              N bytes of 128-byte JSON lines on stdout, fast (the
 *                        last line is shorter; N < 32 writes N 'x' bytes)
 *   stderr TEXT          TEXT + newline on stderr
 *   sleep MS             sleep
 *   ignore-term          ignore SIGTERM
 *   spawn-grandchild MS  fork a child that sleeps MS with stdout open; prints
 *                        {"type":"grandchild","pid":N}
 *   daemon FILE          leave processes behind that escape the process group:
 *                        fork; the child setsid()s, forks and exits; the
 *                        grandchild ignores TERM and HUP, puts stdio on
 *                        /dev/null, forks one more child that setsid()s, and
 *                        both append a line to FILE every 10 ms until
 *                        killed (their argv still names FILE: a marker);
 *                        the caller goes on once FILE exists
 *   trap-term            on SIGTERM print "term" (stderr) and exit 0
 *   alloc MB             allocate MB MiB and touch every page; prints "alloc MB ok"
 *   fork-bomb N          fork up to N children that wait forever (the parent
 *                        goes on); prints "fork-bomb K of N" (K forked before
 *                        fork failed, with its errno name after it)
 *   spin MS              burn CPU for MS ms of wall time; prints "spin wall_ms=W
 *                        cpu_ms=C" (C: the CPU time it got meanwhile)
 *   dump-procs           "procs PID:COMM ..." for every process in /proc
 *   dump-env             each environment entry, one a line
 *   dump-argv            each argv entry, one a line
 *   dump-fds             "fds 0 1 2" (the open fds, from /proc/self/fd)
 *   dump-ids             "ids pid=N ppid=N pgid=N sid=N"
 *   dump-rlimit NAME     "rlimit NAME SOFT HARD" (nofile, as, cpu, core, nproc,
 *                        fsize; "unlimited" for RLIM_INFINITY)
 *   dump-signals         "signals blocked=HEX ignored=HEX" (from /proc/self/status)
 *   dump-pdeathsig       "pdeathsig N" (the parent-death signal, 0 for none)
 *   write-file PATH TEXT write TEXT to PATH; prints "write-file PATH ok" or
 *                        "write-file PATH error ERRNO-NAME" on stdout
 *   exit N               exit with N now
 *   kill-self SIG        raise SIG (a number or a name like TERM)
 *   read-stdin           copy stdin to stdout until EOF
 *   hook-post SOCK TEXT  connect to the Unix stream socket SOCK ($NAME: the path in
 *                        the environment variable NAME), write TEXT with
 *                        C escapes (\n ...; no newline added) and close;
 *                        prints nothing (failures go to stderr, exit 3)
 *
 * Output is flushed after every directive. At the end it exits 0. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static long parse_long(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "fake-agent: %s: bad number '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode C escapes into out (at least strlen(s) bytes); returns the length. */
static size_t unescape(const char *s, char *out)
{
	size_t n = 0;

	while (*s) {
		if (*s != '\\' || !s[1]) {
			out[n++] = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case 'n':
			out[n++] = '\n';
			break;
		case 't':
			out[n++] = '\t';
			break;
		case 'r':
			out[n++] = '\r';
			break;
		case '0':
			out[n++] = '\0';
			break;
		case 'x':
			if (hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
				out[n++] = (char)(hexval(s[1]) * 16 + hexval(s[2]));
				s += 2;
				break;
			}
			out[n++] = 'x';
			break;
		default:
			out[n++] = *s;
			break;
		}
		s++;
	}
	return n;
}

static void flood(long long total)
{
	enum { LINE = 128, LINES = 512 };
	static char buf[LINE * LINES];
	char line[LINE + 1];
	long long left = total;
	int i;

	/* {"type":"flood","pad":"xxx...x"}\n, exactly LINE bytes. */
	memset(line, 'x', sizeof(line));
	memcpy(line, "{\"type\":\"flood\",\"pad\":\"", 23);
	memcpy(line + LINE - 3, "\"}\n", 3);
	for (i = 0; i < LINES; i++)
		memcpy(buf + i * LINE, line, LINE);
	while (left >= (long long)sizeof(buf)) {
		if (write_all(1, buf, sizeof(buf)) < 0)
			exit(3);
		left -= (long long)sizeof(buf);
	}
	while (left >= LINE) {
		if (write_all(1, line, LINE) < 0)
			exit(3);
		left -= LINE;
	}
	if (left >= 32) { /* a shorter last line: keep the JSON valid */
		char last[LINE];

		memcpy(last, line, (size_t)left);
		memcpy(last + left - 3, "\"}\n", 3);
		if (write_all(1, last, (size_t)left) < 0)
			exit(3);
	} else if (left > 0) {
		char pad[32];

		memset(pad, 'x', sizeof(pad));
		if (write_all(1, pad, (size_t)left) < 0)
			exit(3);
	}
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static void dump_fds(void)
{
	long fds[1024];
	size_t n = 0, i;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d) {
		printf("fds error %s\n", strerror(errno));
		return;
	}
	while ((de = readdir(d)) && n < sizeof(fds) / sizeof(fds[0])) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);

		if (*end || end == de->d_name || fd == dirfd(d))
			continue;
		fds[n++] = fd;
	}
	closedir(d);
	qsort(fds, n, sizeof(fds[0]), cmp_long);
	printf("fds");
	for (i = 0; i < n; i++)
		printf(" %ld", fds[i]);
	printf("\n");
}

static const struct {
	const char *name;
	int resource;
} rlimits[] = {
	{"as", RLIMIT_AS},     {"nofile", RLIMIT_NOFILE}, {"cpu", RLIMIT_CPU},
	{"core", RLIMIT_CORE}, {"nproc", RLIMIT_NPROC},	  {"fsize", RLIMIT_FSIZE},
};

static void print_lim(rlim_t v)
{
	if (v == RLIM_INFINITY)
		printf(" unlimited");
	else
		printf(" %llu", (unsigned long long)v);
}

static void dump_rlimit(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(rlimits) / sizeof(rlimits[0]); i++) {
		struct rlimit rl;

		if (strcmp(rlimits[i].name, name) != 0)
			continue;
		if (getrlimit(rlimits[i].resource, &rl) < 0) {
			printf("rlimit %s error %s\n", name, strerror(errno));
			return;
		}
		printf("rlimit %s", name);
		print_lim(rl.rlim_cur);
		print_lim(rl.rlim_max);
		printf("\n");
		return;
	}
	fprintf(stderr, "fake-agent: unknown rlimit '%s'\n", name);
	exit(2);
}

static void dump_signals(void)
{
	char line[256], blk[64] = "?", ign[64] = "?";
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "SigBlk:", 7) == 0)
			sscanf(line + 7, "%63s", blk);
		else if (strncmp(line, "SigIgn:", 7) == 0)
			sscanf(line + 7, "%63s", ign);
	}
	if (f)
		fclose(f);
	printf("signals blocked=%s ignored=%s\n", blk, ign);
}

static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"HUP", SIGHUP},	{"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ABRT", SIGABRT},
		     {"KILL", SIGKILL}, {"SEGV", SIGSEGV}, {"PIPE", SIGPIPE}, {"TERM", SIGTERM},
		     {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
	size_t i;

	if (isdigit((unsigned char)*s))
		return (int)parse_long(s, "kill-self");
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].name, s) == 0)
			return names[i].sig;
	fprintf(stderr, "fake-agent: unknown signal '%s'\n", s);
	exit(2);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write_all(fd, text, strlen(text)) < 0) {
		int e = errno;

		printf("write-file %s error %s\n", path,
		       strerrorname_np(e) ? strerrorname_np(e) : "?");
	} else {
		printf("write-file %s ok\n", path);
	}
	if (fd >= 0)
		close(fd);
}

static void read_stdin(void)
{
	char buf[65536];
	ssize_t n;

	fflush(stdout);
	while ((n = read(0, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (write_all(1, buf, (size_t)n) < 0)
			exit(3);
	}
}

static void spawn_grandchild(long ms)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fake-agent: fork: %s\n", strerror(errno));
		exit(3);
	}
	if (pid == 0) {
		sleep_ms(ms);
		_exit(0);
	}
	printf("{\"type\":\"grandchild\",\"pid\":%ld}\n", (long)pid);
}

static void daemon_beat(const char *file)
{
	pid_t pid;
	int fd;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fake-agent: fork: %s\n", strerror(errno));
		exit(3);
	}
	if (pid > 0) {
		int i;

		(void)waitpid(pid, NULL, 0); /* the middle one exits at once */
		/* go on once the escapees run (they wrote their first line; at most
		 * 30 s: a loaded machine) */
		for (i = 0; i < 3000 && access(file, F_OK) != 0; i++)
			sleep_ms(10);
		return;
	}
	(void)setsid();
	if (fork() != 0)
		_exit(0);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		(void)dup2(fd, 0);
		(void)dup2(fd, 1);
		(void)dup2(fd, 2);
	}
	if (fork() == 0)
		(void)setsid();
	for (;;) {
		fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0) {
			(void)!write(fd, "beat\n", 5);
			(void)close(fd);
		}
		sleep_ms(10);
	}
}

static void on_term(int sig)
{
	(void)sig;
	(void)!write(2, "term\n", 5);
	_exit(0);
}

static void alloc_mb(long mb)
{
	size_t n = (size_t)mb << 20, i;
	char *mem = malloc(n);
	volatile char *p = mem;

	if (!mem) {
		printf("alloc %ld failed\n", mb);
		return;
	}
	for (i = 0; i < n; i += 4096)
		p[i] = (char)i;
	printf("alloc %ld ok\n", mb);
	free(mem);
}

static void fork_bomb(long n)
{
	long k;
	int e = 0;

	fflush(stdout);
	fflush(stderr);
	for (k = 0; k < n; k++) {
		pid_t pid = fork();

		if (pid < 0) {
			e = errno;
			break;
		}
		if (pid == 0) {
			for (;;)
				pause();
		}
	}
	if (e)
		printf("fork-bomb %ld of %ld %s\n", k, n,
		       strerrorname_np(e) ? strerrorname_np(e) : "?");
	else
		printf("fork-bomb %ld of %ld\n", k, n);
}

static long long ts_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static volatile unsigned long spin_sink; /* the work the compiler must not drop */

static void spin(long ms)
{
	long long w0 = ts_ms(CLOCK_MONOTONIC), c0 = ts_ms(CLOCK_PROCESS_CPUTIME_ID), w;

	do {
		for (int i = 0; i < 100000; i++)
			spin_sink += (unsigned long)i;
		w = ts_ms(CLOCK_MONOTONIC);
	} while (w - w0 < ms);
	printf("spin wall_ms=%lld cpu_ms=%lld\n", w - w0, ts_ms(CLOCK_PROCESS_CPUTIME_ID) - c0);
}

static void dump_procs(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	printf("procs");
	while (d && (de = readdir(d))) {
		char path[300], comm[64] = "?";
		FILE *f;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		f = fopen(path, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
		printf(" %s:%s", de->d_name, comm);
	}
	if (d)
		closedir(d);
	printf("\n");
}

static void hook_post(const char *sock, const char *text)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (sock[0] == '$' && getenv(sock + 1))
		sock = getenv(sock + 1); /* $NAME: the socket the environment names */
	char *buf = malloc(strlen(text) + 1);
	size_t n = unescape(text, buf);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(sock) >= sizeof(sa.sun_path) || fd < 0) {
		fprintf(stderr, "fake-agent: hook-post: bad socket '%s'\n", sock);
		exit(3);
	}
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || write_all(fd, buf, n) < 0) {
		fprintf(stderr, "fake-agent: hook-post %s: %s\n", sock, strerror(errno));
		exit(3);
	}
	close(fd);
	free(buf);
}

/* Run one directive; arg (and arg2, for write-file and hook-post) are NULL
 * when it takes none. */
static void run(const char *name, const char *arg, const char *arg2, int argc, char **argv)
{
	if (strcmp(name, "emit") == 0) {
		printf("%s\n", arg);
	} else if (strcmp(name, "emit-raw") == 0) {
		char *buf = malloc(strlen(arg) + 1);
		size_t n = unescape(arg, buf);

		fflush(stdout);
		if (write_all(1, buf, n) < 0)
			exit(3);
		free(buf);
	} else if (strcmp(name, "partial-line") == 0) {
		printf("%s", arg);
	} else if (strcmp(name, "flood") == 0) {
		fflush(stdout);
		flood(strtoll(arg, NULL, 10));
	} else if (strcmp(name, "stderr") == 0) {
		fprintf(stderr, "%s\n", arg);
	} else if (strcmp(name, "sleep") == 0) {
		fflush(stdout);
		sleep_ms(parse_long(arg, "sleep"));
	} else if (strcmp(name, "ignore-term") == 0) {
		signal(SIGTERM, SIG_IGN);
	} else if (strcmp(name, "trap-term") == 0) {
		signal(SIGTERM, on_term);
	} else if (strcmp(name, "alloc") == 0) {
		alloc_mb(parse_long(arg, "alloc"));
	} else if (strcmp(name, "fork-bomb") == 0) {
		fork_bomb(parse_long(arg, "fork-bomb"));
	} else if (strcmp(name, "spin") == 0) {
		spin(parse_long(arg, "spin"));
	} else if (strcmp(name, "dump-procs") == 0) {
		dump_procs();
	} else if (strcmp(name, "daemon") == 0) {
		daemon_beat(arg);
	} else if (strcmp(name, "spawn-grandchild") == 0) {
		spawn_grandchild(parse_long(arg, "spawn-grandchild"));
	} else if (strcmp(name, "dump-env") == 0) {
		char **e;

		for (e = environ; *e; e++)
			printf("%s\n", *e);
	} else if (strcmp(name, "dump-argv") == 0) {
		int i;

		for (i = 0; i < argc; i++)
			printf("%s\n", argv[i]);
	} else if (strcmp(name, "dump-fds") == 0) {
		dump_fds();
	} else if (strcmp(name, "dump-ids") == 0) {
		printf("ids pid=%ld ppid=%ld pgid=%ld sid=%ld\n", (long)getpid(), (long)getppid(),
		       (long)getpgid(0), (long)getsid(0));
	} else if (strcmp(name, "dump-rlimit") == 0) {
		dump_rlimit(arg);
	} else if (strcmp(name, "dump-signals") == 0) {
		dump_signals();
	} else if (strcmp(name, "dump-pdeathsig") == 0) {
		int sig = -1;

		(void)prctl(PR_GET_PDEATHSIG, &sig);
		printf("pdeathsig %d\n", sig);
	} else if (strcmp(name, "write-file") == 0) {
		write_file(arg, arg2);
	} else if (strcmp(name, "exit") == 0) {
		fflush(stdout);
		fflush(stderr);
		exit((int)parse_long(arg, "exit"));
	} else if (strcmp(name, "kill-self") == 0) {
		fflush(stdout);
		fflush(stderr);
		signal(parse_signal(arg), SIG_DFL);
		raise(parse_signal(arg));
	} else if (strcmp(name, "read-stdin") == 0) {
		read_stdin();
	} else if (strcmp(name, "hook-post") == 0) {
		hook_post(arg, arg2);
	} else {
		fprintf(stderr, "fake-agent: unknown directive '%s'\n", name);
		exit(2);
	}
	fflush(stdout);
	fflush(stderr);
}

/* How many arguments a directive takes. */
static int nargs(const char *name)
{
	static const char *const none[] = {
		"ignore-term",	"dump-env",   "dump-argv", "dump-fds",	 "dump-ids",
		"dump-signals", "read-stdin", "trap-term", "dump-procs", "dump-pdeathsig"};
	size_t i;

	if (strcmp(name, "write-file") == 0 || strcmp(name, "hook-post") == 0)
		return 2;
	for (i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		if (strcmp(name, none[i]) == 0)
			return 0;
	return 1;
}

static void run_file(const char *path, int argc, char **argv)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f) {
		fprintf(stderr, "fake-agent: cannot open '%s': %s\n", path, strerror(errno));
		exit(2);
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *arg = NULL, *sp;
		const char *arg2 = NULL;

		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		sp = strchr(line, ' ');
		if (sp) {
			*sp = '\0';
			arg = sp + 1;
		}
		if (nargs(line) > 0 && !arg) {
			fprintf(stderr, "fake-agent: '%s' needs an argument\n", line);
			exit(2);
		}
		if (nargs(line) == 2) {
			sp = strchr(arg, ' ');
			arg2 = sp ? sp + 1 : "";
			if (sp)
				*sp = '\0';
		}
		run(line, arg, arg2, argc, argv);
	}
	free(line);
	fclose(f);
}

int main(int argc, char **argv)
{
	int i = 1;

	while (i < argc) {
		const char *name = argv[i++];
		int k;

		if (strcmp(name, "-f") == 0) {
			if (i >= argc) {
				fprintf(stderr, "fake-agent: -f needs a file\n");
				return 2;
			}
			run_file(argv[i++], argc, argv);
			continue;
		}
		k = nargs(name);
		if (i + k > argc) {
			fprintf(stderr, "fake-agent: '%s' needs %d argument(s)\n", name, k);
			return 2;
		}
		run(name, k > 0 ? argv[i] : NULL, k > 1 ? argv[i + 1] : NULL, argc, argv);
		i += k;
	}
	return 0;
}
