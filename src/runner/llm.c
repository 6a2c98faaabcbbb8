/* libcurl client for one model turn, with retries (llm.h). */
#include "runner/llm.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "runner/sse.h"
#include "util/backoff.h"
#include "util/sbuf.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* ---- Retry-After (the backoff is util/backoff.h) --------------------------- */

int llm_parse_retry_after(const char *v, int64_t now, uint64_t *ret_ms)
{
	static const char *const forms[] = {
		"%a, %d %b %Y %H:%M:%S GMT", /* IMF-fixdate */
		"%A, %d-%b-%y %H:%M:%S GMT", /* RFC 850 */
		"%a %b %e %H:%M:%S %Y",	     /* asctime */
	};
	char buf[64];
	size_t n, i;

	if (!v)
		return -EINVAL;
	while (*v == ' ' || *v == '\t')
		v++;
	n = strlen(v);
	while (n > 0 &&
	       (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
		n--;
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, v, n);
	buf[n] = '\0';
	if (str_all_digits(buf)) {
		unsigned long long s;

		if (n > 9) /* over ~31 years: clip, the caller caps anyway */
			s = 999999999ULL;
		else
			s = strtoull(buf, NULL, 10);
		*ret_ms = (uint64_t)s * 1000;
		return 0;
	}
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct tm tm;
		const char *end;
		time_t t;

		memset(&tm, 0, sizeof(tm));
		end = strptime(buf, forms[i], &tm);
		if (!end || *end)
			continue;
		t = timegm(&tm);
		if (t == (time_t)-1)
			continue;
		*ret_ms = (int64_t)t > now ? (uint64_t)((int64_t)t - now) * 1000 : 0;
		return 0;
	}
	return -EINVAL;
}

static uint32_t random_u32(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec;
	}
	return v;
}

static void default_sleep(void *userdata, uint64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
			      .tv_nsec = (long)(ms % 1000) * 1000000};

	(void)userdata;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- one attempt -------------------------------------------------------- */

struct attempt {
	const struct llm_config *cfg;
	CURL *curl;
	long status;
	bool status_known;
	bool sse;	  /* the reply is text/event-stream */
	bool sse_started; /* some of it was fed to the parser */
	struct sbuf body; /* plain body (capped), or the start of an error body */
	bool body_over;	  /* a 2xx plain body went over LLM_MAX_BODY */
	struct sse_parser sse_parser;
	struct wire_stream stream;
	int stream_err; /* from the SSE parser / wire stream */
	struct diag stream_diag;
	char retry_after[64];
	char retry_after_ms[32];
	char content_type[128];
};

static void header_value(const char *line, size_t n, size_t klen, char *dst, size_t dstsize)
{
	const char *v = line + klen;
	size_t len;

	while (v < line + n && (*v == ' ' || *v == '\t'))
		v++;
	len = (size_t)(line + n - v);
	while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
		len--;
	if (len >= dstsize)
		len = dstsize - 1;
	memcpy(dst, v, len);
	dst[len] = '\0';
}

static size_t on_header(char *line, size_t size, size_t nitems, void *userdata)
{
	struct attempt *a = userdata;
	size_t n = size * nitems;

	if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* a new response (after a 100 Continue, say): forget the last one's */
		a->retry_after[0] = a->retry_after_ms[0] = a->content_type[0] = '\0';
		return n;
	}
	if (n > 12 && strncasecmp(line, "retry-after:", 12) == 0)
		header_value(line, n, 12, a->retry_after, sizeof(a->retry_after));
	else if (n > 15 && strncasecmp(line, "retry-after-ms:", 15) == 0)
		header_value(line, n, 15, a->retry_after_ms, sizeof(a->retry_after_ms));
	else if (n > 13 && strncasecmp(line, "content-type:", 13) == 0)
		header_value(line, n, 13, a->content_type, sizeof(a->content_type));
	return n;
}

static int on_sse_event(void *userdata, const char *event, const char *data, size_t len)
{
	struct attempt *a = userdata;

	return wire_stream_event(&a->stream, event, data, len, &a->stream_diag);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct attempt *a = userdata;
	size_t n = size * nmemb;

	if (!a->status_known) {
		(void)curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &a->status);
		a->status_known = true;
		a->sse = a->cfg->stream && a->status >= 200 && a->status < 300 &&
			 strncasecmp(a->content_type, "text/event-stream", 17) == 0;
	}
	if (a->status < 200 || a->status >= 300) {
		/* an error body: keep its start for the message */
		size_t room = a->body.max - a->body.len;

		(void)sbuf_add(&a->body, data, n < room ? n : room);
		return n;
	}
	if (a->sse) {
		int r;

		a->sse_started = true;
		r = sse_feed(&a->sse_parser, data, n);
		if (r < 0) {
			a->stream_err = r;
			if (r == -ENOBUFS && !a->stream_diag.msg[0])
				diag_set(&a->stream_diag, NULL, 0, 0,
					 "a stream line or event is over its cap");
			return 0; /* abort the transfer */
		}
		return n;
	}
	if (sbuf_add(&a->body, data, n) < 0) {
		a->body_over = true;
		return 0;
	}
	return n;
}

static bool retryable_status(long s)
{
	return s == 408 || s == 409 || s == 429 || s >= 500;
}

static bool retryable_curl(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

/* The "message" of an OpenAI-style error body, else its first bytes. */
static void error_text(const struct sbuf *body, char *buf, size_t size)
{
	json_error_t jerr;
	json_t *root = json_loadb(body->buf, body->len, 0, &jerr);
	const char *msg = NULL;

	if (root) {
		json_t *e = json_object_get(root, "error");

		msg = json_string_value(json_object_get(e, "message"));
		if (!msg)
			msg = json_string_value(e);
		if (!msg)
			msg = json_string_value(json_object_get(root, "message"));
	}
	if (msg) {
		(void)snprintf(buf, size, "%s", msg);
	} else {
		size_t n = body->len < 300 ? body->len : 300, i;

		if (n >= size)
			n = size - 1;
		for (i = 0; i < n; i++) {
			unsigned char c = (unsigned char)body->buf[i];

			buf[i] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
		}
		buf[n] = '\0';
	}
	json_decref(root);
}

enum attempt_outcome {
	ATTEMPT_DONE,  /* *ret filled */
	ATTEMPT_RETRY, /* transient: may retry */
	ATTEMPT_FAIL,  /* final failure */
};

static uint64_t now_ms(const struct llm_config *cfg)
{
	const struct clock *c = cfg->clock ? cfg->clock : clock_system();

	return c->mono_ms(c);
}

static int64_t wall_s(const struct llm_config *cfg)
{
	const struct clock *c = cfg->clock ? cfg->clock : clock_system();

	return c->now_ns(c) / 1000000000;
}

static enum attempt_outcome attempt_run(const struct llm_config *cfg, const char *payload,
					size_t payload_len, struct curl_slist *headers,
					uint64_t timeout_ms, struct wire_reply *ret,
					struct llm_result *res, uint64_t *ret_retry_after_ms,
					bool *ret_has_retry_after)
{
	struct attempt a;
	enum attempt_outcome out = ATTEMPT_FAIL;
	CURLcode cc;
	char etext[512];
	int r;

	memset(&a, 0, sizeof(a));
	a.cfg = cfg;
	sbuf_init(&a.body, LLM_MAX_BODY);
	sse_init(&a.sse_parser, 0, 0, on_sse_event, &a);
	wire_stream_init(&a.stream, cfg->api);
	*ret_has_retry_after = false;

	a.curl = curl_easy_init();
	if (!a.curl) {
		res->failure = LLM_TRANSPORT;
		(void)snprintf(res->message, sizeof(res->message), "cannot initialise libcurl");
		goto out;
	}
	(void)curl_easy_setopt(a.curl, CURLOPT_URL, cfg->url);
	(void)curl_easy_setopt(a.curl, CURLOPT_PROTOCOLS_STR, "http,https");
	(void)curl_easy_setopt(a.curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	(void)curl_easy_setopt(a.curl, CURLOPT_FOLLOWLOCATION, 0L);
	(void)curl_easy_setopt(a.curl, CURLOPT_PROXY, cfg->proxy ? cfg->proxy : "");
	(void)curl_easy_setopt(a.curl, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(a.curl, CURLOPT_VERBOSE, 0L);
	(void)curl_easy_setopt(a.curl, CURLOPT_USERAGENT, "bernstein-runner/1");
	(void)curl_easy_setopt(a.curl, CURLOPT_HTTPHEADER, headers);
	(void)curl_easy_setopt(a.curl, CURLOPT_POST, 1L);
	(void)curl_easy_setopt(a.curl, CURLOPT_POSTFIELDS, payload);
	(void)curl_easy_setopt(a.curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)payload_len);
	(void)curl_easy_setopt(
		a.curl, CURLOPT_CONNECTTIMEOUT_MS,
		(long)(cfg->connect_timeout_ms ? cfg->connect_timeout_ms : LLM_DEFAULT_CONNECT_MS));
	(void)curl_easy_setopt(a.curl, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	(void)curl_easy_setopt(a.curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	(void)curl_easy_setopt(a.curl, CURLOPT_LOW_SPEED_TIME,
			       (long)(cfg->stall_s ? cfg->stall_s : LLM_DEFAULT_STALL_S));
	(void)curl_easy_setopt(a.curl, CURLOPT_HEADERFUNCTION, on_header);
	(void)curl_easy_setopt(a.curl, CURLOPT_HEADERDATA, &a);
	(void)curl_easy_setopt(a.curl, CURLOPT_WRITEFUNCTION, on_body);
	(void)curl_easy_setopt(a.curl, CURLOPT_WRITEDATA, &a);

	cc = curl_easy_perform(a.curl);
	(void)curl_easy_getinfo(a.curl, CURLINFO_RESPONSE_CODE, &a.status);
	res->http_status = a.status;

	if (a.stream_err) {
		/* the stream was bad: a protocol failure, never retried */
		res->failure = a.stream_err == -EBUSY ? LLM_RATE_LIMITED : LLM_PROTOCOL;
		(void)snprintf(res->message, sizeof(res->message), "%s", a.stream_diag.msg);
		goto out;
	}
	if (a.body_over) {
		res->failure = LLM_PROTOCOL;
		(void)snprintf(res->message, sizeof(res->message),
			       "the reply body is larger than %d bytes", LLM_MAX_BODY);
		goto out;
	}
	if (cc != CURLE_OK) {
		res->failure = LLM_TRANSPORT;
		(void)snprintf(res->message, sizeof(res->message), "request to '%s' failed: %s",
			       cfg->url, curl_easy_strerror(cc));
		/* a stream that already delivered events is not replayed blindly
		 * either: the model may have been charged, but nothing was acted
		 * on yet, so a retry is safe */
		out = retryable_curl(cc) ? ATTEMPT_RETRY : ATTEMPT_FAIL;
		goto out;
	}
	if (a.status < 200 || a.status >= 300) {
		error_text(&a.body, etext, sizeof(etext));
		res->failure = a.status == 429 ? LLM_RATE_LIMITED : LLM_HTTP;
		(void)snprintf(res->message, sizeof(res->message), "HTTP %ld from '%s'%s%s",
			       a.status, cfg->url, etext[0] ? ": " : "", etext);
		if (a.retry_after_ms[0] && str_all_digits(a.retry_after_ms) &&
		    strlen(a.retry_after_ms) < 10) {
			*ret_retry_after_ms = strtoull(a.retry_after_ms, NULL, 10);
			*ret_has_retry_after = true;
		} else if (a.retry_after[0] && llm_parse_retry_after(a.retry_after, wall_s(cfg),
								     ret_retry_after_ms) == 0) {
			*ret_has_retry_after = true;
		}
		out = retryable_status(a.status) ? ATTEMPT_RETRY : ATTEMPT_FAIL;
		goto out;
	}
	if (a.sse) {
		struct diag d = {0};

		r = sse_finish(&a.sse_parser);
		if (r < 0) {
			res->failure = LLM_PROTOCOL;
			(void)snprintf(res->message, sizeof(res->message), "%s",
				       a.stream_diag.msg[0] ? a.stream_diag.msg : strerror(-r));
			goto out;
		}
		r = wire_stream_finish(&a.stream, ret, &d);
		if (r < 0) {
			res->failure = LLM_PROTOCOL;
			(void)snprintf(res->message, sizeof(res->message), "%s", d.msg);
			goto out;
		}
	} else {
		struct diag d = {0};

		r = wire_parse_body(cfg->api, a.body.buf, a.body.len, ret, &d);
		if (r < 0) {
			res->failure = r == -EBUSY ? LLM_RATE_LIMITED : LLM_PROTOCOL;
			(void)snprintf(res->message, sizeof(res->message), "%s", d.msg);
			goto out;
		}
	}
	res->failure = LLM_OK;
	out = ATTEMPT_DONE;
out:
	if (a.curl)
		curl_easy_cleanup(a.curl);
	sbuf_release(&a.body);
	sse_release(&a.sse_parser);
	wire_stream_release(&a.stream);
	return out;
}

int llm_request(const struct llm_config *cfg, const json_t *body, struct wire_reply *ret,
		struct llm_result *res)
{
	struct curl_slist *headers = NULL, *h;
	struct sbuf auth = SBUF_INIT(SIZE_MAX);
	unsigned max_attempts = cfg->max_retries + 1, attempt;
	const struct backoff_policy policy = {
		.base_ms =
			cfg->backoff_base_ms ? cfg->backoff_base_ms : LLM_DEFAULT_BACKOFF_BASE_MS,
		.cap_ms = cfg->backoff_max_ms ? cfg->backoff_max_ms : LLM_DEFAULT_BACKOFF_MAX_MS,
		.hint_cap_ms = cfg->retry_after_max_ms ? cfg->retry_after_max_ms
						       : LLM_DEFAULT_RETRY_AFTER_MAX,
	};
	char *payload = NULL;
	int rc = -EIO;

	memset(res, 0, sizeof(*res));
	payload = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15));
	if (!payload) {
		res->failure = LLM_PROTOCOL;
		(void)snprintf(res->message, sizeof(res->message), "cannot serialise the request");
		return -EINVAL;
	}
	h = curl_slist_append(headers, "Content-Type: application/json");
	if (h)
		h = curl_slist_append(headers = h, cfg->stream ? "Accept: text/event-stream"
							       : "Accept: application/json");
	if (h)
		h = curl_slist_append(headers = h, "Expect:");
	if (h && cfg->api_key && *cfg->api_key) {
		(void)sbuf_addf(&auth, "Authorization: Bearer %s", cfg->api_key);
		h = curl_slist_append(headers = h, auth.buf);
		/* libcurl copied it: wipe ours */
		explicit_bzero(auth.buf, auth.len);
	}
	if (!h) {
		res->failure = LLM_TRANSPORT;
		(void)snprintf(res->message, sizeof(res->message), "cannot build the headers");
		rc = -ENOMEM;
		goto out;
	}
	headers = h;

	for (attempt = 1;; attempt++) {
		uint64_t t = now_ms(cfg), timeout, wait, ra_ms = 0;
		bool has_ra = false;
		enum attempt_outcome o;
		struct llm_retry_info info;

		timeout =
			cfg->attempt_timeout_ms ? cfg->attempt_timeout_ms : LLM_DEFAULT_ATTEMPT_MS;
		if (cfg->deadline_ms) {
			if (t >= cfg->deadline_ms) {
				res->failure = LLM_DEADLINE;
				(void)snprintf(res->message, sizeof(res->message),
					       "the run's deadline passed before the request");
				rc = -ETIMEDOUT;
				goto out;
			}
			if (cfg->deadline_ms - t < timeout)
				timeout = cfg->deadline_ms - t;
		}
		res->attempts = attempt;
		o = attempt_run(cfg, payload, strlen(payload), headers, timeout, ret, res, &ra_ms,
				&has_ra);
		if (o == ATTEMPT_DONE) {
			rc = 0;
			goto out;
		}
		if (o == ATTEMPT_FAIL || attempt >= max_attempts) {
			rc = res->failure == LLM_RATE_LIMITED ? -EBUSY
			     : res->failure == LLM_PROTOCOL   ? -EBADMSG
							      : -EIO;
			if (o == ATTEMPT_RETRY && max_attempts > 1) {
				size_t n = strlen(res->message);

				(void)snprintf(res->message + n, sizeof(res->message) - n,
					       " (gave up after %u attempts)", attempt);
			}
			goto out;
		}
		wait = backoff_delay_ms(&policy, attempt, has_ra ? (int64_t)ra_ms : -1,
					random_u32());
		if (cfg->deadline_ms && now_ms(cfg) + wait >= cfg->deadline_ms) {
			size_t n = strlen(res->message);

			(void)snprintf(res->message + n, sizeof(res->message) - n,
				       " (no time left for a retry before the deadline)");
			rc = res->failure == LLM_RATE_LIMITED ? -EBUSY : -EIO;
			goto out;
		}
		info = (struct llm_retry_info){
			.attempt = attempt,
			.max_attempts = max_attempts,
			.http_status = res->http_status,
			.wait_ms = wait,
			.retry_after = has_ra,
			.reason = res->message,
		};
		if (cfg->on_retry)
			cfg->on_retry(cfg->userdata, &info);
		(cfg->sleep_ms ? cfg->sleep_ms : default_sleep)(cfg->userdata, wait);
	}
out:
	curl_slist_free_all(headers);
	sbuf_release(&auth);
	free(payload);
	return rc;
}
