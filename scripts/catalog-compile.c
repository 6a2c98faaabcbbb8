/* Build-time generator: the YAML files of catalog/ as ready-made trees.
 *
 * usage: catalog-compile CATALOG_DIR OUTPUT.c [DEPFILE]
 *
 * The *.yaml files of CATALOG_DIR that are read from a tree at run time
 * (compiled_names below) are each loaded with the same strict loader bernstein uses at run time
 * (util/yaml.c: yaml_load_buf, default limits) and written out as C
 * initialisers without pointers (util/ycompiled.h): one array of every node
 * of every file, one array of child indices, one byte pool of the scalars,
 * all read-only data that needs no relocation at start-up. The table
 * catalog_compiled[] (src/adapter/catalog.h) maps each file's name, relative
 * to CATALOG_DIR ("profiles/claude.yaml"), to its root node, sorted by name,
 * ending with a NULL row. At start-up each tree becomes a struct ydoc in one
 * linear pass (ydoc_from_compiled()) and the catalogue hands it to the
 * same schema code that checks a parsed file, so libyaml never runs for the
 * embedded catalogue, and a new key needs no change here: the tree is the
 * document, whatever its keys.
 *
 * Only the prices are read that way now (parsed when a price is first
 * asked, catalog_pricing()): the profiles and the other tables are static
 * structs (scripts/catalog-static.c), and the contracts are parsed from
 * their bytes (catalog_embedded[]) when the gates run. Nothing at run time
 * needs their trees, so the binary carries none.
 *
 * A file the loader refuses fails the build with FILE:LINE:COL. The optional
 * depfile lists every file and directory read, so adding, removing or
 * editing a catalogue file regenerates the output. Exit 0, 1 on a load or
 * I/O error, 2 on a usage error. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/yaml.h"

struct gen {
	struct sbuf nodes; /* initialisers of nodes[] */
	struct sbuf ptrs;  /* initialisers of ptrs[] */
	struct sbuf pool;  /* initialisers of pool[] */
	size_t n_nodes, n_ptrs, n_pool;
	size_t pool_col; /* bytes on the current pool line */
};

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names go into C string literals: printable ASCII only. */
static bool name_printable(const char *s)
{
	for (; *s; s++)
		if (*s < 32 || *s > 126)
			return false;
	return true;
}

/* The files compiled: top-level names of CATALOG_DIR. */
static const char *const compiled_names[] = {"pricing.yaml", NULL};

static bool compiled(const char *rel, const char *name)
{
	size_t i;

	for (i = 0; !rel[0] && compiled_names[i]; i++)
		if (strcmp(name, compiled_names[i]) == 0)
			return true;
	return false;
}

/* Every *.yaml under root/rel (rel "" for the top) that is compiled, as
 * paths relative to root, into files; every directory read into dirs. */
static int collect(const char *root, const char *rel, struct strvec *files, struct strvec *dirs)
{
	struct strvec names = STRVEC_INIT;
	struct sbuf path = SBUF_INIT(PATH_MAX);
	struct dirent *de;
	DIR *d = NULL;
	size_t i;
	int r = 0;

	if (sbuf_addf(&path, "%s%s%s", root, rel[0] ? "/" : "", rel) < 0)
		return -ENAMETOOLONG;
	strvec_push(dirs, path.buf);
	d = opendir(path.buf);
	if (!d) {
		r = -errno;
		(void)fprintf(stderr, "catalog-compile: cannot read '%s': %s\n", path.buf,
			      strerror(errno));
		goto out;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && compiled(rel, de->d_name))
			strvec_push(&names, de->d_name);
	qsort((void *)names.v, names.nr, sizeof(*names.v), cmp_cstr);
	for (i = 0; i < names.nr; i++) {
		struct sbuf sub = SBUF_INIT(PATH_MAX), full = SBUF_INIT(PATH_MAX);
		size_t n = strlen(names.v[i]);
		struct stat st;

		r = sbuf_addf(&sub, "%s%s%s", rel, rel[0] ? "/" : "", names.v[i]);
		if (r >= 0)
			r = sbuf_addf(&full, "%s/%s", root, sub.buf);
		if (r >= 0 && stat(full.buf, &st) < 0)
			r = -errno;
		if (r >= 0 && S_ISDIR(st.st_mode))
			r = collect(root, sub.buf, files, dirs);
		else if (r >= 0 && S_ISREG(st.st_mode) && n > 5 &&
			 strcmp(names.v[i] + n - 5, ".yaml") == 0) {
			if (strpbrk(sub.buf, "\"\\?") || !name_printable(sub.buf)) {
				(void)fprintf(stderr,
					      "catalog-compile: unsupported file name '%s'\n",
					      sub.buf);
				r = -EINVAL;
			} else {
				strvec_push(files, sub.buf);
			}
		}
		sbuf_release(&sub);
		sbuf_release(&full);
		if (r < 0)
			goto out;
	}
out:
	if (d)
		(void)closedir(d);
	strvec_clear(&names);
	sbuf_release(&path);
	return r;
}

/* The scalar's bytes and a NUL appended to the pool; its offset. */
static size_t pool_add(struct gen *g, const char *s, size_t len)
{
	size_t off = g->n_pool, i;

	for (i = 0; i <= len; i++) {
		unsigned char c = i < len ? (unsigned char)s[i] : 0;

		if (g->pool_col == 0)
			(void)sbuf_add(&g->pool, "\t", 1);
		/* a byte above 0x7f as a character constant: pool[] is char,
		 * signed here, and a plain 226 would not fit it */
		if (c > 0x7f)
			(void)sbuf_addf(&g->pool, "'\\x%02x',", c);
		else
			(void)sbuf_addf(&g->pool, "%u,", c);
		if (++g->pool_col == 24) {
			(void)sbuf_add(&g->pool, "\n", 1);
			g->pool_col = 0;
		}
	}
	g->n_pool += len + 1;
	return off;
}

/* Emits node and, depth first, its children; returns node's index. The
 * node's slot is taken before its children's, so a file's root is its
 * first node and its nodes are contiguous. */
static size_t emit(struct gen *g, const struct ynode *n)
{
	size_t self = g->n_nodes++, *kids = NULL, *keys = NULL, i, base = 0;
	struct sbuf line = SBUF_INIT(SIZE_MAX);
	size_t off = 0;

	if (n->kind == YNODE_SCALAR)
		off = pool_add(g, n->str, n->len);
	if (n->n) {
		kids = xcalloc(n->n, sizeof(*kids));
		if (n->kind == YNODE_MAP)
			keys = xcalloc(n->n, sizeof(*keys));
		for (i = 0; i < n->n; i++) {
			if (keys)
				keys[i] = emit(g, n->keys[i]);
			kids[i] = emit(g, n->items[i]);
		}
		/* items at base, keys (maps) right after them */
		base = g->n_ptrs;
		for (i = 0; i < n->n; i++)
			(void)sbuf_addf(&g->ptrs, "\t%zu,\n", kids[i]);
		g->n_ptrs += n->n;
		if (keys) {
			for (i = 0; i < n->n; i++)
				(void)sbuf_addf(&g->ptrs, "\t%zu,\n", keys[i]);
			g->n_ptrs += n->n;
		}
	}
	(void)sbuf_addf(&line, "\t[%zu] = {.kind = %s, .line = %u, .col = %u", self,
			n->kind == YNODE_SCALAR ? "YNODE_SCALAR"
			: n->kind == YNODE_SEQ	? "YNODE_SEQ"
						: "YNODE_MAP",
			n->line, n->col);
	if (n->kind == YNODE_SCALAR)
		(void)sbuf_addf(&line, ", .str = %zu, .len = %zu, .plain = %d", off, n->len,
				n->plain ? 1 : 0);
	if (n->n)
		(void)sbuf_addf(&line, ", .kids = %zu, .n = %zu", base, n->n);
	(void)sbuf_addf(&line, "},\n");
	(void)sbuf_add(&g->nodes, line.buf, line.len);
	sbuf_release(&line);
	free(kids);
	free(keys);
	return self;
}

static int write_all(const char *path, const char *data, size_t len)
{
	struct sbuf tmp = SBUF_INIT(PATH_MAX);
	FILE *f = NULL;
	int r = -1;

	if (sbuf_addf(&tmp, "%s.tmp", path) < 0)
		goto out;
	f = fopen(tmp.buf, "we");
	if (!f)
		goto out;
	if (fwrite(data, 1, len, f) != len) {
		(void)fclose(f);
		goto out;
	}
	if (fclose(f) != 0)
		goto out;
	if (rename(tmp.buf, path) < 0)
		goto out;
	r = 0;
out:
	if (r < 0)
		(void)fprintf(stderr, "catalog-compile: cannot write '%s': %s\n", path,
			      strerror(errno));
	sbuf_release(&tmp);
	return r;
}

/* A depfile path: make's escapes. */
static void dep_escaped(struct sbuf *out, const char *p)
{
	for (; *p; p++) {
		if (*p == ' ' || *p == '\\' || *p == '#')
			(void)sbuf_add(out, "\\", 1);
		if (*p == '$')
			(void)sbuf_add(out, "$", 1);
		(void)sbuf_add(out, p, 1);
	}
}

int main(int argc, char **argv)
{
	struct gen g = {SBUF_INIT(SIZE_MAX), SBUF_INIT(SIZE_MAX), SBUF_INIT(SIZE_MAX), 0, 0, 0, 0};
	struct sbuf out = SBUF_INIT(SIZE_MAX), table = SBUF_INIT(SIZE_MAX);
	struct strvec files = STRVEC_INIT, dirs = STRVEC_INIT;
	size_t i;
	int rc = 1;

	if (argc != 3 && argc != 4) {
		(void)fprintf(stderr, "usage: catalog-compile CATALOG_DIR OUTPUT.c [DEPFILE]\n");
		return 2;
	}
	if (collect(argv[1], "", &files, &dirs) < 0)
		goto out;
	for (i = 0; i < files.nr; i++) {
		struct sbuf path = SBUF_INIT(PATH_MAX);
		struct ydoc *doc = NULL;
		struct diag d;
		size_t root;

		memset(&d, 0, sizeof(d));
		if (sbuf_addf(&path, "%s/%s", argv[1], files.v[i]) < 0 ||
		    yaml_load_file(path.buf, NULL, &doc, &d) < 0) {
			(void)fprintf(stderr, "catalog-compile: %s:%u:%u: %s\n",
				      d.file[0] ? d.file : path.buf, d.line, d.col, d.msg);
			sbuf_release(&path);
			goto out;
		}
		root = emit(&g, doc->root);
		if (g.n_nodes > UINT32_MAX || g.n_ptrs > UINT32_MAX || g.n_pool > UINT32_MAX) {
			(void)fprintf(stderr, "catalog-compile: the catalogue is too large\n");
			ydoc_free(doc);
			sbuf_release(&path);
			goto out;
		}
		(void)sbuf_addf(&table, "\t{\"%s\", %zu, %zu},\n", files.v[i], root,
				g.n_nodes - root);
		ydoc_free(doc);
		sbuf_release(&path);
	}
	(void)sbuf_addf(&out,
			"/* Generated by scripts/catalog-compile.c from catalog/. Do not edit. */\n"
			"#include <stddef.h>\n#include <stdint.h>\n\n"
			"#include \"adapter/catalog.h\"\n"
			"#include \"util/ycompiled.h\"\n\n");
	(void)sbuf_addf(&out, "static const char pool[%zu] = {\n%s%s};\n\n",
			g.n_pool ? g.n_pool : 1, g.pool.buf, g.n_pool ? "\n" : "\t0,\n");
	(void)sbuf_addf(&out, "static const uint32_t kids[%zu] = {\n%s};\n\n",
			g.n_ptrs ? g.n_ptrs : 1, g.n_ptrs ? g.ptrs.buf : "\t0,\n");
	(void)sbuf_addf(&out, "static const struct ycnode nodes[%zu] = {\n%s};\n\n",
			g.n_nodes ? g.n_nodes : 1, g.nodes.buf);
	(void)sbuf_addf(
		&out,
		"const struct ycompiled catalog_compiled_data = {nodes, kids, pool, %zu, %zu, %zu};\n\n",
		g.n_nodes, g.n_ptrs, g.n_pool);
	(void)sbuf_addf(&out,
			"const struct catalog_tree catalog_compiled[] = {\n%s\t{NULL, 0, 0},\n};\n",
			table.buf);
	if (write_all(argv[2], out.buf, out.len) < 0)
		goto out;
	if (argc == 4) {
		sbuf_reset(&out);
		dep_escaped(&out, argv[2]);
		(void)sbuf_add(&out, ":", 1);
		for (i = 0; i < files.nr; i++) {
			(void)sbuf_add(&out, " \\\n  ", 4);
			dep_escaped(&out, argv[1]);
			(void)sbuf_add(&out, "/", 1);
			dep_escaped(&out, files.v[i]);
		}
		for (i = 0; i < dirs.nr; i++) {
			(void)sbuf_add(&out, " \\\n  ", 4);
			dep_escaped(&out, dirs.v[i]);
		}
		(void)sbuf_add(&out, "\n", 1);
		if (write_all(argv[3], out.buf, out.len) < 0)
			goto out;
	}
	rc = 0;
out:
	sbuf_release(&g.nodes);
	sbuf_release(&g.ptrs);
	sbuf_release(&g.pool);
	sbuf_release(&out);
	sbuf_release(&table);
	strvec_clear(&files);
	strvec_clear(&dirs);
	return rc;
}
