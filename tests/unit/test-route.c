/* Capability routing: requirement tokens, selection order, stronger-satisfies-
 * weaker, refusal receipts (shape, determinism, a golden hash) and
 * route_and_record() with and without an audit chain. The catalogue is built
 * here from small profile YAMLs so every capability is under the test's
 * control. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "adapter/catalog.h"
#include "adapter/profile.h"
#include "adapter/strategy.h"
#include "audit/audit.h"
#include "route/requirements.h"
#include "route/route.h"
#include "route/select.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/sbuf.h"

/* ---- fixtures ---- */

static const char matrix_yaml[] = "adapters:\n"
				  "  alpha:\n"
				  "    resume: unsupported\n"
				  "    dangerous_mode: unsupported\n"
				  "    event_channel: text-signals\n"
				  "  beta:\n"
				  "    resume: flag\n"
				  "    dangerous_mode: cli-flag\n"
				  "    event_channel: stream-json\n"
				  "  gamma:\n"
				  "    resume: subcommand\n"
				  "    dangerous_mode: unsupported\n"
				  "    event_channel: text-signals\n"
				  "    output_mode: artifact\n";

static const char registry_yaml[] = "adapters:\n"
				    "  loner:\n"
				    "    display_name: \"Loner\"\n"
				    "    binary: loner\n";

/* name, capabilities block (may be ""), extra top-level YAML (may be ""). */
static const char *const fixture_profiles[][3] = {
	/* added out of order: the catalogue orders by name */
	{"gamma",
	 "  sandbox: container\n"
	 "  max_parallel_workers: 8\n"
	 "  tool_use: true\n",
	 ""},
	{"alpha", "  tool_use: true\n", ""},
	{"delta",
	 "  sandbox: microvm\n"
	 "  max_parallel_workers: 16\n"
	 "  vision: true\n",
	 /* no matrix row: its own inline strategy */
	 "strategy:\n"
	 "  resume: unsupported\n"
	 "  dangerous_mode: always-on\n"
	 "  event_channel: none\n"},
	{"beta",
	 "  vision: true\n"
	 "  mcp_client: true\n"
	 "  sandbox: process\n"
	 "  max_parallel_workers: 4\n",
	 ""},
};

static char *profile_yaml(const char *name, const char *caps, const char *extra)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	assert_int_equal(sbuf_addf(&sb,
				   "name: %s\n"
				   "display_name: \"%s\"\n"
				   "shape: module\n"
				   "invocation:\n"
				   "  binary: %s\n"
				   "  prompt_positional: true\n"
				   "%s%s%s",
				   name, name, name, caps[0] ? "capabilities:\n" : "", caps, extra),
			 0);
	return sbuf_detach(&sb, NULL);
}

static struct catalog *fixture_catalog(void)
{
	struct catalog *cat = catalog_new();
	struct diag d = {0};
	size_t i;

	assert_int_equal(catalog_add_buf(cat, CATALOG_KIND_MATRIX, "matrix.yaml", matrix_yaml,
					 strlen(matrix_yaml), &d),
			 0);
	assert_int_equal(catalog_add_buf(cat, CATALOG_KIND_REGISTRY, "registry.yaml", registry_yaml,
					 strlen(registry_yaml), &d),
			 0);
	for (i = 0; i < sizeof(fixture_profiles) / sizeof(fixture_profiles[0]); i++) {
		char *y = profile_yaml(fixture_profiles[i][0], fixture_profiles[i][1],
				       fixture_profiles[i][2]);
		int r = catalog_add_profile_buf(cat, fixture_profiles[i][0], "fixture.yaml", y,
						strlen(y), &d);

		if (r < 0)
			fail_msg("fixture profile %s: %s", fixture_profiles[i][0], d.msg);
		free(y);
	}
	return cat;
}

static struct profile *load_profile(const char *name, const char *caps, const char *extra)
{
	struct profile *p = NULL;
	struct diag d = {0};
	char *y = profile_yaml(name, caps, extra);
	int r = profile_load_buf("t.yaml", name, y, strlen(y), &p, &d);

	free(y);
	if (r < 0)
		fail_msg("profile %s: %s", name, d.msg);
	return p;
}

static struct requirements parse1(const char *token)
{
	struct requirements req = REQUIREMENTS_INIT;
	struct diag d = {0};
	int r = requirements_add(&req, token, &d);

	if (r != 1)
		fail_msg("'%s' did not parse (%d): %s", token, r, d.msg);
	return req;
}

static char *jcs(const json_t *v)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	assert_int_equal(json_canon_jcs(v, &sb), 0);
	return sbuf_detach(&sb, NULL);
}

/* ---- requirement tokens ---- */

struct bool_axis {
	const char *token;
	enum req_axis axis;
	const char *caps;  /* the capability that provides it, or NULL */
	const char *extra; /* or the inline strategy that does */
};

static const struct bool_axis bool_axes[] = {
	{"agents_md", REQ_AGENTS_MD, "  agents_md: true\n", NULL},
	{"computer_use", REQ_COMPUTER_USE, "  computer_use: true\n", NULL},
	{"endpoint", REQ_ENDPOINT, "  supports_endpoint: true\n", NULL},
	{"local_models", REQ_LOCAL_MODELS, "  local_models: true\n", NULL},
	{"mcp_client", REQ_MCP_CLIENT, "  mcp_client: true\n", NULL},
	{"mcp_server", REQ_MCP_SERVER, "  mcp_server: true\n", NULL},
	{"native_subagents", REQ_NATIVE_SUBAGENTS, "  native_subagents: true\n", NULL},
	{"resume", REQ_RESUME, NULL,
	 "strategy:\n  resume: flag\n  dangerous_mode: unsupported\n  event_channel: none\n"
	 "runtime:\n  resume:\n    args: [--resume, \"{session_id}\"]\n"},
	{"sampling", REQ_SAMPLING, "  supports_sampling_params: true\n", NULL},
	{"streaming", REQ_STREAMING, "  streaming: true\n", NULL},
	{"tool_use", REQ_TOOL_USE, "  tool_use: true\n", NULL},
	{"unattended", REQ_UNATTENDED, NULL,
	 "strategy:\n  resume: unsupported\n  dangerous_mode: always-on\n  event_channel: none\n"},
	{"vision", REQ_VISION, "  vision: true\n", NULL},
};

/* Every boolean axis: parses without a value, sets only its bit, is met by
 * the one capability (or strategy) that provides it and by nothing else. */
static void test_every_boolean_axis(void **state)
{
	struct profile *bare = load_profile("bare", "", "");
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bool_axes) / sizeof(bool_axes[0]); i++) {
		const struct bool_axis *b = &bool_axes[i];
		char tok[64];
		struct requirements req;
		struct profile *p;
		struct strategy_decl *inl;
		struct adapter_strategy s = strategy_default, ps;
		json_t *j;

		(void)snprintf(tok, sizeof(tok), "capability:%s", b->token);
		req = parse1(tok);
		assert_int_equal(req.set, 1u << b->axis);
		assert_string_equal(requirements_axis_name(b->axis), b->token);
		assert_int_equal(requirements_axis_from_name(b->token), b->axis);
		j = requirements_json(&req);
		assert_true(json_is_true(json_object_get(j, b->token)));
		json_decref(j);

		p = load_profile("has", b->caps ? b->caps : "", b->extra ? b->extra : "");
		inl = (struct strategy_decl *)(uintptr_t)p->strategy;
		ps = inl ? inl->strategy : strategy_default;
		assert_int_equal(requirements_unmet(&req, p, &ps), 0);
		assert_int_equal(requirements_unmet(&req, bare, &s), 1u << b->axis);
		/* no profile declares nothing, so fails it */
		assert_int_equal(requirements_unmet(&req, NULL, NULL), 1u << b->axis);
		profile_free(p);
	}
	profile_free(bare);
}

/* sampling is the coarse capability: the narrow ones do not provide it. */
static void test_sampling_is_coarse(void **state)
{
	struct requirements req = parse1("capability:sampling");
	struct profile *p = load_profile("narrow",
					 "  supports_temperature: true\n"
					 "  supports_top_p: true\n"
					 "  supports_top_k: true\n"
					 "  supports_max_tokens: true\n",
					 "");

	(void)state;
	assert_int_equal(requirements_unmet(&req, p, &strategy_default), 1u << REQ_SAMPLING);
	profile_free(p);
}

static void test_valued_axes(void **state)
{
	struct requirements req = REQUIREMENTS_INIT;
	struct diag d = {0};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	json_t *j;

	(void)state;
	assert_int_equal(requirements_add(&req, "capability:sandbox=container", &d), 1);
	assert_int_equal(req.sandbox, SANDBOX_TIER_CONTAINER);
	assert_int_equal(requirements_add(&req, "capability:max_parallel_workers=4", &d), 1);
	assert_int_equal(req.max_parallel_workers, 4);
	assert_int_equal(requirements_add(&req, "capability:output_mode=artifact", &d), 1);
	assert_int_equal(req.output_mode, OUTPUT_MODE_ARTIFACT);
	assert_int_equal(req.set, (1u << REQ_SANDBOX) | (1u << REQ_MAX_PARALLEL_WORKERS) |
					  (1u << REQ_OUTPUT_MODE));
	j = requirements_json(&req);
	assert_string_equal(json_string_value(json_object_get(j, "sandbox")), "container");
	assert_int_equal(json_integer_value(json_object_get(j, "max_parallel_workers")), 4);
	assert_string_equal(json_string_value(json_object_get(j, "output_mode")), "artifact");
	assert_int_equal(json_object_size(j), _REQ_AXIS_MAX);
	json_decref(j);
	assert_int_equal(requirements_describe(&req, &sb), 0);
	assert_string_equal(sb.buf,
			    "max_parallel_workers=4, output_mode=artifact, sandbox=container");
	sbuf_release(&sb);

	/* every tier and both modes parse */
	assert_int_equal(parse1("capability:sandbox=none").sandbox, SANDBOX_TIER_NONE);
	assert_int_equal(parse1("capability:sandbox=process").sandbox, SANDBOX_TIER_PROCESS);
	assert_int_equal(parse1("capability:sandbox=microvm").sandbox, SANDBOX_TIER_MICROVM);
	assert_int_equal(parse1("capability:output_mode=git-diff").output_mode,
			 OUTPUT_MODE_GIT_DIFF);
	assert_int_equal(parse1("capability:max_parallel_workers=1").max_parallel_workers, 1);
	assert_int_equal(parse1("capability:max_parallel_workers=4096").max_parallel_workers, 4096);
}

/* What a profile offers, as the tokens a task could require: its boolean
 * axes (the strategy's only with a strategy), then the valued ones. Each
 * token it lists, required, is met by it. */
static void test_offered_describe(void **state)
{
	struct profile *p = load_profile("offer",
					 "  sandbox: container\n"
					 "  max_parallel_workers: 8\n"
					 "  tool_use: true\n"
					 "  vision: true\n",
					 "");
	struct adapter_strategy s = strategy_default;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	struct requirements req = REQUIREMENTS_INIT;
	struct diag d = {0};

	(void)state;
	assert_int_equal(requirements_offered_describe(p, NULL, &sb), 0);
	assert_string_equal(sb.buf, "tool_use, vision, max_parallel_workers=8, sandbox=container");
	sbuf_reset(&sb);
	s.output_mode = OUTPUT_MODE_ARTIFACT;
	s.resume = RESUME_FLAG;
	assert_int_equal(requirements_offered_describe(p, &s, &sb), 0);
	assert_non_null(strstr(sb.buf, "resume, tool_use, "));
	assert_non_null(strstr(sb.buf, ", output_mode=artifact, sandbox=container"));
	/* what it says it offers, it meets */
	assert_int_equal(requirements_add(&req, "capability:vision", &d), 1);
	assert_int_equal(requirements_add(&req, "capability:sandbox=container", &d), 1);
	assert_int_equal(requirements_add(&req, "capability:max_parallel_workers=8", &d), 1);
	assert_int_equal(requirements_add(&req, "capability:output_mode=artifact", &d), 1);
	assert_int_equal(requirements_add(&req, "capability:resume", &d), 1);
	assert_int_equal(requirements_unmet(&req, p, &s), 0);
	sbuf_release(&sb);
	profile_free(p);
}

/* The normalized object: every axis, defaults for the unrequired; trivial
 * requirements normalize away. */
static void test_normalized_json(void **state)
{
	struct requirements none = REQUIREMENTS_INIT, trivial = REQUIREMENTS_INIT;
	struct diag d = {0};
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	char *a, *b;
	json_t *ja, *jb;

	(void)state;
	assert_int_equal(requirements_add(&trivial, "capability:sandbox=none", &d), 1);
	assert_int_equal(requirements_add(&trivial, "capability:max_parallel_workers=1", &d), 1);
	ja = requirements_json(&none);
	jb = requirements_json(&trivial);
	a = jcs(ja);
	b = jcs(jb);
	assert_string_equal(a, b);
	assert_string_equal(
		a,
		"{\"agents_md\":false,\"computer_use\":false,\"endpoint\":false,\"local_models\":false,\"max_parallel_workers\":1,\"mcp_client\":false,\"mcp_server\":false,\"native_subagents\":false,\"output_mode\":null,\"resume\":false,\"sampling\":false,\"sandbox\":\"none\",\"streaming\":false,\"tool_use\":false,\"unattended\":false,\"vision\":false}");
	assert_int_equal(requirements_describe(&trivial, &sb), 0);
	assert_string_equal(sb.buf, "none");
	/* nothing to fail: even a profile-less adapter meets them */
	assert_int_equal(requirements_unmet(&trivial, NULL, NULL), 0);
	free(a);
	free(b);
	json_decref(ja);
	json_decref(jb);
	sbuf_release(&sb);
}

static void test_skill_tokens_ignored(void **state)
{
	static const char *const skills[] = {
		"python",
		"testing",
		"",
		"capability",
		"Capability:vision",
		"capabilities:vision",
		"skill:capability:vision",
	};
	struct requirements req = REQUIREMENTS_INIT;
	struct diag d = {0};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(skills) / sizeof(skills[0]); i++) {
		assert_int_equal(requirements_add(&req, skills[i], &d), 0);
		assert_int_equal(req.set, 0);
	}
	assert_int_equal(requirements_add(&req, NULL, &d), 0);
}

static void test_parse_list(void **state)
{
	static const char *const tokens[] = {
		"python",
		"capability:mcp_client",
		"capability:sandbox=container",
		"capability:max_parallel_workers=4",
		"  capability:vision  ",
		"capability: resume",
		"capability:output_mode = artifact",
		"capability:mcp_client", /* the same again: fine */
	};
	struct requirements req = REQUIREMENTS_INIT;
	struct diag d = {0};

	(void)state;
	assert_int_equal(requirements_parse(tokens, sizeof(tokens) / sizeof(tokens[0]), &req, &d),
			 7);
	assert_int_equal(req.set, (1u << REQ_MCP_CLIENT) | (1u << REQ_SANDBOX) |
					  (1u << REQ_MAX_PARALLEL_WORKERS) | (1u << REQ_VISION) |
					  (1u << REQ_RESUME) | (1u << REQ_OUTPUT_MODE));
	assert_int_equal(req.sandbox, SANDBOX_TIER_CONTAINER);
	assert_int_equal(req.output_mode, OUTPUT_MODE_ARTIFACT);
	assert_int_equal(requirements_parse(NULL, 0, &req, &d), 0);
	assert_int_equal(req.set, 0);
}

struct bad_token {
	const char *token;
	const char *needle; /* in the message, besides the token itself */
};

static const struct bad_token bad_tokens[] = {
	/* unknown axes, with the accepted list */
	{"capability:visoin", "unknown axis 'visoin' (accepted: agents_md, computer_use"},
	{"capability:", "unknown axis ''"},
	{"capability:=3", "unknown axis ''"},
	{"capability:Vision", "unknown axis 'Vision'"},
	{"capability:supports_endpoint", "unknown axis 'supports_endpoint'"},
	{"capability:sandbox_tier=process", "unknown axis 'sandbox_tier'"},
	/* a boolean given a value */
	{"capability:vision=true", "'vision' is a boolean axis and takes no value"},
	{"capability:vision=", "'vision' is a boolean axis and takes no value"},
	{"capability:mcp_client=yes", "write 'capability:mcp_client'"},
	{"capability:resume=native", "'resume' is a boolean axis"},
	/* a valued axis without a value */
	{"capability:sandbox", "'sandbox' needs a tier: capability:sandbox=<none|process|"},
	{"capability:sandbox=", "'sandbox' needs a tier"},
	{"capability:sandbox=  ", "'sandbox' needs a tier"},
	{"capability:max_parallel_workers", "'max_parallel_workers' needs an integer"},
	{"capability:output_mode",
	 "'output_mode' needs a mode: capability:output_mode=<git-diff|artifact>"},
	/* unknown values */
	{"capability:sandbox=vm",
	 "unknown sandbox tier 'vm' (accepted: none, process, container, microvm)"},
	{"capability:sandbox=Container", "unknown sandbox tier 'Container'"},
	{"capability:sandbox=landlock", "unknown sandbox tier 'landlock'"},
	{"capability:output_mode=diff",
	 "unknown output mode 'diff' (accepted: git-diff, artifact)"},
	/* not an integer from 1 to 4096 */
	{"capability:max_parallel_workers=four", "integer from 1 to 4096, not 'four'"},
	{"capability:max_parallel_workers=0", "not '0'"},
	{"capability:max_parallel_workers=-4", "not '-4'"},
	{"capability:max_parallel_workers=+4", "not '+4'"},
	{"capability:max_parallel_workers=4.0", "not '4.0'"},
	{"capability:max_parallel_workers=4 4", "not '4 4'"},
	{"capability:max_parallel_workers=0x10", "not '0x10'"},
	{"capability:max_parallel_workers=4097", "not '4097'"},
	{"capability:max_parallel_workers=99999999999999999999999", "not '9999"},
};

static void test_mistypes(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_tokens) / sizeof(bad_tokens[0]); i++) {
		struct requirements req = parse1("capability:tool_use"), before = req;
		struct diag d = {0};
		char quoted[160];

		assert_int_equal(requirements_add(&req, bad_tokens[i].token, &d), -EINVAL);
		/* unchanged on error */
		assert_memory_equal(&req, &before, sizeof(req));
		(void)snprintf(quoted, sizeof(quoted), "capability requirement '%s'",
			       bad_tokens[i].token);
		if (!strstr(d.msg, quoted))
			fail_msg("'%s': message does not name the token: %s", bad_tokens[i].token,
				 d.msg);
		if (!strstr(d.msg, bad_tokens[i].needle))
			fail_msg("'%s': message lacks '%s': %s", bad_tokens[i].token,
				 bad_tokens[i].needle, d.msg);
		assert_string_equal(d.file, "");
	}
}

static void test_conflicts(void **state)
{
	static const char *const pairs[][3] = {
		{"capability:sandbox=process", "capability:sandbox=container",
		 "conflicts with 'sandbox=process' required before"},
		{"capability:sandbox=none", "capability:sandbox=process",
		 "conflicts with 'sandbox=none'"},
		{"capability:max_parallel_workers=4", "capability:max_parallel_workers=8",
		 "conflicts with 'max_parallel_workers=4'"},
		{"capability:output_mode=artifact", "capability:output_mode=git-diff",
		 "conflicts with 'output_mode=artifact'"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const char *toks[] = {pairs[i][0], pairs[i][1]};
		struct requirements req = parse1(pairs[i][0]), out = parse1("capability:vision");
		struct requirements keep = out;
		struct diag d = {0};

		/* the same value twice is fine */
		assert_int_equal(requirements_add(&req, pairs[i][0], &d), 1);
		assert_int_equal(requirements_add(&req, pairs[i][1], &d), -EINVAL);
		assert_non_null(strstr(d.msg, pairs[i][2]));
		assert_non_null(strstr(d.msg, pairs[i][1]));
		/* the list form fails on the second and leaves *ret alone */
		assert_int_equal(requirements_parse(toks, 2, &out, &d), -EINVAL);
		assert_memory_equal(&out, &keep, sizeof(out));
	}
}

/* ---- selection ---- */

static int select_tokens(const struct catalog *cat, const char *const *tokens, size_t n,
			 const char *const *candidates, const char *const *preference,
			 struct selection *ret, struct diag *d)
{
	struct requirements req = REQUIREMENTS_INIT;
	struct select_input in = {.cat = cat, .candidates = candidates, .preference = preference};

	assert_true(requirements_parse(tokens, n, &req, d) >= 0);
	in.req = &req;
	return select_adapter(&in, ret, d);
}

static void assert_considered(const struct selection *s, const char *const *names)
{
	size_t i;

	for (i = 0; names[i]; i++) {
		assert_true(i < s->n_considered);
		assert_string_equal(s->considered[i].name, names[i]);
	}
	assert_int_equal(s->n_considered, i);
}

/* Catalogue order is byte order of the names, only profiled adapters (loner,
 * a registry.yaml entry, is never a candidate). */
static void test_catalogue_order(void **state)
{
	static const char *const all[] = {"alpha", "beta", "delta", "gamma", NULL};
	static const char *const impossible[] = {"capability:computer_use"};
	struct catalog *cat = fixture_catalog();
	struct selection s;
	struct diag d = {0};

	(void)state;
	/* nothing required: the first in catalogue order */
	assert_int_equal(select_tokens(cat, NULL, 0, NULL, NULL, &s, &d), 0);
	assert_string_equal(s.chosen->name, "alpha");
	assert_int_equal(s.order, SELECT_ORDER_CATALOGUE);
	assert_int_equal(s.n_considered, 1);
	assert_string_equal(s.chosen->profile_hash, profile_hash(s.chosen->profile));
	selection_release(&s);

	assert_int_equal(select_tokens(cat, impossible, 1, NULL, NULL, &s, &d), -ENOTSUP);
	assert_null(s.chosen);
	assert_considered(&s, all);
	assert_string_equal(select_order_to_string(s.order), "catalogue");
	selection_release(&s);
	catalog_free(cat);
}

/* First match wins; the considered list stops at it. */
static void test_first_match(void **state)
{
	static const char *const vision[] = {"capability:vision"};
	static const char *const vision_container[] = {"capability:vision",
						       "capability:sandbox=container"};
	static const char *const upto_beta[] = {"alpha", "beta", NULL};
	struct catalog *cat = fixture_catalog();
	struct selection s;
	struct diag d = {0};

	(void)state;
	assert_int_equal(select_tokens(cat, vision, 1, NULL, NULL, &s, &d), 0);
	assert_string_equal(s.chosen->name, "beta");
	assert_considered(&s, upto_beta);
	assert_int_equal(s.considered[0].unmet, 1u << REQ_VISION);
	assert_int_equal(s.considered[1].unmet, 0);
	selection_release(&s);

	/* beta has vision but only process isolation: delta (microvm) serves */
	assert_int_equal(select_tokens(cat, vision_container, 2, NULL, NULL, &s, &d), 0);
	assert_string_equal(s.chosen->name, "delta");
	assert_int_equal(s.considered[1].unmet, 1u << REQ_SANDBOX);
	selection_release(&s);
	catalog_free(cat);
}

/* A stronger capability satisfies a weaker requirement, never the reverse. */
static void test_stronger_satisfies_weaker(void **state)
{
	static const struct {
		const char *token;
		const char *chosen; /* in catalogue order alpha, beta, delta, gamma */
	} cases[] = {
		{"capability:sandbox=none", "alpha"},
		{"capability:sandbox=process", "beta"},	   /* process serves process */
		{"capability:sandbox=container", "delta"}, /* microvm serves container */
		{"capability:sandbox=microvm", "delta"},   /* only microvm */
		{"capability:max_parallel_workers=1", "alpha"},
		{"capability:max_parallel_workers=2", "beta"},	/* 4 serve 2 */
		{"capability:max_parallel_workers=4", "beta"},	/* 4 serve 4 */
		{"capability:max_parallel_workers=5", "delta"}, /* 16 serve 5 */
		{"capability:max_parallel_workers=16", "delta"},
		{"capability:max_parallel_workers=17", NULL},
	};
	struct catalog *cat = fixture_catalog();
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct selection s;
		struct diag d = {0};
		int r = select_tokens(cat, &cases[i].token, 1, NULL, NULL, &s, &d);

		if (cases[i].chosen) {
			if (r != 0)
				fail_msg("%s: %s", cases[i].token, d.msg);
			assert_string_equal(s.chosen->name, cases[i].chosen);
		} else {
			assert_int_equal(r, -ENOTSUP);
		}
		selection_release(&s);
	}
	catalog_free(cat);
}

/* The strategy axes read the resolved strategy: the matrix row, else the
 * inline block, else the default. */
static void test_strategy_axes(void **state)
{
	static const struct {
		const char *token;
		const char *chosen;
	} cases[] = {
		{"capability:resume", "beta"},		      /* matrix: flag */
		{"capability:unattended", "beta"},	      /* matrix: cli-flag */
		{"capability:output_mode=artifact", "gamma"}, /* matrix: artifact */
		{"capability:output_mode=git-diff", "alpha"},
	};
	static const char *const unattended_vision_mw8[] = {
		"capability:unattended", "capability:vision", "capability:max_parallel_workers=8"};
	struct catalog *cat = fixture_catalog();
	struct selection s;
	struct diag d = {0};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(select_tokens(cat, &cases[i].token, 1, NULL, NULL, &s, &d), 0);
		assert_string_equal(s.chosen->name, cases[i].chosen);
		selection_release(&s);
	}
	/* delta's inline strategy (always-on) makes it unattended */
	assert_int_equal(select_tokens(cat, unattended_vision_mw8, 3, NULL, NULL, &s, &d), 0);
	assert_string_equal(s.chosen->name, "delta");
	selection_release(&s);
	catalog_free(cat);
}

static void test_explicit_candidates(void **state)
{
	static const char *const order[] = {"gamma", "alpha", "gamma", "beta", NULL};
	static const char *const considered[] = {"gamma", "alpha", "beta", NULL};
	static const char *const unknown[] = {"alpha", "nosuch", NULL};
	static const char *const empty[] = {NULL};
	static const char *const loner[] = {"loner", "alpha", NULL};
	static const char *const tool[] = {"capability:tool_use"};
	static const char *const vision[] = {"capability:vision"};
	static const char *const computer[] = {"capability:computer_use"};
	struct catalog *cat = fixture_catalog();
	struct selection s = {0}, untouched;
	struct diag d = {0};

	(void)state;
	/* as given: gamma first, although alpha comes first in the catalogue */
	assert_int_equal(select_tokens(cat, tool, 1, order, NULL, &s, &d), 0);
	assert_string_equal(s.chosen->name, "gamma");
	assert_int_equal(s.order, SELECT_ORDER_EXPLICIT);
	selection_release(&s);
	/* a repeated name is considered once; delta is not in the list */
	assert_int_equal(select_tokens(cat, vision, 1, order, NULL, &s, &d), 0);
	assert_string_equal(s.chosen->name, "beta");
	assert_considered(&s, considered);
	selection_release(&s);
	assert_int_equal(select_tokens(cat, computer, 1, order, NULL, &s, &d), -ENOTSUP);
	assert_considered(&s, considered);
	selection_release(&s);

	/* an unknown name is an error and leaves *ret alone */
	memset(&untouched, 0x5a, sizeof(untouched));
	s = untouched;
	assert_int_equal(select_tokens(cat, NULL, 0, unknown, NULL, &s, &d), -EINVAL);
	assert_string_equal(d.msg, "unknown adapter 'nosuch' in the candidate list");
	assert_memory_equal(&s, &untouched, sizeof(s));

	/* an empty explicit list considers nobody: a refusal, no fallback */
	assert_int_equal(select_tokens(cat, NULL, 0, empty, NULL, &s, &d), -ENOTSUP);
	assert_int_equal(s.n_considered, 0);
	assert_int_equal(s.unmet, 0);
	{
		json_t *rc = selection_receipt(&s);

		assert_int_equal(json_array_size(json_object_get(rc, "candidates")), 0);
		json_decref(rc);
	}
	selection_release(&s);

	/* an explicitly named adapter without a profile: chosen only when
	 * nothing is required, and it presents no hash */
	assert_int_equal(select_tokens(cat, NULL, 0, loner, NULL, &s, &d), 0);
	assert_string_equal(s.chosen->name, "loner");
	assert_null(s.chosen->profile);
	assert_null(s.chosen->profile_hash);
	selection_release(&s);
	assert_int_equal(select_tokens(cat, tool, 1, loner, NULL, &s, &d), 0);
	assert_string_equal(s.chosen->name, "alpha");
	assert_int_equal(s.considered[0].unmet, 1u << REQ_TOOL_USE);
	selection_release(&s);
	catalog_free(cat);
}

/* A preference orders, it does not restrict: the preferred first, then the
 * rest in catalogue order; adapters without a profile are skipped. */
static void test_preference(void **state)
{
	static const char *const pref[] = {"loner", "gamma", "beta", "gamma", NULL};
	static const char *const considered[] = {"gamma", "beta", "alpha", "delta", NULL};
	static const char *const bad[] = {"gamma", "zzz", NULL};
	static const char *const explicit_[] = {"alpha", NULL};
	static const char *const tool[] = {"capability:tool_use"};
	static const char *const computer[] = {"capability:computer_use"};
	static const char *const microvm[] = {"capability:sandbox=microvm"};
	struct catalog *cat = fixture_catalog();
	struct selection s;
	struct diag d = {0};

	(void)state;
	assert_int_equal(select_tokens(cat, tool, 1, NULL, pref, &s, &d), 0);
	assert_string_equal(s.chosen->name, "gamma");
	assert_int_equal(s.order, SELECT_ORDER_PREFERENCE);
	selection_release(&s);
	assert_int_equal(select_tokens(cat, microvm, 1, NULL, pref, &s, &d), 0);
	assert_string_equal(s.chosen->name, "delta"); /* not preferred, still found */
	selection_release(&s);
	assert_int_equal(select_tokens(cat, computer, 1, NULL, pref, &s, &d), -ENOTSUP);
	assert_considered(&s, considered);
	selection_release(&s);
	assert_int_equal(select_tokens(cat, tool, 1, NULL, bad, &s, &d), -EINVAL);
	assert_string_equal(d.msg, "unknown adapter 'zzz' in the preference list");
	/* an explicit list wins over the preference */
	assert_int_equal(select_tokens(cat, NULL, 0, explicit_, pref, &s, &d), 0);
	assert_string_equal(s.chosen->name, "alpha");
	assert_int_equal(s.order, SELECT_ORDER_EXPLICIT);
	selection_release(&s);
	catalog_free(cat);
}

/* ---- refusal receipts ---- */

/* The documented object, rebuilt by hand, hashes to receipt_hash. */
static void test_receipt_shape(void **state)
{
	static const char *const toks[] = {"capability:vision", "capability:sandbox=container",
					   "python"};
	static const char *const cands[] = {"beta", "alpha", "loner", NULL};
	struct catalog *cat = fixture_catalog();
	const struct registry_entry *alpha = catalog_find(cat, "alpha");
	const struct registry_entry *beta = catalog_find(cat, "beta");
	struct sbuf want = SBUF_INIT(SIZE_MAX);
	char hex[SHA256_HEX_LEN + 1], *got;
	struct selection s;
	struct diag d = {0};
	json_t *rj;

	(void)state;
	assert_int_equal(select_tokens(cat, toks, 3, cands, NULL, &s, &d), -ENOTSUP);
	assert_int_equal(s.unmet, (1u << REQ_SANDBOX) | (1u << REQ_VISION)); /* the union */
	(void)sbuf_addf(
		&want,
		"{\"candidates\":[{\"adapter\":\"beta\",\"profile_hash\":\"%s\",\"unmet\":[\"sandbox\"]},{\"adapter\":\"alpha\",\"profile_hash\":\"%s\",\"unmet\":[\"sandbox\",\"vision\"]},{\"adapter\":\"loner\",\"profile_hash\":null,\"unmet\":[\"sandbox\",\"vision\"]}],\"kind\":\"adapter-capability-refusal\",\"requirements\":{\"agents_md\":false,\"computer_use\":false,\"endpoint\":false,\"local_models\":false,\"max_parallel_workers\":1,\"mcp_client\":false,\"mcp_server\":false,\"native_subagents\":false,\"output_mode\":null,\"resume\":false,\"sampling\":false,\"sandbox\":\"container\",\"streaming\":false,\"tool_use\":false,\"unattended\":false,\"vision\":true},\"unmet\":[\"sandbox\",\"vision\"]}",
		profile_hash(beta->profile), profile_hash(alpha->profile));
	rj = selection_receipt(&s);
	got = jcs(rj);
	json_decref(rj);
	assert_string_equal(got, want.buf);
	hash_sha256_hex(want.buf, want.len, hex);
	assert_string_equal(s.receipt_hash, hex);
	assert_non_null(strstr(
		d.msg,
		"capability mismatch: no adapter satisfies the task (unmet: sandbox, vision; 3 candidates considered; refusal receipt "));
	assert_non_null(strstr(d.msg, s.receipt_hash));
	free(got);
	sbuf_release(&want);
	selection_release(&s);
	catalog_free(cat);
}

/* Same refusal, two independently built catalogues: the same bytes and hash;
 * a different requirement or candidate order: a different hash. And the
 * golden hash, committed, so a change to the receipt format, the
 * normalization or the profile hash shows up here (and across machines). */
#define GOLDEN_RECEIPT_HASH "34643f3eea0973d7c0305b2e7457ba2d64c0d91c316275e23de072a3cb359e07"
/* Independent of profile hashing: one candidate without a profile. Computed
 * with Python: sha256(json.dumps(receipt, sort_keys=True, separators=(",", ":"),
 * ensure_ascii=False)). */
#define GOLDEN_RECEIPT_HASH_UNPROFILED                                                             \
	"2eefab533486c7dc777254196b1d56d706bf30b6b2abce0f2bdbfcacdc187fd7"

static void test_receipt_deterministic(void **state)
{
	static const char *const toks[] = {"capability:computer_use",
					   "capability:max_parallel_workers=8"};
	static const char *const toks2[] = {"capability:computer_use",
					    "capability:max_parallel_workers=9"};
	static const char *const rev[] = {"gamma", "delta", "beta", "alpha", NULL};
	struct catalog *c1 = fixture_catalog(), *c2 = fixture_catalog();
	struct selection a, b, x, y;
	struct diag d = {0};
	json_t *ra, *rb;
	char *ja, *jb;

	(void)state;
	assert_int_equal(select_tokens(c1, toks, 2, NULL, NULL, &a, &d), -ENOTSUP);
	assert_int_equal(select_tokens(c2, toks, 2, NULL, NULL, &b, &d), -ENOTSUP);
	ra = selection_receipt(&a);
	rb = selection_receipt(&b);
	ja = jcs(ra);
	jb = jcs(rb);
	json_decref(ra);
	json_decref(rb);
	assert_string_equal(ja, jb);
	assert_string_equal(a.receipt_hash, b.receipt_hash);
	assert_int_equal(select_tokens(c1, toks2, 2, NULL, NULL, &x, &d), -ENOTSUP);
	assert_string_not_equal(x.receipt_hash, a.receipt_hash);
	assert_int_equal(select_tokens(c1, toks, 2, rev, NULL, &y, &d), -ENOTSUP);
	assert_string_not_equal(y.receipt_hash, a.receipt_hash);
	/* the unmet list is the sorted union: gamma has 8 workers */
	assert_int_equal(a.unmet, (1u << REQ_COMPUTER_USE) | (1u << REQ_MAX_PARALLEL_WORKERS));
	assert_int_equal(a.considered[3].unmet, 1u << REQ_COMPUTER_USE);
	if (strcmp(a.receipt_hash, GOLDEN_RECEIPT_HASH) != 0)
		fail_msg("receipt hash %s, golden %s; receipt %s", a.receipt_hash,
			 GOLDEN_RECEIPT_HASH, ja);
	{
		static const char *const vision[] = {"capability:vision"};
		static const char *const loner[] = {"loner", NULL};
		struct selection u;

		assert_int_equal(select_tokens(c1, vision, 1, loner, NULL, &u, &d), -ENOTSUP);
		assert_string_equal(u.receipt_hash, GOLDEN_RECEIPT_HASH_UNPROFILED);
		selection_release(&u);
	}
	free(ja);
	free(jb);
	selection_release(&a);
	selection_release(&b);
	selection_release(&x);
	selection_release(&y);
	catalog_free(c1);
	catalog_free(c2);
}

/* ---- route_and_record ---- */

#define KEY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char tmp[64];
static char dir[128];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	(void)state;
	(void)snprintf(tmp, sizeof(tmp), "/tmp/bernstein-route-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	(void)snprintf(dir, sizeof(dir), "%s/audit", tmp);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

struct records {
	json_t *v[8];
	size_t n;
};

static int on_record(void *userdata, const char *file, unsigned line, const char *raw, size_t len,
		     const json_t *record)
{
	struct records *rs = userdata;

	(void)file;
	(void)line;
	(void)raw;
	(void)len;
	assert_non_null(record);
	assert_true(rs->n < 8);
	rs->v[rs->n++] = json_deep_copy(record);
	return 0;
}

static void records_release(struct records *rs)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		json_decref(rs->v[i]);
	rs->n = 0;
}

static int route_tokens(const struct catalog *cat, const char *const *tokens, size_t n,
			const char *const *candidates, struct audit_chain *chain,
			struct selection *ret, struct diag *d)
{
	struct requirements req = REQUIREMENTS_INIT;
	struct select_input in = {.cat = cat, .req = &req, .candidates = candidates};

	assert_true(requirements_parse(tokens, n, &req, d) >= 0);
	return route_and_record(&in, chain, "run-42", ret, d);
}

/* No chain: the same decisions, nothing written anywhere. */
static void test_route_without_chain(void **state)
{
	static const char *const vision[] = {"capability:vision"};
	static const char *const computer[] = {"capability:computer_use"};
	struct catalog *cat = fixture_catalog();
	struct selection s, t;
	struct diag d = {0};
	struct stat st;

	(void)state;
	assert_int_equal(route_tokens(cat, vision, 1, NULL, NULL, &s, &d), 0);
	assert_string_equal(s.chosen->name, "beta");
	assert_false(s.recorded);
	assert_int_equal(select_tokens(cat, vision, 1, NULL, NULL, &t, &d), 0);
	assert_ptr_equal(s.chosen->profile, t.chosen->profile);
	selection_release(&s);
	selection_release(&t);
	assert_int_equal(route_tokens(cat, computer, 1, NULL, NULL, &s, &d), -ENOTSUP);
	assert_false(s.recorded);
	assert_int_equal(select_tokens(cat, computer, 1, NULL, NULL, &t, &d), -ENOTSUP);
	assert_string_equal(s.receipt_hash, t.receipt_hash);
	selection_release(&s);
	selection_release(&t);
	assert_int_equal(stat(dir, &st), -1);
	assert_int_equal(errno, ENOENT);
	catalog_free(cat);
}

static void test_route_records(void **state)
{
	static const char *const vision[] = {"capability:vision"};
	static const char *const computer[] = {"capability:computer_use",
					       "capability:sandbox=process"};
	static const char *const loner[] = {"loner", NULL};
	struct catalog *cat = fixture_catalog();
	struct audit_chain *chain = NULL;
	struct audit_verify_stats st;
	struct records rs = {0};
	struct selection s;
	struct diag d = {0};
	const json_t *det;
	char *got;
	json_t *req, *rj;

	(void)state;
	assert_int_equal(audit_open(dir, KEY, strlen(KEY), NULL, AUDIT_OPEN_CREATE, &chain, &d), 0);

	/* a match: one adapter.capability_selection */
	assert_int_equal(route_tokens(cat, vision, 1, NULL, chain, &s, &d), 0);
	assert_true(s.recorded);
	assert_int_equal(audit_chain_count(chain), 1);
	selection_release(&s);

	/* an unprofiled adapter chosen explicitly: a no-op for anchoring */
	assert_int_equal(route_tokens(cat, NULL, 0, loner, chain, &s, &d), 0);
	assert_string_equal(s.chosen->name, "loner");
	assert_false(s.recorded);
	assert_int_equal(audit_chain_count(chain), 1);
	selection_release(&s);

	/* a mismatch: one adapter.capability_refusal, then -ENOTSUP */
	assert_int_equal(route_tokens(cat, computer, 2, NULL, chain, &s, &d), -ENOTSUP);
	assert_true(s.recorded);
	assert_int_equal(audit_chain_count(chain), 2);
	assert_non_null(strstr(d.msg, s.receipt_hash));

	assert_int_equal(audit_read(dir, on_record, &rs, &d), 0);
	assert_int_equal(rs.n, 2);
	assert_string_equal(json_string_value(json_object_get(rs.v[0], "event_type")),
			    ROUTE_EVENT_SELECTION);
	assert_string_equal(json_string_value(json_object_get(rs.v[0], "actor")), "bernstein");
	assert_string_equal(json_string_value(json_object_get(rs.v[0], "resource_type")), "run");
	assert_string_equal(json_string_value(json_object_get(rs.v[0], "resource_id")), "run-42");
	det = json_object_get(rs.v[0], "details");
	assert_int_equal(json_object_size(det), 3);
	assert_string_equal(json_string_value(json_object_get(det, "adapter")), "beta");
	assert_string_equal(json_string_value(json_object_get(det, "profile_hash")),
			    profile_hash(catalog_find(cat, "beta")->profile));
	assert_true(json_is_true(json_object_get(json_object_get(det, "requirements"), "vision")));

	assert_string_equal(json_string_value(json_object_get(rs.v[1], "event_type")),
			    ROUTE_EVENT_REFUSAL);
	assert_string_equal(json_string_value(json_object_get(rs.v[1], "resource_id")), "run-42");
	det = json_object_get(rs.v[1], "details");
	assert_int_equal(json_object_size(det), 4);
	assert_string_equal(json_string_value(json_object_get(det, "receipt_hash")),
			    s.receipt_hash);
	rj = selection_receipt(&s);
	assert_true(json_equal(json_object_get(det, "unmet"), json_object_get(rj, "unmet")));
	assert_true(
		json_equal(json_object_get(det, "candidates"), json_object_get(rj, "candidates")));
	assert_true(json_equal(json_object_get(det, "requirements"),
			       json_object_get(rj, "requirements")));
	json_decref(rj);
	assert_int_equal(json_array_size(json_object_get(det, "candidates")), 4);
	/* the receipt can be rebuilt from the record alone */
	req = json_deep_copy(det);
	(void)json_object_del(req, "receipt_hash");
	(void)json_object_set_new(req, "kind", json_string(SELECT_RECEIPT_KIND));
	got = jcs(req);
	{
		char hex[SHA256_HEX_LEN + 1];

		hash_sha256_hex(got, strlen(got), hex);
		assert_string_equal(hex, s.receipt_hash);
	}
	free(got);
	json_decref(req);
	records_release(&rs);
	selection_release(&s);
	audit_close(chain);

	assert_int_equal(audit_verify(dir, KEY, strlen(KEY), NULL, NULL, &st, &d), 0);
	assert_int_equal(st.records, 2);
	assert_int_equal(st.problems, 0);
	catalog_free(cat);
}

/* When the record cannot be appended, no decision comes back. */
static void test_route_append_failure(void **state)
{
	static const char *const vision[] = {"capability:vision"};
	struct catalog *cat = fixture_catalog();
	struct audit_chain *chain = NULL;
	struct selection s, zero;
	struct diag d = {0};
	char path[256];
	int fd;

	(void)state;
	assert_int_equal(audit_open(dir, KEY, strlen(KEY), NULL, AUDIT_OPEN_CREATE, &chain, &d), 0);
	assert_int_equal(route_tokens(cat, vision, 1, NULL, chain, &s, &d), 0);
	selection_release(&s);
	/* rewrite the tail behind the handle's back: every day file emptied */
	{
		struct records rs = {0};

		assert_int_equal(audit_read(dir, on_record, &rs, &d), 0);
		assert_int_equal(rs.n, 1);
		(void)snprintf(path, sizeof(path), "%s/%.10s.jsonl", dir,
			       json_string_value(json_object_get(rs.v[0], "timestamp")));
		records_release(&rs);
	}
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	(void)close(fd);
	memset(&zero, 0, sizeof(zero));
	assert_int_equal(route_tokens(cat, vision, 1, NULL, chain, &s, &d), -EBADMSG);
	assert_memory_equal(&s, &zero, sizeof(s));
	audit_close(chain);
	catalog_free(cat);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_boolean_axis),
		cmocka_unit_test(test_sampling_is_coarse),
		cmocka_unit_test(test_valued_axes),
		cmocka_unit_test(test_normalized_json),
		cmocka_unit_test(test_offered_describe),
		cmocka_unit_test(test_skill_tokens_ignored),
		cmocka_unit_test(test_parse_list),
		cmocka_unit_test(test_mistypes),
		cmocka_unit_test(test_conflicts),
		cmocka_unit_test(test_catalogue_order),
		cmocka_unit_test(test_first_match),
		cmocka_unit_test(test_stronger_satisfies_weaker),
		cmocka_unit_test(test_strategy_axes),
		cmocka_unit_test(test_explicit_candidates),
		cmocka_unit_test(test_preference),
		cmocka_unit_test(test_receipt_shape),
		cmocka_unit_test(test_receipt_deterministic),
		cmocka_unit_test_setup_teardown(test_route_without_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_append_failure, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
