#include "proc/probe.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/capture.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define PROBE_DEFAULT_TIMEOUT_MS 5000
#define PROBE_DEFAULT_MAX_OUTPUT 65536
#define PROBE_DEFAULT_PARALLEL	 16
#define PROBE_KILL_GRACE_MS	 500 /* SIGTERM -> SIGKILL */
#define PROBE_DRAIN_MS		 200 /* reading after the child exited */

/* ---- PATH search ---------------------------------------------------------- */

/* 0 if path is an executable regular file, -EACCES if it is a non-executable
 * regular file (or a directory, which execve refuses the same way), -ENOENT
 * otherwise. */
static int check_exec(const char *path, bool dirs_are_eacces)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == EACCES ? -EACCES : -ENOENT;
	if (S_ISDIR(st.st_mode))
		return dirs_are_eacces ? -EACCES : -ENOENT;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (access(path, X_OK) < 0)
		return -EACCES;
	return 0;
}

int path_search(const char *name, const char *path_env, char **ret)
{
	const char *p, *end;
	bool saw_eacces = false;
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	int r;

	if (!name || !*name || !ret)
		return -EINVAL;
	if (strchr(name, '/')) {
		r = check_exec(name, true);
		if (r < 0)
			return r;
		*ret = xstrdup(name);
		return 0;
	}
	if (!path_env || !*path_env)
		return -ENOENT;

	r = -ENOENT;
	for (p = path_env;; p = end + 1) {
		size_t dlen;
		int k;

		end = strchrnul(p, ':');
		dlen = (size_t)(end - p);
		sbuf_reset(&sb);
		if (dlen == 0)
			(void)sbuf_addc(&sb, '.'); /* empty element = current directory */
		else
			(void)sbuf_add(&sb, p, dlen);
		if (sb.buf[sb.len - 1] != '/')
			(void)sbuf_addc(&sb, '/');
		(void)sbuf_adds(&sb, name);

		k = check_exec(sb.buf, false);
		if (k == 0) {
			*ret = sbuf_detach(&sb, NULL);
			r = 0;
			break;
		}
		if (k == -EACCES)
			saw_eacces = true;
		if (!*end)
			break;
	}
	if (r < 0 && saw_eacces)
		r = -EACCES;
	sbuf_release(&sb);
	return r;
}

/* ---- ANSI stripping ------------------------------------------------------- */

static bool byte_in(const char *s, size_t j, unsigned char lo, unsigned char hi)
{
	return (unsigned char)s[j] >= lo && (unsigned char)s[j] <= hi;
}

/* Past the bytes in [lo, hi] from s[j]. */
static size_t skip_in(const char *s, size_t len, size_t j, unsigned char lo, unsigned char hi)
{
	while (j < len && byte_in(s, j, lo, hi))
		j++;
	return j;
}

/* Past s[j] when it is in [lo, hi]. */
static size_t take_in(const char *s, size_t len, size_t j, unsigned char lo, unsigned char hi)
{
	return j < len && byte_in(s, j, lo, hi) ? j + 1 : j;
}

/* The end of an OSC, DCS, SOS, PM or APC string whose text starts at s[j]:
 * past its BEL or ST (ESC \); an unterminated string runs to the end. */
static size_t control_string_end(const char *s, size_t len, size_t j)
{
	for (; j < len; j++) {
		if (s[j] == '\a')
			return j + 1;
		if (s[j] == 0x1b && j + 1 < len && s[j + 1] == '\\')
			return j + 2;
	}
	return j;
}

/* The end of the escape sequence at s[i] (an ESC, i < len). */
static size_t escape_end(const char *s, size_t len, size_t i)
{
	unsigned char c;

	if (i + 1 >= len)
		return i + 1; /* lone trailing ESC */
	c = (unsigned char)s[i + 1];
	/* CSI: parameter/intermediate bytes 0x20-0x3F, final 0x40-0x7E. Any
	 * other byte aborts the sequence and is kept. */
	if (c == '[')
		return take_in(s, len, skip_in(s, len, i + 2, 0x20, 0x3f), 0x40, 0x7e);
	if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_')
		return control_string_end(s, len, i + 2);
	/* nF: ESC, intermediates 0x20-0x2F, final 0x30-0x7E ("ESC ( B") */
	if (c >= 0x20 && c <= 0x2f)
		return take_in(s, len, skip_in(s, len, i + 1, 0x20, 0x2f), 0x30, 0x7e);
	if (c >= 0x30 && c <= 0x7e)
		return i + 2; /* two-byte ESC X */
	return i + 1;	      /* ESC before a control byte: drop the ESC only */
}

size_t ansi_strip(char *s, size_t len)
{
	size_t i = 0, o = 0;

	if (!s)
		return 0;
	while (i < len) {
		if (s[i] == 0x1b) {
			i = escape_end(s, len, i);
		} else if (s[i] == '\r') {
			/* keep the CR of CRLF, drop a lone CR */
			if (i + 1 < len && s[i + 1] == '\n')
				s[o++] = s[i];
			i++;
		} else {
			s[o++] = s[i++];
		}
	}
	s[o] = '\0';
	return o;
}

/* ---- results -------------------------------------------------------------- */

const char *probe_status_name(enum probe_status s)
{
	static const char *const names[_PROBE_STATUS_MAX] = {
		[PROBE_OK] = "ok",
		[PROBE_NOT_FOUND] = "not-found",
		[PROBE_SPAWN_FAILED] = "spawn-failed",
		[PROBE_EXIT_NONZERO] = "exit-nonzero",
		[PROBE_SIGNALED] = "signaled",
		[PROBE_TIMED_OUT] = "timed-out",
	};

	if ((unsigned)s >= _PROBE_STATUS_MAX)
		return "invalid";
	return names[s];
}

void probe_release(struct probe *p)
{
	if (!p)
		return;
	free(p->resolved);
	p->resolved = NULL;
	free(p->output);
	p->output = NULL;
	p->output_len = 0;
	p->output_truncated = false;
	free(p->first_line);
	p->first_line = NULL;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* First line of s[0..len) that is non-empty after trimming, or NULL. */
static char *first_nonempty_line(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t b = i, e;

		while (i < len && s[i] != '\n')
			i++;
		e = i;
		if (i < len)
			i++; /* the '\n' */
		while (b < e && is_blank(s[b]))
			b++;
		while (e > b && is_blank(s[e - 1]))
			e--;
		if (e > b)
			return xstrndup(s + b, e - b);
	}
	return NULL;
}

/* ---- the poll loop -------------------------------------------------------- */

static void probe_output(struct probe *p, struct capture *c)
{
	struct sbuf *o = &c->out, *e = &c->err;
	bool sep = o->len > 0 && e->len > 0 && o->buf[o->len - 1] != '\n';
	size_t len = o->len + (sep ? 1 : 0) + e->len;
	char *out = xmalloc(st_add(len, 1));
	char *tmp;
	size_t tlen;

	memcpy(out, o->buf, o->len);
	if (sep)
		out[o->len] = '\n';
	memcpy(out + o->len + (sep ? 1 : 0), e->buf, e->len);
	out[len] = '\0';
	p->output = out;
	p->output_len = len;
	p->output_truncated = c->out_dropped > 0 || c->err_dropped > 0;

	tmp = xmalloc(st_add(len, 1));
	memcpy(tmp, out, len + 1);
	tlen = ansi_strip(tmp, len);
	p->first_line = first_nonempty_line(tmp, tlen);
	free(tmp);
}

static void probe_result(struct probe *p, struct capture *c)
{
	p->elapsed_ms = c->elapsed_ms;
	if (c->start_result < 0) {
		p->status = PROBE_SPAWN_FAILED;
		p->spawn_errno = c->start_errno ? c->start_errno : -c->start_result;
		p->elapsed_ms = 0;
	} else if (c->timed_out) {
		p->status = PROBE_TIMED_OUT;
		p->term_signal = c->term_signal;
	} else if (c->status_unknown) {
		/* reaped behind our back (SIGCHLD ignored?): no status to report */
		p->status = PROBE_EXIT_NONZERO;
		p->exit_code = -1;
	} else if (c->term_signal) {
		p->status = PROBE_SIGNALED;
		p->term_signal = c->term_signal;
	} else {
		p->exit_code = c->exit_code;
		p->status = p->exit_code == 0 ? PROBE_OK : PROBE_EXIT_NONZERO;
	}
	probe_output(p, c);
}

/* The child of probe p, or false (p's status set) when there is none to
 * run: not on PATH, or found but not executable. */
static bool probe_spec(struct probe *p, const char *path_env, const char *const *env,
		       struct proc_spec *ret)
{
	static const char *const default_args[] = {"--version", NULL};
	int r;

	if (!p->binary)
		return false;
	r = path_search(p->binary, path_env, &p->resolved);
	if (r == -EACCES) {
		/* found, but nothing executable: no spawn, report like execve would */
		p->status = PROBE_SPAWN_FAILED;
		p->spawn_errno = EACCES;
		return false;
	}
	if (r < 0)
		return false;
	proc_spec_init(ret);
	/* a version probe gets its own session and process group, as it
	 * always had (a namespace would make it pid 1, which ignores the
	 * signals it sends itself) */
	ret->contain = CONTAIN_PGROUP;
	strvec_push(&ret->argv, p->resolved);
	strvec_pushv(&ret->argv, p->args ? p->args : default_args);
	strvec_pushv(&ret->env, env);
	return true;
}

int probe_run(struct probe *probes, size_t n, const struct probe_opts *opts)
{
	static const struct probe_opts no_opts;
	struct strvec env_owned = STRVEC_INIT;
	const char *const *env;
	struct proc_spec *specs = NULL;
	struct capture *caps = NULL;
	struct capture_opts co = {0};
	size_t *of = NULL, ncap = 0, i;
	uint64_t timeout_ms;
	size_t max_output;
	int r;

	if (n == 0)
		return 0;
	if (!probes)
		return -EINVAL;
	if (!opts)
		opts = &no_opts;
	timeout_ms = opts->timeout_ms ? opts->timeout_ms : PROBE_DEFAULT_TIMEOUT_MS;
	max_output = opts->max_output ? opts->max_output : PROBE_DEFAULT_MAX_OUTPUT;
	if (opts->env) {
		env = opts->env;
	} else {
		if (opts->path_env)
			(void)strvec_pushf(&env_owned, "PATH=%s", opts->path_env);
		(void)strvec_push(&env_owned, "LANG=C.UTF-8");
		(void)strvec_push(&env_owned, "TERM=dumb");
		(void)strvec_push(&env_owned, "NO_COLOR=1");
		(void)strvec_push(&env_owned, "CI=1");
		env = env_owned.v;
	}

	specs = xcalloc(n, sizeof(*specs));
	caps = xcalloc(n, sizeof(*caps));
	of = xcalloc(n, sizeof(*of));
	for (i = 0; i < n; i++) {
		struct probe *p = &probes[i];

		memset(&p->status, 0, sizeof(*p) - offsetof(struct probe, status));
		p->status = PROBE_NOT_FOUND;
		if (!probe_spec(p, opts->path_env, env, &specs[ncap])) {
			p->output = xstrdup("");
			continue;
		}
		caps[ncap] = (struct capture){
			.spec = &specs[ncap],
			.timeout_ms = timeout_ms,
			.kill_grace_ms = PROBE_KILL_GRACE_MS,
			.max_out = max_output,
			.max_err = max_output,
		};
		of[ncap++] = i;
	}
	co.max_parallel = opts->max_parallel ? opts->max_parallel : PROBE_DEFAULT_PARALLEL;
	co.drain_ms = PROBE_DRAIN_MS;
	co.clock = opts->clock;
	r = proc_capture(caps, ncap, &co);
	for (i = 0; i < ncap; i++) {
		probe_result(&probes[of[i]], &caps[i]);
		capture_release(&caps[i]);
		proc_spec_release(&specs[i]);
	}
	strvec_clear(&env_owned);
	free(specs);
	free(caps);
	free(of);
	return r;
}
