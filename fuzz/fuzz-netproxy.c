/* Fuzz target for the request parser of the network proxy
 * (proc/netproxy.c): the bytes an agent sends to `bernstein netproxy`
 * through its sandbox's socket. The input is a request head (or anything);
 * it is parsed whole and in every prefix a client could have sent so far.
 * Properties, besides never crashing or reading past the input:
 *   - a result is 1, 0, -EBADMSG or -ENOBUFS, and -ENOBUFS only when no
 *     head ends within NETPROXY_HEAD_MAX bytes;
 *   - a prefix never completes a head the whole input does not (1 on a
 *     prefix means 1 on the whole, with the same head length);
 *   - a complete head lies within the input and the cap, its request line
 *     within the head; the host is non-empty, lower case, of host (or IPv6)
 *     characters only, the port 1..65535; an absolute-URI request's path
 *     lies within its request line;
 *   - an address formats and parses back to itself, and is allowed by an
 *     allow-list holding it alone. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "proc/netproxy.h"
#include "util/banned.h"

static void check_request(const struct netproxy_request *rq, size_t size)
{
	char buf[NETPROXY_HOST_MAX + 16];
	struct netproxy_addr back;
	size_t i, n = strlen(rq->addr.host);

	if (rq->head_len > size || rq->head_len > NETPROXY_HEAD_MAX || rq->line_len > rq->head_len)
		abort();
	if (n == 0 || rq->addr.port == 0 || rq->addr.port > 65535)
		abort();
	for (i = 0; i < n; i++) {
		char c = rq->addr.host[i];

		if ((c >= 'A' && c <= 'Z') ||
		    !(strchr("abcdefghijklmnopqrstuvwxyz0123456789-._:", c)))
			abort();
	}
	if (!rq->connect && rq->path_off + rq->path_len > rq->line_len)
		abort();
	netproxy_addr_format(&rq->addr, buf, sizeof(buf));
	if (netproxy_addr_parse(buf, strlen(buf), &back) != 0 || back.port != rq->addr.port ||
	    back.v6 != rq->addr.v6 || strcmp(back.host, rq->addr.host) != 0)
		abort();
	if (!netproxy_allowed(&back, 1, &rq->addr))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netproxy_request whole, part;
	char *copy;
	size_t k;
	int r;

	/* an exact-size copy: a read past the end is caught */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	r = netproxy_parse(copy, size, &whole);
	if (r != 1 && r != 0 && r != -EBADMSG && r != -ENOBUFS)
		abort();
	if (r == -ENOBUFS && size < NETPROXY_HEAD_MAX)
		abort();
	if (r == 1)
		check_request(&whole, size);
	for (k = 0; k < size && k < 512; k++) {
		int p = netproxy_parse(copy, k, &part);

		if (p == 1 && (r != 1 || part.head_len != whole.head_len))
			abort();
	}
	free(copy);
	return 0;
}
