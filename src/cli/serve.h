/* bernstein-serve: the live control surface (docs/api.md, docs/dashboard.md).
 *
 * What the server's files share: the server (paths, token), the embedded
 * dashboard assets (serve-assets.c, generated at build time by
 * scripts/embed-assets.py), and the helpers of `bernstein serve` and `run
 * --serve` in the bernstein executable (cmd-serve.c). */
#ifndef BERNSTEIN_CLI_SERVE_H
#define BERNSTEIN_CLI_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cli/cli.h"

#define SERVE_EXE	     "bernstein-serve"
#define SERVE_DEFAULT_LISTEN "127.0.0.1:8052"
#define SERVE_TOKEN_FILE     "serve.token" /* in .bernstein/, 0600 */

/* One embedded file of the dashboard. */
struct serve_asset {
	const char *path; /* "/", "/app.js" */
	const char *type; /* its Content-Type */
	const unsigned char *data;
	size_t len;
};
extern const struct serve_asset serve_assets[]; /* ends with {NULL} */

/* `bernstein run --serve[=ADDR]`: start bernstein-serve beside the run of
 * this process (pid run_pid), outside its process tree (a double fork, in
 * a session of its own, before the run becomes a child subreaper), so the
 * control channel's peer check takes it as another shell of the user, not
 * as one of the run's processes. It exits when run_pid does. listen may be
 * NULL (the default). 0, or the exit code after an error message. */
int serve_start_beside(struct cli_ctx *ctx, const char *listen, pid_t run_pid);

#endif
