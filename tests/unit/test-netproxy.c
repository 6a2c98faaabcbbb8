/* proc/netproxy.h: the request parser (every rule), the allow-list (the
 * literal host and port, nothing resolved), the endpoint URL, and one
 * handler against real sockets: 403 and a log line for a refused host, a
 * tunnel to an allowed one, 400 for junk. orch/confine.h's network modes. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "orch/confine.h"
#include "proc/netproxy.h"

static int parse(const char *s, struct netproxy_request *rq)
{
	return netproxy_parse(s, strlen(s), rq);
}

static void test_parse_connect(void **state)
{
	struct netproxy_request rq;
	const char *s = "CONNECT api.Example.com:443 HTTP/1.1\r\nHost: x\r\n\r\nTLS";

	(void)state;
	assert_int_equal(parse(s, &rq), 1);
	assert_true(rq.connect);
	assert_string_equal(rq.method, "CONNECT");
	assert_string_equal(rq.addr.host, "api.example.com");
	assert_int_equal(rq.addr.port, 443);
	assert_false(rq.addr.v6);
	assert_int_equal(rq.head_len, strlen(s) - 3);
	assert_int_equal(parse("CONNECT [::1]:8080 HTTP/1.0\n\n", &rq), 1);
	assert_true(rq.addr.v6);
	assert_string_equal(rq.addr.host, "::1");
	assert_int_equal(rq.addr.port, 8080);
}

static void test_parse_absolute(void **state)
{
	struct netproxy_request rq;
	const char *s = "POST http://127.0.0.1:4000/v1/chat?x=1 HTTP/1.1\r\nHost: h\r\n\r\n";

	(void)state;
	assert_int_equal(parse(s, &rq), 1);
	assert_false(rq.connect);
	assert_string_equal(rq.addr.host, "127.0.0.1");
	assert_int_equal(rq.addr.port, 4000);
	assert_int_equal(rq.path_len, strlen("/v1/chat?x=1"));
	assert_memory_equal(s + rq.path_off, "/v1/chat?x=1", rq.path_len);
	assert_int_equal(parse("GET http://example.com HTTP/1.1\r\n\r\n", &rq), 1);
	assert_int_equal(rq.addr.port, 80);
	assert_int_equal(rq.path_len, 0);
}

static void test_parse_incomplete_and_bad(void **state)
{
	struct netproxy_request rq;
	char *big;

	(void)state;
	assert_int_equal(parse("", &rq), 0);
	assert_int_equal(parse("CONNECT a:1 HTTP/1.1\r\n", &rq), 0);
	assert_int_equal(parse("CONNECT a:1 HTTP/1.1\r\nHost: a\r\n", &rq), 0);
	/* malformed: each one rule */
	assert_int_equal(parse("CONNECT a HTTP/1.1\r\n\r\n", &rq), -EBADMSG);	    /* no port */
	assert_int_equal(parse("CONNECT a:0 HTTP/1.1\r\n\r\n", &rq), -EBADMSG);	    /* port 0 */
	assert_int_equal(parse("CONNECT a:65536 HTTP/1.1\r\n\r\n", &rq), -EBADMSG); /* range */
	assert_int_equal(parse("CONNECT a:+1 HTTP/1.1\r\n\r\n", &rq), -EBADMSG);    /* sign */
	assert_int_equal(parse("CONNECT a b:1 HTTP/1.1\r\n\r\n", &rq), -EBADMSG);   /* space */
	assert_int_equal(parse("CONNECT a:1 HTTP/2\r\n\r\n", &rq), -EBADMSG);	    /* version */
	assert_int_equal(parse("connect a:1 HTTP/1.1\r\n\r\n", &rq), -EBADMSG);	    /* method */
	assert_int_equal(parse("CONNECT a%2e:1 HTTP/1.1\r\n\r\n", &rq), -EBADMSG);  /* host */
	assert_int_equal(parse("CONNECT a\tb:1 HTTP/1.1\r\n\r\n", &rq), -EBADMSG);  /* control */
	assert_int_equal(parse("CONNECT [::1:1 HTTP/1.1\r\n\r\n", &rq), -EBADMSG);  /* bracket */
	assert_int_equal(parse("CONNECT ::1:1 HTTP/1.1\r\n\r\n", &rq), -EBADMSG);   /* bare v6 */
	assert_int_equal(parse("GET /x HTTP/1.1\r\n\r\n", &rq), -EBADMSG);	   /* origin form */
	assert_int_equal(parse("GET https://a/ HTTP/1.1\r\n\r\n", &rq), -EBADMSG); /* https */
	assert_int_equal(parse("GET http://ok@evil/ HTTP/1.1\r\n\r\n", &rq),
			 -EBADMSG);						  /* userinfo */
	assert_int_equal(parse("GET http:///x HTTP/1.1\r\n\r\n", &rq), -EBADMSG); /* no host */
	/* no end within the cap */
	big = malloc(NETPROXY_HEAD_MAX + 10);
	assert_non_null(big);
	memset(big, 'A', NETPROXY_HEAD_MAX + 10);
	assert_int_equal(netproxy_parse(big, NETPROXY_HEAD_MAX + 10, &rq), -ENOBUFS);
	assert_int_equal(netproxy_parse(big, NETPROXY_HEAD_MAX - 1, &rq), 0);
	free(big);
}

static struct netproxy_addr addr(const char *s)
{
	struct netproxy_addr a;

	assert_int_equal(netproxy_addr_parse(s, strlen(s), &a), 0);
	return a;
}

static void test_allow_list(void **state)
{
	struct netproxy_addr allow[2];

	(void)state;
	allow[0] = addr("127.0.0.1:4000");
	allow[1] = addr("API.example.com:443");
	assert_true(netproxy_allowed(allow, 2,
				     &(struct netproxy_addr){.host = "127.0.0.1", .port = 4000}));
	assert_true(netproxy_allowed(
		allow, 2, &(struct netproxy_addr){.host = "api.example.com", .port = 443}));
	/* the literal host and port, nothing else: no other spelling of the
	 * same address, no other port */
	assert_false(netproxy_allowed(allow, 2,
				      &(struct netproxy_addr){.host = "127.0.0.1", .port = 4001}));
	assert_false(netproxy_allowed(allow, 2,
				      &(struct netproxy_addr){.host = "localhost", .port = 4000}));
	assert_false(
		netproxy_allowed(allow, 2, &(struct netproxy_addr){.host = "127.1", .port = 4000}));
	assert_false(netproxy_allowed(
		allow, 2, &(struct netproxy_addr){.host = "api.example.com.", .port = 443}));
	assert_false(netproxy_allowed(
		allow, 2, &(struct netproxy_addr){.host = "x.api.example.com", .port = 443}));
	assert_false(netproxy_allowed(
		allow, 2, &(struct netproxy_addr){.host = "::1", .port = 4000, .v6 = true}));
}

static void test_url_and_loopback(void **state)
{
	struct netproxy_addr a;

	(void)state;
	assert_int_equal(netproxy_url_addr("http://127.0.0.1:4000/v1", &a), 0);
	assert_string_equal(a.host, "127.0.0.1");
	assert_int_equal(a.port, 4000);
	assert_true(netproxy_is_loopback(&a));
	assert_int_equal(netproxy_url_addr("https://api.openai.com/v1", &a), 0);
	assert_int_equal(a.port, 443);
	assert_false(netproxy_is_loopback(&a));
	assert_int_equal(netproxy_url_addr("http://[::1]:9/", &a), 0);
	assert_true(a.v6);
	assert_true(netproxy_is_loopback(&a));
	assert_int_equal(netproxy_url_addr("ftp://x/", &a), -EINVAL);
	assert_int_equal(netproxy_url_addr("http://u:p@x/", &a), -EINVAL);
	a = addr("127.1:1");
	assert_false(netproxy_is_loopback(&a)); /* not a dotted quad */
	a = addr("10.0.0.1:1");
	assert_false(netproxy_is_loopback(&a));
	assert_int_equal(net_mode_from_string("llm"), NET_MODE_LLM);
	assert_int_equal(net_mode_from_string("off"), _NET_MODE_INVALID);
}

static void test_modes(void **state)
{
	char why[512];

	(void)state;
	assert_int_equal(confine_net_default(-1, SANDBOX_KIND_BWRAP, "http://127.0.0.1:1"),
			 NET_MODE_LLM);
	assert_int_equal(confine_net_default(-1, SANDBOX_KIND_BWRAP, NULL), NET_MODE_FULL);
	assert_int_equal(confine_net_default(-1, SANDBOX_KIND_LANDLOCK, "http://127.0.0.1:1"),
			 NET_MODE_FULL);
	assert_int_equal(confine_net_default(NET_MODE_NONE, SANDBOX_KIND_LANDLOCK, NULL),
			 NET_MODE_NONE);
	assert_null(confine_net_refusal(NET_MODE_FULL, SANDBOX_KIND_NONE, NULL, NULL, why,
					sizeof(why)));
	assert_null(confine_net_refusal(NET_MODE_NONE, SANDBOX_KIND_CONTAINER, NULL, NULL, why,
					sizeof(why)));
	assert_non_null(confine_net_refusal(NET_MODE_NONE, SANDBOX_KIND_LANDLOCK, NULL, NULL, why,
					    sizeof(why)));
	assert_non_null(strstr(why, "landlock has none"));
	assert_non_null(confine_net_refusal(NET_MODE_LLM, SANDBOX_KIND_BWRAP, NULL, NULL, why,
					    sizeof(why)));
	assert_non_null(strstr(why, "sampling.base_url"));
	/* without an endpoint, the provider's declared hosts: llm can be had */
	{
		static const char *const hv[] = {"api.example.com:443", NULL};
		struct profile_strv hosts = {.v = hv, .n = 1}, none = {.v = hv + 1, .n = 0};

		assert_null(confine_net_refusal(NET_MODE_LLM, SANDBOX_KIND_BWRAP, NULL, &hosts, why,
						sizeof(why)));
		assert_non_null(confine_net_refusal(NET_MODE_LLM, SANDBOX_KIND_BWRAP, NULL, &none,
						    why, sizeof(why)));
		assert_non_null(strstr(why, "runtime.sandbox.hosts"));
		assert_non_null(confine_net_refusal(NET_MODE_LLM, SANDBOX_KIND_LANDLOCK, NULL,
						    &hosts, why, sizeof(why)));
		/* the default stays full: llm for provider hosts is asked for */
		assert_int_equal(confine_net_default(-1, SANDBOX_KIND_BWRAP, NULL), NET_MODE_FULL);
	}
}

/* a client's bytes through netproxy_handle() in a child; what it answered */
static char *exchange(const char *req, const struct netproxy_opts *o)
{
	static char out[4096];
	int sv[2];
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		netproxy_handle(sv[1], o);
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(write(sv[0], req, strlen(req)), (ssize_t)strlen(req));
	(void)shutdown(sv[0], SHUT_WR);
	while ((n = read(sv[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(sv[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return out;
}

static void test_handle(void **state)
{
	struct netproxy_addr allow[1];
	struct netproxy_opts o = {.n_allow = 1};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	char tmpl[] = "/tmp/test-netproxy-XXXXXX", req[128], log[256];
	int lfd, fd, n;
	pid_t pid;

	(void)state;
	/* an upstream that echoes one line back, on a free port */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	pid = fork();
	if (pid == 0) {
		char b[64];
		int c = accept(lfd, NULL, NULL);
		ssize_t k = read(c, b, sizeof(b));

		_exit(k > 0 && write(c, b, (size_t)k) == k ? 0 : 1);
	}
	close(lfd);
	(void)snprintf(req, sizeof(req), "127.0.0.1:%u", ntohs(sa.sin_port));
	allow[0] = addr(req);
	o.allow = allow;
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	o.log_fd = open(tmpl, O_WRONLY | O_APPEND | O_CLOEXEC);

	(void)snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\nping\n",
		       ntohs(sa.sin_port));
	assert_string_equal(exchange(req, &o), "HTTP/1.1 200 Connection established\r\n\r\nping\n");
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_non_null(
		strstr(exchange("CONNECT evil.example:443 HTTP/1.1\r\n\r\n", &o), "HTTP/1.1 403 "));
	assert_non_null(
		strstr(exchange("GET http://localhost:1/ HTTP/1.1\r\n\r\n", &o), "HTTP/1.1 403 "));
	assert_non_null(strstr(exchange("\x16\x03\x01 junk\r\n\r\n", &o), "HTTP/1.1 400 "));
	n = (int)read(fd, log, sizeof(log) - 1);
	assert_true(n > 0);
	log[n] = '\0';
	assert_string_equal(log, "{\"refused\": \"evil.example:443\"}\n"
				 "{\"refused\": \"localhost:1\"}\n");
	close(fd);
	close(o.log_fd);
	(void)unlink(tmpl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_connect),
		cmocka_unit_test(test_parse_absolute),
		cmocka_unit_test(test_parse_incomplete_and_bad),
		cmocka_unit_test(test_allow_list),
		cmocka_unit_test(test_url_and_loopback),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_handle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
