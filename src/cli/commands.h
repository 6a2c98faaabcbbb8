/* Every command function and group table, for the table in commands.c. */
#ifndef BERNSTEIN_CLI_COMMANDS_H
#define BERNSTEIN_CLI_COMMANDS_H

#include "cli/cli.h"

cmd_fn cmd_adapters_contract_check;
cmd_fn cmd_help;
cmd_fn cmd_route;
cmd_fn cmd_runner;	/* in the bernstein-runner executable */
cmd_fn cmd_runner_exec; /* bernstein runner: execs bernstein-runner */
cmd_fn cmd_shim;
cmd_fn cmd_spawn;
extern const char spawn_usage[], spawn_help[];
cmd_fn cmd_version;

extern const struct cmd adapters_cmds[];
extern const struct cmd audit_cmds[];
extern const struct cmd integrations_cmds[];
extern const struct cmd profiles_cmds[];

#endif
