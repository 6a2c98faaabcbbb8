/* adapter: auto (autopick.h). */
#include "route/autopick.h"

#include <string.h>

#include "audit/audit.h"
#include "route/route.h"
#include "util/banned.h"

static void skip(struct autopick *a, const char *name, const char *why)
{
	strvec_push(&a->skipped, name);
	strvec_push(&a->why, why);
}

void autopick_prepare(const struct catalog *cat, const char *const *order,
		      const struct usable_env *env, autopick_key_env_fn *key_env, void *userdata,
		      struct autopick *ret)
{
	size_t i;

	strvec_init(&ret->order);
	strvec_init(&ret->usable);
	strvec_init(&ret->skipped);
	strvec_init(&ret->why);
	ret->active = true;
	for (i = 0; order && order[i]; i++) {
		const struct registry_entry *e = catalog_find(cat, order[i]);
		struct usable_env ue = *env;
		struct usable u;

		strvec_push(&ret->order, order[i]);
		if (!e) {
			skip(ret, order[i], "not in the catalogue");
			continue;
		}
		if (e->builtin || !e->binary || !e->profile) {
			skip(ret, order[i], "not an agent CLI (auto never chooses it)");
			continue;
		}
		ue.extra_key_env = key_env ? key_env(userdata, order[i]) : NULL;
		usable_check(e, &ue, &u);
		if (u.usable)
			strvec_push(&ret->usable, order[i]);
		else
			skip(ret, order[i], u.lacks);
		usable_release(&u);
	}
}

void autopick_release(struct autopick *a)
{
	if (!a)
		return;
	strvec_clear(&a->order);
	strvec_clear(&a->usable);
	strvec_clear(&a->skipped);
	strvec_clear(&a->why);
	a->active = false;
}

static json_t *names_json(const struct strvec *v)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < v->nr; i++)
		(void)json_array_append_new(arr, json_string(v->v[i]));
	return arr;
}

json_t *autopick_details(const struct autopick *a, const struct selection *sel)
{
	json_t *o = json_object(), *sk = json_array(), *unmet = json_object();
	size_t i;

	(void)json_object_set_new(o, "order", names_json(&a->order));
	for (i = 0; i < a->skipped.nr; i++) {
		json_t *s = json_object();

		(void)json_object_set_new(s, "adapter", json_string(a->skipped.v[i]));
		(void)json_object_set_new(s, "reason", json_string(a->why.v[i]));
		(void)json_array_append_new(sk, s);
	}
	(void)json_object_set_new(o, "skipped", sk);
	(void)json_object_set_new(o, "candidates", names_json(&a->usable));
	(void)json_object_set_new(
		o, "chosen", sel && sel->chosen ? json_string(sel->chosen->name) : json_null());
	for (i = 0; sel && i < sel->n_considered; i++)
		if (sel->considered[i].unmet)
			(void)json_object_set_new(unmet, sel->considered[i].name,
						  requirements_axes_json(sel->considered[i].unmet));
	(void)json_object_set_new(o, "unmet", unmet);
	return o;
}

int autopick_record(const struct autopick *a, const struct selection *sel,
		    struct audit_chain *chain, const char *run_id, struct diag *reterr)
{
	json_t *d;
	int r;

	if (!chain)
		return 0;
	d = autopick_details(a, sel);
	r = audit_append(chain,
			 sel && sel->chosen ? AUTOPICK_EVENT_SELECTION : AUTOPICK_EVENT_REFUSAL,
			 ROUTE_ACTOR, ROUTE_RESOURCE_TYPE, run_id ? run_id : "", d, reterr);
	json_decref(d);
	return r;
}

void autopick_describe_refusal(const struct autopick *a, const struct selection *sel,
			       struct sbuf *out)
{
	const char *sep = "";
	size_t i;

	(void)sbuf_adds(out, a->usable.nr ? "adapter auto: no usable agent meets the task: "
					  : "adapter auto: no usable agent: ");
	for (i = 0; i < a->order.nr; i++) {
		const char *name = a->order.v[i];
		long k = strvec_find(&a->skipped, name);
		size_t j;

		if (k >= 0) {
			(void)sbuf_addf(out, "%s%s: %s", sep, name, a->why.v[k]);
			sep = "; ";
			continue;
		}
		for (j = 0; sel && j < sel->n_considered; j++) {
			if (strcmp(sel->considered[j].name, name) != 0 || !sel->considered[j].unmet)
				continue;
			(void)sbuf_addf(out, "%s%s: requirement not met: ", sep, name);
			(void)requirements_axes_describe(sel->considered[j].unmet, out);
			sep = "; ";
		}
	}
	if (!a->order.nr)
		(void)sbuf_adds(out, "the auto: list of bernstein.yaml is empty");
}
