/* Placeholder until the adapter layer lands: the group exists, empty. */
#include "cli/commands.h"

const struct cmd adapters_cmds[] = {
	{NULL, NULL, NULL, 0, NULL, NULL, NULL},
};
