/* Usable agents (usable.h). */
#include "adapter/usable.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adapter/catalog.h"
#include "adapter/credential.h"
#include "adapter/envpolicy.h"
#include "adapter/profile.h"
#include "proc/probe.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

static bool set_nonempty(const struct usable_env *env, const char *name)
{
	const char *v = envpolicy_get(env->env, name);

	return v && *v;
}

static void join(struct sbuf *sb, const struct strvec *v, const char *sep)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		(void)sbuf_addf(sb, "%s%s", i ? sep : "", v->v[i]);
}

static void credentials(const struct profile *p, const struct usable_env *env, struct usable *u)
{
	size_t i;

	for (i = 0; i < p->invocation.env_passthrough.n; i++) {
		const char *k = p->invocation.env_passthrough.v[i];

		if (!credential_env_secret(k, env->host_allowed) || strvec_find(&u->keys, k) >= 0)
			continue;
		strvec_push(&u->keys, k);
		if (set_nonempty(env, k))
			strvec_push(&u->keys_set, k);
	}
	if (env->extra_key_env && strvec_find(&u->keys, env->extra_key_env) < 0) {
		strvec_push(&u->keys, env->extra_key_env);
		if (set_nonempty(env, env->extra_key_env))
			strvec_push(&u->keys_set, env->extra_key_env);
	}
	for (i = 0; i < p->runtime.login.n; i++) {
		const char *rel = p->runtime.login.v[i];
		struct sbuf path = SBUF_INIT(SIZE_MAX);
		struct stat st;

		strvec_pushf(&u->logins, "~/%s", rel);
		if (env->home && env->home[0] == '/') {
			(void)sbuf_addf(&path, "%s/%s", env->home, rel);
			if (stat(path.buf, &st) == 0 && S_ISREG(st.st_mode))
				strvec_pushf(&u->logins_have, "~/%s", rel);
		}
		sbuf_release(&path);
	}
	u->own_login = !u->keys.nr && !u->logins.nr;
}

void usable_check(const struct registry_entry *e, const struct usable_env *env, struct usable *ret)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	memset(ret, 0, sizeof(*ret));
	strvec_init(&ret->keys);
	strvec_init(&ret->keys_set);
	strvec_init(&ret->logins);
	strvec_init(&ret->logins_have);
	if (e->builtin || !e->binary || !e->profile) {
		ret->lacks =
			xstrdup("not an agent CLI (built into bernstein, or without a profile)");
		goto out;
	}
	if (path_search(e->binary, env->path, &ret->binary) < 0 || !ret->binary) {
		ret->binary = NULL;
		(void)sbuf_addf(&sb, "not installed: '%s' is not on PATH", e->binary);
		ret->lacks = sbuf_detach(&sb, NULL);
		goto out;
	}
	ret->installed = true;
	credentials(e->profile, env, ret);
	if (ret->own_login || ret->keys_set.nr || ret->logins_have.nr) {
		ret->usable = true;
		goto out;
	}
	(void)sbuf_addf(&sb, "no credentials: ");
	if (ret->keys.nr) {
		(void)sbuf_adds(&sb, "set ");
		join(&sb, &ret->keys, " or ");
		if (ret->logins.nr)
			(void)sbuf_adds(&sb, ", or ");
	}
	if (ret->logins.nr) {
		(void)sbuf_addf(&sb, "log in with '%s' itself (its login: ", e->binary);
		join(&sb, &ret->logins, ", ");
		(void)sbuf_adds(&sb, ")");
	}
	ret->lacks = sbuf_detach(&sb, NULL);
out:
	if (!ret->usable && !ret->lacks)
		ret->lacks = xstrdup("unusable");
}

void usable_release(struct usable *u)
{
	if (!u)
		return;
	free(u->binary);
	free(u->lacks);
	strvec_clear(&u->keys);
	strvec_clear(&u->keys_set);
	strvec_clear(&u->logins);
	strvec_clear(&u->logins_have);
	memset(u, 0, sizeof(*u));
}
