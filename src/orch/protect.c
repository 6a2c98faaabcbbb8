/* Protected paths: see protect.h. */
#include "orch/protect.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/banned.h"

const char *const protect_builtin[] = {
	"bernstein.yaml", ".worktreeinclude", ".bernstein", "bernstein", NULL,
};

int protect_rule_check(const char *rule, const char **why)
{
	size_t len = rule ? strlen(rule) : 0;
	const char *p;

	if (len == 0) {
		*why = "an empty path";
		return -EINVAL;
	}
	if (len > PROTECT_MAX_RULE) {
		*why = "longer than 1024 bytes";
		return -EINVAL;
	}
	if (rule[0] == '/') {
		*why = "an absolute path (paths are relative to the repository's top)";
		return -EINVAL;
	}
	for (p = rule; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*why = "a control character";
			return -EINVAL;
		}
	for (p = rule; *p;) {
		size_t n = strcspn(p, "/");

		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			*why = "a '.' or '..' component";
			return -EINVAL;
		}
		if (n == 0 && p[n] == '/' && p[n + 1] != '\0') {
			*why = "an empty component ('//')";
			return -EINVAL;
		}
		p += n;
		if (*p == '/')
			p++;
	}
	return 0;
}

/* fnmatch of rule (without a trailing '/') against the first len bytes of
 * path. */
static bool match_prefix(const char *rule, size_t rlen, const char *path, size_t len)
{
	char r[PROTECT_MAX_RULE + 1], s[4096];

	if (rlen > PROTECT_MAX_RULE || len >= sizeof(s))
		return false;
	memcpy(r, rule, rlen);
	r[rlen] = '\0';
	memcpy(s, path, len);
	s[len] = '\0';
	return fnmatch(r, s, FNM_CASEFOLD) == 0;
}

bool protect_rule_match(const char *rule, const char *path)
{
	size_t rlen = strlen(rule), i;

	while (rlen > 1 && rule[rlen - 1] == '/')
		rlen--;
	if (rlen == 0 || !path || !*path)
		return false;
	/* the path itself and each of its leading directories */
	for (i = 0;; i++) {
		if (path[i] == '/' || path[i] == '\0') {
			if (i > 0 && match_prefix(rule, rlen, path, i))
				return true;
			if (path[i] == '\0')
				return false;
		}
	}
}

/* path as an fnmatch pattern that matches only itself. */
static void push_literal(struct strvec *rules, const char *path)
{
	char buf[2 * PROTECT_MAX_RULE + 1];
	size_t i, n = 0;

	for (i = 0; path[i] && n + 2 < sizeof(buf); i++) {
		if (strchr("*?[]\\", path[i]))
			buf[n++] = '\\';
		buf[n++] = path[i];
	}
	buf[n] = '\0';
	if (!path[i] && n && strvec_find(rules, buf) < 0)
		strvec_push(rules, buf);
}

/* The file beneath repo that repo/name resolves to, when it is a symlink. */
static void push_link_target(struct strvec *rules, const char *repo, const char *name)
{
	char link[PATH_MAX], real[PATH_MAX];
	const char *rel;
	struct stat st;

	if (snprintf(link, sizeof(link), "%s/%s", repo, name) >= (int)sizeof(link) ||
	    lstat(link, &st) < 0 || !S_ISLNK(st.st_mode) || !realpath(link, real))
		return;
	rel = protect_relative(repo, real);
	if (rel)
		push_literal(rules, rel);
}

void protect_rules(const char *repo, const char *const *extra, size_t n_extra,
		   const char *plan_path, struct strvec *rules)
{
	const char *rel;
	size_t i;

	for (i = 0; protect_builtin[i]; i++)
		strvec_push(rules, protect_builtin[i]);
	for (i = 0; i < n_extra; i++)
		strvec_push(rules, extra[i]);
	rel = protect_relative(repo, plan_path);
	if (rel)
		push_literal(rules, rel);
	if (repo) {
		push_link_target(rules, repo, "bernstein.yaml");
		push_link_target(rules, repo, ".worktreeinclude");
	}
}

size_t protect_filter(const struct strvec *changed, const struct strvec *rules, struct strvec *hits)
{
	size_t i, j, n = 0;

	for (i = 0; i < changed->nr; i++) {
		const char *p = changed->v[i];

		if (strvec_find(hits, p) >= 0)
			continue;
		for (j = 0; j < rules->nr; j++)
			if (protect_rule_match(rules->v[j], p))
				break;
		if (j == rules->nr)
			continue;
		strvec_push(hits, p);
		n++;
	}
	return n;
}

const char *protect_relative(const char *repo, const char *file)
{
	size_t n;

	if (!repo || !file || repo[0] != '/' || file[0] != '/')
		return NULL;
	n = strlen(repo);
	while (n > 0 && repo[n - 1] == '/')
		n--;
	if (strncmp(repo, file, n) != 0 || file[n] != '/' || file[n + 1] == '\0')
		return NULL;
	return file + n + 1;
}
