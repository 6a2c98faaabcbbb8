/* Output helpers shared by every command: option errors, JSON building and
 * printing. The --json output of every command goes through cli_print_json
 * (2-space indent, sorted keys, trailing newline) so scripts see one style. */
#ifndef BERNSTEIN_CLI_OUTPUT_H
#define BERNSTEIN_CLI_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/cli.h"
#include "util/strvec.h"

/* After getopt_long returned '?': "unknown option '--x'" (exit 2). */
int cli_unknown_option(struct cli_ctx *ctx, char **argv);
/* The options of a command that takes only --json and -h, its operands left
 * from optind: -1 to go on, else the exit code to return. */
int cli_json_args(int argc, char **argv, struct cli_ctx *ctx);
/* The same for a command that also takes no operand (name: for the
 * message). */
int cli_json_only_args(int argc, char **argv, struct cli_ctx *ctx, const char *name);
/* "option '--x' requires a value" (exit 2). */
int cli_missing_value(struct cli_ctx *ctx, char **argv);
/* What getopt_long's '?' or ':' means, as a usage error: a missing value of
 * one of the short options in short_with_arg or of a long option of opts
 * that takes one, else an unknown option. */
struct option;
int cli_option_error(struct cli_ctx *ctx, char **argv, const struct option *opts,
		     const char *short_with_arg);

/* A number of seconds as users write it ("30", "1.5"): finite, > 0, at most
 * max_s. 0 with the seconds and, rounded to the nearest millisecond (at
 * least 1), the milliseconds (either pointer may be NULL), or -EINVAL. */
int cli_parse_seconds(const char *s, double max_s, double *ret_s, uint64_t *ret_ms);

/* A JSON string that never fails: NULL becomes null, bytes that are not
 * valid UTF-8 (a version line, a path) become '?'. */
json_t *cli_jstr(const char *s);
/* Set o[key] = v, stealing v; NULL becomes null. */
void cli_jset(json_t *o, const char *key, json_t *v);
/* An array of strings. */
json_t *cli_jlist(const struct strvec *sv);
/* Print root (stolen) on ctx->out; 0 or BEXIT_BUG. */
int cli_print_json(struct cli_ctx *ctx, json_t *root);

/* Text an agent or a planner chose, to a terminal: every control byte (but
 * a newline when lines) and DEL printed as '?', so no escape sequence or
 * carriage return reaches the user's terminal. */
void cli_put_safe(FILE *f, const char *s, bool lines);

struct contract_result;
/* One contract check's result, as `adapters contract-check --json` and the
 * contract column of `adapters check --json` both print it (absent strings
 * as "", as Bernstein's to_dict does; "passed" and its "verdict"). */
json_t *cli_contract_result_json(const struct contract_result *r);

#endif
