/* Fuzz target for the audit chain verifier: the input is one chain file,
 * verified with a fixed key (the seeds in fuzz/corpus/audit/ are chains made
 * with the same key, so mutations start from records whose MACs verify).
 * Properties, besides never crashing:
 *   - every problem goes through the callback, with a non-empty message and
 *     a line number within the input's line count;
 *   - the result does not depend on how the bytes are chunked: the input fed
 *     whole and fed in three pieces (split points from its first bytes) gives
 *     the same problems, in the same order, and the same record count;
 *   - the fast path changes nothing (differential): the verifier with and
 *     without it (AUDIT_CHECK_NO_FAST) reports the same problems, and for
 *     every line the canonical scanner accepts, the jansson path agrees it
 *     is a canonical object with the same prev_hmac, hmac and MAC;
 *   - the writers' check (audit_open() over the input as the one chain
 *     file, audit-end.c) agrees with the verifier: a chain the verifier
 *     finds intact is accepted, and a chain a writer accepts has no problem
 *     but the crash remnants it lets through (lines that are not records,
 *     an unterminated last line). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit-internal.h"
#include "audit/audit.h"
#include "fuzz/fuzz.h"
#include "util/hash.h"
#include "util/banned.h"

#include <errno.h>

#define FUZZ_KEY "fuzz-key"

struct seen {
	uint64_t n;
	unsigned max_line;
	uint8_t digest[SHA256_LEN]; /* running hash of "line:msg" */
	uint64_t hard;		    /* problems a writer must refuse (not crash remnants) */
	uint64_t soft;		    /* lines that are not records, an unterminated last line */
	uint64_t state;		    /* about the recorded end */
};

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void on_problem(void *userdata, const char *file, unsigned line, const char *msg)
{
	struct seen *s = userdata;
	uint8_t next[SHA256_LEN];
	const void *parts[4] = {s->digest, &line, msg, file};
	size_t lens[4] = {sizeof(s->digest), sizeof(line), strlen(msg), strlen(file)};

	/* located in the chain file, or (truncated to nothing) at the state */
	if (!msg[0] ||
	    (strcmp(file, "fuzz.jsonl") != 0 && (strcmp(file, "state.json") != 0 || line != 0)))
		__builtin_trap();
	if (line > s->max_line)
		s->max_line = line;
	if (starts_with(msg, "truncated tail") || starts_with(msg, "chain does not match state"))
		s->state++; /* the run's recorded end: the writer's check has none */
	else if (starts_with(msg, "invalid JSON") ||
		 starts_with(msg, "entry is not a JSON object") ||
		 starts_with(msg, "missing trailing newline"))
		s->soft++;
	else
		s->hard++;
	if (hash_hmac_sha256("k", 1, parts, lens, 4, next) < 0)
		__builtin_trap();
	memcpy(s->digest, next, sizeof(next));
	s->n++;
}

static void run(const uint8_t *data, size_t size, size_t a, size_t b, unsigned flags,
		struct seen *s, struct audit_verify_stats *st)
{
	struct audit_verifier *v = audit_verifier_new(FUZZ_KEY, strlen(FUZZ_KEY), on_problem, s);

	audit_verifier_set_check_flags(v, flags);

	/* a recorded end, so the truncation checks run too */
	audit_verifier_set_state(v, size % 7, AUDIT_GENESIS, "state.json");
	audit_verifier_begin_file(v, "fuzz.jsonl");
	audit_verifier_feed(v, data, a);
	audit_verifier_feed(v, data + a, b - a);
	audit_verifier_feed(v, data + b, size - b);
	audit_verifier_end_file(v);
	audit_verifier_finish(v);
	audit_verifier_stats(v, st);
	audit_verifier_free(v);
}

static bool same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* One line through both paths: whenever the fast one decides, the slow one
 * must reach the same verdict. */
static void differential_line(struct audit_scratch *sc, struct hash_hmac *mac, const char *line,
			      size_t len)
{
	struct audit_record fast, slow;

	if (audit_record_check(sc, mac, line, len, 0, &fast) < 0)
		__builtin_trap();
	if (!fast.fast) {
		audit_record_release(&fast);
		return;
	}
	if (audit_record_check(sc, mac, line, len, AUDIT_CHECK_NO_FAST, &slow) < 0)
		__builtin_trap();
	if (slow.fast || slow.kind != AUDIT_RECORD_OBJECT || !slow.canonical || !slow.prev ||
	    !slow.hmac || !same_bytes(fast.prev, fast.prevlen, slow.prev, slow.prevlen) ||
	    !same_bytes(fast.hmac, fast.hmaclen, slow.hmac, slow.hmaclen) ||
	    strcmp(fast.computed, slow.computed) != 0 || fast.mac_ok != slow.mac_ok)
		__builtin_trap();
	audit_record_release(&slow);
	audit_record_release(&fast);
}

static void differential_lines(const uint8_t *data, size_t size)
{
	struct audit_scratch sc;
	struct hash_hmac *mac = NULL;
	size_t start = 0, i;

	if (hash_hmac_new(FUZZ_KEY, strlen(FUZZ_KEY), &mac) < 0)
		__builtin_trap();
	audit_scratch_init(&sc);
	for (i = 0; i <= size; i++) {
		if (i < size && data[i] != '\n')
			continue;
		if (i > start)
			differential_line(&sc, mac, (const char *)data + start, i - start);
		start = i + 1;
	}
	audit_scratch_release(&sc);
	hash_hmac_free(mac);
}

/* A scratch audit directory for the writers' check, removed at exit. */
static char wdir[64], wfile[96], wlock[96];

static void wdir_remove(void)
{
	(void)unlink(wfile);
	(void)unlink(wlock);
	(void)rmdir(wdir);
}

/* audit_open() over data as the chain's one file: its result. */
static int writer_check(const uint8_t *data, size_t size)
{
	struct audit_chain *c = NULL;
	struct diag d;
	FILE *f;
	int r;

	if (!wdir[0]) {
		(void)snprintf(wdir, sizeof(wdir), "/tmp/fuzz-audit-XXXXXX");
		if (!mkdtemp(wdir))
			__builtin_trap();
		(void)snprintf(wfile, sizeof(wfile), "%s/2025-01-01.jsonl", wdir);
		(void)snprintf(wlock, sizeof(wlock), "%s/.lock", wdir);
		(void)atexit(wdir_remove);
	}
	f = fopen(wfile, "we");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		__builtin_trap();
	(void)unlink(wlock); /* no hot state from an earlier input */
	r = audit_open(wdir, FUZZ_KEY, strlen(FUZZ_KEY), NULL, 0, &c, &d);
	if ((r < 0) != (c == NULL) || (r < 0 && !d.msg[0]))
		__builtin_trap();
	audit_close(c);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole = {0}, split = {0}, slow = {0};
	struct audit_verify_stats st1, st2, st3;
	size_t a = 0, b = 0, lines = 1, i;

	if (size >= 2) {
		a = data[0] % (size + 1);
		b = a + data[1] % (size - a + 1);
	}
	run(data, size, size, size, 0, &whole, &st1);
	run(data, size, a, b, 0, &split, &st2);
	run(data, size, a, b, AUDIT_CHECK_NO_FAST, &slow, &st3);
	if (st1.problems != whole.n || st2.problems != split.n || st3.problems != slow.n)
		__builtin_trap();
	if (whole.n != split.n || st1.records != st2.records ||
	    memcmp(whole.digest, split.digest, sizeof(whole.digest)) != 0)
		__builtin_trap();
	if (whole.n != slow.n || st1.records != st3.records ||
	    memcmp(whole.digest, slow.digest, sizeof(whole.digest)) != 0 ||
	    strcmp(st1.last_hmac, st3.last_hmac) != 0)
		__builtin_trap();
	differential_lines(data, size);
	{
		/* the verifier's run above had a recorded end (size % 7): the
		 * writer's has none, so only the lines count here */
		int r = writer_check(data, size);

		if (whole.hard == 0 && whole.soft == 0 && r < 0)
			__builtin_trap();
		if (r == 0 && whole.hard != 0)
			__builtin_trap();
	}
	for (i = 0; i < size; i++)
		if (data[i] == '\n')
			lines++;
	/* +1: a truncated tail is located after the last line */
	if (whole.max_line > lines + 1 || st1.records > lines)
		__builtin_trap();
	return 0;
}
