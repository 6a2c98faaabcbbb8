#include "cli/audit-setup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

int audit_setup_key_path(struct cli_ctx *ctx, const char *explicit_path, char *buf, size_t size,
			 enum audit_key_source *ret_source)
{
	int r = audit_key_resolve(explicit_path, cli_getenv(ctx, "BERNSTEIN_AUDIT_KEY_PATH"),
				  cli_getenv(ctx, "XDG_STATE_HOME"), cli_getenv(ctx, "HOME"), buf,
				  size, ret_source);

	if (r == -ENOENT)
		return cli_error(
			ctx, BEXIT_ENV,
			"cannot locate the audit key: none of BERNSTEIN_AUDIT_KEY_PATH, XDG_STATE_HOME or HOME is set");
	if (r < 0)
		return cli_error(ctx, BEXIT_ENV, "cannot locate the audit key: %s", strerror(-r));
	return 0;
}

int audit_setup_load_key(struct cli_ctx *ctx, const char *explicit_path, bool create,
			 char **ret_key, size_t *ret_len)
{
	char path[PATH_MAX];
	struct diag d;
	int r;

	r = audit_setup_key_path(ctx, explicit_path, path, sizeof(path), NULL);
	if (r)
		return r;
	r = audit_key_load(path, create, ret_key, ret_len, NULL, &d);
	if (r == -ENOENT && !create)
		(void)snprintf(d.msg, sizeof(d.msg), "audit key does not exist (%s)",
			       AUDIT_SETUP_CREATE_HINT);
	if (r < 0)
		return cli_diag(ctx, BEXIT_ENV, &d);
	return 0;
}

int audit_setup_chain_error(struct cli_ctx *ctx, int r, const struct diag *d)
{
	/* broken where a writer looks, or a record that does not verify */
	if (r == -EBADMSG || r == -EKEYREJECTED)
		return cli_diag(ctx, BEXIT_AUDIT, d);
	if (r == -EINVAL || r == -EDOM || r == -ELOOP || r == -ENOBUFS)
		return cli_diag(ctx, BEXIT_USAGE, d);
	return cli_diag(ctx, BEXIT_ENV, d);
}

int audit_setup_open(struct cli_ctx *ctx, const char *dir, const char *key_file,
		     struct audit_chain **ret)
{
	char path[PATH_MAX];
	char *key = NULL;
	size_t keylen = 0;
	struct diag d;
	int r;

	r = audit_setup_key_path(ctx, key_file, path, sizeof(path), NULL);
	if (r)
		return r;
	r = audit_key_load(path, false, &key, &keylen, NULL, &d);
	if (r == -ENOENT) {
		/* Created by the first record actually written, not before. */
		r = audit_open_keyless(dir, path, NULL, AUDIT_OPEN_CREATE, ret, &d);
	} else if (r < 0) {
		return cli_diag(ctx, BEXIT_ENV, &d);
	} else {
		r = audit_open(dir, key, keylen, NULL, AUDIT_OPEN_CREATE, ret, &d);
		key = audit_key_free(key, keylen);
	}
	if (r < 0)
		return audit_setup_chain_error(ctx, r, &d);
	return 0;
}
