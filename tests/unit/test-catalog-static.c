/* The embedded profiles as static data (catalog_static_profiles[], written
 * at build time by scripts/catalog-static.c through adapter/catalog-cgen.h)
 * are the profiles the full checking path loads from the embedded YAML
 * (catalog_add_embedded_parsed(): libyaml, every schema check, the pty
 * patterns compiled), field by field: the C each one would be written as
 * (every field of every struct, which catalog-cgen.c's size asserts keep
 * complete), and explicitly the canonical bytes and hash (also recomputed
 * from the static fields), notes, source, origins, the inline strategy,
 * runtime.pty's patterns (which still compile) and the files' content and
 * mode. The static profiles are read-only memory: the catalogue's use of
 * them (hash, gates, free) would crash on a write. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "adapter/catalog.h"
#include "adapter/catalog-cgen.h"
#include "adapter/profile.h"
#include "proc/ptydrive.h"
#include "util/diag.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/sbuf.h"

static struct catalog *parsed;

static int setup(void **state)
{
	struct diag d;

	(void)state;
	memset(&d, 0, sizeof(d));
	parsed = catalog_new();
	if (catalog_add_embedded_parsed(parsed, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	parsed = catalog_free(parsed);
	return 0;
}

static size_t static_count(void)
{
	size_t n = 0;

	while (catalog_static_profiles[n])
		n++;
	return n;
}

/* p written as C, the way the generator writes it */
static char *cgen(const struct profile *p)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	assert_int_equal(catalog_cgen_profile(p, "p", &sb), 0);
	return sbuf_detach(&sb, NULL);
}

static void assert_same_str(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void assert_same_origin(const struct catalog_origin *a, const struct catalog_origin *b)
{
	assert_same_str(a->file, b->file);
	assert_int_equal(a->line, b->line);
	assert_int_equal(a->col, b->col);
}

static void assert_same_strv(const struct profile_strv *a, const struct profile_strv *b)
{
	size_t i;

	assert_int_equal(a->n, b->n);
	assert_int_equal(!a->v, !b->v);
	for (i = 0; a->v && i <= a->n; i++) /* and the NULL */
		assert_same_str(a->v[i], b->v[i]);
	for (i = 0; i < a->n; i++)
		assert_same_origin(&a->at[i], &b->at[i]);
}

static void assert_same_files(const struct profile_files *a, const struct profile_files *b)
{
	size_t i;

	assert_int_equal(a->n, b->n);
	for (i = 0; i < a->n; i++) {
		assert_string_equal(a->v[i].path, b->v[i].path);
		assert_int_equal(a->v[i].mode, b->v[i].mode);
		assert_string_equal(a->v[i].content, b->v[i].content);
		assert_same_origin(&a->v[i].origin, &b->v[i].origin);
	}
}

static void assert_same_pty(const struct ptydrive_conf *a, const struct ptydrive_conf *b)
{
	struct diag d;
	size_t i;

	assert_int_equal(a->declared, b->declared);
	assert_same_str(a->ready, b->ready);
	assert_same_str(a->working, b->working);
	assert_same_str(a->done, b->done);
	assert_int_equal(a->n_ignore, b->n_ignore);
	for (i = 0; i < a->n_ignore; i++)
		assert_same_str(a->ignore[i], b->ignore[i]);
	assert_int_equal(a->n_perms, b->n_perms);
	for (i = 0; i < a->n_perms; i++) {
		assert_same_str(a->perms[i].pattern, b->perms[i].pattern);
		assert_same_str(a->perms[i].allow, b->perms[i].allow);
		assert_same_str(a->perms[i].deny, b->perms[i].deny);
	}
	/* compiled on first use by the driver, as before: they still compile */
	if (a->declared && ptydrive_conf_check(a, &d) < 0)
		fail_msg("%s", d.msg);
}

/* The canonical bytes stored in s are what its fields canonicalise to
 * now, and the hash is theirs. */
static void assert_cache_true(const struct profile *s)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	char hex[SHA256_HEX_LEN + 1];
	json_t *j = profile_canonical(s);
	size_t len = 0;
	const char *canon = profile_canonical_bytes(s, &len);

	assert_int_equal(json_canon_jcs(j, &sb), 0);
	json_decref(j);
	assert_int_equal(sb.len, len);
	assert_memory_equal(sb.buf, canon, len + 1);
	hash_sha256_hex(sb.buf, sb.len, hex);
	assert_string_equal(hex, profile_hash(s));
	sbuf_release(&sb);
}

static void assert_same_profile(const struct profile *s, const struct profile *p)
{
	char *cs = cgen(s), *cp = cgen(p);
	size_t ls = 0, lp = 0;
	const char *bs = profile_canonical_bytes(s, &ls), *bp = profile_canonical_bytes(p, &lp);

	/* every field, as the generator writes it */
	assert_string_equal(cs, cp);
	free(cs);
	free(cp);
	/* and what matters most, one by one */
	assert_string_equal(s->source, p->source);
	assert_string_equal(s->name, p->name);
	assert_int_equal(ls, lp);
	assert_memory_equal(bs, bp, ls + 1);
	assert_string_equal(profile_hash(s), profile_hash(p));
	assert_cache_true(s);
	assert_same_str(s->notes, p->notes);
	assert_same_origin(&s->origin, &p->origin);
	assert_same_origin(&s->invocation.binary_at, &p->invocation.binary_at);
	assert_same_origin(&s->caps.vision_at, &p->caps.vision_at);
	assert_same_strv(&s->invocation.extra_args, &p->invocation.extra_args);
	assert_same_strv(&s->invocation.env_passthrough, &p->invocation.env_passthrough);
	assert_int_equal(!s->strategy, !p->strategy);
	if (s->strategy) {
		assert_memory_equal(&s->strategy->strategy, &p->strategy->strategy,
				    sizeof(s->strategy->strategy));
		assert_memory_equal(s->strategy->axis_declared, p->strategy->axis_declared,
				    sizeof(s->strategy->axis_declared));
		assert_same_origin(&s->strategy->origin, &p->strategy->origin);
		assert_same_str(s->strategy->note, p->strategy->note);
	}
	assert_same_files(&s->runtime.files, &p->runtime.files);
	assert_same_files(&s->runtime.endpoint.files, &p->runtime.endpoint.files);
	assert_same_files(&s->runtime.hooks.files, &p->runtime.hooks.files);
	assert_same_pty(&s->runtime.pty, &p->runtime.pty);
}

/* Every static profile is the parsed one, in the same (file name) order,
 * and there are as many. */
static void test_static_equals_parsed(void **state)
{
	size_t i, n = static_count(), pty = 0, files = 0;

	(void)state;
	assert_true(n >= 39);
	assert_int_equal(n, parsed->n_profiles);
	for (i = 0; i < n; i++) {
		const struct profile *s = catalog_static_profiles[i];

		assert_same_profile(s, parsed->profiles[i]);
		pty += s->runtime.pty.declared;
		files += s->runtime.files.n > 0;
	}
	/* the comparison covered the parts that are not plain strings (no
	 * embedded profile has an inline strategy: test_cgen_strategy) */
	assert_true(pty > 0);
	assert_true(files > 0);
}

/* The comparison is not blind: one origin's column, one file's mode, one
 * pty pattern changed in a copy make the written C differ. */
static void test_comparison_sees_a_change(void **state)
{
	const struct profile *s = NULL;
	struct profile copy;
	struct profile_file f;
	char *a, *b;
	size_t i;

	(void)state;
	for (i = 0; catalog_static_profiles[i]; i++)
		if (catalog_static_profiles[i]->runtime.pty.declared &&
		    catalog_static_profiles[i]->runtime.files.n)
			s = catalog_static_profiles[i];
	if (!s)
		for (i = 0; catalog_static_profiles[i]; i++)
			if (catalog_static_profiles[i]->runtime.files.n)
				s = catalog_static_profiles[i];
	if (!s || !s->runtime.files.v) {
		fail_msg("no embedded profile writes a file");
		return;
	}
	a = cgen(s);
	memcpy(&copy, s, sizeof(copy));
	copy.invocation.binary_at.col++;
	b = cgen(&copy);
	assert_string_not_equal(a, b);
	free(b);
	memcpy(&copy, s, sizeof(copy));
	f = s->runtime.files.v[0];
	f.mode ^= 0100;
	copy.runtime.files.v = &f;
	copy.runtime.files.n = 1;
	b = cgen(&copy);
	assert_string_not_equal(a, b);
	free(b);
	memcpy(&copy, s, sizeof(copy));
	copy.runtime.pty.idle_done_ms++;
	b = cgen(&copy);
	assert_string_not_equal(a, b);
	free(b);
	free(a);
}

/* No embedded profile declares an inline strategy (yet): what the writer
 * makes of one, every axis, its origins and its note. */
static void test_cgen_strategy(void **state)
{
	static const char y[] =
		"name: mini\ndisplay_name: Mini\nshape: factory\n"
		"invocation: {binary: mini-agent, prompt_positional: true}\n"
		"strategy: {resume: unsupported, dangerous_mode: cli-flag, event_channel: text-signals, note: \"pro\\\"se\"}\n";
	struct profile *p = NULL;
	struct diag d;
	char *c;

	(void)state;
	if (profile_load_buf("mini.yaml", "mini", y, sizeof(y) - 1, &p, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	c = cgen(p);
	assert_non_null(strstr(c, "\t.strategy = &(const struct strategy_decl){\n"));
	assert_non_null(strstr(c, ".axis_declared = {true, true, true, false, false},\n"));
	assert_non_null(strstr(c, "{.file = p_source, .line = 5, .col = 20},\n"));
	assert_non_null(strstr(c, ".note = \"pro\\\"se\",\n"));
	assert_non_null(strstr(c, "static const char p_source[] = \"mini.yaml\";\n"));
	free(c);
	profile_free(p);
}

/* The static tables are the parsed ones: the catalogue made of them writes
 * the same C as the parsed catalogue, table by table and field by field
 * (test-catalog-compiled.c compares them one by one too). */
static void test_tables_equal_parsed(void **state)
{
	struct sbuf a = SBUF_INIT(SIZE_MAX), b = SBUF_INIT(SIZE_MAX);
	struct catalog *cat = catalog_new();
	struct diag d;

	(void)state;
	memset(&d, 0, sizeof(d));
	if (catalog_add_embedded(cat, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	assert_int_equal(catalog_cgen_tables(cat, &a), 0);
	assert_int_equal(catalog_cgen_tables(parsed, &b), 0);
	assert_string_equal(a.buf, b.buf);
	assert_non_null(strstr(a.buf, "static const struct matrix_row static_rows[] = {\n"));
	assert_non_null(strstr(a.buf, "static const struct registry_entry static_entries[] = {\n"));
	assert_non_null(strstr(a.buf, "static const struct use_case static_use_cases[] = {\n"));
	assert_non_null(strstr(a.buf, "static const struct role_preamble static_roles[] = {\n"));
	assert_int_equal(catalog_static_tables.n_rows, parsed->n_rows);
	assert_int_equal(catalog_static_tables.n_roles, parsed->n_roles);
	/* and it sees a change */
	cat->roles[0] = cat->roles[1];
	sbuf_reset(&a);
	assert_int_equal(catalog_cgen_tables(cat, &a), 0);
	assert_string_not_equal(a.buf, b.buf);
	catalog_free(cat);
	sbuf_release(&a);
	sbuf_release(&b);
}

/* The catalogue serves the static profiles without owning or writing them:
 * they are read-only memory (a write would crash this test), and the whole
 * catalogue's gates pass over them as over the parsed ones. */
static void test_catalogue_uses_static(void **state)
{
	struct catalog *cat = catalog_new();
	struct diag_list is = PROFILE_ISSUES_INIT;
	struct diag d;
	size_t i;

	(void)state;
	memset(&d, 0, sizeof(d));
	if (catalog_add_embedded(cat, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	assert_int_equal(cat->n_profiles, 0);
	for (i = 0; catalog_static_profiles[i]; i++) {
		const struct profile *s = catalog_static_profiles[i];
		const struct registry_entry *e = catalog_find(cat, s->name);

		assert_non_null(e);
		assert_ptr_equal(e->profile, s);
		assert_int_equal(e->layer, 0);
		assert_int_equal(catalog_check_profile(cat, s, 0, &is), 0);
		(void)profile_hash(s);
	}
	diag_list_release(&is);
	if (catalog_validate(cat, NULL, NULL, &d) < 0)
		fail_msg("%s:%u:%u: %s", d.file, d.line, d.col, d.msg);
	catalog_free(cat); /* frees none of them */
	assert_non_null(catalog_static_profiles[0]->name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_equals_parsed),
		cmocka_unit_test(test_comparison_sees_a_change),
		cmocka_unit_test(test_cgen_strategy),
		cmocka_unit_test(test_tables_equal_parsed),
		cmocka_unit_test(test_catalogue_uses_static),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
