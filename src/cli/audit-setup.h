/* The audit chain as the CLI opens it, shared by every command that writes
 * or reads it (audit, route): where the key is (--key-file, else
 * $BERNSTEIN_AUDIT_KEY_PATH, else $XDG_STATE_HOME/bernstein/audit.key, else
 * ~/.local/state/bernstein/audit.key), loading it, opening the chain, and
 * the exit code of each failure. Every function prints its own error and
 * returns the exit code (0 on success). */
#ifndef BERNSTEIN_CLI_AUDIT_SETUP_H
#define BERNSTEIN_CLI_AUDIT_SETUP_H

#include <stdbool.h>
#include <stddef.h>

#include "audit/audit.h"
#include "cli/cli.h"

/* The chain directory, relative to the working directory (after -C). */
#define AUDIT_SETUP_DEFAULT_DIR ".bernstein/audit"
#define AUDIT_SETUP_CREATE_HINT "create it with 'bernstein audit key --create'"

/* Resolve the key path into buf; *ret_source may be NULL. Exit 4 when
 * nothing locates it. */
int audit_setup_key_path(struct cli_ctx *ctx, const char *explicit_path, char *buf, size_t size,
			 enum audit_key_source *ret_source);
/* Resolve and load the key (created on first use with create). The caller
 * frees it with audit_key_free(). Exit 4 on any failure. */
int audit_setup_load_key(struct cli_ctx *ctx, const char *explicit_path, bool create,
			 char **ret_key, size_t *ret_len);
/* The exit code (printed) for an audit_open()/audit_append() failure:
 * 5 for a chain broken at its end, not matching its state or with a record
 * that does not verify with the key, 2 for a bad record, else 4. */
int audit_setup_chain_error(struct cli_ctx *ctx, int r, const struct diag *d);
/* Open the chain in dir for appending. A missing key (and directory) is
 * created by the first record actually appended (audit_open_keyless()), so
 * a command that fails before recording anything leaves nothing behind. */
int audit_setup_open(struct cli_ctx *ctx, const char *dir, const char *key_file,
		     struct audit_chain **ret);

#endif
