/* The network policy of a sandboxed task (docs/security.md, "Network"):
 * the allow-listing HTTP proxy that runs outside the sandbox, and the bridge
 * that runs inside it.
 *
 *   full  the agent shares the host's network (no namespace of its own);
 *   llm   a network namespace with loopback only; the agent reaches the
 *         outside through a proxy bernstein runs (`bernstein netproxy`),
 *         listening on a Unix socket bound into the sandbox. It speaks
 *         HTTP CONNECT and absolute-URI HTTP requests, allows only the
 *         host:port pairs of the agent's endpoint (compared as the client
 *         spelled them: only an allowed name is ever resolved), answers 403
 *         to anything else and writes one line per refused host to its log.
 *         Inside, the bridge (started by `bernstein shim` before the agent's
 *         execve) listens on 127.0.0.1:PORT (the agent's HTTPS_PROXY) and
 *         forwards each connection to the socket; for an endpoint on a
 *         loopback address it also listens on that exact address and port
 *         and tunnels each connection with CONNECT, so an agent that
 *         ignores proxy variables reaches its endpoint too;
 *   none  a network namespace with loopback only, no bridge.
 *
 * Everything that reads a client's bytes is bounded: a request head of at
 * most NETPROXY_HEAD_MAX bytes, read within NETPROXY_HEAD_TIMEOUT_MS. */
#ifndef BERNSTEIN_PROC_NETPROXY_H
#define BERNSTEIN_PROC_NETPROXY_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/diag.h"

enum net_mode {
	NET_MODE_FULL, /* "full" */
	NET_MODE_LLM,  /* "llm" */
	NET_MODE_NONE, /* "none" */
	_NET_MODE_MAX,
	_NET_MODE_INVALID = -EINVAL,
};

const char *net_mode_to_string(enum net_mode m);
enum net_mode net_mode_from_string(const char *s);

#define NETPROXY_HEAD_MAX	    8192
#define NETPROXY_HOST_MAX	    253
#define NETPROXY_HEAD_TIMEOUT_MS    10000
#define NETPROXY_CONNECT_TIMEOUT_MS 10000
#define NETPROXY_MAX_CONNS	    64
#define NETPROXY_LOG_MAX	    (64 * 1024) /* the refusal log stops growing here */

/* A host and port as a client names them: host lowercased, an IPv6
 * literal without its brackets (v6 set). */
struct netproxy_addr {
	char host[NETPROXY_HOST_MAX + 1];
	unsigned port;
	bool v6;
};

/* A parsed request head. */
struct netproxy_request {
	bool connect;		   /* CONNECT host:port; else an absolute-URI request */
	char method[16];	   /* as sent */
	struct netproxy_addr addr; /* where it asks to go */
	size_t path_off, path_len; /* absolute-URI: the origin-form path in the buffer */
	size_t line_len;	   /* the request line with its CRLF (or LF) */
	size_t head_len;	   /* the whole head with the blank line */
};

/* Parse a request head at the start of buf[0..len): 1 complete (*ret
 * filled), 0 incomplete (read more), -EBADMSG malformed (not CONNECT or an
 * absolute http:// URI, a bad host or port, a control byte in the request
 * line), -ENOBUFS no end within NETPROXY_HEAD_MAX bytes. */
int netproxy_parse(const char *buf, size_t len, struct netproxy_request *ret);

/* "HOST:PORT" or "[V6]:PORT" into *ret (host checked, lowercased; port
 * 1..65535). 0 or -EINVAL. */
int netproxy_addr_parse(const char *s, size_t len, struct netproxy_addr *ret);

/* The host and port of an http:// or https:// URL (default port 80 or
 * 443). 0 or -EINVAL. */
int netproxy_url_addr(const char *url, struct netproxy_addr *ret);

/* Whether host (IPv4 dotted quad in 127/8, ::1, or "localhost") is a
 * loopback address spelled literally. */
bool netproxy_is_loopback(const struct netproxy_addr *a);

/* Whether a is one of allow[0..n): the same literal host and port. */
bool netproxy_allowed(const struct netproxy_addr *allow, size_t n, const struct netproxy_addr *a);

/* "host:port" ("[v6]:port") into buf. */
const char *netproxy_addr_format(const struct netproxy_addr *a, char *buf, size_t size);

struct netproxy_opts {
	const struct netproxy_addr *allow;
	size_t n_allow;
	int log_fd; /* one JSON line per refusal (O_APPEND), or -1 */
};

/* Serve the proxy on listen_fd until child (a pidfd, or -1: forever)
 * becomes readable (the process exited). Each connection is handled in a
 * process of its own that dies with this one (at most NETPROXY_MAX_CONNS
 * at once). 0, or a negative errno. */
int netproxy_serve(int listen_fd, int child_pidfd, const struct netproxy_opts *o);

/* Handle one client connection (blocking): read its head, answer 400, 403
 * or 502, or connect and relay. For netproxy_serve() and tests. */
void netproxy_handle(int fd, const struct netproxy_opts *o);

/* Copy bytes both ways between a and b until both directions ended. */
void netproxy_relay(int a, int b);

/* ---- the bridge inside the sandbox ---- */

struct netbridge_opts {
	const char *socket;		     /* the proxy's Unix socket */
	unsigned proxy_port;		     /* listen on 127.0.0.1:PORT, forward as is; 0 = none */
	const struct netproxy_addr *tunnels; /* listen on each (loopback), CONNECT through */
	size_t n_tunnels;
};

/* Bind every listener (in the caller's network namespace), then fork the
 * bridge: it serves them until its parent (the caller, which goes on to
 * execve the agent) exits. 0 or a negative errno with reterr (a listener
 * could not be bound). A tunnel on a port the caller may not bind (below
 * 1024 without the capability) is left out with the reason in ret_warning
 * (when given; else it is an error). */
int netbridge_start(const struct netbridge_opts *o, struct diag *ret_warning, struct diag *reterr);

#endif
