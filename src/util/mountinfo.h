/* /proc/self/mountinfo, one line at a time (proc(5)): what bernstein needs
 * to find the overlay mounts it left behind (orch/checkout.h, kind
 * overlay). The mount points in it are paths an agent may have chosen
 * (a directory it made and mounted over, when it could), so the parser
 * takes any bytes: a malformed line is -EBADMSG, never a crash.
 *
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   id parent dev root point options [optional...] - fstype source super-options
 *
 * Paths use the kernel's octal escapes (\040 a space, \011 a tab, \012 a
 * newline, \134 a backslash); mountinfo_parse_line() undoes them in the
 * mount point, mountinfo_opt() in an option's value. */
#ifndef BERNSTEIN_UTIL_MOUNTINFO_H
#define BERNSTEIN_UTIL_MOUNTINFO_H

#include <stddef.h>

#define MOUNTINFO_PATH	   "/proc/self/mountinfo"
#define MOUNTINFO_LINE_MAX (64u << 10) /* longer lines are -ENOBUFS */

struct mountinfo_entry {
	char *mount_point; /* unescaped */
	char *fstype;	   /* as printed ("overlay") */
	char *source;	   /* as printed */
	char *super_opts;  /* as printed: still escaped, split by mountinfo_opt() */
};

#define MOUNTINFO_ENTRY_INIT                                                                       \
	{                                                                                          \
		NULL, NULL, NULL, NULL                                                             \
	}

/* One line (without its newline; len bytes, no NUL needed) into *ret
 * (caller releases with mountinfo_entry_release(); written only on
 * success). -EBADMSG: not a mountinfo line (too few fields, no " - "
 * separator, a NUL byte, a bad escape); -ENOBUFS: longer than
 * MOUNTINFO_LINE_MAX. */
int mountinfo_parse_line(const char *line, size_t len, struct mountinfo_entry *ret);
void mountinfo_entry_release(struct mountinfo_entry *e);

/* The value of key=VALUE in a comma-separated option list as printed in
 * mountinfo (opts), unescaped: 0 and *ret (caller frees); -ENOENT when the
 * list has no such key (or only the bare key); -EBADMSG for a bad escape. */
int mountinfo_opt(const char *opts, const char *key, char **ret);

#endif
