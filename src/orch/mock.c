/* The mock agent (mock.h): the instruction parser and the runner of a script. */
#include "orch/mock.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapter/session.h"
#include "proc/git.h"
#include "proc/probe.h"
#include "util/beneath.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define PROMPT_NAME "prompt" /* the file name of parse diagnostics */

static const char *const op_names[_MOCK_OP_MAX] = {
	[MOCK_WRITE] = "write",	  [MOCK_APPEND] = "append",
	[MOCK_DELETE] = "delete", [MOCK_COMMIT] = "commit",
	[MOCK_SAY] = "say",	  [MOCK_SLEEP] = "sleep",
	[MOCK_HANG] = "hang",	  [MOCK_FAIL] = "fail",
	[MOCK_EXIT] = "exit",	  [MOCK_RATE_LIMIT] = "rate-limit",
	[MOCK_USAGE] = "usage",	  [MOCK_SESSION] = "session",
};

const char *mock_op_to_string(enum mock_op op)
{
	if ((int)op < 0 || op >= _MOCK_OP_MAX)
		return NULL;
	return op_names[op];
}

enum mock_op mock_op_from_string(const char *s, size_t len)
{
	int i;

	for (i = 0; i < _MOCK_OP_MAX; i++)
		if (strlen(op_names[i]) == len && memcmp(op_names[i], s, len) == 0)
			return (enum mock_op)i;
	return _MOCK_OP_INVALID;
}

/* ---- parsing --------------------------------------------------------------- */

/* One line being parsed: [p, end) is what is left of it. */
struct cursor {
	const char *line; /* its first byte (column 1) */
	const char *p, *end;
	unsigned no;
};

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static void skip_blanks(struct cursor *c)
{
	while (c->p < c->end && blank(*c->p))
		c->p++;
}

static unsigned col_of(const struct cursor *c, const char *at)
{
	return (unsigned)(at - c->line) + 1;
}

/* The next word (bytes up to a blank): false at the end of the line. */
static bool next_word(struct cursor *c, const char **ret, size_t *ret_len)
{
	const char *w;

	skip_blanks(c);
	if (c->p >= c->end)
		return false;
	w = c->p;
	while (c->p < c->end && !blank(*c->p))
		c->p++;
	*ret = w;
	*ret_len = (size_t)(c->p - w);
	return true;
}

static int bad(const struct cursor *c, const char *at, struct diag *reterr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int bad(const struct cursor *c, const char *at, struct diag *reterr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_vset(reterr, PROMPT_NAME, c->no, col_of(c, at), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Nothing may follow the arguments of op. */
static int no_more(struct cursor *c, enum mock_op op, struct diag *reterr)
{
	const char *w;
	size_t n;

	if (!next_word(c, &w, &n))
		return 0;
	return bad(c, w, reterr, "%s: unexpected argument '%.*s'", mock_op_to_string(op),
		   (int)(n > 80 ? 80 : n), w);
}

/* A decimal number of seconds: DIGITS[.DIGITS] or .DIGITS, at most max. */
static int parse_seconds(const char *w, size_t n, double max, double *ret)
{
	char buf[64];
	size_t i, dots = 0, digits = 0;
	char *end;
	double v;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (w[i] == '.')
			dots++;
		else if (w[i] >= '0' && w[i] <= '9')
			digits++;
		else
			return -EINVAL;
	}
	if (dots > 1 || digits == 0)
		return -EINVAL;
	memcpy(buf, w, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

/* A decimal integer in [0, max]. */
static int parse_uint(const char *w, size_t n, int64_t max, int64_t *ret)
{
	int64_t v = 0;
	size_t i;

	if (n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (w[i] < '0' || w[i] > '9')
			return -EINVAL;
		if (v > (max - (w[i] - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (w[i] - '0');
	}
	*ret = v;
	return 0;
}

/* A PATH argument: relative, beneath the workdir (lexically; the kernel
 * checks symlinks when it is used). */
static int parse_path(struct mock_script *s, const struct cursor *c, const char *w, size_t n,
		      enum mock_op op, const char **ret, struct diag *reterr)
{
	struct diag d = {0};
	int r;

	r = beneath_check_relpath(w, n, &d);
	if (r < 0) {
		diag_set(reterr, PROMPT_NAME, c->no, col_of(c, w), "%s: %s", mock_op_to_string(op),
			 d.msg);
		return r == -EPERM ? -EPERM : -EINVAL;
	}
	*ret = arena_strndup(&s->arena, w, n);
	return 0;
}

/* A MARKER: relative (the workdir), "~/REL" or an absolute path under home
 * (HOME); confined lexically beneath its base. */
static int parse_marker(struct mock_script *s, const struct cursor *c, const char *w, size_t n,
			const char *home, struct mock_instr *in, struct diag *reterr)
{
	const char *rel = w;
	size_t rel_n = n, hn;
	struct diag d = {0};
	int r;

	in->marker_base = MOCK_BASE_WORKDIR;
	if (n >= 2 && w[0] == '~' && w[1] == '/') {
		rel = w + 2;
		rel_n = n - 2;
		in->marker_base = MOCK_BASE_HOME;
	} else if (n >= 1 && w[0] == '/') {
		hn = home ? strlen(home) : 0;
		while (hn > 1 && home[hn - 1] == '/')
			hn--;
		if (!home || home[0] != '/' || hn == 1 || n <= hn + 1 || memcmp(w, home, hn) != 0 ||
		    w[hn] != '/') {
			diag_set(reterr, PROMPT_NAME, c->no, col_of(c, w),
				 "once: marker '%.*s' is outside the workdir and outside HOME",
				 (int)(n > 200 ? 200 : n), w);
			return -EPERM;
		}
		rel = w + hn + 1;
		rel_n = n - hn - 1;
		in->marker_base = MOCK_BASE_HOME;
	}
	r = beneath_check_relpath(rel, rel_n, &d);
	if (r < 0) {
		diag_set(reterr, PROMPT_NAME, c->no, col_of(c, w), "once: marker: %s", d.msg);
		return r == -EPERM ? -EPERM : -EINVAL;
	}
	in->marker = arena_strndup(&s->arena, rel, rel_n);
	return 0;
}

/* The rest of the line (after the blanks) as the instruction's text. */
static void take_rest(struct mock_script *s, struct cursor *c, struct mock_instr *in)
{
	skip_blanks(c);
	in->text_len = (size_t)(c->end - c->p);
	in->text = arena_strndup(&s->arena, c->p, in->text_len);
	c->p = c->end;
}

/* The arguments of op (its keyword already read). */
static int parse_args(struct mock_script *s, struct cursor *c, enum mock_op op,
		      struct mock_instr *in, struct diag *reterr)
{
	const char *w, *kw = mock_op_to_string(op);
	size_t n;
	int r;

	in->op = op;
	switch (op) {
	case MOCK_WRITE:
	case MOCK_APPEND:
	case MOCK_DELETE:
		if (!next_word(c, &w, &n))
			return bad(c, c->end, reterr, "%s: missing PATH", kw);
		r = parse_path(s, c, w, n, op, &in->path, reterr);
		if (r < 0)
			return r;
		if (op == MOCK_DELETE)
			return no_more(c, op, reterr);
		take_rest(s, c, in);
		return 0;
	case MOCK_COMMIT:
		take_rest(s, c, in);
		if (in->text_len == 0)
			return bad(c, c->end, reterr, "commit: missing MESSAGE");
		return 0;
	case MOCK_SAY:
		take_rest(s, c, in);
		return 0;
	case MOCK_FAIL:
		take_rest(s, c, in);
		if (in->text_len == 0)
			in->text = NULL;
		return 0;
	case MOCK_SLEEP:
		if (!next_word(c, &w, &n))
			return bad(c, c->end, reterr, "sleep: missing SECONDS");
		if (parse_seconds(w, n, MOCK_SLEEP_MAX, &in->seconds) < 0)
			return bad(
				c, w, reterr,
				"sleep: '%.*s' is not a number of seconds (0 to %.0f, decimal allowed)",
				(int)(n > 80 ? 80 : n), w, MOCK_SLEEP_MAX);
		return no_more(c, op, reterr);
	case MOCK_HANG:
		return no_more(c, op, reterr);
	case MOCK_EXIT:
		if (!next_word(c, &w, &n))
			return bad(c, c->end, reterr, "exit: missing N");
		if (parse_uint(w, n, 255, &in->a) < 0)
			return bad(c, w, reterr, "exit: '%.*s' is not an exit status (0 to 255)",
				   (int)(n > 80 ? 80 : n), w);
		return no_more(c, op, reterr);
	case MOCK_RATE_LIMIT:
		in->seconds = MOCK_RATE_LIMIT_DEF;
		if (next_word(c, &w, &n) && parse_seconds(w, n, MOCK_SLEEP_MAX, &in->seconds) < 0)
			return bad(c, w, reterr,
				   "rate-limit: '%.*s' is not a number of seconds (0 to %.0f)",
				   (int)(n > 80 ? 80 : n), w, MOCK_SLEEP_MAX);
		return no_more(c, op, reterr);
	case MOCK_USAGE:
		if (!next_word(c, &w, &n))
			return bad(c, c->end, reterr, "usage: missing IN and OUT token counts");
		if (parse_uint(w, n, INT64_C(1000000000000000), &in->a) < 0)
			return bad(c, w, reterr, "usage: '%.*s' is not a token count",
				   (int)(n > 80 ? 80 : n), w);
		if (!next_word(c, &w, &n))
			return bad(c, c->end, reterr, "usage: missing OUT token count");
		if (parse_uint(w, n, INT64_C(1000000000000000), &in->b) < 0)
			return bad(c, w, reterr, "usage: '%.*s' is not a token count",
				   (int)(n > 80 ? 80 : n), w);
		return no_more(c, op, reterr);
	case MOCK_SESSION: {
		struct diag d = {0};
		char *id;

		if (!next_word(c, &w, &n))
			return bad(c, c->end, reterr, "session: missing ID");
		id = arena_strndup(&s->arena, w, n);
		if (mock_session_id_check(id, &d) < 0)
			return bad(c, w, reterr, "session: %s", d.msg);
		in->text = id;
		in->text_len = n;
		r = no_more(c, op, reterr);
		if (r == 0 && !s->session_id)
			s->session_id = id;
		return r;
	}
	case _MOCK_OP_MAX:
	case _MOCK_OP_INVALID:
	default:
		break;
	}
	BUG("mock: op %d", (int)op);
}

/* One line: 1 an instruction was added, 0 prose, or a negative errno. */
static int parse_line(struct mock_script *s, struct cursor *c, const char *home, size_t *alloc,
		      struct diag *reterr)
{
	struct mock_instr in;
	enum mock_op op;
	const char *w, *nul;
	size_t n;
	int r;

	if (!next_word(c, &w, &n))
		return 0;
	if (n == 4 && memcmp(w, "once", 4) == 0) {
		const char *mw;
		size_t mn;

		memset(&in, 0, sizeof(in));
		if (!next_word(c, &mw, &mn))
			return bad(c, c->end, reterr, "once: missing MARKER");
		nul = memchr(c->line, '\0', (size_t)(c->end - c->line));
		if (nul)
			return bad(c, nul, reterr, "the instruction holds a NUL byte");
		r = parse_marker(s, c, mw, mn, home, &in, reterr);
		if (r < 0)
			return r;
		if (!next_word(c, &w, &n))
			return bad(c, c->end, reterr, "once: missing the instruction to run");
		op = mock_op_from_string(w, n);
		if (op < 0)
			return bad(c, w, reterr, "once: '%.*s' is not an instruction",
				   (int)(n > 80 ? 80 : n), w);
	} else {
		op = mock_op_from_string(w, n);
		if (op < 0)
			return 0; /* prose */
		memset(&in, 0, sizeof(in));
		nul = memchr(c->line, '\0', (size_t)(c->end - c->line));
		if (nul)
			return bad(c, nul, reterr, "the instruction holds a NUL byte");
	}
	in.line = c->no;
	r = parse_args(s, c, op, &in, reterr);
	if (r < 0)
		return r;
	if (s->n >= MOCK_MAX_INSTRUCTIONS) {
		diag_set(reterr, PROMPT_NAME, c->no, 1, "more than %d instructions",
			 MOCK_MAX_INSTRUCTIONS);
		return -E2BIG;
	}
	if (s->n == *alloc) {
		*alloc = *alloc ? 2 * *alloc : 16;
		s->v = xrealloc(s->v, st_mult(*alloc, sizeof(*s->v)));
	}
	s->v[s->n++] = in;
	return 1;
}

int mock_parse(const char *prompt, size_t len, const char *home, struct mock_script *ret,
	       struct diag *reterr)
{
	const char *p = prompt, *end = prompt ? prompt + len : NULL;
	size_t alloc = 0;
	unsigned no = 0;

	memset(ret, 0, sizeof(*ret));
	arena_init(&ret->arena, 0);
	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct cursor c;
		int r;

		c.line = p;
		c.p = p;
		c.end = nl ? nl : end;
		c.no = ++no;
		/* trailing blanks (and a CR) are not part of the text */
		while (c.end > c.p && blank(c.end[-1]))
			c.end--;
		r = parse_line(ret, &c, home, &alloc, reterr);
		if (r < 0)
			return r;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

void mock_script_release(struct mock_script *s)
{
	if (!s)
		return;
	free(s->v);
	arena_release(&s->arena);
	memset(s, 0, sizeof(*s));
}

int mock_session_id_check(const char *id, struct diag *reterr)
{
	int r;

	r = session_id_check(id, reterr);
	if (r < 0)
		return r;
	if (strlen(id) > MOCK_SESSION_ID_MAX) {
		diag_set(reterr, NULL, 0, 0, "session id is too long (%zu bytes, at most %d)",
			 strlen(id), MOCK_SESSION_ID_MAX);
		return -EINVAL;
	}
	if (strchr(id, '/') || strcmp(id, ".") == 0 || strcmp(id, "..") == 0) {
		diag_set(reterr, NULL, 0, 0,
			 "session id '%s' holds a '/' or is '.' or '..' (it names a file)", id);
		return -EINVAL;
	}
	return 0;
}

void mock_session_default(const char *prompt, size_t len, char out[SESSION_UUID_LEN + 1])
{
	char hex[SHA256_HEX_LEN + 1];

	hash_sha256_hex(prompt ? prompt : "", prompt ? len : 0, hex);
	if (session_id_derive(hex, MOCK_ADAPTER, out) < 0)
		BUG("mock: session_id_derive refused a digest");
}

/* ---- running ----------------------------------------------------------------- */

struct run {
	const struct mock_opts *o;
	unsigned calls; /* tool calls so far */
	unsigned done;	/* instructions carried out */
};

static void emit(const struct run *r, json_t *ev)
{
	char *line = json_dumps(ev, JSON_COMPACT);
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	json_decref(ev);
	if (!line)
		return;
	(void)sbuf_adds(&sb, line);
	(void)sbuf_addc(&sb, '\n');
	/* a reader that went away cannot be told anything */
	(void)write_all(r->o->out_fd, sb.buf, sb.len);
	sbuf_release(&sb);
	free(line);
}

static json_t *event_new(const char *type)
{
	json_t *ev = json_object();

	json_obj_set(ev, "type", json_string(type));
	return ev;
}

static void emit_start(const struct run *r, const char *session_id)
{
	json_t *ev = event_new("start");

	json_obj_set(ev, "session_id", json_str_lossy(session_id));
	json_obj_set(ev, "model", json_string(MOCK_MODEL));
	emit(r, ev);
}

static void emit_progress(const struct run *r, const char *msg)
{
	json_t *ev = event_new("progress");

	json_obj_set(ev, "message", json_str_lossy(msg));
	emit(r, ev);
}

static void emit_error(const struct run *r, const char *kind, const char *msg)
{
	json_t *ev = event_new("error");

	json_obj_set(ev, "kind", json_string(kind));
	json_obj_set(ev, "message", json_str_lossy(msg));
	emit(r, ev);
}

/* A tool_call event; its call id into id. */
static void emit_call(struct run *r, const char *name, json_t *args, char id[32])
{
	json_t *ev = event_new("tool_call");

	(void)snprintf(id, 32, "mock-%u", ++r->calls);
	json_obj_set(ev, "name", json_string(name));
	json_obj_set(ev, "call_id", json_string(id));
	json_obj_set(ev, "args", args);
	emit(r, ev);
}

static void emit_result(const struct run *r, const char *name, const char *id, bool ok,
			const char *text)
{
	json_t *ev = event_new("tool_result");

	json_obj_set(ev, "name", json_string(name));
	json_obj_set(ev, "call_id", json_string(id));
	json_obj_set(ev, "status", json_string(ok ? "ok" : "error"));
	json_obj_set(ev, ok ? "output" : "error", json_str_lossy(text));
	emit(r, ev);
}

/* The errno of a path outside its confinement. */
static bool escaped(int err)
{
	return err == -EXDEV || err == -ELOOP || err == -EPERM;
}

/* A failed tool: its result, then the error event; the exit status. */
static int tool_failed(const struct run *r, const char *name, const char *id, int err,
		       const char *msg)
{
	emit_result(r, name, id, false, msg);
	emit_error(r, escaped(err) ? "path_refused" : "runtime", msg);
	return escaped(err) ? MOCK_EXIT_REFUSED : MOCK_EXIT_FAILED;
}

/* What the file instructions refuse (util/beneath.h). */
static unsigned file_flags(const struct run *r)
{
	return BENEATH_NO_BERNSTEIN | (r->o->allow_git_dir ? 0 : BENEATH_NO_GIT);
}

static int do_file(struct run *r, const struct mock_instr *in)
{
	const bool append = in->op == MOCK_APPEND;
	const char *name = append ? "append_file" : "write_file";
	struct diag d = {0};
	struct stat st;
	char id[32], msg[PATH_MAX + 128];
	char *line = NULL;
	int fd = -1, e;

	emit_call(r, name, json_pack("{s:o}", "path", json_str_lossy(in->path)), id);
	if (!append) {
		/* a new file renamed over the old one: a failure leaves it intact */
		line = xmalloc(in->text_len + 1);
		memcpy(line, in->text, in->text_len);
		line[in->text_len] = '\n';
		e = beneath_write(r->o->workdir_fd, in->path, line, in->text_len + 1, file_flags(r),
				  &d);
		free(line);
		if (e == -EMLINK) /* a refusal, like the other confinement refusals */
			e = -EPERM;
		if (e < 0)
			return tool_failed(r, name, id, e, d.msg);
		goto done;
	}
	e = beneath_mkdirs(r->o->workdir_fd, in->path, file_flags(r), &d);
	if (e < 0)
		return tool_failed(r, name, id, e, d.msg);
	fd = beneath_open(r->o->workdir_fd, in->path, strlen(in->path),
			  O_WRONLY | O_CREAT | O_NONBLOCK | O_APPEND, 0644, file_flags(r), &d);
	if (fd < 0)
		return tool_failed(r, name, id, fd, d.msg);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		(void)snprintf(msg, sizeof(msg), "'%s' is not a regular file", in->path);
		e = -EINVAL;
		goto fail;
	}
	if (st.st_nlink > 1) {
		(void)snprintf(msg, sizeof(msg),
			       "refusing to write '%s': it has more than one hard link", in->path);
		e = -EPERM;
		goto fail;
	}
	if ((e = write_all(fd, in->text, in->text_len)) < 0 || (e = write_all(fd, "\n", 1)) < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot write '%s': %s", in->path, strerror(-e));
		goto fail;
	}
	close_fdp(&fd);
done:
	(void)snprintf(msg, sizeof(msg), "%s %zu bytes to %s", append ? "appended" : "wrote",
		       in->text_len + 1, in->path);
	emit_result(r, name, id, true, msg);
	return 0;
fail:
	close_fdp(&fd);
	return tool_failed(r, name, id, e, msg);
}

static int do_delete(struct run *r, const struct mock_instr *in)
{
	struct diag d = {0};
	char id[32], msg[PATH_MAX + 64];
	int e;

	emit_call(r, "delete_file", json_pack("{s:o}", "path", json_str_lossy(in->path)), id);
	e = beneath_unlink(r->o->workdir_fd, in->path, file_flags(r), &d);
	if (e == -ENOENT) {
		/* a tool error the agent lives with */
		emit_result(r, "delete_file", id, false, d.msg);
		return 0;
	}
	if (e < 0)
		return tool_failed(r, "delete_file", id, e, d.msg);
	(void)snprintf(msg, sizeof(msg), "deleted %s", in->path);
	emit_result(r, "delete_file", id, true, msg);
	return 0;
}

/* git -C WORKDIR -c ... ARGS, hardened like every git bernstein starts
 * (proc/git.h: no hook, fsmonitor or pager of the repository runs); 0 with
 * *ret_exit set, or -1 (could not run; the reason in msg). */
static int git(const struct run *r, const char *const *args, int *ret_exit, char *msg, size_t size)
{
	static const char *const head[] = {"-c", "user.name=mock", "-c",
					   "user.email=mock@localhost"};
	struct strvec full = STRVEC_INIT, base = STRVEC_INIT, argv = STRVEC_INIT, env = STRVEC_INIT;
	struct probe pr = {0};
	struct probe_opts po = {0};
	size_t i;
	int ret = -1;

	for (i = 0; i < ARRAY_SIZE(head); i++)
		strvec_push(&full, head[i]);
	strvec_pushv(&full, args);
	if (r->o->path_env)
		strvec_pushf(&base, "PATH=%s", r->o->path_env);
	if (r->o->home)
		strvec_pushf(&base, "HOME=%s", r->o->home);
	if (git_prepare(r->o->workdir, (const char *const *)base.v, GIT_HARDEN_WRITE,
			(const char *const *)full.v, &argv, &env) < 0) {
		(void)snprintf(msg, size, "git is not on PATH");
		goto out;
	}
	strvec_push(&env, "GIT_CONFIG_NOSYSTEM=1");
	/* the mock's HOME is the agent's: no global config at all */
	strvec_push(&env, "GIT_CONFIG_GLOBAL=/dev/null");
	strvec_push(&env, "GIT_AUTHOR_NAME=mock");
	strvec_push(&env, "GIT_AUTHOR_EMAIL=mock@localhost");
	strvec_push(&env, "GIT_COMMITTER_NAME=mock");
	strvec_push(&env, "GIT_COMMITTER_EMAIL=mock@localhost");
	pr.binary = argv.v[0];
	pr.args = (const char **)argv.v + 1;
	po.env = env.v;
	po.timeout_ms = r->o->git_timeout_ms ? r->o->git_timeout_ms : MOCK_GIT_TIMEOUT_MS;
	po.max_output = 64 * 1024;
	po.max_parallel = 1;
	if (probe_run(&pr, 1, &po) < 0) {
		(void)snprintf(msg, size, "cannot run git");
		goto out;
	}
	switch (pr.status) {
	case PROBE_OK:
	case PROBE_EXIT_NONZERO:
		*ret_exit = pr.exit_code;
		(void)snprintf(msg, size, "%s", pr.first_line ? pr.first_line : "");
		ret = 0;
		break;
	case PROBE_NOT_FOUND:
		(void)snprintf(msg, size, "git is not on PATH");
		break;
	case PROBE_TIMED_OUT:
		(void)snprintf(msg, size, "git timed out");
		break;
	case PROBE_SPAWN_FAILED:
	case PROBE_SIGNALED:
	case _PROBE_STATUS_MAX:
	default:
		(void)snprintf(msg, size, "git did not run (%s)", probe_status_name(pr.status));
		break;
	}
out:
	probe_release(&pr);
	strvec_clear(&full);
	strvec_clear(&base);
	strvec_clear(&argv);
	strvec_clear(&env);
	return ret;
}

static int do_commit(struct run *r, const struct mock_instr *in)
{
	/* bernstein's own files (.bernstein/: runs, the agent's HOME) stay out */
	const char *const add[] = {"add", "-A", "--", ".", ":(exclude).bernstein", NULL};
	const char *const staged[] = {"diff", "--cached", "--quiet", NULL};
	const char *const commit[] = {"commit", "--no-verify", "-q", "-m", in->text, NULL};
	char id[32], msg[1024], out[1200];
	int code = 0;

	emit_call(r, "git_commit", json_pack("{s:o}", "message", json_str_lossy(in->text)), id);
	if (git(r, add, &code, msg, sizeof(msg)) < 0 || code != 0)
		goto fail;
	if (git(r, staged, &code, msg, sizeof(msg)) < 0 || (code != 0 && code != 1))
		goto fail;
	if (code == 0) {
		emit_result(r, "git_commit", id, true, "nothing to commit");
		return 0;
	}
	if (git(r, commit, &code, msg, sizeof(msg)) < 0 || code != 0)
		goto fail;
	emit_result(r, "git_commit", id, true, "committed");
	return 0;
fail:
	if (code)
		(void)snprintf(out, sizeof(out), "git commit failed (exit %d): %s", code, msg);
	else
		(void)snprintf(out, sizeof(out), "git commit failed: %s", msg);
	return tool_failed(r, "git_commit", id, -EIO, out);
}

static void sleep_s(double seconds)
{
	struct timespec ts, rem;

	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec < 0 || ts.tv_nsec > 999999999)
		ts.tv_nsec = 0;
	while (nanosleep(&ts, &rem) < 0 && errno == EINTR)
		ts = rem;
}

static int do_rate_limit(const struct run *r, const struct mock_instr *in)
{
	json_t *ev = event_new("error");
	int64_t s = (int64_t)in->seconds;
	char msg[128];

	if ((double)s < in->seconds)
		s++; /* rounded up: never retry early */

	(void)snprintf(msg, sizeof(msg),
		       "rate limit exceeded (HTTP 429): retry after %" PRId64 " seconds", s);
	json_obj_set(ev, "kind", json_string("rate_limit"));
	json_obj_set(ev, "http_status", json_integer(429));
	json_obj_set(ev, "retry_after_s", json_integer(s));
	json_obj_set(ev, "message", json_string(msg));
	emit(r, ev);
	return MOCK_EXIT_FAILED;
}

/* 0 when the marker's file exists (the instruction is skipped), 1 when it did
 * not and was created (it runs), or the exit status (negated) of a failure. */
static int once_marker(const struct run *r, const struct mock_instr *in)
{
	struct diag d = {0};
	int dirfd = in->marker_base == MOCK_BASE_HOME ? r->o->home_fd : r->o->workdir_fd;
	unsigned flags = file_flags(r);
	int fd, e;

	if (dirfd < 0) {
		emit_error(r, "path_refused",
			   "once: a marker under HOME, but HOME is not set or cannot be opened");
		return -MOCK_EXIT_REFUSED;
	}
	fd = beneath_open(dirfd, in->marker, strlen(in->marker), O_PATH, 0, flags, &d);
	if (fd >= 0) {
		(void)close(fd);
		return 0;
	}
	if (fd != -ENOENT)
		goto fail;
	e = beneath_mkdirs(dirfd, in->marker, flags, &d);
	if (e < 0) {
		fd = e;
		goto fail;
	}
	fd = beneath_open(dirfd, in->marker, strlen(in->marker), O_WRONLY | O_CREAT | O_EXCL, 0644,
			  flags, &d);
	if (fd < 0)
		goto fail;
	(void)close(fd);
	return 1;
fail : {
	char msg[sizeof(d.msg) + 32];

	(void)snprintf(msg, sizeof(msg), "once: marker: %s", d.msg);
	emit_error(r, escaped(fd) ? "path_refused" : "runtime", msg);
	return escaped(fd) ? -MOCK_EXIT_REFUSED : -MOCK_EXIT_FAILED;
}
}

/* One instruction: false to go on, true to stop with *ret_status. */
static bool step(struct run *r, const struct mock_instr *in, int *ret_status)
{
	json_t *ev;
	int st = 0;

	switch (in->op) {
	case MOCK_WRITE:
	case MOCK_APPEND:
		st = do_file(r, in);
		break;
	case MOCK_DELETE:
		st = do_delete(r, in);
		break;
	case MOCK_COMMIT:
		st = do_commit(r, in);
		break;
	case MOCK_SAY:
		emit_progress(r, in->text);
		break;
	case MOCK_SLEEP:
		sleep_s(in->seconds);
		break;
	case MOCK_HANG:
		for (;;)
			(void)pause();
	case MOCK_FAIL:
		emit_error(r, "fail", in->text ? in->text : "failed as instructed");
		*ret_status = MOCK_EXIT_FAILED;
		return true;
	case MOCK_EXIT:
		*ret_status = (int)in->a;
		return true;
	case MOCK_RATE_LIMIT:
		*ret_status = do_rate_limit(r, in);
		return true;
	case MOCK_USAGE:
		ev = event_new("usage");
		json_obj_set(ev, "input_tokens", json_integer(in->a));
		json_obj_set(ev, "output_tokens", json_integer(in->b));
		emit(r, ev);
		break;
	case MOCK_SESSION: /* announced by the start event */
		break;
	case _MOCK_OP_MAX:
	case _MOCK_OP_INVALID:
	default:
		BUG("mock: op %d", (int)in->op);
	}
	r->done++;
	if (st != 0) {
		*ret_status = st;
		return true;
	}
	return false;
}

/* HOME/.mock/sessions/ID: check it (resume) or create it. 0 or the exit status. */
static int session_marker(const struct run *r, const char *id, bool resume)
{
	struct sbuf path = SBUF_INIT(SIZE_MAX);
	struct diag d = {0};
	char msg[sizeof(d.msg) + 256];
	int fd = -1, st = 0;

	if (r->o->home_fd < 0) {
		if (resume) {
			(void)snprintf(
				msg, sizeof(msg),
				"cannot resume session '%s': HOME is not set or cannot be opened, so no session can be found",
				id);
			emit_error(r, "session_unknown", msg);
			return MOCK_EXIT_FAILED;
		}
		return 0; /* nothing to record it in */
	}
	(void)sbuf_addf(&path, "%s/%s", MOCK_SESSIONS_DIR, id);
	if (resume) {
		fd = beneath_open(r->o->home_fd, path.buf, path.len, O_PATH, 0, 0, &d);
		if (fd < 0) {
			if (fd == -ENOENT)
				(void)snprintf(msg, sizeof(msg),
					       "unknown session '%s' (no HOME/%s)", id, path.buf);
			else
				(void)snprintf(msg, sizeof(msg), "cannot look up session '%s': %s",
					       id, d.msg);
			emit_error(r, "session_unknown", msg);
			st = MOCK_EXIT_FAILED;
		}
		goto out;
	}
	fd = beneath_mkdirs(r->o->home_fd, path.buf, 0, &d);
	if (fd >= 0)
		fd = beneath_open(r->o->home_fd, path.buf, path.len, O_WRONLY | O_CREAT, 0600, 0,
				  &d);
	if (fd < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot record session '%s': %s", id, d.msg);
		emit_error(r, "runtime", msg);
		st = MOCK_EXIT_FAILED;
	}
out:
	if (fd >= 0)
		(void)close(fd);
	sbuf_release(&path);
	return st;
}

static const char *announced_id(const struct mock_script *s, const struct mock_opts *o)
{
	if (o->resume_id)
		return o->resume_id;
	if (s && s->session_id)
		return s->session_id;
	if (o->session_id)
		return o->session_id;
	return o->default_session_id;
}

int mock_run(const struct mock_script *s, const struct mock_opts *o)
{
	struct run r = {.o = o};
	const char *id = announced_id(s, o);
	struct diag d = {0};
	char msg[sizeof(d.msg) + 64];
	size_t i;
	int st;

	if (!id || mock_session_id_check(id, &d) < 0) {
		(void)snprintf(msg, sizeof(msg), "%s: %s",
			       o->resume_id ? "--resume" : "--session-id",
			       id ? d.msg : "no session id");
		emit_error(&r, "syntax", msg);
		return MOCK_EXIT_REFUSED;
	}
	emit_start(&r, id);
	st = session_marker(&r, id, o->resume_id != NULL);
	if (st != 0)
		return st;
	if (o->resume_id) {
		(void)snprintf(msg, sizeof(msg), "resumed session %s", id);
		emit_progress(&r, msg);
	}
	for (i = 0; i < s->n; i++) {
		const struct mock_instr *in = &s->v[i];

		if (in->marker) {
			int m = once_marker(&r, in);

			if (m < 0)
				return -m;
			if (m == 0)
				continue;
		}
		if (step(&r, in, &st))
			return st;
	}
	{
		json_t *ev = event_new("completion");

		(void)snprintf(msg, sizeof(msg), "carried out %u instruction%s", r.done,
			       r.done == 1 ? "" : "s");
		json_obj_set(ev, "status", json_string("done"));
		json_obj_set(ev, "summary", json_string(msg));
		json_obj_set(ev, "turns", json_integer(1));
		emit(&r, ev);
	}
	return MOCK_EXIT_OK;
}

int mock_refuse(const struct mock_opts *o, int parse_error, const struct diag *d)
{
	struct run r = {.o = o};
	const char *id = announced_id(NULL, o);
	char buf[sizeof(d->file) + sizeof(d->msg) + 64];

	if (id)
		emit_start(&r, id);
	emit_error(&r, parse_error == -EPERM ? "path_refused" : "syntax",
		   diag_format(d, buf, sizeof(buf)));
	return MOCK_EXIT_REFUSED;
}
