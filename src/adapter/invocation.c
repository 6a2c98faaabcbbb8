/* The invocation builder (invocation.h). */
#include "adapter/invocation.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/argv-order.h"
#include "adapter/catalog.h"
#include "adapter/credential.h"
#include "adapter/envpolicy.h"
#include "adapter/profile.h"
#include "adapter/session.h"
#include "adapter/strategy.h"
#include "proc/probe.h"
#include "util/sbuf.h"
#include "util/json.h"
#include "util/url.h"
#include "util/xalloc.h"
#include "util/redact.h"
#include "util/banned.h"

/* Largest expansion of one template (a config file). */
#define EXPAND_MAX (4u << 20)
/* The built-in runner's manifest session ids: [A-Za-z0-9._-]{1,128}. */
#define RUNNER_SESSION_MAX 128

static const char *const sampling_names[_SAMPLING_KEY_MAX] = {
	[SAMPLING_TEMPERATURE] = "temperature",
	[SAMPLING_TOP_P] = "top_p",
	[SAMPLING_TOP_K] = "top_k",
	[SAMPLING_MAX_TOKENS] = "max_tokens",
	[SAMPLING_BASE_URL] = "base_url",
	[SAMPLING_API_KEY_ENV] = "api_key_env",
};

static const char *const delivery_names[_PROMPT_DELIVERY_MAX] = {
	[PROMPT_DELIVERY_ARGV] = "argv", [PROMPT_DELIVERY_STDIN] = "stdin",
	[PROMPT_DELIVERY_FILE] = "file", [PROMPT_DELIVERY_ACP] = "acp",
	[PROMPT_DELIVERY_PTY] = "pty",
};

static const char *const base_names[_INVOCATION_BASE_MAX] = {
	[INVOCATION_BASE_SESSION] = "session",
	[INVOCATION_BASE_STATE] = "state",
};

const char *sampling_key_to_string(enum sampling_key k)
{
	return k >= 0 && k < _SAMPLING_KEY_MAX ? sampling_names[k] : NULL;
}

enum sampling_key sampling_key_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _SAMPLING_KEY_MAX; i++)
		if (strcmp(sampling_names[i], s) == 0)
			return (enum sampling_key)i;
	return _SAMPLING_KEY_INVALID;
}

const char *prompt_delivery_to_string(enum prompt_delivery v)
{
	return v >= 0 && v < _PROMPT_DELIVERY_MAX ? delivery_names[v] : NULL;
}

const char *invocation_base_to_string(enum invocation_base v)
{
	return v >= 0 && v < _INVOCATION_BASE_MAX ? base_names[v] : NULL;
}

/* ---- --set KEY=VALUE ---- */

static int parse_number(const char *s, double *ret)
{
	char *end;
	double v;

	if (!*s || strchr(" \t\n", *s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return -EINVAL;
	*ret = v;
	return 0;
}

static int parse_int(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	if (!((*s >= '0' && *s <= '9') || *s == '-'))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* A value that may be expanded into a config file or the environment:
 * printable ASCII without blanks, quotes, backslashes or braces. */
static bool plain_token(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= 0x20 || c >= 0x7f || strchr("\"'\\{}`$<>", c))
			return false;
	}
	return true;
}

int invocation_sampling_set(struct invocation_sampling *s, const char *key, const char *value,
			    struct diag *reterr)
{
	enum sampling_key k = sampling_key_from_string(key);
	double d;
	int64_t i;

	if (k < 0) {
		diag_set(
			reterr, NULL, 0, 0,
			"unknown parameter '%s' (known: temperature, top_p, top_k, max_tokens, base_url, api_key_env)",
			key ? key : "");
		return -EINVAL;
	}
	switch (k) {
	case SAMPLING_TEMPERATURE:
	case SAMPLING_TOP_P:
		if (parse_number(value, &d) < 0 || d < 0 || (k == SAMPLING_TOP_P && d > 1)) {
			diag_set(reterr, NULL, 0, 0, "%s: '%s' is not a number %s", key, value,
				 k == SAMPLING_TOP_P ? "between 0 and 1" : ">= 0");
			return -EINVAL;
		}
		if (k == SAMPLING_TEMPERATURE)
			s->temperature = d;
		else
			s->top_p = d;
		break;
	case SAMPLING_TOP_K:
	case SAMPLING_MAX_TOKENS:
		if (parse_int(value, &i) < 0 || i < (k == SAMPLING_TOP_K ? 0 : 1)) {
			diag_set(reterr, NULL, 0, 0, "%s: '%s' is not an integer %s", key, value,
				 k == SAMPLING_TOP_K ? ">= 0" : ">= 1");
			return -EINVAL;
		}
		if (k == SAMPLING_TOP_K)
			s->top_k = i;
		else
			s->max_tokens = i;
		break;
	case SAMPLING_BASE_URL:
		if (url_check(value, NULL, reterr) < 0)
			return -EINVAL;
		s->base_url = value;
		break;
	case SAMPLING_API_KEY_ENV:
		if (!*value) {
			diag_set(reterr, NULL, 0, 0, "api_key_env: empty name");
			return -EINVAL;
		}
		s->api_key_env = value;
		break;
	case _SAMPLING_KEY_MAX:
	case _SAMPLING_KEY_INVALID:
	default:
		return -EINVAL;
	}
	s->set |= 1u << k;
	return 0;
}

/* ---- the sampling gate ---- */

static bool narrow_cap(const struct profile_capabilities *c, enum sampling_key k)
{
	switch (k) {
	case SAMPLING_TEMPERATURE:
		return c->supports_temperature;
	case SAMPLING_TOP_P:
		return c->supports_top_p;
	case SAMPLING_TOP_K:
		return c->supports_top_k;
	case SAMPLING_MAX_TOKENS:
		return c->supports_max_tokens;
	case SAMPLING_BASE_URL:
	case SAMPLING_API_KEY_ENV:
		return c->supports_endpoint;
	case _SAMPLING_KEY_MAX:
	case _SAMPLING_KEY_INVALID:
	default:
		return false;
	}
}

int invocation_check_sampling(const struct profile *p, const struct invocation_sampling *s,
			      struct diag *reterr)
{
	struct sbuf keys = SBUF_INIT(SIZE_MAX);
	int k;

	if (!s->set || p->caps.supports_sampling_params)
		return 0;
	for (k = 0; k < _SAMPLING_KEY_MAX; k++) {
		if (!(s->set & (1u << k)) || narrow_cap(&p->caps, (enum sampling_key)k))
			continue;
		(void)sbuf_addf(&keys, "%s%s", keys.len ? ", " : "", sampling_names[k]);
	}
	if (keys.len == 0)
		return 0;
	diag_set(
		reterr, NULL, 0, 0,
		"Adapter '%s' does not declare the 'supports_sampling_params' capability but sampling/endpoint parameters were requested: %s. Refusing to spawn instead of silently dropping them.",
		p->name, keys.buf);
	sbuf_release(&keys);
	return -EPERM;
}

/* ---- the plan ---- */

void invocation_plan_init(struct invocation_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	strvec_init(&plan->argv);
	strvec_init(&plan->env);
	strvec_init(&plan->warnings);
	strvec_init(&plan->secrets);
	strvec_init(&plan->login_src);
	strvec_init(&plan->login_dst);
	strvec_init(&plan->mcp_programs);
	strvec_init(&plan->mcp_cleanup_more);
	plan->dialect = DIALECT_NONE;
	plan->strategy = strategy_default;
}

void invocation_plan_release(struct invocation_plan *plan)
{
	size_t i;

	strvec_clear(&plan->argv);
	strvec_clear(&plan->env);
	strvec_clear(&plan->warnings);
	strvec_clear(&plan->secrets);
	strvec_clear(&plan->login_src);
	strvec_clear(&plan->login_dst);
	strvec_clear(&plan->mcp_programs);
	strvec_clear(&plan->mcp_cleanup_more);
	free(plan->cwd);
	free(plan->session_dir);
	free(plan->state_dir);
	free(plan->stdin_path);
	free(plan->resume_id);
	free(plan->acp_prompt);
	free(plan->session_id);
	free(plan->model);
	free(plan->hooks_socket);
	free(plan->mcp_config);
	free(plan->mcp_cleanup);
	free(plan->mcp_acp);
	for (i = 0; i < plan->n_files; i++) {
		free(plan->files[i].path);
		free(plan->files[i].content);
	}
	free(plan->files);
	invocation_plan_init(plan);
}

/* Everything the steps of one build share. */
struct build {
	const struct invocation_request *req;
	const struct profile *p;
	struct invocation_plan *plan;
	struct diag *reterr;
	bool runner;	      /* the openai_agents module (the built-in runner) */
	bool isolated;	      /* runtime.home: isolated */
	const char *model_id; /* after the alias table; NULL none */
	char *model_arg;      /* the model as passed on argv (endpoint spelling); owned */
	const char *api_key;  /* the value of api_key_env (borrowed from host_env) */
	char derived[SESSION_UUID_LEN + 1];
	struct profile_vars vars;
	/* argv pieces, in order */
	struct strvec resume, dangerous, session_args, endpoint_args, hooks_args, prompt_args,
		module_args;
	char *hook_command;  /* {hook_command}; owned */
	char *prompt;	     /* the prompt text with the attachments block; owned */
	char *prompt_path;   /* SESSION/prompt.txt; owned */
	char *manifest_path; /* SESSION/manifest.json; owned */
	/* the MCP servers with their ${NAME} values resolved (strings borrowed
	 * from the request or host_env) */
	struct mcp_server *mcp;
	const char **mcp_vals; /* the resolved env and header values, one array */
	struct strvec mcp_args;
	char *mcp_text; /* the rendered configuration (owned) */
};

static void warn(struct build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct build *b, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	strvec_push(&b->plan->warnings, buf);
}

static char *path_join(const char *dir, const char *name)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", name);
	return sbuf_detach(&sb, NULL);
}

/* What a missing placeholder stands for, for messages. */
static const char *placeholder_hint(enum profile_placeholder ph)
{
	switch (ph) {
	case PH_MODEL:
		return "a model";
	case PH_BASE_URL:
		return "base_url";
	case PH_API_KEY_ENV:
	case PH_API_KEY:
		return "api_key_env";
	case PH_HOME:
		return "a HOME (none is set)";
	case PH_SESSION_ID:
		return "a session id";
	case PH_PROMPT_FILE:
		return "a prompt file";
	case PH_WORKDIR:
		return "a workdir";
	case PH_HOOK_COMMAND:
	case PH_HOOKS_SOCKET:
		return "the hooks channel (event channel hooks)";
	case _PH_MAX:
	case _PH_INVALID:
	default:
		return "a value";
	}
}

/* Expand tmpl; what names it in messages ("runtime.env.FOO"). */
static int expand(struct build *b, const char *tmpl, const char *what, char **ret)
{
	struct sbuf sb = SBUF_INIT(EXPAND_MAX);
	int r, ph;

	r = profile_expand(tmpl, &b->vars, &sb);
	if (r == -ENOENT) {
		for (ph = 0; ph < _PH_MAX; ph++) {
			char tok[64];

			(void)snprintf(tok, sizeof(tok), "{%s}",
				       profile_placeholder_name((enum profile_placeholder)ph));
			if (!b->vars.v[ph] && strstr(tmpl, tok))
				break;
		}
		diag_set(b->reterr, NULL, 0, 0,
			 "profile '%s': %s needs %s (its template uses {%s})", b->p->name, what,
			 placeholder_hint((enum profile_placeholder)ph),
			 ph < _PH_MAX ? profile_placeholder_name((enum profile_placeholder)ph)
				      : "?");
		r = -EINVAL;
	} else if (r < 0) {
		diag_set(b->reterr, NULL, 0, 0, "profile '%s': %s is too long once expanded",
			 b->p->name, what);
	}
	if (r < 0) {
		sbuf_release(&sb);
		return r;
	}
	*ret = sbuf_detach(&sb, NULL);
	return 0;
}

static int push_expanded(struct build *b, struct strvec *sv, const struct profile_strv *args,
			 const char *what)
{
	size_t i;
	int r;

	for (i = 0; i < args->n; i++) {
		char *s = NULL, path[128];

		(void)snprintf(path, sizeof(path), "%s[%zu]", what, i);
		r = expand(b, args->v[i], path, &s);
		if (r < 0)
			return r;
		strvec_push(sv, s);
		free(s);
	}
	return 0;
}

static void add_file(struct build *b, enum invocation_base base, const char *path, unsigned mode,
		     char *content)
{
	struct invocation_plan *plan = b->plan;
	struct invocation_file *f;

	plan->files = xrealloc(plan->files, st_mult(plan->n_files + 1, sizeof(*plan->files)));
	f = &plan->files[plan->n_files++];
	f->base = base;
	f->path = xstrdup(path);
	f->mode = mode;
	f->len = strlen(content);
	f->content = content;
}

/* ---- the steps ---- */

/* The gates that need nothing but the request's text (see invocation.h). */
static int static_attachments(const struct profile *p, const struct catalog *cat,
			      size_t n_attachments, struct diag *reterr)
{
	struct strvec names = STRVEC_INIT;
	struct sbuf list = SBUF_INIT(SIZE_MAX);
	size_t i;

	if (n_attachments == 0 || catalog_vision(cat, p->name))
		return 0;
	invocation_vision_adapters(cat, &names);
	for (i = 0; i < names.nr; i++)
		(void)sbuf_addf(&list, "%s%s", i ? ", " : "", names.v[i]);
	diag_set(
		reterr, NULL, 0, 0,
		"adapter '%s' does not support multimodal attachments; adapters that could take them: %s",
		p->name, list.len ? list.buf : "none in this catalogue");
	strvec_clear(&names);
	sbuf_release(&list);
	return -EPERM;
}

static bool is_runner(const struct profile *p)
{
	return p->shape == PROFILE_SHAPE_MODULE && strcmp(p->name, "openai_agents") == 0;
}

static int static_sampling(const struct profile *p, const struct invocation_sampling *s,
			   const char *allowed_key_envs, enum sampling_key *ret_key,
			   struct diag *reterr)
{
	int k, r;

	r = invocation_check_sampling(p, s, reterr);
	if (r < 0) {
		/* the first key refused, for the caller's location */
		for (k = 0; k < _SAMPLING_KEY_MAX; k++)
			if ((s->set & (1u << k)) &&
			    invocation_check_sampling(
				    p, &(struct invocation_sampling){.set = 1u << k}, NULL) < 0)
				break;
		*ret_key = k < _SAMPLING_KEY_MAX ? (enum sampling_key)k : _SAMPLING_KEY_INVALID;
		return r;
	}
	*ret_key = SAMPLING_BASE_URL;
	if ((s->set & (1u << SAMPLING_BASE_URL)) && url_check(s->base_url, NULL, reterr) < 0)
		return -EINVAL;
	*ret_key = SAMPLING_API_KEY_ENV;
	if (s->set & (1u << SAMPLING_API_KEY_ENV)) {
		r = credential_env_check(s->api_key_env, allowed_key_envs, reterr);
		if (r < 0)
			return r;
	}
	if (is_runner(p))
		return 0; /* the manifest carries every key */
	/* A factory profile: admitted keys must have a spelling. */
	for (k = 0; k < _SAMPLING_KEY_MAX; k++) {
		bool endpoint_key = k == SAMPLING_BASE_URL || k == SAMPLING_API_KEY_ENV;

		if (!(s->set & (1u << k)))
			continue;
		if (endpoint_key && p->runtime.endpoint.declared)
			continue;
		*ret_key = (enum sampling_key)k;
		diag_set(
			reterr, NULL, 0, 0,
			"adapter '%s' admits '%s' but its profile declares no way to pass it%s; refusing to spawn instead of silently dropping it",
			p->name, sampling_names[k],
			endpoint_key ? " (no runtime.endpoint)"
				     : " (profiles have no sampling spelling)");
		return -EPERM;
	}
	return 0;
}

int invocation_check_static(const struct profile *p, const struct catalog *cat,
			    const struct invocation_sampling *s, size_t n_attachments,
			    const char *allowed_key_envs, enum sampling_key *ret_key,
			    struct diag *reterr)
{
	enum sampling_key key = _SAMPLING_KEY_INVALID;
	int r;

	r = static_attachments(p, cat, n_attachments, reterr);
	if (r == 0)
		r = static_sampling(p, s, allowed_key_envs, &key, reterr);
	if (r < 0 && ret_key)
		*ret_key = key; /* _SAMPLING_KEY_INVALID: the attachments */
	return r;
}

static int check_attachments(struct build *b)
{
	const struct invocation_request *req = b->req;
	size_t i;

	for (i = 0; i < req->n_attachments; i++) {
		const char *a = req->attachments[i];
		struct stat st;

		if (!a || a[0] != '/') {
			diag_set(b->reterr, NULL, 0, 0, "attachment '%s' is not an absolute path",
				 a ? a : "");
			return -EINVAL;
		}
		if (stat(a, &st) < 0 || access(a, R_OK) < 0) {
			int r = -errno;

			diag_set(b->reterr, NULL, 0, 0, "cannot read attachment '%s': %s", a,
				 strerror(-r));
			return r;
		}
		if (!S_ISREG(st.st_mode)) {
			diag_set(b->reterr, NULL, 0, 0, "attachment '%s' is not a regular file", a);
			return -EINVAL;
		}
		if (!plain_token(a)) {
			diag_set(
				b->reterr, NULL, 0, 0,
				"attachment '%s': the path holds a blank, a quote or a control character",
				a);
			return -EINVAL;
		}
	}
	return 0;
}

/* The request's own gates: invocation_check_static() (the same rules
 * `plan validate` runs), then what only the host can say: the attachments
 * exist and the key's variable is set. */
static int check_gates(struct build *b)
{
	const struct invocation_sampling *s = &b->req->sampling;
	int r;

	r = invocation_check_static(b->p, b->req->catalog, s, b->req->n_attachments,
				    envpolicy_get(b->req->host_env, CREDENTIAL_HOST_ALLOW_ENV),
				    NULL, b->reterr);
	if (r < 0)
		return r;
	r = check_attachments(b);
	if (r < 0)
		return r;
	if (s->set & (1u << SAMPLING_API_KEY_ENV)) {
		b->api_key = envpolicy_get(b->req->host_env, s->api_key_env);
		if (!b->api_key || !*b->api_key) {
			diag_set(b->reterr, NULL, 0, 0,
				 "api_key_env names environment variable '%s' but it is not set",
				 s->api_key_env);
			return -ENOENT;
		}
	}
	return 0;
}

static int resolve_model(struct build *b)
{
	const struct invocation_request *req = b->req;
	const struct profile_endpoint *ep = &b->p->runtime.endpoint;

	if (req->model) {
		if (!*req->model || req->model[0] == '-' || !plain_token(req->model)) {
			diag_set(
				b->reterr, NULL, 0, 0,
				"model '%s': empty, starts with '-', or holds a blank, a quote, a brace or a control character",
				req->model);
			return -EINVAL;
		}
		b->model_id = profile_model(b->p, req->model);
	} else if (b->plan->endpoint && ep->default_model) {
		/* the endpoint's templates need a model: the profile's default */
		b->model_id = profile_model(b->p, ep->default_model);
		b->plan->model_defaulted = true;
	}
	b->vars.v[PH_MODEL] = b->model_id;
	if (!b->model_id)
		return 0;
	b->plan->model = xstrdup(b->model_id);
	if (b->plan->endpoint && ep->model) {
		int r = expand(b, ep->model, "runtime.endpoint.model", &b->model_arg);

		if (r < 0)
			return r;
	} else {
		b->model_arg = xstrdup(b->model_id);
	}
	if (b->model_arg[0] == '-') {
		/* the alias table and endpoint.model are checked at load: a
		 * profile cannot get here, but never pass an option as the model */
		diag_set(b->reterr, NULL, 0, 0, "profile '%s': the model '%s' starts with '-'",
			 b->p->name, b->model_arg);
		return -EINVAL;
	}
	return 0;
}

static int apply_resume(struct build *b)
{
	const struct invocation_request *req = b->req;
	const struct profile_resume *res = &b->p->runtime.resume;
	int r;

	if (!req->resume_id)
		return 0;
	r = session_id_check(req->resume_id, b->reterr);
	if (r < 0) {
		diag_prefix(b->reterr, "--resume");
		return r;
	}
	if (b->plan->dialect == DIALECT_ACP && !b->runner) {
		/* ACP's own resume: session/load, when the agent advertises it */
		b->plan->resume_id = xstrdup(req->resume_id);
		return 0;
	}
	if (b->plan->strategy.resume == RESUME_UNSUPPORTED) {
		warn(b, "resume unsupported by %s: starting a fresh session", b->p->name);
		return 0;
	}
	b->plan->resume_id = xstrdup(req->resume_id);
	b->vars.v[PH_SESSION_ID] = req->resume_id;
	if (b->runner) {
		strvec_push(&b->resume, "--resume");
		strvec_push(&b->resume, req->resume_id);
	} else if (res->declared) {
		r = push_expanded(b, &b->resume, &res->args, "runtime.resume.args");
	} else {
		diag_set(
			b->reterr, NULL, 0, 0,
			"profile '%s' declares resume strategy '%s' but no runtime.resume spelling",
			b->p->name, resume_strategy_to_string(b->plan->strategy.resume));
		r = -EINVAL;
	}
	b->vars.v[PH_SESSION_ID] = NULL;
	return r;
}

/* A session id for the runner's manifest: [A-Za-z0-9._-]{1,128}, not . or .. */
static bool runner_session_valid(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > RUNNER_SESSION_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("._-", s[i])))
			return false;
	return true;
}

static int apply_session_id(struct build *b)
{
	const struct invocation_request *req = b->req;
	const struct profile_session_id *sid = &b->p->runtime.session_id;
	const char *id;
	int r;

	if (!req->session_id)
		return 0;
	r = session_id_check(req->session_id, b->reterr);
	if (r < 0) {
		diag_prefix(b->reterr, "--session-id");
		return r;
	}
	if (b->plan->resume_id) {
		warn(b, "the pre-assigned session id is ignored when resuming session '%s'",
		     b->plan->resume_id);
		return 0;
	}
	if (b->plan->dialect == DIALECT_ACP && !b->runner) {
		warn(b,
		     "the acp channel cannot pre-assign a session id (%s names its own): ignoring '%s'",
		     b->p->name, req->session_id);
		return 0;
	}
	if (b->runner) {
		/* the manifest's session_id */
		if (runner_session_valid(req->session_id)) {
			b->plan->session_id = xstrdup(req->session_id);
			return 0;
		}
		r = session_id_derive(req->session_id, b->p->name, b->derived);
		if (r < 0)
			return r;
		b->plan->session_id = xstrdup(b->derived);
		return 0;
	}
	if (!sid->declared) {
		warn(b, "session id pre-assignment unsupported by %s: the agent picks its own id",
		     b->p->name);
		return 0;
	}
	id = req->session_id;
	if (sid->format == SESSION_ID_FORMAT_UUID) {
		if (session_id_is_uuid(id)) {
			size_t i;

			memcpy(b->derived, id, SESSION_UUID_LEN + 1);
			for (i = 0; i < SESSION_UUID_LEN; i++)
				if (b->derived[i] >= 'A' && b->derived[i] <= 'F')
					b->derived[i] = (char)(b->derived[i] - 'A' + 'a');
		} else {
			r = session_id_derive(id, b->p->name, b->derived);
			if (r < 0)
				return r;
		}
		id = b->derived;
	}
	b->plan->session_id = xstrdup(id);
	b->vars.v[PH_SESSION_ID] = b->plan->session_id;
	r = push_expanded(b, &b->session_args, &sid->args, "runtime.session_id.args");
	b->vars.v[PH_SESSION_ID] = NULL;
	return r;
}

static int apply_dangerous(struct build *b, struct envpolicy *env)
{
	const struct profile_dangerous *d = &b->p->runtime.dangerous;
	size_t i;
	int r;

	if (!b->req->dangerous)
		return 0;
	/* over ACP bernstein answers the permission requests itself: all
	 * allowed unless the adapter cannot run without asking */
	b->plan->acp_allow_all = b->plan->dialect == DIALECT_ACP &&
				 b->plan->strategy.dangerous_mode != DANGEROUS_MODE_UNSUPPORTED;
	switch (b->plan->strategy.dangerous_mode) {
	case DANGEROUS_MODE_CLI_FLAG:
		if (d->args.n == 0 && !b->runner) {
			diag_set(
				b->reterr, NULL, 0, 0,
				"profile '%s' declares dangerous mode 'cli-flag' but no runtime.dangerous.args",
				b->p->name);
			return -EINVAL;
		}
		r = push_expanded(b, &b->dangerous, &d->args, "runtime.dangerous.args");
		if (r < 0)
			return r;
		break;
	case DANGEROUS_MODE_ENV_VAR:
		if (d->env.n == 0 && !b->runner) {
			diag_set(
				b->reterr, NULL, 0, 0,
				"profile '%s' declares dangerous mode 'env-var' but no runtime.dangerous.env",
				b->p->name);
			return -EINVAL;
		}
		break;
	case DANGEROUS_MODE_ALWAYS_ON:
		return 0;
	case DANGEROUS_MODE_UNSUPPORTED:
	case _DANGEROUS_MODE_MAX:
	case _DANGEROUS_MODE_INVALID:
	default:
		warn(b, "dangerous mode unsupported by %s: spawning without it", b->p->name);
		return 0;
	}
	/* cli-flag: the env declared with the flags (claude's IS_SANDBOX);
	 * env-var: the variables themselves */
	for (i = 0; i < d->env.n; i++) {
		char *v = NULL, what[128];

		(void)snprintf(what, sizeof(what), "runtime.dangerous.env.%s", d->env.keys[i]);
		r = expand(b, d->env.values[i], what, &v);
		if (r < 0)
			return r;
		envpolicy_set(env, d->env.keys[i], v);
		free(v);
	}
	b->plan->dangerous = d->args.n > 0 || d->env.n > 0;
	return 0;
}

static int set_map(struct build *b, struct envpolicy *env, const struct profile_map *m,
		   const char *what)
{
	size_t i;
	int r;

	for (i = 0; i < m->n; i++) {
		char *v = NULL, path[128];

		(void)snprintf(path, sizeof(path), "%s.%s", what, m->keys[i]);
		r = expand(b, m->values[i], path, &v);
		if (r < 0)
			return r;
		envpolicy_set(env, m->keys[i], v);
		free(v);
	}
	return 0;
}

static int build_env(struct build *b)
{
	const struct profile *p = b->p;
	const struct invocation_sampling *s = &b->req->sampling;
	const char *state = b->plan->state_dir;
	struct envpolicy env;
	size_t i;
	int r;

	envpolicy_init(&env, b->req->host_env);
	for (i = 0; i < p->invocation.env_passthrough.n; i++)
		envpolicy_pass(&env, p->invocation.env_passthrough.v[i]);
	if (s->set & (1u << SAMPLING_API_KEY_ENV))
		envpolicy_pass(&env, s->api_key_env);
	if (b->runner) {
		/* the runner re-checks api_key_env and reads its opt-in itself */
		envpolicy_pass(&env, CREDENTIAL_HOST_ALLOW_ENV);
		envpolicy_pass(&env, "BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND");
	}
	for (i = 0; envpolicy_telemetry_off[i]; i++) {
		const char *eq = strchr(envpolicy_telemetry_off[i], '=');
		char name[64];

		(void)snprintf(name, sizeof(name), "%.*s", (int)(eq - envpolicy_telemetry_off[i]),
			       envpolicy_telemetry_off[i]);
		envpolicy_set(&env, name, eq + 1);
	}
	if (b->isolated) {
		char *x;

		envpolicy_set(&env, "HOME", state);
		x = path_join(state, ".config");
		envpolicy_set(&env, "XDG_CONFIG_HOME", x);
		free(x);
		x = path_join(state, ".local/share");
		envpolicy_set(&env, "XDG_DATA_HOME", x);
		free(x);
		x = path_join(state, ".local/state");
		envpolicy_set(&env, "XDG_STATE_HOME", x);
		free(x);
		x = path_join(state, ".cache");
		envpolicy_set(&env, "XDG_CACHE_HOME", x);
		free(x);
	}
	if (b->plan->pty) {
		const struct ptydrive_conf *pc = &p->runtime.pty;
		unsigned rows, cols;
		char num[16];

		ptydrive_rows_cols(pc, &rows, &cols);
		envpolicy_set(&env, "TERM", pc->term ? pc->term : "xterm-256color");
		(void)snprintf(num, sizeof(num), "%u", rows);
		envpolicy_set(&env, "LINES", num);
		(void)snprintf(num, sizeof(num), "%u", cols);
		envpolicy_set(&env, "COLUMNS", num);
	}
	r = set_map(b, &env, &p->runtime.env, "runtime.env");
	if (r >= 0)
		r = apply_dangerous(b, &env);
	if (r >= 0 && b->plan->endpoint) {
		b->vars.v[PH_API_KEY] = b->api_key;
		r = set_map(b, &env, &p->runtime.endpoint.env, "runtime.endpoint.env");
		b->vars.v[PH_API_KEY] = NULL;
	}
	if (r >= 0 && b->plan->hooks)
		r = set_map(b, &env, &p->runtime.hooks.env, "runtime.hooks.env");
	if (r >= 0 && b->plan->mcp_config)
		r = set_map(b, &env, &p->runtime.mcp.env, "runtime.mcp.env");
	if (r >= 0)
		r = envpolicy_build(&env, &b->plan->env, b->reterr);
	envpolicy_release(&env);
	return r;
}

/* The values a caller redacts wherever the agent's output is written: the
 * API key, and every variable of the agent's environment that holds a
 * secret (credential_env_secret(): provider keys passed through, tokens,
 * bernstein's own hook secrets). A value too short to look for is named in
 * a warning. */
/* runtime.login of an agent with a private HOME: where each file of the
 * user's HOME appears in it. */
static void plan_logins(struct build *b)
{
	const char *home = envpolicy_get(b->req->host_env, "HOME");
	const struct profile_strv *l = &b->p->runtime.login;
	size_t i;

	if (!b->isolated || !b->plan->state_dir || !home || home[0] != '/')
		return;
	b->plan->login_by_sandbox = b->req->sandbox != NULL;
	for (i = 0; i < l->n; i++) {
		strvec_pushf(&b->plan->login_src, "%s/%s", home, l->v[i]);
		strvec_pushf(&b->plan->login_dst, "%s/%s", b->plan->state_dir, l->v[i]);
	}
}

static void collect_secrets(struct build *b)
{
	struct strvec *sec = &b->plan->secrets;
	struct strvec too_short = STRVEC_INIT;
	const char *allowed = envpolicy_get(b->req->host_env, CREDENTIAL_HOST_ALLOW_ENV);
	size_t i;

	if (b->api_key && strlen(b->api_key) >= REDACT_MIN)
		strvec_push(sec, b->api_key);
	credential_env_secrets(b->plan->env.v, allowed, sec, &too_short);
	for (i = 0; i < too_short.nr; i++)
		warn(b,
		     "the value of '%s' is shorter than %d bytes: it is not redacted from logs, events and output",
		     too_short.v[i], REDACT_MIN);
	strvec_clear(&too_short);
}

static int build_files(struct build *b)
{
	const struct profile_runtime *rt = &b->p->runtime;
	const struct profile_files *ep = &rt->endpoint.files;
	const struct profile_files *hk = &rt->hooks.files;
	size_t i, j;
	int r;

	for (i = 0; i < rt->files.n; i++) {
		const struct profile_file *f = &rt->files.v[i];
		char *content = NULL, what[320];
		bool replaced = false;

		for (j = 0; b->plan->endpoint && j < ep->n; j++)
			if (strcmp(ep->v[j].path, f->path) == 0)
				replaced = true;
		for (j = 0; b->plan->hooks && j < hk->n; j++)
			if (strcmp(hk->v[j].path, f->path) == 0)
				replaced = true;
		if (replaced)
			continue;
		(void)snprintf(what, sizeof(what), "runtime.files '%s'", f->path);
		r = expand(b, f->content, what, &content);
		if (r < 0)
			return r;
		add_file(b, INVOCATION_BASE_STATE, f->path, f->mode, content);
	}
	for (j = 0; b->plan->endpoint && j < ep->n; j++) {
		const struct profile_file *f = &ep->v[j];
		char *content = NULL, what[320];

		(void)snprintf(what, sizeof(what), "runtime.endpoint.files '%s'", f->path);
		r = expand(b, f->content, what, &content);
		if (r < 0)
			return r;
		add_file(b, INVOCATION_BASE_STATE, f->path, f->mode, content);
	}
	for (j = 0; b->plan->hooks && j < hk->n; j++) {
		const struct profile_file *f = &hk->v[j];
		char *content = NULL, what[320];

		(void)snprintf(what, sizeof(what), "runtime.hooks.files '%s'", f->path);
		r = expand(b, f->content, what, &content);
		if (r < 0)
			return r;
		add_file(b, INVOCATION_BASE_STATE, f->path, f->mode, content);
	}
	return 0;
}

/* A path that goes into the hook command between single quotes and into
 * config files (JSON, TOML) between double quotes. */
static bool hook_path_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || strchr("'\"\\", *s))
			return false;
	return true;
}

/* The hooks channel: the socket and {hook_command}, and runtime.hooks.args. */
static int apply_hooks(struct build *b)
{
	const struct profile *p = b->p;
	char exe[PATH_MAX];
	const char *bin = b->req->bernstein_exe;

	if (b->runner || b->plan->strategy.event_channel != EVENT_CHANNEL_HOOKS)
		return 0;
	if (!p->runtime.hooks.declared) {
		warn(b,
		     "event channel hooks: profile '%s' declares no runtime.hooks; reading its output only",
		     p->name);
		return 0;
	}
	if (!bin) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		if (n <= 0) {
			diag_set(b->reterr, NULL, 0, 0,
				 "cannot find the bernstein binary for the hook command: %s",
				 strerror(n < 0 ? errno : ENOENT));
			return -ENOENT;
		}
		exe[n] = '\0';
		bin = exe;
	}
	b->plan->hooks = true;
	b->plan->hooks_socket = path_join(b->req->session_dir, INVOCATION_HOOKS_SOCKET);
	if (bin[0] != '/' || !hook_path_ok(bin) || !hook_path_ok(b->plan->hooks_socket)) {
		diag_set(
			b->reterr, NULL, 0, 0,
			"profile '%s': the hook command cannot name '%s' and '%s' (a relative path, a quote, a backslash or a control character)",
			p->name, bin, b->plan->hooks_socket);
		return -EINVAL;
	}
	{
		struct sbuf cmd = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&cmd, "'%s' hook-post --socket '%s'", bin, b->plan->hooks_socket);
		b->hook_command = sbuf_detach(&cmd, NULL);
	}
	b->vars.v[PH_HOOK_COMMAND] = b->hook_command;
	b->vars.v[PH_HOOKS_SOCKET] = b->plan->hooks_socket;
	return push_expanded(b, &b->hooks_args, &p->runtime.hooks.args, "runtime.hooks.args");
}

/* ---- MCP servers (adapter/mcpcfg.h) ---- */

/* v when it is not "${NAME}"; else NAME's value in host_env, checked
 * against the agent's allow-list rules. *ret_secret: it came from the host. */
static int mcp_value(struct build *b, const char *server, const char *key, const char *v,
		     const char **ret, bool *ret_secret)
{
	const char *allowed = envpolicy_get(b->req->host_env, CREDENTIAL_HOST_ALLOW_ENV);
	size_t n = strlen(v);
	char name[256];
	struct diag d;
	const char *val;

	*ret_secret = false;
	if (n < 4 || v[0] != '$' || v[1] != '{' || v[n - 1] != '}') {
		*ret = v;
		return 0;
	}
	(void)snprintf(name, sizeof(name), "%.*s", (int)(n - 3), v + 2);
	if (n - 3 >= sizeof(name) || !envpolicy_name_valid(name)) {
		diag_set(b->reterr, NULL, 0, 0,
			 "mcp_servers.%s '%s': '%s' is not a variable reference ${NAME}", server,
			 key, v);
		return -EINVAL;
	}
	diag_clear(&d);
	if (!envpolicy_base_allowed(name) && credential_env_check(name, allowed, &d) < 0) {
		diag_set(
			b->reterr, NULL, 0, 0,
			"mcp_servers.%s '%s': ${%s} is not on the agent's allow-list (a known provider key, or a name listed in %s): %s",
			server, key, name, CREDENTIAL_HOST_ALLOW_ENV, d.msg);
		return -EPERM;
	}
	val = envpolicy_get(b->req->host_env, name);
	if (!val) {
		diag_set(b->reterr, NULL, 0, 0, "mcp_servers.%s '%s': ${%s} is not set", server,
			 key, name);
		return -ENOENT;
	}
	if (!utf8_valid(val, strlen(val))) {
		diag_set(b->reterr, NULL, 0, 0, "mcp_servers.%s '%s': ${%s} is not valid UTF-8",
			 server, key, name);
		return -EINVAL;
	}
	*ret = val;
	*ret_secret = !envpolicy_base_allowed(name);
	return 0;
}

/* The stdio servers' commands on the agent's PATH (the environment's, or
 * req->path_env), for the sandbox; one not found is left to the agent,
 * which reports it. */
static void mcp_programs(struct build *b)
{
	const char *path_env =
		b->req->path_env ? b->req->path_env : envpolicy_get(b->req->host_env, "PATH");
	size_t i;

	for (i = 0; i < b->req->n_mcp_servers; i++) {
		const char *cmd = b->mcp[i].command;
		char *found = NULL;

		if (!cmd)
			continue;
		if (strchr(cmd, '/')) {
			if (cmd[0] == '/')
				strvec_push(&b->plan->mcp_programs, cmd);
			continue;
		}
		if (path_search(cmd, path_env ? path_env : "", &found) == 0 && found)
			strvec_push(&b->plan->mcp_programs, found);
		free(found);
	}
}

static int mcp_resolve(struct build *b)
{
	const struct invocation_request *req = b->req;
	size_t i, j, total = 0, k = 0;
	bool secret;
	int r;

	for (i = 0; i < req->n_mcp_servers; i++)
		total += req->mcp_servers[i].n_env + req->mcp_servers[i].n_headers;
	b->mcp = xcalloc(req->n_mcp_servers, sizeof(*b->mcp));
	b->mcp_vals = xcalloc(total + 1, sizeof(*b->mcp_vals));
	for (i = 0; i < req->n_mcp_servers; i++) {
		const struct mcp_server *s = &req->mcp_servers[i];
		struct mcp_server *o = &b->mcp[i];

		*o = *s;
		if (!mcpcfg_name_valid(s->name) || !s->command == !s->url) {
			diag_set(
				b->reterr, NULL, 0, 0,
				"mcp_servers: '%s' is not a server (a name and one of command, url)",
				s->name ? s->name : "");
			return -EINVAL;
		}
		o->env_values = &b->mcp_vals[k];
		for (j = 0; j < s->n_env; j++, k++) {
			r = mcp_value(b, s->name, s->env_keys[j], s->env_values[j], &b->mcp_vals[k],
				      &secret);
			if (r < 0)
				return r;
			if (secret && strlen(b->mcp_vals[k]) >= REDACT_MIN)
				strvec_push(&b->plan->secrets, b->mcp_vals[k]);
		}
		o->header_values = &b->mcp_vals[k];
		for (j = 0; j < s->n_headers; j++, k++) {
			r = mcp_value(b, s->name, s->header_keys[j], s->header_values[j],
				      &b->mcp_vals[k], &secret);
			if (r < 0)
				return r;
			if (secret && strlen(b->mcp_vals[k]) >= REDACT_MIN)
				strvec_push(&b->plan->secrets, b->mcp_vals[k]);
		}
	}
	return 0;
}

/* The agent speaks ACP: its MCP servers go in session/new (plan->mcp_acp),
 * whatever runtime.mcp says. */
static bool mcp_by_acp(const struct build *b)
{
	return b->plan->dialect == DIALECT_ACP && !b->runner;
}

/* The MCP servers of the request: resolved, rendered (into the session's
 * per-attempt file, or merged into the profile's HOME file), and
 * runtime.mcp's args. The env is set by build_env(). */
static int apply_mcp(struct build *b)
{
	const struct invocation_request *req = b->req;
	const struct profile_mcp *m = &b->p->runtime.mcp;
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	char name[64];
	int r;

	if (!req->n_mcp_servers)
		return 0;
	if (!b->runner && !m->declared && !mcp_by_acp(b)) {
		diag_set(
			b->reterr, NULL, 0, 0,
			"adapter '%s' has no way to take MCP servers (its profile declares no runtime.mcp): refusing to spawn it without the task's mcp_servers",
			b->p->name);
		return -EPERM;
	}
	r = mcp_resolve(b);
	if (r < 0)
		return r;
	b->plan->n_mcp_servers = req->n_mcp_servers;
	mcp_programs(b);
	{
		json_t *acp = mcpcfg_acp_json(b->mcp, req->n_mcp_servers);

		b->plan->mcp_acp = json_dumps(acp, JSON_COMPACT);
		json_decref(acp);
	}
	if (mcp_by_acp(b))
		return 0; /* session/new carries them (adapter/acp.h): no file, no args */
	if (b->runner) {
		size_t i;

		for (i = 0; i < req->n_mcp_servers; i++)
			if (b->mcp[i].url) {
				diag_set(
					b->reterr, NULL, 0, 0,
					"mcp_servers.%s: the built-in runner speaks stdio MCP servers only, not a url",
					b->mcp[i].name);
				return -EPERM;
			}
		return 0; /* runner_manifest() puts them in the manifest */
	}
	if (m->file)
		return 0; /* merged by build_files() */
	r = mcpcfg_render(m->format, b->mcp, req->n_mcp_servers, NULL, &out, b->reterr);
	if (r < 0) {
		sbuf_release(&out);
		return r;
	}
	b->mcp_text = sbuf_detach(&out, NULL);
	(void)snprintf(name, sizeof(name), "%s%s", INVOCATION_MCP_FILE,
		       mcp_format_suffix(m->format));
	b->plan->mcp_config = path_join(req->session_dir, name);
	if (!hook_path_ok(b->plan->mcp_config)) {
		diag_set(
			b->reterr, NULL, 0, 0,
			"the MCP configuration cannot be named '%s' (a quote, a backslash or a control character)",
			b->plan->mcp_config);
		return -EINVAL;
	}
	b->vars.v[PH_MCP_CONFIG] = b->plan->mcp_config;
	return push_expanded(b, &b->mcp_args, &m->args, "runtime.mcp.args");
}

/* The servers merged into the profile's HOME file runtime.mcp.file, or the
 * per-attempt file added. */
static int mcp_files(struct build *b)
{
	const struct profile_mcp *m = &b->p->runtime.mcp;
	struct sbuf out = SBUF_INIT(SIZE_MAX);
	size_t i;
	int r;

	if (!b->req->n_mcp_servers || b->runner || mcp_by_acp(b))
		return 0;
	for (i = 0; b->plan->state_dir && i < m->remove.n; i++)
		strvec_pushf(&b->plan->mcp_cleanup_more, "%s/%s", b->plan->state_dir,
			     m->remove.v[i]);
	if (!m->file) {
		add_file(b, INVOCATION_BASE_SESSION, strrchr(b->plan->mcp_config, '/') + 1, 0600,
			 b->mcp_text);
		b->mcp_text = NULL;
		b->plan->mcp_cleanup = xstrdup(b->plan->mcp_config);
		return 0;
	}
	for (i = 0; i < b->plan->n_files; i++) {
		struct invocation_file *f = &b->plan->files[i];

		if (f->base != INVOCATION_BASE_STATE || strcmp(f->path, m->file) != 0)
			continue;
		r = mcpcfg_render(m->format, b->mcp, b->req->n_mcp_servers, f->content, &out,
				  b->reterr);
		if (r < 0) {
			sbuf_release(&out);
			return r;
		}
		free(f->content);
		f->content = sbuf_detach(&out, &f->len);
		f->mode &= 0700;
		if (b->plan->state_dir)
			b->plan->mcp_cleanup = path_join(b->plan->state_dir, f->path);
		return 0;
	}
	diag_set(b->reterr, NULL, 0, 0, "profile '%s': runtime.mcp.file '%s' is not written",
		 b->p->name, m->file);
	return -EINVAL;
}

/* The manifest's mcp_servers: {"NAME": {"command", "args", "env"}}. */
static json_t *runner_mcp_json(const struct build *b)
{
	json_t *o = json_object();
	size_t i, j;

	for (i = 0; i < b->req->n_mcp_servers; i++) {
		const struct mcp_server *s = &b->mcp[i];
		json_t *x = json_object(), *a = json_array(), *e = json_object();

		(void)json_object_set_new(x, "command", json_string(s->command));
		for (j = 0; j < s->n_args; j++)
			(void)json_array_append_new(a, json_string(s->args[j]));
		for (j = 0; j < s->n_env; j++)
			(void)json_object_set_new(e, s->env_keys[j], json_string(s->env_values[j]));
		(void)json_object_set_new(x, "args", a);
		(void)json_object_set_new(x, "env", e);
		(void)json_object_set_new(o, s->name, x);
	}
	return o;
}

/* The prompt with the attachments named in front: the vision CLIs read
 * image files with their own tools, so a path is what they need. */
static void compose_prompt(struct build *b)
{
	const struct invocation_request *req = b->req;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t i;

	if (req->n_attachments) {
		(void)sbuf_adds(&sb, "Attached files (read them from these paths):\n");
		for (i = 0; i < req->n_attachments; i++)
			(void)sbuf_addf(&sb, "- %s\n", req->attachments[i]);
		(void)sbuf_adds(&sb, "\n");
	}
	(void)sbuf_adds(&sb, req->prompt);
	b->prompt = sbuf_detach(&sb, NULL);
	b->plan->prompt_bytes = strlen(b->prompt);
}

static int runner_manifest(struct build *b, char **ret)
{
	const struct invocation_request *req = b->req;
	const struct invocation_sampling *s = &req->sampling;
	const char *tool_source;
	const char *sid;
	json_t *m;
	char *text;

	if (!b->model_id) {
		diag_set(b->reterr, NULL, 0, 0, "adapter '%s' needs a model", b->p->name);
		return -EINVAL;
	}
	if (b->plan->resume_id)
		sid = b->plan->resume_id;
	else if (b->plan->session_id)
		sid = b->plan->session_id;
	else {
		sid = strrchr(req->session_dir, '/');
		sid = sid ? sid + 1 : req->session_dir;
	}
	if (!runner_session_valid(sid)) {
		diag_set(b->reterr, NULL, 0, 0,
			 "adapter '%s': session id '%s' is not [A-Za-z0-9._-]{1,128}", b->p->name,
			 sid);
		return -EINVAL;
	}
	m = json_object();
	(void)json_object_set_new(m, "session_id", json_string(sid));
	if (json_object_set_new(m, "prompt", json_stringn(b->prompt, strlen(b->prompt))) < 0) {
		json_decref(m);
		diag_set(b->reterr, NULL, 0, 0, "the prompt is not valid UTF-8");
		return -EINVAL;
	}
	if (json_object_set_new(m, "workdir", json_string(req->workdir)) < 0) {
		json_decref(m);
		diag_set(b->reterr, NULL, 0, 0, "the workdir is not valid UTF-8");
		return -EINVAL;
	}
	(void)json_object_set_new(m, "model", json_string(b->model_id));
	if (s->set & (1u << SAMPLING_TEMPERATURE))
		(void)json_object_set_new(m, "temperature", json_real(s->temperature));
	if (s->set & (1u << SAMPLING_TOP_P))
		(void)json_object_set_new(m, "top_p", json_real(s->top_p));
	if (s->set & (1u << SAMPLING_TOP_K))
		(void)json_object_set_new(m, "top_k", json_integer(s->top_k));
	if (s->set & (1u << SAMPLING_MAX_TOKENS))
		(void)json_object_set_new(m, "max_tokens", json_integer(s->max_tokens));
	if (s->set & (1u << SAMPLING_BASE_URL))
		(void)json_object_set_new(m, "base_url", json_string(s->base_url));
	if (s->set & (1u << SAMPLING_API_KEY_ENV))
		(void)json_object_set_new(m, "api_key_env", json_string(s->api_key_env));
	if (req->timeout_s)
		(void)json_object_set_new(m, "timeout_seconds",
					  json_integer((json_int_t)req->timeout_s));
	tool_source = envpolicy_get(req->host_env, "BERNSTEIN_OPENAI_AGENTS_TOOL_SOURCE");
	if (tool_source && strcmp(tool_source, "builtin") == 0)
		(void)json_object_set_new(m, "tool_source", json_string("builtin"));
	if (b->p->runtime.git_dir == GIT_DIR_ALLOWED)
		(void)json_object_set_new(m, "allow_git_dir", json_true());
	/* the tier that confines run_command (docs/runner.md) */
	if (req->sandbox)
		(void)json_object_set_new(m, "sandbox_provider", json_string(req->sandbox));
	if (req->n_mcp_servers)
		(void)json_object_set_new(m, "mcp_servers", runner_mcp_json(b));
	text = json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(m);
	if (!text) {
		diag_set(b->reterr, NULL, 0, 0, "cannot serialise the manifest");
		return -EINVAL;
	}
	*ret = xmalloc(strlen(text) + 2);
	memcpy(*ret, text, strlen(text));
	(*ret)[strlen(text)] = '\n';
	(*ret)[strlen(text) + 1] = '\0';
	free(text);
	return 0;
}

/* Bytes the kernel counts for argv or envp: the strings and the pointers. */
static size_t vec_bytes(const struct strvec *sv)
{
	size_t i, n = sizeof(char *);

	for (i = 0; i < sv->nr; i++)
		n += strlen(sv->v[i]) + 1 + sizeof(char *);
	return n;
}

/* Why the prompt cannot go on argv the way inv puts it there (it could be
 * read as an option, or as stdin's marker), or NULL when it can:
 *   - long-prompt: never on argv;
 *   - glued: always (one token FLAG=PROMPT);
 *   - '--' before it (separator, or '--' as the prompt flag): any prompt but
 *     '-', which codex and bernstein mock-agent read as "the prompt is on
 *     stdin" even after '--';
 *   - unguarded: any prompt that does not start with '-'. */
static const char *prompt_unsafe(const struct profile_invocation *inv, const char *prompt)
{
	if (inv->prompt_guard == PROMPT_GUARD_LONG_PROMPT)
		return "always goes by runtime.long_prompt (invocation.prompt_guard: long-prompt)";
	if (inv->prompt_guard == PROMPT_GUARD_GLUED)
		return NULL;
	if (profile_prompt_ends_options(inv))
		return strcmp(prompt, "-") == 0 ? "is '-' (the stdin marker, also after '--')"
						: NULL;
	return prompt[0] == '-' ? "starts with '-'" : NULL;
}

static int build_prompt(struct build *b, size_t fixed_bytes)
{
	const struct invocation_request *req = b->req;
	const struct profile_invocation *inv = &b->p->invocation;
	const struct profile_long_prompt *lp = &b->p->runtime.long_prompt;
	size_t strlen_max = req->arg_strlen_max ? req->arg_strlen_max : INVOCATION_MAX_ARG_STRLEN;
	size_t total_max = req->arg_total_max ? req->arg_total_max : INVOCATION_ARG_TOTAL_DEFAULT;
	size_t need, limit, token;
	const char *unsafe;
	char *content;
	bool glued, fits;
	int r;

	if (b->plan->dialect == DIALECT_ACP && !b->runner) {
		const struct profile_acp *acp = &b->p->runtime.acp;

		if (!acp->declared) {
			diag_set(
				b->reterr, NULL, 0, 0,
				"profile '%s' has no runtime.acp: nothing says how to start its ACP mode",
				b->p->name);
			return -EINVAL;
		}
		r = push_expanded(b, &b->prompt_args, &acp->args, "runtime.acp.args");
		if (r < 0)
			return r;
		b->plan->acp_prompt = xstrdup(b->prompt);
		b->plan->prompt_via = PROMPT_DELIVERY_ACP;
		return 0;
	}
	if (b->plan->pty) {
		/* typed into its terminal (proc/ptydrive.h); kept in a file as
		 * any prompt off argv is */
		add_file(b, INVOCATION_BASE_SESSION, INVOCATION_PROMPT_FILE, 0600,
			 xstrdup(b->prompt));
		b->plan->prompt_via = PROMPT_DELIVERY_PTY;
		return 0;
	}
	if (b->runner) {
		r = runner_manifest(b, &content);
		if (r < 0)
			return r;
		add_file(b, INVOCATION_BASE_SESSION, INVOCATION_MANIFEST_FILE, 0600, content);
		strvec_push(&b->prompt_args, inv->prompt_file_flag);
		strvec_push(&b->prompt_args, b->manifest_path);
		b->plan->prompt_via = PROMPT_DELIVERY_FILE;
		return 0;
	}
	if (inv->prompt_file_flag) {
		add_file(b, INVOCATION_BASE_SESSION, INVOCATION_PROMPT_FILE, 0600,
			 xstrdup(b->prompt));
		strvec_push(&b->prompt_args, inv->prompt_file_flag);
		strvec_push(&b->prompt_args, b->prompt_path);
		b->plan->prompt_via = PROMPT_DELIVERY_FILE;
		return 0;
	}

	/* the prompt tokens on argv, in a form the agent cannot parse as an
	 * option (invocation.prompt_guard) */
	glued = inv->prompt_guard == PROMPT_GUARD_GLUED;
	unsafe = prompt_unsafe(inv, b->prompt);
	token = strlen(b->prompt) + 1;
	if (glued)
		token += strlen(inv->prompt_flag) + 1;
	need = token + sizeof(char *);
	if (inv->prompt_flag && !glued)
		need += strlen(inv->prompt_flag) + 1 + sizeof(char *);
	if (inv->prompt_guard == PROMPT_GUARD_SEPARATOR)
		need += sizeof("--") + sizeof(char *);
	limit = total_max > INVOCATION_ARG_HEADROOM ? total_max - INVOCATION_ARG_HEADROOM : 0;
	fits = token <= strlen_max && fixed_bytes + need <= limit;
	if (!unsafe && fits) {
		argv_order_prompt(inv->prompt_flag, inv->prompt_guard, b->prompt, &b->prompt_args);
		b->plan->prompt_via = PROMPT_DELIVERY_ARGV;
		return 0;
	}

	/* off argv: a prompt the agent would parse as an option, or one too
	 * long for argv */
	if (!lp->declared && unsafe) {
		diag_set(
			b->reterr, NULL, 0, 0,
			"the prompt %s and profile '%s' has no safe way to pass it (no invocation.prompt_guard, no runtime.long_prompt): refusing to spawn rather than let '%s' read it as an option",
			unsafe, b->p->name, b->p->invocation.binary);
		return -EPERM;
	}
	if (!lp->declared) {
		diag_set(
			b->reterr, NULL, 0, 0,
			"the prompt (%zu bytes) is too long for the argv of '%s' and its profile declares no runtime.long_prompt",
			strlen(b->prompt), b->p->name);
		return -E2BIG;
	}
	b->plan->prompt_too_long = !fits;
	if (unsafe && fits && inv->prompt_guard != PROMPT_GUARD_LONG_PROMPT)
		warn(b, "the prompt %s: it goes to %s by %s so that it cannot be read as an option",
		     unsafe, b->p->name, lp->via == PROMPT_VIA_STDIN ? "stdin" : "a file");
	add_file(b, INVOCATION_BASE_SESSION, INVOCATION_PROMPT_FILE, 0600, xstrdup(b->prompt));
	b->vars.v[PH_PROMPT_FILE] = b->prompt_path;
	r = push_expanded(b, &b->prompt_args, &lp->args, "runtime.long_prompt.args");
	b->vars.v[PH_PROMPT_FILE] = NULL;
	if (r < 0)
		return r;
	if (lp->via == PROMPT_VIA_STDIN) {
		b->plan->stdin_path = xstrdup(b->prompt_path);
		b->plan->prompt_via = PROMPT_DELIVERY_STDIN;
	} else {
		b->plan->prompt_via = PROMPT_DELIVERY_FILE;
	}
	return 0;
}

static int resolve_binary(struct build *b, const char **ret_argv0, char **owned)
{
	const char *bin = b->p->invocation.binary;
	const char *path_env = b->req->path_env;
	int r;

	*owned = NULL;
	if (b->p->builtin) {
		*ret_argv0 = b->req->self_exe ? b->req->self_exe : INVOCATION_SELF_EXE;
		b->plan->binary_found = true;
		return 0;
	}
	if (!path_env)
		path_env = envpolicy_get(b->plan->env.v, "PATH");
	if (strchr(bin, '/') && bin[0] != '/') {
		diag_set(b->reterr, NULL, 0, 0,
			 "profile '%s': binary '%s' is neither a bare name nor an absolute path",
			 b->p->name, bin);
		return -EINVAL;
	}
	r = path_search(bin, path_env, owned);
	if (r < 0) {
		*ret_argv0 = bin;
		b->plan->binary_found = false;
		b->plan->binary_error = r;
		warn(b, "agent binary '%s' %s", bin,
		     r == -EACCES ? "is not executable" : "not found on PATH");
		return 0;
	}
	if ((*owned)[0] != '/') {
		/* a relative PATH element: relative to the workdir, where the
		 * agent (and the caller) run */
		char *abs = path_join(b->req->workdir, *owned);

		free(*owned);
		*owned = abs;
	}
	*ret_argv0 = *owned;
	b->plan->binary_found = true;
	return 0;
}

/* The argv in the one order of adapter/argv-order.h; prompt NULL leaves
 * the prompt tokens out (to measure the rest). */
static void lay_out(struct build *b, const char *argv0, const struct strvec *model,
		    const struct strvec *extra, const struct strvec *prompt, struct strvec *argv)
{
	const struct argv_parts parts = {
		.argv0 = argv0,
		.subcommands = b->p->invocation.subcommands.v,
		.resume = b->resume.v,
		.resume_position =
			b->runner ? RESUME_POSITION_BEFORE_PROMPT : b->p->runtime.resume.position,
		.model = model->v,
		.extra = extra->v,
		.endpoint = b->endpoint_args.v,
		.hooks = b->hooks_args.v,
		.dangerous = b->dangerous.v,
		.session = b->session_args.v,
		.module = b->module_args.v,
		.prompt = prompt ? prompt->v : NULL,
	};

	argv_order_assemble(&parts, argv);
}

static int assemble(struct build *b)
{
	const struct profile_invocation *inv = &b->p->invocation;
	struct strvec model = STRVEC_INIT, extra = STRVEC_INIT, fixed = STRVEC_INIT;
	const char *argv0 = NULL;
	char *owned = NULL;
	int r;

	r = resolve_binary(b, &argv0, &owned);
	if (r < 0)
		goto out;
	if (inv->model_flag && b->model_arg) {
		strvec_push(&model, inv->model_flag);
		strvec_push(&model, b->model_arg);
	}
	r = push_expanded(b, &extra, &inv->extra_args, "invocation.extra_args");
	if (r < 0)
		goto out;
	lay_out(b, argv0, &model, &extra, NULL, &fixed);
	r = build_prompt(b, vec_bytes(&fixed) + vec_bytes(&b->plan->env));
	if (r < 0)
		goto out;

	strvec_clear(&b->plan->argv);
	lay_out(b, argv0, &model, &extra, &b->prompt_args, &b->plan->argv);
out:
	free(owned);
	strvec_clear(&model);
	strvec_clear(&extra);
	strvec_clear(&fixed);
	return r;
}

static enum dialect dialect_of(const struct profile *p, const struct adapter_strategy *s)
{
	if (s->event_channel == EVENT_CHANNEL_ACP)
		return DIALECT_ACP;
	if (p->runtime.dialect_declared)
		return dialect_from_string(event_dialect_to_string(p->runtime.dialect));
	switch (s->event_channel) {
	case EVENT_CHANNEL_TEXT_SIGNALS:
		return DIALECT_TEXT_SIGNALS;
	case EVENT_CHANNEL_POLL_PTY:
		return DIALECT_POLL_PTY;
	case EVENT_CHANNEL_STREAM_JSON:
	case EVENT_CHANNEL_HOOKS:
	case EVENT_CHANNEL_NONE:
	case EVENT_CHANNEL_ACP:
	case _EVENT_CHANNEL_MAX:
	case _EVENT_CHANNEL_INVALID:
	default:
		return DIALECT_NONE;
	}
}

void invocation_vision_adapters(const struct catalog *cat, struct strvec *ret)
{
	size_t i;

	if (!cat)
		return;
	for (i = 0; i < cat->n_entries; i++)
		if (catalog_vision(cat, cat->entries[i]->name))
			strvec_push(ret, cat->entries[i]->name);
}

/* The request's checks, the strategy, which module serves a module
 * profile, and the session's paths: the frame the pieces are built in. */
static int build_begin(struct build *b)
{
	const struct invocation_request *req = b->req;
	struct invocation_plan *plan = b->plan;
	const struct profile *p;
	struct strategy_resolved res;

	if (!req || !req->profile || !req->prompt || !req->workdir || req->workdir[0] != '/' ||
	    !req->session_dir || req->session_dir[0] != '/' ||
	    (req->state_dir && req->state_dir[0] != '/')) {
		diag_set(
			b->reterr, NULL, 0, 0,
			"invalid request: profile, prompt and absolute workdir and session directory are required");
		return -EINVAL;
	}
	p = b->p = req->profile;

	if (req->strategy) {
		plan->strategy = *req->strategy;
	} else {
		if (req->catalog)
			(void)catalog_profile_strategy(req->catalog, p, &res);
		else
			(void)strategy_resolve(NULL, p->name, p->strategy, &res);
		plan->strategy = res.strategy;
	}
	if (p->shape == PROFILE_SHAPE_MODULE) {
		/* mock (`bernstein mock-agent`, orch/mock.h) takes its argv from
		 * its declaration exactly like a factory profile: binary = this
		 * executable (builtin), subcommands, positional prompt, the
		 * runtime spellings of resume and session id */
		if (strcmp(p->name, "openai_agents") == 0) {
			b->runner = true;
		} else if (strcmp(p->name, "mock") != 0) {
			diag_set(
				b->reterr, NULL, 0, 0,
				"adapter '%s' is served by a module that bernstein spawn does not implement; only factory profiles, openai_agents and mock can be spawned",
				p->name);
			return -ENOTSUP;
		}
	}
	b->isolated = p->runtime.home == AGENT_HOME_ISOLATED;

	plan->cwd = xstrdup(req->workdir);
	plan->session_dir = xstrdup(req->session_dir);
	if (req->state_dir) {
		plan->state_dir = xstrdup(req->state_dir);
		plan->state_reused = true;
	} else if (b->isolated || b->runner) {
		plan->state_dir = path_join(req->session_dir, INVOCATION_STATE_DIR);
	}
	b->prompt_path = path_join(req->session_dir, INVOCATION_PROMPT_FILE);
	b->manifest_path = path_join(req->session_dir, INVOCATION_MANIFEST_FILE);
	plan->dialect = dialect_of(p, &plan->strategy);
	/* runtime.pty: an interactive TUI in a terminal, the prompt typed */
	plan->pty = p->runtime.pty.declared && !b->runner &&
		    plan->strategy.event_channel == EVENT_CHANNEL_POLL_PTY;
	plan->pty_conf = plan->pty ? &p->runtime.pty : NULL;
	return 0;
}

/* The argv pieces between the model and the prompt (argv-order.h). */
static int build_pieces(struct build *b)
{
	const struct profile *p = b->p;
	int r;

	if (b->plan->endpoint) {
		r = push_expanded(b, &b->endpoint_args, &p->runtime.endpoint.args,
				  "runtime.endpoint.args");
		if (r < 0)
			return r;
	}
	r = apply_hooks(b);
	if (r < 0)
		return r;
	r = apply_mcp(b);
	if (r < 0)
		return r;
	/* runtime.mcp.args go after runtime.hooks.args */
	strvec_pushv(&b->hooks_args, (const char *const *)b->mcp_args.v);
	r = apply_resume(b);
	if (r < 0)
		return r;
	r = apply_session_id(b);
	if (r < 0)
		return r;
	if (b->runner && b->plan->state_dir) {
		strvec_push(&b->module_args, "--session-dir");
		strvec_push(&b->module_args, b->plan->state_dir);
	}
	/* the mock's file instructions, like the runner's tools (its manifest) */
	if (!b->runner && p->shape == PROFILE_SHAPE_MODULE && p->runtime.git_dir == GIT_DIR_ALLOWED)
		strvec_push(&b->module_args, "--allow-git-dir");
	return 0;
}

static void build_release(struct build *b)
{
	strvec_clear(&b->resume);
	strvec_clear(&b->dangerous);
	strvec_clear(&b->session_args);
	strvec_clear(&b->endpoint_args);
	strvec_clear(&b->hooks_args);
	free(b->hook_command);
	strvec_clear(&b->prompt_args);
	strvec_clear(&b->module_args);
	free(b->model_arg);
	free(b->prompt);
	free(b->prompt_path);
	free(b->manifest_path);
	free(b->mcp);
	free(b->mcp_vals);
	strvec_clear(&b->mcp_args);
	free(b->mcp_text);
}

int invocation_build(const struct invocation_request *req, struct invocation_plan *ret,
		     struct diag *reterr)
{
	struct build b = {
		.req = req,
		.reterr = reterr,
		.resume = STRVEC_INIT,
		.dangerous = STRVEC_INIT,
		.session_args = STRVEC_INIT,
		.endpoint_args = STRVEC_INIT,
		.hooks_args = STRVEC_INIT,
		.prompt_args = STRVEC_INIT,
		.module_args = STRVEC_INIT,
		.mcp_args = STRVEC_INIT,
	};
	struct invocation_plan plan;
	int r;

	invocation_plan_init(&plan);
	b.plan = &plan;
	r = build_begin(&b);
	if (r < 0)
		goto out;

	/* the gates, before anything else */
	r = check_gates(&b);
	if (r < 0)
		goto out;
	plan.endpoint = !b.runner && (req->sampling.set &
				      ((1u << SAMPLING_BASE_URL) | (1u << SAMPLING_API_KEY_ENV)));

	b.vars.v[PH_WORKDIR] = req->workdir;
	b.vars.v[PH_HOME] = b.isolated ? plan.state_dir : envpolicy_get(req->host_env, "HOME");
	if (plan.endpoint) {
		b.vars.v[PH_BASE_URL] = req->sampling.base_url;
		b.vars.v[PH_API_KEY_ENV] = req->sampling.api_key_env;
	}
	r = resolve_model(&b);
	if (r < 0)
		goto out;
	r = build_pieces(&b);
	if (r < 0)
		goto out;
	r = build_env(&b);
	if (r < 0)
		goto out;
	r = build_files(&b);
	if (r < 0)
		goto out;
	r = mcp_files(&b);
	if (r < 0)
		goto out;
	compose_prompt(&b);
	r = assemble(&b);
	if (r < 0)
		goto out;
	collect_secrets(&b);
	plan_logins(&b);

	invocation_plan_release(ret);
	*ret = plan;
	invocation_plan_init(&plan);
out:
	invocation_plan_release(&plan);
	build_release(&b);
	return r;
}
