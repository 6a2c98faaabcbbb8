/* The built-in runner's agent loop (loop.h). */
#include "runner/loop.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/probe.h"
#include "adapter/credential.h"
#include "runner/llm.h"
#include "runner/mcp.h"
#include "runner/text.h"
#include "runner/tools.h"
#include "runner/wire.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/redact.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define TRANSCRIPT_VERSION 1
/* the transcript read back: room for a few writes at the wire.h cap */
#define TRANSCRIPT_MAX_BYTES (256 * 1024 * 1024)
#define EVENT_OUTPUT_MAX     4096	   /* bytes of a tool's output shown in tool_result */
#define TOOL_OUTPUT_MAX	     (1024 * 1024) /* bytes of a gateway tool's output kept */

struct gw_tool {
	char *exposed; /* the name the model sees */
	char *orig;    /* the server's name for it */
	size_t server;
};

struct runner {
	const struct runner_opts *o;
	const struct runner_manifest *m;
	struct events *ev;
	const struct clock *clock;
	const char *key;     /* the API key value (never written) */
	const char *key_env; /* its variable's name, or NULL */
	struct redact *rd;   /* the key and opts->secrets */
	enum wire_api api;
	char *url;
	char *base;
	struct tools *tools;
	struct mcp_client **mcp;
	size_t nmcp;
	struct gw_tool *gw;
	size_t ngw;
	json_t *specs; /* the tools offered, neutral form */
	json_t *items; /* the transcript */
	char *transcript_path;
	uint64_t deadline_ms;
	int64_t in_tokens, out_tokens;
	bool usage_seen, usage_missing;
	unsigned tool_calls, turns;
	struct strvec child_env;
};

/* ---- small decisions ------------------------------------------------------ */

static const char *const container_providers[] = {
	"docker", "podman", "e2b", "modal", "container", "kubernetes", NULL,
};

bool runner_sandboxed(const char *provider)
{
	size_t i;

	if (!provider)
		return false;
	if (strcmp(provider, "landlock") == 0)
		return true;
	for (i = 0; container_providers[i]; i++)
		if (strcmp(provider, container_providers[i]) == 0)
			return true;
	return false;
}

bool runner_allow_run_command(const struct runner_manifest *m, bool env_flag)
{
	if (m->has_allow_run_command && !m->allow_run_command)
		return false;
	if (runner_sandboxed(m->sandbox_provider))
		return true;
	if (m->has_allow_run_command && m->allow_run_command)
		return true;
	return env_flag;
}

char *runner_transcript_path(const char *session_dir, const char *session_id)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s.transcript.json", session_dir ? session_dir : ".", session_id);
	return sbuf_detach(&sb, NULL);
}

static uint64_t now_ms(const struct runner *r)
{
	return r->clock->mono_ms(r->clock);
}

/* ---- events ----------------------------------------------------------------- */

static void progress(struct runner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void progress(struct runner *r, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	(void)events_progress(r->ev, msg);
}

static void emit_start(struct runner *r)
{
	const struct runner_manifest *m = r->m;
	json_t *ev = events_new("start");

	(void)json_object_set_new(ev, "session_id", json_string(m->session_id));
	(void)json_object_set_new(ev, "model", json_string(m->model));
	(void)json_object_set_new(ev, "api", json_string(wire_api_name(r->api)));
	(void)json_object_set_new(ev, "endpoint", events_str(r->url));
	(void)json_object_set_new(ev, "base_url",
				  m->base_url ? json_string(m->base_url) : json_null());
	(void)json_object_set_new(ev, "stream", json_boolean(m->stream));
	(void)json_object_set_new(ev, "temperature",
				  m->has_temperature ? json_real(m->temperature) : json_null());
	(void)json_object_set_new(ev, "top_p", m->has_top_p ? json_real(m->top_p) : json_null());
	(void)json_object_set_new(ev, "top_k", m->has_top_k ? json_integer(m->top_k) : json_null());
	(void)json_object_set_new(ev, "max_tokens",
				  m->has_max_tokens ? json_integer(m->max_tokens) : json_null());
	(void)json_object_set_new(
		ev, "max_turns",
		json_integer(m->has_max_turns ? m->max_turns : RUNNER_DEFAULT_MAX_TURNS));
	(void)json_object_set_new(ev, "timeout_seconds", json_integer(m->timeout_seconds));
	(void)json_object_set_new(ev, "effort", json_string(m->effort));
	(void)json_object_set_new(ev, "sandbox_provider", json_string(m->sandbox_provider));
	(void)json_object_set_new(
		ev, "tool_source",
		json_string(m->tool_source == MANIFEST_TOOLS_BUILTIN ? "builtin" : "gateway"));
	(void)json_object_set_new(ev, "api_key_env",
				  r->key_env ? json_string(r->key_env) : json_null());
	(void)json_object_set_new(ev, "workdir", json_string(m->workdir));
	(void)json_object_set_new(ev, "allow_git_dir", json_boolean(m->allow_git_dir));
	(void)json_object_set_new(ev, "resume",
				  r->o->resume_session ? json_string(r->o->resume_session)
						       : json_null());
	(void)events_emit(r->ev, ev);
}

static void emit_usage(struct runner *r)
{
	json_t *ev = events_new("usage");

	(void)json_object_set_new(ev, "input_tokens", json_integer(r->in_tokens));
	(void)json_object_set_new(ev, "output_tokens", json_integer(r->out_tokens));
	(void)json_object_set_new(ev, "tool_calls", json_integer(r->tool_calls));
	(void)json_object_set_new(ev, "turns", json_integer(r->turns));
	(void)json_object_set_new(ev, "model", json_string(r->m->model));
	(void)json_object_set_new(ev, "usage_source", json_string(wire_api_name(r->api)));
	if (!r->usage_seen || r->usage_missing)
		(void)json_object_set_new(ev, "usage_missing", json_true());
	(void)events_emit(r->ev, ev);
}

static enum runner_outcome fail(struct runner *r, enum runner_outcome out, const char *kind,
				const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum runner_outcome fail(struct runner *r, enum runner_outcome out, const char *kind,
				const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	(void)events_error(r->ev, kind, msg);
	return out;
}

/* ---- files ------------------------------------------------------------------ */

static void heartbeat(struct runner *r, const char *message)
{
	struct sbuf path = SBUF_INIT(SIZE_MAX);
	json_t *hb;
	char *buf;
	size_t len = 0;

	if (!r->m->heartbeat_dir)
		return;
	hb = json_pack("{s:I, s:s, s:i, s:s, s:s, s:s, s:i}", "timestamp",
		       (json_int_t)(r->clock->now_ns(r->clock) / 1000000000), "phase",
		       "implementing", "progress_pct", 0, "current_file", "", "message", message,
		       "status", "working", "files_changed", 0);
	buf = events_serialise(hb, r->rd, false, &len);
	json_decref(hb);
	(void)sbuf_addf(&path, "%s/%s.json", r->m->heartbeat_dir, r->m->session_id);
	if (buf && (mkdir_p(r->m->heartbeat_dir, 0755) < 0 ||
		    atomic_write_file(path.buf, buf, len, 0644) < 0))
		progress(r, "cannot write the heartbeat '%s', ignoring", path.buf);
	free(buf);
	sbuf_release(&path);
}

static int save_transcript(struct runner *r)
{
	json_t *doc;
	char *buf;
	size_t len = 0;
	int rc;

	doc = json_pack("{s:i, s:s, s:s, s:s, s:O}", "version", TRANSCRIPT_VERSION, "session_id",
			r->m->session_id, "model", r->m->model, "api", wire_api_name(r->api),
			"items", r->items);
	buf = events_serialise(doc, r->rd, true, &len);
	json_decref(doc);
	if (!buf)
		return -EINVAL;
	rc = atomic_write_file(r->transcript_path, buf, len, 0600);
	free(buf);
	return rc;
}

/* A transcript that cannot be saved ends the run: it could not be resumed,
 * and a run that cannot record itself must not look successful. */
static enum runner_outcome save_failed(struct runner *r, int rc, bool usage)
{
	if (usage)
		emit_usage(r);
	return fail(r, RUNNER_FAILED, "runtime", "cannot save the transcript '%s': %s",
		    r->transcript_path, strerror(-rc));
}

static int load_transcript(struct runner *r, const char *session, json_t **ret, struct diag *reterr)
{
	char *path = runner_transcript_path(r->o->session_dir, session), *buf = NULL;
	json_t *doc = NULL, *items;
	size_t len = 0;
	int rc;

	rc = read_file_capped(path, TRANSCRIPT_MAX_BYTES, &buf, &len);
	if (rc < 0) {
		diag_set(reterr, path, 0, 0,
			 rc == -ENOENT ? "no transcript to resume: %s"
				       : "cannot read the transcript: %s",
			 file_strerror(rc));
		goto out;
	}
	rc = json_parse_strict(path, buf, len, &doc, reterr);
	if (rc < 0)
		goto out;
	items = json_object_get(doc, "items");
	if (!json_is_object(doc) ||
	    json_integer_value(json_object_get(doc, "version")) != TRANSCRIPT_VERSION) {
		diag_set(reterr, path, 0, 0, "not a version %d transcript", TRANSCRIPT_VERSION);
		rc = -EBADMSG;
		goto out;
	}
	rc = wire_items_check(items, reterr);
	if (rc < 0) {
		if (reterr) /* the checker knows no file name */
			(void)snprintf(reterr->file, sizeof(reterr->file), "%s", path);
		goto out;
	}
	*ret = json_incref(items);
out:
	json_decref(doc);
	free(buf);
	free(path);
	return rc;
}

/* ---- credentials ------------------------------------------------------------ */

static enum runner_outcome setup_key(struct runner *r)
{
	struct diag d = {0};
	const char *v;

	if (!r->m->api_key_env) {
		/* the SDK's default: OPENAI_API_KEY when it is set, else no key */
		v = r->o->env ? r->o->env(r->o->env_userdata, CREDENTIAL_DEFAULT_ENV) : NULL;
		if (v && *v) {
			r->key = v;
			r->key_env = CREDENTIAL_DEFAULT_ENV;
		}
		return RUNNER_DONE;
	}
	r->key_env = r->m->api_key_env;
	if (credential_env_check(r->m->api_key_env, r->o->host_allowed_key_envs, &d) < 0)
		return RUNNER_CONFIG_INVALID;
	v = r->o->env ? r->o->env(r->o->env_userdata, r->m->api_key_env) : NULL;
	if (!v || !*v)
		return RUNNER_CONFIG_INVALID;
	r->key = v;
	return RUNNER_DONE;
}

static enum runner_outcome key_error(struct runner *r)
{
	struct diag d = {0};

	if (credential_env_check(r->m->api_key_env, r->o->host_allowed_key_envs, &d) < 0)
		return fail(r, RUNNER_CONFIG_INVALID, "config_invalid", "%s", d.msg);
	return fail(
		r, RUNNER_CONFIG_INVALID, "config_invalid",
		"manifest api_key_env names environment variable '%s' but it is not set; export it on the host (its value is never logged)",
		r->m->api_key_env);
}

/* ---- tools ------------------------------------------------------------------ */

static bool wanted(const struct runner_manifest *m, const char *name)
{
	size_t i;

	if (m->ntools == 0)
		return true;
	for (i = 0; i < m->ntools; i++)
		if (strcmp(m->tools[i], name) == 0)
			return true;
	return false;
}

static enum runner_outcome setup_builtin(struct runner *r)
{
	const struct runner_manifest *m = r->m;
	struct tools_config tc = {0};
	struct diag d = {0};
	struct sbuf names = SBUF_INIT(SIZE_MAX);
	json_t *all, *t;
	size_t i;
	bool allow = runner_allow_run_command(m, r->o->env_allow_run_command);
	int rc;

	tc.workdir = m->workdir;
	tc.allow_git_dir = m->allow_git_dir;
	tc.allow_run_command = allow;
	tc.path_env = r->o->path_env;
	tc.cmd_env = r->child_env.v;
	tc.landlock = strcmp(m->sandbox_provider, "landlock") == 0;
	rc = tools_open(&tc, &r->tools, &d);
	if (rc < 0)
		return fail(r, RUNNER_CONFIG_INVALID, "config_invalid", "%s", d.msg);
	all = tools_specs(r->tools);
	r->specs = json_array();
	json_array_foreach(all, i, t)
	{
		const char *name = json_string_value(json_object_get(t, "name"));

		if (!wanted(m, name))
			continue;
		(void)json_array_append(r->specs, t);
		(void)sbuf_addf(&names, "%s%s", names.len ? ", " : "", name);
	}
	json_decref(all);
	{
		json_t *ev = events_new("progress");
		struct sbuf msg = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&msg, "builtin tools active: %s", names.len ? names.buf : "(none)");
		if (!allow)
			(void)sbuf_adds(
				&msg,
				"; run_command withheld (no OS sandbox provider and no BERNSTEIN_BUILTIN_ALLOW_RUN_COMMAND=1)");
		(void)json_object_set_new(ev, "message", events_str(msg.buf));
		(void)json_object_set_new(ev, "tool_source", json_string("builtin"));
		(void)events_emit(r->ev, ev);
		sbuf_release(&msg);
	}
	sbuf_release(&names);
	return RUNNER_DONE;
}

/* Tool names the APIs accept: [A-Za-z0-9_-]{1,64}. */
static char *safe_name(const char *s)
{
	size_t n = strlen(s), i;
	char *o;

	if (n > 64)
		n = 64;
	o = xstrndup(s, n);
	for (i = 0; i < n; i++)
		if (!((o[i] >= 'a' && o[i] <= 'z') || (o[i] >= 'A' && o[i] <= 'Z') ||
		      (o[i] >= '0' && o[i] <= '9') || o[i] == '_' || o[i] == '-'))
			o[i] = '_';
	return o;
}

static bool gw_taken(const struct runner *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->ngw; i++)
		if (strcmp(r->gw[i].exposed, name) == 0)
			return true;
	return false;
}

static enum runner_outcome setup_gateway(struct runner *r)
{
	const struct runner_manifest *m = r->m;
	json_t **lists;
	size_t s, i, k;
	enum runner_outcome out = RUNNER_DONE;

	r->specs = json_array();
	if (m->nmcp_servers == 0) {
		json_t *ev = events_new("progress");

		(void)json_object_set_new(
			ev, "message",
			json_string(
				"gateway: no mcp_servers in the manifest; the agent has no tools"));
		(void)json_object_set_new(ev, "tool_source", json_string("gateway"));
		(void)events_emit(r->ev, ev);
		return RUNNER_DONE;
	}
	lists = xcalloc(m->nmcp_servers, sizeof(*lists));
	r->mcp = xcalloc(m->nmcp_servers, sizeof(*r->mcp));
	for (s = 0; s < m->nmcp_servers; s++) {
		const struct manifest_mcp_server *srv = &m->mcp_servers[s];
		struct mcp_spec spec = {0};
		struct strvec env = STRVEC_INIT;
		struct diag d = {0};
		char *path = NULL;
		int rc;

		rc = path_search(srv->command, r->o->path_env, &path);
		if (rc < 0) {
			out = fail(r, RUNNER_FAILED, "runtime",
				   "mcp server '%s': command '%s' not found on PATH", srv->name,
				   srv->command);
			goto out;
		}
		strvec_pushv(&env, r->child_env.v);
		strvec_pushv(&env, srv->env);
		spec.name = srv->name;
		spec.path = path;
		spec.args = srv->args;
		spec.env = env.v;
		spec.cwd = srv->cwd ? srv->cwd : m->workdir;
		spec.client_version = r->o->version;
		rc = mcp_start(&spec, &r->mcp[s], &d);
		free(path);
		strvec_clear(&env);
		r->nmcp = s + 1;
		if (rc == 0)
			rc = mcp_list_tools(r->mcp[s], &lists[s], &d);
		if (rc < 0) {
			out = fail(r, RUNNER_FAILED, "runtime", "%s", d.msg);
			goto out;
		}
		progress(r, "mcp server '%s' (%s): %zu tools", srv->name,
			 mcp_server_info(r->mcp[s]), json_array_size(lists[s]));
	}
	/* exposed names: the tool's own (sanitised) name, or server__tool on a clash */
	for (s = 0; s < m->nmcp_servers; s++) {
		json_t *t;

		json_array_foreach(lists[s], i, t)
		{
			const char *orig = json_string_value(json_object_get(t, "name"));
			char *name = safe_name(orig);
			json_t *spec;
			bool clash = false;
			size_t s2, j;
			json_t *t2;

			for (s2 = 0; s2 < m->nmcp_servers && !clash; s2++)
				json_array_foreach(lists[s2], j, t2)
				{
					if ((s2 != s || j != i) &&
					    strcmp(json_string_value(json_object_get(t2, "name")),
						   orig) == 0)
						clash = true;
				}
			if (clash || gw_taken(r, name)) {
				struct sbuf sb = SBUF_INIT(SIZE_MAX);
				char *full;

				(void)sbuf_addf(&sb, "%s__%s", m->mcp_servers[s].name, orig);
				full = safe_name(sb.buf);
				sbuf_release(&sb);
				free(name);
				name = full;
				for (k = 2; gw_taken(r, name) && k < 1000; k++) {
					struct sbuf sk = SBUF_INIT(SIZE_MAX);

					(void)sbuf_addf(&sk, "%.58s_%zu", full, k);
					free(name);
					name = sbuf_detach(&sk, NULL);
				}
			}
			if (!wanted(m, name) && !wanted(m, orig)) {
				free(name);
				continue;
			}
			r->gw = xrealloc(r->gw, st_mult(r->ngw + 1, sizeof(*r->gw)));
			r->gw[r->ngw] = (struct gw_tool){name, xstrdup(orig), s};
			r->ngw++;
			spec = json_pack("{s:s}", "name", name);
			if (json_is_string(json_object_get(t, "description")))
				(void)json_object_set(spec, "description",
						      json_object_get(t, "description"));
			if (json_is_object(json_object_get(t, "inputSchema")))
				(void)json_object_set(spec, "parameters",
						      json_object_get(t, "inputSchema"));
			(void)json_array_append_new(r->specs, spec);
		}
	}
	{
		json_t *ev = events_new("progress");
		char msg[128];

		(void)snprintf(msg, sizeof(msg), "gateway tools active: %zu from %zu mcp servers",
			       r->ngw, m->nmcp_servers);
		(void)json_object_set_new(ev, "message", json_string(msg));
		(void)json_object_set_new(ev, "tool_source", json_string("gateway"));
		(void)events_emit(r->ev, ev);
	}
out:
	for (s = 0; s < m->nmcp_servers; s++)
		json_decref(lists[s]);
	free(lists);
	return out;
}

static json_t *args_for_event(const char *args_json)
{
	json_t *a = NULL;

	if (json_parse_strict("arguments", args_json, strlen(args_json), &a, NULL) == 0 &&
	    json_is_object(a))
		return a;
	json_decref(a);
	return json_pack("{s:s}", "raw", "(unparsable)");
}

static json_t *output_for_event(struct runner *r, const char *out)
{
	struct sbuf red = SBUF_INIT(SIZE_MAX), sb = SBUF_INIT(SIZE_MAX);
	size_t n;
	json_t *v;

	/* redacted before the cut: a cut key would leave its first bytes */
	(void)redact_apply(r->rd, out, strlen(out), 0, &red);
	n = red.len;
	/* cut at a character boundary below the cap */
	if (n > EVENT_OUTPUT_MAX) {
		n = EVENT_OUTPUT_MAX;
		while (n > 0 && ((unsigned char)red.buf[n] & 0xc0) == 0x80)
			n--;
	}
	(void)text_add_utf8(&sb, red.buf, n);
	v = json_stringn(sb.buf, sb.len);
	sbuf_release(&sb);
	sbuf_release(&red);
	return v;
}

/* Append item to the transcript with every secret redacted from every
 * string and key (a server or a file may hand a key back; it never travels
 * further, not even back to the server). */
static void append_item(struct runner *r, json_t *item)
{
	(void)redact_json(r->rd, item);
	(void)json_array_append_new(r->items, item);
}

/* Run one call; *ret_output gets the text for the model (owned). */
static void run_call(struct runner *r, const struct wire_call *c, char **ret_output)
{
	const char *source = r->tools ? "builtin" : "gateway";
	struct tool_outcome o = {0};
	json_t *call = events_new("tool_call"), *res = events_new("tool_result");

	r->tool_calls++;
	(void)json_object_set_new(call, "tool_source", json_string(source));
	(void)json_object_set_new(res, "tool_source", json_string(source));
	(void)json_object_set_new(call, "name", events_str(c->name));
	(void)json_object_set_new(res, "name", events_str(c->name));
	(void)json_object_set_new(call, "call_id", events_str(c->id));
	(void)json_object_set_new(res, "call_id", events_str(c->id));
	(void)json_object_set_new(call, "turn", json_integer(r->turns));

	if (c->arguments_over) {
		/* the reply kept the call, not its arguments: refused, the run goes on */
		struct sbuf sb = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(
			&sb,
			"error: the arguments of this call are larger than the runner accepts (%d bytes); nothing was done. Write large files in smaller pieces.",
			WIRE_MAX_ARGS);
		o.output = sbuf_detach(&sb, NULL);
		o.details = json_pack("{s:s}", "error", "arguments over the cap");
		(void)json_object_set_new(
			call, "args",
			json_pack("{s:I}", "bytes_over_cap", (json_int_t)c->arguments_over));
	} else if (r->tools && tools_has(r->tools, c->name) && wanted(r->m, c->name)) {
		(void)tools_call(r->tools, c->name, c->arguments, &o);
		(void)json_object_set(call, "args", o.args);
	} else {
		const struct gw_tool *g = NULL;

		for (size_t i = 0; i < r->ngw; i++)
			if (strcmp(r->gw[i].exposed, c->name) == 0)
				g = &r->gw[i];
		(void)json_object_set_new(call, "args", args_for_event(c->arguments));
		if (!g) {
			struct sbuf sb = SBUF_INIT(SIZE_MAX);

			(void)sbuf_adds(&sb, "error: unknown tool '");
			(void)text_add_utf8(&sb, c->name, strlen(c->name));
			(void)sbuf_adds(&sb, "'");
			o.output = sbuf_detach(&sb, NULL);
			o.details = json_pack("{s:s}", "error", "unknown tool");
		} else {
			struct sbuf sb = SBUF_INIT(TOOL_OUTPUT_MAX);
			struct diag d = {0};
			json_t *args = json_object_get(call, "args"), *result = NULL;
			uint64_t left = r->deadline_ms > now_ms(r) ? r->deadline_ms - now_ms(r) : 1;
			bool is_error = false;
			int rc;

			(void)json_object_set_new(call, "server",
						  json_string(r->m->mcp_servers[g->server].name));
			(void)json_object_set_new(res, "server",
						  json_string(r->m->mcp_servers[g->server].name));
			rc = mcp_call_tool(r->mcp[g->server], g->orig, args,
					   left < TOOLS_DEFAULT_CMD_MS ? left
								       : TOOLS_DEFAULT_CMD_MS,
					   &result, &d);
			if (rc < 0) {
				struct sbuf e = SBUF_INIT(SIZE_MAX);

				(void)sbuf_adds(&e, "error: ");
				(void)text_add_utf8(&e, d.msg, strlen(d.msg));
				o.output = sbuf_detach(&e, NULL);
				o.details = json_pack("{s:s}", "error", d.msg);
			} else {
				if (mcp_result_text(result, &sb, &is_error) < 0)
					(void)sbuf_adds(&sb, "\n[truncated]");
				o.ok = !is_error;
				o.output = sbuf_detach(&sb, NULL);
				o.details =
					json_pack("{s:I}", "bytes", (json_int_t)strlen(o.output));
				if (is_error)
					(void)json_object_set_new(o.details, "error",
								  output_for_event(r, o.output));
			}
			json_decref(result);
			sbuf_release(&sb);
		}
	}
	(void)events_emit(r->ev, call);
	(void)json_object_set_new(res, "status", json_string(o.ok ? "ok" : "error"));
	if (o.details)
		(void)json_object_update(res, o.details);
	(void)json_object_set_new(res, "output", output_for_event(r, o.output ? o.output : ""));
	if (o.output && strlen(o.output) > EVENT_OUTPUT_MAX)
		(void)json_object_set_new(res, "output_truncated", json_true());
	(void)events_emit(r->ev, res);
	*ret_output = o.output ? o.output : xstrdup("");
	o.output = NULL;
	tool_outcome_release(&o);
}

/* ---- the loop ---------------------------------------------------------------- */

static void on_retry(void *userdata, const struct llm_retry_info *info)
{
	struct runner *r = userdata;
	json_t *ev = events_new("progress");
	char msg[1400];

	(void)snprintf(msg, sizeof(msg), "retrying in %.1f s (attempt %u of %u failed%s): %s",
		       (double)info->wait_ms / 1000.0, info->attempt, info->max_attempts,
		       info->retry_after ? "; Retry-After" : "", info->reason);
	(void)json_object_set_new(ev, "message", events_str(msg));
	(void)json_object_set_new(ev, "retry", json_true());
	(void)json_object_set_new(ev, "http_status", json_integer(info->http_status));
	(void)json_object_set_new(ev, "wait_ms", json_integer((json_int_t)info->wait_ms));
	(void)events_emit(r->ev, ev);
	heartbeat(r, "waiting to retry the model request");
}

static enum runner_outcome llm_failure(struct runner *r, const struct llm_result *res)
{
	json_t *ev = events_new("error");
	enum runner_outcome out = RUNNER_FAILED;
	const char *kind = "runtime";

	switch (res->failure) {
	case LLM_RATE_LIMITED:
		kind = "rate_limit";
		out = RUNNER_RATE_LIMITED;
		break;
	case LLM_HTTP:
		kind = "http";
		break;
	case LLM_OK:
	case LLM_TRANSPORT:
	case LLM_PROTOCOL:
	case LLM_DEADLINE:
		break;
	}
	(void)json_object_set_new(ev, "kind", json_string(kind));
	(void)json_object_set_new(ev, "message", events_str(res->message));
	if (res->http_status)
		(void)json_object_set_new(ev, "http_status", json_integer(res->http_status));
	(void)json_object_set_new(ev, "attempts", json_integer(res->attempts));
	(void)events_emit(r->ev, ev);
	return out;
}

static enum runner_outcome turns(struct runner *r)
{
	const struct runner_manifest *m = r->m;
	int64_t max_turns = m->has_max_turns ? m->max_turns : RUNNER_DEFAULT_MAX_TURNS;
	struct wire_params wp = {
		.api = r->api,
		.model = m->model,
		.system = m->system_addendum,
		.stream = m->stream,
		.has_temperature = m->has_temperature,
		.temperature = m->temperature,
		.has_top_p = m->has_top_p,
		.top_p = m->top_p,
		.has_top_k = m->has_top_k,
		.top_k = m->top_k,
		.has_max_tokens = m->has_max_tokens,
		.max_tokens = m->max_tokens,
	};
	struct llm_config lc = {
		.url = r->url,
		.api_key = r->key,
		.proxy = r->o->proxy,
		.api = r->api,
		.stream = m->stream,
		.max_retries = r->o->max_retries,
		.backoff_base_ms = r->o->backoff_base_ms,
		.deadline_ms = r->deadline_ms,
		.clock = r->clock,
		.on_retry = on_retry,
		.userdata = r,
	};

	for (;;) {
		struct wire_reply reply = {0};
		struct llm_result res;
		json_t *req;
		size_t i;
		int rc;

		if (r->turns >= (uint64_t)max_turns) {
			emit_usage(r);
			return fail(
				r, RUNNER_FAILED, "max_turns",
				"max_turns (%lld) reached and the model still wants tools; the transcript is saved for a resume",
				(long long)max_turns);
		}
		if (now_ms(r) >= r->deadline_ms) {
			emit_usage(r);
			return fail(r, RUNNER_FAILED, "runtime", "timed out after %lld s",
				    (long long)m->timeout_seconds);
		}
		r->turns++;
		{
			json_t *ev = events_new("progress");
			char msg[64];

			(void)snprintf(msg, sizeof(msg), "turn %u", r->turns);
			(void)json_object_set_new(ev, "message", json_string(msg));
			(void)json_object_set_new(ev, "turn", json_integer(r->turns));
			(void)events_emit(r->ev, ev);
		}
		heartbeat(r, "waiting for the model");
		req = wire_build_request(&wp, r->items, r->specs);
		rc = llm_request(&lc, req, &reply, &res);
		json_decref(req);
		if (rc < 0) {
			emit_usage(r);
			if (res.failure == LLM_DEADLINE)
				return fail(r, RUNNER_FAILED, "runtime", "timed out after %lld s",
					    (long long)m->timeout_seconds);
			return llm_failure(r, &res);
		}
		if (reply.has_usage) {
			r->usage_seen = true;
			r->in_tokens += reply.input_tokens;
			r->out_tokens += reply.output_tokens;
		} else {
			r->usage_missing = true;
		}
		append_item(r, wire_reply_to_item(&reply));
		if (reply.ncalls == 0) {
			json_t *ev;

			rc = save_transcript(r);
			if (rc < 0) {
				wire_reply_release(&reply);
				return save_failed(r, rc, true);
			}
			ev = events_new("completion");
			emit_usage(r);
			(void)json_object_set_new(ev, "status", json_string("done"));
			(void)json_object_set_new(ev, "summary", events_str(reply.text));
			(void)json_object_set_new(ev, "turns", json_integer(r->turns));
			if (reply.finish)
				(void)json_object_set_new(ev, "finish_reason",
							  events_str(reply.finish));
			(void)events_emit(r->ev, ev);
			wire_reply_release(&reply);
			return RUNNER_DONE;
		}
		if (reply.text && *reply.text) {
			json_t *ev = events_new("progress");

			(void)json_object_set_new(ev, "message", events_str(reply.text));
			(void)json_object_set_new(ev, "assistant", json_true());
			(void)events_emit(r->ev, ev);
		}
		for (i = 0; i < reply.ncalls; i++) {
			char *output = NULL;

			run_call(r, &reply.calls[i], &output);
			{
				json_t *it = json_object();

				(void)json_object_set_new(it, "role", json_string("tool"));
				(void)json_object_set_new(it, "tool_call_id",
							  events_str(reply.calls[i].id));
				(void)json_object_set_new(it, "name",
							  events_str(reply.calls[i].name));
				(void)json_object_set_new(it, "content", events_str(output));
				append_item(r, it);
			}
			free(output);
			heartbeat(r, "running tools");
		}
		wire_reply_release(&reply);
		rc = save_transcript(r);
		if (rc < 0)
			return save_failed(r, rc, true);
	}
}

static void build_child_env(struct runner *r)
{
	const char *const *e;
	size_t kl = r->key_env ? strlen(r->key_env) : 0;

	for (e = r->o->child_env; e && *e; e++) {
		/* never the key's variable, whatever the caller passed */
		if (kl && strncmp(*e, r->key_env, kl) == 0 && (*e)[kl] == '=')
			continue;
		if (redact_found(r->rd, *e, strlen(*e)))
			continue;
		strvec_push(&r->child_env, *e);
	}
}

enum runner_outcome runner_run(const struct runner_opts *opts)
{
	const struct runner_manifest *m = opts->manifest;
	struct runner r;
	struct stat st;
	struct sbuf url = SBUF_INIT(SIZE_MAX);
	enum runner_outcome out;
	size_t i;

	memset(&r, 0, sizeof(r));
	r.o = opts;
	r.m = m;
	r.ev = opts->events;
	r.clock = opts->clock ? opts->clock : clock_system();
	strvec_init(&r.child_env);
	r.api = m->base_url ? WIRE_CHAT : WIRE_RESPONSES;
	r.base =
		xstrdup(m->base_url ? m->base_url
				    : (opts->default_url ? opts->default_url : RUNNER_DEFAULT_URL));
	while (strlen(r.base) > 0 && r.base[strlen(r.base) - 1] == '/')
		r.base[strlen(r.base) - 1] = '\0';
	(void)sbuf_addf(&url, "%s%s", r.base, wire_api_path(r.api));
	r.url = sbuf_detach(&url, NULL);
	r.deadline_ms = now_ms(&r) + (uint64_t)m->timeout_seconds * 1000;
	r.transcript_path = runner_transcript_path(opts->session_dir, m->session_id);

	/* 1. the key: refused or unset is config_invalid before anything else */
	out = setup_key(&r);
	r.rd = redact_new();
	if (r.key)
		(void)redact_add(r.rd, r.key);
	for (i = 0; opts->secrets && opts->secrets[i]; i++)
		(void)redact_add(r.rd, opts->secrets[i]);
	events_set_redact(r.ev, r.rd);
	emit_start(&r);
	if (r.key && strlen(r.key) < REDACT_MIN)
		progress(&r, "the API key is shorter than %d bytes: it is not redacted",
			 REDACT_MIN);
	if (out != RUNNER_DONE) {
		out = key_error(&r);
		goto out;
	}
	build_child_env(&r);

	/* 2. the workdir */
	if (stat(m->workdir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		out = fail(&r, RUNNER_CONFIG_INVALID, "config_invalid",
			   "workdir '%s' is not a directory", m->workdir);
		goto out;
	}

	/* 3. the transcript */
	if (opts->resume_session) {
		struct diag d = {0};
		char buf[sizeof(d.file) + sizeof(d.msg) + 64];

		if (!runner_manifest_session_id_ok(opts->resume_session)) {
			out = fail(&r, RUNNER_CONFIG_INVALID, "config_invalid",
				   "cannot resume '%s': not a session id", opts->resume_session);
			goto out;
		}
		if (load_transcript(&r, opts->resume_session, &r.items, &d) < 0) {
			out = fail(&r, RUNNER_CONFIG_INVALID, "config_invalid", "cannot resume: %s",
				   diag_format(&d, buf, sizeof(buf)));
			goto out;
		}
		progress(&r, "resuming session '%s': %zu transcript items", opts->resume_session,
			 json_array_size(r.items));
	} else {
		r.items = json_array();
	}
	(void)json_array_append_new(r.items,
				    json_pack("{s:s, s:s}", "role", "user", "content", m->prompt));

	/* 4. the tools */
	out = m->tool_source == MANIFEST_TOOLS_BUILTIN ? setup_builtin(&r) : setup_gateway(&r);
	if (out != RUNNER_DONE)
		goto out;

	/* 5. the turns, once the transcript is known to be saved */
	{
		int rc = save_transcript(&r);

		if (rc < 0) {
			out = save_failed(&r, rc, false);
			goto out;
		}
	}
	heartbeat(&r, "bernstein runner working");
	out = turns(&r);
out:
	for (i = 0; i < r.nmcp; i++)
		r.mcp[i] = mcp_stop(r.mcp[i]);
	free(r.mcp);
	for (i = 0; i < r.ngw; i++) {
		free(r.gw[i].exposed);
		free(r.gw[i].orig);
	}
	free(r.gw);
	r.tools = tools_free(r.tools);
	json_decref(r.specs);
	json_decref(r.items);
	free(r.transcript_path);
	free(r.url);
	free(r.base);
	strvec_clear(&r.child_env);
	events_set_redact(r.ev, NULL);
	r.rd = redact_free(r.rd);
	return out;
}
