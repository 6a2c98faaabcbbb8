/* Executors: the kind's names, the `slurm:` settings and what sbatch is
 * given (orch/executor.h, docs/executors.md). */
#include "orch/executor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "orch/config-internal.h"
#include "util/sbuf.h"
#include "util/yschema.h"
#include "util/banned.h"

static const char *const kind_names[_EXECUTOR_KIND_MAX + 1] = {
	[EXECUTOR_LOCAL] = "local",
	[EXECUTOR_SLURM] = "slurm",
	[_EXECUTOR_KIND_MAX] = NULL,
};

const char *executor_kind_to_string(enum executor_kind k)
{
	return k >= 0 && k < _EXECUTOR_KIND_MAX ? kind_names[k] : NULL;
}

enum executor_kind executor_kind_from_string(const char *s)
{
	int i;

	if (!s)
		return _EXECUTOR_KIND_INVALID;
	for (i = 0; i < _EXECUTOR_KIND_MAX; i++)
		if (strcmp(s, kind_names[i]) == 0)
			return (enum executor_kind)i;
	return _EXECUTOR_KIND_INVALID;
}

int executor_get_kind(const struct ydoc *doc, const struct ynode *n, const char *path,
		      enum executor_kind *ret, struct diag *reterr)
{
	int m = 0, r;

	r = yaml_value_enum(doc, n, path, kind_names, &m, reterr);
	if (r == 0)
		*ret = (enum executor_kind)m;
	return r;
}

/* A value that goes into the batch script or a command line: printable,
 * no quote, no backslash, no dollar, no backquote. */
static bool plain_value(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || strchr("'\"\\$`", *s))
			return false;
	return true;
}

static int slurm_str(const struct ydoc *doc, const struct ynode *map, const char *path,
		     const char *key, const char **ret, struct diag *reterr)
{
	const struct ynode *v = ynode_get(map, key);
	char pk[YAML_PATH_MAX];
	int r;

	if (!v)
		return 0;
	yaml_path_key(pk, sizeof(pk), path, key);
	r = yaml_value_str(doc, v, pk, true, ret, reterr);
	if (r == 0 && *ret && !plain_value(*ret))
		return yaml_field_err(doc, v, reterr, pk,
				      "holds a control character, a quote, '\\', '$' or '`'");
	return r;
}

int executor_get_slurm(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		       const char *path, struct executor_slurm *ret, struct diag *reterr)
{
	static const char *const keys[] = {
		"hub", "hub_url", "listen",	   "bernstein",	 "partition",	"account",
		"qos", "sbatch",  "start_timeout", "git_daemon", "ssh_command", NULL,
	};
	struct executor_slurm s = {.set = true};
	const struct ynode *v;
	char pk[YAML_PATH_MAX];
	size_t i;
	int r;

	if (n->kind != YNODE_MAP)
		return yaml_field_err(doc, n, reterr, path, "must be a mapping, not %s",
				      ynode_describe(n));
	r = orch_check_keys(doc, n, keys, path, reterr);
	if (r == 0)
		r = slurm_str(doc, n, path, "hub", &s.hub, reterr);
	if (r == 0)
		r = slurm_str(doc, n, path, "hub_url", &s.hub_url, reterr);
	if (r == 0)
		r = slurm_str(doc, n, path, "listen", &s.listen, reterr);
	if (r == 0)
		r = slurm_str(doc, n, path, "bernstein", &s.bernstein, reterr);
	if (r == 0)
		r = slurm_str(doc, n, path, "git_daemon", &s.git_daemon, reterr);
	if (r == 0)
		r = slurm_str(doc, n, path, "ssh_command", &s.ssh_command, reterr);
	if (r == 0)
		r = slurm_str(doc, n, path, "partition", &s.partition, reterr);
	if (r == 0)
		r = slurm_str(doc, n, path, "account", &s.account, reterr);
	if (r == 0)
		r = slurm_str(doc, n, path, "qos", &s.qos, reterr);
	if (r == 0 && (v = ynode_get(n, "sbatch"))) {
		yaml_path_key(pk, sizeof(pk), path, "sbatch");
		const char **list = NULL;

		r = yaml_value_strlist(a, doc, v, pk, &list, &s.n_sbatch, reterr);
		s.sbatch = list;
		for (i = 0; r == 0 && i < s.n_sbatch; i++)
			if (s.sbatch[i][0] != '-' || !plain_value(s.sbatch[i]))
				r = yaml_field_err(doc, v->items[i], reterr, pk,
						   "'%s' is not an option (--name=value)",
						   s.sbatch[i]);
	}
	if (r == 0 && (v = ynode_get(n, "start_timeout"))) {
		yaml_path_key(pk, sizeof(pk), path, "start_timeout");
		r = yaml_value_number(doc, v, pk, 0, true, 7 * 86400.0, &s.start_timeout_s, reterr);
	}
	if (r == 0 && s.hub && s.hub[0] != '/') {
		v = ynode_get(n, "hub");
		yaml_path_key(pk, sizeof(pk), path, "hub");
		r = yaml_field_err(doc, v, reterr, pk,
				   "must be an absolute path (nodes use hub_url)");
	}
	if (r == 0)
		*ret = s;
	return r;
}

int executor_slurm_check(const struct executor_slurm *s, char *why, size_t why_size)
{
	const char *missing = !s->set	   ? "a slurm: section"
			      : !s->hub	   ? "slurm.hub"
			      : !s->listen ? "slurm.listen"
					   : NULL;

	if (!missing)
		return 0;
	(void)snprintf(why, why_size,
		       "executor 'slurm' needs %s in bernstein.yaml (docs/executors.md)", missing);
	return -EINVAL;
}

void executor_slurm_sbatch_args(const struct executor_slurm *s, const char *job_name,
				const struct contain_limits *lim, double timeout_s,
				struct strvec *ret)
{
	size_t i;

	strvec_push(ret, "--parsable");
	strvec_pushf(ret, "--job-name=%s", job_name);
	/* nothing of this host's environment reaches the job */
	strvec_push(ret, "--export=NONE");
	strvec_push(ret, "--output=/dev/null");
	strvec_push(ret, "--chdir=/tmp");
	/* a requeued job would run the attempt twice */
	strvec_push(ret, "--no-requeue");
	strvec_push(ret, "--ntasks=1");
	if (lim && lim->memory)
		strvec_pushf(ret, "--mem=%lluM",
			     (unsigned long long)((lim->memory + (1u << 20) - 1) >> 20));
	if (lim && lim->cpu_milli)
		strvec_pushf(ret, "--cpus-per-task=%llu",
			     (unsigned long long)((lim->cpu_milli + 999) / 1000));
	if (timeout_s > 0)
		/* the job's own limit: a little past the supervisor's deadline,
		 * which cancels it first */
		strvec_pushf(ret, "--time=%llu",
			     (unsigned long long)ceil((timeout_s + 60.0) / 60.0));
	if (s->partition)
		strvec_pushf(ret, "--partition=%s", s->partition);
	if (s->account)
		strvec_pushf(ret, "--account=%s", s->account);
	if (s->qos)
		strvec_pushf(ret, "--qos=%s", s->qos);
	for (i = 0; i < s->n_sbatch; i++)
		strvec_push(ret, s->sbatch[i]);
}

char *executor_slurm_script(const char *bernstein, const char *connect, const char *token,
			    const char *fp)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	if (!plain_value(bernstein) || !plain_value(connect) || !plain_value(token) ||
	    !plain_value(fp))
		return NULL;
	(void)sbuf_addf(
		&sb,
		"#!/bin/sh\n"
		"# bernstein agent-exec dials back to the submitting host over TLS, to\n"
		"# the certificate with this fingerprint only; the token only opens that\n"
		"# connection; no secret is here (docs/executors.md)\n"
		"BERNSTEIN_EXEC_CONNECT='%s' BERNSTEIN_EXEC_TOKEN='%s' BERNSTEIN_EXEC_FINGERPRINT='%s' exec '%s' agent-exec\n",
		connect, token, fp, bernstein);
	return sbuf_detach(&sb, NULL);
}
