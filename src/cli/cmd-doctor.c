/* bernstein doctor: what this host lets bernstein do for its children (the
 * containment tier, the cgroup hierarchies, the limits it can enforce),
 * detected the way every spawn detects it (docs/supervision.md,
 * "Containment"). */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/output.h"
#include "orch/confine.h"
#include "proc/contain.h"
#include "proc/landlock.h"

const char doctor_usage[] = "[--json]";
const char doctor_help[] =
	"Reports how bernstein contains the processes it starts on this host: the\n"
	"tier in use (pidns: a PID namespace per child; cgroup: a cgroup per child;\n"
	"pgroup: its process group only), the strongest one the host allows and why\n"
	"a stronger one is not, the cgroup hierarchies bernstein may use, and which\n"
	"limits (memory, pids, cpu) it can enforce. BERNSTEIN_CONTAIN caps the tier.\n"
	"Then the sandbox tiers (landlock, bwrap, container) this host gives a task\n"
	"for the user running it, and why not where it does not: as a user other\n"
	"than root a rootless container is started once to find out.\n"
	"See docs/supervision.md (\"Containment\") and docs/security.md.\n"
	"\n"
	"Options:\n"
	"  --json      one JSON object\n";

/* The sandbox tiers for this user. */
struct tiers {
	int landlock_abi;
	bool bwrap, container;
	const char *runtime; /* the container's OCI runtime, or NULL */
	char runtime_buf[PATH_MAX];
	char container_why[1024];
};

static void detect_tiers(struct cli_ctx *ctx, struct tiers *t)
{
	const char *path = cli_getenv(ctx, "PATH"), *tmp = cli_getenv(ctx, "TMPDIR");
	char self[PATH_MAX], scratch[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	unsigned m;
	struct diag d;

	memset(t, 0, sizeof(*t));
	diag_clear(&d);
	self[n > 0 ? n : 0] = '\0';
	(void)snprintf(scratch, sizeof(scratch), "%s/bernstein-doctor.XXXXXX",
		       tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(scratch))
		scratch[0] = '\0';
	t->landlock_abi = landlock_abi_version();
	m = confine_host_tiers(path, n > 0 ? self : NULL, scratch[0] ? scratch : NULL);
	t->bwrap = m & (1u << SANDBOX_KIND_BWRAP);
	t->container = m & (1u << SANDBOX_KIND_CONTAINER);
	t->runtime = confine_oci_runtime(path, t->runtime_buf, sizeof(t->runtime_buf), &d);
	if (!t->container)
		(void)confine_container_usable(path, n > 0 ? self : NULL,
					       scratch[0] ? scratch : NULL, t->container_why,
					       sizeof(t->container_why));
	if (scratch[0])
		(void)rmdir(scratch);
}

static json_t *tier_json(bool ok, const char *why)
{
	json_t *o = json_object();

	cli_jset(o, "available", json_boolean(ok));
	cli_jset(o, "error", ok ? json_null() : cli_jstr(why));
	return o;
}

static json_t *tiers_json(const struct tiers *t)
{
	json_t *o = json_object(), *c;

	cli_jset(o, "uid", json_integer((json_int_t)geteuid()));
	cli_jset(o, "landlock",
		 tier_json(t->landlock_abi > 0, "the kernel does not support Landlock"));
	if (t->landlock_abi > 0)
		cli_jset(json_object_get(o, "landlock"), "abi", json_integer(t->landlock_abi));
	cli_jset(
		o, "bwrap",
		tier_json(t->bwrap, t->landlock_abi > 0
					    ? "bwrap is not on PATH or cannot make a user namespace"
					    : "the kernel does not support Landlock"));
	c = tier_json(t->container, t->container_why);
	cli_jset(c, "runtime", t->runtime ? cli_jstr(t->runtime) : json_null());
	cli_jset(c, "rootless", json_boolean(geteuid() != 0));
	cli_jset(o, "container", c);
	return o;
}

static void tiers_text(struct cli_ctx *ctx, const struct tiers *t)
{
	(void)fprintf(ctx->out, "sandbox tiers (for uid %ld):\n", (long)geteuid());
	if (t->landlock_abi > 0)
		(void)fprintf(ctx->out, "  landlock   yes (ABI %d)\n", t->landlock_abi);
	else
		(void)fprintf(ctx->out, "  landlock   no: the kernel does not support Landlock\n");
	(void)fprintf(ctx->out, "  bwrap      %s\n",
		      t->bwrap ? "yes"
			       : "no: bwrap is not on PATH or cannot make a user namespace");
	if (t->container)
		(void)fprintf(ctx->out, "  container  yes (%s%s; limits as above)\n", t->runtime,
			      geteuid() != 0 ? ", rootless: a user namespace maps this uid to 0"
					     : "");
	else
		(void)fprintf(ctx->out, "  container  no: %s\n", t->container_why);
}

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

static int doctor_json(struct cli_ctx *ctx, const struct contain_host *h, const struct tiers *t)
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
	cli_jset(root, "sandbox", tiers_json(t));
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
	struct tiers t;
	int r = cli_json_only_args(argc, argv, ctx, "doctor");

	if (r >= 0)
		return r;
	h = contain_host();
	detect_tiers(ctx, &t);
	if (ctx->json)
		return doctor_json(ctx, h, &t);
	doctor_text(ctx, h);
	tiers_text(ctx, &t);
	return 0;
}
