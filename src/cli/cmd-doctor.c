/* bernstein doctor: what this host lets bernstein do for its children (the
 * containment tier, the cgroup hierarchies, the limits it can enforce),
 * detected the way every spawn detects it (docs/supervision.md,
 * "Containment"). */
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/output.h"
#include "proc/contain.h"

const char doctor_usage[] = "[--json]";
const char doctor_help[] =
	"Reports how bernstein contains the processes it starts on this host: the\n"
	"tier in use (pidns: a PID namespace per child; cgroup: a cgroup per child;\n"
	"pgroup: its process group only), the strongest one the host allows and why\n"
	"a stronger one is not, the cgroup hierarchies bernstein may use, and which\n"
	"limits (memory, pids, cpu) it can enforce. BERNSTEIN_CONTAIN caps the tier.\n"
	"See docs/supervision.md (\"Containment\").\n"
	"\n"
	"Options:\n"
	"  --json      one JSON object\n";

static const char *hier_label(int i, char *buf, size_t size)
{
	if (i == CONTAIN_HIER_V2)
		(void)snprintf(buf, size, "cgroup v2");
	else
		(void)snprintf(buf, size, "cgroup v1 %s",
			       contain_ctrl_name((enum contain_ctrl)(i - 1)));
	return buf;
}

static json_t *ctrls_json(unsigned ctrls)
{
	json_t *a = json_array();
	int c;

	for (c = 0; c < _CONTAIN_CTRL_MAX; c++)
		if (ctrls & (1u << c))
			(void)json_array_append_new(a, json_string(contain_ctrl_name(c)));
	return a;
}

static int doctor_json(struct cli_ctx *ctx, const struct contain_host *h)
{
	json_t *root = json_object(), *cg = json_array(), *lim = json_object();
	char label[64];
	int i;

	cli_jset(root, "tier", cli_jstr(contain_tier_to_string(h->tier)));
	cli_jset(root, "best", cli_jstr(contain_tier_to_string(h->best)));
	cli_jset(root, "root", json_boolean(h->root));
	cli_jset(root, "pidns", json_boolean(h->pidns));
	cli_jset(root, "userns", json_boolean(h->userns));
	cli_jset(root, "pidns_error", h->pidns ? json_null() : cli_jstr(h->pidns_why));
	for (i = 0; i < CONTAIN_HIER_MAX; i++) {
		const struct contain_hier *hh = &h->hier[i];
		json_t *o;

		if (!hh->version)
			continue;
		o = json_object();
		cli_jset(o, "name", cli_jstr(hier_label(i, label, sizeof(label))));
		cli_jset(o, "mount", cli_jstr(hh->mount));
		cli_jset(o, "own", cli_jstr(hh->own));
		cli_jset(o, "base", cli_jstr(hh->base));
		cli_jset(o, "usable", json_boolean(hh->usable));
		cli_jset(o, "error", hh->usable ? json_null() : cli_jstr(hh->why));
		cli_jset(o, "cgroup_kill", json_boolean(hh->kill_file));
		cli_jset(o, "controllers", ctrls_json(hh->ctrls));
		(void)json_array_append_new(cg, o);
	}
	cli_jset(root, "cgroups", cg);
	for (i = 0; i < _CONTAIN_CTRL_MAX; i++) {
		json_t *o = json_object();
		int where = h->ctrl_hier[i];

		cli_jset(o, "enforced", json_boolean(where >= 0));
		cli_jset(o, "via",
			 where >= 0 ? cli_jstr(hier_label(where, label, sizeof(label)))
				    : json_null());
		cli_jset(lim, contain_ctrl_name((enum contain_ctrl)i), o);
	}
	cli_jset(root, "limits", lim);
	return cli_print_json(ctx, root);
}

static void doctor_text(struct cli_ctx *ctx, const struct contain_host *h)
{
	char label[64];
	int i;

	(void)fprintf(ctx->out, "containment: %s (the strongest this host allows: %s)\n",
		      contain_tier_to_string(h->tier), contain_tier_to_string(h->best));
	if (h->pidns)
		(void)fprintf(ctx->out, "  pid namespace: yes%s\n",
			      h->userns ? " (in a user namespace of its own)" : "");
	else
		(void)fprintf(ctx->out, "  pid namespace: no: %s\n", h->pidns_why);
	for (i = 0; i < CONTAIN_HIER_MAX; i++) {
		const struct contain_hier *hh = &h->hier[i];

		if (!hh->version)
			continue;
		(void)fprintf(ctx->out, "  %s at %s: ", hier_label(i, label, sizeof(label)),
			      hh->mount);
		if (hh->usable)
			(void)fprintf(ctx->out, "usable (%s)%s\n", hh->base,
				      hh->kill_file ? ", cgroup.kill" : "");
		else
			(void)fprintf(ctx->out, "not usable: %s\n", hh->why);
	}
	(void)fprintf(ctx->out, "limits:\n");
	for (i = 0; i < _CONTAIN_CTRL_MAX; i++) {
		int where = h->ctrl_hier[i];

		(void)fprintf(ctx->out, "  %-7s %s\n", contain_ctrl_name((enum contain_ctrl)i),
			      where >= 0 ? hier_label(where, label, sizeof(label))
					 : "cannot be enforced");
	}
}

int cmd_doctor(int argc, char **argv, struct cli_ctx *ctx)
{
	const struct contain_host *h;
	int r = cli_json_only_args(argc, argv, ctx, "doctor");

	if (r >= 0)
		return r;
	h = contain_host();
	if (ctx->json)
		return doctor_json(ctx, h);
	doctor_text(ctx, h);
	return 0;
}
