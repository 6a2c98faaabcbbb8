/* The control channel of a live run (see control.h, docs/runs.md). */
#include "orch/control.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "orch/agentrun.h"
#include "orch/plan.h"
#include "proc/usock.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/sbuf.h"
#include "util/xalloc.h"

#include "util/banned.h"

#define CONTROL_ACTOR	 "bernstein"
#define PARENT_WALK_MAX	 4096
#define STAT_MAX	 4096
#define TAG_LISTEN	 UINT64_MAX
#define TITLE_MAX	 200
#define PROMPT_MAX	 (CONTROL_LINE_MAX)
#define READS_PER_WAKEUP 8

static const char *const op_names[_CONTROL_OP_MAX] = {
	[CONTROL_PING] = "ping",     [CONTROL_CANCEL] = "cancel",     [CONTROL_STOP] = "stop",
	[CONTROL_RETRY] = "retry",   [CONTROL_ADD_TASK] = "add_task", [CONTROL_APPROVE] = "approve",
	[CONTROL_REJECT] = "reject",
};

const char *control_op_to_string(enum control_op op)
{
	return (int)op >= 0 && op < _CONTROL_OP_MAX ? op_names[op] : NULL;
}

enum control_op control_op_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _CONTROL_OP_MAX; i++)
		if (strcmp(op_names[i], s) == 0)
			return (enum control_op)i;
	return _CONTROL_OP_INVALID;
}

/* ---- requests ---- */

void control_request_init(struct control_request *r)
{
	memset(r, 0, sizeof(*r));
	r->op = _CONTROL_OP_INVALID;
}

static void strv_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void control_request_release(struct control_request *r)
{
	if (!r)
		return;
	strv_free(r->tasks, r->n_tasks);
	free(r->add.id);
	free(r->add.title);
	free(r->add.prompt);
	free(r->head);
	free(r->feedback);
	free(r->add.adapter);
	free(r->add.role);
	strv_free(r->add.depends_on, r->add.n_depends_on);
	control_request_init(r);
}

/* A string value without NUL bytes, valid UTF-8 (jansson checks), of at
 * most max bytes: a copy in *ret. */
static int get_string(const json_t *v, const char *what, size_t max, char **ret,
		      struct diag *reterr)
{
	size_t len;

	if (!json_is_string(v)) {
		diag_set(reterr, NULL, 0, 0, "%s: not a string", what);
		return -EBADMSG;
	}
	len = json_string_length(v);
	if (memchr(json_string_value(v), '\0', len)) {
		diag_set(reterr, NULL, 0, 0, "%s: holds a NUL byte", what);
		return -EBADMSG;
	}
	if (len == 0 || len > max) {
		diag_set(reterr, NULL, 0, 0, "%s: %s", what, len ? "too long" : "empty");
		return -EBADMSG;
	}
	*ret = xstrdup(json_string_value(v));
	return 0;
}

/* An array of 1..CONTROL_TASKS_MAX distinct task ids. */
static int get_ids(const json_t *v, const char *what, bool may_be_empty, char ***ret, size_t *ret_n,
		   struct diag *reterr)
{
	char **ids = NULL, name[64];
	size_t n, i, j;
	int r = 0;

	if (!json_is_array(v)) {
		diag_set(reterr, NULL, 0, 0, "%s: not an array", what);
		return -EBADMSG;
	}
	n = json_array_size(v);
	if ((n == 0 && !may_be_empty) || n > CONTROL_TASKS_MAX) {
		diag_set(reterr, NULL, 0, 0, "%s: %s (1 to %d task ids)", what,
			 n ? "too many" : "empty", CONTROL_TASKS_MAX);
		return -EBADMSG;
	}
	ids = xcalloc(n + 1, sizeof(*ids));
	for (i = 0; i < n; i++) {
		(void)snprintf(name, sizeof(name), "%s[%zu]", what, i);
		r = get_string(json_array_get(v, i), name, PLAN_ID_MAX, &ids[i], reterr);
		if (r < 0)
			break;
		if (!plan_id_valid(ids[i])) {
			diag_set(reterr, NULL, 0, 0, "%s: not a task id", name);
			r = -EBADMSG;
			i++;
			break;
		}
		for (j = 0; j < i; j++)
			if (strcmp(ids[j], ids[i]) == 0) {
				diag_set(reterr, NULL, 0, 0, "%s: '%s' given twice", name, ids[i]);
				r = -EBADMSG;
			}
		if (r < 0) {
			i++;
			break;
		}
	}
	if (r < 0) {
		strv_free(ids, i);
		return r;
	}
	*ret = ids;
	*ret_n = n;
	return 0;
}

static int get_bool(const json_t *v, const char *what, bool *ret, struct diag *reterr)
{
	if (!json_is_boolean(v)) {
		diag_set(reterr, NULL, 0, 0, "%s: not true or false", what);
		return -EBADMSG;
	}
	*ret = json_is_true(v);
	return 0;
}

/* Every key of o is one of keys (NULL-terminated). */
static int only_keys(const json_t *o, const char *where, const char *const *keys,
		     struct diag *reterr)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)(uintptr_t)o, k, v)
	{
		size_t i;
		bool known = false;

		(void)v;
		for (i = 0; keys[i] && !known; i++)
			known = strcmp(keys[i], k) == 0;
		if (!known) {
			diag_set(reterr, NULL, 0, 0, "%s: unknown key '%.64s'", where, k);
			return -EBADMSG;
		}
	}
	return 0;
}

static int parse_new_task(const json_t *o, struct control_new_task *t, struct diag *reterr)
{
	static const char *const keys[] = {"prompt", "title",	   "id", "adapter",
					   "role",   "depends_on", NULL};
	const json_t *v;
	int r;

	if (!json_is_object(o)) {
		diag_set(reterr, NULL, 0, 0, "task: not an object");
		return -EBADMSG;
	}
	r = only_keys(o, "task", keys, reterr);
	if (r < 0)
		return r;
	v = json_object_get(o, "prompt");
	if (!v) {
		diag_set(reterr, NULL, 0, 0, "task: no prompt");
		return -EBADMSG;
	}
	r = get_string(v, "task.prompt", PROMPT_MAX, &t->prompt, reterr);
	if (r >= 0 && (v = json_object_get(o, "title")))
		r = get_string(v, "task.title", TITLE_MAX, &t->title, reterr);
	if (r >= 0 && (v = json_object_get(o, "id"))) {
		r = get_string(v, "task.id", PLAN_ID_MAX, &t->id, reterr);
		if (r >= 0 && !plan_id_valid(t->id)) {
			diag_set(reterr, NULL, 0, 0, "task.id: not a task id");
			r = -EBADMSG;
		}
	}
	if (r >= 0 && (v = json_object_get(o, "adapter")))
		r = get_string(v, "task.adapter", 64, &t->adapter, reterr);
	if (r >= 0 && (v = json_object_get(o, "role")))
		r = get_string(v, "task.role", 64, &t->role, reterr);
	if (r >= 0 && (v = json_object_get(o, "depends_on")))
		r = get_ids(v, "task.depends_on", true, &t->depends_on, &t->n_depends_on, reterr);
	return r;
}

/* A commit id as git prints it: 40 or 64 lowercase hex digits. */
static bool is_commit_id(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return !s[n] && (n == 40 || n == 64);
}

/* approve: tasks, head (one task); reject: one task, feedback. */
static int parse_review(const json_t *o, struct control_request *req, struct diag *reterr)
{
	const json_t *v = json_object_get(o, "tasks");
	int r;

	if (!v) {
		diag_set(reterr, NULL, 0, 0, "tasks: missing");
		return -EBADMSG;
	}
	r = get_ids(v, "tasks", false, &req->tasks, &req->n_tasks, reterr);
	if (r < 0)
		return r;
	if (req->op == CONTROL_APPROVE) {
		if ((v = json_object_get(o, "allow_protected")) &&
		    (r = get_bool(v, "allow_protected", &req->allow_protected, reterr)) < 0)
			return r;
		if (!(v = json_object_get(o, "head")))
			return 0;
		r = get_string(v, "head", 64, &req->head, reterr);
		if (r >= 0 && (!is_commit_id(req->head) || req->n_tasks != 1)) {
			diag_set(reterr, NULL, 0, 0, "head: %s",
				 req->n_tasks != 1 ? "given for more than one task"
						   : "not a commit id");
			r = -EBADMSG;
		}
		return r;
	}
	if (req->n_tasks != 1) {
		diag_set(reterr, NULL, 0, 0, "tasks: reject takes one task");
		return -EBADMSG;
	}
	v = json_object_get(o, "feedback");
	if (!v) {
		diag_set(reterr, NULL, 0, 0, "feedback: missing");
		return -EBADMSG;
	}
	return get_string(v, "feedback", CONTROL_FEEDBACK_MAX, &req->feedback, reterr);
}

static int parse_object(const json_t *o, struct control_request *req, struct diag *reterr)
{
	static const char *const keys[_CONTROL_OP_MAX][5] = {
		[CONTROL_PING] = {"op", NULL},
		[CONTROL_CANCEL] = {"op", "tasks", NULL},
		[CONTROL_STOP] = {"op", "force", NULL},
		[CONTROL_RETRY] = {"op", "tasks", "fresh", NULL},
		[CONTROL_ADD_TASK] = {"op", "task", NULL},
		[CONTROL_APPROVE] = {"op", "tasks", "head", "allow_protected", NULL},
		[CONTROL_REJECT] = {"op", "tasks", "feedback", NULL},
	};
	const json_t *op = json_object_get(o, "op"), *v;
	int r;

	if (!json_is_string(op)) {
		diag_set(reterr, NULL, 0, 0, "op: %s", op ? "not a string" : "missing");
		return -EBADMSG;
	}
	req->op = control_op_from_string(json_string_value(op));
	if ((int)req->op < 0 || strlen(json_string_value(op)) != json_string_length(op)) {
		diag_set(reterr, NULL, 0, 0, "op: unknown operation '%.32s'",
			 json_string_value(op));
		return -EBADMSG;
	}
	r = only_keys(o, "request", keys[req->op], reterr);
	if (r < 0)
		return r;
	switch (req->op) {
	case CONTROL_CANCEL:
	case CONTROL_RETRY:
		v = json_object_get(o, "tasks");
		if (!v) {
			diag_set(reterr, NULL, 0, 0, "tasks: missing");
			return -EBADMSG;
		}
		r = get_ids(v, "tasks", false, &req->tasks, &req->n_tasks, reterr);
		if (r >= 0 && req->op == CONTROL_RETRY && (v = json_object_get(o, "fresh")))
			r = get_bool(v, "fresh", &req->fresh, reterr);
		return r;
	case CONTROL_STOP:
		if ((v = json_object_get(o, "force")))
			return get_bool(v, "force", &req->force, reterr);
		return 0;
	case CONTROL_ADD_TASK:
		v = json_object_get(o, "task");
		if (!v) {
			diag_set(reterr, NULL, 0, 0, "task: missing");
			return -EBADMSG;
		}
		return parse_new_task(v, &req->add, reterr);
	case CONTROL_APPROVE:
	case CONTROL_REJECT:
		return parse_review(o, req, reterr);
	case CONTROL_PING:
	case _CONTROL_OP_MAX:
	case _CONTROL_OP_INVALID:
	default:
		return 0;
	}
}

int control_request_parse(const char *line, size_t len, struct control_request *ret,
			  struct diag *reterr)
{
	struct control_request req;
	json_t *o = NULL;
	struct diag d;
	int r;

	if (len >= CONTROL_LINE_MAX) {
		diag_set(reterr, NULL, 0, 0, "request: longer than %zu bytes",
			 CONTROL_LINE_MAX - 1);
		return -EBADMSG;
	}
	if (memchr(line, '\0', len) || memchr(line, '\n', len)) {
		diag_set(reterr, NULL, 0, 0, "request: holds a %s byte",
			 memchr(line, '\0', len) ? "NUL" : "newline");
		return -EBADMSG;
	}
	diag_clear(&d);
	r = json_parse_strict("request", line, len, &o, &d);
	if (r < 0) {
		diag_set(reterr, NULL, 0, 0, "not one JSON value: %s", d.msg);
		return -EBADMSG;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		diag_set(reterr, NULL, 0, 0, "request: not a JSON object");
		return -EBADMSG;
	}
	control_request_init(&req);
	r = parse_object(o, &req, reterr);
	json_decref(o);
	if (r < 0) {
		control_request_release(&req);
		return r;
	}
	*ret = req;
	return 0;
}

static json_t *ids_json(char *const *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		(void)json_array_append_new(a, json_str_lossy(v[i]));
	return a;
}

/* The request as a JSON object (also the details of its record). */
static json_t *request_json(const struct control_request *r)
{
	json_t *o = json_object(), *t;

	json_obj_set(o, "op", json_str_lossy(control_op_to_string(r->op)));
	switch (r->op) {
	case CONTROL_CANCEL:
		json_obj_set(o, "tasks", ids_json(r->tasks, r->n_tasks));
		break;
	case CONTROL_RETRY:
		json_obj_set(o, "tasks", ids_json(r->tasks, r->n_tasks));
		json_obj_set(o, "fresh", json_boolean(r->fresh));
		break;
	case CONTROL_STOP:
		json_obj_set(o, "force", json_boolean(r->force));
		break;
	case CONTROL_ADD_TASK:
		t = json_object();
		json_obj_set(t, "prompt", json_str_lossy(r->add.prompt));
		if (r->add.title)
			json_obj_set(t, "title", json_str_lossy(r->add.title));
		if (r->add.id)
			json_obj_set(t, "id", json_str_lossy(r->add.id));
		if (r->add.adapter)
			json_obj_set(t, "adapter", json_str_lossy(r->add.adapter));
		if (r->add.role)
			json_obj_set(t, "role", json_str_lossy(r->add.role));
		if (r->add.n_depends_on)
			json_obj_set(t, "depends_on",
				     ids_json(r->add.depends_on, r->add.n_depends_on));
		json_obj_set(o, "task", t);
		break;
	case CONTROL_APPROVE:
		json_obj_set(o, "tasks", ids_json(r->tasks, r->n_tasks));
		if (r->head)
			json_obj_set(o, "head", json_str_lossy(r->head));
		if (r->allow_protected)
			json_obj_set(o, "allow_protected", json_true());
		break;
	case CONTROL_REJECT:
		json_obj_set(o, "tasks", ids_json(r->tasks, r->n_tasks));
		json_obj_set(o, "feedback", json_str_lossy(r->feedback));
		break;
	case CONTROL_PING:
	case _CONTROL_OP_MAX:
	case _CONTROL_OP_INVALID:
	default:
		break;
	}
	return o;
}

char *control_request_dump(const struct control_request *r)
{
	json_t *o = request_json(r);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref(o);
	if (!s)
		BUG("cannot serialise a control request");
	return s;
}

/* ---- who may ask ---- */

/* The parent of pid, from /proc/PID/stat (the field after the command,
 * which may hold spaces and parentheses: the last ')' ends it). */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[STAT_MAX];
	const char *p;
	ssize_t n;
	long pp;
	int fd;

	(void)snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %ld", &pp) != 1)
		return -1;
	return (pid_t)pp;
}

bool control_peer_allowed(const struct control_peer *peer, uid_t self_uid, pid_t self, char *why,
			  size_t size)
{
	pid_t p = peer->pid;
	unsigned i;

	if (peer->uid != self_uid && peer->uid != 0) {
		(void)snprintf(why, size, "uid %ld is not the run's user (uid %ld) or root",
			       (long)peer->uid, (long)self_uid);
		return false;
	}
	if (p <= 0) {
		(void)snprintf(why, size, "the peer's process is not visible here");
		return false;
	}
	for (i = 0; i < PARENT_WALK_MAX && p > 1; i++) {
		if (p == self) {
			(void)snprintf(
				why, size,
				"process %ld is one of the run's own (an agent, a gate or what they started)",
				(long)peer->pid);
			return false;
		}
		p = parent_of(p);
		if (p < 0) {
			(void)snprintf(why, size, "cannot tell where process %ld comes from",
				       (long)peer->pid);
			return false;
		}
	}
	if (p > 1) {
		(void)snprintf(why, size, "process %ld has too many ancestors", (long)peer->pid);
		return false;
	}
	why[0] = '\0';
	return true;
}

char *control_socket_path(const char *repo, const char *run_id)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);

	(void)sbuf_addf(&sb, "%s/%s/%s/%s", repo, AGENTRUN_RUNS_DIR, run_id, CONTROL_SOCKET);
	return sbuf_detach(&sb, NULL);
}

/* ---- the run's side ---- */

struct control_conn {
	int fd; /* -1: free */
	uint64_t seq;
	struct control_peer peer;
	struct sbuf buf;
	/* a peer that may not ask: refused (with this reason) once its line is
	 * read, so that it reads the reply rather than a reset */
	const char *refuse_kind;
	char refuse_why[256];
};

struct control {
	int listen_fd, epfd;
	char *path;
	char *run_id;
	struct audit_chain *chain;
	struct control_conn conns[CONTROL_CONNS_MAX];
	uint64_t seq;
	unsigned refusals;
	int error; /* a record that could not be written */
	struct diag error_d;
};

void control_reply_error(json_t *reply, const char *kind, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_obj_set(reply, "ok", json_false());
	json_obj_set(reply, "kind", json_str_lossy(kind));
	json_obj_set(reply, "error", json_str_lossy(msg));
}

static void record(struct control *c, const char *type, json_t *det)
{
	struct diag d;
	int r;

	if (!c->chain || c->error) {
		json_decref(det);
		return;
	}
	diag_clear(&d);
	r = audit_append(c->chain, type, CONTROL_ACTOR, "run", c->run_id, det, &d);
	json_decref(det);
	if (r < 0) {
		c->error = r;
		c->error_d = d;
	}
}

static json_t *who_json(const struct control_peer *p)
{
	json_t *o = json_object();

	json_obj_set(o, "uid", json_integer((json_int_t)p->uid));
	json_obj_set(o, "pid", json_integer((json_int_t)p->pid));
	return o;
}

static void refused(struct control *c, const struct control_peer *p, const char *reason)
{
	json_t *det;

	c->refusals++;
	if (c->refusals > CONTROL_REFUSALS_MAX + 1)
		return;
	det = json_object();
	json_obj_set(det, "run", json_str_lossy(c->run_id));
	json_obj_set(det, "who", who_json(p));
	json_obj_set(det, "reason",
		     json_str_lossy(c->refusals > CONTROL_REFUSALS_MAX
					    ? "more refusals, not recorded in this execution"
					    : reason));
	record(c, "control.refused", det);
}

static void reply_send(int fd, json_t *reply)
{
	char *s = json_dumps(reply, JSON_COMPACT | JSON_SORT_KEYS);
	struct sbuf sb = SBUF_INIT(CONTROL_REPLY_MAX);

	if (s && sbuf_addf(&sb, "%s\n", s) == 0)
		/* non-blocking: a peer that does not read loses its reply */
		(void)send(fd, sb.buf, sb.len, MSG_DONTWAIT | MSG_NOSIGNAL);
	free(s);
	sbuf_release(&sb);
}

static void conn_close(struct control *c, struct control_conn *k)
{
	if (k->fd >= 0) {
		char sink[4096];
		size_t left = CONTROL_LINE_MAX;
		ssize_t n;

		(void)epoll_ctl(c->epfd, EPOLL_CTL_DEL, k->fd, NULL);
		/* what the peer sent and we did not read (a request refused
		 * before it was read) would reset the connection at close, and
		 * its reply with it */
		while (left > 0 && (n = recv(k->fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
			left -= (size_t)n < left ? (size_t)n : left;
		(void)close(k->fd);
	}
	k->fd = -1;
	sbuf_release(&k->buf);
}

static void refuse_conn(struct control *c, struct control_conn *k, const char *kind,
			const char *reason)
{
	json_t *reply = json_object();

	json_obj_set(reply, "run", json_str_lossy(c->run_id));
	control_reply_error(reply, kind, "%s", reason);
	reply_send(k->fd, reply);
	json_decref(reply);
	refused(c, &k->peer, reason);
	conn_close(c, k);
}

/* One complete request line of k: parsed, recorded, carried out, replied. */
static void serve(struct control *c, struct control_conn *k, const char *line, size_t len,
		  control_handler_fn *fn, void *ctx)
{
	struct control_request req;
	json_t *reply, *det;
	struct diag d;
	char msg[sizeof(d.msg) + 32];

	if (k->refuse_kind) {
		refuse_conn(c, k, k->refuse_kind, k->refuse_why);
		return;
	}
	diag_clear(&d);
	if (control_request_parse(line, len, &req, &d) < 0) {
		(void)snprintf(msg, sizeof(msg), "bad request: %s", d.msg);
		refuse_conn(c, k, CONTROL_KIND_USAGE, msg);
		return;
	}
	if (req.op != CONTROL_PING) {
		det = request_json(&req);
		if (req.op == CONTROL_ADD_TASK) {
			/* the prompt is recorded with the task (state.db), not
			 * in the chain: its size stands for it here */
			json_t *t = json_object_get(det, "task");

			(void)json_object_del(t, "prompt");
			json_obj_set(t, "prompt_bytes",
				     json_integer((json_int_t)strlen(req.add.prompt)));
		}
		json_obj_set(det, "run", json_str_lossy(c->run_id));
		json_obj_set(det, "who", who_json(&k->peer));
		record(c, "control.request", det);
	}
	reply = json_object();
	json_obj_set(reply, "run", json_str_lossy(c->run_id));
	if (c->error)
		control_reply_error(reply, CONTROL_KIND_INTERNAL,
				    "the request cannot be recorded: %s", c->error_d.msg);
	else
		fn(ctx, &req, &k->peer, reply);
	if (!json_object_get(reply, "ok"))
		json_obj_set(reply, "ok", json_true());
	reply_send(k->fd, reply);
	json_decref(reply);
	control_request_release(&req);
	conn_close(c, k);
}

static void conn_read(struct control *c, struct control_conn *k, control_handler_fn *fn, void *ctx)
{
	char chunk[4096];
	int i;

	for (i = 0; i < READS_PER_WAKEUP && k->fd >= 0; i++) {
		ssize_t n = read(k->fd, chunk, sizeof(chunk));
		const char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			refuse_conn(
				c, k, k->refuse_kind ? k->refuse_kind : CONTROL_KIND_USAGE,
				k->refuse_kind
					? k->refuse_why
					: "bad request: the connection ended before a whole line");
			return;
		}
		if (sbuf_add(&k->buf, chunk, (size_t)n) < 0) {
			refuse_conn(c, k, k->refuse_kind ? k->refuse_kind : CONTROL_KIND_USAGE,
				    k->refuse_kind ? k->refuse_why
						   : "bad request: longer than 65535 bytes");
			return;
		}
		nl = memchr(k->buf.buf, '\n', k->buf.len);
		if (nl) {
			if ((size_t)(nl - k->buf.buf) + 1 != k->buf.len) {
				refuse_conn(c, k, CONTROL_KIND_USAGE,
					    "bad request: more than one line");
				return;
			}
			serve(c, k, k->buf.buf, (size_t)(nl - k->buf.buf), fn, ctx);
			return;
		}
	}
}

static struct control_conn *conn_slot(struct control *c)
{
	struct control_conn *oldest = NULL;
	unsigned i;

	for (i = 0; i < CONTROL_CONNS_MAX; i++) {
		if (c->conns[i].fd < 0)
			return &c->conns[i];
		if (!oldest || c->conns[i].seq < oldest->seq)
			oldest = &c->conns[i];
	}
	conn_close(c, oldest); /* a client that never finished its line */
	return oldest;
}

static void accept_all(struct control *c, control_handler_fn *fn, void *ctx)
{
	for (;;) {
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		struct epoll_event ev = {.events = EPOLLIN};
		struct control_conn *k;
		char why[256];
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		k = conn_slot(c);
		k->fd = fd;
		k->seq = c->seq++;
		sbuf_init(&k->buf, CONTROL_LINE_MAX);
		memset(&k->peer, 0, sizeof(k->peer));
		k->refuse_kind = NULL;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			k->peer.uid = (uid_t)-1;
			k->refuse_kind = CONTROL_KIND_REFUSED;
			(void)snprintf(k->refuse_why, sizeof(k->refuse_why), "%s",
				       "cannot read the peer's credentials");
		} else {
			k->peer.uid = cred.uid;
			k->peer.pid = cred.pid;
			if (!control_peer_allowed(&k->peer, geteuid(), getpid(), why,
						  sizeof(why))) {
				k->refuse_kind = CONTROL_KIND_REFUSED;
				(void)snprintf(k->refuse_why, sizeof(k->refuse_why), "%s", why);
			}
		}
		ev.data.u64 = (uint64_t)(k - c->conns);
		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			refuse_conn(c, k, CONTROL_KIND_INTERNAL, "cannot watch the connection");
			continue;
		}
		conn_read(c, k, fn, ctx); /* often all there already */
	}
}

int control_listen(const char *repo, const char *run_id, struct audit_chain *chain,
		   struct control **ret, struct diag *reterr)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_LISTEN};
	struct control *c = xcalloc(1, sizeof(*c));
	char dir[PATH_MAX];
	struct stat st;
	unsigned i;
	int r;

	c->listen_fd = -1;
	c->epfd = -1;
	for (i = 0; i < CONTROL_CONNS_MAX; i++)
		c->conns[i].fd = -1;
	c->path = control_socket_path(repo, run_id);
	c->run_id = xstrdup(run_id);
	c->chain = chain;
	path_dirname(c->path, dir, sizeof(dir));
	r = mkdir_p(dir, 0700);
	if (r < 0) {
		diag_set(reterr, dir, 0, 0, "cannot create: %s", strerror(-r));
		goto fail;
	}
	/* the directory is the socket's first fence: a real one, ours, 0700 */
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		r = -EPERM;
		diag_set(reterr, dir, 0, 0, "not a directory of this user's");
		goto fail;
	}
	if ((st.st_mode & 07777) != 0700 && chmod(dir, 0700) < 0) {
		r = -errno;
		diag_set(reterr, dir, 0, 0, "cannot make it 0700: %s", strerror(-r));
		goto fail;
	}
	r = usock_listen(c->path, &c->listen_fd, reterr);
	if (r < 0)
		goto fail;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0 || epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->listen_fd, &ev) < 0) {
		r = -errno;
		diag_set(reterr, c->path, 0, 0, "cannot watch the control socket: %s",
			 strerror(-r));
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	(void)control_close(c);
	return r;
}

int control_fd(const struct control *c)
{
	return c->epfd;
}

int control_poll(struct control *c, control_handler_fn *fn, void *ctx, struct diag *reterr)
{
	struct epoll_event evs[CONTROL_CONNS_MAX + 1];
	int n, i;

	n = epoll_wait(c->epfd, evs, CONTROL_CONNS_MAX + 1, 0);
	for (i = 0; i < n; i++) {
		if (evs[i].data.u64 == TAG_LISTEN)
			accept_all(c, fn, ctx);
		else if (evs[i].data.u64 < CONTROL_CONNS_MAX && c->conns[evs[i].data.u64].fd >= 0)
			conn_read(c, &c->conns[evs[i].data.u64], fn, ctx);
	}
	if (c->error) {
		if (reterr)
			*reterr = c->error_d;
		return c->error;
	}
	return 0;
}

struct control *control_close(struct control *c)
{
	unsigned i;

	if (!c)
		return NULL;
	for (i = 0; i < CONTROL_CONNS_MAX; i++)
		conn_close(c, &c->conns[i]);
	if (c->listen_fd >= 0) {
		(void)close(c->listen_fd);
		(void)unlink(c->path);
	}
	if (c->epfd >= 0)
		(void)close(c->epfd);
	free(c->path);
	free(c->run_id);
	free(c);
	return NULL;
}

/* ---- the client's side ---- */

int control_call(const char *path, const struct control_request *req, unsigned timeout_ms,
		 json_t **ret_reply, struct diag *reterr)
{
	struct sbuf in = SBUF_INIT(CONTROL_REPLY_MAX);
	char *line = control_request_dump(req), chunk[4096];
	json_t *reply = NULL;
	struct diag d;
	int fd = -1, r;

	diag_clear(&d);
	r = usock_connect(path, timeout_ms, &fd, &d);
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot connect: %s", strerror(-r));
		goto out;
	}
	r = usock_send_all(fd, line, strlen(line));
	if (r >= 0)
		r = usock_send_all(fd, "\n", 1);
	if (r < 0) {
		diag_set(reterr, path, 0, 0, "cannot send the request: %s", strerror(-r));
		goto out;
	}
	(void)shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
			diag_set(reterr, path, 0, 0, "no reply from the run: %s", strerror(-r));
			goto out;
		}
		if (n == 0)
			break;
		if (sbuf_add(&in, chunk, (size_t)n) < 0) {
			r = -EBADMSG;
			diag_set(reterr, path, 0, 0, "the run's reply is too long");
			goto out;
		}
	}
	if (in.len == 0 || in.buf[in.len - 1] != '\n' ||
	    json_parse_strict("reply", in.buf, in.len - 1, &reply, &d) < 0 ||
	    !json_is_object(reply)) {
		r = -EBADMSG;
		diag_set(reterr, path, 0, 0, "the run's reply is not one: %s",
			 in.len ? d.msg : "the connection ended (the run ended, or refused it)");
		goto out;
	}
	*ret_reply = reply;
	reply = NULL;
	r = 0;
out:
	json_decref(reply);
	if (fd >= 0)
		(void)close(fd);
	free(line);
	sbuf_release(&in);
	return r;
}
