/* supervise() with real processes (tests/helpers/fake-agent through the shim):
 * line framing, oversized lines, partial last lines, the log file and its cap,
 * timeouts escalating to SIGKILL for the whole group, exit mapping, 64
 * children at once, a large flood with flat memory, cancellation by signal,
 * orphan reaping, and the agent dying with a SIGKILLed supervisor. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* The end of a variadic argument list (a typed NULL). */
#define END ((const char *)NULL)

#include "proc/supervise.h"
#include "util/log.h"
#include "util/sbuf.h"
#include "util/strvec.h"
#include "util/xalloc.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static const char *fake_agent;
static const char *bernstein_exe; /* $BERNSTEIN: the init of SPAWN init tests */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The process is gone: reaped by us now, or dead (a zombie of someone
 * else counts as dead). */
static bool pid_gone(pid_t pid)
{
	char path[64], buf[512], *rp;
	FILE *f;

	if (waitpid(pid, NULL, WNOHANG) == pid)
		return true;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	(void)snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	buf[0] = '\0';
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	rp = strrchr(buf, ')');
	return rp && (rp[2] == 'Z' || rp[2] == 'X');
}

static bool wait_gone(pid_t pid, uint64_t ms)
{
	uint64_t end = mono_ms() + ms;

	while (!pid_gone(pid)) {
		if (mono_ms() > end)
			return false;
		sleep_ms(5);
	}
	return true;
}

static long vm_hwm_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* ---- a scripted task list ---- */

struct task {
	int id;
	struct strvec args; /* fake-agent directives */
	uint64_t timeout_ms, grace_ms;
	size_t max_line;
	uint64_t max_log_bytes;
	const char *log_path;
	const char *agent; /* default fake_agent */
	bool init;	   /* under bernstein's init (spec.init_exe) */
	/* results */
	bool started, exited;
	struct proc result;
	char *describe;
	struct sbuf out, err; /* delivered lines, each + "\n" */
	unsigned out_lines, err_lines;
	uint64_t oversized_total;
	size_t oversized_head;
	unsigned oversized;
	unsigned notices[_PROC_NOTICE_MAX];
	long grandchild;
	uint64_t t_start, t_exit;
};

struct run {
	struct task *tasks;
	size_t n, next;
	unsigned running, max_running;
	bool keep_lines;     /* store lines (off for floods) */
	int signal_on_start; /* raise this signal when a task starts */
	int signal_on_line;  /* raise these when a line "ready" arrives */
	int signal_on_line2;
	int fail_after; /* next_task returns -EIO after this many (0 = never) */
	/* task hold_index is not ready before hold_until (mono ms; 0 = never
	 * held): next_task says 0 and wake_in_ms says how long */
	uint64_t hold_until;
	size_t hold_index;
	unsigned wakes; /* wake_in_ms calls that said "later" */
	/* the tier every task gets; the tests that look at the pids an agent
	 * prints, or at the exact signal that ended it, use the process-group
	 * tier (in a PID namespace the agent's pids are not the host's, and its
	 * init ignores a SIGTERM it does not handle): test-contain.c tests the
	 * other tiers */
	enum contain_tier contain;
	/* the watched fd (ops.on_watch): a pipe written to when the task
	 * watch_on_start starts; on_watch cancels task watch_cancel (or
	 * interrupts the loop with watch_interrupt) */
	int watch_fds[2];
	size_t watch_on_start;
	size_t watch_cancel;
	bool watch_interrupt;
	bool watch_on_ready; /* on a line "ready" instead of the start */
	unsigned watched;
	int cancel_r[3]; /* supervise_cancel_task(): the task, again, a stranger */
};

static void task_init(struct task *t, int id)
{
	memset(t, 0, sizeof(*t));
	t->id = id;
	strvec_init(&t->args);
	sbuf_init(&t->out, SIZE_MAX);
	sbuf_init(&t->err, SIZE_MAX);
	t->result.pid = -1;
	t->grandchild = -1;
}

static void task_release(struct task *t)
{
	strvec_clear(&t->args);
	sbuf_release(&t->out);
	sbuf_release(&t->err);
	free(t->describe);
	free(t->result.path);
	free(t->result.start_error);
}

static void task_args(struct task *t, ...)
{
	const char *a;
	va_list ap;

	va_start(ap, t);
	while ((a = va_arg(ap, const char *)))
		strvec_push(&t->args, a);
	va_end(ap);
}

static const char *const base_env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};

static int next_task(void *ctx, struct proc_spec *spec, void **ret_task)
{
	struct run *r = ctx;
	struct task *t;

	if (r->fail_after && r->next >= (size_t)r->fail_after)
		return -EIO;
	if (r->next >= r->n)
		return 0;
	if (r->hold_until && r->next == r->hold_index && mono_ms() < r->hold_until)
		return 0;
	t = &r->tasks[r->next++];
	strvec_push(&spec->argv, t->agent ? t->agent : fake_agent);
	strvec_pushv(&spec->argv, t->args.v);
	strvec_pushv(&spec->env, base_env);
	spec->timeout_ms = t->timeout_ms;
	spec->kill_grace_ms = t->grace_ms;
	spec->max_line = t->max_line;
	spec->max_log_bytes = t->max_log_bytes;
	spec->log_path = t->log_path;
	spec->contain = r->contain;
	spec->init_exe = t->init ? bernstein_exe : NULL;
	*ret_task = t;
	return 1;
}

static void on_start(void *ctx, void *task, const struct proc *p)
{
	struct run *r = ctx;
	struct task *t = task;

	assert_true(p->pid > 0);
	assert_int_equal(p->state, PROC_RUNNING);
	t->started = true;
	t->t_start = mono_ms();
	r->running++;
	if (r->running > r->max_running)
		r->max_running = r->running;
	if (r->signal_on_start)
		raise(r->signal_on_start);
	if (r->watch_fds[1] > 0 && !r->watch_on_ready && t == &r->tasks[r->watch_on_start])
		assert_int_equal(write(r->watch_fds[1], "x", 1), 1);
}

static void on_watch(void *ctx, struct supervisor *sv)
{
	struct run *r = ctx;
	char c;
	int stranger;

	assert_int_equal(read(r->watch_fds[0], &c, 1), 1);
	r->watched++;
	if (r->watch_interrupt) {
		supervise_interrupt(sv);
		return;
	}
	r->cancel_r[0] = supervise_cancel_task(sv, &r->tasks[r->watch_cancel]);
	r->cancel_r[1] = supervise_cancel_task(sv, &r->tasks[r->watch_cancel]);
	r->cancel_r[2] = supervise_cancel_task(sv, &stranger);
}

static void on_line(void *ctx, void *task, int stream, const char *line, size_t len)
{
	struct run *r = ctx;
	struct task *t = task;

	assert_int_equal(line[len], '\0');
	if (stream == 1) {
		t->out_lines++;
		if (len > 12 && strncmp(line, "{\"type\":\"grandchild\"", 20) == 0)
			t->grandchild = strtol(strstr(line, "\"pid\":") + 6, NULL, 10);
		if (len == 5 && memcmp(line, "ready", 5) == 0) {
			if (r->signal_on_line)
				raise(r->signal_on_line);
			if (r->signal_on_line2)
				raise(r->signal_on_line2);
			if (r->watch_on_ready && r->watch_fds[1] > 0)
				assert_int_equal(write(r->watch_fds[1], "x", 1), 1);
		}
	} else {
		assert_int_equal(stream, 2);
		t->err_lines++;
	}
	if (r->keep_lines) {
		struct sbuf *sb = stream == 1 ? &t->out : &t->err;

		assert_int_equal(sbuf_add(sb, line, len), 0);
		assert_int_equal(sbuf_addc(sb, '\n'), 0);
	}
}

static void on_oversized(void *ctx, void *task, int stream, const char *head, size_t head_len,
			 uint64_t total)
{
	struct task *t = task;

	(void)ctx;
	assert_int_equal(stream, 1);
	assert_int_equal(head[head_len], '\0');
	t->oversized++;
	t->oversized_head = head_len;
	t->oversized_total = total;
	/* Keep order visible in the output: a marker line. */
	assert_int_equal(
		sbuf_addf(&t->out, "<oversized %zu/%llu>\n", head_len, (unsigned long long)total),
		0);
}

static void on_notice(void *ctx, void *task, enum proc_notice n, uint64_t value)
{
	struct task *t = task;

	(void)ctx;
	(void)value;
	assert_true(n < _PROC_NOTICE_MAX);
	t->notices[n]++;
}

static void on_exit_cb(void *ctx, void *task, const struct proc *p)
{
	struct run *r = ctx;
	struct task *t = task;
	char msg[512];

	assert_false(t->exited);
	assert_int_equal(p->state, PROC_EXITED);
	assert_true(p->out_fd < 0 && p->err_fd < 0);
	t->exited = true;
	t->t_exit = mono_ms();
	if (t->started)
		r->running--;
	t->result = *p;
	t->result.path = p->path ? xstrdup(p->path) : NULL;
	t->result.start_error = p->start_error ? xstrdup(p->start_error) : NULL;
	t->describe = xstrdup(proc_describe_exit(p, msg, sizeof(msg)));
}

static int64_t wake_in(void *ctx)
{
	struct run *r = ctx;
	uint64_t now = mono_ms();

	if (!r->hold_until || r->next != r->hold_index || r->next >= r->n)
		return -1;
	r->wakes++;
	return r->hold_until > now ? (int64_t)(r->hold_until - now) : 0;
}

static const struct supervisor_ops ops = {
	.next_task = next_task,
	.wake_in_ms = wake_in,
	.on_start = on_start,
	.on_line = on_line,
	.on_oversized = on_oversized,
	.on_notice = on_notice,
	.on_exit = on_exit_cb,
};

static int run_tasks(struct run *r, unsigned parallel, size_t chunk)
{
	struct supervisor_opts o = {.max_parallel = parallel, .read_chunk = chunk};
	struct diag d = {0};
	int ret = supervise_run(&ops, r, &o, &d);
	size_t i;

	for (i = 0; i < r->next; i++)
		assert_true(r->tasks[i].exited);
	return ret;
}

/* run_tasks() with the watched pipe and on_watch. */
static int run_watched(struct run *r, unsigned parallel)
{
	struct supervisor_ops wops = ops;
	struct supervisor_opts o = {.max_parallel = parallel};
	struct diag d = {0};
	int ret;

	wops.on_watch = on_watch;
	assert_int_equal(pipe2(r->watch_fds, O_CLOEXEC), 0);
	o.watch_fd = r->watch_fds[0];
	ret = supervise_run(&wops, r, &o, &d);
	(void)close(r->watch_fds[0]);
	(void)close(r->watch_fds[1]);
	r->watch_fds[0] = r->watch_fds[1] = -1;
	return ret;
}

static void release_run(struct run *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		task_release(&r->tasks[i]);
	free(r->tasks);
}

static struct run *new_run(struct run *r, size_t n)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->tasks = xcalloc(n, sizeof(*r->tasks));
	r->n = n;
	r->keep_lines = true;
	for (i = 0; i < n; i++)
		task_init(&r->tasks[i], (int)i);
	return r;
}

/* ---- tests ---- */

static void test_lines_and_streams(void **state)
{
	struct run r;
	struct task *t;

	(void)state;
	new_run(&r, 2);
	task_args(&r.tasks[0], "emit", "{\"a\":1}", "stderr", "warn one", "emit", "{\"b\":2}",
		  "emit-raw", "x\\ny\\n\\nz", END);
	task_args(&r.tasks[1], "partial-line", "no newline at the end", END);
	assert_int_equal(run_tasks(&r, 2, 0), 0);

	t = &r.tasks[0];
	assert_string_equal(t->out.buf, "{\"a\":1}\n{\"b\":2}\nx\ny\n\nz\n");
	assert_string_equal(t->err.buf, "warn one\n");
	assert_int_equal(t->result.exit_code, 0);
	assert_string_equal(t->describe, "exited with code 0");
	/* The partial last line is delivered at EOF. */
	assert_string_equal(r.tasks[1].out.buf, "no newline at the end\n");
	assert_int_equal(r.tasks[1].out_lines, 1);
	release_run(&r);
}

/* Lines split across reads of every size, including a NUL inside a line. */
static void test_framing_small_chunks(void **state)
{
	static const size_t chunks[] = {1, 2, 3, 7, 64};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct run r;

		new_run(&r, 1);
		task_args(&r.tasks[0], "emit", "first line", "emit-raw", "a\\x00b\\nsecond\\n",
			  "emit", "", "emit-raw", "\\r\\n", "partial-line", "end", END);
		assert_int_equal(run_tasks(&r, 1, chunks[i]), 0);
		assert_int_equal(r.tasks[0].out_lines, 6);
		assert_int_equal(r.tasks[0].out.len, 29);
		assert_memory_equal(r.tasks[0].out.buf, "first line\na\0b\nsecond\n\n\r\nend\n",
				    29);
		release_run(&r);
	}
}

static void test_oversized_line(void **state)
{
	char big[1001];
	size_t chunk;

	(void)state;
	memset(big, 'x', 1000);
	big[1000] = '\0';
	for (chunk = 16; chunk <= 65536; chunk *= 64) {
		struct run r;
		struct task *t;

		new_run(&r, 1);
		t = &r.tasks[0];
		t->max_line = 100;
		task_args(t, "emit", "before", "emit", big, "emit", "after", "partial-line", big,
			  END);
		assert_int_equal(run_tasks(&r, 1, chunk), 0);
		/* Not fatal: the following lines are framed; the partial
		 * oversized last line is reported at EOF too. */
		assert_string_equal(t->out.buf, "before\n<oversized 100/1000>\nafter\n"
						"<oversized 100/1000>\n");
		assert_int_equal(t->oversized, 2);
		assert_int_equal(t->result.exit_code, 0);
		release_run(&r);
	}
}

static char *read_whole(const char *path)
{
	FILE *f = fopen(path, "re");
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	char buf[4096];
	size_t n;

	assert_non_null(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		assert_int_equal(sbuf_add(&sb, buf, n), 0);
	fclose(f);
	return sbuf_detach(&sb, NULL);
}

static void test_log_file(void **state)
{
	char dir[] = "/tmp/bernstein-log.XXXXXX", path[128], big[301];
	struct stat st;
	struct run r;
	char *text;

	(void)state;
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/runs/r1/s1/agent.log", dir);
	memset(big, 'y', 300);
	big[300] = '\0';

	/* The log holds the framed lines of both streams (a directory tree is
	 * created), oversized ones cut to their head. */
	new_run(&r, 1);
	r.tasks[0].log_path = path;
	r.tasks[0].max_line = 100;
	task_args(&r.tasks[0], "emit", "one", "stderr", "two", "emit", big, "partial-line", "end",
		  END);
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	text = read_whole(path);
	/* Whole lines; stdout's in order; stderr's line anywhere between them
	 * (the two pipes are read independently). */
	assert_int_equal(strlen(text), 4 + 4 + 101 + 4);
	{
		char *two = strstr(text, "two\n");
		char want[128];

		assert_non_null(two);
		assert_true(two == text || two[-1] == '\n');
		memmove(two, two + 4, strlen(two + 4) + 1);
		(void)snprintf(want, sizeof(want), "one\n%.*s\nend\n", 100, big);
		assert_string_equal(text, want);
	}
	free(text);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(r.tasks[0].notices[PROC_NOTICE_LOG_CAPPED], 0);
	release_run(&r);
	unlink(path);

	/* The cap: draining goes on, writing stops at exactly the cap, and
	 * the notice comes once. */
	new_run(&r, 1);
	r.keep_lines = false;
	r.tasks[0].log_path = path;
	r.tasks[0].max_log_bytes = 10000;
	task_args(&r.tasks[0], "flood", "1048576", "emit", "tail", END);
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 10000);
	assert_int_equal(r.tasks[0].out_lines, 1048576 / 128 + 1);
	assert_int_equal(r.tasks[0].notices[PROC_NOTICE_LOG_CAPPED], 1);
	release_run(&r);
	unlink(path);

	/* A log that cannot be opened is reported, and the task still runs. */
	new_run(&r, 1);
	r.tasks[0].log_path = "/proc/version/agent.log";
	task_args(&r.tasks[0], "emit", "fine", END);
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	assert_int_equal(r.tasks[0].notices[PROC_NOTICE_LOG_ERROR], 1);
	assert_string_equal(r.tasks[0].out.buf, "fine\n");
	release_run(&r);

	(void)snprintf(path, sizeof(path), "%s/runs/r1/s1", dir);
	rmdir(path);
	(void)snprintf(path, sizeof(path), "%s/runs/r1", dir);
	rmdir(path);
	(void)snprintf(path, sizeof(path), "%s/runs", dir);
	rmdir(path);
	assert_int_equal(rmdir(dir), 0);
}

/* ignore-term: SIGTERM at the deadline does nothing, SIGKILL after the grace
 * takes the agent and its grandchild (same process group). */
static void test_timeout_escalates(void **state)
{
	struct run r;
	struct task *t;
	uint64_t t0;

	(void)state;
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	t = &r.tasks[0];
	/* The deadline must fall after the agent has installed its SIGTERM
	 * handler: a sanitizer build on a loaded machine can take well over 300
	 * ms just to start, and SIGTERM would then (correctly) kill it. */
	t->timeout_ms = 3000;
	t->grace_ms = 300;
	task_args(t, "ignore-term", "spawn-grandchild", "60000", "emit", "started", "sleep",
		  "60000", END);
	t0 = mono_ms();
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	assert_true(t->result.timed_out);
	assert_false(t->result.cancelled);
	assert_int_equal(t->result.term_signal, SIGKILL);
	assert_int_equal(t->result.exit_code, 137);
	assert_string_equal(t->describe, "timed out after 3000 ms; killed by signal 9 (SIGKILL)");
	assert_int_equal(t->notices[PROC_NOTICE_TIMEOUT], 1);
	assert_int_equal(t->notices[PROC_NOTICE_KILL], 1);
	assert_true(mono_ms() - t0 >= 3300);
	assert_true(mono_ms() - t0 < 60000);
	assert_true(t->grandchild > 0);
	assert_true(wait_gone((pid_t)t->grandchild, 5000));
	assert_true(wait_gone(t->result.pid, 5000));
	release_run(&r);

	/* An agent that honours SIGTERM ends within the grace. */
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	t = &r.tasks[0];
	t->timeout_ms = 200;
	t->grace_ms = 20000;
	task_args(t, "sleep", "60000", END);
	t0 = mono_ms();
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	assert_true(t->result.timed_out);
	assert_int_equal(t->result.term_signal, SIGTERM);
	assert_int_equal(t->result.exit_code, 143);
	assert_int_equal(t->notices[PROC_NOTICE_KILL], 0);
	assert_true(mono_ms() - t0 < 10000);
	release_run(&r);
}

/* ops->on_stop: the caller asked the agent to stop on its own (ACP's
 * session/cancel) and gets the time it asked for before the SIGTERM. */
static uint64_t stop_wait_ms;
static unsigned stop_calls;

static uint64_t on_stop(void *ctx, void *task)
{
	(void)ctx;
	(void)task;
	stop_calls++;
	return stop_wait_ms;
}

static void test_on_stop_delays_term(void **state)
{
	struct supervisor_ops sops = ops;
	struct supervisor_opts o = {.max_parallel = 1};
	struct diag d = {0};
	struct run r;
	struct task *t;

	(void)state;
	sops.on_stop = on_stop;
	/* the agent ends its turn by itself within the time asked: no signal */
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	t = &r.tasks[0];
	t->timeout_ms = 100;
	t->grace_ms = 20000;
	task_args(t, "sleep", "1500", "exit", "7", END);
	stop_wait_ms = 60000;
	stop_calls = 0;
	assert_int_equal(supervise_run(&sops, &r, &o, &d), 0);
	assert_int_equal(stop_calls, 1);
	assert_true(t->result.timed_out);
	assert_int_equal(t->result.term_signal, 0);
	assert_int_equal(t->result.exit_code, 7);
	release_run(&r);

	/* it does not: SIGTERM once the time is over, then the usual grace */
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	t = &r.tasks[0];
	t->timeout_ms = 100;
	t->grace_ms = 20000;
	task_args(t, "sleep", "60000", END);
	stop_wait_ms = 200;
	stop_calls = 0;
	assert_int_equal(supervise_run(&sops, &r, &o, &d), 0);
	assert_int_equal(stop_calls, 1);
	assert_true(t->result.timed_out);
	assert_int_equal(t->result.term_signal, SIGTERM);
	assert_int_equal(t->notices[PROC_NOTICE_KILL], 0);
	release_run(&r);
}

/* When the agent exits normally, what it left in its group is terminated,
 * and the task ends even though the grandchild held stdout open. */
static void test_leftovers_terminated(void **state)
{
	struct run r;
	struct task *t;
	uint64_t t0;

	(void)state;
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	t = &r.tasks[0];
	t->grace_ms = 10000;
	task_args(t, "spawn-grandchild", "60000", "exit", "0", END);
	t0 = mono_ms();
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	assert_int_equal(t->result.exit_code, 0);
	assert_false(t->result.timed_out);
	assert_true(mono_ms() - t0 < 8000); /* SIGTERM took it, no need for the grace */
	assert_true(wait_gone((pid_t)t->grandchild, 5000));
	release_run(&r);
}

/* t: a shell agent that leaves a child with its output closed, which
 * traps TERM, works 300 ms more, then writes BASE.out ("flushed"); the
 * agent exits 0 once the trap is set (BASE.ready). */
static void leftover_task(struct task *t, const char *base)
{
	t->grace_ms = 20000;
	t->agent = "/bin/sh";
	task_args(t, "-c",
		  "( exec >/dev/null 2>&1 </dev/null\n"
		  "  trap 'sleep 0.3; echo flushed >\"$0.out\"; exit 0' TERM\n"
		  "  : >\"$0.ready\"\n"
		  "  while :; do sleep 0.02; done ) &\n"
		  "while [ ! -e \"$0.ready\" ]; do sleep 0.01; done\n"
		  "exit 0\n",
		  base, END);
}

/* BASE.out says the leftover had its time; then BASE's files and dir go. */
static void leftover_flushed(const char *dir, const char *base)
{
	char path[160], text[32] = "";
	FILE *f;

	(void)snprintf(path, sizeof(path), "%s.out", base);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_string_equal(text, "flushed\n");
	(void)unlink(path);
	(void)snprintf(path, sizeof(path), "%s.ready", base);
	(void)unlink(path);
	(void)rmdir(dir);
}

/* What the agent left in its group with its pipes closed (a transcript
 * writer, a git holding a lock) gets SIGTERM at the agent's exit and the
 * grace to finish: it is not SIGKILLed the moment the pipes reach EOF. The
 * leftover traps TERM, works 300 ms more, then writes a file and exits. */
static void test_leftover_finishes_on_term(void **state)
{
	char dir[] = "/tmp/bernstein-settle.XXXXXX", base[128];
	struct run r;
	struct task *t;

	(void)state;
	assert_non_null(mkdtemp(dir));
	(void)snprintf(base, sizeof(base), "%s/left", dir);
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	t = &r.tasks[0];
	leftover_task(t, base);
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	assert_int_equal(t->result.exit_code, 0);
	assert_false(t->result.timed_out);
	leftover_flushed(dir, base); /* SIGKILLed at EOF, it would not have written */
	release_run(&r);
}

/* A leftover that ignores SIGTERM, its pipes closed: the task ends at the
 * grace, and the leftover is SIGKILLed then. */
static void test_leftover_ignoring_term_killed(void **state)
{
	char dir[] = "/tmp/bernstein-settle.XXXXXX", base[128], path[160], line[32] = "";
	struct run r;
	struct task *t;
	long pid = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	(void)snprintf(base, sizeof(base), "%s/left", dir);
	(void)snprintf(path, sizeof(path), "%s.pid", base);
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	t = &r.tasks[0];
	t->grace_ms = 300;
	t->agent = "/bin/sh";
	task_args(t, "-c",
		  "sh -c 'exec >/dev/null 2>&1 </dev/null; trap \"\" TERM; "
		  "echo $$ >\"$0.tmp\"; mv \"$0.tmp\" \"$0.pid\"; exec sleep 600' \"$0\" &\n"
		  "while [ ! -e \"$0.pid\" ]; do sleep 0.01; done\n"
		  "exit 0\n",
		  base, END);
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	assert_int_equal(t->result.exit_code, 0);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	pid = strtol(line, NULL, 10);
	assert_true(pid > 1);
	assert_true(wait_gone((pid_t)pid, 10000)); /* SIGKILLed at the grace */
	(void)unlink(path);
	(void)rmdir(dir);
	release_run(&r);
}

/* The pidns tier with bernstein's init (spec.init_exe): the agent is not
 * its namespace's init, so what it leaves gets SIGTERM and the grace at its
 * exit (without the init the kernel SIGKILLs it the moment the agent, pid
 * 1, exits), and the agent's own wait status comes back: an exit code, a
 * signal. Skipped where the host has no PID namespaces. */
static void test_pidns_init(void **state)
{
	char dir[] = "/tmp/bernstein-init.XXXXXX", base[128];
	struct run r;

	(void)state;
	if (contain_effective(contain_host(), CONTAIN_PIDNS) != CONTAIN_PIDNS || !bernstein_exe) {
		print_message("# no PID namespace here (or no $BERNSTEIN): skipped\n");
		return;
	}
	assert_non_null(mkdtemp(dir));
	(void)snprintf(base, sizeof(base), "%s/left", dir);
	new_run(&r, 4);
	r.contain = CONTAIN_PIDNS;
	r.tasks[0].init = r.tasks[1].init = r.tasks[2].init = r.tasks[3].init = true;
	leftover_task(&r.tasks[0], base);
	task_args(&r.tasks[1], "exit", "3", END);
	task_args(&r.tasks[2], "kill-self", "TERM", END);
	/* the agent holds no end of the wait-status pipe (it cannot write a
	 * status of its own there), nor any other fd of its init */
	task_args(&r.tasks[3], "dump-fds", END);
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	assert_int_equal(r.tasks[0].result.exit_code, 0);
	leftover_flushed(dir, base); /* the kernel's SIGKILL would have come first */
	assert_int_equal(r.tasks[1].result.exit_code, 3);
	assert_int_equal(r.tasks[1].result.term_signal, 0);
	assert_int_equal(r.tasks[2].result.term_signal, SIGTERM); /* not "exit 143" */
	assert_int_equal(r.tasks[2].result.exit_code, 128 + SIGTERM);
	assert_non_null(strstr(r.tasks[3].out.buf, "fds 0 1 2\n"));
	release_run(&r);
}

static void test_exit_mapping(void **state)
{
	char noexec[] = "/tmp/bernstein-noexec.XXXXXX", want[256];
	struct run r;
	int fd, i;

	(void)state;
	fd = mkstemp(noexec);
	assert_true(fd >= 0);
	close(fd);
	chmod(noexec, 0644);

	new_run(&r, 6);
	r.contain = CONTAIN_PGROUP;
	task_args(&r.tasks[0], "exit", "3", END);
	task_args(&r.tasks[1], "kill-self", "SEGV", END);
	task_args(&r.tasks[2], "kill-self", "TERM", END);
	r.tasks[3].agent = "/nonexistent/agent";
	r.tasks[4].agent = noexec;
	task_args(&r.tasks[5], "exit", "0", END);
	assert_int_equal(run_tasks(&r, 3, 0), 0);

	assert_int_equal(r.tasks[0].result.exit_code, 3);
	assert_int_equal(r.tasks[1].result.exit_code, 128 + SIGSEGV);
	assert_int_equal(r.tasks[1].result.term_signal, SIGSEGV);
	assert_string_equal(r.tasks[1].describe, "killed by signal 11 (SIGSEGV)");
	assert_int_equal(r.tasks[2].result.exit_code, 143);
	/* known when the spawn returns: never started, nothing on stderr */
	for (i = 3; i <= 4; i++) {
		bool missing = i == 3;

		assert_int_equal(r.tasks[i].result.exit_code, missing ? 127 : 126);
		assert_int_equal(r.tasks[i].result.failed_stage, SHIM_STAGE_EXEC);
		assert_int_equal(r.tasks[i].result.start_errno, missing ? ENOENT : EACCES);
		(void)snprintf(want, sizeof(want), "cannot execute '%s': %s",
			       missing ? "/nonexistent/agent" : noexec,
			       missing ? "No such file or directory" : "Permission denied");
		assert_string_equal(r.tasks[i].describe, want);
		assert_false(r.tasks[i].started);
		assert_int_equal(r.tasks[i].err.len, 0);
	}
	assert_int_equal(r.tasks[5].result.exit_code, 0);
	release_run(&r);
	unlink(noexec);
}

static void test_64_children(void **state)
{
	struct run r;
	char arg[32];
	size_t i;

	(void)state;
	new_run(&r, 64);
	for (i = 0; i < 64; i++) {
		(void)snprintf(arg, sizeof(arg), "{\"i\":%zu}", i);
		/* Each stays a while, so that all 64 are up at once. */
		task_args(&r.tasks[i], "emit", arg, "sleep", "300", END);
	}
	assert_int_equal(run_tasks(&r, 64, 0), 0);
	assert_int_equal(r.max_running, 64);
	assert_int_equal(r.running, 0);
	for (i = 0; i < 64; i++) {
		(void)snprintf(arg, sizeof(arg), "{\"i\":%zu}\n", i);
		assert_string_equal(r.tasks[i].out.buf, arg);
		assert_int_equal(r.tasks[i].result.exit_code, 0);
	}
	release_run(&r);

	/* More tasks than slots: never more than max_parallel at once. */
	new_run(&r, 40);
	for (i = 0; i < 40; i++) {
		task_args(&r.tasks[i], "emit", "x", END);
	}
	assert_int_equal(run_tasks(&r, 8, 0), 0);
	assert_true(r.max_running <= 8);
	for (i = 0; i < 40; i++)
		assert_string_equal(r.tasks[i].out.buf, "x\n");
	release_run(&r);
}

/* A child printing far more than any buffer is drained with flat memory. */
static void test_flood_flat_memory(void **state)
{
	const long long bytes = SANITIZED ? 64LL << 20 : 200LL << 20;
	char arg[32];
	long before, after;
	struct run r;

	(void)state;
	new_run(&r, 1);
	r.keep_lines = false;
	(void)snprintf(arg, sizeof(arg), "%lld", bytes);
	task_args(&r.tasks[0], "flood", arg, END);
	before = vm_hwm_kb();
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	after = vm_hwm_kb();
	assert_int_equal(r.tasks[0].result.exit_code, 0);
	assert_int_equal(r.tasks[0].out_lines, bytes / 128);
	print_message("# flood %lld MB: VmHWM %ld -> %ld kB\n", bytes >> 20, before, after);
	assert_true(before > 0);
	assert_true(after - before < 16 * 1024);
	release_run(&r);
}

static void test_cancel_by_signal(void **state)
{
	struct run r;
	uint64_t t0;
	size_t i;

	(void)state;
	/* SIGTERM to the supervisor as soon as a task starts: the 3 slots fill
	 * first (the signal is read by the loop), then every group gets TERM,
	 * the 2 other tasks never start, and the result is -ECANCELED. */
	new_run(&r, 5);
	r.contain = CONTAIN_PGROUP;
	for (i = 0; i < 5; i++)
		task_args(&r.tasks[i], "sleep", "60000", END);
	r.signal_on_start = SIGTERM;
	t0 = mono_ms();
	assert_int_equal(run_tasks(&r, 3, 0), -ECANCELED);
	assert_true(mono_ms() - t0 < 10000);
	assert_int_equal(r.next, 3);
	for (i = 0; i < 3; i++) {
		assert_true(r.tasks[i].exited);
		assert_true(r.tasks[i].result.cancelled);
		assert_false(r.tasks[i].result.timed_out);
		assert_int_equal(r.tasks[i].result.term_signal, SIGTERM);
		assert_string_equal(r.tasks[i].describe,
				    "cancelled; killed by signal 15 (SIGTERM)");
	}
	release_run(&r);

	/* A second signal kills at once, even with a long grace. */
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	r.tasks[0].grace_ms = 60000;
	task_args(&r.tasks[0], "ignore-term", "emit", "ready", "sleep", "60000", END);
	r.signal_on_line = SIGINT;
	r.signal_on_line2 = SIGHUP;
	t0 = mono_ms();
	assert_int_equal(run_tasks(&r, 1, 0), -ECANCELED);
	assert_true(mono_ms() - t0 < 10000);
	assert_true(r.tasks[0].result.cancelled);
	assert_int_equal(r.tasks[0].result.term_signal, SIGKILL);
	release_run(&r);

	/* The signal mask is restored: nothing of ours stays blocked. */
	{
		sigset_t cur;

		sigprocmask(SIG_SETMASK, NULL, &cur);
		assert_false(sigismember(&cur, SIGTERM));
		assert_false(sigismember(&cur, SIGCHLD));
	}
}

/* The watched fd: on_watch cancels one task by its handle (the cancel
 * event of the table: TERM, grace, KILL), the other runs to its end and the
 * loop returns 0, not -ECANCELED; a second cancel of it says -EALREADY, an
 * unknown task -ESRCH. Then supervise_interrupt() stops everything as
 * SIGINT does. */
static void test_watch_cancel_task(void **state)
{
	struct run r;

	(void)state;
	new_run(&r, 2);
	r.contain = CONTAIN_PGROUP;
	task_args(&r.tasks[0], "sleep", "60000", END);
	task_args(&r.tasks[1], "sleep", "300", "emit", "done", END);
	r.watch_on_start = 1;
	r.watch_cancel = 0;
	assert_int_equal(run_watched(&r, 2), 0);
	assert_int_equal(r.watched, 1);
	assert_int_equal(r.cancel_r[0], 0);
	assert_int_equal(r.cancel_r[1], -EALREADY);
	assert_int_equal(r.cancel_r[2], -ESRCH);
	assert_true(r.tasks[0].result.cancelled);
	assert_int_equal(r.tasks[0].result.term_signal, SIGTERM);
	assert_false(r.tasks[1].result.cancelled);
	assert_int_equal(r.tasks[1].result.exit_code, 0);
	assert_int_equal(r.tasks[1].out_lines, 1);
	release_run(&r);

	/* an ignore-term child: the grace, then SIGKILL to its group */
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	r.tasks[0].grace_ms = 100;
	r.watch_on_ready = true;
	task_args(&r.tasks[0], "ignore-term", "emit", "ready", "sleep", "60000", END);
	assert_int_equal(run_watched(&r, 1), 0);
	assert_int_equal(r.cancel_r[0], 0);
	assert_true(r.tasks[0].result.cancelled);
	assert_int_equal(r.tasks[0].result.term_signal, SIGKILL);
	release_run(&r);

	/* supervise_interrupt(): as a signal; the third task never starts */
	new_run(&r, 3);
	r.contain = CONTAIN_PGROUP;
	task_args(&r.tasks[0], "sleep", "60000", END);
	task_args(&r.tasks[1], "sleep", "60000", END);
	task_args(&r.tasks[2], "emit", "never", END);
	r.watch_on_start = 1;
	r.watch_interrupt = true;
	assert_int_equal(run_watched(&r, 2), -ECANCELED);
	assert_int_equal(r.next, 2);
	assert_true(r.tasks[0].result.cancelled);
	assert_true(r.tasks[1].result.cancelled);
	release_run(&r);
}

/* A task that is not ready yet (a retry waiting for its time) starts when
 * wake_in_ms says, while another still runs, and the loop waits for it even
 * when nothing runs. */
static void test_wake_in_ms(void **state)
{
	struct run r;
	uint64_t t0;

	(void)state;
	new_run(&r, 2);
	task_args(&r.tasks[0], "sleep", "3000", END);
	task_args(&r.tasks[1], "emit", "late", END);
	t0 = mono_ms();
	r.hold_index = 1;
	r.hold_until = t0 + 300;
	assert_int_equal(run_tasks(&r, 2, 0), 0);
	assert_true(r.tasks[1].started);
	assert_true(r.wakes > 0);
	assert_true(r.tasks[1].t_start >= r.hold_until);
	/* started on time: long before the sleeper ended, not after it */
	assert_true(r.tasks[1].t_start < r.tasks[0].t_exit);
	assert_true(r.tasks[1].t_exit < r.tasks[0].t_exit);
	release_run(&r);

	/* nothing runs meanwhile: the loop waits instead of returning */
	new_run(&r, 1);
	task_args(&r.tasks[0], "emit", "only", END);
	r.hold_index = 0;
	r.hold_until = mono_ms() + 200;
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	assert_true(r.tasks[0].started);
	assert_true(r.tasks[0].t_start >= r.hold_until);
	release_run(&r);
}

static void test_next_task_error(void **state)
{
	struct run r;

	(void)state;
	new_run(&r, 3);
	r.contain = CONTAIN_PGROUP;
	task_args(&r.tasks[0], "sleep", "60000", END);
	r.fail_after = 1;
	assert_int_equal(run_tasks(&r, 2, 0), -EIO);
	assert_true(r.tasks[0].result.cancelled);
	assert_int_equal(r.tasks[0].result.term_signal, SIGTERM);
	release_run(&r);
}

struct logcap {
	struct sbuf text;
};

static void capture_log(enum log_level level, const char *file, int line, const char *msg,
			void *userdata)
{
	struct logcap *lc = userdata;

	(void)level;
	(void)file;
	(void)line;
	(void)sbuf_addf(&lc->text, "%s\n", msg);
}

/* A grandchild orphaned while a zombie comes back to us (subreaper) and is
 * reaped as an unknown pid. */
static void test_orphans_reaped(void **state)
{
	struct logcap lc = {SBUF_INIT(SIZE_MAX)};
	char want[64];
	struct run r;

	(void)state;
	log_set_sink(capture_log, &lc);
	log_set_level(LOG_DEBUG);
	new_run(&r, 1);
	r.contain = CONTAIN_PGROUP;
	task_args(&r.tasks[0], "spawn-grandchild", "0", "sleep", "300", END);
	assert_int_equal(run_tasks(&r, 1, 0), 0);
	log_set_sink(NULL, NULL);
	log_set_level(LOG_WARN);
	assert_true(r.tasks[0].grandchild > 0);
	(void)snprintf(want, sizeof(want), "reaped unknown pid %ld ", r.tasks[0].grandchild);
	assert_non_null(strstr(lc.text.buf, want));
	assert_true(pid_gone((pid_t)r.tasks[0].grandchild));
	sbuf_release(&lc.text);
	release_run(&r);
}

static int line_pipe = -1;

static void on_line_forward(void *ctx, void *task, int stream, const char *line, size_t len)
{
	(void)ctx;
	(void)task;
	(void)stream;
	if (write(line_pipe, line, len) != (ssize_t)len || write(line_pipe, "\n", 1) != 1)
		_exit(98);
}

/* Read lines from fd until both "ids pid=" and a grandchild line arrived. */
static void read_pids(int fd, long *agent, long *grandchild)
{
	struct sbuf sb = SBUF_INIT(SIZE_MAX);
	uint64_t end = mono_ms() + 20000;
	const char *a, *g;

	for (;;) {
		char buf[256];
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n > 0);
		assert_int_equal(sbuf_add(&sb, buf, (size_t)n), 0);
		a = strstr(sb.buf, "ids pid=");
		g = strstr(sb.buf, "\"pid\":");
		if (a && g && strchr(g, '\n'))
			break;
		assert_true(mono_ms() < end);
	}
	*agent = strtol(a + 8, NULL, 10);
	*grandchild = strtol(g + 6, NULL, 10);
	sbuf_release(&sb);
}

/* The supervisor is SIGKILLed: the agent dies too (pdeathsig from the shim),
 * and so does what it started (the group keeper). A helper process runs the
 * supervisor; the test kills it. */
static void test_pdeathsig(void **state)
{
	long agent, grandchild;
	pid_t sup;
	int fds[2], st;

	(void)state;
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	sup = fork();
	assert_true(sup >= 0);
	if (sup == 0) {
		struct supervisor_ops o = ops;
		struct run r;

		close(fds[0]);
		alarm(60); /* never outlive a broken test */
		line_pipe = fds[1];
		o.on_line = on_line_forward;
		new_run(&r, 1);
		r.contain = CONTAIN_PGROUP;
		task_args(&r.tasks[0], "dump-ids", "spawn-grandchild", "60000", "sleep", "60000",
			  END);
		(void)supervise_run(&o, &r, NULL, NULL);
		_exit(99);
	}
	close(fds[1]);
	read_pids(fds[0], &agent, &grandchild);
	close(fds[0]);
	assert_true(agent > 1 && grandchild > 1);
	assert_false(pid_gone((pid_t)agent));
	assert_false(pid_gone((pid_t)grandchild));

	assert_int_equal(kill(sup, SIGKILL), 0);
	assert_int_equal(waitpid(sup, &st, 0), sup);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_true(wait_gone((pid_t)agent, 5000));
	assert_true(wait_gone((pid_t)grandchild, 5000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_and_streams),
		cmocka_unit_test(test_framing_small_chunks),
		cmocka_unit_test(test_oversized_line),
		cmocka_unit_test(test_log_file),
		cmocka_unit_test(test_timeout_escalates),
		cmocka_unit_test(test_on_stop_delays_term),
		cmocka_unit_test(test_leftovers_terminated),
		cmocka_unit_test(test_leftover_finishes_on_term),
		cmocka_unit_test(test_leftover_ignoring_term_killed),
		cmocka_unit_test(test_pidns_init),
		cmocka_unit_test(test_exit_mapping),
		cmocka_unit_test(test_64_children),
		cmocka_unit_test(test_flood_flat_memory),
		cmocka_unit_test(test_cancel_by_signal),
		cmocka_unit_test(test_wake_in_ms),
		cmocka_unit_test(test_watch_cancel_task),
		cmocka_unit_test(test_next_task_error),
		cmocka_unit_test(test_orphans_reaped),
		cmocka_unit_test(test_pdeathsig),
	};

	fake_agent = getenv("FAKE_AGENT");
	bernstein_exe = getenv("BERNSTEIN");
	if (!fake_agent) {
		fprintf(stderr, "FAKE_AGENT must be set (meson test does it)\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
