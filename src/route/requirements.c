#include "route/requirements.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

/* How a token quotes itself in messages: at most this many bytes. */
#define TOKEN_QUOTE_MAX 100

enum req_kind {
	REQ_KIND_BOOL,	  /* capability:AXIS */
	REQ_KIND_TIER,	  /* capability:sandbox=TIER */
	REQ_KIND_WORKERS, /* capability:max_parallel_workers=N */
	REQ_KIND_MODE,	  /* capability:output_mode=MODE */
};

static const struct {
	const char *name;
	enum req_kind kind;
} axes[_REQ_AXIS_MAX] = {
	[REQ_AGENTS_MD] = {"agents_md", REQ_KIND_BOOL},
	[REQ_COMPUTER_USE] = {"computer_use", REQ_KIND_BOOL},
	[REQ_ENDPOINT] = {"endpoint", REQ_KIND_BOOL},
	[REQ_LOCAL_MODELS] = {"local_models", REQ_KIND_BOOL},
	[REQ_MAX_PARALLEL_WORKERS] = {"max_parallel_workers", REQ_KIND_WORKERS},
	[REQ_MCP_CLIENT] = {"mcp_client", REQ_KIND_BOOL},
	[REQ_MCP_SERVER] = {"mcp_server", REQ_KIND_BOOL},
	[REQ_NATIVE_SUBAGENTS] = {"native_subagents", REQ_KIND_BOOL},
	[REQ_OUTPUT_MODE] = {"output_mode", REQ_KIND_MODE},
	[REQ_RESUME] = {"resume", REQ_KIND_BOOL},
	[REQ_SAMPLING] = {"sampling", REQ_KIND_BOOL},
	[REQ_SANDBOX] = {"sandbox", REQ_KIND_TIER},
	[REQ_STREAMING] = {"streaming", REQ_KIND_BOOL},
	[REQ_TOOL_USE] = {"tool_use", REQ_KIND_BOOL},
	[REQ_UNATTENDED] = {"unattended", REQ_KIND_BOOL},
	[REQ_VISION] = {"vision", REQ_KIND_BOOL},
};

const char *requirements_axis_name(enum req_axis a)
{
	if ((int)a < 0 || a >= _REQ_AXIS_MAX)
		return NULL;
	return axes[a].name;
}

static int axis_lookup(const char *s, size_t n)
{
	int a;

	for (a = 0; a < _REQ_AXIS_MAX; a++)
		if (strlen(axes[a].name) == n && memcmp(axes[a].name, s, n) == 0)
			return a;
	return -EINVAL;
}

enum req_axis requirements_axis_from_name(const char *name)
{
	if (!name)
		return _REQ_AXIS_INVALID;
	return (enum req_axis)axis_lookup(name, strlen(name));
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* [*s, *s + *n) without ASCII whitespace at both ends. */
static void trim(const char **s, size_t *n)
{
	while (*n && is_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && is_space((*s)[*n - 1]))
		(*n)--;
}

/* Every axis name, ", " separated, into buf. */
static const char *axis_list(char *buf, size_t size)
{
	size_t used = 0;
	int a;

	buf[0] = '\0';
	for (a = 0; a < _REQ_AXIS_MAX && used < size; a++) {
		int w = snprintf(buf + used, size - used, "%s%s", a ? ", " : "", axes[a].name);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

/* The effective requirement mask: sandbox=none and max_parallel_workers=1
 * ask for nothing every profile does not have. */
static uint32_t effective(const struct requirements *req)
{
	uint32_t m = req->set;

	if (req->sandbox == SANDBOX_TIER_NONE)
		m &= ~(1u << REQ_SANDBOX);
	if (req->max_parallel_workers <= 1)
		m &= ~(1u << REQ_MAX_PARALLEL_WORKERS);
	return m;
}

/* A copy of [s, s + n) into buf when it fits (else ""), for lookups. */
static const char *cut(const char *s, size_t n, char *buf, size_t size)
{
	if (n >= size) {
		buf[0] = '\0';
		return buf;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

/* How many bytes of an n-byte string messages quote. */
static int quote_len(size_t n)
{
	return n > TOKEN_QUOTE_MAX ? TOKEN_QUOTE_MAX : (int)n;
}

/* A capability token, split. */
struct req_token {
	const char *token; /* as given, for messages */
	int q;		   /* the bytes of it messages quote */
	int axis;
	const char *val; /* after '=', trimmed; NULL when there is no '=' */
	size_t vn;
};

/* One adder per kind of axis: the token's value into *r, 0, or -EINVAL
 * with the diag. */
typedef int req_add_fn(struct requirements *r, const struct req_token *tk, struct diag *reterr);

static int add_bool(struct requirements *r, const struct req_token *tk, struct diag *reterr)
{
	const char *name = axes[tk->axis].name;

	(void)r;
	if (!tk->val)
		return 0;
	diag_set(
		reterr, NULL, 0, 0,
		"capability requirement '%.*s': '%s' is a boolean axis and takes no value (write 'capability:%s')",
		tk->q, tk->token, name, name);
	return -EINVAL;
}

static int add_tier(struct requirements *r, const struct req_token *tk, struct diag *reterr)
{
	char vbuf[64];
	int tier;

	if (!tk->val || tk->vn == 0) {
		diag_set(
			reterr, NULL, 0, 0,
			"capability requirement '%.*s': 'sandbox' needs a tier: capability:sandbox=<none|process|container|microvm>",
			tk->q, tk->token);
		return -EINVAL;
	}
	tier = (int)sandbox_tier_from_string(cut(tk->val, tk->vn, vbuf, sizeof(vbuf)));
	if (tier < 0) {
		diag_set(
			reterr, NULL, 0, 0,
			"capability requirement '%.*s': unknown sandbox tier '%.*s' (accepted: none, process, container, microvm)",
			tk->q, tk->token, quote_len(tk->vn), tk->val);
		return -EINVAL;
	}
	if ((r->set & (1u << tk->axis)) && r->sandbox != (enum sandbox_tier)tier) {
		diag_set(
			reterr, NULL, 0, 0,
			"capability requirement '%.*s': conflicts with 'sandbox=%s' required before",
			tk->q, tk->token, sandbox_tier_to_string(r->sandbox));
		return -EINVAL;
	}
	r->sandbox = (enum sandbox_tier)tier;
	return 0;
}

/* [val, val + vn) as a count of workers, 1..PROFILE_MAX_WORKERS, into *ret. */
static bool workers_parse(const char *val, size_t vn, int64_t *ret)
{
	int64_t v = 0;
	size_t i;

	for (i = 0; i < vn && v <= PROFILE_MAX_WORKERS; i++) {
		if (val[i] < '0' || val[i] > '9')
			break;
		v = v * 10 + (val[i] - '0');
	}
	if (i < vn || v < 1 || v > PROFILE_MAX_WORKERS)
		return false;
	*ret = v;
	return true;
}

static int add_workers(struct requirements *r, const struct req_token *tk, struct diag *reterr)
{
	int64_t v = 0;

	if (!tk->val || tk->vn == 0) {
		diag_set(
			reterr, NULL, 0, 0,
			"capability requirement '%.*s': 'max_parallel_workers' needs an integer: capability:max_parallel_workers=<1..%d>",
			tk->q, tk->token, PROFILE_MAX_WORKERS);
		return -EINVAL;
	}
	if (!workers_parse(tk->val, tk->vn, &v)) {
		diag_set(
			reterr, NULL, 0, 0,
			"capability requirement '%.*s': max_parallel_workers needs an integer from 1 to %d, not '%.*s'",
			tk->q, tk->token, PROFILE_MAX_WORKERS, quote_len(tk->vn), tk->val);
		return -EINVAL;
	}
	if ((r->set & (1u << tk->axis)) && r->max_parallel_workers != v) {
		diag_set(
			reterr, NULL, 0, 0,
			"capability requirement '%.*s': conflicts with 'max_parallel_workers=%lld' required before",
			tk->q, tk->token, (long long)r->max_parallel_workers);
		return -EINVAL;
	}
	r->max_parallel_workers = v;
	return 0;
}

static int add_mode(struct requirements *r, const struct req_token *tk, struct diag *reterr)
{
	char vbuf[64];
	int mode;

	if (!tk->val || tk->vn == 0) {
		diag_set(
			reterr, NULL, 0, 0,
			"capability requirement '%.*s': 'output_mode' needs a mode: capability:output_mode=<git-diff|artifact>",
			tk->q, tk->token);
		return -EINVAL;
	}
	mode = (int)output_mode_from_string(cut(tk->val, tk->vn, vbuf, sizeof(vbuf)));
	if (mode < 0) {
		diag_set(
			reterr, NULL, 0, 0,
			"capability requirement '%.*s': unknown output mode '%.*s' (accepted: git-diff, artifact)",
			tk->q, tk->token, quote_len(tk->vn), tk->val);
		return -EINVAL;
	}
	if ((r->set & (1u << tk->axis)) && r->output_mode != (enum output_mode)mode) {
		diag_set(
			reterr, NULL, 0, 0,
			"capability requirement '%.*s': conflicts with 'output_mode=%s' required before",
			tk->q, tk->token, output_mode_to_string(r->output_mode));
		return -EINVAL;
	}
	r->output_mode = (enum output_mode)mode;
	return 0;
}

static req_add_fn *const adders[] = {
	[REQ_KIND_BOOL] = add_bool,
	[REQ_KIND_TIER] = add_tier,
	[REQ_KIND_WORKERS] = add_workers,
	[REQ_KIND_MODE] = add_mode,
};

int requirements_add(struct requirements *req, const char *token, struct diag *reterr)
{
	const size_t plen = strlen(REQUIREMENTS_PREFIX);
	struct requirements r = *req;
	struct req_token tk = {.token = token, .val = NULL, .vn = 0};
	const char *t = token, *axis, *eq;
	size_t tn, an;
	char list[512];
	int rc;

	if (!token)
		return 0;
	tn = strlen(t);
	/* messages quote the token as given */
	tk.q = quote_len(tn);
	trim(&t, &tn);
	if (tn < plen || memcmp(t, REQUIREMENTS_PREFIX, plen) != 0)
		return 0;
	axis = t + plen;
	an = tn - plen;
	eq = memchr(axis, '=', an);
	if (eq) {
		tk.val = eq + 1;
		tk.vn = (size_t)(axis + an - tk.val);
		an = (size_t)(eq - axis);
		trim(&tk.val, &tk.vn);
	}
	trim(&axis, &an);
	tk.axis = axis_lookup(axis, an);
	if (tk.axis < 0) {
		diag_set(reterr, NULL, 0, 0,
			 "capability requirement '%.*s': unknown axis '%.*s' (accepted: %s)", tk.q,
			 token, quote_len(an), axis, axis_list(list, sizeof(list)));
		return -EINVAL;
	}
	rc = adders[axes[tk.axis].kind](&r, &tk, reterr);
	if (rc < 0)
		return rc;
	r.set |= 1u << tk.axis;
	*req = r;
	return 1;
}

int requirements_parse(const char *const *tokens, size_t n, struct requirements *ret,
		       struct diag *reterr)
{
	struct requirements req = REQUIREMENTS_INIT;
	int count = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		int r = requirements_add(&req, tokens[i], reterr);

		if (r < 0)
			return r;
		count += r;
	}
	*ret = req;
	return count;
}

json_t *requirements_json(const struct requirements *req)
{
	uint32_t m = effective(req);
	json_t *o = json_object();
	int a;

	for (a = 0; a < _REQ_AXIS_MAX; a++) {
		json_t *v;

		switch (axes[a].kind) {
		case REQ_KIND_BOOL:
			v = json_boolean(m & (1u << a));
			break;
		case REQ_KIND_TIER:
			v = json_string(sandbox_tier_to_string(
				(m & (1u << a)) ? req->sandbox : SANDBOX_TIER_NONE));
			break;
		case REQ_KIND_WORKERS:
			v = json_integer((m & (1u << a)) ? (json_int_t)req->max_parallel_workers
							 : 1);
			break;
		case REQ_KIND_MODE:
		default:
			v = (m & (1u << a)) ? json_string(output_mode_to_string(req->output_mode))
					    : json_null();
			break;
		}
		if (!v)
			BUG("cannot build the requirements object");
		(void)json_object_set_new(o, axes[a].name, v);
	}
	return o;
}

int requirements_describe(const struct requirements *req, struct sbuf *out)
{
	uint32_t m = effective(req);
	int a, r = 0;

	if (!m)
		return sbuf_adds(out, "none");
	for (a = 0; a < _REQ_AXIS_MAX && r == 0; a++) {
		const char *sep = (m & ((1u << a) - 1)) ? ", " : "";

		if (!(m & (1u << a)))
			continue;
		switch (axes[a].kind) {
		case REQ_KIND_BOOL:
			r = sbuf_addf(out, "%s%s", sep, axes[a].name);
			break;
		case REQ_KIND_TIER:
			r = sbuf_addf(out, "%s%s=%s", sep, axes[a].name,
				      sandbox_tier_to_string(req->sandbox));
			break;
		case REQ_KIND_WORKERS:
			r = sbuf_addf(out, "%s%s=%lld", sep, axes[a].name,
				      (long long)req->max_parallel_workers);
			break;
		case REQ_KIND_MODE:
			r = sbuf_addf(out, "%s%s=%s", sep, axes[a].name,
				      output_mode_to_string(req->output_mode));
			break;
		}
	}
	return r;
}

uint32_t requirements_unmet(const struct requirements *req, const struct profile *p,
			    const struct adapter_strategy *s)
{
	uint32_t m = effective(req), unmet = 0;
	const struct profile_capabilities *c;
	int a;

	if (!p)
		return m;
	c = &p->caps;
	for (a = 0; a < _REQ_AXIS_MAX; a++) {
		bool ok;

		if (!(m & (1u << a)))
			continue;
		if (!s && ((1u << a) & REQ_STRATEGY_AXES))
			BUG("requirement '%s' needs the resolved strategy", axes[a].name);
		switch ((enum req_axis)a) {
		case REQ_AGENTS_MD:
			ok = c->agents_md;
			break;
		case REQ_COMPUTER_USE:
			ok = c->computer_use;
			break;
		case REQ_ENDPOINT:
			ok = c->supports_endpoint;
			break;
		case REQ_LOCAL_MODELS:
			ok = c->local_models;
			break;
		case REQ_MAX_PARALLEL_WORKERS:
			ok = c->max_parallel_workers >= req->max_parallel_workers;
			break;
		case REQ_MCP_CLIENT:
			ok = c->mcp_client;
			break;
		case REQ_MCP_SERVER:
			ok = c->mcp_server;
			break;
		case REQ_NATIVE_SUBAGENTS:
			ok = c->native_subagents;
			break;
		case REQ_OUTPUT_MODE:
			ok = s->output_mode == req->output_mode;
			break;
		case REQ_RESUME:
			ok = s->resume != RESUME_UNSUPPORTED;
			break;
		case REQ_SAMPLING:
			ok = c->supports_sampling_params;
			break;
		case REQ_SANDBOX:
			ok = c->sandbox >= req->sandbox;
			break;
		case REQ_STREAMING:
			ok = c->streaming;
			break;
		case REQ_TOOL_USE:
			ok = c->tool_use;
			break;
		case REQ_UNATTENDED:
			ok = s->dangerous_mode != DANGEROUS_MODE_UNSUPPORTED;
			break;
		case REQ_VISION:
			ok = c->vision;
			break;
		default:
			BUG("unknown requirement axis %d", a);
		}
		if (!ok)
			unmet |= 1u << a;
	}
	return unmet;
}

json_t *requirements_axes_json(uint32_t mask)
{
	json_t *arr = json_array();
	int a;

	for (a = 0; a < _REQ_AXIS_MAX; a++)
		if (mask & (1u << a))
			(void)json_array_append_new(arr, json_string(axes[a].name));
	return arr;
}

int requirements_axes_describe(uint32_t mask, struct sbuf *out)
{
	bool first = true;
	int a, r = 0;

	for (a = 0; a < _REQ_AXIS_MAX && r == 0; a++) {
		if (!(mask & (1u << a)))
			continue;
		r = sbuf_addf(out, "%s%s", first ? "" : ", ", axes[a].name);
		first = false;
	}
	return r;
}

int requirements_offered_describe(const struct profile *p, const struct adapter_strategy *s,
				  struct sbuf *out)
{
	struct requirements all = REQUIREMENTS_INIT;
	uint32_t unmet;
	size_t n = 0;
	int a, r = 0;

	/* every boolean axis required: what is not unmet is offered */
	for (a = 0; a < _REQ_AXIS_MAX; a++)
		if (a != REQ_MAX_PARALLEL_WORKERS && a != REQ_OUTPUT_MODE && a != REQ_SANDBOX &&
		    (s || !((1u << a) & REQ_STRATEGY_AXES)))
			all.set |= 1u << a;
	unmet = requirements_unmet(&all, p, s);
	for (a = 0; a < _REQ_AXIS_MAX; a++)
		if ((all.set & (1u << a)) && !(unmet & (1u << a)))
			r |= sbuf_addf(out, "%s%s", n++ ? ", " : "", axes[a].name);
	r |= sbuf_addf(out, "%smax_parallel_workers=%lld", n++ ? ", " : "",
		       (long long)p->caps.max_parallel_workers);
	if (s)
		r |= sbuf_addf(out, ", output_mode=%s", output_mode_to_string(s->output_mode));
	r |= sbuf_addf(out, ", sandbox=%s", sandbox_tier_to_string(p->caps.sandbox));
	return r < 0 ? r : 0;
}
