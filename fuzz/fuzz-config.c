/* Fuzz target for bernstein.yaml (src/orch/config.h): the loader on
 * arbitrary bytes, then, for what loads, the invariants of a valid
 * configuration: every value in range, every name known, every api_key_env
 * admitted by the allow-list, the YAML rendering loading back to the same
 * configuration, and the slot merge never setting a slot no source has. */
#include <stdlib.h>
#include <string.h>

#include "adapter/credential.h"
#include "adapter/profile.h"
#include "fuzz/fuzz.h"
#include "orch/config-internal.h"
#include "orch/config.h"
#include "util/sbuf.h"
#include "util/url.h"

#define ALLOWED "FUZZ_KEY,OTHER_KEY"

static void check_values(const struct orch_config *c)
{
	size_t i;

	if (!c->adapter || !profile_name_valid(c->adapter))
		abort();
	if (c->parallel < 1 || c->parallel > ORCH_MAX_PARALLEL)
		abort();
	if (!(c->timeout_s > 0) || !(c->kill_grace_s > 0) || !(c->retry_backoff_s >= 0))
		abort();
	if (c->max_retries < 0 || c->max_retries > ORCH_MAX_RETRIES)
		abort();
	if (c->merge < 0 || c->merge >= _MERGE_POLICY_MAX)
		abort();
	if (c->n_modes < 3 || (c->mode && !orch_config_mode(c, c->mode)))
		abort();
	for (i = 0; i < c->n_gates; i++)
		if (!c->gates[i].name || !c->gates[i].run || !(c->gates[i].timeout_s > 0))
			abort();
	for (i = 0; i < c->n_roles; i++) {
		const struct role_policy *rp = &c->roles[i];

		if (!orch_role_known(rp->role))
			abort();
		if (rp->api_key_env && credential_env_check(rp->api_key_env, ALLOWED, NULL) < 0)
			abort();
		if (rp->base_url && url_check(rp->base_url, NULL, NULL) < 0)
			abort();
		if (orch_config_role(c, rp->role) != rp)
			abort(); /* role names are unique */
	}
}

static void check_round_trip(const struct orch_config *c)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct orch_config *back = NULL;
	json_t *a, *b;
	struct diag d;

	if (orch_config_to_yaml(c, &sb) < 0)
		abort();
	if (orch_config_load_buf("back.yaml", sb.buf, sb.len, ALLOWED, &back, &d) < 0)
		abort(); /* the rendering always loads */
	a = orch_config_json(c);
	b = orch_config_json(back);
	(void)json_object_del(a, "source");
	(void)json_object_del(b, "source");
	if (!json_equal(a, b))
		abort(); /* ... to the same configuration */
	json_decref(a);
	json_decref(b);
	orch_config_free(back);
	sbuf_release(&sb);
}

static void check_slots(const struct orch_config *c)
{
	struct profile p;
	struct invocation_sampling task = {0}, s;
	size_t i;

	memset(&p, 0, sizeof(p));
	p.caps.supports_sampling_params = true;
	for (i = 0; i <= c->n_roles; i++) {
		const char *role = i < c->n_roles ? c->roles[i].role : "backend";
		const struct role_policy *rp = orch_config_role(c, role);
		const struct mode_profile *m = orch_config_mode(c, c->mode);
		const struct orch_endpoint *ep =
			c->endpoints.n ? &c->endpoints.v[i % c->endpoints.n] : NULL;
		unsigned allowed = task.set;

		if (rp && rp->base_url)
			allowed |= 1u << SAMPLING_BASE_URL;
		if (rp && rp->api_key_env)
			allowed |= 1u << SAMPLING_API_KEY_ENV;
		if (m)
			allowed |= m->sampling.set;
		if (ep && ep->base_url)
			allowed |= 1u << SAMPLING_BASE_URL;
		if (ep && ep->api_key_env)
			allowed |= 1u << SAMPLING_API_KEY_ENV;
		orch_config_slots(c, role, &p, ep, &task, &s);
		if (s.set & ~allowed)
			abort();
		task.set = 1u << SAMPLING_TEMPERATURE; /* the task wins from the second round */
		task.temperature = 1.5;
		if (i && s.temperature != 1.5)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct orch_config *c = NULL;
	struct diag d;

	diag_clear(&d);
	if (orch_config_load_buf("fuzz.yaml", (const char *)data, size, ALLOWED, &c, &d) < 0) {
		if (c || !d.msg[0] || strcmp(d.file, "fuzz.yaml") != 0)
			abort(); /* a failure always says why, and returns nothing */
		return 0;
	}
	check_values(c);
	check_round_trip(c);
	check_slots(c);
	orch_config_free(c);
	return 0;
}
