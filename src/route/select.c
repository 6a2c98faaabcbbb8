#include "route/select.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "adapter/strategy.h"
#include "proc/sandbox.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

/* A receipt larger than this is a bug (1,000 candidates take ~150 KB). */
#define RECEIPT_MAX_BYTES ((size_t)64 * 1024 * 1024)

static const char *const order_names[_SELECT_ORDER_MAX] = {
	[SELECT_ORDER_EXPLICIT] = "explicit",
	[SELECT_ORDER_PREFERENCE] = "preference",
	[SELECT_ORDER_CATALOGUE] = "catalogue",
};

const char *select_order_to_string(enum select_order o)
{
	if ((int)o < 0 || o >= _SELECT_ORDER_MAX)
		return NULL;
	return order_names[o];
}

/* The index of name in cat->entries (sorted by name), or -1. */
static ssize_t entry_index(const struct catalog *cat, const char *name)
{
	size_t lo = 0, hi = cat->n_entries;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(cat->entries[mid]->name, name);

		if (c == 0)
			return (ssize_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Every name of list must be in the catalogue. */
static int check_names(const struct catalog *cat, const char *const *list, const char *what,
		       struct diag *reterr)
{
	for (; list && *list; list++) {
		if (entry_index(cat, *list) < 0) {
			diag_set(reterr, NULL, 0, 0, "unknown adapter '%.100s' in the %s list",
				 *list, what);
			return -EINVAL;
		}
	}
	return 0;
}

/* The entries to consider, in order (into *ret, n returned). */
static size_t build_order(const struct select_input *in, enum select_order order,
			  const struct registry_entry ***ret)
{
	const struct catalog *cat = in->cat;
	const struct registry_entry **v;
	const char *const *p;
	bool *seen = NULL;
	size_t n = 0, cap = cat->n_entries, i;

	if (order == SELECT_ORDER_EXPLICIT) {
		for (cap = 0, p = in->candidates; *p; p++)
			cap++;
	}
	v = xcalloc(cap ? cap : 1, sizeof(const struct registry_entry *));
	if (order != SELECT_ORDER_CATALOGUE)
		seen = xcalloc(cat->n_entries ? cat->n_entries : 1, sizeof(*seen));
	if (order == SELECT_ORDER_EXPLICIT) {
		for (p = in->candidates; *p; p++) {
			i = (size_t)entry_index(cat, *p); /* checked before */
			if (!seen[i])
				v[n++] = cat->entries[i];
			seen[i] = true;
		}
		goto out;
	}
	if (order == SELECT_ORDER_PREFERENCE) {
		for (p = in->preference; *p; p++) {
			i = (size_t)entry_index(cat, *p);
			if (!seen[i] && cat->entries[i]->profile)
				v[n++] = cat->entries[i];
			seen[i] = true;
		}
	}
	for (i = 0; i < cat->n_entries; i++)
		if (cat->entries[i]->profile && !(seen && seen[i]))
			v[n++] = cat->entries[i];
out:
	free(seen);
	*ret = v;
	return n;
}

static json_t *candidate_json(const struct select_candidate *c)
{
	json_t *o = json_object();

	(void)json_object_set_new(o, "adapter", json_string(c->name));
	(void)json_object_set_new(o, "profile_hash",
				  c->profile_hash ? json_string(c->profile_hash) : json_null());
	(void)json_object_set_new(o, "unmet", requirements_axes_json(c->unmet));
	return o;
}

json_t *selection_receipt(const struct selection *s)
{
	json_t *o, *cands;
	size_t i;

	if (s->chosen || !s->requirements)
		return NULL;
	o = json_object();
	cands = json_array();
	for (i = 0; i < s->n_considered; i++)
		(void)json_array_append_new(cands, candidate_json(&s->considered[i]));
	(void)json_object_set_new(o, "candidates", cands);
	(void)json_object_set_new(o, "kind", json_string(SELECT_RECEIPT_KIND));
	(void)json_object_set_new(o, "requirements", json_deep_copy(s->requirements));
	(void)json_object_set_new(o, "unmet", requirements_axes_json(s->unmet));
	return o;
}

int select_receipt_hash(const json_t *receipt, char hex[SHA256_HEX_LEN + 1])
{
	struct sbuf sb = SBUF_INIT(RECEIPT_MAX_BYTES);
	int r;

	r = json_canon_jcs(receipt, &sb);
	if (r == 0)
		hash_sha256_hex(sb.buf, sb.len, hex);
	sbuf_release(&sb);
	return r;
}

/* A string RFC 8785 writes as is between quotes: printable ASCII without
 * '"' and '\\'. Registry names, hex hashes and axis names always are. */
static bool jcs_plain(const char *v)
{
	for (; *v; v++)
		if (*v < 0x20 || *v > 0x7e || *v == '"' || *v == '\\')
			return false;
	return true;
}

/* "[\"a\",\"b\"]" for the axes of mask. */
static int axes_canon(uint32_t mask, struct sbuf *out)
{
	bool first = true;
	int a, r;

	r = sbuf_addc(out, '[');
	for (a = 0; a < _REQ_AXIS_MAX && r == 0; a++) {
		if (!(mask & (1u << a)))
			continue;
		if (!first)
			r = sbuf_addc(out, ',');
		first = false;
		if (r == 0)
			r = sbuf_addc(out, '"');
		if (r == 0)
			r = sbuf_adds(out, requirements_axis_name((enum req_axis)a));
		if (r == 0)
			r = sbuf_addc(out, '"');
	}
	return r ? r : sbuf_addc(out, ']');
}

/* The RFC 8785 form of the receipt, written directly: the same bytes as
 * json_canon_jcs(selection_receipt(s)) (keys are emitted in their sorted
 * order), without building 1,000 JSON objects first. -EINVAL when a name
 * would need escaping (the caller then takes the general path). */
static int receipt_canon(const struct selection *s, struct sbuf *out)
{
	size_t i;
	int r;

	r = sbuf_adds(out, "{\"candidates\":[");
	for (i = 0; i < s->n_considered && r == 0; i++) {
		const struct select_candidate *c = &s->considered[i];

		if (!jcs_plain(c->name) || (c->profile_hash && !jcs_plain(c->profile_hash)))
			return -EINVAL;
		r = sbuf_adds(out, i ? ",{\"adapter\":\"" : "{\"adapter\":\"");
		if (r == 0)
			r = sbuf_adds(out, c->name);
		if (r == 0)
			r = sbuf_adds(out, "\",\"profile_hash\":");
		if (r == 0 && c->profile_hash) {
			r = sbuf_addc(out, '"');
			if (r == 0)
				r = sbuf_adds(out, c->profile_hash);
			if (r == 0)
				r = sbuf_addc(out, '"');
		} else if (r == 0) {
			r = sbuf_adds(out, "null");
		}
		if (r == 0)
			r = sbuf_adds(out, ",\"unmet\":");
		if (r == 0)
			r = axes_canon(c->unmet, out);
		if (r == 0)
			r = sbuf_addc(out, '}');
	}
	if (r == 0)
		r = sbuf_adds(out, "],\"kind\":\"" SELECT_RECEIPT_KIND "\",\"requirements\":");
	if (r == 0)
		r = json_canon_jcs(s->requirements, out);
	if (r == 0)
		r = sbuf_adds(out, ",\"unmet\":");
	if (r == 0)
		r = axes_canon(s->unmet, out);
	return r ? r : sbuf_addc(out, '}');
}

static void hash_receipt(struct selection *s)
{
	struct sbuf sb = SBUF_INIT(RECEIPT_MAX_BYTES);
	size_t i;
	int r;

	for (i = 0; i < s->n_considered; i++)
		s->unmet |= s->considered[i].unmet;
	r = receipt_canon(s, &sb);
	if (r == 0) {
		hash_sha256_hex(sb.buf, sb.len, s->receipt_hash);
	} else {
		json_t *o = selection_receipt(s);

		r = select_receipt_hash(o, s->receipt_hash);
		json_decref(o);
	}
	sbuf_release(&sb);
	if (r < 0)
		BUG("cannot canonicalise a refusal receipt: %s", strerror(-r));
}

/* The seed's sandbox tier p reaches in one of host's tiers it declares. */
static enum sandbox_tier hosted_tier(const struct profile *p, unsigned host)
{
	unsigned m = host & p->runtime.sandbox.tiers;

	if (m & (1u << SANDBOX_KIND_CONTAINER))
		return SANDBOX_TIER_CONTAINER;
	if (m & ((1u << SANDBOX_KIND_BWRAP) | (1u << SANDBOX_KIND_LANDLOCK)))
		return SANDBOX_TIER_PROCESS;
	return SANDBOX_TIER_NONE;
}

int select_adapter(const struct select_input *in, struct selection *ret, struct diag *reterr)
{
	static const struct requirements none = REQUIREMENTS_INIT;
	const struct requirements *req = in->req ? in->req : &none;
	const struct registry_entry **order = NULL;
	struct selection s = {0};
	struct sbuf unmet = SBUF_INIT(4096);
	size_t n, i;
	int r;

	r = check_names(in->cat, in->candidates, "candidate", reterr);
	if (r == 0)
		r = check_names(in->cat, in->preference, "preference", reterr);
	if (r < 0)
		return r;
	s.order = in->candidates   ? SELECT_ORDER_EXPLICIT
		  : in->preference ? SELECT_ORDER_PREFERENCE
				   : SELECT_ORDER_CATALOGUE;
	n = build_order(in, s.order, &order);
	s.considered = xcalloc(n ? n : 1, sizeof(*s.considered));
	s.requirements = requirements_json(req);
	for (i = 0; i < n; i++) {
		const struct profile *p = order[i]->profile;
		struct select_candidate *c = &s.considered[s.n_considered++];
		const struct adapter_strategy *sp = NULL;
		struct strategy_resolved sr;

		c->name = order[i]->name;
		c->profile = p;
		if (p) {
			c->profile_hash = profile_hash(p);
			if (req->set & REQ_STRATEGY_AXES) {
				(void)catalog_profile_strategy(in->cat, p, &sr);
				sp = &sr.strategy;
			}
		}
		c->unmet = requirements_unmet(req, p, sp);
		if (p && (c->unmet & (1u << REQ_SANDBOX)) &&
		    hosted_tier(p, in->host_tiers) >= req->sandbox)
			c->unmet &= ~(1u << REQ_SANDBOX);
		if (c->unmet == 0) {
			s.chosen = c;
			break;
		}
	}
	free((void *)order);
	if (s.chosen) {
		*ret = s;
		return 0;
	}
	hash_receipt(&s);
	(void)requirements_axes_describe(s.unmet, &unmet);
	diag_set(
		reterr, NULL, 0, 0,
		"capability mismatch: no adapter satisfies the task (unmet: %s; %zu candidate%s considered; refusal receipt %s)",
		unmet.len ? unmet.buf : "-", s.n_considered, s.n_considered == 1 ? "" : "s",
		s.receipt_hash);
	sbuf_release(&unmet);
	*ret = s;
	return -ENOTSUP;
}

void selection_release(struct selection *s)
{
	if (!s)
		return;
	free(s->considered);
	json_decref(s->requirements);
	memset(s, 0, sizeof(*s));
}
