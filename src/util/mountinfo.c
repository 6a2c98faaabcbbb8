/* /proc/self/mountinfo lines (util/mountinfo.h). */
#include "util/mountinfo.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"
#include "util/banned.h"

/* s[0..n) with the kernel's \ooo escapes undone into a new string; NULL
 * for a bad escape or a NUL produced by one. */
static char *unescape(const char *s, size_t n)
{
	char *out = xmalloc(n + 1), *o = out;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned v;

		if (s[i] != '\\') {
			*o++ = s[i];
			continue;
		}
		if (n - i < 4 || s[i + 1] < '0' || s[i + 1] > '3' || s[i + 2] < '0' ||
		    s[i + 2] > '7' || s[i + 3] < '0' || s[i + 3] > '7') {
			free(out);
			return NULL;
		}
		v = (unsigned)(s[i + 1] - '0') * 64 + (unsigned)(s[i + 2] - '0') * 8 +
		    (unsigned)(s[i + 3] - '0');
		if (v == 0) {
			free(out);
			return NULL;
		}
		*o++ = (char)v;
		i += 3;
	}
	*o = '\0';
	return out;
}

/* The next space-separated field of line[*pos..len): its start and length;
 * false when there is none. */
static bool next_field(const char *line, size_t len, size_t *pos, const char **ret, size_t *ret_n)
{
	size_t i = *pos, start;

	while (i < len && line[i] == ' ')
		i++;
	if (i >= len)
		return false;
	start = i;
	while (i < len && line[i] != ' ')
		i++;
	*ret = line + start;
	*ret_n = i - start;
	*pos = i;
	return true;
}

int mountinfo_parse_line(const char *line, size_t len, struct mountinfo_entry *ret)
{
	struct mountinfo_entry e = MOUNTINFO_ENTRY_INIT;
	const char *f[5], *sep, *mp;
	size_t fn[5], pos = 0, sn, mpn, i;

	if (len > MOUNTINFO_LINE_MAX)
		return -ENOBUFS;
	if (memchr(line, '\0', len) || memchr(line, '\n', len))
		return -EBADMSG;
	/* id, parent, major:minor, root, mount point */
	for (i = 0; i < 5; i++)
		if (!next_field(line, len, &pos, &f[i], &fn[i]))
			return -EBADMSG;
	mp = f[4];
	mpn = fn[4];
	/* options, then optional fields up to the lone "-" */
	for (;;) {
		if (!next_field(line, len, &pos, &sep, &sn))
			return -EBADMSG;
		if (sn == 1 && sep[0] == '-')
			break;
	}
	/* fstype, source, super options */
	for (i = 0; i < 3; i++)
		if (!next_field(line, len, &pos, &f[i], &fn[i]))
			return -EBADMSG;
	e.fstype = xstrndup(f[0], fn[0]);
	e.source = xstrndup(f[1], fn[1]);
	e.super_opts = xstrndup(f[2], fn[2]);
	e.mount_point = unescape(mp, mpn);
	if (!e.mount_point) {
		mountinfo_entry_release(&e);
		return -EBADMSG;
	}
	*ret = e;
	return 0;
}

void mountinfo_entry_release(struct mountinfo_entry *e)
{
	if (!e)
		return;
	free(e->mount_point);
	free(e->fstype);
	free(e->source);
	free(e->super_opts);
	*e = (struct mountinfo_entry)MOUNTINFO_ENTRY_INIT;
}

int mountinfo_opt(const char *opts, const char *key, char **ret)
{
	size_t kn = strlen(key);
	const char *p = opts;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n > kn && strncmp(p, key, kn) == 0 && p[kn] == '=') {
			char *v = unescape(p + kn + 1, n - kn - 1);

			if (!v)
				return -EBADMSG;
			*ret = v;
			return 0;
		}
		p = end ? end + 1 : NULL;
	}
	return -ENOENT;
}
