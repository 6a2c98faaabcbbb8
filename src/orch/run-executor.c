/* Executors in the run loop (orch/executor.h, docs/executors.md): a task
 * whose executor is slurm has its agent's process spec turned into the
 * relay's: `bernstein agent-relay` on this host, in the task's worktree,
 * with the agent's environment (which it sends to the node over the job's
 * connection, never through Slurm) and the agent's argv after `--`. The
 * supervisor, the dialect, the redaction, the outcome and the merge see a
 * local child whose stdout is the agent's. */
#include "orch/run-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch/config.h"
#include "orch/executor.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

enum executor_kind run_task_executor(const struct loop *l, const struct otask *t)
{
	return orch_config_executor(l->e->cfg, t->row.role, t->spec.has_executor, t->spec.executor);
}

/* Why t cannot run on its executor here, or NULL. */
const char *run_executor_refusal(struct loop *l, const struct otask *t, char *msg, size_t size)
{
	if (run_task_executor(l, t) != EXECUTOR_SLURM)
		return NULL;
	if (executor_slurm_check(&l->e->cfg->slurm, msg, size) < 0)
		return msg;
	if (run_task_sandboxed(l, t)) {
		(void)snprintf(
			msg, size,
			"a sandboxed task cannot run on executor 'slurm' yet; give it sandbox: none");
		return msg;
	}
	return NULL;
}

int run_executor_wrap(struct loop *l, struct otask *t, double timeout_s, struct proc_spec *spec,
		      struct diag *reterr)
{
	const struct executor_slurm *s = &l->e->cfg->slurm;
	struct contain_limits lim = {0};
	struct strvec argv = STRVEC_INIT, sb = STRVEC_INIT;
	char *job = run_session_path(l, t, "slurm-job");
	char *home = run_session_path(l, t, "home");
	size_t i;

	(void)reterr;
	run_task_limits(l, t, &lim);
	strvec_push(&argv, l->e->self_exe);
	strvec_push(&argv, "agent-relay");
	strvec_pushf(&argv, "--hub=%s", s->hub);
	strvec_pushf(&argv, "--hub-url=%s", s->hub_url ? s->hub_url : s->hub);
	strvec_pushf(&argv, "--listen=%s", s->listen);
	strvec_pushf(&argv, "--bernstein=%s", s->bernstein ? s->bernstein : l->e->self_exe);
	strvec_pushf(&argv, "--branch=%s", t->row.branch);
	strvec_pushf(&argv, "--job-file=%s", job);
	strvec_pushf(&argv, "--session-dir=%s", t->session_dir);
	strvec_pushf(&argv, "--home=%s", home);
	/* the Slurm client's configuration, when the host names one */
	for (i = 0; l->e->host_env && l->e->host_env[i]; i++)
		if (strncmp(l->e->host_env[i], "SLURM_CONF=", 11) == 0 && l->e->host_env[i][11])
			strvec_pushf(&argv, "--slurm-conf=%s", l->e->host_env[i] + 11);
	strvec_pushf(&argv, "--start-timeout=%.0f",
		     s->start_timeout_s > 0 ? s->start_timeout_s : EXECUTOR_SLURM_START_TIMEOUT_S);
	executor_slurm_sbatch_args(s, t->row.session, &lim, timeout_s, &sb);
	for (i = 0; i < sb.nr; i++)
		strvec_pushf(&argv, "--sbatch=%s", sb.v[i]);
	strvec_push(&argv, "--");
	strvec_pushv(&argv, (const char *const *)spec->argv.v);
	strvec_clear(&spec->argv);
	strvec_pushv(&spec->argv, (const char *const *)argv.v);
	/* the job's limits are Slurm's (sbatch); the relay itself has none */
	memset(&spec->limits, 0, sizeof(spec->limits));
	strvec_clear(&argv);
	strvec_clear(&sb);
	free(job);
	free(home);
	return 0;
}
