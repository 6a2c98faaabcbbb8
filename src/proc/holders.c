/* proc/holders.h: a walk of /proc/PID/fd. */
#include "proc/holders.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* Mark in ret_pids the targets process pid has open; the count of new ones. */
static size_t scan_pid(int procfd, const char *pid, const struct stat *targets, size_t n,
		       pid_t *ret_pids)
{
	char path[320];
	struct dirent *de;
	size_t found = 0, i;
	DIR *d;
	int fd;

	(void)snprintf(path, sizeof(path), "%s/fd", pid);
	fd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* gone, or not ours to read */
	d = fdopendir(fd);
	if (!d) {
		(void)close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (!str_all_digits(de->d_name))
			continue;
		/* follows the magic link: the open file itself */
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0)
			continue;
		for (i = 0; i < n; i++) {
			if (ret_pids[i] || targets[i].st_ino == 0)
				continue;
			if (st.st_dev == targets[i].st_dev && st.st_ino == targets[i].st_ino) {
				ret_pids[i] = (pid_t)strtol(pid, NULL, 10);
				found++;
			}
		}
	}
	(void)closedir(d);
	return found;
}

int proc_file_holders(const char *const *paths, size_t n, pid_t *ret_pids)
{
	struct stat *targets;
	struct dirent *de;
	size_t i, want = 0, found = 0;
	char self[32];
	DIR *d;
	int procfd, r;

	for (i = 0; i < n; i++)
		ret_pids[i] = 0;
	if (n == 0)
		return 0;
	targets = xcalloc(n, sizeof(*targets));
	for (i = 0; i < n; i++) {
		if (stat(paths[i], &targets[i]) < 0)
			targets[i].st_ino = 0; /* missing: nobody holds it */
		else
			want++;
	}
	if (want == 0) {
		free(targets);
		return 0;
	}
	procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0) {
		r = -errno;
		free(targets);
		return r;
	}
	d = fdopendir(procfd);
	if (!d) {
		r = -errno;
		(void)close(procfd);
		free(targets);
		return r;
	}
	(void)snprintf(self, sizeof(self), "%ld", (long)getpid());
	while (found < want && (de = readdir(d)) != NULL) {
		if (!str_all_digits(de->d_name) || strcmp(de->d_name, self) == 0)
			continue;
		found += scan_pid(dirfd(d), de->d_name, targets, n, ret_pids);
	}
	(void)closedir(d);
	free(targets);
	return (int)found;
}
