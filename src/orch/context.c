/* Task context: the rendered prompt (orch/context.h). */
#include "orch/context.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orch/plan.h"
#include "util/beneath.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

int context_open(int repo_fd, const char *path, struct diag *reterr)
{
	struct diag d;
	struct stat st;
	int fd;

	diag_clear(&d);
	fd = beneath_open(repo_fd, path, strlen(path), O_RDONLY | O_NOCTTY | O_NONBLOCK, 0,
			  BENEATH_NO_GIT | BENEATH_NO_BERNSTEIN, &d);
	if (fd < 0) {
		const char *why = fd == -EXDEV	  ? "leaves the repository"
				  : fd == -ENOENT ? "does not exist"
				  : fd == -ELOOP  ? "is a symlink loop or a magic link"
				  : fd == -ENOSYS ? "cannot be opened confined (no openat2)"
				  : d.msg[0]	  ? d.msg
						  : strerror(-fd);

		diag_set(reterr, NULL, 0, 0, "context file '%s' %s%s", path,
			 fd == -EPERM ? "is refused: " : "", why);
		return fd;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		diag_set(reterr, NULL, 0, 0, "context file '%s' is not a regular file", path);
		(void)close(fd);
		return -EINVAL;
	}
	return fd;
}

/* Up to max bytes of fd into *ret (caller frees), the whole size in
 * *ret_size. */
static int read_head(int fd, size_t max, char **ret, size_t *ret_len, size_t *ret_size)
{
	struct stat st;
	char *buf = xmalloc(max + 1);
	size_t len = 0;

	while (len < max) {
		ssize_t n = read(fd, buf + len, max - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			free(buf);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_size = fstat(fd, &st) == 0 && (size_t)st.st_size > len ? (size_t)st.st_size : len;
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* len cut back so that no UTF-8 sequence is split */
static size_t utf8_cut(const char *s, size_t len)
{
	size_t i = len, back = 0;

	while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
		i--;
		back++;
	}
	if (i > 0 && ((unsigned char)s[i - 1] & 0x80)) {
		unsigned char lead = (unsigned char)s[i - 1];
		size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;

		if (back + 1 < need)
			return i - 1;
	}
	return len;
}

/* The longest run of backticks in s. */
static size_t backtick_run(const char *s, size_t len)
{
	size_t i, run = 0, best = 0;

	for (i = 0; i < len; i++) {
		run = s[i] == '`' ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	return best;
}

static int add_file(struct sbuf *sb, const struct context_input *in, const char *path, size_t *left,
		    struct diag *reterr)
{
	size_t file_max = in->file_max ? in->file_max : CONTEXT_FILE_MAX;
	size_t cap = file_max < *left ? file_max : *left;
	char *text = NULL;
	size_t len = 0, size = 0, fence, i;
	int fd, r;

	(void)sbuf_addf(sb, "\n## %s\n", path);
	fd = context_open(in->repo_fd, path, reterr);
	if (fd < 0)
		return fd;
	r = read_head(fd, cap, &text, &len, &size);
	(void)close(fd);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "context file '%s' cannot be read: %s", path,
			 strerror(-r));
		return r;
	}
	if (memchr(text, '\0', len)) {
		(void)sbuf_addf(sb, "(not shown: a binary file of %zu bytes)\n", size);
		free(text);
		return 0;
	}
	if (len < size)
		len = utf8_cut(text, len);
	*left -= len;
	fence = backtick_run(text, len) + 1;
	if (fence < 3)
		fence = 3;
	for (i = 0; i < fence; i++)
		(void)sbuf_addc(sb, '`');
	(void)sbuf_addc(sb, '\n');
	(void)sbuf_add(sb, text, len);
	if (len && text[len - 1] != '\n')
		(void)sbuf_addc(sb, '\n');
	for (i = 0; i < fence; i++)
		(void)sbuf_addc(sb, '`');
	(void)sbuf_addc(sb, '\n');
	if (len < size)
		(void)sbuf_addf(sb, "(truncated: the first %zu of %zu bytes are shown%s)\n", len,
				size,
				len < file_max ? "; the context files' total cap is reached" : "");
	free(text);
	return 0;
}

int context_render(const struct context_input *in, char **ret, struct diag *reterr)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	size_t left = in->total_max ? in->total_max : CONTEXT_TOTAL_MAX;
	size_t i;
	int r;

	if (in->goal && in->goal[0])
		(void)sbuf_addf(&sb, "# Goal\n%s\n\n", in->goal);
	if (in->preamble && in->preamble[0])
		(void)sbuf_addf(&sb, "# Role: %s\n%s\n\n", in->role ? in->role : "", in->preamble);
	(void)sbuf_addf(&sb, "# Task\n%s\n", in->prompt ? in->prompt : "");
	if (in->n_constraints) {
		(void)sbuf_adds(&sb, "\n# Constraints\n");
		for (i = 0; i < in->n_constraints; i++)
			(void)sbuf_addf(&sb, "- %s\n", in->constraints[i]);
	}
	if (in->n_context_files) {
		(void)sbuf_adds(
			&sb,
			"\n# Context files\nFiles of the repository, as they are on the base branch's checkout now:\n");
		for (i = 0; i < in->n_context_files; i++) {
			if (left == 0) {
				/* still confined: a refused file is refused whatever the cap */
				int fd = context_open(in->repo_fd, in->context_files[i], reterr);

				if (fd < 0) {
					sbuf_release(&sb);
					return fd;
				}
				(void)close(fd);
				(void)sbuf_addf(
					&sb,
					"\n## %s\n(not shown: the context files' total cap of %zu bytes is reached)\n",
					in->context_files[i],
					in->total_max ? in->total_max : CONTEXT_TOTAL_MAX);
				continue;
			}
			r = add_file(&sb, in, in->context_files[i], &left, reterr);
			if (r < 0) {
				sbuf_release(&sb);
				return r;
			}
		}
	}
	if (in->n_deps) {
		(void)sbuf_adds(&sb, "\n# Tasks this one depends on\n");
		for (i = 0; i < in->n_deps; i++)
			(void)sbuf_addf(&sb, "- %s (%s): %s\n",
					in->deps[i].title ? in->deps[i].title : in->deps[i].id,
					in->deps[i].id,
					in->deps[i].outcome ? in->deps[i].outcome : "unknown");
	}
	if (in->n_gates || in->artifact) {
		(void)sbuf_adds(&sb, "\n# How the work will be checked\n");
		for (i = 0; i < in->n_gates; i++)
			(void)sbuf_addf(&sb, "- gate %s: `%s` must exit 0\n", in->gates[i].name,
					in->gates[i].run);
		if (in->artifact)
			(void)sbuf_addf(&sb, "- the file %s must exist when you finish\n",
					in->artifact);
		else
			(void)sbuf_adds(
				&sb,
				"- your changes are committed and merged when every gate passes\n");
	}
	*ret = sbuf_detach(&sb, NULL);
	return 0;
}

size_t context_check_plan(const struct plan *p, int repo_fd, struct diag_list *issues)
{
	size_t i, j, k, found = 0;

	for (i = 0; i < p->n; i++) {
		const struct plan_task *t = &p->tasks[i];

		for (j = 0; j < t->n_context_files; j++) {
			struct diag d;
			bool seen = false;
			int fd;

			/* the plan's own list, shared by its tasks: reported once */
			for (k = 0; k < i && !seen; k++)
				seen = p->tasks[k].context_lines == t->context_lines;
			if (seen)
				break;
			diag_clear(&d);
			fd = context_open(repo_fd, t->context_files[j], &d);
			if (fd >= 0) {
				(void)close(fd);
				continue;
			}
			{
				struct diag e;

				diag_set(&e, p->source, t->context_lines[j], t->context_cols[j],
					 "%s", d.msg);
				diag_list_add(issues, &e);
			}
			found++;
		}
	}
	return found;
}

/* a and b name the same file, one is a glob the other matches ('*' also
 * crosses '/'), or one is a directory the other is in */
static bool path_overlap(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (strcmp(a, b) == 0 || fnmatch(a, b, 0) == 0 || fnmatch(b, a, 0) == 0)
		return true;
	if (la < lb && strncmp(a, b, la) == 0 && b[la] == '/')
		return true;
	if (lb < la && strncmp(b, a, lb) == 0 && a[lb] == '/')
		return true;
	return false;
}

bool context_files_overlap(const char *const *a, size_t na, const char *const *b, size_t nb)
{
	size_t i, j;

	for (i = 0; i < na; i++)
		for (j = 0; j < nb; j++)
			if (path_overlap(a[i], b[j]))
				return true;
	return false;
}
