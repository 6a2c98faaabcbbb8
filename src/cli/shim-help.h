/* The shim command's help (bernstein help shim, bernstein shim --help). */
#ifndef BERNSTEIN_CLI_SHIM_HELP_H
#define BERNSTEIN_CLI_SHIM_HELP_H

#define SHIM_SUMMARY "run a program under pdeathsig, rlimits and landlock"
#define SHIM_USAGE                                                                                 \
	"[--rlimit-NAME N]... [--landlock-rw DIR]... [--landlock-ro DIR]... -- PROGRAM [ARG...]"
#define SHIM_HELP                                                                                  \
	"Prepares the process and then execs PROGRAM in its place (no wrapper stays):\n"           \
	"parent-death signal SIGKILL, fds above 2 closed on exec, resource limits,\n"              \
	"optional Landlock rules, default signal dispositions; the environment is\n"               \
	"passed through unchanged. A bare PROGRAM is looked up on $PATH.\n"                        \
	"\n"                                                                                       \
	"options:\n"                                                                               \
	"  --rlimit-as BYTES, --rlimit-nofile N, --rlimit-cpu SECONDS,\n"                          \
	"  --rlimit-core BYTES, --rlimit-nproc N, --rlimit-fsize BYTES\n"                          \
	"                         set soft and hard limit ('unlimited' accepted)\n"                \
	"  --landlock-rw DIR      allow read-write beneath DIR (repeatable)\n"                     \
	"  --landlock-ro DIR      allow read and execute beneath DIR (repeatable);\n"              \
	"                         with any Landlock option, everything else is denied\n"           \
	"  --landlock-best-effort run unconfined if the kernel lacks Landlock\n"                   \
	"  --status-fd N          write a failure record to fd N (for a supervisor)\n"             \
	"  --parent-pid PID       die at once if the parent is no longer PID\n"                    \
	"  --net-socket PATH      start a network bridge to the proxy at PATH first:\n"            \
	"  --net-proxy-port PORT  it listens on 127.0.0.1:PORT and forwards as is\n"               \
	"  --net-tunnel HOST:PORT and on this loopback address, tunnelled with\n"                  \
	"                         CONNECT HOST:PORT (repeatable; docs/security.md)\n"              \
	"  --init                 stay as the init of a PID namespace (a container's\n"            \
	"                         pid 1): PROGRAM runs as its child, in a session\n"               \
	"                         of its own with the terminal of fd 0, gets every\n"              \
	"                         signal the init gets; the exit is PROGRAM's\n"                   \
	"  --grace-ms MS          with --init: when PROGRAM has exited, SIGTERM to\n"              \
	"                         what it left in the namespace, MS ms for it to end\n"            \
	"  --wait-status-fd N     with --init: PROGRAM's wait status (an int) to fd N\n"           \
	"                         at the end (bernstein reads it: a signal stays one)\n"           \
	"\n"                                                                                       \
	"Exit codes when PROGRAM does not run: 127 not found, 126 cannot be executed,\n"           \
	"125 set-up failed (rlimits, Landlock). bernstein takes the same steps itself\n"           \
	"before every agent's exec; this command is for use outside it.\n"                         \
	"See docs/supervision.md.\n"

#endif
