/* Fuzz target for the mock agent's instruction parser (the prompt is
 * untrusted input): arbitrary bytes in, with and without a HOME. On success
 * every instruction must be well formed (a valid op, its line within the
 * prompt, paths and markers relative and confined lexically, numbers in
 * range, strings NUL-terminated with the stated length); on failure the
 * error is one of the documented ones with a line and column. Every path and
 * marker also goes through the .git/.bernstein name check the instructions
 * meet when they run (a plain .git component must be refused). Only parsing:
 * nothing is run. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "orch/mock.h"
#include "util/beneath.h"

static void check_rel(const char *p)
{
	size_t n = p ? strlen(p) : 0;
	int r;

	if (!p || beneath_check_relpath(p, n, NULL) < 0)
		abort();
	r = beneath_check_names(p, n, BENEATH_NO_GIT | BENEATH_NO_BERNSTEIN, NULL);
	if (r != 0 && r != -EPERM)
		abort();
	if (r == 0 && (strcmp(p, ".git") == 0 || strncmp(p, ".git/", 5) == 0 ||
		       strstr(p, "/.git/") || (n >= 5 && strcmp(p + n - 5, "/.git") == 0)))
		abort();
}

static void check(const char *data, size_t size, const char *home)
{
	struct mock_script s;
	struct diag d = {0};
	unsigned lines = 1;
	size_t i;
	int r;

	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	r = mock_parse(data, size, home, &s, &d);
	if (r < 0) {
		if (r != -EINVAL && r != -EPERM && r != -E2BIG)
			abort();
		if (d.line < 1 || d.line > lines || d.col < 1 || strcmp(d.file, "prompt") != 0)
			abort();
		mock_script_release(&s);
		return;
	}
	if (s.n > MOCK_MAX_INSTRUCTIONS)
		abort();
	for (i = 0; i < s.n; i++) {
		const struct mock_instr *in = &s.v[i];

		if (!mock_op_to_string(in->op) || in->line < 1 || in->line > lines)
			abort();
		if (i > 0 && in->line <= s.v[i - 1].line)
			abort();
		if (in->text && strlen(in->text) != in->text_len)
			abort();
		if (in->marker)
			check_rel(in->marker);
		switch (in->op) {
		case MOCK_WRITE:
		case MOCK_APPEND:
			if (!in->text)
				abort();
			check_rel(in->path);
			break;
		case MOCK_DELETE:
			check_rel(in->path);
			break;
		case MOCK_COMMIT:
			if (!in->text || in->text_len == 0)
				abort();
			break;
		case MOCK_SLEEP:
		case MOCK_RATE_LIMIT:
			if (!(in->seconds >= 0 && in->seconds <= MOCK_SLEEP_MAX))
				abort();
			break;
		case MOCK_EXIT:
			if (in->a < 0 || in->a > 255)
				abort();
			break;
		case MOCK_USAGE:
			if (in->a < 0 || in->b < 0)
				abort();
			break;
		case MOCK_SESSION:
			if (!in->text || mock_session_id_check(in->text, NULL) < 0)
				abort();
			break;
		case MOCK_SAY:
		case MOCK_HANG:
		case MOCK_FAIL:
		case _MOCK_OP_MAX:
		case _MOCK_OP_INVALID:
		default:
			break;
		}
	}
	if (s.session_id && mock_session_id_check(s.session_id, NULL) < 0)
		abort();
	mock_script_release(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check((const char *)data, size, NULL);
	check((const char *)data, size, "/home/agent");
	return 0;
}
