/* Fuzz target for the git ref file parsers (orch/gitref.c): the content of a
 * loose ref file and of packed-refs, both written by the agents bernstein
 * runs. The first byte of the input selects what the rest is:
 *   - bit 0 clear: a loose ref, parsed with a target buffer of
 *     {1100, 16, 1, 64}[(b >> 1) & 3] bytes;
 *   - bit 0 set: packed-refs, in which {"refs/heads/main", "refs/tags/v1.0",
 *     "HEAD", "refs/heads/a/b"}[(b >> 1) & 3] is looked up.
 * ('0' is a loose ref, '1' packed-refs looked up for refs/heads/main.) The
 * rest, up to its first NUL, also goes to gitref_name_ok. Properties, besides
 * never crashing:
 *   - an object id returned is 40 or 64 lower-case hex digits, and is the
 *     whole loose file (less one final newline), or the id of a line
 *     "<oid> <name>\n" of packed-refs;
 *   - a symbolic ref's target fits the buffer, passes gitref_name_ok and is
 *     the whole file after "ref: ";
 *   - any other return is -EBADMSG, and an output not returned is untouched;
 *   - a name gitref_name_ok accepts obeys git-check-ref-format's rules. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "orch/gitref.h"
#include "util/banned.h"

static bool is_oid(const char *s)
{
	size_t n = strlen(s), i;

	if (n != 40 && n != 64)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool untouched(const char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != '\x7f')
			return false;
	return true;
}

static bool has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

/* What git-check-ref-format says of a name gitref_name_ok accepts. */
static void check_name(const char *name)
{
	size_t n = strlen(name), i;

	if (!gitref_name_ok(name))
		return;
	if (strcmp(name, "HEAD") == 0)
		return;
	if (n < 6 || n > 1024 || strncmp(name, "refs/", 5) != 0 || name[n - 1] == '/' ||
	    name[n - 1] == '.' || has(name, "..") || has(name, "//") || has(name, "/.") ||
	    has(name, "@{") || has(name, ".lock/") ||
	    (n >= 5 && strcmp(name + n - 5, ".lock") == 0))
		__builtin_trap();
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c <= ' ' || c >= 0x7f || strchr("~^:?*[\\", c))
			__builtin_trap();
	}
}

static void fuzz_loose(const char *text, size_t size, unsigned sel)
{
	static const size_t sizes[] = {1100, 16, 1, 64};
	size_t tsize = sizes[sel], len = size;
	char oid[GITREF_OID_MAX + 1], target[1100];
	int r;

	memset(oid, '\x7f', sizeof(oid));
	memset(target, '\x7f', sizeof(target));
	r = gitref_parse_loose(text, size, oid, target, tsize);
	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (r == 1) {
		if (!is_oid(oid) || strlen(oid) != len || memcmp(oid, text, len) != 0 ||
		    !untouched(target, sizeof(target)))
			__builtin_trap();
	} else if (r == 2) {
		size_t n = strnlen(target, sizeof(target));

		if (n >= tsize || !gitref_name_ok(target) || len != 5 + n ||
		    memcmp(text, "ref: ", 5) != 0 || memcmp(text + 5, target, n) != 0 ||
		    !untouched(oid, sizeof(oid)) ||
		    !untouched(target + n + 1, sizeof(target) - n - 1))
			__builtin_trap();
		check_name(target);
	} else if (r != -EBADMSG || !untouched(oid, sizeof(oid)) ||
		   !untouched(target, sizeof(target))) {
		__builtin_trap();
	}
}

static void fuzz_packed(const char *text, size_t size, unsigned sel)
{
	static const char *const names[] = {"refs/heads/main", "refs/tags/v1.0", "HEAD",
					    "refs/heads/a/b"};
	const char *name = names[sel];
	char oid[GITREF_OID_MAX + 1], *line;
	size_t n;
	int r;

	memset(oid, '\x7f', sizeof(oid));
	r = gitref_parse_packed(text, size, name, oid);
	if (r == 0 || r == -EBADMSG) {
		if (!untouched(oid, sizeof(oid)))
			__builtin_trap();
		return;
	}
	if (r != 1 || !is_oid(oid))
		__builtin_trap();
	/* the line "<oid> <name>\n" is in the input, at its start or after a newline */
	n = strlen(oid) + 1 + strlen(name) + 1;
	line = malloc(n + 2);
	if (!line)
		return;
	line[0] = '\n';
	memcpy(line + 1, oid, strlen(oid));
	line[1 + strlen(oid)] = ' ';
	memcpy(line + 2 + strlen(oid), name, strlen(name));
	line[n] = '\n';
	if (!((size >= n && memcmp(text, line + 1, n) == 0) || memmem(text, size, line, n + 1)))
		__builtin_trap();
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;
	char *copy;
	unsigned b;

	if (size == 0)
		return 0;
	b = data[0];
	size--;
	if (b & 1)
		fuzz_packed(text, size, (b >> 1) & 3);
	else
		fuzz_loose(text, size, (b >> 1) & 3);

	copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy, text, size);
	copy[size] = '\0';
	check_name(copy);
	free(copy);
	return 0;
}
