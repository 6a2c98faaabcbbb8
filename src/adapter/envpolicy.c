/* The agent environment from an allow-list (envpolicy.h). */
#include "adapter/envpolicy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"
#include "util/banned.h"

/* Bernstein's BASE_ALLOWLIST (A/env_isolation.py) without SYSTEMROOT, WINDIR,
 * COMSPEC, APPDATA, LOCALAPPDATA, USERPROFILE, SystemDrive, ProgramFiles,
 * ProgramFiles(x86), ProgramData, CommonProgramFiles,
 * CommonProgramFiles(x86) and USERNAME. */
const char *const envpolicy_base[] = {
	"PATH",
	"HOME",
	"LANG",
	"LC_ALL",
	"LC_CTYPE",
	"LC_MESSAGES",
	"USER",
	"LOGNAME",
	"SHELL",
	"TERM",
	"COLORTERM",
	"COLUMNS",
	"LINES",
	"TMPDIR",
	"TMP",
	"TEMP",
	"XDG_RUNTIME_DIR",
	"XDG_CONFIG_HOME",
	"XDG_DATA_HOME",
	"XDG_CACHE_HOME",
	"GIT_AUTHOR_NAME",
	"GIT_AUTHOR_EMAIL",
	"GIT_COMMITTER_NAME",
	"GIT_COMMITTER_EMAIL",
	"SSH_AUTH_SOCK",
	"GIT_SSH_COMMAND",
	"GIT_SSH",
	"PYTHONPATH",
	"VIRTUAL_ENV",
	"CONDA_DEFAULT_ENV",
	"CONDA_PREFIX",
	"NVM_DIR",
	"NVM_BIN",
	"NVM_PATH",
	"NODE_PATH",
	"BERNSTEIN_AUTH_TOKEN",
	"BERNSTEIN_HOOK_SECRET",
	"BERNSTEIN_AUTH_DISABLED",
	NULL,
};

const char *const envpolicy_telemetry_off[] = {
	"DO_NOT_TRACK=1",
	NULL,
};

void envpolicy_init(struct envpolicy *e, const char *const *host)
{
	e->host = host;
	strvec_init(&e->pass);
	strvec_init(&e->set);
}

void envpolicy_release(struct envpolicy *e)
{
	strvec_clear(&e->pass);
	strvec_clear(&e->set);
	e->host = NULL;
}

void envpolicy_pass(struct envpolicy *e, const char *name)
{
	if (strvec_find(&e->pass, name) < 0)
		strvec_push(&e->pass, name);
}

void envpolicy_set(struct envpolicy *e, const char *name, const char *value)
{
	strvec_pushf(&e->set, "%s=%s", name, value);
}

bool envpolicy_name_valid(const char *name)
{
	const char *p;

	if (!name ||
	    !((*name >= 'A' && *name <= 'Z') || (*name >= 'a' && *name <= 'z') || *name == '_'))
		return false;
	for (p = name + 1; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

bool envpolicy_base_allowed(const char *name)
{
	size_t i;

	for (i = 0; envpolicy_base[i]; i++)
		if (strcmp(envpolicy_base[i], name) == 0)
			return true;
	return false;
}

/* The length of the name part of "KEY=VALUE", or 0 without a '='. */
static size_t key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : 0;
}

const char *envpolicy_get(const char *const *env, const char *name)
{
	size_t n;

	if (!env || !name)
		return NULL;
	n = strlen(name);
	for (; *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* s[0, len) equals name[0, n). */
static bool span_equals(const char *s, size_t len, const char *name, size_t n)
{
	return len == n && memcmp(s, name, n) == 0;
}

/* name[0, n) is an entry of the comma-separated list. */
static bool in_csv(const char *name, size_t n, const char *list)
{
	size_t i = 0;

	if (!list || n == 0)
		return false;
	for (;;) {
		size_t start = i, stop;

		while (list[i] && list[i] != ',')
			i++;
		stop = i;
		while (start < stop && is_blank(list[start]))
			start++;
		while (stop > start && is_blank(list[stop - 1]))
			stop--;
		if (span_equals(list + start, stop - start, name, n))
			return true;
		if (!list[i])
			return false;
		i++;
	}
}

static bool in_vec(const struct strvec *sv, const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < sv->nr; i++)
		if (strlen(sv->v[i]) == n && memcmp(sv->v[i], name, n) == 0)
			return true;
	return false;
}

static bool base_allowed_n(const char *name, size_t n)
{
	size_t i;

	for (i = 0; envpolicy_base[i]; i++)
		if (strlen(envpolicy_base[i]) == n && memcmp(envpolicy_base[i], name, n) == 0)
			return true;
	return false;
}

/* Index of the entry of out whose name is kv's, or -1. */
static long find_key(const struct strvec *out, const char *kv, size_t n)
{
	size_t i;

	for (i = 0; i < out->nr; i++)
		if (key_len(out->v[i]) == n && memcmp(out->v[i], kv, n) == 0)
			return (long)i;
	return -1;
}

/* Put kv in out, replacing an entry of the same name. */
static void put(struct strvec *out, const char *kv, size_t n)
{
	long at = find_key(out, kv, n);

	if (at < 0) {
		strvec_push(out, kv);
		return;
	}
	free_const(out->v[at]);
	out->v[at] = xstrdup(kv);
}

int envpolicy_build(const struct envpolicy *e, struct strvec *ret, struct diag *reterr)
{
	struct strvec out = STRVEC_INIT;
	const char *test_pass = envpolicy_get(e->host, ENVPOLICY_TEST_PASS_ENV);
	const char *const *h;
	size_t i;

	for (i = 0; i < e->pass.nr; i++) {
		if (!envpolicy_name_valid(e->pass.v[i])) {
			diag_set(reterr, NULL, 0, 0, "invalid environment variable name '%s'",
				 e->pass.v[i]);
			strvec_clear(&out);
			return -EINVAL;
		}
	}
	for (i = 0; i < e->set.nr; i++) {
		size_t n = key_len(e->set.v[i]);
		char name[256];

		(void)snprintf(name, sizeof(name), "%.*s", (int)n, e->set.v[i]);
		if (n == 0 || n >= sizeof(name) || !envpolicy_name_valid(name)) {
			diag_set(reterr, NULL, 0, 0, "invalid environment variable name '%s'",
				 name);
			strvec_clear(&out);
			return -EINVAL;
		}
	}

	/* 1. the host's allowed variables; the first of duplicates counts */
	for (h = e->host; h && *h; h++) {
		size_t n = key_len(*h);

		if (n == 0 || find_key(&out, *h, n) >= 0)
			continue;
		if (base_allowed_n(*h, n) || in_vec(&e->pass, *h, n) || in_csv(*h, n, test_pass))
			strvec_push(&out, *h);
	}
	/* 2. the fixed values, in the order set */
	for (i = 0; i < e->set.nr; i++)
		put(&out, e->set.v[i], key_len(e->set.v[i]));

	strvec_sort(&out);
	strvec_clear(ret);
	*ret = out;
	return 0;
}
