/* Endpoint URL checks (url.h). */
#include "util/url.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/banned.h"

/* The value as it may appear in a message: printable ASCII as is, other
 * bytes as \xHH, cut after 200 bytes. */
static const char *quote(const char *s, char *buf, size_t size)
{
	size_t o = 0, i;

	for (i = 0; s[i] && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == 200) {
			(void)snprintf(buf + o, size - o, "...");
			return buf;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
	}
	buf[o] = '\0';
	return buf;
}

/* s for a message: userinfo (up to the authority's last '@') replaced by
 * "***", so no message repeats credentials, then quote()d. */
static const char *shown(const char *s, char *buf, size_t size)
{
	const char *sep = strstr(s, "://"), *auth, *end, *at = NULL, *p;
	char masked[512];

	if (sep) {
		auth = sep + 3;
		end = auth + strcspn(auth, "/?#");
		for (p = auth; p < end; p++)
			if (*p == '@')
				at = p;
		if (at) {
			(void)snprintf(masked, sizeof(masked), "%.*s***%s", (int)(auth - s), s, at);
			s = masked;
		}
	}
	return quote(s, buf, size);
}

static bool is_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A DNS name: labels of [A-Za-z0-9_-], 1..63 bytes, not starting or ending
 * with '-'; 253 bytes at most. */
static bool dns_name_valid(const char *h, size_t n)
{
	size_t i, label = 0;

	if (n == 0 || n > 253)
		return false;
	for (i = 0; i < n; i++) {
		char c = h[i];

		if (c == '.') {
			if (label == 0 || h[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!is_alnum(c) && c != '-' && c != '_')
			return false;
		if (c == '-' && label == 0)
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0 && h[n - 1] != '-';
}

/* The authority's host and port (host up to auth_end) into *u; what and sv
 * name the URL in messages. */
static int check_authority(const char *host, const char *auth_end, const char *what, const char *sv,
			   struct url_parts *u, struct diag *reterr)
{
	const char *host_end, *port, *p;

	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(auth_end - host));
		struct in6_addr a6;

		if (!close || (size_t)(close - host - 1) >= sizeof(u->host)) {
			diag_set(reterr, NULL, 0, 0,
				 "%s '%s': invalid IPv6 address (write it as [ADDRESS])", what, sv);
			return -EINVAL;
		}
		memcpy(u->host, host + 1, (size_t)(close - host - 1));
		u->host[close - host - 1] = '\0';
		if (inet_pton(AF_INET6, u->host, &a6) != 1) {
			diag_set(reterr, NULL, 0, 0, "%s '%s': invalid IPv6 address '[%s]'", what,
				 sv, u->host);
			return -EINVAL;
		}
		u->ipv6 = true;
		host_end = close + 1;
		if (host_end < auth_end && *host_end != ':') {
			diag_set(reterr, NULL, 0, 0,
				 "%s '%s': junk after the IPv6 address ('%.*s')", what, sv,
				 (int)(auth_end - host_end), host_end);
			return -EINVAL;
		}
	} else {
		host_end = memchr(host, ':', (size_t)(auth_end - host));
		if (!host_end)
			host_end = auth_end;
		if (host_end == host) {
			diag_set(reterr, NULL, 0, 0, "%s '%s': no host", what, sv);
			return -EINVAL;
		}
		if ((size_t)(host_end - host) >= sizeof(u->host) ||
		    !dns_name_valid(host, (size_t)(host_end - host))) {
			diag_set(
				reterr, NULL, 0, 0,
				"%s '%s': invalid host '%.*s' (a DNS name, an IPv4 address or an IPv6 address in brackets)",
				what, sv, (int)(host_end - host), host);
			return -EINVAL;
		}
		memcpy(u->host, host, (size_t)(host_end - host));
		u->host[host_end - host] = '\0';
		if (strspn(u->host, "0123456789.") == strlen(u->host)) {
			struct in_addr a4;

			if (inet_pton(AF_INET, u->host, &a4) != 1) {
				diag_set(reterr, NULL, 0, 0, "%s '%s': invalid IPv4 address '%s'",
					 what, sv, u->host);
				return -EINVAL;
			}
		}
	}

	/* the port */
	if (host_end < auth_end) {
		unsigned long v = 0;
		size_t digits;

		port = host_end + 1; /* after ':' */
		digits = (size_t)(auth_end - port);
		for (p = port; p < auth_end && digits <= 5; p++) {
			if (*p < '0' || *p > '9')
				break;
			v = v * 10 + (unsigned long)(*p - '0');
		}
		if (digits == 0 || digits > 5 || p != auth_end || v < 1 || v > 65535) {
			diag_set(reterr, NULL, 0, 0,
				 "%s '%s': invalid port '%.*s' (a number from 1 to 65535)", what,
				 sv, (int)digits, port);
			return -EINVAL;
		}
		u->port = (unsigned)v;
	}

	return 0;
}

int url_check(const char *s, struct url_parts *ret, struct diag *reterr)
{
	struct url_parts u = {.path = ""};
	const char *p, *auth, *auth_end;
	char q[1024];
	const char *sv; /* s as messages show it */
	size_t i, n;
	int r;

	if (!s || !*s) {
		diag_set(reterr, NULL, 0, 0, "base_url: empty");
		return -EINVAL;
	}
	n = strlen(s);
	if (n > URL_MAX) {
		diag_set(reterr, NULL, 0, 0, "base_url '%s': longer than %d bytes",
			 shown(s, q, sizeof(q)), URL_MAX);
		return -EINVAL;
	}
	sv = shown(s, q, sizeof(q));
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f) {
			diag_set(
				reterr, NULL, 0, 0,
				"base_url '%s': holds whitespace, a control character or a non-ASCII byte (write an international host name in its xn-- form)",
				sv);
			return -EINVAL;
		}
	}
	if (strncmp(s, "http://", 7) == 0) {
		auth = s + 7;
	} else if (strncmp(s, "https://", 8) == 0) {
		auth = s + 8;
		u.https = true;
	} else {
		diag_set(reterr, NULL, 0, 0,
			 "base_url '%s': the scheme must be http:// or https://", sv);
		return -EINVAL;
	}
	if (strpbrk(s, "?#")) {
		diag_set(reterr, NULL, 0, 0,
			 "base_url '%s': a query ('?') or fragment ('#') is not allowed", sv);
		return -EINVAL;
	}
	if (strpbrk(s, "\"'\\{}`$<>")) {
		diag_set(
			reterr, NULL, 0, 0,
			"base_url '%s': holds one of \" ' \\ { } ` $ < > (it is written into agents' config files)",
			sv);
		return -EINVAL;
	}
	auth_end = auth + strcspn(auth, "/");
	if (memchr(auth, '@', (size_t)(auth_end - auth))) {
		/* v shows them as *** */
		diag_set(
			reterr, NULL, 0, 0,
			"base_url '%s': credentials in the URL (user@host) are not allowed; give the key with api_key_env",
			sv);
		return -EINVAL;
	}
	if (auth == auth_end) {
		diag_set(reterr, NULL, 0, 0, "base_url '%s': no host", sv);
		return -EINVAL;
	}

	r = check_authority(auth, auth_end, "base_url", sv, &u, reterr);
	if (r < 0)
		return r;

	/* the path */
	u.path = auth_end;
	for (p = auth_end; *p; p++)
		if (*p == '%' && !(is_hex(p[1]) && is_hex(p[2]))) {
			diag_set(
				reterr, NULL, 0, 0,
				"base_url '%s': invalid percent-escape in the path (expected %%XX)",
				sv);
			return -EINVAL;
		}
	if (ret)
		*ret = u;
	return 0;
}

/* ---- webhook URLs ---- */

/* Where the authority of s (after "://") ends, and its userinfo's '@' (the
 * last one in the authority; NULL none). */
static const char *authority_end(const char *auth, const char **ret_at)
{
	const char *end = auth + strcspn(auth, "/?#"), *p;

	*ret_at = NULL;
	for (p = auth; p < end; p++)
		if (*p == '@')
			*ret_at = p;
	return end;
}

void url_webhook_shown(const char *s, char *buf, size_t size)
{
	const char *auth, *end, *at, *host;
	size_t scheme, hn, i;

	if (size == 0)
		return;
	buf[0] = '\0';
	if (!s)
		return;
	if (strncmp(s, "https://", 8) == 0)
		scheme = 8;
	else if (strncmp(s, "http://", 7) == 0)
		scheme = 7;
	else {
		(void)snprintf(buf, size, "***");
		return;
	}
	auth = s + scheme;
	end = authority_end(auth, &at);
	host = at ? at + 1 : auth;
	hn = (size_t)(end - host);
	for (i = 0; i < hn; i++) {
		unsigned char c = (unsigned char)host[i];

		if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\'' || c == '\\') {
			hn = i; /* never shown: url_webhook_check() refuses it anyway */
			break;
		}
	}
	(void)snprintf(buf, size, "%.*s%s%.*s%s", (int)scheme, s, at ? "***@" : "", (int)hn, host,
		       *end ? "/***" : "");
}

int url_webhook_check(const char *s, struct url_parts *ret, struct diag *reterr)
{
	struct url_parts u = {.path = ""};
	const char *auth, *end, *at;
	char sv[URL_MAX + 64];
	size_t i, n;
	int r;

	if (!s || !*s) {
		diag_set(reterr, NULL, 0, 0, "webhook: empty");
		return -EINVAL;
	}
	url_webhook_shown(s, sv, sizeof(sv));
	n = strlen(s);
	if (n > URL_MAX) {
		diag_set(reterr, NULL, 0, 0, "webhook '%s': longer than %d bytes", sv, URL_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f) {
			diag_set(
				reterr, NULL, 0, 0,
				"webhook '%s': holds whitespace, a control character or a non-ASCII byte (percent-encode it)",
				sv);
			return -EINVAL;
		}
	}
	if (strncmp(s, "http://", 7) == 0) {
		auth = s + 7;
	} else if (strncmp(s, "https://", 8) == 0) {
		auth = s + 8;
		u.https = true;
	} else {
		diag_set(reterr, NULL, 0, 0, "webhook '%s': the scheme must be http:// or https://",
			 sv);
		return -EINVAL;
	}
	end = authority_end(auth, &at);
	if (at)
		auth = at + 1;
	if (auth == end) {
		diag_set(reterr, NULL, 0, 0, "webhook '%s': no host", sv);
		return -EINVAL;
	}
	r = check_authority(auth, end, "webhook", sv, &u, reterr);
	if (r < 0)
		return r;
	u.path = end;
	if (ret)
		*ret = u;
	return 0;
}
