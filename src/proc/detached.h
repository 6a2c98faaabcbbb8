/* A child that is meant to outlive bernstein (the bernstein-notify helper
 * delivering a run's last notification after the run has ended): started
 * with posix_spawn in a session of its own, with an empty signal mask and
 * default dispositions, stdin spec->stdin_fd (or /dev/null), stdout and
 * stderr /dev/null, every other fd closed, exactly spec->env, in spec->cwd;
 * no parent-death signal, no containment, no deadline: the program must
 * bound its own life (bernstein-notify has an alarm). Only argv, env, cwd
 * and stdin_fd of spec are used. Never waited for: a supervisor running at
 * the time reaps it (proc/supervise.h), else it is a zombie until bernstein
 * exits. 0 with *ret_pid, or a negative errno with the reason in reterr. */
#ifndef BERNSTEIN_PROC_DETACHED_H
#define BERNSTEIN_PROC_DETACHED_H

#include <sys/types.h>

#include "proc/spawn.h"
#include "util/diag.h"

int proc_spawn_detached(const struct proc_spec *spec, pid_t *ret_pid, struct diag *reterr);

#endif
