/* Failure you can act on: what a task's reason says beyond the rule that
 * decided its outcome (docs/runs.md, "Why a task failed").
 *
 * A failed agent's reason ends with what the agent itself said went wrong
 * (its last error, adapter/lasterr.h, kept per attempt in state.db's
 * attempts.agent_error); a failed gate's reason ends with the path of its
 * log. The forms are fixed, so `status` and the run summary can show the
 * parts:
 *
 *   exited with code 41 without its terminal event; the agent said: When using ...
 *   gate 'tests' failed (exit 1); log: /repo/.bernstein/runs/RUN/SESSION/1/gate-tests.log
 *   worktree setup command failed (exit 3); log: /repo/.bernstein/runs/RUN/SESSION/1/setup.log */
#ifndef BERNSTEIN_ORCH_FAILURE_H
#define BERNSTEIN_ORCH_FAILURE_H

#include <stddef.h>

#define ORCH_AGENT_SAID "; the agent said: "
#define ORCH_GATE_LOG	"; log: "
/* How the reason of a task whose worktree_setup setup_command failed starts. */
#define ORCH_SETUP_REASON "worktree setup command "

/* Append "; the agent said: ERR" to the reason in buf (size bytes, cut to
 * fit) when err is set and not empty. */
void orch_reason_with_agent_error(char *buf, size_t size, const char *err);
/* Append "; log: PATH" to the reason in buf when path is set. */
void orch_reason_with_gate_log(char *buf, size_t size, const char *path);
/* The log path a gate's (or a setup_command's) failure reason ends with (a
 * pointer into reason), or NULL when it has none. */
const char *orch_reason_gate_log(const char *reason);

#endif
