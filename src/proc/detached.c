/* A process that outlives bernstein (detached.h). */
#include "proc/detached.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "util/banned.h"

int proc_spawn_detached(const struct proc_spec *spec, pid_t *ret_pid, struct diag *reterr)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t pid = -1;
	int r;

	if (!spec->argv.nr || spec->argv.v[0][0] != '/') {
		diag_set(reterr, NULL, 0, 0, "a detached process needs an absolute argv[0]");
		return -EINVAL;
	}
	(void)posix_spawn_file_actions_init(&fa);
	(void)posix_spawnattr_init(&at);
	(void)sigemptyset(&none);
	(void)sigfillset(&all);
	(void)posix_spawnattr_setsigmask(&at, &none);
	(void)posix_spawnattr_setsigdefault(&at, &all);
	(void)posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
						    POSIX_SPAWN_SETSIGDEF);
	if (spec->stdin_fd >= 0)
		(void)posix_spawn_file_actions_adddup2(&fa, spec->stdin_fd, 0);
	else
		(void)posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	(void)posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	(void)posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (spec->cwd)
		(void)posix_spawn_file_actions_addchdir_np(&fa, spec->cwd);
	(void)posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	r = posix_spawn(&pid, spec->argv.v[0], &fa, &at, (char *const *)(uintptr_t)spec->argv.v,
			(char *const *)(uintptr_t)spec->env.v);
	(void)posix_spawn_file_actions_destroy(&fa);
	(void)posix_spawnattr_destroy(&at);
	if (r != 0) {
		diag_set(reterr, NULL, 0, 0, "cannot start '%s': %s", spec->argv.v[0], strerror(r));
		return -r;
	}
	if (ret_pid)
		*ret_pid = pid;
	return 0;
}
