/* Endpoint URLs: the base_url of an agent's API endpoint (docs/spawning.md).
 *
 * A base_url is checked strictly before it goes anywhere, because it is
 * written into argv, the environment and agents' config files (JSON, TOML):
 *   - the scheme is http:// or https:// (lower case);
 *   - no whitespace, control characters or non-ASCII bytes anywhere;
 *   - none of " ' \ { } ` $ < > (they would break out of a config file);
 *   - a host: a DNS name (labels of [A-Za-z0-9_-], 1..63 bytes, not starting
 *     or ending with '-', at most 253 bytes in all), a dotted IPv4 address
 *     (four numbers 0..255; a host of digits and dots must be one), or an
 *     IPv6 address in brackets ([::1]; no zone id);
 *   - no userinfo (user:pass@host): credentials in a URL would leak into
 *     argv, plan.json and logs; the key goes through api_key_env;
 *   - an optional port, 1..65535;
 *   - an optional path starting with '/', whose '%' escapes are %XX;
 *   - no query ('?') and no fragment ('#').
 * Each rule has its own message (url_check()), all starting "base_url". */
#ifndef BERNSTEIN_UTIL_URL_H
#define BERNSTEIN_UTIL_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/diag.h"

/* Longest URL accepted (bytes). */
#define URL_MAX 2048

struct url_parts {
	bool https;
	char host[256]; /* as written; an IPv6 address without its brackets */
	bool ipv6;
	unsigned port;	  /* 0 = none given */
	const char *path; /* points into the checked string; "" when none */
};

/* Check s by the rules above. 0 with *ret filled (ret may be NULL), or
 * -EINVAL with the reason in reterr, e.g.
 *   base_url 'http://127.0.0.1:0/v1': invalid port '0' (a number from 1 to
 *   65535)
 * The message quotes the URL, except userinfo, which it replaces by three
 * asterisks (the rule refusing it must not repeat the credentials). */
int url_check(const char *s, struct url_parts *ret, struct diag *reterr);

/* Webhook URLs (bernstein.yaml notify.webhook; docs/configuration.md,
 * "Notifications"). Looser than a base_url, because a webhook's secret is
 * usually in the URL itself (user:pass@, a token in the path as Slack's
 * hooks.slack.com/services/T/B/SECRET, or in the query):
 *   - http:// or https://, at most URL_MAX bytes, printable ASCII only (no
 *     whitespace, control or non-ASCII bytes);
 *   - an optional userinfo (anything up to the authority's last '@');
 *   - a host and an optional port, checked as for a base_url;
 *   - then anything (path, query, fragment).
 * Messages show the URL as url_webhook_shown() does, never in full.
 * 0 with *ret filled (ret may be NULL; ret->path points at what follows the
 * authority), or -EINVAL with the reason, "webhook '...': ...". */
int url_webhook_check(const char *s, struct url_parts *ret, struct diag *reterr);
/* The form of a webhook URL that may be printed, logged or recorded:
 * scheme, three asterisks and '@' when it has a userinfo, host and port,
 * and '/' and three asterisks when anything follows the authority (a path
 * or query may be the secret): https://hooks.slack.com/ followed by the
 * asterisks for Slack's URL.
 * It checks as a webhook URL when s does, and is its own shown form.
 * Never longer than size - 1 bytes; size >= 16. */
void url_webhook_shown(const char *s, char *buf, size_t size);

#endif
