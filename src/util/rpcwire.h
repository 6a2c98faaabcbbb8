/* JSON-RPC 2.0 messages, one a line, over a pair of file descriptors. */
#ifndef BERNSTEIN_UTIL_RPCWIRE_H
#define BERNSTEIN_UTIL_RPCWIRE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/sbuf.h"

#define RPCWIRE_DEFAULT_MAX (16 * 1024 * 1024)

/* The framing of JSON-RPC 2.0 over stdio as MCP uses it (the runner's MCP
 * client, runner/mcp.h, and `bernstein mcp`, the server): one compact JSON
 * text a line. rfd is read, wfd written (the caller owns both; blocking or
 * not), lines are capped at max_message (0 = RPCWIRE_DEFAULT_MAX).
 * Deadlines are rpcwire_now_ms() values; UINT64_MAX waits for ever. */
struct rpcwire {
	int rfd, wfd;
	bool eof;	  /* rfd gave end-of-file */
	struct sbuf rbuf; /* bytes read, not yet a full line */
};

uint64_t rpcwire_now_ms(void);
void rpcwire_init(struct rpcwire *w, int rfd, int wfd, size_t max_message);
void rpcwire_release(struct rpcwire *w);
/* The next line without its newline (*ret owned, NUL-terminated; it may
 * hold NUL bytes, *ret_len counts them): -EPIPE at end of file (a partial
 * last line is dropped), -ENOBUFS past max_message, -ETIMEDOUT, -errno. */
int rpcwire_read_line(struct rpcwire *w, char **ret, size_t *ret_len, uint64_t deadline);
/* msg, compact, and a newline: 0, -EINVAL (not serialisable), -EPIPE (no
 * wfd), -ETIMEDOUT, -errno. */
int rpcwire_send(struct rpcwire *w, const json_t *msg, uint64_t deadline);
/* poll(2) of one fd until deadline (in 1 s slices, EINTR retried): > 0
 * ready, -ETIMEDOUT, -errno. */
int rpcwire_poll(int fd, short events, uint64_t deadline);

#endif
