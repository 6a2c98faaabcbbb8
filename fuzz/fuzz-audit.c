/* Fuzz target for the audit chain verifier: the input is one chain file,
 * verified with a fixed key (the seeds in fuzz/corpus/audit/ are chains made
 * with the same key, so mutations start from records whose MACs verify).
 * Properties, besides never crashing:
 *   - every problem goes through the callback, with a non-empty message and
 *     a line number within the input's line count;
 *   - the result does not depend on how the bytes are chunked: the input fed
 *     whole and fed in three pieces (split points from its first bytes) gives
 *     the same problems, in the same order, and the same record count. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "fuzz/fuzz.h"
#include "util/hash.h"
#include "util/banned.h"

#define FUZZ_KEY "fuzz-key"

struct seen {
	uint64_t n;
	unsigned max_line;
	uint8_t digest[SHA256_LEN]; /* running hash of "line:msg" */
};

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
	if (hash_hmac_sha256("k", 1, parts, lens, 4, next) < 0)
		__builtin_trap();
	memcpy(s->digest, next, sizeof(next));
	s->n++;
}

static void run(const uint8_t *data, size_t size, size_t a, size_t b, struct seen *s,
		struct audit_verify_stats *st)
{
	struct audit_verifier *v = audit_verifier_new(FUZZ_KEY, strlen(FUZZ_KEY), on_problem, s);

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole = {0}, split = {0};
	struct audit_verify_stats st1, st2;
	size_t a = 0, b = 0, lines = 1, i;

	if (size >= 2) {
		a = data[0] % (size + 1);
		b = a + data[1] % (size - a + 1);
	}
	run(data, size, size, size, &whole, &st1);
	run(data, size, a, b, &split, &st2);
	if (st1.problems != whole.n || st2.problems != split.n)
		__builtin_trap();
	if (whole.n != split.n || st1.records != st2.records ||
	    memcmp(whole.digest, split.digest, sizeof(whole.digest)) != 0)
		__builtin_trap();
	for (i = 0; i < size; i++)
		if (data[i] == '\n')
			lines++;
	/* +1: a truncated tail is located after the last line */
	if (whole.max_line > lines + 1 || st1.records > lines)
		__builtin_trap();
	return 0;
}
