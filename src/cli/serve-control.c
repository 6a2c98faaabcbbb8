/* serve-control: the POST routes of bernstein-serve: the control channel of a live
 * run (orch/control.h), as `bernstein cancel` and its siblings speak it, or
 * for a run that is not live the CLI command run as a child (docs/api.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/serve.h"
#include "orch/control.h"
#include "proc/capture.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "cli/serve-internal.h"
#include "util/banned.h"

/* ---- POST: the control channel ---- */

static bool is_latest(struct state *st, const char *run_id)
{
	struct run_row latest = RUN_ROW_INIT;
	bool yes;

	run_row_init(&latest);
	yes = state_run_latest(st, &latest, NULL) == 0 && strcmp(latest.id, run_id) == 0;
	run_row_release(&latest);
	return yes;
}

/* The last line of out that is a JSON object with "ok" (a control reply),
 * *ret_after just past it; NULL when none is. */
static json_t *reply_line(const char *out, size_t len, const char **ret_after)
{
	const char *p = out, *end = out + len, *nl;
	json_t *found = NULL, *v;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		v = NULL;
		if (nl > p && *p == '{' &&
		    json_parse_strict("child", p, (size_t)(nl - p), &v, NULL) == 0 &&
		    json_is_object(v) && json_object_get(v, "ok")) {
			json_decref(found);
			found = v;
			*ret_after = nl < end ? nl + 1 : end;
		} else {
			json_decref(v);
		}
		if (nl == end)
			break;
	}
	return found;
}

/* req (retry, approve, reject, add_task) on the latest run, not live: as
 * the CLI does it, by `bernstein OP --json --detach ...`: the change made
 * in state.db under the run lock (audited as the CLI's, with that
 * process's uid and pid), then the run resumed in the background as
 * `bernstein resume --detach`, never here. The values come from the
 * parsed request, each glued to its option (--feedback=TEXT) or after
 * "--", so none becomes an option of its own. Its answer: the change's
 * reply (202, with "resumed", or its refusal with the status of its kind). */
static enum MHD_Result post_offline(struct MHD_Connection *c, const struct control_request *req)
{
	struct strvec a = STRVEC_INIT;
	struct proc_spec spec = PROC_SPEC_INIT;
	struct capture cap = {0};
	const char *after = NULL, *msg;
	char *errline = NULL;
	json_t *reply = NULL, *rest = NULL, *err = NULL;
	char why[512];
	enum MHD_Result ans;
	size_t i;

	switch (req->op) {
	case CONTROL_RETRY:
		strvec_push(&a, "retry");
		if (req->fresh)
			strvec_push(&a, "--fresh");
		break;
	case CONTROL_APPROVE:
		strvec_push(&a, "approve");
		if (req->allow_protected)
			strvec_push(&a, "--allow-protected");
		if (req->head)
			strvec_pushf(&a, "--head=%s", req->head);
		break;
	case CONTROL_REJECT:
		strvec_push(&a, "reject");
		if (req->feedback)
			strvec_pushf(&a, "--feedback=%s", req->feedback);
		break;
	default: /* add_task */
		strvec_push(&a, "add-task");
		if (req->add.prompt)
			strvec_pushf(&a, "--prompt=%s", req->add.prompt);
		if (req->add.title)
			strvec_pushf(&a, "--title=%s", req->add.title);
		if (req->add.id)
			strvec_pushf(&a, "--id=%s", req->add.id);
		if (req->add.adapter)
			strvec_pushf(&a, "--adapter=%s", req->add.adapter);
		if (req->add.role)
			strvec_pushf(&a, "--role=%s", req->add.role);
		for (i = 0; i < req->add.n_depends_on; i++)
			strvec_pushf(&a, "--depends-on=%s", req->add.depends_on[i]);
		break;
	}
	strvec_push(&a, "--json");
	strvec_push(&a, "--detach");
	if (req->n_tasks) {
		strvec_push(&a, "--");
		for (i = 0; i < req->n_tasks; i++)
			strvec_push(&a, req->tasks[i]);
	}
	if (serve_capture_child(a.v, true, &spec, &cap, why, sizeof(why)) < 0) {
		ans = serve_answer_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", why);
		goto out;
	}
	/* its changes and its reply, one line each; then resume --detach's
	 * object; an error on stderr */
	if (!cap.out_dropped)
		reply = reply_line(cap.out.buf, cap.out.len, &after);
	if (reply)
		rest = serve_child_json(after, cap.out.len - (size_t)(after - cap.out.buf));
	err = cap.err_dropped ? NULL : serve_child_json(cap.err.buf, cap.err.len);
	msg = json_string_value(json_object_get(json_object_get(err, "error"), "message"));
	if (!msg && cap.err.len) {
		/* a usage error is text: its first line */
		const char *e = cap.err.buf, *enl = memchr(e, '\n', cap.err.len);

		if (strncmp(e, "bernstein: ", 11) == 0)
			e += 11;
		errline = xstrndup(e, (size_t)((enl ? enl : cap.err.buf + cap.err.len) - e));
		msg = errline;
	}
	if (!reply) {
		/* refused before the run was asked: usage (2), or it could not be
		 * changed (the audit chain, I/O) */
		ans = serve_answer_error(c,
					 cap.exit_code == BEXIT_USAGE
						 ? MHD_HTTP_BAD_REQUEST
						 : MHD_HTTP_INTERNAL_SERVER_ERROR,
					 cap.exit_code == BEXIT_USAGE ? "usage" : "internal",
					 "bernstein %s: %s (exit %d)", a.v[0],
					 msg ? msg : "no reply", cap.exit_code);
		goto out;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		/* refused by the run's own checks: nothing changed, no resume;
		 * answered as the live run's refusal */
		(void)json_object_del(reply, "exit_code");
		ans = serve_answer_json(
			c, serve_kind_status(json_string_value(json_object_get(reply, "kind"))),
			json_incref(reply));
		goto out;
	}
	json_obj_set(reply, "exit_code", json_integer(cap.exit_code));
	json_obj_set(reply, "resumed",
		     json_boolean(cap.exit_code == 0 && json_object_get(rest, "pid")));
	if (json_object_get(rest, "pid")) {
		json_obj_set(reply, "pid", json_incref(json_object_get(rest, "pid")));
		json_obj_set(reply, "log", json_incref(json_object_get(rest, "log")));
	} else {
		json_obj_set(reply, "resume_error",
			     msg ? json_str_lossy(msg) : json_string("the resume did not start"));
	}
	ans = serve_answer_json(c, MHD_HTTP_ACCEPTED, json_incref(reply));
out:
	json_decref(reply);
	json_decref(rest);
	json_decref(err);
	free(errline);
	capture_release(&cap);
	proc_spec_release(&spec);
	strvec_clear(&a);
	return ans;
}

enum MHD_Result serve_post_control(struct MHD_Connection *c, const char *run_id,
				   const char *task_id, const char *op, const char *body,
				   size_t blen)
{
	struct serve_lookup l;
	struct control_request req;
	struct diag d;
	json_t *in = NULL, *msg = NULL, *reply = NULL;
	char *line = NULL, *sock = NULL;
	enum MHD_Result ans;
	int r;

	control_request_init(&req);
	if (serve_lookup(c, run_id, task_id, &l, &ans))
		goto out;
	diag_clear(&d);
	if (blen == 0)
		in = json_object();
	else if (json_parse_strict("body", body, blen, &in, &d) < 0 || !json_is_object(in)) {
		ans = serve_answer_error(c, MHD_HTTP_BAD_REQUEST, "usage",
					 "the body is not a JSON object%s%s", d.msg[0] ? ": " : "",
					 d.msg);
		goto out;
	}
	if (strcmp(op, "add_task") == 0) {
		msg = json_object();
		json_obj_set(msg, "task", json_incref(in));
	} else {
		if (json_object_get(in, "op") || json_object_get(in, "tasks")) {
			ans = serve_answer_error(c, MHD_HTTP_BAD_REQUEST, "usage",
						 "the body names no op and no tasks: the URL does");
			goto out;
		}
		msg = json_deep_copy(in);
		if (task_id) {
			json_t *a = json_array();

			(void)json_array_append_new(a, json_string(task_id));
			json_obj_set(msg, "tasks", a);
		}
	}
	json_obj_set(msg, "op", json_string(op));
	line = json_dumps(msg, JSON_COMPACT);
	diag_clear(&d);
	if (!line || control_request_parse(line, strlen(line), &req, &d) < 0) {
		ans = serve_answer_error(c, MHD_HTTP_BAD_REQUEST, "usage", "%s",
					 d.msg[0] ? d.msg : "not a request");
		goto out;
	}
	sock = control_socket_path(serve_srv.repo, run_id);
	diag_clear(&d);
	r = control_call(sock, &req, CONTROL_TIMEOUT_MS, &reply, &d);
	if ((r == -ENOENT || r == -ECONNREFUSED) && strcmp(op, "cancel") == 0 && task_id &&
	    is_latest(l.st, run_id)) {
		/* as `bernstein cancel`: a pending, blocked or interrupted task
		 * of a run that is not live is cancelled in state.db, under the
		 * run lock */
		const char *args[] = {"cancel", "--json", "--no-wait", task_id, NULL};

		ans = serve_answer_child_as(c, args, true);
		goto out;
	}
	if ((r == -ENOENT || r == -ECONNREFUSED) && req.op != CONTROL_STOP &&
	    req.op != CONTROL_CANCEL && is_latest(l.st, run_id)) {
		/* as `bernstein retry|approve|reject|add-task --detach` */
		ans = post_offline(c, &req);
		goto out;
	}
	if (r == -ENOENT || r == -ECONNREFUSED) {
		ans = serve_answer_error(c, MHD_HTTP_CONFLICT, "not_live",
					 req.op == CONTROL_STOP
						 ? "run '%s' is not live: nothing to stop"
						 : "run '%s' is not live and not the latest run",
					 run_id);
		goto out;
	}
	if (r < 0) {
		ans = serve_answer_error(c, MHD_HTTP_BAD_GATEWAY, "internal", "control channel: %s",
					 d.msg[0] ? d.msg : strerror(-r));
		goto out;
	}
	ans = serve_answer_json(
		c,
		json_is_true(json_object_get(reply, "ok"))
			? MHD_HTTP_OK
			: serve_kind_status(json_string_value(json_object_get(reply, "kind"))),
		json_incref(reply));
out:
	json_decref(reply);
	json_decref(msg);
	json_decref(in);
	free(line);
	free(sock);
	control_request_release(&req);
	serve_lookup_release(&l);
	return ans;
}
