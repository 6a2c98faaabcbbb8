/* hooks: and notify: of bernstein.yaml (hooks.h). */
#include "orch/hooks.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch/config-internal.h"
#include "orch/config.h"
#include "util/json.h"
#include "util/url.h"
#include "util/yaml.h"
#include "util/yschema.h"
#include "util/banned.h"

static const char *const hook_names[_HOOK_KIND_MAX] = {
	[HOOK_PRE_TASK] = "pre_task",	  [HOOK_POST_TASK] = "post_task",
	[HOOK_PRE_MERGE] = "pre_merge",	  [HOOK_POST_MERGE] = "post_merge",
	[HOOK_ON_RUN_END] = "on_run_end",
};

/* the same, NULL-ended, for the key check */
static const char *const hook_keys[] = {"pre_task",   "post_task",  "pre_merge",
					"post_merge", "on_run_end", NULL};

static const char *const notify_names[_NOTIFY_EVENT_MAX + 1] = {
	[NOTIFY_TASK_FAILED] = "task_failed", [NOTIFY_TASK_REVIEW] = "task_review",
	[NOTIFY_TASK_DONE] = "task_done",     [NOTIFY_RUN_DONE] = "run_done",
	[NOTIFY_BUDGET_WARN] = "budget_warn", [NOTIFY_BUDGET_EXCEEDED] = "budget_exceeded",
};

const char *hook_kind_to_string(enum hook_kind k)
{
	return (int)k >= 0 && k < _HOOK_KIND_MAX ? hook_names[k] : NULL;
}

enum hook_kind hook_kind_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _HOOK_KIND_MAX; i++)
		if (strcmp(s, hook_names[i]) == 0)
			return (enum hook_kind)i;
	return _HOOK_KIND_INVALID;
}

const char *notify_event_to_string(enum notify_event e)
{
	return (int)e >= 0 && e < _NOTIFY_EVENT_MAX ? notify_names[e] : NULL;
}

enum notify_event notify_event_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _NOTIFY_EVENT_MAX; i++)
		if (strcmp(s, notify_names[i]) == 0)
			return (enum notify_event)i;
	return _NOTIFY_EVENT_INVALID;
}

void orch_notify_init(struct orch_notify *n)
{
	memset(n, 0, sizeof(*n));
	n->on = NOTIFY_DEFAULT_ON;
	n->timeout_s = NOTIFY_DEFAULT_TIMEOUT_S;
	n->retries = NOTIFY_DEFAULT_RETRIES;
}

static int get_hook(const struct ydoc *doc, const struct ynode *v, const char *path,
		    struct orch_hook *h, struct diag *reterr)
{
	static const char *const keys[] = {"run", "timeout", NULL};
	char pk[YAML_PATH_MAX];
	const struct ynode *x;
	int r;

	h->line = v->line;
	h->col = v->col;
	h->timeout_s = HOOK_DEFAULT_TIMEOUT_S;
	if (v->kind == YNODE_SCALAR)
		return yaml_value_str(doc, v, path, false, &h->run, reterr);
	if (v->kind != YNODE_MAP)
		return yaml_field_err(doc, v, reterr, path,
				      "expected a command (a string) or {run, timeout}, got %s",
				      yaml_describe(v));
	r = orch_check_keys(doc, v, keys, path, reterr);
	if (r < 0)
		return r;
	x = ynode_get(v, "run");
	if (!x)
		return yaml_field_err(doc, v, reterr, path, "missing required key 'run'");
	r = yaml_value_str(doc, x, yaml_path_key(pk, sizeof(pk), path, "run"), false, &h->run,
			   reterr);
	if (r < 0)
		return r;
	x = ynode_get(v, "timeout");
	if (x)
		r = yaml_value_number(doc, x, yaml_path_key(pk, sizeof(pk), path, "timeout"), 0,
				      true, ORCH_MAX_TIMEOUT_S, &h->timeout_s, reterr);
	return r;
}

int orch_get_hooks(const struct ydoc *doc, const struct ynode *n, const char *path,
		   struct orch_hookset *ret, struct diag *reterr)
{
	struct orch_hookset hs;
	char pk[YAML_PATH_MAX];
	size_t i;
	int r;

	memset(&hs, 0, sizeof(hs));
	if (!n || n->kind != YNODE_MAP)
		return yaml_field_err(
			doc, n, reterr, path,
			"expected a mapping of hooks (pre_task, post_task, pre_merge, post_merge, on_run_end), got %s",
			yaml_describe(n));
	r = orch_check_keys(doc, n, hook_keys, path, reterr);
	if (r < 0)
		return r;
	for (i = 0; i < n->n; i++) {
		enum hook_kind k = hook_kind_from_string(n->keys[i]->str);

		if ((int)k < 0)
			continue; /* cannot happen: the keys were checked */
		r = get_hook(doc, n->items[i], yaml_path_key(pk, sizeof(pk), path, hook_names[k]),
			     &hs.h[k], reterr);
		if (r < 0)
			return r;
	}
	*ret = hs;
	return 0;
}

static int get_webhook_env(const struct ydoc *doc, const struct ynode *n, const char *path,
			   struct orch_notify *nt, struct diag *reterr)
{
	const struct ynode *v = ynode_get(n, "webhook_env");
	char pk[YAML_PATH_MAX];
	size_t k;
	int r;

	if (!v)
		return 0;
	yaml_path_key(pk, sizeof(pk), path, "webhook_env");
	r = yaml_value_str(doc, v, pk, true, &nt->webhook_env, reterr);
	if (r < 0)
		return r;
	for (k = 0; nt->webhook_env && nt->webhook_env[k]; k++) {
		char ch = nt->webhook_env[k];

		if (!((ch >= 'A' && ch <= 'Z') || ch == '_' || (k && ch >= '0' && ch <= '9')) ||
		    k >= 128)
			return yaml_field_err(
				doc, v, reterr, pk,
				"expected a variable name ([A-Z_][A-Z0-9_]*, at most 128 bytes)");
	}
	if (nt->webhook_env && nt->webhook)
		return yaml_field_err(doc, v, reterr, pk, "give webhook or webhook_env, not both");
	return 0;
}

static int get_on(const struct ydoc *doc, const struct ynode *n, const char *path,
		  struct orch_notify *nt, struct diag *reterr)
{
	const struct ynode *v = ynode_get(n, "on");
	char pk[YAML_PATH_MAX], pi[YAML_PATH_MAX];
	size_t i;
	int r, e;

	if (!v)
		return 0;
	yaml_path_key(pk, sizeof(pk), path, "on");
	if (v->kind != YNODE_SEQ)
		return yaml_field_err(doc, v, reterr, pk, "expected a list of events, got %s",
				      yaml_describe(v));
	nt->on = 0;
	for (i = 0; i < v->n; i++) {
		r = yaml_value_enum(doc, v->items[i], yaml_path_index(pi, sizeof(pi), pk, i),
				    notify_names, &e, reterr);
		if (r < 0)
			return r;
		nt->on |= 1u << e;
	}
	return 0;
}

int orch_get_notify(const struct ydoc *doc, const struct ynode *n, const char *path,
		    struct orch_notify *ret, struct diag *reterr)
{
	static const char *const keys[] = {"webhook", "webhook_env", "on", "desktop",
					   "timeout", "retries",     NULL};
	struct orch_notify nt;
	char pk[YAML_PATH_MAX];
	const struct ynode *v;
	int64_t iv;
	int r;

	orch_notify_init(&nt);
	nt.set = true;
	if (!n || n->kind != YNODE_MAP)
		return yaml_field_err(
			doc, n, reterr, path,
			"expected a mapping {webhook, webhook_env, on, desktop, timeout, retries}, got %s",
			yaml_describe(n));
	r = orch_check_keys(doc, n, keys, path, reterr);
	if (r < 0)
		return r;
	if ((v = ynode_get(n, "webhook"))) {
		struct diag d;

		yaml_path_key(pk, sizeof(pk), path, "webhook");
		r = yaml_value_str(doc, v, pk, true, &nt.webhook, reterr);
		if (r < 0)
			return r;
		diag_clear(&d);
		if (nt.webhook && url_webhook_check(nt.webhook, NULL, &d) < 0)
			return yaml_field_err(doc, v, reterr, pk, "%s", d.msg);
	}
	r = get_webhook_env(doc, n, path, &nt, reterr);
	if (r < 0)
		return r;
	r = get_on(doc, n, path, &nt, reterr);
	if (r < 0)
		return r;
	if ((v = ynode_get(n, "desktop"))) {
		if (v->kind != YNODE_SCALAR || !v->plain ||
		    (strcmp(v->str, "true") != 0 && strcmp(v->str, "false") != 0))
			return yaml_field_err(doc, v, reterr,
					      yaml_path_key(pk, sizeof(pk), path, "desktop"),
					      "expected true or false, got %s", yaml_describe(v));
		nt.desktop = strcmp(v->str, "true") == 0;
	}
	if ((v = ynode_get(n, "timeout"))) {
		r = yaml_value_number(doc, v, yaml_path_key(pk, sizeof(pk), path, "timeout"), 0,
				      true, NOTIFY_MAX_TIMEOUT_S, &nt.timeout_s, reterr);
		if (r < 0)
			return r;
	}
	if ((v = ynode_get(n, "retries"))) {
		r = yaml_value_int(doc, v, yaml_path_key(pk, sizeof(pk), path, "retries"), 0,
				   NOTIFY_MAX_RETRIES, &iv, reterr);
		if (r < 0)
			return r;
		nt.retries = (int)iv;
	}
	*ret = nt;
	return 0;
}

bool orch_hooks_any(const struct orch_hookset *h)
{
	int i;

	for (i = 0; i < _HOOK_KIND_MAX; i++)
		if (h->h[i].run)
			return true;
	return false;
}

json_t *orch_hooks_json(const struct orch_hookset *h)
{
	json_t *o;
	int i;

	if (!orch_hooks_any(h))
		return NULL;
	o = json_object();
	for (i = 0; i < _HOOK_KIND_MAX; i++) {
		json_t *x;

		if (!h->h[i].run)
			continue;
		x = json_object();
		json_obj_set(x, "run", json_str_lossy(h->h[i].run));
		json_obj_set(x, "timeout", json_real(h->h[i].timeout_s));
		json_obj_set(o, hook_names[i], x);
	}
	return o;
}

json_t *orch_notify_json(const struct orch_notify *n)
{
	char shown[URL_MAX + 64];
	json_t *o, *on;
	int i;

	if (!n->set)
		return NULL;
	o = json_object();
	if (n->webhook) {
		url_webhook_shown(n->webhook, shown, sizeof(shown));
		json_obj_set(o, "webhook", json_str_lossy(shown));
	} else {
		json_obj_set(o, "webhook", json_null());
	}
	if (n->webhook_env)
		json_obj_set(o, "webhook_env", json_str_lossy(n->webhook_env));
	on = json_array();
	for (i = 0; i < _NOTIFY_EVENT_MAX; i++)
		if (n->on & (1u << i))
			(void)json_array_append_new(on, json_string(notify_names[i]));
	json_obj_set(o, "on", on);
	json_obj_set(o, "desktop", json_boolean(n->desktop));
	json_obj_set(o, "timeout", json_real(n->timeout_s));
	json_obj_set(o, "retries", json_integer(n->retries));
	return o;
}

int orch_hooks_from_json(const json_t *o, struct orch_hookset *ret)
{
	struct orch_hookset hs;
	const char *key;
	json_t *v;

	memset(&hs, 0, sizeof(hs));
	if (o && !json_is_object(o))
		return -EBADMSG;
	json_object_foreach((json_t *)(uintptr_t)o, key, v)
	{
		enum hook_kind k = hook_kind_from_string(key);
		const json_t *run = json_object_get(v, "run"), *to = json_object_get(v, "timeout");

		if ((int)k < 0 || !json_is_string(run) || !json_string_value(run)[0] ||
		    (to && !json_is_number(to)))
			return -EBADMSG;
		hs.h[k].run = json_string_value(run);
		hs.h[k].timeout_s = to ? json_number_value(to) : HOOK_DEFAULT_TIMEOUT_S;
		if (!(hs.h[k].timeout_s > 0 && hs.h[k].timeout_s <= ORCH_MAX_TIMEOUT_S))
			return -EBADMSG;
	}
	*ret = hs;
	return 0;
}

int orch_notify_from_json(const json_t *o, struct orch_notify *ret)
{
	struct orch_notify nt;
	const json_t *v;
	size_t i;

	orch_notify_init(&nt);
	if (!o || json_is_null(o)) {
		*ret = nt;
		return 0;
	}
	if (!json_is_object(o))
		return -EBADMSG;
	nt.set = true;
	v = json_object_get(o, "webhook_env");
	if (v && !json_is_string(v))
		return -EBADMSG;
	nt.webhook_env = v ? json_string_value(v) : NULL;
	v = json_object_get(o, "on");
	if (v) {
		const json_t *e;

		if (!json_is_array(v))
			return -EBADMSG;
		nt.on = 0;
		json_array_foreach((json_t *)(uintptr_t)v, i, e)
		{
			enum notify_event ev = notify_event_from_string(json_string_value(e));

			if ((int)ev < 0)
				return -EBADMSG;
			nt.on |= 1u << ev;
		}
	}
	nt.desktop = json_is_true(json_object_get(o, "desktop"));
	v = json_object_get(o, "timeout");
	if (v && (!json_is_number(v) || !(json_number_value(v) > 0) ||
		  json_number_value(v) > NOTIFY_MAX_TIMEOUT_S))
		return -EBADMSG;
	if (v)
		nt.timeout_s = json_number_value(v);
	v = json_object_get(o, "retries");
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
		  json_integer_value(v) > NOTIFY_MAX_RETRIES))
		return -EBADMSG;
	if (v)
		nt.retries = (int)json_integer_value(v);
	*ret = nt;
	return 0;
}

void orch_hooks_merge(struct orch_hookset *dst, const struct orch_hookset *over)
{
	int i;

	for (i = 0; over && i < _HOOK_KIND_MAX; i++)
		if (over->h[i].run)
			dst->h[i] = over->h[i];
}

/* h as YAML: a block under 'hooks:' (config show) or one flow mapping (a
 * role's line), each hook as {run, timeout}. */
static int hooks_emit(const struct orch_hookset *h, bool flow, struct sbuf *out)
{
	const char *sep = flow ? "" : "\n  ";
	int i, r = sbuf_adds(out, flow ? "{" : "\nhooks:");

	for (i = 0; r >= 0 && i < _HOOK_KIND_MAX; i++) {
		if (!h->h[i].run)
			continue;
		r = sbuf_addf(out, "%s%s: {run: ", sep, hook_names[i]);
		if (r >= 0)
			r = yaml_emit_str(out, h->h[i].run);
		if (r >= 0)
			r = sbuf_adds(out, ", timeout: ");
		if (r >= 0)
			r = yaml_emit_num(out, h->h[i].timeout_s);
		if (r >= 0)
			r = sbuf_adds(out, "}");
		if (flow)
			sep = ", ";
	}
	if (r >= 0 && flow)
		r = sbuf_adds(out, "}");
	return r < 0 ? r : 0;
}

int orch_hooks_yaml(const struct orch_hookset *h, struct sbuf *out)
{
	return orch_hooks_any(h) ? hooks_emit(h, false, out) : 0;
}

/* n as YAML: a block under 'notify:' (config show) or one flow mapping
 * (plan validate's lines), the same keys in the same order. */
static int notify_emit(const struct orch_notify *n, bool flow, struct sbuf *out)
{
	const char *key = flow ? ", " : "\n  "; /* before every key but the first */
	char shown[URL_MAX + 64];
	const char *sep = "";
	int i, r;

	r = sbuf_adds(out, flow ? "{webhook: " : "\nnotify:\n  webhook: ");
	if (r >= 0 && n->webhook) {
		/* never the URL itself: it may hold the secret */
		url_webhook_shown(n->webhook, shown, sizeof(shown));
		r = yaml_emit_str(out, shown);
	} else if (r >= 0) {
		r = sbuf_adds(out, "null");
	}
	if (r >= 0 && n->webhook_env)
		r = sbuf_addf(out, "%swebhook_env: %s", key, n->webhook_env);
	if (r >= 0)
		r = sbuf_addf(out, "%son: [", key);
	for (i = 0; r >= 0 && i < _NOTIFY_EVENT_MAX; i++)
		if (n->on & (1u << i)) {
			r = sbuf_addf(out, "%s%s", sep, notify_names[i]);
			sep = ", ";
		}
	if (r >= 0)
		r = sbuf_addf(out, "]%sdesktop: %s%stimeout: ", key, n->desktop ? "true" : "false",
			      key);
	if (r >= 0)
		r = yaml_emit_num(out, n->timeout_s);
	if (r >= 0)
		r = sbuf_addf(out, "%sretries: %d%s", key, n->retries, flow ? "}" : "");
	return r < 0 ? r : 0;
}

int orch_notify_yaml(const struct orch_notify *n, struct sbuf *out)
{
	return n->set ? notify_emit(n, false, out) : 0;
}

int orch_hooks_flow_yaml(const struct orch_hookset *h, struct sbuf *out)
{
	return hooks_emit(h, true, out);
}

int orch_notify_flow_yaml(const struct orch_notify *n, struct sbuf *out)
{
	return notify_emit(n, true, out);
}
