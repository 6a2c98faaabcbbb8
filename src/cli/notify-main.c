/* bernstein-notify: sends one notification of a run (docs/configuration.md,
 * "Notifications"). The run loop starts it detached per notification
 * (src/orch/run-hooks.c, run_notify()) so that libcurl stays out of the
 * bernstein binary and a slow or dead webhook never holds the loop up.
 *
 * Input, on stdin (at most 1 MiB), one JSON object:
 *   {"url": URL or null, "body": {...}, "desktop": bool, "summary": "...",
 *    "message": "...", "timeout": seconds, "retries": n, "log": path}
 * The URL is never in argv or the environment (it may hold credentials).
 *
 * What it does: notify-send SUMMARY MESSAGE when desktop is true and
 * notify-send is on PATH; then POST body as application/json to url,
 * retrying a connection failure, a timeout, 408, 429 or a 5xx answer after
 * 1, 2, 4... seconds, at most retries more times, all within timeout
 * seconds (a SIGALRM deadline ends it regardless). One line per try is
 * appended to log, the URL as url_webhook_shown() prints it. It prints
 * nothing: stdout and stderr go to /dev/null first.
 *
 * Exit: 0 delivered (or nothing to deliver), 1 not delivered, 2 bad input. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "proc/spawn.h"
#include "util/clock.h"
#include "util/url.h"
#include "util/banned.h"

#define INPUT_MAX   (1u << 20)
#define CONNECT_MAX 10000 /* ms per connection attempt at most */

static int log_fd = -1;
static const char *log_what = "";

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
	char line[1024], ts[40];
	va_list ap;
	int n;

	if (log_fd < 0)
		return;
	(void)clock_iso8601_utc(clock_system()->now_ns(clock_system()), ts, sizeof(ts));
	n = snprintf(line, sizeof(line), "%s %s: ", ts, log_what);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	va_start(ap, fmt);
	(void)vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	(void)!write(log_fd, line, (size_t)n);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
			      .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static char *read_stdin(size_t *ret_len)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= INPUT_MAX) {
				free(buf);
				return NULL;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		n = read(0, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*ret_len = len;
	return buf;
}

/* notify-send, found on PATH: its exit status, or -1 when there is none. */
static int desktop(const char *summary, const char *message)
{
	const char *path = getenv("PATH");
	struct proc_spec spec = PROC_SPEC_INIT;
	struct proc p = PROC_INIT;
	char exe[PATH_MAX];
	const char *s;
	bool found = false;
	int r;

	for (s = path; s && *s && !found;) {
		size_t n = strcspn(s, ":");

		if (n > 0 && n + sizeof("/notify-send") < sizeof(exe) && s[0] == '/') {
			(void)snprintf(exe, sizeof(exe), "%.*s/notify-send", (int)n, s);
			found = access(exe, X_OK) == 0;
		}
		s += n;
		if (*s == ':')
			s++;
	}
	if (!found) {
		log_line("desktop: no notify-send on PATH, skipped");
		return -1;
	}
	strvec_push(&spec.argv, exe);
	strvec_push(&spec.argv, "--app-name=bernstein");
	strvec_push(&spec.argv, summary);
	strvec_push(&spec.argv, message);
	{
		extern char **environ;
		char **e;

		for (e = environ; *e; e++)
			strvec_push(&spec.env, *e);
	}
	spec.flags = SPAWN_NEW_SESSION; /* stdout, stderr: our /dev/null */
	spec.contain = CONTAIN_PGROUP;
	r = proc_spawn(&spec, &p, NULL);
	if (r == 0)
		r = proc_wait(&p);
	log_line("desktop: notify-send %s", r < 0	       ? strerror(-r)
					    : p.exit_code == 0 ? "ok"
							       : "failed");
	r = r < 0 ? 1 : p.exit_code;
	proc_release(&p);
	proc_spec_release(&spec);
	return r;
}

static size_t discard(char *ptr, size_t size, size_t n, void *ud)
{
	(void)ptr;
	(void)ud;
	return size * n;
}

/* POST body to url until it is taken, the tries are spent or the time is
 * over: 0 delivered, 1 not. */
static int webhook(const char *url, const char *body, double timeout_s, int retries)
{
	uint64_t deadline = now_ms() + (uint64_t)(timeout_s * 1000.0), backoff = 1000;
	char shown[URL_MAX + 64];
	struct curl_slist *hdr = NULL;
	CURL *c;
	int attempt, ok = 1;

	url_webhook_shown(url, shown, sizeof(shown));
	if (url_webhook_check(url, NULL, NULL) < 0) {
		log_line("POST %s: not a webhook URL, not sent", shown);
		return 1;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(c = curl_easy_init())) {
		log_line("POST %s: cannot initialise libcurl", shown);
		return 1;
	}
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	(void)curl_easy_setopt(c, CURLOPT_URL, url);
	(void)curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	(void)curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	(void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(c, CURLOPT_USERAGENT, "bernstein-notify/1");
	(void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	(void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	(void)curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	(void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	for (attempt = 1; attempt <= retries + 1; attempt++) {
		uint64_t now = now_ms(), left = deadline > now ? deadline - now : 0;
		long status = 0;
		CURLcode cr;
		bool again;

		if (left == 0) {
			log_line("POST %s: out of time after %d tries", shown, attempt - 1);
			break;
		}
		(void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
		(void)curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
				       (long)(left < CONNECT_MAX ? left : CONNECT_MAX));
		cr = curl_easy_perform(c);
		if (cr == CURLE_OK)
			(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (cr == CURLE_OK && status >= 200 && status < 300) {
			log_line("POST %s: HTTP %ld (try %d)", shown, status, attempt);
			ok = 0;
			break;
		}
		again = cr != CURLE_OK || status == 408 || status == 429 || status >= 500;
		if (cr != CURLE_OK)
			log_line("POST %s: %s (try %d)", shown, curl_easy_strerror(cr), attempt);
		else
			log_line("POST %s: HTTP %ld (try %d)", shown, status, attempt);
		if (!again || attempt > retries)
			break;
		now = now_ms();
		left = deadline > now ? deadline - now : 0;
		sleep_ms(backoff < left ? backoff : left);
		backoff *= 2;
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	curl_global_cleanup();
	return ok;
}

static const char *jstr(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int main(int argc, char **argv)
{
	const char *url, *log, *summary, *message, *ev, *run, *task;
	char *in, *body = NULL, what[256];
	double timeout_s;
	json_error_t err;
	json_t *j, *b;
	size_t len = 0;
	int dn, retries, r = 0;

	if (argc > 1) {
		/* there is no option: the input is on stdin */
		(void)fprintf(
			stderr,
			"usage: bernstein-notify <INPUT.json (started by bernstein run for notify:, see docs/configuration.md)\n");
		return strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ? 0 : 2;
	}
	/* detached from the run: it ends by its own deadline, not with bernstein */
	(void)prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
	(void)signal(SIGPIPE, SIG_IGN);
	cli_lazy_init(NULL); /* a library that cannot be loaded: exit 127, not abort() */
	dn = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (dn >= 0) {
		(void)dup2(dn, 1);
		(void)dup2(dn, 2);
		(void)close(dn);
	}
	in = read_stdin(&len);
	j = in ? json_loadb(in, len, JSON_REJECT_DUPLICATES, &err) : NULL;
	if (in) {
		explicit_bzero(in, len);
		free(in);
	}
	if (!json_is_object(j)) {
		json_decref(j);
		return 2;
	}
	url = jstr(j, "url");
	log = jstr(j, "log");
	summary = jstr(j, "summary");
	message = jstr(j, "message");
	b = json_object_get(j, "body");
	timeout_s = json_number_value(json_object_get(j, "timeout"));
	retries = (int)json_integer_value(json_object_get(j, "retries"));
	if (!(timeout_s > 0) || timeout_s > 3600)
		timeout_s = 30;
	if (retries < 0 || retries > 10)
		retries = 3;
	/* the deadline of everything, whatever hangs */
	(void)alarm((unsigned)ceil(timeout_s) + 1);
	if (log)
		log_fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	ev = json_is_object(b) ? jstr(b, "event") : NULL;
	run = json_is_object(b) ? jstr(b, "run") : NULL;
	task = json_is_object(b) ? jstr(json_object_get(b, "task"), "id") : NULL;
	(void)snprintf(what, sizeof(what), "%s run %s%s%s", ev ? ev : "?", run ? run : "?",
		       task ? " task " : "", task ? task : "");
	log_what = what;
	if (json_is_true(json_object_get(j, "desktop")) && summary && message)
		(void)desktop(summary, message);
	if (url && json_is_object(b)) {
		body = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
		r = body ? webhook(url, body, timeout_s, retries) : 1;
		free(body);
	}
	json_decref(j);
	if (log_fd >= 0)
		(void)close(log_fd);
	return r;
}
