/* The audit chain: key resolution and loading, record bytes (a known answer
 * computed with Python's json/hmac), appends with a pinned clock, day files,
 * batches, tail recovery, state.json, and every tamper the verifier must
 * locate. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit/audit-internal.h"
#include "audit/audit.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/sbuf.h"

#define KEY    "test-key"
#define KEYLEN (sizeof(KEY) - 1)
/* 2025-11-30T11:03:56.123456789Z */
#define T0	1764500636123456789LL
#define DAY_NS	(86400LL * 1000000000LL)
#define DAYFILE "2025-11-30.jsonl"

/* Computed with Python 3: json.dumps(rec, sort_keys=True) and
 * hmac.new(b"test-key", (prev + json.dumps(rec_without_hmac, sort_keys=True))
 * .encode(), hashlib.sha256).hexdigest(). */
static const char kat_line1[] =
	"{\"actor\": \"tester\", \"details\": {\"n\": 1, \"s\": \"\\u00e9\"}, \"event_type\": \"unit.kat\", \"hmac\": \"1b88721c021efa395dd8da36612492c7674aa0de112a99919acc50d548307f99\", \"prev_hmac\": \"0000000000000000000000000000000000000000000000000000000000000000\", \"resource_id\": \"r1\", \"resource_type\": \"task\", \"timestamp\": \"2025-11-30T11:03:56.123456Z\"}\n";
static const char kat_line2[] =
	"{\"actor\": \"tester\", \"details\": {}, \"event_type\": \"unit.kat2\", \"hmac\": \"1a9b64382eea14f6d53c23f3fce8eb12e6dfb3d80f1d930920ff7f3a1a7ce764\", \"prev_hmac\": \"1b88721c021efa395dd8da36612492c7674aa0de112a99919acc50d548307f99\", \"resource_id\": \"\", \"resource_type\": \"\", \"timestamp\": \"2025-11-30T11:03:56.123456Z\"}\n";

static char tmp[64];
static char dir[128];
static struct clock clk;

/* ---- helpers ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	(void)state;
	(void)snprintf(tmp, sizeof(tmp), "/tmp/bernstein-audit-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	(void)snprintf(dir, sizeof(dir), "%s/audit", tmp);
	clock_fixed_init(&clk, T0, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void path_in(char *buf, size_t size, const char *name)
{
	(void)snprintf(buf, size, "%s/%s", dir, name);
}

static char *slurp(const char *name, size_t *len)
{
	char path[256], *data = NULL;
	size_t n = 0;

	path_in(path, sizeof(path), name);
	assert_int_equal(read_file_capped(path, 64 << 20, &data, &n), 0);
	if (len)
		*len = n;
	return data;
}

static void spit(const char *name, const char *data, size_t len)
{
	char path[256];
	FILE *f;

	path_in(path, sizeof(path), name);
	f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static struct audit_chain *open_chain(const char *key)
{
	struct audit_chain *c = NULL;
	struct diag d;
	int r = audit_open(dir, key, strlen(key), &clk, AUDIT_OPEN_CREATE, &c, &d);

	if (r < 0)
		fail_msg("audit_open: %s: %s", strerror(-r), d.msg);
	return c;
}

static void append_n(struct audit_chain *c, int n, const char *et)
{
	struct diag d;
	int i, r;

	for (i = 0; i < n; i++) {
		json_t *details = json_pack("{s:i}", "i", i);

		r = audit_append(c, et, "tester", "task", "t1", details, &d);
		json_decref(details);
		if (r < 0)
			fail_msg("audit_append: %s: %s", strerror(-r), d.msg);
	}
}

/* Batched: one fsync at the end (fsync is slow on some CI disks). */
static void make_chain(int n)
{
	struct audit_chain *c = open_chain(KEY);
	struct diag d;

	audit_batch_begin(c);
	append_n(c, n, "unit.test");
	assert_int_equal(audit_batch_end(c, &d), 0);
	audit_close(c);
}

#define MAX_PROBLEMS 64
struct problems {
	unsigned n;
	char file[MAX_PROBLEMS][256];
	unsigned line[MAX_PROBLEMS];
	char msg[MAX_PROBLEMS][256];
};

static void collect(void *userdata, const char *file, unsigned line, const char *msg)
{
	struct problems *p = userdata;

	if (p->n < MAX_PROBLEMS) {
		const char *slash = strrchr(file, '/');

		(void)snprintf(p->file[p->n], sizeof(p->file[0]), "%s", slash ? slash + 1 : file);
		p->line[p->n] = line;
		(void)snprintf(p->msg[p->n], sizeof(p->msg[0]), "%s", msg);
	}
	p->n++;
}

static struct audit_verify_stats verify_with(const char *key, struct problems *p)
{
	struct audit_verify_stats st;
	struct diag d;
	int r;

	memset(p, 0, sizeof(*p));
	r = audit_verify(dir, key, strlen(key), collect, p, &st, &d);
	if (r < 0)
		fail_msg("audit_verify: %s: %s", strerror(-r), d.msg);
	assert_int_equal(st.problems, p->n);
	return st;
}

static void expect_problem(const struct problems *p, unsigned i, const char *file, unsigned line,
			   const char *prefix)
{
	if (i >= p->n)
		fail_msg("expected problem #%u (%s:%u: %s), got only %u", i, file, line, prefix,
			 p->n);
	if (strcmp(p->file[i], file) != 0 || p->line[i] != line ||
	    strncmp(p->msg[i], prefix, strlen(prefix)) != 0)
		fail_msg("problem #%u: got %s:%u: %s, want %s:%u: %s...", i, p->file[i], p->line[i],
			 p->msg[i], file, line, prefix);
}

/* Lines of a file (each with its '\n'), editable. */
struct lines {
	char *v[256];
	size_t n;
};

static void lines_read(struct lines *l, const char *name)
{
	char *data = slurp(name, NULL), *p = data, *nl;

	l->n = 0;
	while ((nl = strchr(p, '\n'))) {
		l->v[l->n++] = strndup(p, (size_t)(nl - p + 1));
		p = nl + 1;
	}
	assert_int_equal(*p, '\0');
	free(data);
}

static void lines_write(struct lines *l, const char *name)
{
	char path[256];
	FILE *f;
	size_t i;

	path_in(path, sizeof(path), name);
	f = fopen(path, "we");
	assert_non_null(f);
	for (i = 0; i < l->n; i++) {
		(void)fputs(l->v[i], f);
		free(l->v[i]);
	}
	assert_int_equal(fclose(f), 0);
	l->n = 0;
}

static uint64_t state_count(void)
{
	char *s = slurp("state.json", NULL);
	unsigned long long n = 0;

	assert_int_equal(sscanf(s, "{\"count\": %llu,", &n), 1);
	free(s);
	return n;
}

/* ---- key ---- */

static void test_key_resolve(void **state)
{
	enum audit_key_source src;
	char buf[256], small[8];

	(void)state;
	assert_int_equal(
		audit_key_resolve("/x/k", "/env/k", "/xdg", "/home/u", buf, sizeof(buf), &src), 0);
	assert_string_equal(buf, "/x/k");
	assert_int_equal(src, AUDIT_KEY_EXPLICIT);
	assert_int_equal(
		audit_key_resolve(NULL, "/env/k", "/xdg", "/home/u", buf, sizeof(buf), &src), 0);
	assert_string_equal(buf, "/env/k");
	assert_int_equal(src, AUDIT_KEY_ENV);
	assert_int_equal(audit_key_resolve("", "", "/xdg", "/home/u", buf, sizeof(buf), &src), 0);
	assert_string_equal(buf, "/xdg/bernstein/audit.key");
	assert_int_equal(src, AUDIT_KEY_XDG);
	assert_int_equal(audit_key_resolve(NULL, NULL, NULL, "/home/u", buf, sizeof(buf), &src), 0);
	assert_string_equal(buf, "/home/u/.local/state/bernstein/audit.key");
	assert_int_equal(src, AUDIT_KEY_HOME);
	/* a relative XDG_STATE_HOME is ignored (XDG spec) */
	assert_int_equal(audit_key_resolve(NULL, NULL, "rel", "/home/u", buf, sizeof(buf), &src),
			 0);
	assert_string_equal(buf, "/home/u/.local/state/bernstein/audit.key");
	assert_int_equal(audit_key_resolve(NULL, NULL, NULL, NULL, buf, sizeof(buf), &src),
			 -ENOENT);
	assert_int_equal(audit_key_resolve(NULL, NULL, NULL, "", buf, sizeof(buf), NULL), -ENOENT);
	assert_int_equal(audit_key_resolve(NULL, NULL, NULL, "/home/u", small, sizeof(small), NULL),
			 -ENAMETOOLONG);
	assert_string_equal(audit_key_source_name(AUDIT_KEY_ENV), "BERNSTEIN_AUDIT_KEY_PATH");
}

static void test_key_create_and_load(void **state)
{
	char path[320], sub[256], *key = NULL, *again = NULL, *raw;
	size_t len = 0, len2 = 0, rawlen = 0, i;
	bool created = false;
	struct stat st;
	struct diag d;

	(void)state;
	(void)snprintf(sub, sizeof(sub), "%s/state/bernstein", tmp);
	(void)snprintf(path, sizeof(path), "%s/audit.key", sub);
	assert_int_equal(audit_key_load(path, false, &key, &len, NULL, &d), -ENOENT);
	assert_string_equal(d.file, path);

	umask(0);
	assert_int_equal(audit_key_load(path, true, &key, &len, &created, &d), 0);
	umask(022);
	assert_true(created);
	assert_int_equal(len, 64);
	for (i = 0; i < len; i++)
		assert_non_null(strchr("0123456789abcdef", key[i]));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* no newline, exactly the key */
	assert_int_equal(read_file_capped(path, 4096, &raw, &rawlen), 0);
	assert_int_equal(rawlen, 64);
	assert_memory_equal(raw, key, 64);
	free(raw);

	/* loading again gives the same key, not a new one */
	assert_int_equal(audit_key_load(path, true, &again, &len2, &created, &d), 0);
	assert_false(created);
	assert_int_equal(len2, len);
	assert_memory_equal(again, key, len);
	key = audit_key_free(key, len);
	again = audit_key_free(again, len2);
	assert_null(key);
}

static void test_key_permissions(void **state)
{
	char path[256], *key = NULL;
	size_t len = 0;
	struct diag d;
	int fd;

	(void)state;
	(void)snprintf(path, sizeof(path), "%s/k", tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, " \tabc\r\n\n", 8), 8);
	(void)close(fd);
	/* stripped: the text itself is the key */
	assert_int_equal(audit_key_load(path, false, &key, &len, NULL, &d), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(key, "abc", 3);
	key = audit_key_free(key, len);

	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(audit_key_load(path, false, &key, &len, NULL, &d), -EPERM);
	assert_string_equal(d.file, path);
	assert_non_null(strstr(d.msg, "0644"));
	assert_int_equal(chmod(path, 0660), 0);
	assert_int_equal(audit_key_load(path, true, &key, &len, NULL, &d), -EPERM);
	assert_non_null(strstr(d.msg, "0660"));
	assert_int_equal(chmod(path, 0601), 0);
	assert_int_equal(audit_key_load(path, false, &key, &len, NULL, &d), -EPERM);
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(audit_key_load(path, false, &key, &len, NULL, &d), 0);
	key = audit_key_free(key, len);

	/* empty after stripping */
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(audit_key_load(path, false, &key, &len, NULL, &d), -EINVAL);
	/* a directory is not a key */
	assert_int_equal(audit_key_load(tmp, false, &key, &len, NULL, &d), -EINVAL);
}

/* ---- writing ---- */

static void test_known_answer(void **state)
{
	struct audit_chain *c = open_chain(KEY);
	json_t *details = json_pack("{s:i,s:s}", "n", 1, "s", "\xc3\xa9");
	struct problems p;
	struct diag d;
	char *data;
	size_t len;

	(void)state;
	assert_int_equal(audit_append(c, "unit.kat", "tester", "task", "r1", details, &d), 0);
	assert_int_equal(audit_append(c, "unit.kat2", "tester", NULL, NULL, NULL, &d), 0);
	json_decref(details);
	assert_int_equal(audit_chain_count(c), 2);
	assert_string_equal(audit_chain_last_hmac(c),
			    "1a9b64382eea14f6d53c23f3fce8eb12e6dfb3d80f1d930920ff7f3a1a7ce764");
	audit_close(c);

	data = slurp(DAYFILE, &len);
	assert_int_equal(len, strlen(kat_line1) + strlen(kat_line2));
	assert_memory_equal(data, kat_line1, strlen(kat_line1));
	assert_memory_equal(data + strlen(kat_line1), kat_line2, strlen(kat_line2));
	free(data);
	data = slurp("state.json", NULL);
	assert_string_equal(
		data,
		"{\"count\": 2, \"last_hmac\": \"1a9b64382eea14f6d53c23f3fce8eb12e6dfb3d80f1d930920ff7f3a1a7ce764\", \"version\": 1}\n");
	free(data);
	assert_int_equal(verify_with(KEY, &p).records, 2);
	assert_int_equal(p.n, 0);
}

static void test_verify_python_written_chain(void **state)
{
	struct audit_verify_stats st;
	struct problems p;

	(void)state;
	/* A chain as Bernstein writes it: no state.json, no lock file. */
	assert_int_equal(mkdir(dir, 0700), 0);
	spit(DAYFILE, kat_line1, strlen(kat_line1));
	spit("2025-12-01.jsonl", kat_line2, strlen(kat_line2));
	st = verify_with(KEY, &p);
	assert_int_equal(p.n, 0);
	assert_int_equal(st.records, 2);
	assert_int_equal(st.files, 2);
	assert_false(st.have_state);
	/* appending continues it (a full scan finds the end) */
	{
		struct audit_chain *c = open_chain(KEY);

		assert_int_equal(audit_chain_count(c), 2);
		clock_fixed_init(&clk, T0 + 2 * DAY_NS, 0);
		append_n(c, 1, "unit.after");
		assert_int_equal(audit_chain_count(c), 3);
		audit_close(c);
	}
	st = verify_with(KEY, &p);
	assert_int_equal(p.n, 0);
	assert_int_equal(st.records, 3);
	assert_int_equal(st.files, 3);
	assert_true(st.have_state);
}

static void test_tricky_values(void **state)
{
	static const char details_json[] =
		"{\"accent\": \"\xc3\xa9\", \"cjk\": \"\xe6\x97\xa5\xe6\x9c\xac\", \"emoji\": \"\xf0\x9f\x98\x80\", \"esc\": \"q\\\"b\\\\s/\\n\\t\", \"ctl\": \"\\u0001\\u001f\\u007f\\u0000\", \"nested\": {\"b\": [1, {\"z\": null, \"a\": true}], \"a\": false}, \"floats\": [0.1, 1e-05, 1e16, -0.0, 1.5, 100.0], \"big\": 9223372036854775807, \"neg\": -9223372036854775807}";
	struct audit_chain *c = open_chain(KEY);
	json_t *details = json_loads(details_json, JSON_ALLOW_NUL, NULL);
	struct problems p;
	struct diag d;
	char *data;

	(void)state;
	assert_non_null(details);
	assert_int_equal(
		audit_append(c, "unit.tricky", "\xc3\xa9quipe", "t", "\xe6\x97\xa5", details, &d),
		0);
	json_decref(details);
	audit_close(c);
	data = slurp(DAYFILE, NULL);
	/* Python's ensure_ascii and float repr */
	assert_non_null(strstr(data, "\"accent\": \"\\u00e9\""));
	assert_non_null(strstr(data, "\"cjk\": \"\\u65e5\\u672c\""));
	assert_non_null(strstr(data, "\"emoji\": \"\\ud83d\\ude00\""));
	assert_non_null(strstr(data, "\"esc\": \"q\\\"b\\\\s/\\n\\t\""));
	assert_non_null(strstr(data, "\"ctl\": \"\\u0001\\u001f\\u007f\\u0000\""));
	assert_non_null(strstr(data, "\"floats\": [0.1, 1e-05, 1e+16, -0.0, 1.5, 100.0]"));
	assert_non_null(strstr(data, "\"big\": 9223372036854775807"));
	assert_non_null(
		strstr(data, "\"nested\": {\"a\": false, \"b\": [1, {\"a\": true, \"z\": null}]}"));
	assert_non_null(strstr(data, "\"actor\": \"\\u00e9quipe\""));
	for (const char *q = data; *q; q++)
		assert_true((unsigned char)*q < 0x80);
	free(data);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 0);
}

static void test_bad_arguments(void **state)
{
	struct audit_chain *c = open_chain(KEY);
	json_t *arr = json_array();
	struct diag d;

	(void)state;
	assert_int_equal(audit_append(c, "e", "a", "t", "i", arr, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "details"));
	assert_int_equal(audit_append(c, "\xff", "a", "t", "i", NULL, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "event_type"));
	assert_int_equal(audit_append(c, "ok", "a", "t", "i", NULL, &d), 0);
	json_decref(arr);
	/* nothing half-written */
	assert_int_equal(audit_chain_count(c), 1);
	audit_close(c);
}

static void test_day_files_and_clock_going_back(void **state)
{
	struct audit_chain *c = open_chain(KEY);
	struct audit_verify_stats st;
	struct problems p;
	struct stat sb;
	char path[256];

	(void)state;
	append_n(c, 2, "day1");
	clock_fixed_init(&clk, T0 + DAY_NS, 0);
	append_n(c, 1, "day2");
	/* the clock goes back a day: still appended to the newest file */
	clock_fixed_init(&clk, T0, 0);
	append_n(c, 1, "back");
	audit_close(c);
	path_in(path, sizeof(path), "2025-12-01.jsonl");
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	st = verify_with(KEY, &p);
	assert_int_equal(p.n, 0);
	assert_int_equal(st.records, 4);
	assert_int_equal(st.files, 2);
	{
		struct lines l;

		lines_read(&l, "2025-12-01.jsonl");
		assert_int_equal(l.n, 2);
		lines_write(&l, "2025-12-01.jsonl");
		lines_read(&l, DAYFILE);
		assert_int_equal(l.n, 2);
		lines_write(&l, DAYFILE);
	}
}

static void test_batch(void **state)
{
	struct audit_chain *c = open_chain(KEY), *c2;
	struct problems p;
	struct diag d;

	(void)state;
	append_n(c, 1, "first");
	assert_int_equal(state_count(), 1);
	audit_batch_begin(c);
	append_n(c, 50, "batched");
	/* state.json is written at the end of the batch only */
	assert_int_equal(state_count(), 1);
	/* a second handle interleaves (the lock and the hot state) */
	c2 = open_chain(KEY);
	assert_int_equal(audit_chain_count(c2), 51);
	append_n(c2, 1, "other");
	append_n(c, 1, "batched");
	assert_int_equal(audit_chain_count(c), 53);
	assert_int_equal(audit_batch_end(c, &d), 0);
	assert_int_equal(state_count(), 53);
	assert_int_equal(audit_batch_end(c, &d), 0); /* not in a batch: no-op */
	audit_close(c2);
	audit_close(c);
	assert_int_equal(verify_with(KEY, &p).records, 53);
	assert_int_equal(p.n, 0);
}

static void test_close_ends_batch(void **state)
{
	struct audit_chain *c = open_chain(KEY);

	(void)state;
	audit_batch_begin(c);
	append_n(c, 3, "x");
	audit_close(c);
	assert_int_equal(state_count(), 3);
}

static void test_lost_hot_and_state(void **state)
{
	struct audit_chain *c;
	struct problems p;
	char path[256];

	(void)state;
	make_chain(5);
	/* a foreign writer would update neither: the count comes from a scan */
	path_in(path, sizeof(path), ".lock");
	assert_int_equal(truncate(path, 0), 0);
	path_in(path, sizeof(path), "state.json");
	assert_int_equal(unlink(path), 0);
	c = open_chain(KEY);
	assert_int_equal(audit_chain_count(c), 5);
	append_n(c, 1, "x");
	audit_close(c);
	assert_int_equal(state_count(), 6);
	/* hot state gone but state.json right */
	path_in(path, sizeof(path), ".lock");
	assert_int_equal(truncate(path, 0), 0);
	c = open_chain(KEY);
	assert_int_equal(audit_chain_count(c), 6);
	audit_close(c);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 0);
}

static void test_torn_tail_recovery(void **state)
{
	static const char torn[] = "{\"actor\": \"half";
	struct audit_chain *c;
	struct problems p;
	char path[256];
	int fd;

	(void)state;
	make_chain(2);
	/* a crash mid-write left half a line */
	path_in(path, sizeof(path), DAYFILE);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, torn, sizeof(torn) - 1), (ssize_t)(sizeof(torn) - 1));
	(void)close(fd);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 2);
	expect_problem(&p, 0, DAYFILE, 3, "invalid JSON - ");
	expect_problem(&p, 1, DAYFILE, 3, "missing trailing newline");

	/* the next append seals it and chains from the last good record */
	c = open_chain(KEY);
	assert_int_equal(audit_chain_count(c), 3);
	append_n(c, 1, "after");
	audit_close(c);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 1);
	expect_problem(&p, 0, DAYFILE, 3, "invalid JSON - ");
	/* the sealed fragment hides nothing (the records around it chain):
	 * writers go on after it, the next one's check included */
	c = open_chain(KEY);
	assert_int_equal(audit_chain_count(c), 4);
	append_n(c, 1, "later");
	audit_close(c);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 1);
}

static void test_refuses_truncated_chain(void **state)
{
	struct audit_chain *c = NULL;
	struct lines l;
	struct diag d;

	(void)state;
	make_chain(3);
	lines_read(&l, DAYFILE);
	free(l.v[--l.n]);
	lines_write(&l, DAYFILE);
	assert_int_equal(audit_open(dir, KEY, KEYLEN, &clk, 0, &c, &d), -EBADMSG);
	assert_null(c);
	assert_non_null(strstr(d.msg, "truncated"));
	assert_non_null(strstr(d.file, "state.json"));
}

static void test_refuses_other_key(void **state)
{
	struct audit_chain *c = NULL;
	char path[256];
	struct diag d;
	int fd;

	(void)state;
	make_chain(2);
	assert_int_equal(audit_open(dir, "other", 5, &clk, 0, &c, &d), -ENOKEY);
	assert_null(c);
	assert_non_null(strstr(d.file, DAYFILE));
	/* also when the end must be found by a full scan (a torn tail) */
	path_in(path, sizeof(path), DAYFILE);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{", 1), 1);
	(void)close(fd);
	assert_int_equal(audit_open(dir, "other", 5, &clk, 0, &c, &d), -ENOKEY);
	assert_int_equal(d.line, 1); /* the first record that does not verify */
	c = open_chain(KEY);
	assert_int_equal(audit_chain_count(c), 3);
	audit_close(c);
}

static void test_open_missing_dir(void **state)
{
	struct audit_chain *c = NULL;
	struct diag d;

	(void)state;
	assert_int_equal(audit_open(dir, KEY, KEYLEN, &clk, 0, &c, &d), -ENOENT);
	assert_int_equal(audit_verify(dir, KEY, KEYLEN, NULL, NULL, NULL, &d), -ENOENT);
	assert_int_equal(audit_open(dir, KEY, 0, &clk, AUDIT_OPEN_CREATE, &c, &d), -EINVAL);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* A chain opened before its key exists: nothing is created until a record
 * is written. A record that cannot be built (bad UTF-8) creates nothing;
 * the first real one creates the key (0600), the directory and the file. */
static void test_keyless_creates_on_first_record(void **state)
{
	struct audit_chain *c = NULL, *c2 = NULL;
	char keypath[256], keydir[256];
	struct problems p;
	struct stat st;
	struct diag d;
	char *key = NULL;
	size_t keylen = 0;

	(void)state;
	(void)snprintf(keydir, sizeof(keydir), "%s/keys", tmp);
	(void)snprintf(keypath, sizeof(keypath), "%s/keys/audit.key", tmp);
	assert_int_equal(audit_open_keyless(dir, keypath, &clk, AUDIT_OPEN_CREATE, &c, &d), 0);
	assert_false(exists(keydir));
	assert_false(exists(dir));
	assert_int_equal(audit_chain_count(c), 0);
	assert_string_equal(audit_chain_last_hmac(c), AUDIT_GENESIS);
	/* a record that cannot be built: still nothing */
	assert_int_equal(audit_append(c, "ev", "bad \xff utf-8", "", "", NULL, &d), -EINVAL);
	audit_batch_begin(c);
	assert_int_equal(audit_batch_end(c, &d), 0);
	assert_false(exists(keydir));
	assert_false(exists(dir));
	/* a second handle, also keyless, opened meanwhile */
	assert_int_equal(audit_open_keyless(dir, keypath, &clk, AUDIT_OPEN_CREATE, &c2, &d), 0);
	append_n(c, 2, "unit.first");
	assert_int_equal(stat(keypath, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true(exists(dir));
	assert_int_equal(audit_chain_count(c), 2);
	/* the second handle uses the key the first one made */
	append_n(c2, 1, "unit.second");
	assert_int_equal(audit_chain_count(c2), 3);
	audit_close(c2);
	audit_close(c);
	assert_int_equal(audit_key_load(keypath, false, &key, &keylen, NULL, &d), 0);
	memset(&p, 0, sizeof(p));
	assert_int_equal(audit_verify(dir, key, keylen, collect, &p, NULL, &d), 0);
	assert_int_equal(p.n, 0);
	key = audit_key_free(key, keylen);

	/* closing a keyless handle that wrote nothing leaves nothing */
	(void)snprintf(keypath, sizeof(keypath), "%s/keys/other.key", tmp);
	assert_int_equal(audit_open_keyless(dir, keypath, &clk, AUDIT_OPEN_CREATE, &c, &d),
			 -ENOKEY); /* dir has records: another key made them */
	assert_non_null(strstr(d.msg, "has records"));
	assert_false(exists(keypath));
}

static void test_keyless_refusals(void **state)
{
	static const char state2[] =
		"{\"count\": 2, \"last_hmac\": \"1111111111111111111111111111111111111111111111111111111111111111\", \"version\": 1}\n";
	struct audit_chain *c = NULL;
	char keypath[256], lockpath[256];
	struct diag d;
	int fd;

	(void)state;
	(void)snprintf(keypath, sizeof(keypath), "%s/audit.key", tmp);
	/* no directory and no AUDIT_OPEN_CREATE */
	assert_int_equal(audit_open_keyless(dir, keypath, &clk, 0, &c, &d), -ENOENT);
	assert_int_equal(audit_open_keyless(dir, "", &clk, 0, &c, &d), -EINVAL);
	/* an empty directory is fine, and is not touched */
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(audit_open_keyless(dir, keypath, &clk, 0, &c, &d), 0);
	c = audit_close(c);
	path_in(lockpath, sizeof(lockpath), AUDIT_LOCK_FILE);
	assert_false(exists(lockpath));
	assert_false(exists(keypath));
	/* the key file the first append finds is unusable (empty): -ENOKEY,
	 * not the -EINVAL of a bad record */
	assert_int_equal(audit_open_keyless(dir, keypath, &clk, 0, &c, &d), 0);
	fd = open(keypath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	(void)close(fd);
	assert_int_equal(audit_append(c, "ev", "a", "", "", NULL, &d), -ENOKEY);
	assert_non_null(strstr(d.msg, "empty"));
	c = audit_close(c);
	assert_int_equal(unlink(keypath), 0);
	/* state.json claims records that are gone */
	spit("state.json", state2, strlen(state2));
	assert_int_equal(audit_open_keyless(dir, keypath, &clk, 0, &c, &d), -EBADMSG);
	assert_non_null(strstr(d.msg, "truncated"));
	assert_false(exists(keypath));
}

/* The key appeared between the caller's look and the open (a concurrent
 * first writer): the chain is opened with it, as audit_open() would. */
static void test_keyless_key_appeared(void **state)
{
	struct audit_chain *c = NULL;
	char keypath[256];
	struct diag d;
	char *key = NULL;
	size_t keylen = 0;
	bool created = false;

	(void)state;
	(void)snprintf(keypath, sizeof(keypath), "%s/audit.key", tmp);
	assert_int_equal(audit_key_load(keypath, true, &key, &keylen, &created, &d), 0);
	assert_true(created);
	c = NULL;
	assert_int_equal(audit_open(dir, key, keylen, &clk, AUDIT_OPEN_CREATE, &c, &d), 0);
	append_n(c, 3, "unit.race");
	c = audit_close(c);
	assert_int_equal(audit_open_keyless(dir, keypath, &clk, 0, &c, &d), 0);
	assert_int_equal(audit_chain_count(c), 3);
	append_n(c, 1, "unit.race");
	assert_int_equal(audit_chain_count(c), 4);
	audit_close(c);
	key = audit_key_free(key, keylen);
}

/* The recorded end: the hot state in .lock round-trips and rejects junk; a
 * corrupt state.json stops writers and is a verification problem. */
static void test_state_files(void **state)
{
	struct audit_state st = {.count = 12345678901234ULL}, got;
	struct audit_chain *c = NULL;
	struct problems p;
	char path[256];
	struct diag d;
	int fd;

	(void)state;
	(void)snprintf(path, sizeof(path), "%s/lock", tmp);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(audit_state_hot_read(fd, &got), -ENODATA); /* empty */
	memcpy(st.last_hmac, AUDIT_GENESIS, sizeof(st.last_hmac));
	st.last_hmac[5] = 'f';
	assert_int_equal(audit_state_hot_write(fd, &st), 0);
	assert_int_equal(audit_state_hot_read(fd, &got), 0);
	assert_int_equal(got.count, st.count);
	assert_string_equal(got.last_hmac, st.last_hmac);
	assert_int_equal(pwrite(fd, "X", 1, 30), 1); /* a digit becomes junk */
	assert_int_equal(audit_state_hot_read(fd, &got), -ENODATA);
	(void)close(fd);

	make_chain(2);
	spit("state.json", "{\"count\": \"two\"}\n", 17);
	assert_int_equal(audit_open(dir, KEY, KEYLEN, &clk, 0, &c, &d), -EBADMSG);
	assert_non_null(strstr(d.file, "state.json"));
	assert_non_null(strstr(d.msg, "invalid audit state"));
	verify_with(KEY, &p);
	assert_int_equal(p.n, 1);
	expect_problem(&p, 0, "state.json", 0, "invalid audit state");
}

/* ---- tampering ---- */

static void test_tamper_flip_value(void **state)
{
	struct problems p;
	struct lines l;
	char *q;

	(void)state;
	make_chain(5);
	lines_read(&l, DAYFILE);
	q = strstr(l.v[2], "\"actor\": \"tester\"");
	assert_non_null(q);
	q[11] = 'T'; /* tester -> Tester */
	lines_write(&l, DAYFILE);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 1);
	expect_problem(&p, 0, DAYFILE, 3, "HMAC mismatch (expected ");
}

static void test_tamper_flip_hmac(void **state)
{
	struct problems p;
	struct lines l;
	char *q;

	(void)state;
	make_chain(5);
	lines_read(&l, DAYFILE);
	q = strstr(l.v[1], "\"hmac\": \"");
	assert_non_null(q);
	q[9] = q[9] == 'a' ? 'b' : 'a';
	lines_write(&l, DAYFILE);
	verify_with(KEY, &p);
	/* one problem: the next record still chains to the real MAC */
	assert_int_equal(p.n, 1);
	expect_problem(&p, 0, DAYFILE, 2, "HMAC mismatch");
}

static void test_tamper_delete_line(void **state)
{
	struct problems p;
	struct lines l;

	(void)state;
	make_chain(5);
	lines_read(&l, DAYFILE);
	free(l.v[1]);
	memmove(&l.v[1], &l.v[2], (l.n - 2) * sizeof(l.v[0]));
	l.n--;
	lines_write(&l, DAYFILE);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 2);
	expect_problem(&p, 0, DAYFILE, 2, "prev_hmac mismatch (expected ");
	expect_problem(&p, 1, DAYFILE, 5, "truncated tail (state says 5 records");
}

static void test_tamper_duplicate_line(void **state)
{
	struct problems p;
	struct lines l;

	(void)state;
	make_chain(5);
	lines_read(&l, DAYFILE);
	memmove(&l.v[3], &l.v[2], (l.n - 2) * sizeof(l.v[0]));
	l.v[2] = strdup(l.v[3]);
	l.n++;
	lines_write(&l, DAYFILE);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 2);
	expect_problem(&p, 0, DAYFILE, 4, "prev_hmac mismatch");
	/* record 5 is now the old record 4 */
	expect_problem(&p, 1, DAYFILE, 5, "chain does not match state (record 5 has MAC");
}

static void test_tamper_reorder(void **state)
{
	struct problems p;
	struct lines l;
	char *t;

	(void)state;
	make_chain(5);
	lines_read(&l, DAYFILE);
	t = l.v[1];
	l.v[1] = l.v[2];
	l.v[2] = t;
	lines_write(&l, DAYFILE);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 3);
	expect_problem(&p, 0, DAYFILE, 2, "prev_hmac mismatch");
	expect_problem(&p, 1, DAYFILE, 3, "prev_hmac mismatch");
	expect_problem(&p, 2, DAYFILE, 4, "prev_hmac mismatch");
}

static void test_tamper_truncate_tail(void **state)
{
	struct audit_verify_stats st;
	struct problems p;
	struct lines l;

	(void)state;
	make_chain(5);
	lines_read(&l, DAYFILE);
	free(l.v[--l.n]);
	lines_write(&l, DAYFILE);
	st = verify_with(KEY, &p);
	assert_int_equal(st.records, 4);
	assert_int_equal(p.n, 1);
	expect_problem(&p, 0, DAYFILE, 5, "truncated tail (state says 5 records / last MAC ");
	assert_non_null(strstr(p.msg[0], "chain has 4)"));
}

static void test_tamper_everything_deleted(void **state)
{
	struct problems p;
	char path[256];

	(void)state;
	make_chain(2);
	path_in(path, sizeof(path), DAYFILE);
	assert_int_equal(unlink(path), 0);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 1);
	expect_problem(&p, 0, "state.json", 0, "truncated tail (state says 2 records");
}

static void test_tamper_wrong_key(void **state)
{
	struct problems p;
	unsigned i;

	(void)state;
	make_chain(4);
	verify_with("another-key", &p);
	assert_int_equal(p.n, 4);
	for (i = 0; i < 4; i++)
		expect_problem(&p, i, DAYFILE, i + 1, "HMAC mismatch");
}

static void test_tamper_garbage_and_noncanonical(void **state)
{
	struct problems p;
	struct lines l;
	char *q;

	(void)state;
	make_chain(6);
	lines_read(&l, DAYFILE);
	free(l.v[1]);
	l.v[1] = strdup("not json at all\n");
	q = strstr(l.v[3], "\", \"details\"");
	assert_non_null(q);
	/* ", " -> ",  " : same data, other bytes */
	{
		size_t n = strlen(l.v[3]);
		char *nl = malloc(n + 2);
		size_t at = (size_t)(q - l.v[3]) + 2;

		memcpy(nl, l.v[3], at);
		nl[at] = ' ';
		memcpy(nl + at + 1, l.v[3] + at, n - at + 1);
		free(l.v[3]);
		l.v[3] = nl;
	}
	free(l.v[4]);
	l.v[4] = strdup("[1, 2]\n");
	lines_write(&l, DAYFILE);
	verify_with(KEY, &p);
	/* no cascade after the unreadable lines */
	assert_int_equal(p.n, 3);
	expect_problem(&p, 0, DAYFILE, 2, "invalid JSON - ");
	expect_problem(&p, 1, DAYFILE, 4, "non-canonical line bytes");
	expect_problem(&p, 2, DAYFILE, 5, "entry is not a JSON object");
}

static void test_empty_line_and_trailing_newline(void **state)
{
	struct problems p;
	struct lines l;
	char *data;
	size_t len;

	(void)state;
	make_chain(3);
	lines_read(&l, DAYFILE);
	memmove(&l.v[2], &l.v[1], (l.n - 1) * sizeof(l.v[0]));
	l.v[1] = strdup("\n");
	l.n++;
	lines_write(&l, DAYFILE);
	data = slurp(DAYFILE, &len);
	spit(DAYFILE, data, len - 1); /* drop the final '\n' */
	free(data);
	verify_with(KEY, &p);
	assert_int_equal(p.n, 2);
	expect_problem(&p, 0, DAYFILE, 2, "empty line");
	expect_problem(&p, 1, DAYFILE, 4, "missing trailing newline");
}

/* ---- the verifier as a stream ---- */

static void test_verifier_chunking_and_long_lines(void **state)
{
	char *chain = NULL, *big;
	struct audit_verifier *v;
	struct audit_verify_stats st;
	struct problems p;
	size_t len, i;

	(void)state;
	make_chain(20);
	chain = slurp(DAYFILE, &len);

	/* byte by byte: the same result as in one piece */
	memset(&p, 0, sizeof(p));
	v = audit_verifier_new(KEY, KEYLEN, collect, &p);
	audit_verifier_set_state(v, 20, AUDIT_GENESIS, "s");
	audit_verifier_begin_file(v, "x.jsonl");
	for (i = 0; i < len; i++)
		audit_verifier_feed(v, chain + i, 1);
	audit_verifier_end_file(v);
	audit_verifier_finish(v);
	audit_verifier_stats(v, &st);
	audit_verifier_free(v);
	assert_int_equal(st.records, 20);
	/* only the state check, which was given a wrong MAC on purpose */
	assert_int_equal(p.n, 1);
	expect_problem(&p, 0, "x.jsonl", 20, "chain does not match state (record 20 has MAC");

	/* an over-long line is one problem, then the chain goes on */
	big = malloc(AUDIT_LINE_MAX + 11);
	memset(big, 'x', AUDIT_LINE_MAX + 10);
	big[AUDIT_LINE_MAX + 10] = '\n';
	memset(&p, 0, sizeof(p));
	v = audit_verifier_new(KEY, KEYLEN, collect, &p);
	audit_verifier_begin_file(v, "y.jsonl");
	audit_verifier_feed(v, chain, 300); /* part of line 1 */
	audit_verifier_feed(v, chain + 300, len - 300);
	audit_verifier_feed(v, big, 1000);
	audit_verifier_feed(v, big + 1000, AUDIT_LINE_MAX + 11 - 1000);
	audit_verifier_feed(v, big, AUDIT_LINE_MAX); /* unterminated, exactly the cap */
	audit_verifier_end_file(v);
	audit_verifier_stats(v, &st);
	audit_verifier_free(v);
	assert_int_equal(st.records, 22);
	assert_int_equal(p.n, 3);
	expect_problem(&p, 0, "y.jsonl", 21, "line longer than 1048576 bytes");
	expect_problem(&p, 1, "y.jsonl", 22, "invalid JSON - ");
	expect_problem(&p, 2, "y.jsonl", 22, "missing trailing newline");
	free(big);
	free(chain);
}

/* The payload is cut out of the canonical text: "hmac" first, last, alone,
 * and lookalikes in keys, nested objects and strings. Lines from Python. */
static void test_hmac_member_positions(void **state)
{
	static const char chain[] =
		"{\"hmac\": \"64560be65208b45aabc530763539d8cfafc0157c793e467b7988fe1fc419fda6\", \"prev_hmac\": \"0000000000000000000000000000000000000000000000000000000000000000\"}\n"
		"{\"a\\\"hmac\\\": \": {\"hmac\": \"nested\"}, \"details\": [{\"hmac\": 1}, \"\\\"hmac\\\": \\\"x\\\", \"], \"hmac\": \"56a9e251ec952088956013fe7d29ad4235f947b55fa43ccd751f8cb79b9de649\", \"prev_hmac\": \"64560be65208b45aabc530763539d8cfafc0157c793e467b7988fe1fc419fda6\", \"z\": \"\\\\\"}\n"
		"{\"HMAC\": \"upper\", \"hmac\": \"485027d09b795ecae9b3bd0eecb0d81f1bc7fa1b4882cf7789c08ddfbf66dcd3\", \"hmac0\": 1, \"prev_hmac\": \"56a9e251ec952088956013fe7d29ad4235f947b55fa43ccd751f8cb79b9de649\", \"\\u00e9\": \"\\u00e9\"}\n"
		"{\"hmac\": \"cebaba593292593b9c411e62ce0d4992e1622a16828737d2af1077fca5333735\"}\n";
	struct audit_verify_stats st;
	struct audit_verifier *v;
	struct problems p;

	(void)state;
	memset(&p, 0, sizeof(p));
	v = audit_verifier_new(KEY, KEYLEN, collect, &p);
	audit_verifier_begin_file(v, "m.jsonl");
	audit_verifier_feed(v, chain, sizeof(chain) - 1);
	audit_verifier_end_file(v);
	audit_verifier_finish(v);
	audit_verifier_stats(v, &st);
	audit_verifier_free(v);
	assert_int_equal(st.records, 4);
	/* every MAC verifies; only the last record lacks a prev_hmac */
	assert_int_equal(p.n, 1);
	expect_problem(&p, 0, "m.jsonl", 4, "prev_hmac missing or not a string");
}

struct read_ctx {
	unsigned records, bad;
	unsigned last_line;
	unsigned cancel_at; /* stop with -ECANCELED after this many records */
};

static int on_record(void *userdata, const char *file, unsigned line, const char *raw, size_t len,
		     const json_t *record)
{
	struct read_ctx *rc = userdata;

	(void)file;
	(void)raw;
	(void)len;
	if (record) {
		assert_string_equal(json_string_value(json_object_get(record, "actor")), "tester");
		rc->records++;
	} else {
		rc->bad++;
	}
	rc->last_line = line;
	return rc->records == rc->cancel_at ? -ECANCELED : 0;
}

static void test_read(void **state)
{
	struct read_ctx rc = {.cancel_at = 100}, stop = {.cancel_at = 2};
	struct lines l;
	struct diag d;

	(void)state;
	make_chain(4);
	lines_read(&l, DAYFILE);
	free(l.v[2]);
	l.v[2] = strdup("\"a string\"\n");
	lines_write(&l, DAYFILE);
	assert_int_equal(audit_read(dir, on_record, &rc, &d), 0);
	assert_int_equal(rc.records, 3);
	assert_int_equal(rc.bad, 1);
	assert_int_equal(rc.last_line, 4);
	/* the callback's error stops the read and is passed on */
	assert_int_equal(audit_read(dir, on_record, &stop, &d), -ECANCELED);
	assert_int_equal(stop.records, 2);
	assert_int_equal(stop.last_line, 2);
	assert_int_equal(audit_read("/nonexistent/audit", on_record, &rc, &d), -ENOENT);
}

/* ---- the writers' check of the chain's end ---- */

/* audit_open() over the chain as it is: its error (0 when it opened). */
static int try_open(struct diag *d)
{
	struct audit_chain *c = NULL;
	int r;

	diag_clear(d);
	r = audit_open(dir, KEY, KEYLEN, &clk, 0, &c, d);
	audit_close(c);
	return r;
}

/* A record chained to prev, MAC'd with another key: what someone without
 * the key can append. */
static char *forged_line(const char *prev)
{
	struct audit_scratch sc;
	struct hash_hmac *mac = NULL;
	struct sbuf line = SBUF_INIT(SIZE_MAX);
	char hmac[AUDIT_HMAC_HEX_LEN + 1];
	struct diag d;

	audit_scratch_init(&sc);
	assert_int_equal(hash_hmac_new("not-the-key", 11, &mac), 0);
	assert_int_equal(audit_record_build(&sc, mac, prev, "2025-11-30T11:03:57.000000Z", "forged",
					    "agent", "task", "t1", NULL, &line, hmac, &d),
			 0);
	hash_hmac_free(mac);
	audit_scratch_release(&sc);
	return sbuf_detach(&line, NULL);
}

/* Every way the newest file can be broken stops writers, and nothing is
 * written; the remnants of a crash do not. */
static void test_writer_refuses_broken_end(void **state)
{
	struct audit_chain *c;
	char *orig, *forged, last[AUDIT_HMAC_HEX_LEN + 1];
	struct problems p;
	struct lines l;
	struct diag d;
	size_t len;

	(void)state;
	make_chain(4);
	c = open_chain(KEY);
	memcpy(last, audit_chain_last_hmac(c), sizeof(last));
	audit_close(c);
	orig = slurp(DAYFILE, &len);

	/* a value changed in the middle: its MAC fails, the ones before verify */
	lines_read(&l, DAYFILE);
	l.v[1][strlen(l.v[1]) - 10] ^= 1;
	lines_write(&l, DAYFILE);
	assert_int_equal(try_open(&d), -EKEYREJECTED);
	assert_int_equal(d.line, 2);
	assert_non_null(strstr(d.msg, "refusing to append"));

	/* a line duplicated, deleted, swapped: it does not chain */
	spit(DAYFILE, orig, len);
	lines_read(&l, DAYFILE);
	l.v[l.n++] = strdup(l.v[3]);
	lines_write(&l, DAYFILE);
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_int_equal(d.line, 5);
	assert_non_null(strstr(d.msg, "prev_hmac mismatch"));
	spit(DAYFILE, orig, len);
	lines_read(&l, DAYFILE);
	free(l.v[1]);
	l.v[1] = l.v[3];
	l.n = 3;
	lines_write(&l, DAYFILE);
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_int_equal(d.line, 2);

	/* a record appended without the key */
	spit(DAYFILE, orig, len);
	forged = forged_line(last);
	lines_read(&l, DAYFILE);
	l.v[l.n++] = forged;
	lines_write(&l, DAYFILE);
	assert_int_equal(try_open(&d), -EKEYREJECTED);
	assert_int_equal(d.line, 5);

	/* a line that is no record at the end, an empty line, extra spaces */
	spit(DAYFILE, orig, len);
	lines_read(&l, DAYFILE);
	l.v[l.n++] = strdup("{\"oops\n");
	lines_write(&l, DAYFILE);
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_int_equal(d.line, 5);
	assert_non_null(strstr(d.msg, "not a record"));
	spit(DAYFILE, orig, len);
	lines_read(&l, DAYFILE);
	l.v[l.n++] = strdup("\n");
	lines_write(&l, DAYFILE);
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_non_null(strstr(d.msg, "empty line"));
	spit(DAYFILE, orig, len);
	lines_read(&l, DAYFILE);
	{
		char *sp;

		l.v[2] = realloc(l.v[2], strlen(l.v[2]) + 2); /* room for one more */
		assert_non_null(l.v[2]);
		sp = strstr(l.v[2], "\", \"details\"");
		assert_non_null(sp);
		memmove(sp + 3, sp + 2, strlen(sp + 2) + 1);
		sp[2] = ' ';
		lines_write(&l, DAYFILE);
	}
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_int_equal(d.line, 3);
	assert_non_null(strstr(d.msg, "non-canonical"));

	/* a line that is no record put between two that chain: they chain, but
	 * the count is not state.json's */
	spit(DAYFILE, orig, len);
	lines_read(&l, DAYFILE);
	memmove(&l.v[3], &l.v[2], 2 * sizeof(l.v[0]));
	l.v[2] = strdup("{\"actor\": \"ha\n");
	l.n++;
	lines_write(&l, DAYFILE);
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_non_null(strstr(d.file, "state.json"));
	verify_with(KEY, &p);
	assert_int_equal(p.n, 2); /* the line, and state.json's count */
	expect_problem(&p, 0, DAYFILE, 3, "invalid JSON - ");

	/* nothing of all this was written by the refused writers */
	spit(DAYFILE, orig, len);
	assert_int_equal(try_open(&d), 0);
	{
		size_t n;
		char *now = slurp(DAYFILE, &n);

		assert_int_equal(n, len);
		free(now);
	}
	free(orig);
}

/* What another process appends between two appends of a handle is checked
 * before the handle appends again; a file replaced or truncated meanwhile
 * is checked from the start, and the hot state catches records removed
 * before state.json was written. */
static void test_writer_checks_appends_by_others(void **state)
{
	struct audit_chain *c, *c2;
	struct lines l;
	struct diag d;
	char *forged;

	(void)state;
	make_chain(2);
	c = open_chain(KEY);
	c2 = open_chain(KEY);
	append_n(c2, 1, "other"); /* another writer: fine */
	append_n(c, 1, "mine");
	assert_int_equal(audit_chain_count(c), 4);
	forged = forged_line(audit_chain_last_hmac(c));
	lines_read(&l, DAYFILE);
	l.v[l.n++] = forged;
	lines_write(&l, DAYFILE);
	assert_int_equal(audit_append(c, "next", "a", "", "", NULL, &d), -EKEYREJECTED);
	assert_int_equal(d.line, 5);
	audit_close(c2);
	audit_close(c);

	/* in a batch (state.json not yet written) the last records go */
	lines_read(&l, DAYFILE);
	free(l.v[--l.n]);
	lines_write(&l, DAYFILE);
	c = open_chain(KEY);
	audit_batch_begin(c);
	append_n(c, 3, "batched");
	lines_read(&l, DAYFILE);
	free(l.v[--l.n]);
	free(l.v[--l.n]);
	lines_write(&l, DAYFILE); /* a new file: the handle starts over */
	assert_int_equal(audit_append(c, "next", "a", "", "", NULL, &d), -EBADMSG);
	assert_non_null(strstr(d.file, ".lock"));
	assert_non_null(strstr(d.msg, "truncated"));
	audit_close(c);
	/* a later writer sees it too, and so does verify */
	assert_int_equal(try_open(&d), -EBADMSG);
}

/* The writer reads the file before the newest from its end only: a changed
 * record at its end is found, one further up only by audit verify. */
static void test_writer_window_two_files(void **state)
{
	struct audit_chain *c = open_chain(KEY);
	char *orig1, *orig2;
	struct problems p;
	struct lines l;
	struct diag d;
	size_t len1, len2;

	(void)state;
	append_n(c, 3, "day1");
	clock_fixed_init(&clk, T0 + DAY_NS, 0);
	append_n(c, 2, "day2");
	audit_close(c);
	clock_fixed_init(&clk, T0, 0);
	orig1 = slurp(DAYFILE, &len1);
	orig2 = slurp("2025-12-01.jsonl", &len2);
	assert_int_equal(try_open(&d), 0);

	/* the last record of the first file removed: the second does not chain */
	lines_read(&l, DAYFILE);
	free(l.v[--l.n]);
	lines_write(&l, DAYFILE);
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_non_null(strstr(d.file, "2025-12-01.jsonl"));
	assert_int_equal(d.line, 1);

	/* a record in the middle of the first file changed: writers go on (they
	 * read the newest file only), verify reports it */
	spit(DAYFILE, orig1, len1);
	lines_read(&l, DAYFILE);
	l.v[0][strlen(l.v[0]) - 10] ^= 1;
	lines_write(&l, DAYFILE);
	assert_int_equal(try_open(&d), 0);
	verify_with(KEY, &p);
	expect_problem(&p, 0, DAYFILE, 1, "HMAC mismatch");

	/* the newest file replaced by one that starts the chain over */
	spit(DAYFILE, orig1, len1);
	spit("2025-12-01.jsonl", orig2, len2);
	{
		char path[256];

		path_in(path, sizeof(path), DAYFILE);
		assert_int_equal(unlink(path), 0);
	}
	assert_int_equal(try_open(&d), -EBADMSG);
	free(orig1);
	free(orig2);
}

/* A chain entry that is not a regular file: verify reports it, writers
 * stop, no one blocks on a FIFO. */
static void test_writer_refuses_odd_entries(void **state)
{
	struct problems p;
	char path[256];
	struct diag d;

	(void)state;
	make_chain(2);
	path_in(path, sizeof(path), "2099-01-01.jsonl");
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_non_null(strstr(d.msg, "is a FIFO (not a regular file)"));
	verify_with(KEY, &p);
	assert_int_equal(p.n, 1);
	expect_problem(&p, 0, "2099-01-01.jsonl", 0, "is a FIFO (not a regular file)");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_non_null(strstr(d.msg, "is a symbolic link"));
	verify_with(KEY, &p);
	expect_problem(&p, 0, "2099-01-01.jsonl", 0, "is a symbolic link (not a regular file)");
	assert_int_equal(unlink(path), 0);
	path_in(path, sizeof(path), "state.json");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(try_open(&d), -EBADMSG);
	assert_non_null(strstr(d.msg, "is a FIFO"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(try_open(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_resolve),
		cmocka_unit_test_setup_teardown(test_key_create_and_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_permissions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_known_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_verify_python_written_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tricky_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_day_files_and_clock_going_back, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_ends_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_hot_and_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail_recovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses_truncated_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses_other_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_missing_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keyless_creates_on_first_record, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_keyless_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keyless_key_appeared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_flip_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_flip_hmac, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_delete_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_duplicate_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_reorder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_truncate_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_everything_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_wrong_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_garbage_and_noncanonical, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_empty_line_and_trailing_newline, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_verifier_chunking_and_long_lines, setup,
						teardown),
		cmocka_unit_test(test_hmac_member_positions),
		cmocka_unit_test_setup_teardown(test_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_refuses_broken_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_checks_appends_by_others, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_writer_window_two_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_refuses_odd_entries, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
