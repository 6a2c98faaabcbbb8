/* Killing what a process started (reaper.h). Async-signal-safe below the
 * line: system calls and stack buffers only. */
#include "proc/reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/banned.h"

#define MAX_KIDS  256 /* children handled in one round; more wait for the next */
#define ROUND_MS  200 /* how long a round waits for its killed children to die */
#define DENTS_BUF 4096

int reaper_enable(void)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/* ---- async-signal-safe from here on ---- */

static bool parse_pid(const char *s, pid_t *ret)
{
	long v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 100000000)
			return false;
		v = v * 10 + (*s - '0');
	}
	*ret = (pid_t)v;
	return v > 0;
}

/* The parent of pid from /proc/PID/stat (after the last ')': " S PPID ..."),
 * or -1. */
static pid_t parent_of(const char *pidstr)
{
	char path[64], buf[512];
	size_t i = 0, j;
	ssize_t n;
	long ppid = 0;
	int fd;

	for (j = 0; "/proc/"[j]; j++)
		path[i++] = "/proc/"[j];
	for (j = 0; pidstr[j] && i < sizeof(path) - 8; j++)
		path[i++] = pidstr[j];
	for (j = 0; "/stat"[j]; j++)
		path[i++] = "/stat"[j];
	path[i] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (i = (size_t)n; i > 0 && buf[i - 1] != ')'; i--)
		;
	/* ") S PPID" */
	if (i == 0 || i + 3 >= (size_t)n || buf[i] != ' ' || buf[i + 2] != ' ')
		return -1;
	for (i += 3; i < (size_t)n && buf[i] >= '0' && buf[i] <= '9'; i++)
		ppid = ppid * 10 + (buf[i] - '0');
	return (pid_t)ppid;
}

/* The children of self (but keep) into kids: their number, or -errno. */
static int children(pid_t self, const pid_t *keep, size_t nkeep, pid_t *kids, size_t max)
{
	char buf[DENTS_BUF];
	size_t nk = 0;
	int fd, r = 0;

	fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		long off = 0;

		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		while (off < n && nk < max) {
			/* struct linux_dirent64: d_ino 8, d_off 8, d_reclen 2, d_type 1, d_name */
			const char *name = buf + off + 19;
			unsigned short reclen;
			pid_t pid;
			size_t k;
			bool kept = false;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (!parse_pid(name, &pid) || pid == self || parent_of(name) != self)
				continue;
			for (k = 0; k < nkeep; k++)
				kept = kept || keep[k] == pid;
			if (!kept)
				kids[nk++] = pid;
		}
		if (nk == max)
			break;
	}
	(void)close(fd);
	return r < 0 ? r : (int)nk;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int reaper_kill_children(const pid_t *keep, size_t nkeep, unsigned max_rounds)
{
	pid_t self = getpid(), own_group = getpgrp(), kids[MAX_KIDS];
	unsigned round;
	int killed = 0;

	if (!max_rounds)
		max_rounds = REAPER_DEFAULT_ROUNDS;
	for (round = 0; round < max_rounds; round++) {
		int n = children(self, keep, nkeep, kids, MAX_KIDS), i, left;
		uint64_t until;

		if (n < 0)
			return n;
		if (n == 0)
			return killed;
		for (i = 0; i < n; i++) {
			/* its group too: members that are not (yet) orphans */
			if (kids[i] != own_group && getpgid(kids[i]) == kids[i])
				(void)kill(-kids[i], SIGKILL);
			if (kill(kids[i], SIGKILL) == 0)
				killed++;
		}
		/* reap them, so that their own children come back to us */
		until = now_ms() + ROUND_MS;
		do {
			left = 0;
			for (i = 0; i < n; i++) {
				pid_t w;

				if (kids[i] <= 0)
					continue;
				w = waitpid(kids[i], NULL, WNOHANG);
				if (w == kids[i] || (w < 0 && errno == ECHILD))
					kids[i] = 0;
				else
					left++;
			}
			if (left) {
				struct timespec ts = {0, 1000000};

				(void)nanosleep(&ts, NULL);
			}
		} while (left && now_ms() < until);
	}
	return children(self, keep, nkeep, kids, 1) > 0 ? -EAGAIN : killed;
}
