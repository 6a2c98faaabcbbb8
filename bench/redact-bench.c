/* Redaction benchmark for src/util/redact.c: the cost of redacting every
 * line an agent prints (agentrun does it for each line, then again for the
 * strings of each event), next to baselines measured in the same run:
 *
 *   copy     the line copied into a buffer (what a line costs with no secret)
 *   parse    json_loadb() of the line (what the dialect does to it anyway)
 *   memmem   the redactor this one replaced: raw bytes only, restarting a
 *            memmem() per match and per secret
 *   redact   redact_apply() with three secrets (raw and every decoded view)
 *
 * The lines are a stream-json mix: short assistant text with escapes, a long
 * tool result full of \n and \" (a file's content), a plain text line, and
 * one line in 50 holding a key. It prints MB/s and ratios; it asserts
 * nothing about time (exit 1 only if a key survives).
 *
 * usage: redact-bench [-m MIB] [-r ROUNDS] */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/redact.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#define KEY "sk-bench-\"q\\b\tc-0123456789abcdef"

static volatile size_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The old invocation_redact(), for comparison. */
static void old_redact(const struct strvec *secrets, const char *s, size_t len, struct sbuf *out)
{
	size_t i = 0, k;

	while (i < len) {
		const char *first = NULL;
		size_t first_len = 0;

		for (k = 0; k < secrets->nr; k++) {
			size_t n = strlen(secrets->v[k]);
			const char *at;

			if (n < 8 || n > len - i)
				continue;
			at = memmem(s + i, len - i, secrets->v[k], n);
			if (at && (!first || at < first || (at == first && n > first_len))) {
				first = at;
				first_len = n;
			}
		}
		if (!first) {
			(void)sbuf_add(out, s + i, len - i);
			return;
		}
		(void)sbuf_add(out, s + i, (size_t)(first - (s + i)));
		(void)sbuf_adds(out, REDACT_MARK);
		i = (size_t)(first - s) + first_len;
	}
}

/* One stream-json line (JSON, escaped by jansson), the kth of the mix. */
static char *make_line(size_t k)
{
	struct sbuf text = SBUF_INIT(SIZE_MAX);
	json_t *o;
	char *d;
	size_t i;

	switch (k % 4) {
	case 0:
		(void)sbuf_adds(&text, "I'll look at \"src/main.c\" first.\nThen the tests.");
		break;
	case 1:
		for (i = 0; i < 400; i++)
			(void)sbuf_addf(&text, "\tline %zu: printf(\"%%s\\n\", x);\n", i);
		break;
	case 2:
		(void)sbuf_adds(&text, "Running the test suite now, this may take a while");
		break;
	default:
		(void)sbuf_adds(&text, "short reply");
		break;
	}
	if (k % 50 == 7)
		(void)sbuf_adds(&text, " key: " KEY);
	o = json_pack("{s:s, s:{s:[{s:s, s:s}]}}", "type", "assistant", "message", "content",
		      "type", "text", "text", text.buf);
	d = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	sbuf_release(&text);
	return d;
}

int main(int argc, char **argv)
{
	size_t mib = 16, rounds = 5, n_lines = 0, total = 0, i, r, c;
	struct strvec secrets = STRVEC_INIT;
	struct redact *rd = redact_new();
	char **lines = NULL;
	size_t *lens = NULL;
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	uint64_t t[4][32];
	static const char *const names[] = {"copy", "parse", "memmem", "redact"};
	int opt, bad = 0;

	while ((opt = getopt(argc, argv, "m:r:")) != -1) {
		if (opt == 'm')
			mib = strtoul(optarg, NULL, 10);
		else if (opt == 'r')
			rounds = strtoul(optarg, NULL, 10);
		else
			return 2;
	}
	if (mib == 0 || rounds == 0 || rounds > 32)
		return 2;
	strvec_push(&secrets, KEY);
	strvec_push(&secrets, "ghp_bench0123456789abcdefghij");
	strvec_push(&secrets, "bench-hook-secret-value");
	for (i = 0; i < secrets.nr; i++)
		(void)redact_add(rd, secrets.v[i]);
	while (total < (mib << 20)) {
		lines = xrealloc(lines, (n_lines + 1) * sizeof(*lines));
		lens = xrealloc(lens, (n_lines + 1) * sizeof(*lens));
		lines[n_lines] = make_line(n_lines);
		lens[n_lines] = strlen(lines[n_lines]);
		total += lens[n_lines];
		n_lines++;
	}

	for (r = 0; r < rounds; r++) {
		for (c = 0; c < 4; c++) {
			uint64_t t0 = now_ns();

			for (i = 0; i < n_lines; i++) {
				sbuf_reset(&out);
				switch (c) {
				case 0:
					(void)sbuf_add(&out, lines[i], lens[i]);
					break;
				case 1: {
					json_t *v = json_loadb(lines[i], lens[i], 0, NULL);

					sink += v != NULL;
					json_decref(v);
					break;
				}
				case 2:
					old_redact(&secrets, lines[i], lens[i], &out);
					break;
				default:
					(void)redact_apply(rd, lines[i], lens[i], 0, &out);
					break;
				}
				sink += out.len;
			}
			t[c][r] = now_ns() - t0;
		}
	}
	for (c = 0; c < 4; c++)
		qsort(t[c], rounds, sizeof(t[c][0]), cmp_u64);
	printf("redact: %zu lines, %.1f MiB, 3 secrets, median of %zu rounds\n", n_lines,
	       (double)total / (1 << 20), rounds);
	for (c = 0; c < 4; c++) {
		double s = (double)t[c][rounds / 2] / 1e9;

		printf("  %-7s %8.1f MB/s  %6.2fx copy  %6.2fx parse\n", names[c],
		       (double)total / 1e6 / s, (double)t[c][rounds / 2] / (double)t[0][rounds / 2],
		       (double)t[c][rounds / 2] / (double)t[1][rounds / 2]);
	}
	/* untimed: nothing survived */
	for (i = 0; i < n_lines; i++) {
		sbuf_reset(&out);
		(void)redact_apply(rd, lines[i], lens[i], 0, &out);
		if (redact_found(rd, out.buf, out.len) ||
		    (i % 50 == 7 && !strstr(out.buf, REDACT_MARK)))
			bad = 1;
	}
	if (bad)
		printf("redact: a key survived the redaction\n");

	for (i = 0; i < n_lines; i++)
		free(lines[i]);
	free(lines);
	free(lens);
	sbuf_release(&out);
	strvec_clear(&secrets);
	redact_free(rd);
	return bad;
}
