/* Finding processes from outside, whatever PID namespace they are in: by an
 * exact element of their argv (a marker the test chose), never by a broad
 * name. For the unit tests. */
#ifndef BERNSTEIN_TESTS_UNIT_TEST_PROCS_H
#define BERNSTEIN_TESTS_UNIT_TEST_PROCS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t procs_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Is pid a zombie (or gone)? */
static bool procs_dead(long pid)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

	(void)snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp && (rp[2] == 'Z' || rp[2] == 'X');
}

/* How many live processes have an argv element equal to arg. */
static unsigned procs_with_arg(const char *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned n = 0;

	while (d && (de = readdir(d))) {
		char path[64], buf[8192];
		ssize_t len;
		size_t i;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (strlen(de->d_name) > 20)
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%.20s/cmdline", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		for (i = 0; i < (size_t)len; i += strlen(buf + i) + 1)
			if (strcmp(buf + i, arg) == 0 &&
			    !procs_dead(strtol(de->d_name, NULL, 10))) {
				n++;
				break;
			}
	}
	if (d)
		closedir(d);
	return n;
}

/* Wait (at most ms) until no live process has arg in its argv. */
static bool procs_wait_none(const char *arg, uint64_t ms)
{
	uint64_t end = procs_mono_ms() + ms;

	while (procs_with_arg(arg) > 0) {
		struct timespec ts = {0, 5 * 1000000};

		if (procs_mono_ms() > end)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

#endif
