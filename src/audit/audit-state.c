/* The chain's recorded end: DIR/state.json (durable, written atomically) and
 * the hot copy in DIR/.lock (rewritten after every append, never fsynced).
 * Kept behind these four functions so it can move into state.db. */
#include "audit/audit-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/json.h"
#include "util/banned.h"

#define STATE_VERSION 1
#define HOT_MAGIC     "bernstein-audit-hot-v2"
#define HOT_MAGIC_V1  "bernstein-audit-hot-v1"

int audit_state_load(const char *dir, struct audit_state *ret, struct diag *reterr)
{
	char path[PATH_MAX], *text = NULL;
	json_t *o = NULL, *count, *mac, *version;
	size_t len = 0;
	int r;

	r = audit_io_path(path, sizeof(path), dir, AUDIT_STATE_FILE);
	if (r < 0)
		return r;
	r = read_file_capped(path, 4096, &text, &len);
	if (r == -ENOENT)
		return r;
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot read audit state: %s", file_strerror(r));
		/* too large, or not a file at all (a FIFO...): not a state */
		return r == -EFBIG || is_file_type_error(r) ? -EBADMSG : r;
	}
	r = json_parse_strict(path, text, len, &o, reterr);
	if (r < 0) {
		diag_prefix(reterr, "invalid audit state");
		goto out;
	}
	count = json_object_get(o, "count");
	mac = json_object_get(o, "last_hmac");
	version = json_object_get(o, "version");
	if (!json_is_object(o) || !json_is_integer(count) || json_integer_value(count) < 0 ||
	    !json_is_string(mac) || !audit_hex64(json_string_value(mac), json_string_length(mac)) ||
	    !json_is_integer(version) || json_integer_value(version) != STATE_VERSION) {
		diag_set(
			reterr, path, 0, 0,
			"invalid audit state (want {\"count\": N, \"last_hmac\": HEX64, \"version\": %d})",
			STATE_VERSION);
		r = -EBADMSG;
		goto out;
	}
	ret->count = (uint64_t)json_integer_value(count);
	memcpy(ret->last_hmac, json_string_value(mac), AUDIT_HMAC_HEX_LEN + 1);
	r = 0;
out:
	json_decref(o);
	free(text);
	return r;
}

int audit_state_save(const char *dir, const struct audit_state *st, struct diag *reterr)
{
	char path[PATH_MAX], text[256];
	int n, r;

	r = audit_io_path(path, sizeof(path), dir, AUDIT_STATE_FILE);
	if (r < 0)
		return r;
	/* The same bytes json_canon_py() would give (sorted keys, ", ", ": "). */
	n = snprintf(text, sizeof(text),
		     "{\"count\": %" PRIu64 ", \"last_hmac\": \"%s\", \"version\": %d}\n",
		     st->count, st->last_hmac, STATE_VERSION);
	if (n < 0 || (size_t)n >= sizeof(text))
		return -EINVAL;
	r = atomic_write_file(path, text, (size_t)n, 0600);
	if (r < 0)
		diag_set(reterr, path, 0, 0, "cannot write audit state: %s", strerror(-r));
	return r;
}

void audit_state_boot_id(char buf[AUDIT_BOOT_ID_LEN + 1])
{
	char *text = NULL;
	size_t len = 0, i;

	buf[0] = '\0';
	if (read_file_capped("/proc/sys/kernel/random/boot_id", 64, &text, &len) < 0)
		return;
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
		len--;
	if (len == AUDIT_BOOT_ID_LEN) {
		for (i = 0; i < len && (text[i] == '-' || (text[i] >= '0' && text[i] <= '9') ||
					(text[i] >= 'a' && text[i] <= 'f'));
		     i++)
			;
		if (i == len) {
			memcpy(buf, text, len);
			buf[len] = '\0';
		}
	}
	free(text);
}

/* HOT_MAGIC " " 20 digits " " 64 hex digits " " 36 boot id bytes "\n" (v2),
 * or without the boot id and with HOT_MAGIC_V1 (an older writer's). */
int audit_state_hot_read(int lock_fd, struct audit_state *ret)
{
	const size_t m = sizeof(HOT_MAGIC) - 1, v1 = m + 1 + 20 + 1 + AUDIT_HMAC_HEX_LEN + 1,
		     v2 = v1 + AUDIT_BOOT_ID_LEN + 1;
	char buf[200];
	uint64_t count = 0;
	bool is_v2;
	ssize_t n;
	size_t i, want;

	n = pread(lock_fd, buf, v2, 0);
	if (n < 0)
		return -errno;
	if ((size_t)n >= m + 1 && memcmp(buf, HOT_MAGIC " ", m + 1) == 0)
		is_v2 = true;
	else if ((size_t)n >= m + 1 && memcmp(buf, HOT_MAGIC_V1 " ", m + 1) == 0)
		is_v2 = false;
	else
		return -ENODATA;
	want = is_v2 ? v2 : v1;
	if ((size_t)n < want || buf[m + 21] != ' ' || buf[want - 1] != '\n' ||
	    !audit_hex64(buf + m + 22, AUDIT_HMAC_HEX_LEN) || (is_v2 && buf[v1 - 1] != ' '))
		return -ENODATA;
	for (i = m + 1; i < m + 21; i++) {
		if (buf[i] < '0' || buf[i] > '9' || count > (UINT64_MAX - 9) / 10)
			return -ENODATA;
		count = count * 10 + (uint64_t)(buf[i] - '0');
	}
	ret->count = count;
	memcpy(ret->last_hmac, buf + m + 22, AUDIT_HMAC_HEX_LEN);
	ret->last_hmac[AUDIT_HMAC_HEX_LEN] = '\0';
	ret->boot_id[0] = '\0';
	if (is_v2 && buf[v1] != '-') {
		memcpy(ret->boot_id, buf + v1, AUDIT_BOOT_ID_LEN);
		ret->boot_id[AUDIT_BOOT_ID_LEN] = '\0';
	}
	return 0;
}

int audit_state_hot_write(int lock_fd, const struct audit_state *st)
{
	char buf[200];
	int n;
	ssize_t w;

	n = snprintf(buf, sizeof(buf), HOT_MAGIC " %020" PRIu64 " %s %-36.36s\n", st->count,
		     st->last_hmac,
		     strlen(st->boot_id) == AUDIT_BOOT_ID_LEN
			     ? st->boot_id
			     : "------------------------------------");
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -EINVAL;
	/* Fixed width: every write covers the previous one completely. */
	do
		w = pwrite(lock_fd, buf, (size_t)n, 0);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	return w == n ? 0 : -EIO;
}
