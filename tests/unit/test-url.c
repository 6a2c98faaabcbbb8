/* util/url.h: every rule of url_check(), each with its exact message. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/url.h"

/* s is refused with exactly msg. */
static void refused(const char *s, const char *msg)
{
	struct url_parts u = {.port = 4242};
	struct diag d;

	diag_clear(&d);
	if (url_check(s, &u, &d) != -EINVAL)
		fail_msg("'%s' was accepted", s);
	if (strcmp(d.msg, msg) != 0)
		fail_msg("'%s':\n  got  %s\n  want %s", s, d.msg, msg);
	assert_int_equal(u.port, 4242); /* ret untouched on failure */
}

static struct url_parts accepted(const char *s)
{
	struct url_parts u;
	struct diag d;

	diag_clear(&d);
	if (url_check(s, &u, &d) != 0)
		fail_msg("'%s' was refused: %s", s, d.msg);
	return u;
}

static void test_accepted(void **state)
{
	struct url_parts u;

	(void)state;
	u = accepted("http://127.0.0.1:4000/v1");
	assert_false(u.https);
	assert_string_equal(u.host, "127.0.0.1");
	assert_int_equal(u.port, 4000);
	assert_string_equal(u.path, "/v1");

	u = accepted("https://gw.example.com");
	assert_true(u.https);
	assert_string_equal(u.host, "gw.example.com");
	assert_int_equal(u.port, 0);
	assert_string_equal(u.path, "");

	u = accepted("http://[::1]:8080/openai/v1/");
	assert_true(u.ipv6);
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 8080);
	assert_string_equal(u.path, "/openai/v1/");

	u = accepted("http://[2001:db8::1]");
	assert_string_equal(u.host, "2001:db8::1");

	u = accepted("http://localhost:1/");
	assert_int_equal(u.port, 1);
	u = accepted("http://h:65535");
	assert_int_equal(u.port, 65535);
	u = accepted("http://my_llm-1.internal/v1/a%20b");
	assert_string_equal(u.path, "/v1/a%20b");
	/* a name with digits is a name; 4 numbers are an address */
	accepted("http://1host.example");
	accepted("http://10.0.0.255");
	accepted("http://h/v1;x=1,y@z"); /* '@' in the path is not userinfo */
	assert_int_equal(url_check("http://h", NULL, NULL), 0);
}

static void test_scheme(void **state)
{
	(void)state;
	refused("ftp://h/x", "base_url 'ftp://h/x': the scheme must be http:// or https://");
	refused("HTTP://h", "base_url 'HTTP://h': the scheme must be http:// or https://");
	refused("127.0.0.1:4000",
		"base_url '127.0.0.1:4000': the scheme must be http:// or https://");
	refused("http:/h", "base_url 'http:/h': the scheme must be http:// or https://");
	refused("", "base_url: empty");
}

static void test_blanks_and_controls(void **state)
{
	(void)state;
	refused("http://h /v1",
		"base_url 'http://h /v1': holds whitespace, a control character or a non-ASCII byte (write an international host name in its xn-- form)");
	refused("http://h/v1\n",
		"base_url 'http://h/v1\\x0a': holds whitespace, a control character or a non-ASCII byte (write an international host name in its xn-- form)");
	refused("http://h\t",
		"base_url 'http://h\\x09': holds whitespace, a control character or a non-ASCII byte (write an international host name in its xn-- form)");
	refused("http://b\xc3\xbc"
		"cher.example",
		"base_url 'http://b\\xc3\\xbccher.example': holds whitespace, a control character or a non-ASCII byte (write an international host name in its xn-- form)");
	accepted("http://xn--bcher-kva.example");
}

static void test_config_breakers(void **state)
{
	(void)state;
	refused("http://h/v1\"",
		"base_url 'http://h/v1\"': holds one of \" ' \\ { } ` $ < > (it is written into agents' config files)");
	refused("http://h/{x}",
		"base_url 'http://h/{x}': holds one of \" ' \\ { } ` $ < > (it is written into agents' config files)");
	refused("http://h/$HOME",
		"base_url 'http://h/$HOME': holds one of \" ' \\ { } ` $ < > (it is written into agents' config files)");
	refused("http://h\\x",
		"base_url 'http://h\\x5cx': holds one of \" ' \\ { } ` $ < > (it is written into agents' config files)");
}

static void test_userinfo(void **state)
{
	(void)state;
	/* the message masks them */
	refused("http://user:pass@h:4000/v1",
		"base_url 'http://***@h:4000/v1': credentials in the URL (user@host) are not allowed; give the key with api_key_env");
	refused("https://sk-abc@gw.example",
		"base_url 'https://***@gw.example': credentials in the URL (user@host) are not allowed; give the key with api_key_env");
	refused("http://a@b@h/v1",
		"base_url 'http://***@h/v1': credentials in the URL (user@host) are not allowed; give the key with api_key_env");
	refused("http://@h",
		"base_url 'http://***@h': credentials in the URL (user@host) are not allowed; give the key with api_key_env");
	/* no message repeats them, whatever rule refuses the URL first */
	refused("ftp://u:pw@h/x",
		"base_url 'ftp://***@h/x': the scheme must be http:// or https://");
	refused("http://u:pw@h/v1?x",
		"base_url 'http://***@h/v1?x': a query ('?') or fragment ('#') is not allowed");
	refused("http://u:p\tw@h/v1",
		"base_url 'http://***@h/v1': holds whitespace, a control character or a non-ASCII byte (write an international host name in its xn-- form)");
	{
		char url[600], msg[700];

		(void)snprintf(url, sizeof(url), "http://user:%0450d@h/v1", 7);
		(void)snprintf(
			msg, sizeof(msg),
			"base_url 'http://***@h/v1': credentials in the URL (user@host) are not allowed; give the key with api_key_env");
		refused(url, msg);
	}
}

static void test_host(void **state)
{
	(void)state;
	refused("http://", "base_url 'http://': no host");
	refused("https:///v1", "base_url 'https:///v1': no host");
	refused("http://:4000/v1", "base_url 'http://:4000/v1': no host");
	refused("http://-h.example",
		"base_url 'http://-h.example': invalid host '-h.example' (a DNS name, an IPv4 address or an IPv6 address in brackets)");
	refused("http://h-.example",
		"base_url 'http://h-.example': invalid host 'h-.example' (a DNS name, an IPv4 address or an IPv6 address in brackets)");
	refused("http://a..b",
		"base_url 'http://a..b': invalid host 'a..b' (a DNS name, an IPv4 address or an IPv6 address in brackets)");
	refused("http://h.example.",
		"base_url 'http://h.example.': invalid host 'h.example.' (a DNS name, an IPv4 address or an IPv6 address in brackets)");
	refused("http://h!x",
		"base_url 'http://h!x': invalid host 'h!x' (a DNS name, an IPv4 address or an IPv6 address in brackets)");
	{
		char url[128], msg[512], label[65];

		memset(label, 'a', 64);
		label[64] = '\0';
		(void)snprintf(url, sizeof(url), "http://%s.example", label);
		(void)snprintf(
			msg, sizeof(msg),
			"base_url '%s': invalid host '%s.example' (a DNS name, an IPv4 address or an IPv6 address in brackets)",
			url, label);
		refused(url, msg);
		label[63] = '\0';
		(void)snprintf(url, sizeof(url), "http://%s.example", label);
		accepted(url);
	}
	refused("http://999.1.1.1",
		"base_url 'http://999.1.1.1': invalid IPv4 address '999.1.1.1'");
	refused("http://1.2.3:80", "base_url 'http://1.2.3:80': invalid IPv4 address '1.2.3'");
	refused("http://[::g]/v1", "base_url 'http://[::g]/v1': invalid IPv6 address '[::g]'");
	refused("http://[fe80::1%25eth0]",
		"base_url 'http://[fe80::1%25eth0]': invalid IPv6 address '[fe80::1%25eth0]'");
	refused("http://[::1/v1",
		"base_url 'http://[::1/v1': invalid IPv6 address (write it as [ADDRESS])");
	refused("http://[::1]x:80",
		"base_url 'http://[::1]x:80': junk after the IPv6 address ('x:80')");
	refused("http://::1/v1", "base_url 'http://::1/v1': no host");
}

static void test_port(void **state)
{
	(void)state;
	refused("http://h:/v1",
		"base_url 'http://h:/v1': invalid port '' (a number from 1 to 65535)");
	refused("http://h:0", "base_url 'http://h:0': invalid port '0' (a number from 1 to 65535)");
	refused("http://h:65536",
		"base_url 'http://h:65536': invalid port '65536' (a number from 1 to 65535)");
	refused("http://h:123456",
		"base_url 'http://h:123456': invalid port '123456' (a number from 1 to 65535)");
	refused("http://h:80x/v1",
		"base_url 'http://h:80x/v1': invalid port '80x' (a number from 1 to 65535)");
	refused("http://h:-1",
		"base_url 'http://h:-1': invalid port '-1' (a number from 1 to 65535)");
	refused("http://h:80:81",
		"base_url 'http://h:80:81': invalid port '80:81' (a number from 1 to 65535)");
	refused("http://[::1]:99999",
		"base_url 'http://[::1]:99999': invalid port '99999' (a number from 1 to 65535)");
}

static void test_query_fragment_path(void **state)
{
	(void)state;
	refused("http://h/v1?key=x",
		"base_url 'http://h/v1?key=x': a query ('?') or fragment ('#') is not allowed");
	refused("http://h/v1#frag",
		"base_url 'http://h/v1#frag': a query ('?') or fragment ('#') is not allowed");
	refused("http://h?",
		"base_url 'http://h?': a query ('?') or fragment ('#') is not allowed");
	refused("http://h/a%2",
		"base_url 'http://h/a%2': invalid percent-escape in the path (expected %XX)");
	refused("http://h/a%zz",
		"base_url 'http://h/a%zz': invalid percent-escape in the path (expected %XX)");
}

static void test_length(void **state)
{
	char *s = malloc(URL_MAX + 2);
	struct diag d;

	(void)state;
	memcpy(s, "http://h/", 9);
	memset(s + 9, 'a', URL_MAX - 9);
	s[URL_MAX] = '\0';
	assert_int_equal(url_check(s, NULL, &d), 0);
	s[URL_MAX] = 'a';
	s[URL_MAX + 1] = '\0';
	assert_int_equal(url_check(s, NULL, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "...': longer than 2048 bytes"));
	free(s);
}

/* ---- webhook URLs ---- */

static void shown_is(const char *s, const char *want)
{
	char buf[URL_MAX + 64], again[URL_MAX + 64];

	url_webhook_shown(s, buf, sizeof(buf));
	if (strcmp(buf, want) != 0)
		fail_msg("'%s' shown:\n  got  %s\n  want %s", s, buf, want);
	url_webhook_shown(buf, again, sizeof(again));
	assert_string_equal(again, buf); /* its own shown form */
}

static void test_webhook_shown(void **state)
{
	(void)state;
	shown_is("https://hooks.slack.com/services/T0/B0/SECRET", "https://hooks.slack.com/***");
	shown_is("http://user:pass@127.0.0.1:8080/x?token=SECRET", "http://***@127.0.0.1:8080/***");
	shown_is("http://a@b@host/p", "http://***@host/***");
	shown_is("https://example.com", "https://example.com");
	shown_is("https://example.com?token=SECRET", "https://example.com/***");
	shown_is("https://[::1]:9/", "https://[::1]:9/***");
	shown_is("ftp://user:SECRET@host/", "***");
	shown_is("https://ho\nst/x", "https://ho/***");
}

static void webhook_refused(const char *s, const char *msg)
{
	struct diag d;

	diag_clear(&d);
	if (url_webhook_check(s, NULL, &d) != -EINVAL)
		fail_msg("'%s' was accepted", s);
	if (strcmp(d.msg, msg) != 0)
		fail_msg("'%s':\n  got  %s\n  want %s", s, d.msg, msg);
	if (strstr(d.msg, "SECRET"))
		fail_msg("'%s': the message repeats a secret", s);
}

static void test_webhook_check(void **state)
{
	struct url_parts u;

	(void)state;
	assert_int_equal(
		url_webhook_check("https://u:SECRET@h.example:8443/a/b?t=SECRET#f", &u, NULL), 0);
	assert_string_equal(u.host, "h.example");
	assert_int_equal(u.port, 8443);
	assert_string_equal(u.path, "/a/b?t=SECRET#f");
	assert_int_equal(url_webhook_check("http://127.0.0.1/?x", NULL, NULL), 0);
	webhook_refused("", "webhook: empty");
	webhook_refused("ftp://u:SECRET@h/",
			"webhook '***': the scheme must be http:// or https://");
	webhook_refused("https://u:SECRET@/x", "webhook 'https://***@/***': no host");
	webhook_refused(
		"https://u:SECRET@h:0/x",
		"webhook 'https://***@h:0/***': invalid port '0' (a number from 1 to 65535)");
	webhook_refused("https://h/a b?SECRET",
			"webhook 'https://h/***': holds whitespace, a control character or a "
			"non-ASCII byte (percent-encode it)");
	webhook_refused("https://bad_host-/SECRET",
			"webhook 'https://bad_host-/***': invalid host 'bad_host-' (a DNS name, an "
			"IPv4 address or an IPv6 address in brackets)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_scheme),
		cmocka_unit_test(test_blanks_and_controls),
		cmocka_unit_test(test_config_breakers),
		cmocka_unit_test(test_userinfo),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_port),
		cmocka_unit_test(test_query_fragment_path),
		cmocka_unit_test(test_length),
		cmocka_unit_test(test_webhook_shown),
		cmocka_unit_test(test_webhook_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
