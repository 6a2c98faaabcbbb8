/* The allow-listing proxy and the in-sandbox bridge (netproxy.h). */
#include "proc/netproxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/usock.h"
#include "util/fsutil.h"
#include "util/banned.h"

static const char *const mode_names[_NET_MODE_MAX] = {
	[NET_MODE_FULL] = "full",
	[NET_MODE_LLM] = "llm",
	[NET_MODE_NONE] = "none",
};

const char *net_mode_to_string(enum net_mode m)
{
	return m >= 0 && m < _NET_MODE_MAX ? mode_names[m] : NULL;
}

enum net_mode net_mode_from_string(const char *s)
{
	int i;

	for (i = 0; s && i < _NET_MODE_MAX; i++)
		if (strcmp(mode_names[i], s) == 0)
			return (enum net_mode)i;
	return _NET_MODE_INVALID;
}

/* ---- parsing ---- */

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_';
}

static bool v6_char(char c)
{
	return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9') ||
	       c == ':' || c == '.';
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* "1".."65535", no sign, no leading zeros beyond one digit's worth */
static int parse_port(const char *s, size_t len, unsigned *ret)
{
	unsigned v = 0;
	size_t i;

	if (len == 0 || len > 5)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* host (with [] for IPv6) of len bytes into a (port untouched) */
static int parse_host(const char *s, size_t len, struct netproxy_addr *a)
{
	size_t i;

	memset(a->host, 0, sizeof(a->host));
	a->v6 = false;
	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
		a->v6 = true;
	}
	if (len == 0 || len > NETPROXY_HOST_MAX)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (a->v6 ? !v6_char(s[i]) : !host_char(s[i]))
			return -EINVAL;
		a->host[i] = lower(s[i]);
	}
	if (a->v6 && !memchr(a->host, ':', len))
		return -EINVAL;
	return 0;
}

int netproxy_addr_parse(const char *s, size_t len, struct netproxy_addr *ret)
{
	struct netproxy_addr a;
	const char *colon = NULL;
	size_t i;

	for (i = len; i > 0; i--)
		if (s[i - 1] == ':') {
			colon = s + i - 1;
			break;
		}
	if (!colon || (s[0] == '[' && (colon == s || colon[-1] != ']')))
		return -EINVAL;
	if (parse_host(s, (size_t)(colon - s), &a) < 0 ||
	    parse_port(colon + 1, len - (size_t)(colon - s) - 1, &a.port) < 0)
		return -EINVAL;
	if (!a.v6 && strchr(a.host, ':'))
		return -EINVAL;
	*ret = a;
	return 0;
}

/* the authority of an http(s) URL at s (up to its path) */
static int url_authority(const char *s, size_t len, unsigned default_port, size_t *ret_auth_len,
			 struct netproxy_addr *ret)
{
	struct netproxy_addr a;
	size_t n = 0, host_len;
	const char *colon = NULL;

	while (n < len && s[n] != '/' && s[n] != '?' && s[n] != '#')
		n++;
	if (memchr(s, '@', n))
		return -EINVAL; /* no userinfo: the host is what a reader sees first */
	host_len = n;
	if (n > 0 && s[n - 1] != ']') {
		size_t i;

		for (i = n; i > 0; i--)
			if (s[i - 1] == ':' || s[i - 1] == ']')
				break;
		if (i > 0 && s[i - 1] == ':') {
			colon = s + i - 1;
			host_len = (size_t)(colon - s);
		}
	}
	if (parse_host(s, host_len, &a) < 0)
		return -EINVAL;
	if (!a.v6 && strchr(a.host, ':'))
		return -EINVAL;
	if (colon) {
		if (parse_port(colon + 1, n - host_len - 1, &a.port) < 0)
			return -EINVAL;
	} else {
		a.port = default_port;
	}
	*ret_auth_len = n;
	*ret = a;
	return 0;
}

int netproxy_url_addr(const char *url, struct netproxy_addr *ret)
{
	size_t n;

	if (strncasecmp(url, "http://", 7) == 0)
		return url_authority(url + 7, strlen(url + 7), 80, &n, ret);
	if (strncasecmp(url, "https://", 8) == 0)
		return url_authority(url + 8, strlen(url + 8), 443, &n, ret);
	return -EINVAL;
}

bool netproxy_is_loopback(const struct netproxy_addr *a)
{
	struct in_addr in4;

	if (a->v6)
		return strcmp(a->host, "::1") == 0;
	if (strcmp(a->host, "localhost") == 0)
		return true;
	/* a dotted quad exactly (inet_pton takes no shorthand) */
	return inet_pton(AF_INET, a->host, &in4) == 1 && (ntohl(in4.s_addr) >> 24) == 127;
}

bool netproxy_allowed(const struct netproxy_addr *allow, size_t n, const struct netproxy_addr *a)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (allow[i].port == a->port && allow[i].v6 == a->v6 &&
		    strcmp(allow[i].host, a->host) == 0)
			return true;
	return false;
}

const char *netproxy_addr_format(const struct netproxy_addr *a, char *buf, size_t size)
{
	(void)snprintf(buf, size, a->v6 ? "[%s]:%u" : "%s:%u", a->host, a->port);
	return buf;
}

/* the end of the head (past its blank line) in buf[0..len), or 0 */
static size_t head_end(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

int netproxy_parse(const char *buf, size_t len, struct netproxy_request *ret)
{
	struct netproxy_request rq;
	const char *nl, *sp1, *sp2, *t;
	size_t line, end, i, tlen;

	memset(&rq, 0, sizeof(rq));
	if (len > NETPROXY_HEAD_MAX)
		len = NETPROXY_HEAD_MAX;
	nl = memchr(buf, '\n', len);
	end = head_end(buf, len);
	if (!nl || !end)
		return len >= NETPROXY_HEAD_MAX ? -ENOBUFS : 0;
	line = (size_t)(nl - buf);
	rq.line_len = line + 1;
	rq.head_len = end;
	if (line > 0 && buf[line - 1] == '\r')
		line--;
	for (i = 0; i < line; i++)
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] == 0x7f)
			return -EBADMSG;
	sp1 = memchr(buf, ' ', line);
	if (!sp1 || sp1 == buf || (size_t)(sp1 - buf) >= sizeof(rq.method))
		return -EBADMSG;
	for (t = buf; t < sp1; t++)
		if (*t < 'A' || *t > 'Z')
			return -EBADMSG;
	memcpy(rq.method, buf, (size_t)(sp1 - buf));
	t = sp1 + 1;
	sp2 = memchr(t, ' ', line - (size_t)(t - buf));
	if (!sp2 || sp2 == t)
		return -EBADMSG;
	if ((size_t)(buf + line - (sp2 + 1)) != 8 ||
	    (strncmp(sp2 + 1, "HTTP/1.1", 8) != 0 && strncmp(sp2 + 1, "HTTP/1.0", 8) != 0))
		return -EBADMSG;
	tlen = (size_t)(sp2 - t);
	if (strcmp(rq.method, "CONNECT") == 0) {
		rq.connect = true;
		if (netproxy_addr_parse(t, tlen, &rq.addr) < 0)
			return -EBADMSG;
	} else {
		size_t auth;

		if (tlen < 8 || strncasecmp(t, "http://", 7) != 0)
			return -EBADMSG;
		if (url_authority(t + 7, tlen - 7, 80, &auth, &rq.addr) < 0)
			return -EBADMSG;
		rq.path_off = (size_t)(t - buf) + 7 + auth;
		rq.path_len = tlen - 7 - auth;
	}
	*ret = rq;
	return 1;
}

/* ---- serving ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void reply(int fd, const char *status)
{
	char buf[160];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status);

	if (n > 0)
		(void)usock_send_all(fd, buf, (size_t)n);
}

static void log_refusal(const struct netproxy_opts *o, const struct netproxy_addr *a)
{
	char addr[NETPROXY_HOST_MAX + 16], line[NETPROXY_HOST_MAX + 64];
	struct stat st;
	int n;

	if (o->log_fd < 0 || fstat(o->log_fd, &st) < 0 || st.st_size >= NETPROXY_LOG_MAX)
		return;
	/* the host holds only [a-z0-9._:-]: nothing to escape */
	n = snprintf(line, sizeof(line), "{\"refused\": \"%s\"}\n",
		     netproxy_addr_format(a, addr, sizeof(addr)));
	if (n > 0 && (size_t)n < sizeof(line))
		(void)write_all(o->log_fd, line, (size_t)n); /* O_APPEND, one write */
}

/* connect to a (resolving an allowed name), within the timeout */
static int dial(const struct netproxy_addr *a)
{
	struct addrinfo hints, *res = NULL, *ai;
	char port[8];
	int fd, r = -EHOSTUNREACH;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (a->v6 ? AI_NUMERICHOST : 0);
	(void)snprintf(port, sizeof(port), "%u", a->port);
	if (getaddrinfo(a->host, port, &hints, &res) != 0)
		return -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		struct pollfd p;
		int err = 0;
		socklen_t el = sizeof(err);

		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			close_fdp(&fd);
			continue;
		}
		p.fd = fd;
		p.events = POLLOUT;
		if (poll(&p, 1, NETPROXY_CONNECT_TIMEOUT_MS) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
			close_fdp(&fd);
			continue;
		}
		(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		r = fd;
		break;
	}
	freeaddrinfo(res);
	return r;
}

/* read a head into buf (at most NETPROXY_HEAD_MAX bytes, within the
 * timeout): the parse result, with *len the bytes read */
static int read_head(int fd, char *buf, size_t *len, struct netproxy_request *rq)
{
	uint64_t deadline = now_ms() + NETPROXY_HEAD_TIMEOUT_MS;
	int r = 0;

	*len = 0;
	while (r == 0) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t t = now_ms();
		ssize_t n;

		if (t >= deadline || poll(&p, 1, (int)(deadline - t)) != 1)
			return -ETIMEDOUT;
		n = read(fd, buf + *len, NETPROXY_HEAD_MAX - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -ECONNRESET;
		*len += (size_t)n;
		r = netproxy_parse(buf, *len, rq);
	}
	return r;
}

void netproxy_handle(int fd, const struct netproxy_opts *o)
{
	char buf[NETPROXY_HEAD_MAX], line[NETPROXY_HEAD_MAX + 32];
	struct netproxy_request rq;
	size_t len = 0;
	int up = -1, r;

	r = read_head(fd, buf, &len, &rq);
	if (r == -ENOBUFS) {
		reply(fd, "431 Request Header Fields Too Large");
		return;
	}
	if (r < 0) {
		if (r == -EBADMSG)
			reply(fd, "400 Bad Request");
		return;
	}
	if (!netproxy_allowed(o->allow, o->n_allow, &rq.addr)) {
		log_refusal(o, &rq.addr);
		reply(fd, "403 Forbidden");
		return;
	}
	up = dial(&rq.addr);
	if (up < 0) {
		reply(fd, "502 Bad Gateway");
		return;
	}
	if (rq.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		if (usock_send_all(fd, ok, sizeof(ok) - 1) < 0 ||
		    usock_send_all(up, buf + rq.head_len, len - rq.head_len) < 0)
			goto out;
	} else {
		/* the request line in origin form, then the rest as sent */
		const char *ver = buf + rq.line_len - (buf[rq.line_len - 2] == '\r' ? 10 : 9);
		int n = snprintf(line, sizeof(line), "%s %s%.*s %.8s\r\n", rq.method,
				 rq.path_len && buf[rq.path_off] == '/' ? "" : "/",
				 (int)rq.path_len, buf + rq.path_off, ver);

		if (n < 0 || (size_t)n >= sizeof(line) || usock_send_all(up, line, (size_t)n) < 0 ||
		    usock_send_all(up, buf + rq.line_len, len - rq.line_len) < 0)
			goto out;
	}
	netproxy_relay(fd, up);
out:
	close_fdp(&up);
}

void netproxy_relay(int a, int b)
{
	struct pollfd p[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
	char buf[16384];
	int open_ = 2;

	while (open_ > 0) {
		int i;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (i = 0; i < 2; i++) {
			ssize_t n;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(p[i].fd, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				/* this direction ended: pass the end on */
				(void)shutdown(i ? a : b, SHUT_WR);
				p[i].fd = -1;
				open_--;
				if (n < 0)
					return;
				continue;
			}
			if (usock_send_all(i ? a : b, buf, (size_t)n) < 0)
				return;
		}
	}
}

/* Die with the parent (the caller was forked from it, whose pid is parent). */
static void die_with(pid_t parent)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(0);
}

static void reap(pid_t *kids, unsigned *live)
{
	unsigned i;

	for (i = 0; i < *live;) {
		if (waitpid(kids[i], NULL, WNOHANG) != 0) {
			kids[i] = kids[--*live];
			continue;
		}
		i++;
	}
}

int netproxy_serve(int listen_fd, int child_pidfd, const struct netproxy_opts *o)
{
	pid_t kids[NETPROXY_MAX_CONNS], self = getpid();
	unsigned live = 0;

	for (;;) {
		struct pollfd p[2] = {
			{.fd = child_pidfd, .events = POLLIN},
			{.fd = live < NETPROXY_MAX_CONNS ? listen_fd : -1, .events = POLLIN}};
		int n, fd;
		pid_t pid;

		reap(kids, &live);
		n = poll(p, 2, live ? 200 : -1);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (p[0].revents)
			return 0;
		if (!p[1].revents)
			continue;
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pid = fork();
		if (pid == 0) {
			die_with(self);
			netproxy_handle(fd, o);
			_exit(0);
		}
		if (pid > 0)
			kids[live++] = pid;
		close_fdp(&fd);
	}
}

/* ---- the bridge ---- */

static int listen_tcp(const struct netproxy_addr *a, int *ret_fd)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (a->v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)a->port);
		if (inet_pton(AF_INET6, a->host, &s6->sin6_addr) != 1)
			return -EINVAL;
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)a->port);
		if (inet_pton(AF_INET, strcmp(a->host, "localhost") == 0 ? "127.0.0.1" : a->host,
			      &s4->sin_addr) != 1)
			return -EINVAL;
		sl = sizeof(*s4);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 64) < 0) {
		int r = -errno;

		close_fdp(&fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* one bridged connection: through the proxy's socket, tunnelled to a when
 * a is given */
static void bridge_one(int fd, const char *socket_path, const struct netproxy_addr *a)
{
	char buf[NETPROXY_HEAD_MAX], addr[NETPROXY_HOST_MAX + 16];
	int up = -1;

	if (usock_connect(socket_path, 0, &up, NULL) < 0)
		return;
	if (a) {
		uint64_t deadline =
			now_ms() + NETPROXY_CONNECT_TIMEOUT_MS + NETPROXY_HEAD_TIMEOUT_MS;
		size_t len = 0;
		int n;

		netproxy_addr_format(a, addr, sizeof(addr));
		n = snprintf(buf, sizeof(buf), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr,
			     addr);
		if (n < 0 || usock_send_all(up, buf, (size_t)n) < 0)
			goto out;
		/* the proxy's answer, a byte at a time: nothing of the
		 * tunnel's own bytes is read here */
		while (len < sizeof(buf) && !head_end(buf, len)) {
			struct pollfd p = {.fd = up, .events = POLLIN};
			uint64_t t = now_ms();

			if (t >= deadline || poll(&p, 1, (int)(deadline - t)) != 1 ||
			    read(up, buf + len, 1) != 1)
				goto out;
			len++;
		}
		if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || strncmp(buf + 8, " 200", 4) != 0)
			goto out;
	}
	netproxy_relay(fd, up);
out:
	close_fdp(&up);
}

static void bridge_serve(const struct netbridge_opts *o, const int *fds, const int *tun, size_t n,
			 pid_t parent)
{
	const struct netproxy_addr *to[1 + 16];
	struct pollfd p[1 + 16];
	pid_t self = getpid();
	size_t i;

	/* what each listener tunnels to (NULL: the proxy port, as is) */
	memset(to, 0, sizeof(to));
	for (i = 0; i < o->n_tunnels; i++)
		if (tun[i] >= 0)
			to[tun[i]] = &o->tunnels[i];

	(void)signal(SIGCHLD, SIG_IGN); /* the kernel reaps the connections */
	die_with(parent);
	for (i = 0; i < n; i++) {
		p[i].fd = fds[i];
		p[i].events = POLLIN;
	}
	for (;;) {
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		for (i = 0; i < n; i++) {
			int fd;

			if (!p[i].revents)
				continue;
			fd = accept4(p[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			if (fork() == 0) {
				die_with(self);
				bridge_one(fd, o->socket, to[i]);
				_exit(0);
			}
			close_fdp(&fd);
		}
	}
}

int netbridge_start(const struct netbridge_opts *o, struct diag *ret_warning, struct diag *reterr)
{
	int fds[1 + 16], tun[16];
	size_t n = 0, i;
	pid_t parent = getpid(), pid;
	int r = 0;

	if (o->n_tunnels > 16) {
		diag_set(reterr, NULL, 0, 0, "network bridge: at most 16 tunnels");
		return -E2BIG;
	}
	if (o->proxy_port) {
		struct netproxy_addr lo = {.host = "127.0.0.1", .port = o->proxy_port};

		r = listen_tcp(&lo, &fds[n]);
		if (r < 0) {
			diag_set(reterr, NULL, 0, 0,
				 "network bridge: cannot listen on 127.0.0.1:%u: %s", o->proxy_port,
				 strerror(-r));
			goto out;
		}
		n++;
	}
	for (i = 0; i < o->n_tunnels; i++) {
		char addr[NETPROXY_HOST_MAX + 16];

		r = listen_tcp(&o->tunnels[i], &fds[n]);
		if (r == -EACCES && ret_warning) {
			/* a port below 1024 without the capability: the agent
			 * still has the proxy */
			diag_set(
				ret_warning, NULL, 0, 0,
				"network bridge: cannot listen on %s (%s): the agent reaches it only through its proxy variables",
				netproxy_addr_format(&o->tunnels[i], addr, sizeof(addr)),
				strerror(-r));
			tun[i] = -1;
			r = 0;
			continue;
		}
		if (r < 0) {
			diag_set(reterr, NULL, 0, 0, "network bridge: cannot listen on %s: %s",
				 netproxy_addr_format(&o->tunnels[i], addr, sizeof(addr)),
				 strerror(-r));
			goto out;
		}
		tun[i] = (int)n;
		n++;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		diag_set(reterr, NULL, 0, 0, "network bridge: fork: %s", strerror(-r));
		goto out;
	}
	if (pid == 0)
		bridge_serve(o, fds, tun, n, parent);
out:
	for (i = 0; i < n; i++)
		close_fdp(&fds[i]);
	return r;
}
