/* The redactor (redact.h): an Aho-Corasick automaton over the patterns of
 * every secret, run over the raw input and over its JSON-decoded views. */
#include "util/redact.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define NONE	     UINT32_MAX
#define SCRATCH_KEEP (256u << 10) /* scratch bytes kept between calls */

struct pattern {
	char *s;
	size_t len;
};

struct node {
	uint32_t child;	  /* first child, NONE if none */
	uint32_t sibling; /* next child of the same parent, NONE if none */
	uint32_t fail;
	uint32_t depth;
	uint32_t out; /* length of the longest pattern that ends here (a suffix), 0 none */
	unsigned char byte;
};

/* An escape decoded into a view: the view's bytes [vpos, vpos + vlen) came
 * from its source's [spos, spos + slen). Bytes between escapes are copied
 * one for one. */
struct esc {
	size_t vpos, spos;
	unsigned char vlen, slen;
};

/* A decoded view of its source (the input, or the view a level below). */
struct view {
	char *buf;
	size_t len, alloc;
	struct esc *esc; /* in order */
	size_t n_esc, esc_alloc;
};

struct redact {
	struct pattern *pat;
	size_t n_pat, alloc_pat;
	size_t n_secrets;
	size_t max_len; /* of a pattern */
	/* the automaton, built by compile() when dirty */
	bool dirty;
	struct node *nodes;
	size_t n_nodes, alloc_nodes;
	uint32_t root_next[256]; /* the root's transitions (0: stay at the root) */
	uint8_t pair[8192];	 /* bit a << 8 | b: some pattern starts with bytes a, b */
	/* scratch */
	struct view views[REDACT_DEPTH];
	int32_t *cover; /* the difference array of the spans to redact */
	size_t cover_alloc;
	bool covered;	 /* cover holds a span */
	size_t cut_from; /* REDACT_CUT: redact from here to the end (SIZE_MAX none) */
};

/* s[0, n) with every invalid UTF-8 byte as U+FFFD (fffd) or every non-ASCII
 * byte as '?' (!fffd). */
static void lossy(const char *s, size_t n, bool fffd, struct sbuf *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if (!fffd) {
			(void)sbuf_addc(out, u[i] >= 0x80 ? '?' : s[i]);
			i++;
			continue;
		}
		k = utf8_seq(u + i, n - i);
		if (k == 0) {
			(void)sbuf_add(out, "\xef\xbf\xbd", 3);
			i++;
		} else {
			(void)sbuf_add(out, s + i, k);
			i += k;
		}
	}
}

static bool pattern_known(const struct redact *rd, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < rd->n_pat; i++)
		if (rd->pat[i].len == n && memcmp(rd->pat[i].s, s, n) == 0)
			return true;
	return false;
}

static void pattern_add(struct redact *rd, const char *s, size_t n)
{
	if (n == 0 || pattern_known(rd, s, n))
		return;
	if (rd->n_pat == rd->alloc_pat) {
		rd->alloc_pat = rd->alloc_pat ? 2 * rd->alloc_pat : 8;
		rd->pat = xrealloc(rd->pat, st_mult(rd->alloc_pat, sizeof(*rd->pat)));
	}
	rd->pat[rd->n_pat].s = xmalloc(st_add(n, 1));
	memcpy(rd->pat[rd->n_pat].s, s, n);
	rd->pat[rd->n_pat].s[n] = '\0';
	rd->pat[rd->n_pat].len = n;
	rd->n_pat++;
	if (n > rd->max_len)
		rd->max_len = n;
	rd->dirty = true;
}

struct redact *redact_new(void)
{
	struct redact *rd = xcalloc(1, sizeof(*rd));

	rd->cut_from = SIZE_MAX;
	return rd;
}

static void view_release(struct view *v)
{
	free(v->buf);
	free(v->esc);
	memset(v, 0, sizeof(*v));
}

struct redact *redact_free(struct redact *rd)
{
	size_t i;

	if (!rd)
		return NULL;
	for (i = 0; i < rd->n_pat; i++) {
		explicit_bzero(rd->pat[i].s, rd->pat[i].len);
		free(rd->pat[i].s);
	}
	free(rd->pat);
	if (rd->nodes)
		explicit_bzero(rd->nodes, rd->n_nodes * sizeof(*rd->nodes));
	free(rd->nodes);
	for (i = 0; i < REDACT_DEPTH; i++)
		view_release(&rd->views[i]);
	free(rd->cover);
	free(rd);
	return NULL;
}

static size_t escape_at(const char *s, size_t n, char *out, size_t *ret_out, bool *ret_partial);

/* s[0, n) with its JSON escapes decoded (what is not one stays) into out.
 * Returns the number decoded. */
static size_t unescape(const char *s, size_t n, struct sbuf *out)
{
	size_t i = 0, k, m, count = 0;
	bool partial;
	char dec[4];

	while (i < n) {
		k = s[i] == '\\' ? escape_at(s + i, n - i, dec, &m, &partial) : 0;
		if (k == 0) {
			(void)sbuf_addc(out, s[i++]);
			continue;
		}
		(void)sbuf_add(out, dec, m);
		i += k;
		count++;
	}
	return count;
}

bool redact_add(struct redact *rd, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0, start, i, level;
	struct sbuf sb = SBUF_INIT(SIZE_MAX), dec = SBUF_INIT(SIZE_MAX);
	bool fresh;

	if (n < REDACT_MIN)
		return false;
	/* known already as a form of another secret: its own forms still count */
	fresh = !pattern_known(rd, secret, n);
	pattern_add(rd, secret, n);
	if (fresh)
		rd->n_secrets++;
	if (!utf8_valid(secret, n)) {
		lossy(secret, n, true, &sb);
		pattern_add(rd, sb.buf, sb.len);
		explicit_bzero(sb.buf, sb.len);
		sbuf_reset(&sb);
		lossy(secret, n, false, &sb);
		pattern_add(rd, sb.buf, sb.len);
		explicit_bzero(sb.buf, sb.len);
		sbuf_release(&sb);
	}
	/* each line of a value of several lines */
	if (strpbrk(secret, "\r\n")) {
		for (start = i = 0; i <= n; i++) {
			if (i < n && secret[i] != '\n' && secret[i] != '\r')
				continue;
			if (i - start >= REDACT_MIN)
				pattern_add(rd, secret + start, i - start);
			start = i + 1;
		}
	}
	/* a value that reads as JSON escapes (a literal backslash-n...): the
	 * text those spell is written as the value itself by any JSON writer */
	(void)sbuf_add(&sb, secret, n);
	for (level = 0; level < REDACT_DEPTH && memchr(sb.buf, '\\', sb.len); level++) {
		sbuf_reset(&dec);
		if (unescape(sb.buf, sb.len, &dec) == 0)
			break;
		if (dec.len >= REDACT_MIN)
			pattern_add(rd, dec.buf, dec.len);
		explicit_bzero(sb.buf, sb.len);
		sbuf_reset(&sb);
		(void)sbuf_add(&sb, dec.buf, dec.len);
	}
	explicit_bzero(sb.buf, sb.len);
	explicit_bzero(dec.buf, dec.len);
	sbuf_release(&sb);
	sbuf_release(&dec);
	return fresh;
}

size_t redact_count(const struct redact *rd)
{
	return rd ? rd->n_secrets : 0;
}

/* ---- the automaton ---- */

static uint32_t node_new(struct redact *rd, uint32_t depth, unsigned char byte)
{
	struct node *nd;

	if (rd->n_nodes == rd->alloc_nodes) {
		rd->alloc_nodes = rd->alloc_nodes ? 2 * rd->alloc_nodes : 64;
		rd->nodes = xrealloc(rd->nodes, st_mult(rd->alloc_nodes, sizeof(*rd->nodes)));
	}
	nd = &rd->nodes[rd->n_nodes];
	nd->child = nd->sibling = NONE;
	nd->fail = 0;
	nd->depth = depth;
	nd->out = 0;
	nd->byte = byte;
	return (uint32_t)rd->n_nodes++;
}

static uint32_t node_child(const struct redact *rd, uint32_t v, unsigned char c)
{
	uint32_t k;

	if (v == 0)
		return rd->root_next[c] ? rd->root_next[c] : NONE;
	for (k = rd->nodes[v].child; k != NONE; k = rd->nodes[k].sibling)
		if (rd->nodes[k].byte == c)
			return k;
	return NONE;
}

/* The state after reading c in state v. */
static uint32_t step(const struct redact *rd, uint32_t v, unsigned char c)
{
	uint32_t k;

	for (;;) {
		if (v == 0)
			return rd->root_next[c];
		k = node_child(rd, v, c);
		if (k != NONE)
			return k;
		v = rd->nodes[v].fail;
	}
}

static void compile(struct redact *rd)
{
	uint32_t *queue, head = 0, tail = 0, v, k;
	size_t i, j;

	rd->n_nodes = 0;
	memset(rd->root_next, 0, sizeof(rd->root_next));
	(void)node_new(rd, 0, 0);
	for (i = 0; i < rd->n_pat; i++) {
		const unsigned char *p = (const unsigned char *)rd->pat[i].s;

		v = 0;
		for (j = 0; j < rd->pat[i].len; j++) {
			k = node_child(rd, v, p[j]);
			if (k == NONE) {
				k = node_new(rd, (uint32_t)(j + 1), p[j]);
				if (v == 0) {
					rd->root_next[p[j]] = k;
				} else {
					rd->nodes[k].sibling = rd->nodes[v].child;
					rd->nodes[v].child = k;
				}
			}
			v = k;
		}
		rd->nodes[v].out = rd->nodes[v].depth;
	}
	/* every pattern has two bytes or more (REDACT_MIN) */
	memset(rd->pair, 0, sizeof(rd->pair));
	for (i = 0; i < rd->n_pat; i++) {
		const unsigned char *p = (const unsigned char *)rd->pat[i].s;
		unsigned pr = (unsigned)p[0] << 8 | p[1];

		rd->pair[pr >> 3] |= (uint8_t)(1u << (pr & 7));
	}
	/* breadth first: fail links and the longest pattern ending at each node */
	queue = xmalloc(st_mult(rd->n_nodes, sizeof(*queue)));
	for (i = 0; i < 256; i++)
		if (rd->root_next[i])
			queue[tail++] = rd->root_next[i];
	while (head < tail) {
		v = queue[head++];
		for (k = rd->nodes[v].child; k != NONE; k = rd->nodes[k].sibling) {
			rd->nodes[k].fail = step(rd, rd->nodes[v].fail, rd->nodes[k].byte);
			if (rd->nodes[k].out == 0)
				rd->nodes[k].out = rd->nodes[rd->nodes[k].fail].out;
			queue[tail++] = k;
		}
	}
	free(queue);
	rd->dirty = false;
}

/* ---- spans to redact ---- */

static void cover_reset(struct redact *rd, size_t len)
{
	rd->covered = false;
	rd->cut_from = SIZE_MAX;
	if (rd->cover_alloc > SCRATCH_KEEP / sizeof(*rd->cover) && len < rd->cover_alloc / 4) {
		free(rd->cover);
		rd->cover = NULL;
		rd->cover_alloc = 0;
	}
}

/* Mark raw [s, e) of an input of len bytes. */
static void cover_add(struct redact *rd, size_t len, size_t s, size_t e)
{
	if (s >= e)
		return;
	if (!rd->covered) {
		if (rd->cover_alloc < len + 1) {
			free(rd->cover);
			rd->cover = xmalloc(st_mult(st_add(len, 1), sizeof(*rd->cover)));
			rd->cover_alloc = len + 1;
		}
		memset(rd->cover, 0, (len + 1) * sizeof(*rd->cover));
		rd->covered = true;
	}
	rd->cover[s]++;
	rd->cover[e]--;
}

/* ---- views ---- */

static void view_reserve(struct view *v, size_t n)
{
	v->len = 0;
	v->n_esc = 0;
	if (v->alloc >= n + 1)
		return;
	free(v->buf);
	v->buf = xmalloc(st_add(n, 1));
	v->alloc = n + 1;
}

static void view_trim(struct view *v)
{
	if (v->alloc > SCRATCH_KEEP || v->esc_alloc * sizeof(*v->esc) > SCRATCH_KEEP)
		view_release(v);
}

static void esc_add(struct view *v, size_t vpos, size_t vlen, size_t spos, size_t slen)
{
	if (v->n_esc == v->esc_alloc) {
		v->esc_alloc = v->esc_alloc ? 2 * v->esc_alloc : 64;
		v->esc = xrealloc(v->esc, st_mult(v->esc_alloc, sizeof(*v->esc)));
	}
	v->esc[v->n_esc].vpos = vpos;
	v->esc[v->n_esc].spos = spos;
	v->esc[v->n_esc].vlen = (unsigned char)vlen;
	v->esc[v->n_esc].slen = (unsigned char)slen;
	v->n_esc++;
}

/* The last escape of v that starts at or before view byte p, or NULL. */
static const struct esc *esc_before(const struct view *v, size_t p)
{
	size_t lo = 0, hi = v->n_esc;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v->esc[mid].vpos <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &v->esc[lo - 1] : NULL;
}

/* The source bytes view byte p came from: [*ret_s, *ret_e). */
static void view_source(const struct view *v, size_t p, size_t *ret_s, size_t *ret_e)
{
	const struct esc *e = esc_before(v, p);

	if (e && p < e->vpos + e->vlen) {
		*ret_s = e->spos;
		*ret_e = e->spos + e->slen;
		return;
	}
	*ret_s = e ? e->spos + e->slen + (p - (e->vpos + e->vlen)) : p;
	*ret_e = *ret_s + 1;
}

/* The raw span of the bytes [a, b) (a < b) of views[level - 1], or of the
 * input itself (level 0). */
static void raw_span(const struct redact *rd, size_t level, size_t a, size_t b, size_t *ret_a,
		     size_t *ret_b)
{
	size_t s, e;

	while (level > 0) {
		const struct view *v = &rd->views[level - 1];

		view_source(v, a, &s, &e);
		a = s;
		view_source(v, b - 1, &s, &e);
		b = e;
		level--;
	}
	*ret_a = a;
	*ret_b = b;
}

/* The 4 hex digits at s as a number, or -1. */
static long hex4(const char *s)
{
	long v = 0;
	int i, h;

	for (i = 0; i < 4; i++) {
		h = hash_hex_value((unsigned char)s[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static size_t utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The escape at s[0, n) (s[0] == '\\'): its length in s and its decoding in
 * out (*ret_out bytes). 0: not a complete escape; *ret_partial tells
 * whether it could become one with more input. */
static size_t escape_at(const char *s, size_t n, char *out, size_t *ret_out, bool *ret_partial)
{
	long hi, lo;

	*ret_partial = false;
	if (n < 2) {
		*ret_partial = true;
		return 0;
	}
	switch (s[1]) {
	case '"':
	case '\\':
	case '/':
		out[0] = s[1];
		*ret_out = 1;
		return 2;
	case 'b':
		out[0] = '\b';
		*ret_out = 1;
		return 2;
	case 'f':
		out[0] = '\f';
		*ret_out = 1;
		return 2;
	case 'n':
		out[0] = '\n';
		*ret_out = 1;
		return 2;
	case 'r':
		out[0] = '\r';
		*ret_out = 1;
		return 2;
	case 't':
		out[0] = '\t';
		*ret_out = 1;
		return 2;
	case 'u':
		break;
	default:
		return 0;
	}
	if (n < 6) {
		size_t i;

		for (i = 2; i < n; i++)
			if (hash_hex_value((unsigned char)s[i]) < 0)
				return 0;
		*ret_partial = true;
		return 0;
	}
	hi = hex4(s + 2);
	if (hi < 0)
		return 0;
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return 0; /* a lone low surrogate */
	if (hi < 0xd800 || hi > 0xdbff) {
		*ret_out = utf8_put((uint32_t)hi, out);
		return 6;
	}
	/* a high surrogate: its low half must follow */
	if (n < 12) {
		static const char want[] = "\\u";
		size_t i;

		for (i = 6; i < n && i < 8; i++)
			if (s[i] != want[i - 6])
				return 0;
		for (i = 8; i < n; i++)
			if (hash_hex_value((unsigned char)s[i]) < 0)
				return 0;
		*ret_partial = true;
		return 0;
	}
	if (s[6] != '\\' || s[7] != 'u')
		return 0;
	lo = hex4(s + 8);
	if (lo < 0xdc00 || lo > 0xdfff)
		return 0;
	*ret_out = utf8_put((uint32_t)(0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)), out);
	return 12;
}

/* Decode the escapes of src[0, n) into dst. Returns the number decoded.
 * With cut, an escape the end of src left incomplete is left out of dst and
 * its offset in src goes to *ret_pending (else SIZE_MAX). *ret_backslash:
 * dst holds a backslash. */
static size_t decode(const char *src, size_t n, bool cut, struct view *dst, size_t *ret_pending,
		     bool *ret_backslash)
{
	size_t i = 0, o = 0, count = 0, k, m, j;
	bool partial, bs = false;
	char dec[4];

	*ret_pending = SIZE_MAX;
	view_reserve(dst, n);
	while (i < n) {
		const char *p = memchr(src + i, '\\', n - i);
		size_t run = p ? (size_t)(p - (src + i)) : n - i;

		/* plain bytes */
		memcpy(dst->buf + o, src + i, run);
		o += run;
		i += run;
		if (i >= n)
			break;
		k = escape_at(src + i, n - i, dec, &m, &partial);
		if (k == 0 && partial && cut) {
			*ret_pending = i;
			break;
		}
		if (k == 0) {
			/* not an escape: the backslash is a plain byte */
			dst->buf[o++] = '\\';
			bs = true;
			i++;
			continue;
		}
		memcpy(dst->buf + o, dec, m);
		for (j = 0; j < m; j++)
			if (dec[j] == '\\')
				bs = true;
		esc_add(dst, o, m, i, k);
		o += m;
		i += k;
		count++;
	}
	dst->len = o;
	*ret_backslash = bs;
	return count;
}

/* ---- matching ---- */

static bool pair_starts(const struct redact *rd, unsigned char a, unsigned char b)
{
	unsigned pr = (unsigned)a << 8 | b;

	return rd->pair[pr >> 3] & (1u << (pr & 7));
}

/* Run the automaton over buf[from, to) of views[level - 1] or of the input
 * itself (level 0), and mark every match in the cover of an input of
 * raw_len bytes. With tail, the longest end of buf[from, to) that begins a
 * pattern marks to the end. */
static void scan(struct redact *rd, const char *buf, size_t from, size_t to, size_t level,
		 size_t raw_len, bool tail)
{
	const unsigned char *u = (const unsigned char *)buf;
	const struct node *nodes = rd->nodes;
	uint32_t v = 0;
	size_t i = from, a, b;

	while (i < to) {
		if (v == 0) {
			/* skip what cannot start a pattern, two bytes at a time */
			while (i + 1 < to && !pair_starts(rd, u[i], u[i + 1]))
				i++;
			if (i + 1 == to && !rd->root_next[u[i]])
				break;
		}
		v = step(rd, v, u[i]);
		i++;
		if (nodes[v].out) {
			raw_span(rd, level, i - nodes[v].out, i, &a, &b);
			cover_add(rd, raw_len, a, b);
		}
	}
	if (tail && v != 0) {
		raw_span(rd, level, to - nodes[v].depth, to, &a, &b);
		if (a < rd->cut_from)
			rd->cut_from = a;
	}
}

/* scan() a decoded view (views[level - 1]) only around its escapes: a match
 * of plain bytes alone was a match in its source already. With cut, its
 * tail too. */
static void scan_view(struct redact *rd, const struct view *v, size_t level, size_t raw_len,
		      bool cut)
{
	size_t w = rd->max_len, k = 0, from, to, done = 0;

	while (k < v->n_esc) {
		from = v->esc[k].vpos > w ? v->esc[k].vpos - w : 0;
		to = v->esc[k].vpos + v->esc[k].vlen + w;
		/* windows that touch merge */
		while (++k < v->n_esc && v->esc[k].vpos <= to + w)
			to = v->esc[k].vpos + v->esc[k].vlen + w;
		if (from < done)
			from = done;
		if (to > v->len)
			to = v->len;
		scan(rd, v->buf, from, to, level, raw_len, cut && to == v->len);
		done = to;
	}
	if (cut && done < v->len)
		scan(rd, v->buf, v->len > w && v->len - w > done ? v->len - w : done, v->len, level,
		     raw_len, true);
}

/* Mark every representation of a secret in s[0, len). */
static void find(struct redact *rd, const char *s, size_t len, unsigned flags)
{
	bool cut = flags & REDACT_CUT, bs;
	const char *src = s;
	size_t n = len, pending, level, a, b;

	if (rd->dirty)
		compile(rd);
	cover_reset(rd, len);
	scan(rd, s, 0, len, 0, len, cut);
	if (!memchr(s, '\\', len))
		return;
	for (level = 0; level < REDACT_DEPTH; level++) {
		struct view *v = &rd->views[level];
		size_t decoded = decode(src, n, cut, v, &pending, &bs);

		if (pending != SIZE_MAX) {
			/* an escape cut short: from it to the end */
			raw_span(rd, level, pending, pending + 1, &a, &b);
			if (a < rd->cut_from)
				rd->cut_from = a;
		}
		if (decoded == 0 && pending == SIZE_MAX)
			break; /* the same view again */
		scan_view(rd, v, level + 1, len, cut);
		if (decoded == 0 || !bs)
			break;
		src = v->buf;
		n = v->len;
	}
}

static void scratch_trim(struct redact *rd)
{
	size_t i;

	for (i = 0; i < REDACT_DEPTH; i++)
		view_trim(&rd->views[i]);
}

int redact_apply(struct redact *rd, const char *s, size_t len, unsigned flags, struct sbuf *out)
{
	size_t i, start = 0, count = 0;
	int32_t depth = 0;

	if (!rd || rd->n_pat == 0)
		return sbuf_add(out, s, len) < 0 ? -ENOBUFS : 0;
	find(rd, s, len, flags);
	scratch_trim(rd);
	if (rd->cut_from != SIZE_MAX)
		cover_add(rd, len, rd->cut_from, len);
	if (!rd->covered)
		return sbuf_add(out, s, len) < 0 ? -ENOBUFS : 0;
	for (i = 0; i <= len; i++) {
		int32_t was = depth;

		depth += rd->cover[i];
		if (was == 0 && depth > 0) {
			/* a span starts at i */
			if (sbuf_add(out, s + start, i - start) < 0 ||
			    sbuf_adds(out, REDACT_MARK) < 0)
				return -ENOBUFS;
			count++;
		} else if (was > 0 && depth == 0) {
			start = i;
		}
	}
	if (depth == 0 && sbuf_add(out, s + start, len - start) < 0)
		return -ENOBUFS;
	return count > INT32_MAX ? INT32_MAX : (int)count;
}

bool redact_found(struct redact *rd, const char *s, size_t len)
{
	if (!rd || rd->n_pat == 0)
		return false;
	find(rd, s, len, 0);
	scratch_trim(rd);
	return rd->covered;
}

/* ---- JSON ---- */

/* s redacted as a new JSON string (invalid UTF-8 made U+FFFD), or NULL when
 * nothing was redacted. */
static char *redact_str(struct redact *rd, const char *s, size_t n, size_t *ret_len)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX), fixed = SBUF_INIT(SIZE_MAX);

	if (redact_apply(rd, s, n, 0, &sb) <= 0) {
		sbuf_release(&sb);
		return NULL;
	}
	if (utf8_valid(sb.buf, sb.len))
		return sbuf_detach(&sb, ret_len);
	lossy(sb.buf, sb.len, true, &fixed);
	sbuf_release(&sb);
	return sbuf_detach(&fixed, ret_len);
}

size_t redact_json(struct redact *rd, json_t *v)
{
	size_t count = 0, i, n;
	char *r;

	if (!rd || rd->n_pat == 0 || !v)
		return 0;
	switch (json_typeof(v)) {
	case JSON_STRING:
		r = redact_str(rd, json_string_value(v), json_string_length(v), &n);
		if (r) {
			(void)json_string_setn(v, r, n);
			free(r);
			count++;
		}
		break;
	case JSON_ARRAY:
		for (i = 0; i < json_array_size(v); i++)
			count += redact_json(rd, json_array_get(v, i));
		break;
	case JSON_OBJECT: {
		struct sbuf old = SBUF_INIT(SIZE_MAX); /* the renamed keys, NUL-separated */
		json_t *add = NULL, *val;
		const char *key, *k;
		void *it;

		for (it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
			key = json_object_iter_key(it);
			val = json_object_iter_value(it);
			count += redact_json(rd, val);
			r = redact_str(rd, key, strlen(key), &n);
			if (!r)
				continue;
			if (!add)
				add = json_object();
			(void)json_object_set(add, r, val);
			(void)sbuf_add(&old, key, strlen(key) + 1);
			free(r);
			count++;
		}
		for (k = old.buf; k < old.buf + old.len; k += strlen(k) + 1)
			(void)json_object_del(v, k);
		if (add)
			(void)json_object_update(v, add);
		json_decref(add);
		sbuf_release(&old);
		break;
	}
	case JSON_INTEGER:
	case JSON_REAL:
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
	default:
		break;
	}
	return count;
}
