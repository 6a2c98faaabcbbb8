#include "proc/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/fsutil.h"

/* Rights newer than the build machine's linux/landlock.h. The values are
 * kernel ABI and never change. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

/* ABI 1: EXECUTE .. MAKE_SYM, bits 0-12. */
#define FS_RIGHTS_V1 ((1ULL << 13) - 1)

/* Rights that apply to a regular file (or device) rather than a directory. */
#define FS_FILE_RIGHTS                                                                             \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |                              \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV)

#define FS_RO_RIGHTS                                                                               \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

static long ll_create_ruleset(const struct landlock_ruleset_attr *attr, size_t size, uint32_t flags)
{
	return syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

static long ll_add_rule(int ruleset_fd, enum landlock_rule_type type, const void *attr,
			uint32_t flags)
{
	return syscall(SYS_landlock_add_rule, ruleset_fd, type, attr, flags);
}

VFORK_SAFE static long ll_restrict_self(int ruleset_fd, uint32_t flags)
{
	return syscall(SYS_landlock_restrict_self, ruleset_fd, flags);
}

int landlock_abi_version(void)
{
	long v = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (v < 0) {
		if (errno == ENOSYS || errno == EOPNOTSUPP)
			return -EOPNOTSUPP;
		return -errno;
	}
	return v > 0 ? (int)v : -EOPNOTSUPP;
}

uint64_t landlock_fs_rights(int abi)
{
	uint64_t r = FS_RIGHTS_V1;

	if (abi >= 2)
		r |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		r |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return r;
}

static int add_paths(int ruleset_fd, const char *const *paths, uint64_t rights, uint64_t handled,
		     const char *kind, struct diag *reterr)
{
	for (; paths && *paths; paths++) {
		struct landlock_path_beneath_attr rule;
		struct stat st;
		int fd, r;

		fd = open(*paths, O_PATH | O_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			diag_set(reterr, NULL, 0, 0, "landlock: cannot open %s path '%s': %s", kind,
				 *paths, strerror(-r));
			return r;
		}
		if (fstat(fd, &st) < 0) {
			r = -errno;
			close_fdp(&fd);
			diag_set(reterr, NULL, 0, 0, "landlock: cannot stat %s path '%s': %s", kind,
				 *paths, strerror(-r));
			return r;
		}
		memset(&rule, 0, sizeof(rule));
		rule.allowed_access = rights & handled;
		if (!S_ISDIR(st.st_mode))
			rule.allowed_access &= FS_FILE_RIGHTS;
		rule.parent_fd = fd;
		r = (int)ll_add_rule(ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
		if (r < 0)
			r = -errno;
		close_fdp(&fd);
		if (r < 0) {
			diag_set(reterr, NULL, 0, 0, "landlock: cannot add %s rule for '%s': %s",
				 kind, *paths, strerror(-r));
			return r;
		}
	}
	return 0;
}

int landlock_prepare(const char *const *rw, const char *const *ro, int *ret_fd, int *ret_abi,
		     struct diag *reterr)
{
	struct landlock_ruleset_attr attr;
	uint64_t handled;
	int abi, fd, r;

	abi = landlock_abi_version();
	if (abi < 0) {
		diag_set(reterr, NULL, 0, 0, "landlock: not supported by this kernel: %s",
			 strerror(-abi));
		return abi;
	}
	handled = landlock_fs_rights(abi);

	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = handled;
	/* close-on-exec by the kernel's own rule */
	fd = (int)ll_create_ruleset(&attr, sizeof(attr), 0);
	if (fd < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "landlock: cannot create a ruleset: %s", strerror(-r));
		return r;
	}
	r = add_paths(fd, rw, handled, handled, "read-write", reterr);
	if (r == 0)
		r = add_paths(fd, ro, FS_RO_RIGHTS, handled, "read-only", reterr);
	if (r < 0) {
		close_fdp(&fd);
		return r;
	}
	*ret_fd = fd;
	if (ret_abi)
		*ret_abi = abi;
	return 0;
}

VFORK_SAFE int landlock_allow_ro_now(int ruleset_fd, int abi, const char *path)
{
	struct landlock_path_beneath_attr rule;
	int fd = open(path, O_PATH | O_CLOEXEC | O_DIRECTORY), r = 0;

	if (fd < 0)
		return -errno;
	memset(&rule, 0, sizeof(rule));
	rule.allowed_access = FS_RO_RIGHTS & landlock_fs_rights(abi);
	rule.parent_fd = fd;
	if (ll_add_rule(ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0)
		r = -errno;
	(void)close(fd);
	return r;
}

VFORK_SAFE int landlock_enforce(int ruleset_fd)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (ll_restrict_self(ruleset_fd, 0) < 0)
		return -errno;
	return 0;
}
