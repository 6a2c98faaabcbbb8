/* Executors: where a task's agent process runs (docs/executors.md).
 *
 *   EXECUTOR_LOCAL  on this host, under the supervisor (today's path,
 *                   unchanged)
 *   EXECUTOR_SLURM  as one Slurm job per attempt: the supervisor's child is
 *                   `bernstein agent-relay` on this host, which submits the
 *                   job (`sbatch`), waits for `bernstein agent-exec` on the
 *                   node to dial back over TCP with a per-job random token,
 *                   hands it the invocation (argv, environment: secrets
 *                   only on this connection, never in sbatch's --export,
 *                   the batch script or a command line) and relays the
 *                   agent's output lines to its own stdout, so the run loop
 *                   reads them with the adapter's dialect exactly as for a
 *                   local agent. The node clones the hub at the exact base
 *                   commit, runs the agent, commits and pushes the branch;
 *                   the relay fetches it into the task's worktree, where the
 *                   loop completes and merges it as for a local task.
 *
 * A Kubernetes Job backend maps onto the same seam: one Job per attempt
 * (pod: `bernstein agent-exec`, clone in an init container, secrets by
 * reference, logs from the event connection, delete on cancel). It is not
 * built: no API server can run on this machine kind.
 *
 * The kind is chosen by `executor:` in bernstein.yaml, per role
 * (role_model_policy.ROLE.executor) and per task (a plan task's executor:),
 * the most specific winning; `slurm:` holds the cluster's settings. */
#ifndef BERNSTEIN_ORCH_EXECUTOR_H
#define BERNSTEIN_ORCH_EXECUTOR_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc/contain.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/strvec.h"
#include "util/yaml.h"

enum executor_kind {
	EXECUTOR_LOCAL,
	EXECUTOR_SLURM,
	_EXECUTOR_KIND_MAX,
	_EXECUTOR_KIND_INVALID = -EINVAL,
};

const char *executor_kind_to_string(enum executor_kind k);
enum executor_kind executor_kind_from_string(const char *s);

/* The `slurm:` section of bernstein.yaml. Strings point into the document
 * (or the arena); NULL: not given. */
struct executor_slurm {
	bool set;		   /* the section was given */
	const char *hub;	   /* where this host pushes and fetches: a path (bare repo) */
	const char *hub_url;	   /* how nodes reach the hub (git://, ssh://, a shared path);
				    * NULL: hub */
	const char *listen;	   /* the address agent-exec dials back to (IPv4 or a name) */
	const char *git_daemon;	   /* ADDR[:PORT]: bernstein serves the hub's directory
				    * with `git daemon` there while a run has Slurm
				    * tasks; hub_url defaults to git://ADDR:PORT/NAME */
	const char *bernstein;	   /* the bernstein binary on the nodes; NULL: this one's path */
	const char *partition;	   /* sbatch --partition */
	const char *account;	   /* sbatch --account */
	const char *qos;	   /* sbatch --qos */
	const char *const *sbatch; /* extra sbatch options, NULL-terminated */
	size_t n_sbatch;
	double start_timeout_s;	 /* a job that has not dialled back by then is cancelled; 0: 600 */
	const char *ssh_command; /* the ssh the nodes' git runs for an ssh:// hub_url
				  * (core.sshCommand: identity, known_hosts); NULL: ssh */
};

#define EXECUTOR_SLURM_START_TIMEOUT_S 600.0

/* The file agent-relay writes in the attempt's directory (--session-dir)
 * when its job was lost with its node, holding why (one line): the run
 * loop then records the outcome lost. */
#define EXECUTOR_LOST_FILE "slurm-lost"

/* executor: local | slurm (the value at n; path names it in errors). */
int executor_get_kind(const struct ydoc *doc, const struct ynode *n, const char *path,
		      enum executor_kind *ret, struct diag *reterr);

/* slurm: {hub, hub_url, listen, bernstein, partition, account,
 * qos, sbatch, start_timeout, git_daemon, ssh_command} into *ret. */
int executor_get_slurm(struct arena *a, const struct ydoc *doc, const struct ynode *n,
		       const char *path, struct executor_slurm *ret, struct diag *reterr);

/* Whether the slurm settings let a job run: -EINVAL and why when a needed
 * key is missing (hub, listen). */
int executor_slurm_check(const struct executor_slurm *s, char *why, size_t why_size);

/* The sbatch command line after the program name (appended to *ret):
 * --parsable, --job-name, --export=NONE, --output=/dev/null, --chdir=/tmp,
 * --no-requeue, then the limits (--mem in MiB rounded up, --cpus-per-task
 * rounded up from thousandths, --time in whole minutes rounded up from
 * timeout_s, 0: none), partition/account/qos, then the extra options.
 * Nothing secret is in it: the job finds everything else on its connection. */
void executor_slurm_sbatch_args(const struct executor_slurm *s, const char *job_name,
				const struct contain_limits *lim, double timeout_s,
				struct strvec *ret);

/* The batch script (sbatch reads it on stdin): it execs `BERNSTEIN
 * agent-exec` with where to dial (addr:port), the job's token and the
 * SHA-256 fingerprint of the relay's TLS certificate (fp, not secret: the
 * job accepts no other) in its environment. The token is single-use: the relay accepts one
 * connection and closes its socket, so the copy Slurm keeps of the script is worth nothing
 * afterwards, and no secret is in it. NULL when a value holds a character the script cannot carry
 * (a quote, a newline). Caller frees. */
char *executor_slurm_script(const char *bernstein, const char *connect, const char *token,
			    const char *fp);

#endif
