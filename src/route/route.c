#include "route/route.h"

#include "audit/audit.h"

json_t *route_record_details(const struct selection *s)
{
	json_t *o = json_object();

	if (s->chosen) {
		(void)json_object_set_new(o, "adapter", json_string(s->chosen->name));
		(void)json_object_set_new(o, "profile_hash",
					  s->chosen->profile_hash
						  ? json_string(s->chosen->profile_hash)
						  : json_null());
		(void)json_object_set_new(o, "requirements", json_deep_copy(s->requirements));
		return o;
	}
	/* the receipt's own fields but "kind", plus its hash */
	json_decref(o);
	o = selection_receipt(s);
	(void)json_object_del(o, "kind");
	(void)json_object_set_new(o, "receipt_hash", json_string(s->receipt_hash));
	return o;
}

int route_and_record(const struct select_input *in, struct audit_chain *chain, const char *run_id,
		     struct selection *ret, struct diag *reterr)
{
	struct selection s = {0};
	struct diag d;
	json_t *details;
	int r, ra;

	r = select_adapter(in, &s, reterr);
	if (r < 0 && r != -ENOTSUP)
		return r;
	if (!chain || (s.chosen && !s.chosen->profile)) {
		*ret = s;
		return r;
	}
	details = route_record_details(&s);
	ra = audit_append(chain, s.chosen ? ROUTE_EVENT_SELECTION : ROUTE_EVENT_REFUSAL,
			  ROUTE_ACTOR, ROUTE_RESOURCE_TYPE, run_id ? run_id : "", details, &d);
	json_decref(details);
	if (ra < 0) {
		selection_release(&s);
		if (reterr)
			*reterr = d;
		return ra;
	}
	s.recorded = true;
	*ret = s;
	return r;
}
