/* One agent session under the supervisor (see agentrun.h). Moved out of
 * cli/cmd-spawn.c so that `bernstein spawn` and `bernstein run` share it. */
#include "orch/agentrun.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/acp.h"
#include "adapter/axes.h"
#include "adapter/invocation.h"
#include "adapter/profile.h"
#include "proc/usock.h"
#include "util/beneath.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/redact.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define SESSION_JSON_MAX (256u << 10)
#define LAST_TEXT_MAX	 4096
#define LOGIN_FILE_MAX	 (256u << 10) /* a login file read for its secrets */
#define LOGIN_SECRET_MIN 16	      /* shorter strings of it are not tokens */

char *agentrun_path(const char *dir, const char *name)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s", dir, name);
	return sbuf_detach(&sb, NULL);
}

void agentrun_init(struct agentrun *r, const struct invocation_plan *plan,
		   const struct agentrun_hooks *hooks)
{
	memset(r, 0, sizeof(*r));
	r->plan = plan;
	if (hooks)
		r->hooks = *hooks;
	r->rd = agentrun_redactor(plan);
	r->line = (struct sbuf)SBUF_INIT(SIZE_MAX);
	r->evbuf = (struct sbuf)SBUF_INIT(SIZE_MAX);
	r->json = (struct sbuf)SBUF_INIT(SIZE_MAX);
	r->agent_exit_code = -1;
	r->input_tokens = EVENT_UNSET;
	r->output_tokens = EVENT_UNSET;
	r->cost_usd = -1;
	r->cached_tokens = EVENT_UNSET;
	dialect_state_init(&r->dialect, plan->dialect);
	r->dialect.pty_screen = plan->pty;
	dialect_state_init(&r->hooks_dialect, DIALECT_HOOKS);
	outcome_inputs_init(&r->in, plan->dialect);
	lasterr_init(&r->lasterr, plan->dialect);
	r->acp_stdin_fd = -1;
	r->acp_tree_fd = -1;
}

void agentrun_release(struct agentrun *r)
{
	if (!r)
		return;
	if (r->log)
		(void)fclose(r->log);
	if (r->events)
		(void)fclose(r->events);
	r->log = r->events = NULL;
	free(r->agent_session);
	free(r->last_text);
	r->agent_session = r->last_text = NULL;
	r->rd = redact_free(r->rd);
	sbuf_release(&r->line);
	sbuf_release(&r->evbuf);
	sbuf_release(&r->json);
	dialect_state_release(&r->dialect);
	dialect_state_release(&r->hooks_dialect);
	close_fdp(&r->acp_stdin_fd);
	close_fdp(&r->acp_tree_fd);
	if (r->acp) {
		acp_release(r->acp);
		free(r->acp);
		r->acp = NULL;
	}
	json_decref(r->acp_mcp_owned);
	r->acp_mcp_owned = NULL;
	if (r->hooks_listening && r->plan->hooks_socket)
		(void)unlink(r->plan->hooks_socket);
	r->hooks_listening = false;
	/* the rendered MCP servers may hold secrets: gone with the attempt
	 * (the next spawn renders them again) */
	if (r->plan && r->plan->mcp_cleanup)
		(void)unlink(r->plan->mcp_cleanup);
	for (size_t i = 0; r->plan && i < r->plan->mcp_cleanup_more.nr; i++)
		(void)unlink(r->plan->mcp_cleanup_more.v[i]);
}

static void last_error_into(const struct agentrun *r, char *buf, size_t size);

/* ---- files ---- */

json_t *agentrun_session_json(const struct agentrun *r, enum outcome out, const char *why,
			      const struct session_record *rec)
{
	const struct invocation_plan *plan = r->plan;
	json_t *s = json_object();
	char err[LASTERR_MAX + 64];

	json_obj_set(s, "kind", json_str_lossy("outcome"));
	json_obj_set(s, "outcome", json_str_lossy(outcome_to_string(out)));
	json_obj_set(s, "reason", json_str_lossy(why));
	json_obj_set(s, "exit_code", rec->exit_code >= 0 ? json_integer(rec->exit_code) : NULL);
	json_obj_set(s, "agent_exit_code", json_integer(r->agent_exit_code));
	json_obj_set(s, "agent_exit", json_str_lossy(r->exit_desc));
	last_error_into(r, err, sizeof(err));
	json_obj_set(s, "agent_error",
		     err[0] && out != OUTCOME_COMPLETED && out != OUTCOME_NO_CHANGES
			     ? json_str_lossy(err)
			     : NULL);
	json_obj_set(s, "adapter", json_str_lossy(rec->adapter));
	json_obj_set(s, "session_id", json_str_lossy(r->agent_session));
	json_obj_set(s, "run", json_str_lossy(rec->run));
	json_obj_set(s, "task", json_str_lossy(rec->task));
	json_obj_set(s, "attempt", rec->attempt > 0 ? json_integer(rec->attempt) : NULL);
	json_obj_set(s, "session", json_str_lossy(rec->session));
	json_obj_set(s, "session_dir", json_str_lossy(plan ? plan->session_dir : NULL));
	json_obj_set(s, "state_dir", json_str_lossy(plan ? plan->state_dir : NULL));
	json_obj_set(s, "resume_id", json_str_lossy(plan ? plan->resume_id : NULL));
	json_obj_set(s, "worktree_changed",
		     r->in.changes_known ? json_boolean(r->in.worktree_changed) : NULL);
	json_obj_set(s, "started_at", json_str_lossy(rec->started_at));
	json_obj_set(s, "ended_at", json_str_lossy(rec->ended_at));
	return s;
}

int agentrun_write_json(const char *path, const json_t *o)
{
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	size_t n;
	int r;

	if (!s)
		return -ENOMEM;
	n = strlen(s);
	s = xrealloc(s, n + 2);
	s[n] = '\n';
	s[n + 1] = '\0';
	r = atomic_replace_file(path, s, n + 1, 0600);
	free(s);
	return r;
}

/* A FIFO or a symlink planted where a log goes is refused, not written. */
static FILE *open_append(const char *path)
{
	int fd = open_regular(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "ae");
	if (!f)
		(void)close(fd);
	return f;
}

/* plan's login files: each that exists as a regular file in the user's
 * HOME appears at its place in the agent's private HOME as a symlink to it,
 * so that a token the CLI refreshes in place reaches the user's file; a
 * place the agent already filled is left as it is (it runs as the user
 * here: nothing is kept from it). */
/* Each login file the user has appears in the agent's private HOME (never
 * through a symlink the agent planted there on an earlier attempt). */
static int link_logins(const struct invocation_plan *plan, struct diag *reterr)
{
	size_t n = plan->state_dir ? strlen(plan->state_dir) : 0;
	struct stat st;
	size_t i;
	int r;

	for (i = 0; !plan->login_by_sandbox && i < plan->login_src.nr && i < plan->login_dst.nr;
	     i++) {
		const char *src = plan->login_src.v[i], *dst = plan->login_dst.v[i];

		if (stat(src, &st) < 0 || !S_ISREG(st.st_mode))
			continue; /* not logged in that way */
		if (!n || strncmp(dst, plan->state_dir, n) != 0 || dst[n] != '/')
			continue; /* not in its HOME: nothing to make */
		r = beneath_symlink(plan->state_dir, dst + n + 1, src, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_side_files(const struct invocation_plan *plan, struct diag *reterr)
{
	size_t i;
	int r;

	r = mkdir_p(plan->session_dir, 0700);
	if (r < 0) {
		diag_set(reterr, plan->session_dir, 0, 0, "cannot create directory: %s",
			 strerror(-r));
		return r;
	}
	if (plan->state_dir) {
		r = mkdir_p(plan->state_dir, 0700);
		if (r < 0) {
			diag_set(reterr, plan->state_dir, 0, 0, "cannot create directory: %s",
				 strerror(-r));
			return r;
		}
	}
	for (i = 0; i < plan->n_files; i++) {
		const struct invocation_file *f = &plan->files[i];
		const char *base =
			f->base == INVOCATION_BASE_STATE ? plan->state_dir : plan->session_dir;
		if (!base) {
			diag_set(reterr, f->path, 0, 0, "side file has no directory");
			return -EINVAL;
		}
		/* never through a symlink: the agent controls its HOME between
		 * attempts, and a planted .codex -> elsewhere must not make
		 * bernstein write there */
		r = beneath_replace(base, f->path, f->content, f->len, f->mode, reterr);
		if (r < 0)
			return r;
	}
	return link_logins(plan, reterr);
}

int agentrun_open(struct agentrun *r, const json_t *plan_json, struct diag *reterr)
{
	const struct invocation_plan *plan = r->plan;
	char *path;
	int ret;

	ret = write_side_files(plan, reterr);
	if (ret < 0)
		return ret;
	if (plan_json) {
		path = agentrun_path(plan->session_dir, "plan.json");
		ret = agentrun_write_json(path, plan_json);
		if (ret < 0) {
			diag_set(reterr, path, 0, 0, "cannot write: %s", strerror(-ret));
			free(path);
			return ret;
		}
		free(path);
	}
	path = agentrun_path(plan->session_dir, "agent.log");
	r->log = open_append(path);
	if (!r->log) {
		ret = -errno;
		diag_set(reterr, path, 0, 0, "cannot open: %s", strerror(-ret));
		free(path);
		return ret;
	}
	free(path);
	path = agentrun_path(plan->session_dir, "events.jsonl");
	r->events = open_append(path);
	if (!r->events) {
		ret = -errno;
		diag_set(reterr, path, 0, 0, "cannot open: %s", strerror(-ret));
		free(path);
		(void)fclose(r->log);
		r->log = NULL;
		return ret;
	}
	free(path);
	return 0;
}

/* ---- the acp channel ---- */

/* write() without SIGPIPE: an agent that closed its stdin gives EPIPE. */
static ssize_t write_nosigpipe(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old;
	ssize_t n;
	int e;

	(void)sigemptyset(&pipe_set);
	(void)sigaddset(&pipe_set, SIGPIPE);
	(void)sigprocmask(SIG_BLOCK, &pipe_set, &old);
	n = write(fd, buf, len);
	e = errno;
	if (n < 0 && e == EPIPE && !sigismember(&old, SIGPIPE)) {
		const struct timespec zero = {0, 0};

		(void)sigtimedwait(&pipe_set, NULL, &zero);
	}
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return n;
}

/* Write what the engine queued to the agent's stdin; the supervisor's loop
 * waits meanwhile, for at most ~2 s of a full pipe (an agent that reads
 * nothing keeps the rest for the next call). Once the turn is over and all
 * is written, the agent's stdin is closed: ACP agents exit on EOF. */
static void acp_flush(struct agentrun *r)
{
	int waits = 0;

	while (r->acp_stdin_fd >= 0) {
		size_t len;
		const char *p = acp_pending(r->acp, &len);
		ssize_t n;

		if (!len)
			break;
		n = write_nosigpipe(r->acp_stdin_fd, p, len);
		if (n > 0) {
			acp_consume(r->acp, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && waits++ < 20) {
			struct pollfd pfd = {.fd = r->acp_stdin_fd, .events = POLLOUT};

			(void)poll(&pfd, 1, 100);
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return;
		/* EPIPE: the agent is gone or closed its stdin */
		acp_consume(r->acp, len);
		close_fdp(&r->acp_stdin_fd);
		return;
	}
	if (r->acp_stdin_fd >= 0 && acp_finished(r->acp)) {
		size_t len;

		(void)acp_pending(r->acp, &len);
		if (!len)
			close_fdp(&r->acp_stdin_fd);
	}
}

static int acp_setup(struct agentrun *r, struct proc_spec *spec, struct diag *reterr)
{
	const struct invocation_plan *plan = r->plan;
	struct acp_opts o = {0};
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0) {
		int e = -errno;

		diag_set(reterr, NULL, 0, 0, "cannot make the agent's stdin pipe: %s",
			 strerror(-e));
		return e;
	}
	/* room for a file read for the agent without waiting on it */
	(void)fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
	(void)fcntl(fds[1], F_SETFL, O_NONBLOCK);
	close_fdp(&spec->stdin_fd);
	spec->stdin_fd = fds[0];
	r->acp_stdin_fd = fds[1];
	r->acp_tree_fd = open(plan->cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->acp_tree_fd < 0) {
		int e = -errno;

		diag_set(reterr, plan->cwd, 0, 0, "cannot open the task's tree: %s", strerror(-e));
		return e;
	}
	o.cwd = plan->cwd;
	o.tree_fd = r->acp_tree_fd;
	o.dangerous = plan->acp_allow_all;
	o.prompt = plan->acp_prompt ? plan->acp_prompt : "";
	o.resume_id = plan->resume_id;
	/* the task's MCP servers (invocation.h: mcp_acp holds secrets, never
	 * logged), else what the caller set */
	if (plan->mcp_acp && !r->acp_mcp_owned)
		r->acp_mcp_owned = json_loads(plan->mcp_acp, 0, NULL);
	o.mcp_servers = r->acp_mcp_owned ? r->acp_mcp_owned : r->acp_mcp_servers;
	r->acp = xmalloc(sizeof(*r->acp));
	acp_init(r->acp, &o);
	(void)acp_start(r->acp);
	acp_flush(r);
	return 0;
}

uint64_t agentrun_stop(struct agentrun *r)
{
	if (!r->acp || r->acp_stdin_fd < 0 || acp_cancel(r->acp) <= 0)
		return 0;
	agentrun_warning(
		r, "session/cancel sent to the agent: SIGTERM follows unless its turn ends first");
	acp_flush(r);
	return AGENTRUN_ACP_CANCEL_MS;
}

/* runtime.pty: the terminal, the prompt to type (the plan's prompt file) and
 * how permission prompts are answered: allowed when the task runs in
 * dangerous mode (the agent may act without asking), else denied. */
static void fill_pty(const struct invocation_plan *plan, struct proc_spec *spec)
{
	size_t i;

	spec->pty = plan->pty_conf;
	spec->pty_prompt = "";
	for (i = 0; i < plan->n_files; i++)
		if (plan->files[i].base == INVOCATION_BASE_SESSION &&
		    strcmp(plan->files[i].path, INVOCATION_PROMPT_FILE) == 0)
			spec->pty_prompt = plan->files[i].content;
	spec->pty_allow = plan->dangerous;
}

int agentrun_fill_spec(struct agentrun *r, struct proc_spec *spec, struct diag *reterr)
{
	const struct invocation_plan *plan = r->plan;
	int fd;

	strvec_pushv(&spec->argv, plan->argv.v);
	strvec_pushv(&spec->env, plan->env.v);
	spec->cwd = plan->cwd;
	if (plan->stdin_path) {
		fd = open_regular(plan->stdin_path, O_RDONLY, 0);
		if (fd < 0) {
			int e = fd;

			diag_set(reterr, plan->stdin_path, 0, 0, "cannot open: %s",
				 file_strerror(e));
			return e;
		}
		spec->stdin_fd = fd;
	}
	if (plan->hooks && plan->hooks_socket) {
		int e = usock_listen(plan->hooks_socket, &spec->listen_fd, reterr);

		if (e < 0)
			return e;
		r->hooks_listening = true;
	}
	if (plan->dialect == DIALECT_ACP) {
		int e = acp_setup(r, spec, reterr);

		if (e < 0)
			return e;
	}
	spec->timeout_ms = r->timeout_ms;
	spec->idle_timeout_ms = r->idle_timeout_ms;
	spec->kill_grace_ms = r->kill_grace_ms;
	spec->init_exe = r->init_exe;
	if (plan->pty && plan->pty_conf)
		fill_pty(plan, spec);
	return 0;
}

/* ---- events ---- */

static void note_event(struct agentrun *r, const struct event *ev)
{
	const char *msg = NULL;

	(void)snprintf(r->last_kind, sizeof(r->last_kind), "%s", event_kind_to_string(ev->kind));
	if (ev->kind == EVENT_SESSION_STARTED && ev->session_id && !r->agent_session)
		r->agent_session = xstrdup(ev->session_id);
	if (ev->kind == EVENT_USAGE) {
		if (ev->input_tokens != EVENT_UNSET)
			r->input_tokens = ev->input_tokens;
		if (ev->output_tokens != EVENT_UNSET)
			r->output_tokens = ev->output_tokens;
		if (ev->cost_usd >= 0)
			r->cost_usd = ev->cost_usd;
		if (ev->cached_tokens != EVENT_UNSET)
			r->cached_tokens = ev->cached_tokens;
	}
	if (ev->kind == EVENT_SESSION_STARTED && ev->model && ev->model[0] && !r->model[0])
		(void)snprintf(r->model, sizeof(r->model), "%s", ev->model);
	if ((ev->kind == EVENT_TEXT && !ev->delta) || ev->kind == EVENT_RESULT)
		msg = ev->text;
	if ((ev->kind == EVENT_ERROR || ev->kind == EVENT_RESULT) && !msg)
		msg = ev->message;
	if (msg && *msg) {
		free(r->last_text);
		r->last_text = xstrndup(msg, strnlen(msg, LAST_TEXT_MAX));
	}
}

static void emit(void *userdata, const struct event *raw_ev)
{
	struct agentrun *r = userdata;
	struct event red;
	const struct event *ev = raw_ev;

	/* the decoded strings: a secret the line spelt with other escapes, or
	 * in pieces the dialect joined, is whole here */
	if (r->rd) {
		if (event_redact(raw_ev, r->rd, &r->evbuf, &red) < 0)
			return;
		ev = &red;
	}
	outcome_observe(&r->in, ev);
	note_event(r, ev);
	lasterr_observe(&r->lasterr, ev);
	sbuf_reset(&r->json);
	if (event_to_json(ev, clock_system()->now_ns(clock_system()), &r->json) < 0)
		return;
	if (r->events && !r->events_error &&
	    (fwrite(r->json.buf, 1, r->json.len, r->events) != r->json.len ||
	     fflush(r->events) != 0)) {
		int e = errno;

		r->events_error = true;
		if (r->hooks.on_write_error)
			r->hooks.on_write_error(r->hooks.userdata, "events.jsonl", e);
	}
	if (r->hooks.on_event)
		r->hooks.on_event(r->hooks.userdata, ev, r->json.buf, r->json.len);
}

void agentrun_warning(struct agentrun *r, const char *msg)
{
	struct event ev;

	event_init(&ev, EVENT_WARNING);
	ev.dialect = AGENTRUN_DIALECT;
	ev.message = msg;
	emit(r, &ev);
}

void agentrun_plan_warnings(struct agentrun *r)
{
	size_t i;

	for (i = 0; i < r->plan->warnings.nr; i++)
		agentrun_warning(r, r->plan->warnings.v[i]);
}

static void log_line(struct agentrun *r, const char *line, size_t len)
{
	if (!r->log || r->log_capped)
		return;
	if (r->log_bytes + len + 1 > AGENTRUN_LOG_MAX) {
		r->log_capped = true;
		agentrun_warning(r,
				 "agent.log reached its cap; the rest of the output is not logged");
		return;
	}
	(void)fwrite(line, 1, len, r->log);
	(void)fputc('\n', r->log);
	r->log_bytes += len + 1;
}

static const char *redact(struct agentrun *r, const char *line, size_t len, unsigned flags,
			  size_t *ret_len)
{
	if (!r->rd) {
		*ret_len = len;
		return line;
	}
	sbuf_reset(&r->line);
	if (redact_apply(r->rd, line, len, flags, &r->line) < 0) {
		*ret_len = 0;
		return "";
	}
	*ret_len = r->line.len;
	return r->line.buf;
}

void agentrun_line(struct agentrun *r, int stream, const char *line, size_t len)
{
	const struct event_sink sink = {.emit = emit, .userdata = r};
	const char *l;
	size_t n;

	l = redact(r, line, len, 0, &n);
	if (stream == PROC_STREAM_SOCKET) {
		/* a hook's payload: its own reader, not the agent's log */
		diag_clear(&r->parse);
		if (dialect_feed_line(&r->hooks_dialect, l, n, &sink, &r->parse) < 0 &&
		    r->hooks.on_parse_error)
			r->hooks.on_parse_error(r->hooks.userdata, &r->parse);
		return;
	}
	log_line(r, l, n);
	if (stream == 2) {
		if (r->hooks.on_stderr)
			r->hooks.on_stderr(r->hooks.userdata, l, n);
		(void)dialect_feed_stderr(&r->dialect, l, n, &sink);
		lasterr_stderr(&r->lasterr, l, n);
		return;
	}
	diag_clear(&r->parse);
	if (r->acp) {
		if (acp_feed_line(r->acp, l, n, &sink, &r->parse) < 0 && r->hooks.on_parse_error)
			r->hooks.on_parse_error(r->hooks.userdata, &r->parse);
		acp_flush(r);
		return;
	}
	if (dialect_feed_line(&r->dialect, l, n, &sink, &r->parse) < 0 && r->hooks.on_parse_error)
		r->hooks.on_parse_error(r->hooks.userdata, &r->parse);
}

void agentrun_oversized(struct agentrun *r, int stream, const char *head, size_t head_len,
			uint64_t total)
{
	const struct event_sink sink = {.emit = emit, .userdata = r};
	const char *l;
	size_t n;

	/* the rest of the line is never seen: a tail that could start a secret goes too */
	l = redact(r, head, head_len, REDACT_CUT, &n);
	if (stream == PROC_STREAM_SOCKET) {
		(void)dialect_feed_oversized(&r->hooks_dialect, 1, l, n, total, &sink);
		return;
	}
	log_line(r, l, n);
	(void)dialect_feed_oversized(&r->dialect, stream, l, n, total, &sink);
	if (r->acp && stream == 1) {
		/* a frame the engine cannot read: the agent would wait for an answer */
		acp_frame_too_long(r->acp, total, &sink);
		acp_flush(r);
	}
}

void agentrun_notice(struct agentrun *r, enum proc_notice notice, uint64_t value)
{
	char msg[128];

	switch (notice) {
	case PROC_NOTICE_TIMEOUT:
		(void)snprintf(msg, sizeof(msg),
			       "timed out after %" PRIu64
			       " ms: SIGTERM to the agent's process group",
			       value);
		agentrun_warning(r, msg);
		break;
	case PROC_NOTICE_STALLED:
		(void)snprintf(msg, sizeof(msg),
			       "stalled: nothing printed for %" PRIu64
			       " ms (idle_timeout): SIGTERM to the agent's process group",
			       value);
		agentrun_warning(r, msg);
		break;
	case PROC_NOTICE_KILL:
		(void)snprintf(msg, sizeof(msg),
			       "still running %" PRIu64 " ms after SIGTERM: SIGKILL to the group",
			       value);
		agentrun_warning(r, msg);
		break;
	case PROC_NOTICE_LOG_CAPPED:
	case PROC_NOTICE_LOG_ERROR:
	case _PROC_NOTICE_MAX:
	default:
		break;
	}
}

void agentrun_exit(struct agentrun *r, const struct proc *p)
{
	close_fdp(&r->acp_stdin_fd);
	outcome_set_exit(&r->in, p);
	(void)proc_describe_exit(p, r->exit_desc, sizeof(r->exit_desc));
	r->agent_exit_code = p->exit_code;
	r->agent_exited = true;
	if (r->log)
		(void)fflush(r->log);
}

void agentrun_binary_missing(struct agentrun *r)
{
	struct proc pr = PROC_INIT;
	int err = r->plan->binary_error ? -r->plan->binary_error : ENOENT;

	proc_set_start_failure(&pr, SHIM_STAGE_EXEC, err, NULL);
	agentrun_exit(r, &pr);
	proc_release(&pr);
}

void agentrun_set_changes(struct agentrun *r, bool changed)
{
	outcome_set_changes(&r->in, changed, r->expect_changes);
}

enum outcome agentrun_classify(struct agentrun *r, char *why, size_t why_size)
{
	if (!r->in.changes_known)
		r->in.expect_changes = r->expect_changes;
	return outcome_classify_why(&r->in, why, why_size);
}

static void last_error_into(const struct agentrun *r, char *buf, size_t size)
{
	char line[LASTERR_MAX + 64];
	struct sbuf red = SBUF_INIT(size - 1);

	(void)lasterr_text(&r->lasterr, line, sizeof(line));
	/* the collapsed line could join a secret's pieces again */
	if (r->rd && line[0] && redact_apply(r->rd, line, strlen(line), REDACT_CUT, &red) == 0)
		(void)snprintf(buf, size, "%s", red.buf);
	else if (r->rd && line[0])
		(void)snprintf(buf, size, "%s", "[REDACTED]");
	else
		(void)snprintf(buf, size, "%s", line);
	sbuf_release(&red);
}

const char *agentrun_last_error(struct agentrun *r)
{
	last_error_into(r, r->agent_error, sizeof(r->agent_error));
	return r->agent_error;
}

/* ---- the plan as JSON ---- */

/* Every string of a login file's JSON (or every line of one that is not
 * JSON) long enough to be a token: what the agent's output must never
 * carry into logs, events, state or the audit chain. */
static void add_login_values(struct redact *rd, json_t *v, int depth)
{
	void *it;
	size_t i;

	if (depth > 16)
		return;
	if (json_is_string(v) && json_string_length(v) >= LOGIN_SECRET_MIN)
		(void)redact_add(rd, json_string_value(v));
	for (it = json_object_iter(v); it; it = json_object_iter_next(v, it))
		add_login_values(rd, json_object_iter_value(it), depth + 1);
	for (i = 0; i < json_array_size(v); i++)
		add_login_values(rd, json_array_get(v, i), depth + 1);
}

static void add_login_secrets(struct redact *rd, const struct invocation_plan *plan)
{
	size_t i;

	for (i = 0; i < plan->login_src.nr; i++) {
		char *buf = NULL, *line, *nl;
		size_t len = 0;
		json_t *j;

		if (read_file_capped(plan->login_src.v[i], LOGIN_FILE_MAX, &buf, &len) < 0)
			continue;
		j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
		if (j) {
			add_login_values(rd, j, 0);
			json_decref(j);
		} else {
			for (line = buf; line; line = nl ? nl + 1 : NULL) {
				nl = strchr(line, '\n');
				if (nl)
					*nl = '\0';
				if (strlen(line) >= LOGIN_SECRET_MIN)
					(void)redact_add(rd, line);
			}
		}
		free(buf);
	}
}

struct redact *agentrun_redactor(const struct invocation_plan *plan)
{
	struct redact *rd;
	size_t i;

	if (plan->secrets.nr == 0 && plan->login_src.nr == 0)
		return NULL;
	rd = redact_new();
	for (i = 0; i < plan->secrets.nr; i++)
		(void)redact_add(rd, plan->secrets.v[i]);
	add_login_secrets(rd, plan);
	if (redact_count(rd) == 0)
		rd = redact_free(rd);
	return rd;
}

static json_t *strategy_json(const struct adapter_strategy *s)
{
	json_t *o = json_object();
	int a;

	for (a = 0; a < _AXIS_MAX; a++)
		json_obj_set(
			o, axis_name((enum axis)a),
			json_str_lossy(axis_to_string((enum axis)a, axis_get(s, (enum axis)a))));
	return o;
}

json_t *agentrun_plan_json(const struct profile *p, const struct invocation_plan *plan,
			   const char *run, const char *session)
{
	json_t *o = json_object(), *a, *files, *in;
	struct redact *rd = agentrun_redactor(plan);
	size_t i;

	json_obj_set(o, "adapter", json_str_lossy(p->name));
	json_obj_set(o, "shape", json_str_lossy(profile_shape_to_string(p->shape)));
	json_obj_set(o, "run", json_str_lossy(run));
	json_obj_set(o, "session", json_str_lossy(session));
	a = json_array();
	for (i = 0; i < plan->argv.nr; i++)
		(void)json_array_append_new(a, json_str_lossy(plan->argv.v[i]));
	json_obj_set(o, "argv", a);
	json_obj_set(o, "binary_found", json_boolean(plan->binary_found));
	a = json_array();
	for (i = 0; i < plan->env.nr; i++) {
		const char *eq = strchr(plan->env.v[i], '=');
		char *name = xstrndup(plan->env.v[i],
				      eq ? (size_t)(eq - plan->env.v[i]) : strlen(plan->env.v[i]));

		(void)json_array_append_new(a, json_str_lossy(name));
		free(name);
	}
	json_obj_set(o, "env", a);
	json_obj_set(o, "cwd", json_str_lossy(plan->cwd));
	if (plan->stdin_path) {
		in = json_object();
		json_obj_set(in, "path", json_str_lossy(plan->stdin_path));
		json_obj_set(in, "bytes", json_integer((json_int_t)plan->prompt_bytes));
		json_obj_set(o, "stdin", in);
	} else {
		json_obj_set(o, "stdin", json_null());
	}
	in = json_object();
	json_obj_set(in, "via", json_str_lossy(prompt_delivery_to_string(plan->prompt_via)));
	json_obj_set(in, "bytes", json_integer((json_int_t)plan->prompt_bytes));
	json_obj_set(in, "too_long_for_argv", json_boolean(plan->prompt_too_long));
	json_obj_set(o, "prompt", in);
	json_obj_set(o, "session_dir", json_str_lossy(plan->session_dir));
	json_obj_set(o, "state_dir", json_str_lossy(plan->state_dir));
	json_obj_set(o, "state_reused", json_boolean(plan->state_reused));
	files = json_array();
	for (i = 0; i < plan->n_files; i++) {
		const struct invocation_file *f = &plan->files[i];
		json_t *fo = json_object();
		char mode[8];

		(void)snprintf(mode, sizeof(mode), "%04o", f->mode);
		json_obj_set(fo, "base", json_str_lossy(invocation_base_to_string(f->base)));
		json_obj_set(fo, "path", json_str_lossy(f->path));
		json_obj_set(fo, "mode", json_str_lossy(mode));
		json_obj_set(fo, "bytes", json_integer((json_int_t)f->len));
		(void)json_array_append_new(files, fo);
	}
	json_obj_set(o, "files", files);
	json_obj_set(o, "warnings", json_strvec(&plan->warnings));
	json_obj_set(o, "strategy", strategy_json(&plan->strategy));
	json_obj_set(o, "dialect", json_str_lossy(dialect_to_string(plan->dialect)));
	json_obj_set(o, "resume_id", json_str_lossy(plan->resume_id));
	json_obj_set(o, "session_id", json_str_lossy(plan->session_id));
	json_obj_set(o, "model", json_str_lossy(plan->model));
	json_obj_set(o, "model_defaulted", json_boolean(plan->model_defaulted));
	json_obj_set(o, "hooks", json_boolean(plan->hooks));
	json_obj_set(o, "hooks_socket", json_str_lossy(plan->hooks_socket));
	json_obj_set(o, "endpoint", json_boolean(plan->endpoint));
	if (plan->n_mcp_servers) /* only then: older plans keep their shape */
		json_obj_set(o, "mcp_servers", json_integer((json_int_t)plan->n_mcp_servers));
	json_obj_set(o, "dangerous", json_boolean(plan->dangerous));
	(void)redact_json(rd, o); /* argv above all, and anything else */
	redact_free(rd);
	return o;
}

/* ---- finding an earlier session's state directory ---- */

char *agentrun_find_state_dir(const char *workdir, const char *adapter, const char *id)
{
	char *runs = agentrun_path(workdir, AGENTRUN_RUNS_DIR), *best = NULL, *best_at = NULL;
	DIR *d = opendir(runs);
	struct dirent *run;

	while (d && (run = readdir(d)) != NULL) {
		char *rundir;
		DIR *rd;
		struct dirent *ses;

		if (run->d_name[0] == '.')
			continue;
		rundir = agentrun_path(runs, run->d_name);
		rd = opendir(rundir);
		while (rd && (ses = readdir(rd)) != NULL) {
			char *sesdir, *file, *text = NULL;
			size_t len;
			json_t *j;
			const char *a, *sid, *state, *at;
			struct stat st;

			if (ses->d_name[0] == '.')
				continue;
			sesdir = agentrun_path(rundir, ses->d_name);
			file = agentrun_path(sesdir, "session.json");
			if (read_file_capped(file, SESSION_JSON_MAX, &text, &len) == 0 &&
			    (j = json_loadb(text, len, 0, NULL)) != NULL) {
				a = json_string_value(json_object_get(j, "adapter"));
				sid = json_string_value(json_object_get(j, "session_id"));
				state = json_string_value(json_object_get(j, "state_dir"));
				at = json_string_value(json_object_get(j, "ended_at"));
				if (a && sid && state && strcmp(a, adapter) == 0 &&
				    strcmp(sid, id) == 0 && stat(state, &st) == 0 &&
				    S_ISDIR(st.st_mode) &&
				    (!best || (at && best_at && strcmp(at, best_at) > 0))) {
					free(best);
					free(best_at);
					best = xstrdup(state);
					best_at = at ? xstrdup(at) : NULL;
				}
				json_decref(j);
			}
			free(text);
			free(file);
			free(sesdir);
		}
		if (rd)
			(void)closedir(rd);
		free(rundir);
	}
	if (d)
		(void)closedir(d);
	free(runs);
	free(best_at);
	return best;
}
