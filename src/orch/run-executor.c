/* Executors in the run loop (orch/executor.h, docs/executors.md): a task
 * whose executor is slurm has its agent's process spec turned into the
 * relay's: `bernstein agent-relay` on this host, in the task's worktree,
 * with the agent's environment (which it sends to the node over the job's
 * connection, never through Slurm) and the agent's argv after `--`. The
 * supervisor, the dialect, the redaction, the outcome and the merge see a
 * local child whose stdout is the agent's. */
#include "orch/run-internal.h"

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "orch/agentrun.h"
#include "orch/config.h"
#include "orch/executor.h"
#include "proc/capture.h"
#include "proc/git.h"
#include "proc/spawn.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

enum executor_kind run_task_executor(const struct loop *l, const struct otask *t)
{
	return orch_config_executor(l->e->cfg, t->row.role, run_spec(t)->has_executor,
				    run_spec(t)->executor);
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

/* slurm.git_daemon's ADDR and PORT (9418 when not given). */
static void gitd_addr(const char *spec, char *host, size_t hsize, char *port, size_t psize)
{
	const char *c = strrchr(spec, ':');

	(void)snprintf(host, hsize, "%.*s", (int)(c ? (size_t)(c - spec) : strlen(spec)), spec);
	(void)snprintf(port, psize, "%s", c ? c + 1 : "9418");
}

/* Whether host:port takes a TCP connection now. */
static bool gitd_up(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	bool up = false;
	int fd;

	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return false;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	up = fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
	if (fd >= 0)
		(void)close(fd);
	freeaddrinfo(ai);
	return up;
}

/* git-daemon itself (`git daemon` would start it as a child of its own,
 * which bernstein's death would not end): GIT --exec-path/git-daemon. */
static char *gitd_binary(const char *git, const char *const *env)
{
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture c = {.spec = &spec, .timeout_ms = 10000, .max_out = 4096};
	char *ret = NULL;
	size_t n;

	strvec_push(&spec.argv, git);
	strvec_push(&spec.argv, "--exec-path");
	strvec_pushv(&spec.env, env);
	spec.contain = CONTAIN_PGROUP;
	if (proc_capture(&c, 1, NULL) == 0 && c.start_result == 0 && c.exit_code == 0 &&
	    c.out.buf && (n = strcspn(c.out.buf, "\n")) > 0 && c.out.buf[0] == '/') {
		struct sbuf sb = SBUF_INIT(SIZE_MAX);

		(void)sbuf_addf(&sb, "%.*s/git-daemon", (int)n, c.out.buf);
		ret = sbuf_detach(&sb, NULL);
		if (access(ret, X_OK) != 0) {
			free(ret);
			ret = NULL;
		}
	}
	capture_release(&c);
	proc_spec_release(&spec);
	return ret;
}

/* The hub's directory served by `git daemon` on slurm.git_daemon for the
 * rest of the run (once; it dies with bernstein: the shim's PDEATHSIG).
 * Nodes clone and push the task's branch through it. */
static int gitd_start(struct loop *l, struct diag *reterr)
{
	/* read-only: nodes send their branch back as a bundle on their own
	 * authenticated connection, so nobody on the network can push to the
	 * hub (another task's branch, say) */
	static const char *const args[] = {"--export-all", "--reuseaddr", "--log-destination=none",
					   NULL};
	const struct executor_slurm *s = &l->e->cfg->slurm;
	struct proc_spec spec = PROC_SPEC_INIT;
	char host[256], port[16], dir[4096], *git = NULL, *daemon = NULL;
	const char *path = NULL;
	size_t i;
	int r;

	if (l->gitd.pid > 0)
		return 0;
	gitd_addr(s->git_daemon, host, sizeof(host), port, sizeof(port));
	path_dirname(s->hub, dir, sizeof(dir));
	for (i = 0; l->e->host_env && l->e->host_env[i]; i++)
		if (strncmp(l->e->host_env[i], "PATH=", 5) == 0)
			path = l->e->host_env[i] + 5;
	git_harden_env(l->e->host_env, 0, NULL, &spec.env);
	r = git_find(path ? path : "/usr/bin:/bin", &git);
	if (r >= 0 && !(daemon = gitd_binary(git, (const char *const *)spec.env.v)))
		r = -ENOENT;
	if (r >= 0)
		r = mkdir_p(dir, 0755);
	free(git);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "cannot serve the hub with git-daemon: %s",
			 strerror(-r));
		free(daemon);
		proc_spec_release(&spec);
		return r;
	}
	strvec_push(&spec.argv, daemon);
	strvec_pushv(&spec.argv, args);
	strvec_pushf(&spec.argv, "--base-path=%s", dir);
	strvec_pushf(&spec.argv, "--listen=%s", host);
	strvec_pushf(&spec.argv, "--port=%s", port);
	strvec_push(&spec.argv, dir);
	spec.contain = CONTAIN_PGROUP;
	r = proc_spawn(&spec, &l->gitd, reterr);
	proc_spec_release(&spec);
	free(daemon);
	if (r < 0)
		return r;
	/* listening before the first job clones (a few seconds at most) */
	for (i = 0; i < 100 && !gitd_up(host, port); i++)
		(void)poll(NULL, 0, 50);
	return 0;
}

/* The relay of a slurm task writes EXECUTOR_LOST_FILE in its attempt's
 * directory when the job was lost with its node: the attempt's outcome is
 * lost (retried like a rate limit). Read for a slurm task only: its agent
 * ran on another host and cannot write here. */
void run_executor_lost(struct loop *l, struct otask *t)
{
	char *p, *buf = NULL;
	size_t n = 0;

	if (!t->ar || !t->session_dir || run_task_executor(l, t) != EXECUTOR_SLURM)
		return;
	p = agentrun_path(t->session_dir, EXECUTOR_LOST_FILE);
	if (read_file_capped(p, 1024, &buf, &n) == 0) {
		buf[strcspn(buf, "\r\n")] = '\0';
		outcome_set_lost(&t->ar->in, buf);
	}
	free(buf);
	free(p);
}

void run_executor_release(struct loop *l)
{
	if (l->gitd.pid <= 0)
		return;
	(void)proc_kill_group(&l->gitd, SIGTERM);
	(void)proc_wait(&l->gitd);
	proc_release(&l->gitd);
	memset(&l->gitd, 0, sizeof(l->gitd));
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

	if (s->git_daemon && gitd_start(l, reterr) < 0) {
		free(job);
		free(home);
		return -EIO;
	}
	run_task_limits(l, t, &lim);
	strvec_push(&argv, l->e->self_exe);
	strvec_push(&argv, "agent-relay");
	strvec_pushf(&argv, "--hub=%s", s->hub);
	if (s->hub_url || !s->git_daemon) {
		strvec_pushf(&argv, "--hub-url=%s", s->hub_url ? s->hub_url : s->hub);
	} else {
		char host[256], port[16];
		const char *base = strrchr(s->hub, '/');

		gitd_addr(s->git_daemon, host, sizeof(host), port, sizeof(port));
		strvec_pushf(&argv, "--hub-url=git://%s:%s/%s", host, port,
			     base ? base + 1 : s->hub);
	}
	strvec_pushf(&argv, "--listen=%s", s->listen);
	if (s->ssh_command)
		strvec_pushf(&argv, "--ssh-command=%s", s->ssh_command);
	if (s->git_daemon)
		strvec_push(&argv, "--no-hub-push");
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
