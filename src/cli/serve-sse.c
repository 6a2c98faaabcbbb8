/* serve-sse: the live streams of bernstein-serve (Server-Sent Events): a task's
 * events as its attempts write them, and a run's board (docs/api.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/serve-path.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/xalloc.h"
#include "cli/serve-internal.h"
#include "util/banned.h"

/* ---- the event stream (Server-Sent Events) ---- */

struct sse {
	char run[SERVE_ID_MAX + 1], task[SERVE_ID_MAX + 1];
	int64_t attempt;     /* whose events.jsonl is read; 0: none yet */
	bool fixed;	     /* ?attempt=N: that one only */
	bool follow;	     /* ?follow=0: what is there, then the end */
	off_t off;	     /* read up to here */
	struct sbuf out;     /* what is ready to send */
	size_t sent;	     /* of out */
	struct state *st;    /* opened on the first poll */
	int64_t state_at_ms; /* the last look at the task's state */
	int64_t last_send_ms;
	bool ended; /* the stream's end is in out */
};

static void sse_free(void *cls)
{
	struct sse *s = cls;

	sbuf_release(&s->out);
	(void)serve_db_close(s->st);
	free(s);
}

/* fsutil_lines()'s callback: the line as an event (a line SSE cannot carry,
 * a CR or a NUL, is left out), or an event saying it was skipped; false
 * when this much is to be sent first. */
static bool sse_line(void *ctx, const char *line, size_t len, off_t end)
{
	struct sse *s = ctx;

	if (line) {
		(void)serve_sse_event(&s->out, s->attempt, (long long)end, line, len);
	} else {
		(void)sbuf_addf(&s->out, "event: skipped\nid: %" PRId64 ":%lld\n", s->attempt,
				(long long)end);
		(void)sbuf_addf(&s->out, "data: {\"reason\":\"a line longer than %zu bytes\"}\n\n",
				SSE_LINE_MAX);
	}
	return s->out.len <= ((size_t)4 << 20);
}

/* Add the complete lines of the current attempt's events.jsonl as events;
 * with final, the last line without a newline too. */
static void sse_read(struct sse *s, bool final)
{
	struct task_row t = TASK_ROW_INIT;
	char *dir = NULL, *path = NULL;
	int fd = -1;

	task_row_init(&t);
	if (s->attempt < 1 || state_task_get(s->st, s->run, s->task, &t, NULL) < 0)
		goto out;
	dir = serve_attempt_dir(&t, s->attempt);
	if (!dir)
		goto out;
	path = xmalloc(strlen(dir) + sizeof("/events.jsonl"));
	(void)snprintf(path, strlen(dir) + sizeof("/events.jsonl"), "%s/events.jsonl", dir);
	fd = open_regular(path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd >= 0)
		(void)fsutil_lines(fd, &s->off, SSE_LINE_MAX, final, sse_line, s);
out:
	if (fd >= 0)
		(void)close(fd);
	free(path);
	free(dir);
	task_row_release(&t);
}

static bool task_settled(enum task_state st)
{
	switch (st) {
	case TASK_PENDING:
	case TASK_RUNNING:
	case TASK_COMPLETING:
	case TASK_MERGING:
	case TASK_REBASING:
	case TASK_RESOLVING:
		return false;
	default:
		return true;
	}
}

/* Look at the task: a new attempt moves the stream to it (the old one's
 * rest first); a settled task (or a run that is not live) ends the
 * stream. */
static void sse_poll_state(struct sse *s)
{
	struct task_row t = TASK_ROW_INIT;
	struct run_row run = RUN_ROW_INIT;
	bool end = false;

	task_row_init(&t);
	run_row_init(&run);
	if (state_task_get(s->st, s->run, s->task, &t, NULL) < 0 ||
	    state_run_get(s->st, s->run, &run, NULL) < 0) {
		end = true;
		goto out;
	}
	if (!s->fixed && t.attempts > s->attempt) {
		sse_read(s, true);
		s->attempt = t.attempts;
		s->off = 0;
		(void)sbuf_addf(&s->out, "event: attempt\ndata: {\"attempt\":%" PRId64 "}\n\n",
				s->attempt);
		sse_read(s, false);
	}
	if (task_settled(t.state) || (s->fixed && t.attempts > s->attempt) ||
	    run.state != RUN_RUNNING)
		end = true;
out:
	if (end) {
		sse_read(s, true);
		(void)sbuf_addf(&s->out, "event: end\ndata: {\"state\":\"%s\"}\n\n",
				task_state_to_string(t.state) ? task_state_to_string(t.state) : "");
		s->ended = true;
	}
	task_row_release(&t);
	run_row_release(&run);
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse *s = cls;
	size_t k;

	(void)pos;
	for (;;) {
		if (s->sent < s->out.len) {
			k = s->out.len - s->sent;
			if (k > max)
				k = max;
			memcpy(buf, s->out.buf + s->sent, k);
			s->sent += k;
			if (s->sent == s->out.len) {
				sbuf_reset(&s->out);
				s->sent = 0;
			}
			s->last_send_ms = serve_mono_ms();
			return (ssize_t)k;
		}
		if (s->ended || atomic_load(&serve_stopping))
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (!s->st) {
			if (serve_db_open(&s->st) < 0)
				return MHD_CONTENT_READER_END_WITH_ERROR;
			sse_poll_state(s);
			if (!s->follow && !s->ended) {
				sse_read(s, true);
				(void)sbuf_addf(&s->out, "event: end\ndata: {}\n\n");
				s->ended = true;
			}
			continue;
		}
		sse_read(s, false);
		if (s->out.len)
			continue;
		if (serve_mono_ms() - s->state_at_ms >= SSE_STATE_MS) {
			s->state_at_ms = serve_mono_ms();
			sse_poll_state(s);
			if (s->out.len || s->ended)
				continue;
		}
		if (serve_mono_ms() - s->last_send_ms >= SSE_KEEPALIVE_MS) {
			(void)sbuf_addf(&s->out, ": keep-alive\n\n");
			continue;
		}
		serve_sleep_ms(SSE_POLL_MS);
	}
}

static enum MHD_Result answer_stream(struct MHD_Connection *c, void *s,
				     MHD_ContentReaderCallback fn, MHD_ContentReaderFreeCallback fr)
{
	struct MHD_Response *resp =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, fn, s, fr);
	enum MHD_Result r;

	if (!resp) {
		fr(s);
		return MHD_NO;
	}
	(void)MHD_add_response_header(resp, "Content-Type", "text/event-stream");
	(void)MHD_add_response_header(resp, "Cache-Control", "no-store");
	(void)MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	r = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return r;
}

/* Last-Event-ID: ATTEMPT:OFFSET of an event this stream sent: go on from
 * there (that attempt, when the request names none). */
static bool resume_from(struct MHD_Connection *c, struct sse *s, int64_t attempts)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
	long long a, off;
	int used = 0;

	if (!h || sscanf(h, "%lld:%lld%n", &a, &off, &used) != 2 || h[used] || a < 1 ||
	    a > attempts || off < 0 || (s->fixed && a != s->attempt))
		return false;
	s->attempt = a;
	s->off = (off_t)off;
	return true;
}

enum MHD_Result serve_get_events(struct MHD_Connection *c, const char *run_id, const char *task_id)
{
	struct serve_lookup l;
	enum MHD_Result ans;
	const char *att = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "attempt");
	const char *fol = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");
	struct sse *s;

	if (serve_lookup(c, run_id, task_id, &l, &ans))
		goto out;
	s = xcalloc(1, sizeof(*s));
	s->out = (struct sbuf)SBUF_INIT(SIZE_MAX);
	(void)snprintf(s->run, sizeof(s->run), "%s", run_id);
	(void)snprintf(s->task, sizeof(s->task), "%s", task_id);
	s->follow = !(fol && strcmp(fol, "0") == 0);
	if (att) {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(att, &end, 10);
		if (errno || *end || v < 1 || v > l.task.attempts) {
			sse_free(s);
			ans = serve_answer_error(c, MHD_HTTP_NOT_FOUND, "not_found",
						 "no attempt '%s'", att);
			goto out;
		}
		s->attempt = v;
		s->fixed = true;
	} else if (l.task.attempts > 0) {
		s->attempt = l.task.attempts;
	}
	if (resume_from(c, s, l.task.attempts)) {
		/* a reconnecting client: on from the event it saw last */
	} else if (s->attempt)
		(void)sbuf_addf(&s->out, "event: attempt\ndata: {\"attempt\":%" PRId64 "}\n\n",
				s->attempt);
	s->last_send_ms = serve_mono_ms();
	ans = answer_stream(c, s, sse_reader, sse_free);
out:
	serve_lookup_release(&l);
	return ans;
}

/* The run's board: an event "tasks" with every task each time one
 * changes, until the run is no longer running. */
struct board {
	char run[SERVE_ID_MAX + 1];
	struct state *st;
	struct sbuf out;
	size_t sent;
	char last[SHA256_HEX_LEN + 1];
	int64_t last_send_ms;
	bool follow; /* ?follow=0: one snapshot, then the end */
	bool ended;
};

static void board_free(void *cls)
{
	struct board *b = cls;

	sbuf_release(&b->out);
	(void)serve_db_close(b->st);
	free(b);
}

static void board_poll(struct board *b)
{
	struct run_row run = RUN_ROW_INIT;
	json_t *o, *tasks;
	char *s, hex[SHA256_HEX_LEN + 1];
	int err;

	run_row_init(&run);
	if (!b->st && serve_db_open(&b->st) < 0) {
		b->ended = true;
		return;
	}
	if (state_run_get(b->st, b->run, &run, NULL) < 0) {
		b->ended = true;
		run_row_release(&run);
		return;
	}
	tasks = serve_tasks_array(b->st, b->run, &err);
	o = json_object();
	json_obj_set(o, "run", serve_run_json(&run));
	json_obj_set(o, "tasks", tasks);
	s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	if (s) {
		hash_sha256_hex(s, strlen(s), hex);
		if (strcmp(hex, b->last) != 0) {
			(void)sbuf_addf(&b->out, "event: tasks\ndata: %s\n\n", s);
			memcpy(b->last, hex, sizeof(hex));
		}
		free(s);
	}
	if (run.state != RUN_RUNNING || !b->follow) {
		(void)sbuf_addf(&b->out, "event: end\ndata: {\"state\":\"%s\"}\n\n",
				run_state_to_string(run.state));
		b->ended = true;
	}
	run_row_release(&run);
}

static ssize_t board_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct board *b = cls;
	size_t k;

	(void)pos;
	for (;;) {
		if (b->sent < b->out.len) {
			k = b->out.len - b->sent;
			if (k > max)
				k = max;
			memcpy(buf, b->out.buf + b->sent, k);
			b->sent += k;
			if (b->sent == b->out.len) {
				sbuf_reset(&b->out);
				b->sent = 0;
			}
			b->last_send_ms = serve_mono_ms();
			return (ssize_t)k;
		}
		if (b->ended || atomic_load(&serve_stopping))
			return MHD_CONTENT_READER_END_OF_STREAM;
		board_poll(b);
		if (b->out.len || b->ended)
			continue;
		if (serve_mono_ms() - b->last_send_ms >= SSE_KEEPALIVE_MS) {
			(void)sbuf_addf(&b->out, ": keep-alive\n\n");
			continue;
		}
		serve_sleep_ms(SSE_STATE_MS / 2);
	}
}

enum MHD_Result serve_get_board(struct MHD_Connection *c, const char *run_id)
{
	const char *fol = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");
	struct serve_lookup l;
	enum MHD_Result ans;
	struct board *b;

	if (serve_lookup(c, run_id, NULL, &l, &ans))
		goto out;
	b = xcalloc(1, sizeof(*b));
	b->out = (struct sbuf)SBUF_INIT(SIZE_MAX);
	(void)snprintf(b->run, sizeof(b->run), "%s", run_id);
	b->follow = !(fol && strcmp(fol, "0") == 0);
	b->last_send_ms = serve_mono_ms();
	ans = answer_stream(c, b, board_reader, board_free);
out:
	serve_lookup_release(&l);
	return ans;
}
