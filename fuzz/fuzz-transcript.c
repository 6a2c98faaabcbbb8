/* Fuzz target for onboarding transcripts: the strict loader on arbitrary
 * bytes, then, for what loads, the invariants of a loaded transcript: it
 * writes back to YAML that loads to the same transcript and writes the same
 * bytes again (a fixed point), the recorded invocation passes its own check
 * and builds an argv for every step. The input is also tried as a prompt
 * (the writer must carry any UTF-8 string through YAML unchanged) and as
 * evidence. */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "onboard/evidence.h"
#include "onboard/transcript.h"
#include "onboard/yemit.h"
#include "util/sbuf.h"
#include "util/strvec.h"

static void same_strv(const struct transcript_strv *a, const struct transcript_strv *b)
{
	size_t i;

	if (a->n != b->n || a->v[a->n] || b->v[b->n])
		abort();
	for (i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			abort();
}

static void same_str(const char *a, const char *b)
{
	if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
		abort();
}

static void same_transcript(const struct transcript *a, const struct transcript *b)
{
	size_t i;

	same_str(a->name, b->name);
	same_str(a->adapter_class, b->adapter_class);
	same_str(a->inv.registry_name, b->inv.registry_name);
	same_str(a->inv.display_name, b->inv.display_name);
	same_str(a->inv.binary, b->inv.binary);
	same_strv(&a->inv.subcommands, &b->inv.subcommands);
	same_str(a->inv.model_flag, b->inv.model_flag);
	same_str(a->inv.prompt_flag, b->inv.prompt_flag);
	if (a->inv.prompt_positional != b->inv.prompt_positional)
		abort();
	same_strv(&a->inv.extra_args, &b->inv.extra_args);
	same_strv(&a->inv.env_passthrough, &b->inv.env_passthrough);
	if (a->n_steps != b->n_steps)
		abort();
	for (i = 0; i < a->n_steps; i++) {
		same_str(a->steps[i].prompt, b->steps[i].prompt);
		same_str(a->steps[i].model, b->steps[i].model);
		same_strv(&a->steps[i].inner_argv, &b->steps[i].inner_argv);
	}
}

static void check_loaded(const struct transcript *t)
{
	struct sbuf y1 = SBUF_INIT(SIZE_MAX), y2 = SBUF_INIT(SIZE_MAX);
	struct transcript *u = NULL;
	struct diag d;
	size_t i;

	if (!transcript_name_valid(t->name) || transcript_invocation_check(&t->inv, &d) < 0)
		abort();
	for (i = 0; i < t->n_steps; i++) {
		struct strvec argv = STRVEC_INIT;

		if (t->steps[i].inner_argv.n == 0 || t->steps[i].line == 0)
			abort();
		if (transcript_build_argv(&t->inv, t->steps[i].model, t->steps[i].prompt, NULL,
					  &argv) < 0)
			abort();
		if (argv.nr < 2 || strcmp(argv.v[0], t->inv.binary) != 0)
			abort();
		strvec_clear(&argv);
	}
	/* libyaml only lets valid UTF-8 through, so the writer never refuses */
	if (transcript_emit(t, &y1) < 0)
		abort();
	if (transcript_load_buf("again.yaml", y1.buf, y1.len, &u, &d) < 0)
		abort();
	same_transcript(t, u);
	if (transcript_emit(u, &y2) < 0 || y1.len != y2.len || memcmp(y1.buf, y2.buf, y1.len))
		abort();
	transcript_free(u);
	sbuf_release(&y1);
	sbuf_release(&y2);
}

/* The input as a prompt and a model: through the writer and back. */
static void check_prompt(const char *s, size_t len)
{
	static const char *const none[] = {NULL};
	const struct recorded_invocation inv = {
		.registry_name = "fuzz",
		.display_name = "Fuzz",
		.binary = "fuzz-agent",
		.subcommands = {none, 0},
		.model_flag = "--model",
		.prompt_flag = "-p",
		.extra_args = {none, 0},
		.env_passthrough = {none, 0},
	};
	struct sbuf y = SBUF_INIT(SIZE_MAX);
	struct transcript *t, *u = NULL;
	struct diag d;
	int r;

	if (memchr(s, '\0', len))
		return;
	t = transcript_new("fuzz", &inv);
	if (transcript_add_step(t, s, s) < 0)
		abort();
	r = transcript_emit(t, &y);
	if (r < 0) {
		if (yemit_utf8_valid(s, len) || y.len)
			abort(); /* only invalid UTF-8 is refused, and then nothing is written */
		transcript_free(t);
		sbuf_release(&y);
		return;
	}
	if (transcript_load_buf("prompt.yaml", y.buf, y.len, &u, &d) < 0)
		abort();
	same_transcript(t, u);
	transcript_free(t);
	transcript_free(u);
	sbuf_release(&y);
}

static void check_evidence(const char *s, size_t len)
{
	struct sbuf y1 = SBUF_INIT(SIZE_MAX), y2 = SBUF_INIT(SIZE_MAX);
	struct evidence *e = NULL, *f = NULL;
	struct diag d;

	diag_clear(&d);
	if (evidence_load_buf("e.yaml", s, len, &e, &d) < 0) {
		if (e || !d.msg[0])
			abort();
		return;
	}
	if (evidence_emit(e, &y1) < 0 || evidence_load_buf("e2.yaml", y1.buf, y1.len, &f, &d) < 0)
		abort();
	if (evidence_emit(f, &y2) < 0 || y1.len != y2.len || memcmp(y1.buf, y2.buf, y1.len))
		abort();
	evidence_free(e);
	evidence_free(f);
	sbuf_release(&y1);
	sbuf_release(&y2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct transcript *t = NULL;
	struct diag d;
	char *copy;

	diag_clear(&d);
	if (transcript_load_buf("fuzz.yaml", s, size, &t, &d) < 0) {
		if (t || !d.msg[0])
			abort(); /* a failure always says why, and returns nothing */
	} else {
		check_loaded(t);
		transcript_free(t);
	}
	if (size <= 4096) {
		copy = malloc(size + 1);
		if (!copy)
			abort();
		memcpy(copy, data, size);
		copy[size] = '\0';
		check_prompt(copy, size);
		free(copy);
	}
	check_evidence(s, size);
	return 0;
}
