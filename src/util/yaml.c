/* Strict YAML loader: libyaml events -> struct ynode tree in the doc's arena.
 *
 * The loader keeps one frame per open collection. A frame collects its
 * children in malloc'd arrays (copied into the arena, exactly sized, when the
 * collection ends) and, for mappings, a small open-addressing hash set of the
 * keys seen so far, so duplicate detection stays linear. The set hashes with
 * SipHash under a random key per load: a file cannot be written whose keys
 * all land in one chain (which would make a 1 MiB file take minutes). */
#include "util/yaml.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <jansson.h>
#include <math.h>
#include <yaml.h>

#include "util/fsutil.h"
#include "util/hash.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* User-controlled strings are quoted into messages through this buffer:
 * control bytes are escaped and long strings are cut. */
#define QUOTE_MAX 80

struct frame {
	struct ynode *node;
	struct ynode **items, **keys; /* keys only for maps */
	size_t n, alloc;
	struct ynode *pending_key; /* map: key whose value has not arrived yet */
	struct ynode **set;	   /* map: hash set of keys, NULL = empty slot */
	size_t set_cap;		   /* power of two, 0 = not allocated */
};

struct loader {
	const char *name;
	const char *buf;
	size_t len;
	size_t skip; /* bytes of buf not given to libyaml (a UTF-8 BOM) */
	unsigned max_depth;
	size_t max_nodes;
	struct ydoc *doc;
	struct ynode *root;
	struct frame *frames;
	size_t depth, frames_alloc;
	size_t nodes;
	unsigned ndocs;
	struct diag *reterr;
	uint8_t hash_key[16]; /* of the key sets, random per load */
};

/* ---- small helpers ---- */

const char *yaml_quote_bytes(char *out, size_t size, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i;

	if (size < 8)
		BUG("quote buffer too small");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (o + 8 >= size || i >= QUOTE_MAX) {
			/* do not cut a UTF-8 sequence in the middle */
			while (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0x80)
				o--;
			if (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0xc0)
				o--;
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (c == '\t') {
			out[o++] = '\\';
			out[o++] = 't';
		} else if (c == '\\' || c == '\'') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 0xf];
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
	return out;
}

/* 1-based line and column of byte offset off in buf, counting columns in
 * characters like libyaml does; a leading UTF-8 BOM takes no column. */
static void offset_to_pos(const char *buf, size_t len, size_t off, unsigned *ret_line,
			  unsigned *ret_col)
{
	unsigned line = 1, col = 1;
	size_t i = 0;

	if (off > len)
		off = len;
	if (off >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		i = 3;
	for (; i < off; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\n' || (c == '\r' && (i + 1 >= len || buf[i + 1] != '\n'))) {
			line++;
			col = 1;
		} else if ((c & 0xc0) != 0x80 && c != '\r') {
			col++;
		}
	}
	*ret_line = line;
	*ret_col = col;
}

static unsigned mark_num(size_t v)
{
	return v >= UINT_MAX ? UINT_MAX : (unsigned)v + 1;
}

static int fail_at(struct loader *L, yaml_mark_t m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_at(struct loader *L, yaml_mark_t m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vset(L->reterr, L->name, mark_num(m.line), mark_num(m.column), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Append a child (and, for maps, its key) to the frame. */
static void frame_push(struct frame *f, struct ynode *key, struct ynode *item)
{
	if (f->n == f->alloc) {
		f->alloc = f->alloc ? st_mult(f->alloc, 2) : 4;
		f->items = xrealloc(f->items, st_mult(f->alloc, sizeof(*f->items)));
		if (key)
			f->keys = xrealloc(f->keys, st_mult(f->alloc, sizeof(*f->keys)));
	}
	f->items[f->n] = item;
	if (key)
		f->keys[f->n] = key;
	f->n++;
}

/* Insert key into the frame's set; returns the earlier equal key, or NULL
 * when key was new (and is now in the set). */
static struct ynode *set_insert(const struct loader *L, struct frame *f, struct ynode *key)
{
	size_t mask, i;

	/* keep the load factor at or below 1/2; f->n counts finished pairs */
	if (st_mult(f->n + 1, 2) > f->set_cap) {
		size_t cap = f->set_cap ? st_mult(f->set_cap, 2) : 16, j;
		struct ynode **set = xcalloc(cap, sizeof(*set));

		for (j = 0; j < f->set_cap; j++) {
			struct ynode *k = f->set[j];

			if (!k)
				continue;
			i = hash_siphash24(L->hash_key, k->str, k->len) & (cap - 1);
			while (set[i])
				i = (i + 1) & (cap - 1);
			set[i] = k;
		}
		free(f->set);
		f->set = set;
		f->set_cap = cap;
	}
	mask = f->set_cap - 1;
	i = hash_siphash24(L->hash_key, key->str, key->len) & mask;
	while (f->set[i]) {
		struct ynode *k = f->set[i];

		if (k->len == key->len && memcmp(k->str, key->str, key->len) == 0)
			return k;
		i = (i + 1) & mask;
	}
	f->set[i] = key;
	return NULL;
}

static void frame_release(struct frame *f)
{
	free(f->items);
	free(f->keys);
	free(f->set);
	memset(f, 0, sizeof(*f));
}

/* ---- tree building ---- */

/* NULL (and the diag filled) when the node limit is reached. */
static struct ynode *new_node(struct loader *L, enum ynode_kind kind, yaml_mark_t m)
{
	struct ynode *n;

	if (L->nodes >= L->max_nodes) {
		(void)fail_at(L, m, "too many nodes (more than %zu)", L->max_nodes);
		return NULL;
	}
	L->nodes++;
	n = arena_alloc(&L->doc->arena, sizeof(*n));
	n->kind = kind;
	n->line = mark_num(m.line);
	n->col = mark_num(m.column);
	return n;
}

/* Attach a new node to the innermost open collection (or make it the root). */
static int attach(struct loader *L, struct ynode *node, yaml_mark_t m)
{
	struct frame *f;

	if (L->depth == 0) {
		if (L->root)
			return fail_at(L, m, "more than one root node");
		L->root = node;
		return 0;
	}
	f = &L->frames[L->depth - 1];
	if (f->node->kind == YNODE_SEQ) {
		frame_push(f, NULL, node);
		return 0;
	}
	if (!f->pending_key) {
		struct ynode *prev;
		char q[YAML_QUOTE_SIZE];

		if (node->kind != YNODE_SCALAR)
			return fail_at(L, m, "non-scalar mapping keys are not allowed");
		if (node->plain && node->len == 2 && memcmp(node->str, "<<", 2) == 0)
			return fail_at(L, m, "merge keys are not allowed");
		prev = set_insert(L, f, node);
		if (prev)
			return fail_at(L, m,
				       "duplicate key '%s' (first defined at line %u, column %u)",
				       yaml_quote_bytes(q, sizeof(q), node->str, node->len),
				       prev->line, prev->col);
		f->pending_key = node;
		return 0;
	}
	frame_push(f, f->pending_key, node);
	f->pending_key = NULL;
	return 0;
}

static int check_props(struct loader *L, yaml_mark_t m, const yaml_char_t *anchor,
		       const yaml_char_t *tag)
{
	if (anchor)
		return fail_at(L, m, "anchors and aliases are not allowed");
	if (tag)
		return fail_at(L, m, "tags are not allowed");
	return 0;
}

static int on_scalar(struct loader *L, const yaml_event_t *ev)
{
	struct ynode *n = NULL;
	size_t len = ev->data.scalar.length;
	const char *value = (const char *)ev->data.scalar.value;
	char *s;
	int r;

	r = check_props(L, ev->start_mark, ev->data.scalar.anchor, ev->data.scalar.tag);
	if (r < 0)
		return r;
	if (len && memchr(value, '\0', len))
		return fail_at(L, ev->start_mark, "NUL characters are not allowed in strings");
	n = new_node(L, YNODE_SCALAR, ev->start_mark);
	if (!n)
		return -EINVAL;
	s = arena_alloc(&L->doc->arena, st_add(len, 1)); /* zeroed: NUL-terminated */
	if (len)
		memcpy(s, value, len);
	n->str = s;
	n->len = len;
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	return attach(L, n, ev->start_mark);
}

static int on_collection_start(struct loader *L, const yaml_event_t *ev, enum ynode_kind kind)
{
	struct ynode *n = NULL;
	struct frame *f;
	int r;

	if (kind == YNODE_SEQ)
		r = check_props(L, ev->start_mark, ev->data.sequence_start.anchor,
				ev->data.sequence_start.tag);
	else
		r = check_props(L, ev->start_mark, ev->data.mapping_start.anchor,
				ev->data.mapping_start.tag);
	if (r < 0)
		return r;
	if (L->depth >= L->max_depth)
		return fail_at(L, ev->start_mark, "nesting deeper than %u", L->max_depth);
	n = new_node(L, kind, ev->start_mark);
	if (!n)
		return -EINVAL;
	r = attach(L, n, ev->start_mark);
	if (r < 0)
		return r;
	if (L->depth == L->frames_alloc) {
		L->frames_alloc = L->frames_alloc ? st_mult(L->frames_alloc, 2) : 8;
		L->frames = xrealloc(L->frames, st_mult(L->frames_alloc, sizeof(*L->frames)));
	}
	f = &L->frames[L->depth++];
	memset(f, 0, sizeof(*f));
	f->node = n;
	return 0;
}

static int on_collection_end(struct loader *L, const yaml_event_t *ev)
{
	struct frame *f;
	struct ynode *n;
	size_t bytes;

	if (L->depth == 0)
		return fail_at(L, ev->start_mark, "unbalanced collection end");
	f = &L->frames[L->depth - 1];
	n = f->node;
	if (f->pending_key)
		return fail_at(L, ev->start_mark, "mapping key without a value");
	bytes = st_mult(f->n, sizeof(*n->items));
	n->n = f->n;
	n->items = arena_memdup(&L->doc->arena, f->items, bytes);
	if (n->kind == YNODE_MAP)
		n->keys = arena_memdup(&L->doc->arena, f->keys, bytes);
	frame_release(f);
	L->depth--;
	return 0;
}

static int report_parser_error(struct loader *L, const yaml_parser_t *p)
{
	unsigned line, col;
	char ctx[256] = "";

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		diag_set(L->reterr, L->name, 0, 0, "out of memory while parsing");
		return -ENOMEM;
	case YAML_READER_ERROR:
		offset_to_pos(L->buf, L->len, st_add(L->skip, p->problem_offset), &line, &col);
		if (p->problem_value >= 0)
			diag_set(L->reterr, L->name, line, col, "%s (0x%x)",
				 p->problem ? p->problem : "cannot read input",
				 (unsigned)p->problem_value);
		else
			diag_set(L->reterr, L->name, line, col, "%s",
				 p->problem ? p->problem : "cannot read input");
		return -EINVAL;
	case YAML_SCANNER_ERROR:
	case YAML_PARSER_ERROR:
	default:
		if (p->context && (p->context_mark.line != p->problem_mark.line ||
				   p->context_mark.column != p->problem_mark.column))
			(void)snprintf(ctx, sizeof(ctx), " (%s at line %u, column %u)", p->context,
				       mark_num(p->context_mark.line),
				       mark_num(p->context_mark.column));
		else if (p->context)
			(void)snprintf(ctx, sizeof(ctx), " (%s)", p->context);
		diag_set(L->reterr, L->name, mark_num(p->problem_mark.line),
			 mark_num(p->problem_mark.column), "%s%s",
			 p->problem ? p->problem : "invalid YAML", ctx);
		return -EINVAL;
	}
}

static int check_nul(struct loader *L)
{
	const char *z = memchr(L->buf, '\0', L->len);
	unsigned line, col;

	if (!z)
		return 0;
	offset_to_pos(L->buf, L->len, (size_t)(z - L->buf), &line, &col);
	diag_set(L->reterr, L->name, line, col, "NUL bytes are not allowed");
	return -EINVAL;
}

static int load_events(struct loader *L)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	bool done = false;
	int r = 0;

	if (!yaml_parser_initialize(&parser)) {
		diag_set(L->reterr, L->name, 0, 0, "cannot initialize the YAML parser");
		return -ENOMEM;
	}
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	/* A UTF-8 byte order mark is skipped here, so that columns on the first
	 * line are not off by one; reader errors add L->skip back. */
	if (L->len >= 3 && memcmp(L->buf, "\xef\xbb\xbf", 3) == 0)
		L->skip = 3;
	yaml_parser_set_input_string(&parser, (const unsigned char *)L->buf + L->skip,
				     L->len - L->skip);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			r = report_parser_error(L, &parser);
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_START_EVENT:
		case YAML_DOCUMENT_END_EVENT:
		case YAML_NO_EVENT:
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++L->ndocs > 1)
				r = fail_at(L, ev.start_mark,
					    "more than one document in the stream");
			else if (ev.data.document_start.tag_directives.start !=
				 ev.data.document_start.tag_directives.end)
				r = fail_at(L, ev.start_mark, "tags are not allowed");
			break;
		case YAML_ALIAS_EVENT:
			r = fail_at(L, ev.start_mark, "anchors and aliases are not allowed");
			break;
		case YAML_SCALAR_EVENT:
			r = on_scalar(L, &ev);
			break;
		case YAML_SEQUENCE_START_EVENT:
			r = on_collection_start(L, &ev, YNODE_SEQ);
			break;
		case YAML_MAPPING_START_EVENT:
			r = on_collection_start(L, &ev, YNODE_MAP);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			r = on_collection_end(L, &ev);
			break;
		}
		yaml_event_delete(&ev);
		if (r < 0)
			break;
	}
	yaml_parser_delete(&parser);
	return r;
}

/* ---- loading ---- */

int yaml_load_buf(const char *name, const char *buf, size_t len, const struct yaml_limits *lim,
		  struct ydoc **ret, struct diag *reterr)
{
	struct loader L = {0};
	struct ydoc *doc = NULL;
	size_t max_bytes = lim && lim->max_bytes ? lim->max_bytes : YAML_DEFAULT_MAX_BYTES;
	size_t i;
	int r;

	if (!name)
		name = "<input>";
	if (len > max_bytes) {
		diag_set(reterr, name, 0, 0, "file is larger than %zu bytes", max_bytes);
		return -EFBIG;
	}
	if (!buf)
		buf = "";
	L.name = name;
	L.buf = buf;
	L.len = len;
	L.max_depth = lim && lim->max_depth ? lim->max_depth : YAML_DEFAULT_MAX_DEPTH;
	L.max_nodes = lim && lim->max_nodes ? lim->max_nodes : YAML_DEFAULT_MAX_NODES;
	L.reterr = reterr;
	if (getrandom(L.hash_key, sizeof(L.hash_key), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(L.hash_key)) {
		/* no entropy yet (early boot): the clock and where this stack
		 * lies (ASLR) still differ from run to run */
		struct timespec ts;
		uint64_t a = (uint64_t)(uintptr_t)&L, t;

		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
		t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		memcpy(L.hash_key, &a, sizeof(a));
		memcpy(L.hash_key + 8, &t, sizeof(t));
	}

	r = check_nul(&L);
	if (r < 0)
		return r;

	doc = xcalloc(1, sizeof(*doc));
	arena_init(&doc->arena, 0);
	(void)snprintf(doc->name, sizeof(doc->name), "%s", name);
	L.doc = doc;

	r = load_events(&L);
	if (r < 0)
		goto out;
	if (L.depth != 0 || L.ndocs > 1) {
		r = -EINVAL; /* cannot happen after STREAM_END, but never hand out half a tree */
		diag_set(reterr, name, 0, 0, "incomplete document");
		goto out;
	}
	if (!L.root || (L.root->kind == YNODE_SCALAR && L.root->plain && L.root->len == 0)) {
		/* empty stream, comments only, or an empty document: an empty map */
		struct ynode *m = arena_alloc(&doc->arena, sizeof(*m));

		m->kind = YNODE_MAP;
		m->line = L.root ? L.root->line : 1;
		m->col = L.root ? L.root->col : 1;
		m->items = arena_alloc(&doc->arena, sizeof(*m->items));
		m->keys = arena_alloc(&doc->arena, sizeof(*m->keys));
		L.root = m;
	}
	doc->root = L.root;
	*ret = doc;
	doc = NULL;
out:
	for (i = 0; i < L.depth; i++)
		frame_release(&L.frames[i]);
	free(L.frames);
	ydoc_free(doc);
	return r;
}

int yaml_load_file(const char *path, const struct yaml_limits *lim, struct ydoc **ret,
		   struct diag *reterr)
{
	size_t max_bytes = lim && lim->max_bytes ? lim->max_bytes : YAML_DEFAULT_MAX_BYTES;
	char *text = NULL;
	size_t len = 0;
	int r;

	r = read_file_capped(path, max_bytes, &text, &len);
	if (r == -EFBIG) {
		diag_set(reterr, path, 0, 0, "file is larger than %zu bytes", max_bytes);
		return r;
	}
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot read file: %s", file_strerror(r));
		return r;
	}
	r = yaml_load_buf(path, text, len, lim, ret, reterr);
	free(text);
	return r;
}

struct ydoc *ydoc_free(struct ydoc *doc)
{
	if (!doc)
		return NULL;
	arena_release(&doc->arena);
	free(doc);
	return NULL;
}

/* ---- scalar resolution (YAML 1.2 core schema subset) ---- */

bool ynode_is_null(const struct ynode *node)
{
	if (!node || node->kind != YNODE_SCALAR || !node->plain)
		return false;
	if (node->len == 0)
		return true;
	if (node->len == 1)
		return node->str[0] == '~';
	return node->len == 4 &&
	       (memcmp(node->str, "null", 4) == 0 || memcmp(node->str, "Null", 4) == 0 ||
		memcmp(node->str, "NULL", 4) == 0);
}

int ynode_bool(const struct ynode *node, bool *ret)
{
	static const char *const yes[] = {"true", "True", "TRUE"};
	static const char *const no[] = {"false", "False", "FALSE"};
	size_t i;

	if (!node || node->kind != YNODE_SCALAR || !node->plain)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcmp(node->str, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcmp(node->str, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Shape check only: plain [-+]?[0-9]+ */
static bool looks_int(const struct ynode *node)
{
	size_t i = 0;

	if (!node || node->kind != YNODE_SCALAR || !node->plain || node->len == 0)
		return false;
	if (node->str[0] == '-' || node->str[0] == '+')
		i = 1;
	if (i == node->len)
		return false;
	for (; i < node->len; i++)
		if (node->str[i] < '0' || node->str[i] > '9')
			return false;
	return true;
}

int ynode_int(const struct ynode *node, int64_t *ret)
{
	uint64_t v = 0, limit;
	bool neg;
	size_t i = 0;

	if (!looks_int(node))
		return -EINVAL;
	neg = node->str[0] == '-';
	if (node->str[0] == '-' || node->str[0] == '+')
		i = 1;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < node->len; i++) {
		unsigned d = (unsigned)(node->str[i] - '0');

		if (v > (limit - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (neg)
		*ret = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*ret = (int64_t)v;
	return 0;
}

const char *ynode_describe(const struct ynode *node)
{
	bool b;

	if (!node)
		return "nothing";
	switch (node->kind) {
	case YNODE_MAP:
		return "a mapping";
	case YNODE_SEQ:
		return "a sequence";
	case YNODE_SCALAR:
	default:
		break;
	}
	if (ynode_is_null(node))
		return "null";
	if (ynode_bool(node, &b) == 0)
		return "a boolean";
	if (looks_int(node))
		return "an integer";
	return "a string";
}

/* ---- diagnostics ---- */

void yaml_diag(const struct ydoc *doc, const struct ynode *node, struct diag *reterr,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vset(reterr, doc ? doc->name : "", node ? node->line : 0, node ? node->col : 0, fmt,
		  ap);
	va_end(ap);
}

/* ---- getters ---- */

const struct ynode *ynode_getn(const struct ynode *map, const char *key, size_t len)
{
	size_t i;

	if (!map || map->kind != YNODE_MAP || !key)
		return NULL;
	for (i = 0; i < map->n; i++)
		if (map->keys[i]->len == len && memcmp(map->keys[i]->str, key, len) == 0)
			return map->items[i];
	return NULL;
}

int yaml_emit_str(struct sbuf *out, const char *s)
{
	json_t *j;
	char *d;
	int r;

	if (!s)
		return sbuf_adds(out, "null");
	j = json_string(s);
	d = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	if (!d)
		return sbuf_adds(out, "\"\"");
	r = sbuf_adds(out, d);
	free(d);
	return r;
}

int yaml_emit_num(struct sbuf *out, double v)
{
	char buf[40];
	int prec;

	if (v == floor(v) && fabs(v) < 1e15)
		return sbuf_addf(out, "%.0f", v);
	for (prec = 1; prec <= 17; prec++) {
		(void)snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return sbuf_adds(out, buf);
}
