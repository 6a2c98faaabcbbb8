/* Lifecycle hooks and notifications (issue #19): `hooks:` and `notify:` of
 * bernstein.yaml (docs/configuration.md, "Hooks" and "Notifications"), and
 * the JSON documents they carry (docs/runs.md, "Hooks").
 *
 *   hooks:
 *     pre_task: ./scripts/check-quota      a string: run by /bin/sh -c
 *     post_task: {run: "notify.sh", timeout: 30}
 *     pre_merge: make lint                 in the task's tree, like a gate
 *     post_merge: ...
 *     on_run_end: ...
 *   notify:
 *     webhook: https://hooks.example.com/T/SECRET   (or webhook_env: NAME)
 *     on: [task_failed, task_review, run_done]
 *     desktop: true
 *     timeout: 30                          seconds per notification, all tries
 *     retries: 3                           tries after the first
 *
 * The run loop's side is src/orch/run-hooks.c; the webhook is POSTed by the
 * bernstein-notify helper (src/cli/notify-main.c), never by this binary. */
#ifndef BERNSTEIN_ORCH_HOOKS_H
#define BERNSTEIN_ORCH_HOOKS_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/diag.h"
#include "util/sbuf.h"

struct arena;
struct ydoc;
struct ynode;

enum hook_kind {
	HOOK_PRE_TASK,	 /* "pre_task": before each attempt's agent (a failure fails the task) */
	HOOK_POST_TASK,	 /* "post_task": a task settled (done, failed, review, ...) */
	HOOK_PRE_MERGE,	 /* "pre_merge": after the gates, as the last gate */
	HOOK_POST_MERGE, /* "post_merge": the task's branch was merged */
	HOOK_ON_RUN_END, /* "on_run_end": nothing is left to run */
	_HOOK_KIND_MAX,
	_HOOK_KIND_INVALID = -EINVAL,
};

const char *hook_kind_to_string(enum hook_kind k);
enum hook_kind hook_kind_from_string(const char *s);

#define HOOK_DEFAULT_TIMEOUT_S	 600.0
#define NOTIFY_DEFAULT_TIMEOUT_S 30.0
#define NOTIFY_MAX_TIMEOUT_S	 600.0
#define NOTIFY_DEFAULT_RETRIES	 3
#define NOTIFY_MAX_RETRIES	 10

struct orch_hook {
	const char *run; /* NULL: not set */
	double timeout_s;
	unsigned line, col;
};

struct orch_hookset {
	struct orch_hook h[_HOOK_KIND_MAX];
};

enum notify_event {
	NOTIFY_TASK_FAILED,	/* "task_failed": a task ended failed (or conflict) */
	NOTIFY_TASK_REVIEW,	/* "task_review": a task waits for approve or reject */
	NOTIFY_TASK_DONE,	/* "task_done": a task is done */
	NOTIFY_RUN_DONE,	/* "run_done": the run's execution ended (any state) */
	NOTIFY_BUDGET_WARN,	/* "budget_warn": spending crossed budget.warn_at */
	NOTIFY_BUDGET_EXCEEDED, /* "budget_exceeded": the budget's cap was reached */
	_NOTIFY_EVENT_MAX,
	_NOTIFY_EVENT_INVALID = -EINVAL,
};

const char *notify_event_to_string(enum notify_event e);
enum notify_event notify_event_from_string(const char *s);

/* The events notified when `on:` is not given. */
#define NOTIFY_DEFAULT_ON                                                                          \
	((1u << NOTIFY_TASK_FAILED) | (1u << NOTIFY_TASK_REVIEW) | (1u << NOTIFY_RUN_DONE) |       \
	 (1u << NOTIFY_BUDGET_WARN) | (1u << NOTIFY_BUDGET_EXCEEDED))

struct orch_notify {
	const char *webhook; /* NULL: none; checked by url_webhook_check() */
	/* webhook_env: the NAME of a variable of bernstein's environment that
	 * holds the URL (read when a notification is sent; not with webhook) */
	const char *webhook_env;
	unsigned on;  /* bit (1 << enum notify_event) */
	bool desktop; /* notify-send, where it exists */
	double timeout_s;
	int retries;
	bool set; /* notify: was given */
};

/* hooks: {pre_task: CMD | {run: CMD, timeout: S}, ...} at n into *ret.
 * -EINVAL at the bad value (file:line:col, field path). */
int orch_get_hooks(const struct ydoc *doc, const struct ynode *n, const char *path,
		   struct orch_hookset *ret, struct diag *reterr);
/* notify: {webhook | webhook_env, on, desktop, timeout, retries} at n
 * into *ret. */
int orch_get_notify(const struct ydoc *doc, const struct ynode *n, const char *path,
		    struct orch_notify *ret, struct diag *reterr);
void orch_notify_init(struct orch_notify *n);

bool orch_hooks_any(const struct orch_hookset *h);
/* For `config show`: the hooks set ({NAME: {run, timeout}}), NULL none;
 * notify with the webhook as url_webhook_shown() prints it, NULL unset. */
json_t *orch_hooks_json(const struct orch_hookset *h);
json_t *orch_notify_json(const struct orch_notify *n);
/* Back from orch_hooks_json()/orch_notify_json() (a run's record of its
 * plan's hooks and notify, state.db runs.hooks): the strings point into o,
 * which must outlive *ret. A webhook (masked there) is never taken back:
 * a plan's notify has webhook_env only. -EBADMSG on a malformed object. */
int orch_hooks_from_json(const json_t *o, struct orch_hookset *ret);
int orch_notify_from_json(const json_t *o, struct orch_notify *ret);

/* The merge rule (docs/configuration.md, "Hooks"): each hook over sets
 * replaces dst's of the same name; the others of dst stay. */
void orch_hooks_merge(struct orch_hookset *dst, const struct orch_hookset *over);

/* The same as bernstein.yaml text (top-level keys, each on its own
 * line). 0 or -ENOBUFS. */
int orch_hooks_yaml(const struct orch_hookset *h, struct sbuf *out);
int orch_notify_yaml(const struct orch_notify *n, struct sbuf *out);
/* The same as one flow mapping ({pre_task: {run: ..., timeout: ...}}), for
 * a role's. */
int orch_hooks_flow_yaml(const struct orch_hookset *h, struct sbuf *out);
int orch_notify_flow_yaml(const struct orch_notify *n, struct sbuf *out);

#endif
