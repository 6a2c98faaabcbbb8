/* The runner's HTTP client (libcurl): one model turn = one POST of a request
 * body (wire.h) to an OpenAI-compatible endpoint, with the reply streamed
 * (SSE, sse.h) or plain, retries with exponential backoff and jitter
 * (util/backoff.h) on 429, 408, 409, 5xx and transient transport errors,
 * honouring Retry-After (seconds or an HTTP date) and retry-after-ms.
 *
 * Network hygiene, so "base_url set" means "this host and no other":
 *   - only http and https (CURLOPT_PROTOCOLS_STR), redirects are not followed;
 *   - no proxy from the environment: CURLOPT_PROXY is "" unless the caller
 *     passes an explicit proxy (cli/ option --proxy);
 *   - no telemetry, no tracing, no other request of any kind;
 *   - the API key goes only into the Authorization header of this request;
 *     it never appears in a message this module writes (verbose is off, and
 *     messages carry the URL, the status and the server's error text only).
 *
 * Timeouts: a connect timeout, a per-attempt total timeout clipped to the
 * run's deadline, and a stall limit (less than 1 byte/s for stall_s). */
#ifndef BERNSTEIN_RUNNER_LLM_H
#define BERNSTEIN_RUNNER_LLM_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "runner/wire.h"
#include "util/clock.h"

#define LLM_DEFAULT_MAX_RETRIES	    5
#define LLM_DEFAULT_BACKOFF_BASE_MS 500
#define LLM_DEFAULT_BACKOFF_MAX_MS  30000
#define LLM_DEFAULT_RETRY_AFTER_MAX 120000 /* ms; a longer Retry-After is clipped */
#define LLM_DEFAULT_CONNECT_MS	    30000
#define LLM_DEFAULT_ATTEMPT_MS	    600000
#define LLM_DEFAULT_STALL_S	    120
#define LLM_MAX_BODY		    (72 * 1024 * 1024) /* a plain reply body (see sse.h) */
#define LLM_MAX_ERROR_BODY	    (64 * 1024)	       /* kept of an error reply */

enum llm_failure {
	LLM_OK,
	LLM_RATE_LIMITED, /* 429 until the retries ran out */
	LLM_HTTP,	  /* another HTTP error status (4xx, or 5xx after retries) */
	LLM_TRANSPORT,	  /* connection failed, reset, timed out (after retries) */
	LLM_PROTOCOL,	  /* a malformed reply or stream, or an error in the stream */
	LLM_DEADLINE,	  /* the run's deadline passed */
};

struct llm_retry_info {
	unsigned attempt; /* 1-based number of the attempt that failed */
	unsigned max_attempts;
	long http_status; /* 0 for a transport error */
	uint64_t wait_ms;
	bool retry_after; /* the wait came from Retry-After / retry-after-ms */
	const char *reason;
};

struct llm_config {
	const char *url;     /* the full endpoint: base + wire_api_path() */
	const char *api_key; /* NULL or "" = no Authorization header */
	const char *proxy;   /* NULL = no proxy at all */
	enum wire_api api;
	bool stream;
	unsigned max_retries;	     /* retries after the first attempt */
	uint64_t backoff_base_ms;    /* 0 = default */
	uint64_t backoff_max_ms;     /* 0 = default */
	uint64_t retry_after_max_ms; /* 0 = default */
	uint64_t connect_timeout_ms; /* 0 = default */
	uint64_t attempt_timeout_ms; /* 0 = default */
	uint64_t stall_s;	     /* 0 = default */
	uint64_t deadline_ms;	     /* CLOCK_MONOTONIC ms of the run's end; 0 = none */
	const struct clock *clock;   /* NULL = clock_system() */
	/* Tests may replace the sleep; NULL = nanosleep. */
	void (*sleep_ms)(void *userdata, uint64_t ms);
	/* Called before each retry's wait (progress events). */
	void (*on_retry)(void *userdata, const struct llm_retry_info *info);
	void *userdata;
};

struct llm_result {
	enum llm_failure failure;
	long http_status; /* of the last attempt; 0 if none */
	unsigned attempts;
	char message[1024];
};

/* POST body, parse the reply into *ret. Returns 0, or a negative errno with
 * res->failure and res->message saying what happened. */
int llm_request(const struct llm_config *cfg, const json_t *body, struct wire_reply *ret,
		struct llm_result *res);

/* Parse a Retry-After value: delta-seconds or an HTTP date (IMF-fixdate,
 * RFC 850 or asctime form). now is the wall time in seconds. Returns 0 and
 * the wait in ms (0 for a date in the past), or -EINVAL. */
int llm_parse_retry_after(const char *v, int64_t now, uint64_t *ret_ms);

#endif
