/* adapter: auto in a run (autoroute.h). */
#include "orch/autoroute.h"

#include <stdint.h>
#include <string.h>

#include "adapter/envpolicy.h"
#include "orch/config.h"
#include "util/banned.h"

const char *autoroute_key_env(void *task, const char *adapter)
{
	const struct autoroute_task *t = task;
	const struct orch_endpoint *ep = orch_config_endpoint(t->cfg, t->plan_endpoints, adapter);

	return ep ? ep->api_key_env : NULL;
}

bool autoroute_prepare(const struct orch_env *e, const struct autoroute_task *t,
		       struct autopick *ap)
{
	const struct orch_config *c = e->cfg;
	struct usable_env env = {
		.env = e->host_env,
		.home = envpolicy_get(e->host_env, "HOME"),
		.path = envpolicy_get(e->host_env, "PATH"),
		.host_allowed = e->allowed_api_key_envs,
	};

	if (!c->adapter || strcmp(c->adapter, ORCH_ADAPTER_AUTO) != 0)
		return false;
	autopick_prepare(e->cat, (const char *const *)c->auto_order.v, &env, autoroute_key_env,
			 (void *)(uintptr_t)t, ap);
	return true;
}

int autoroute_record(const struct orch_env *e, const char *run_id, const struct autopick *ap,
		     const struct selection *sel, int r, struct diag *reterr)
{
	int ra;

	if (!ap->active)
		return r;
	ra = autopick_record(ap, sel, e->chain, run_id, reterr);
	return ra < 0 ? ra : r;
}
