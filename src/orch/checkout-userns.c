/* Overlay checkouts without root (orch/checkout.h,
 * checkout_overlay_userns_enter()): since Linux 5.11 the owner of a user
 * namespace may mount an overlay in a mount namespace that user namespace
 * owns. A run of a non-root user that wants overlay trees makes both, once,
 * before any thread or child: the process itself then mounts and unmounts
 * the task's overlays (mount(2) here; the capabilities of the new namespace
 * are this process's only: its children exec as the same unprivileged user,
 * git, gates and agents alike, and keep none), and every child lives in its
 * mount namespace, so the trees they see are the mounted ones.
 *
 * The ids are mapped to themselves (uid U -> U, gid G -> G), not to root:
 * files keep their owners, git's safe.directory check and ssh's checks of
 * ~/.ssh see the same user, an agent that refuses to run as root still
 * runs. What changes inside: the other ids show as the overflow id
 * (nobody/nogroup; access checks still use the real ones), setgroups(2) is
 * denied (as any unprivileged user namespace requires before its gid_map),
 * and set-user-ID programs do not gain their owner (sudo, ping as setuid).
 * The mounts are private: nothing propagates out, and they go with the
 * namespace, when its last process exits. */
#include "orch/checkout.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/banned.h"

static int write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = write_all(fd, text, strlen(text));
	(void)close(fd);
	return r < 0 ? r : 0;
}

/* The maps of this process's new user namespace: its uid and gid to
 * themselves. /proc/self/uid_map of a non-dumpable process (bernstein is,
 * cli.h) is root's: dumpable for these three writes only, before any
 * agent of the run exists. */
static int userns_map(uid_t uid, gid_t gid, struct diag *reterr)
{
	int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	char map[64];
	int r;

	(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	(void)snprintf(map, sizeof(map), "%lu %lu 1\n", (unsigned long)uid, (unsigned long)uid);
	if ((r = write_proc("/proc/self/uid_map", map)) < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot write /proc/self/uid_map: %s", strerror(-r));
		goto out;
	}
	if ((r = write_proc("/proc/self/setgroups", "deny")) < 0 && r != -ENOENT) {
		diag_set(reterr, NULL, 0, 0, "cannot write /proc/self/setgroups: %s", strerror(-r));
		goto out;
	}
	(void)snprintf(map, sizeof(map), "%lu %lu 1\n", (unsigned long)gid, (unsigned long)gid);
	if ((r = write_proc("/proc/self/gid_map", map)) < 0)
		diag_set(reterr, NULL, 0, 0, "cannot write /proc/self/gid_map: %s", strerror(-r));
out:
	if (dumpable >= 0)
		(void)prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
	return r < 0 ? r : 0;
}

/* unshare(2) the user and mount namespaces, map uid and gid to
 * themselves, make every mount private. Once unshare() succeeded there is
 * no way back: the caller tried it in a child first. */
static int userns_make(uid_t uid, gid_t gid, struct diag *reterr)
{
	unsigned long cap;
	int r;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		r = -errno;
		diag_set(
			reterr, NULL, 0, 0, "cannot make a user namespace: %s%s", strerror(-r),
			r == -EPERM || r == -ENOSPC
				? " (unprivileged user namespaces are off here: sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, an AppArmor or seccomp policy)"
				: "");
		return r;
	}
	if ((r = userns_map(uid, gid, reterr)) < 0)
		return r;
	/* no program started from here gains a capability in this namespace
	 * (a file capability, cap_sys_admin+ep, would let it mount there):
	 * the capabilities of this process itself stay */
	for (cap = 0; prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; cap++)
		;
	if (errno != EINVAL) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot drop capability %lu from the bounding set: %s",
			 cap, strerror(-r));
		return r;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot make the mounts private: %s", strerror(-r));
		return r;
	}
	return 0;
}

struct userns_try {
	int r;
	struct diag d;
};

int checkout_overlay_userns_enter(const char *repo, struct diag *reterr)
{
	struct userns_try t = {0};
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fds[2], st = 0, r;
	pid_t pid;
	ssize_t n;

	if (uid == 0) {
		diag_set(reterr, NULL, 0, 0, "not for root");
		return -EINVAL;
	}
	/* first in a child, which exits: this process changes only when a
	 * namespace of its own can mount the overlays */
	if (pipe2(fds, O_CLOEXEC) < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "cannot make a pipe: %s", strerror(-r));
		return r;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		(void)close(fds[0]);
		(void)close(fds[1]);
		diag_set(reterr, NULL, 0, 0, "cannot fork: %s", strerror(-r));
		return r;
	}
	if (pid == 0) {
		(void)close(fds[0]);
		diag_clear(&t.d);
		t.r = userns_make(uid, gid, &t.d);
		if (t.r >= 0)
			t.r = checkout_overlay_probe(repo, &t.d);
		(void)write_all(fds[1], &t, sizeof(t));
		_exit(t.r < 0 ? 1 : 0);
	}
	(void)close(fds[1]);
	do
		n = read(fds[0], &t, sizeof(t));
	while (n < 0 && errno == EINTR);
	(void)close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(t)) {
		diag_set(reterr, NULL, 0, 0, "the namespace probe died (status %d)", st);
		return -ECHILD;
	}
	if (t.r < 0) {
		t.d.msg[sizeof(t.d.msg) - 1] = '\0';
		diag_set(reterr, NULL, 0, 0, "%s", t.d.msg);
		return t.r;
	}
	return userns_make(uid, gid, reterr);
}
