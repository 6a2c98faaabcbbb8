/* Selection benchmark for src/route/: select_adapter() over a catalogue of N
 * generated capability profiles (default 1,000), the median time of one
 * select in three cases, printed next to a baseline measured in the same run
 * (a plain strcmp loop over the N names looking for the last one). Target:
 * under 1 ms per select. It prints; it asserts nothing about time (exit 1
 * only when the selection itself misbehaves).
 *
 *   last     the only profile that satisfies the task is the last in
 *            catalogue order: every profile is checked
 *   refusal  nothing satisfies the task: every profile is checked and the
 *            refusal receipt (N candidates) is built, canonicalised, hashed
 *   first    nothing is required: the first profile wins
 *
 * usage: route [-n PROFILES] [-r RUNS] */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adapter/catalog.h"
#include "adapter/profile.h"
#include "route/requirements.h"
#include "route/select.h"
#include "util/sbuf.h"

static volatile size_t sink; /* keeps the baseline loop from being optimised away */

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

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* Profile i of n: a mix of capabilities; only the last has vision and a
 * microvm sandbox; none has computer_use. */
static int add_profile(struct catalog *cat, size_t i, size_t n)
{
	static const char *const tiers[] = {"none", "process", "container"};
	struct sbuf y = SBUF_INIT(SIZE_MAX);
	char name[32];
	struct diag d;
	int r;

	(void)snprintf(name, sizeof(name), "p%05zu", i);
	r = sbuf_addf(&y,
		      "name: %s\ndisplay_name: \"P %zu\"\nshape: module\n"
		      "invocation:\n  binary: agent-%zu\n  prompt_positional: true\n"
		      "capabilities:\n  tool_use: %s\n  streaming: %s\n  mcp_client: %s\n"
		      "  sandbox: %s\n  max_parallel_workers: %zu\n",
		      name, i, i, i % 2 ? "true" : "false", i % 3 ? "true" : "false",
		      i % 5 ? "true" : "false", i == n - 1 ? "microvm" : tiers[i % 3], 1 + i % 8);
	if (r == 0 && i == n - 1)
		r = sbuf_adds(&y, "  vision: true\n");
	if (r == 0)
		r = catalog_add_profile_buf(cat, name, "bench.yaml", y.buf, y.len, &d);
	if (r < 0)
		(void)fprintf(stderr, "route-bench: profile %s: %s\n", name, d.msg);
	sbuf_release(&y);
	return r;
}

struct bench_case {
	const char *name;
	const char *const *tokens;
	size_t ntokens;
	int want_r;
	const char *want_chosen; /* NULL: the last profile */
};

int main(int argc, char **argv)
{
	static const char *const last[] = {"capability:vision", "capability:sandbox=microvm"};
	static const char *const refusal[] = {"capability:computer_use",
					      "capability:sandbox=container"};
	const struct bench_case cases[] = {
		{"last", last, 2, 0, NULL},
		{"refusal", refusal, 2, -ENOTSUP, NULL},
		{"first", NULL, 0, 0, "p00000"},
	};
	size_t n = 1000, runs = 301, i, k;
	uint64_t *t = NULL, base;
	struct catalog *cat = NULL;
	const char **names = NULL;
	char lastname[32];
	int c, ret = 1;

	while ((c = getopt(argc, argv, "n:r:")) != -1) {
		switch (c) {
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			runs = strtoul(optarg, NULL, 10);
			break;
		default:
			(void)fprintf(stderr, "usage: route [-n PROFILES] [-r RUNS]\n");
			return 2;
		}
	}
	if (n < 1 || n > 99999 || runs < 1) {
		(void)fprintf(stderr, "route-bench: -n 1..99999, -r >= 1\n");
		return 2;
	}
	cat = catalog_new();
	for (i = 0; i < n; i++)
		if (add_profile(cat, i, n) < 0)
			goto out;
	(void)snprintf(lastname, sizeof(lastname), "p%05zu", n - 1);
	t = calloc(runs, sizeof(*t));
	names = calloc(n, sizeof(const char *));
	if (!t || !names)
		goto out;
	for (i = 0; i < n; i++)
		names[i] = cat->entries[i]->name;

	/* baseline: find the last name by strcmp over all N */
	for (k = 0; k < runs; k++) {
		uint64_t t0 = now_ns();
		size_t hit = n;

		for (i = 0; i < n; i++)
			if (strcmp(names[i], lastname) == 0)
				hit = i;
		sink = hit;
		t[k] = now_ns() - t0;
	}
	base = median(t, runs);
	if (base == 0)
		base = 1;
	(void)printf("route selection: %zu profiles, median of %zu runs\n", n, runs);
	(void)printf("  %-22s %10.1f us\n", "baseline (strcmp loop)", (double)base / 1e3);

	for (c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++) {
		struct requirements req = REQUIREMENTS_INIT;
		struct select_input in = {.cat = cat, .req = &req};
		struct diag d;
		uint64_t med;

		if (requirements_parse(cases[c].tokens, cases[c].ntokens, &req, &d) < 0) {
			(void)fprintf(stderr, "route-bench: %s\n", d.msg);
			goto out;
		}
		/* one warm-up select (profile hashes are computed on first use) */
		for (k = 0; k <= runs; k++) {
			struct selection s;
			uint64_t t0 = now_ns();
			int r = select_adapter(&in, &s, &d);
			uint64_t dt = now_ns() - t0;
			const char *want = cases[c].want_chosen ? cases[c].want_chosen : lastname;

			if (r != cases[c].want_r || (r == 0 && strcmp(s.chosen->name, want) != 0) ||
			    (r == -ENOTSUP && s.n_considered != n)) {
				(void)fprintf(stderr,
					      "route-bench: case %s: unexpected result %d\n",
					      cases[c].name, r);
				selection_release(&s);
				goto out;
			}
			selection_release(&s);
			if (k > 0)
				t[k - 1] = dt;
		}
		med = median(t, runs);
		(void)printf("  %-22s %10.1f us  %6.1fx baseline  (target < 1000 us: %s)\n",
			     cases[c].name, (double)med / 1e3, (double)med / (double)base,
			     med < 1000000 ? "met" : "MISSED");
	}
	ret = 0;
out:
	free((void *)names);
	free(t);
	catalog_free(cat);
	return ret;
}
