/* Output helpers shared by every command: option errors, JSON building and
 * printing. The --json output of every command goes through cli_print_json
 * (2-space indent, sorted keys, trailing newline) so scripts see one style. */
#ifndef BERNSTEIN_CLI_OUTPUT_H
#define BERNSTEIN_CLI_OUTPUT_H

#include <jansson.h>

#include "cli/cli.h"
#include "util/strvec.h"

/* After getopt_long returned '?': "unknown option '--x'" (exit 2). */
int cli_unknown_option(struct cli_ctx *ctx, char **argv);
/* "option '--x' requires a value" (exit 2). */
int cli_missing_value(struct cli_ctx *ctx, char **argv);

/* A JSON string that never fails: NULL becomes null, bytes that are not
 * valid UTF-8 (a version line, a path) become '?'. */
json_t *cli_jstr(const char *s);
/* Set o[key] = v, stealing v; NULL becomes null. */
void cli_jset(json_t *o, const char *key, json_t *v);
/* An array of strings. */
json_t *cli_jlist(const struct strvec *sv);
/* Print root (stolen) on ctx->out; 0 or BEXIT_BUG. */
int cli_print_json(struct cli_ctx *ctx, json_t *root);

#endif
