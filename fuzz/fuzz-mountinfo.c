/* Fuzz target for util/mountinfo: a line of /proc/self/mountinfo, whose
 * mount points an agent may have chosen. The input is the line (any bytes);
 * its first NUL-free prefix up to 32 bytes is also looked up as an option
 * key in the super options. Properties, besides never crashing:
 *   - success fills every field, none with a space, newline or NUL in what
 *     was printed (fstype, source, super options);
 *   - any other return is -EBADMSG or -ENOBUFS, and the entry is untouched;
 *   - mountinfo_opt gives 0 (a value without a NUL), -ENOENT or -EBADMSG. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/mountinfo.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mountinfo_entry e = MOUNTINFO_ENTRY_INIT;
	char key[33];
	size_t kn = 0;
	char *v = NULL;
	int r;

	r = mountinfo_parse_line((const char *)data, size, &e);
	if (r < 0) {
		if ((r != -EBADMSG && r != -ENOBUFS) || e.mount_point || e.fstype)
			abort();
		return 0;
	}
	if (!e.mount_point || !e.fstype || !e.source || !e.super_opts)
		abort();
	if (strpbrk(e.fstype, " \n") || strpbrk(e.source, " \n") || strpbrk(e.super_opts, " \n"))
		abort();
	while (kn < size && kn < 32 && data[kn] && data[kn] != '=' && data[kn] != ',') {
		key[kn] = (char)data[kn];
		kn++;
	}
	key[kn] = '\0';
	r = mountinfo_opt(e.super_opts, key, &v);
	if (r == 0)
		free(v);
	else if (r != -ENOENT && r != -EBADMSG)
		abort();
	mountinfo_entry_release(&e);
	return 0;
}
