/* Fuzz target for webhook URLs (util/url.h: url_webhook_check(),
 * url_webhook_shown()); the input is the URL (cut at its first NUL).
 * Checked:
 *   - the shown form is exactly the scheme, "***@" when there is a
 *     userinfo, a prefix of the host and port, and a slash and three
 *     asterisks when anything follows the authority (no byte of the userinfo, path or query), and
 *     it is its own shown form;
 *   - an accepted URL's shown form is accepted too, with the same host and
 *     port; its path is what follows the authority;
 *   - a refusal never repeats what follows the authority, nor the userinfo
 *     (the places a secret lives), when that is at least 16 bytes and does
 *     not occur in the host part, the shown form or the messages' own text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/url.h"
#include "util/xalloc.h"
#include "util/banned.h"

/* secret (n bytes) in hay, when it is not also in part (the host) */
static bool leaks(const char *hay, const char *secret, size_t n, const char *part)
{
	char *s;
	bool r;

	if (n < 16)
		return false;
	s = xstrndup(secret, n);
	r = strstr(hay, s) && !strstr(part, s);
	free(s);
	return r;
}

/* Text the messages are made of, beside the URL's host part: a "secret"
 * found in it is not a leak. */
static const char *const templates[] = {
	"webhook '***@/***': the scheme must be http:// or https:// no host invalid port ''",
	"(a number from 1 to 65535) invalid host '' (a DNS name, an IPv4 address or an IPv6 address in brackets)",
	"invalid IPv4 address invalid IPv6 address (write it as [ADDRESS]) junk after the IPv6 address ('')",
	"holds whitespace, a control character or a non-ASCII byte (percent-encode it) longer than 2048 bytes empty",
	NULL,
};

/* shown is exactly scheme, "***@" when there is a userinfo, a prefix of
 * host, and a slash and three asterisks when anything follows the
 * authority */
static bool shown_shape(const char *shown, const char *s, size_t scheme, bool at, const char *host,
			bool rest)
{
	size_t n = strlen(shown), k;

	if (strncmp(shown, s, scheme) != 0)
		return false;
	shown += scheme;
	n -= scheme;
	if (at) {
		if (strncmp(shown, "***@", 4) != 0)
			return false;
		shown += 4;
		n -= 4;
	}
	if (rest) {
		if (n < 4 || strcmp(shown + n - 4, "/***") != 0)
			return false;
		n -= 4;
	}
	for (k = 0; k < n; k++)
		if (shown[k] != host[k])
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = xstrndup((const char *)data, size);
	char shown[URL_MAX + 64], again[URL_MAX + 64];
	const char *auth, *end, *at = NULL, *p;
	struct url_parts u, v;
	struct diag d;
	size_t scheme = strncmp(s, "https://", 8) == 0 ? 8 : strncmp(s, "http://", 7) == 0 ? 7 : 0;

	url_webhook_shown(s, shown, sizeof(shown));
	url_webhook_shown(shown, again, sizeof(again));
	if (strcmp(shown, again) != 0)
		abort();
	if (!scheme) {
		if (strcmp(shown, "***") != 0 || url_webhook_check(s, NULL, &d) == 0)
			abort();
		free(s);
		return 0;
	}
	auth = s + scheme;
	end = auth + strcspn(auth, "/?#");
	for (p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	{
		const char *h = at ? at + 1 : auth;
		char *host = xstrndup(h, (size_t)(end - h));
		size_t nt = 0, nh = strlen(host), ns = strlen(shown), i;
		char *known;

		for (i = 0; templates[i]; i++)
			nt += strlen(templates[i]) + 1;
		known = xmalloc(nt + nh + ns + 1);
		for (nt = 0, i = 0; templates[i]; i++) {
			memcpy(known + nt, templates[i], strlen(templates[i]));
			nt += strlen(templates[i]);
			known[nt++] = '|';
		}

		if (!shown_shape(shown, s, scheme, at != NULL, host, *end != '\0'))
			abort();
		memcpy(known + nt, host, nh);
		memcpy(known + nt + nh, shown, ns + 1);
		diag_clear(&d);
		if (url_webhook_check(s, &u, &d) == 0) {
			if (strcmp(u.path, end) != 0)
				abort();
			if (url_webhook_check(shown, &v, NULL) != 0 ||
			    strcmp(u.host, v.host) != 0 || u.port != v.port)
				abort();
		} else if (leaks(d.msg, end, strlen(end), known) ||
			   (at && leaks(d.msg, auth, (size_t)(at - auth), known))) {
			abort();
		}
		free(known);
		free(host);
	}
	free(s);
	return 0;
}
