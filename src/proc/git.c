#include "proc/git.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "proc/probe.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* Configuration that would make git run a program, or reach further than a
 * local path, set on the command line where it beats every file. */
static const char *const harden_config[] = {
	/* programs git runs on its own */
	"core.fsmonitor=false",	    /* a hook program run by status, add, diff... */
	"core.hooksPath=/dev/null", /* no hook of any repository runs */
	"core.pager=cat",
	"core.editor=true",
	"sequence.editor=true",
	"core.askPass=",
	"credential.helper=", /* empty resets the list of helpers */
	"core.sshCommand=false",
	"gpg.program=false",
	"gpg.ssh.program=false",
	"gpg.x509.program=false",
	/* signing and checking signatures run gpg */
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"merge.verifySignatures=false",
	"log.showSignature=false",
	/* no git started in a nested repository, whose config is its own */
	"submodule.recurse=false",
	"fetch.recurseSubmodules=false",
	"diff.ignoreSubmodules=all",
	"status.submoduleSummary=false",
	/* local paths only: no ssh, http, ext:: or git:// (proxies) */
	"protocol.allow=never",
	"protocol.file.allow=always",
	/* what another repository sends is checked before it is stored */
	"transfer.fsckObjects=true",
	/* an embedded bare repository is never found by discovery */
	"safe.bareRepository=explicit",
	/* nothing in the background, nothing after the command */
	"gc.auto=0",
	"maintenance.auto=false",
	NULL,
};

void git_harden_argv(struct strvec *argv, unsigned flags)
{
	size_t i;

	strvec_push(argv, "--no-pager");
	for (i = 0; harden_config[i]; i++) {
		strvec_push(argv, "-c");
		strvec_push(argv, harden_config[i]);
	}
	if (flags & GIT_HARDEN_PUSH) {
		/* the two transports a pull request's remote uses; still no
		 * ext::, git:// or proxies, and ssh is ssh (not the repository's
		 * core.sshCommand, nor GIT_SSH_COMMAND: dropped from the env) */
		strvec_push(argv, "-c");
		strvec_push(argv, "protocol.https.allow=always");
		strvec_push(argv, "-c");
		strvec_push(argv, "protocol.ssh.allow=always");
		strvec_push(argv, "-c");
		strvec_push(argv, "core.sshCommand=ssh");
	}
	if (flags & GIT_HARDEN_WRITE) {
		/* `worktree remove` without --force judges "clean" by a git
		 * status that must see untracked files, whatever the user set */
		strvec_push(argv, "-c");
		strvec_push(argv, "status.showUntrackedFiles=normal");
	}
}

static bool key_is(const char *entry, const char *key)
{
	size_t n = strlen(key);

	return strncmp(entry, key, n) == 0 && entry[n] == '=';
}

int git_env_dropped(const char *entry)
{
	static const char *const keys[] = {"PAGER",  "EDITOR",	 "VISUAL", "SSH_ASKPASS",
					   "LC_ALL", "LANGUAGE", NULL};
	size_t i;

	if (!strchr(entry, '='))
		return 1; /* not KEY=VALUE */
	if (strncmp(entry, "GIT_", 4) == 0)
		return 1;
	for (i = 0; keys[i]; i++)
		if (key_is(entry, keys[i]))
			return 1;
	return 0;
}

void git_harden_env(const char *const *base, unsigned flags, const char *drop_prefix,
		    struct strvec *ret)
{
	const char *const *e;

	for (e = base; e && *e; e++) {
		if (git_env_dropped(*e))
			continue;
		if (drop_prefix && strncmp(*e, drop_prefix, strlen(drop_prefix)) == 0)
			continue;
		strvec_push(ret, *e);
	}
	strvec_push(ret, "LC_ALL=C");
	strvec_push(ret, "GIT_TERMINAL_PROMPT=0");
	strvec_push(ret, "GIT_ASKPASS=");
	strvec_push(ret, "GIT_EDITOR=true");
	strvec_push(ret, "GIT_SEQUENCE_EDITOR=true");
	strvec_push(ret, "GIT_PAGER=cat");
	if (flags & GIT_HARDEN_READ)
		strvec_push(ret, "GIT_OPTIONAL_LOCKS=0");
}

int git_find(const char *path_env, char **ret)
{
	struct sbuf abs = SBUF_INIT(SIZE_MAX);
	const char *p, *end;
	int r = -ENOENT;

	if (!path_env)
		return -ENOENT;
	/* the same search as path_search(), over the absolute entries only */
	for (p = path_env;; p = end + 1) {
		end = strchrnul(p, ':');
		if (end > p && p[0] == '/') {
			if (abs.len)
				(void)sbuf_addc(&abs, ':');
			(void)sbuf_add(&abs, p, (size_t)(end - p));
		}
		if (!*end)
			break;
	}
	if (abs.len)
		r = path_search("git", abs.buf, ret);
	sbuf_release(&abs);
	return r;
}

int git_prepare(const char *dir, const char *const *base_env, unsigned flags,
		const char *const *args, struct strvec *ret_argv, struct strvec *ret_env)
{
	const char *path = NULL;
	const char *const *e;
	char *git = NULL;
	int r;

	for (e = base_env; e && *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	r = git_find(path, &git);
	if (r < 0)
		return r;
	strvec_clear(ret_argv);
	strvec_clear(ret_env);
	strvec_push(ret_argv, git);
	free(git);
	git_harden_argv(ret_argv, flags);
	strvec_push(ret_argv, "-C");
	strvec_push(ret_argv, dir);
	strvec_pushv(ret_argv, args);
	git_harden_env(base_env, flags, NULL, ret_env);
	return 0;
}
