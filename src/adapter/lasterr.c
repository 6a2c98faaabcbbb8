/* The agent's own last error (see lasterr.h). */
#include "adapter/lasterr.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/banned.h"

/* What an error line of a CLI's stderr says (ASCII, lowercase: matched
 * without regard to case). Every dialect's CLI prints its fatal errors in
 * plain words before it exits: gemini's "When using Gemini API, you must
 * specify the GEMINI_API_KEY environment variable.", codex's "Error: ...",
 * node's "Error: ..." of an uncaught exception. */
static const char *const error_words[] = {
	"error",     "must specify", "not logged in", "unauthorized", "forbidden",  "invalid api",
	"api key",   "authenticat",  "please run",    "login",	      "credential", "failed",
	"fatal",     "denied",	     "refused",	      "exception",    "not found",  "cannot",
	"could not", "unable to",    "quota",	      "rate limit",   "expired",
};

/* Lines that carry those words and are not the error (per dialect's CLI, and
 * for all: node's deprecation notes, a stack trace's frames). */
struct quiet {
	enum dialect d; /* _DIALECT_MAX: every dialect */
	const char *phrase;
};

static const struct quiet quiet_lines[] = {
	{_DIALECT_MAX, "deprecat"},
	{_DIALECT_MAX, "warning"},
	{DIALECT_GEMINI, "yolo mode"},
	{DIALECT_GEMINI, "ripgrep is not available"},
	{DIALECT_GEMINI, "loaded cached credentials"},
	{DIALECT_CODEX, "reading additional input from stdin"},
	{DIALECT_CODEX, "refusing to create helper binaries"},
};

void lasterr_init(struct lasterr *le, enum dialect d)
{
	memset(le, 0, sizeof(*le));
	le->dialect = d;
}

static bool ci_has(const char *s, size_t n, const char *w)
{
	size_t m = strlen(w), i, k;

	for (i = 0; i + m <= n; i++) {
		for (k = 0; k < m; k++) {
			int c = (unsigned char)s[i + k];

			if (c >= 'A' && c <= 'Z')
				c += 'a' - 'A';
			if (c != (unsigned char)w[k])
				break;
		}
		if (k == m)
			return true;
	}
	return false;
}

/* The length of the valid UTF-8 character at s (n bytes left), 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t want, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		want = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		want = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		want = 4;
	else
		return 0;
	if (n < want)
		return 0;
	for (i = 1; i < want; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (want == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0;
	if (want == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return want;
}

const char *lasterr_oneline(const char *s, size_t len, char *buf, size_t size)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t i = 0, o = 0, keep = 0;
	bool space = false, cut = false;

	if (!size)
		return buf;
	if (!s)
		len = 0;
	while (i < len) {
		size_t n = utf8_len(p + i, len - i);
		const char *ch = (const char *)p + i;

		/* C0, DEL, C1 (U+0080..U+009F) and blanks: one space */
		if (p[i] < 0x20 || p[i] == 0x7f || p[i] == ' ' ||
		    (n == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0)) {
			space = true;
			i += n ? n : 1;
			continue;
		}
		if (n == 0) {
			ch = "?";
			n = 1;
			i++;
		} else {
			i += n;
		}
		if (o + n + (space && o ? 1 : 0) >= size) {
			cut = true;
			break;
		}
		if (space && o)
			buf[o++] = ' ';
		space = false;
		memcpy(buf + o, ch, n);
		o += n;
		if (o + 3 < size)
			keep = o; /* a cut here leaves room for "..." */
	}
	if (cut) {
		o = keep;
		if (o + 3 < size) {
			memcpy(buf + o, "...", 3);
			o += 3;
		}
	}
	buf[o] = '\0';
	return buf;
}

void lasterr_observe(struct lasterr *le, const struct event *ev)
{
	const char *msg = NULL;

	switch (ev->kind) {
	case EVENT_ERROR:
	case EVENT_RATE_LIMITED:
		msg = ev->message;
		break;
	case EVENT_RESULT:
		if (ev->is_error)
			msg = ev->message ? ev->message : ev->text;
		break;
	default:
		return;
	}
	if (!msg || !*msg) {
		if (!ev->http_status)
			return;
		msg = ev->kind == EVENT_RESULT ? "the agent's result is an error" : "API error";
	}
	(void)lasterr_oneline(msg, strlen(msg), le->stream, sizeof(le->stream));
	if (!le->stream[0])
		return;
	/* a rate-limit event repeats the error it follows: keep the status */
	if (ev->http_status || ev->kind != EVENT_RATE_LIMITED)
		le->http = ev->http_status > 0 && ev->http_status < 1000 ? ev->http_status : 0;
}

static bool quiet(enum dialect d, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(quiet_lines) / sizeof(quiet_lines[0]); i++)
		if ((quiet_lines[i].d == _DIALECT_MAX || quiet_lines[i].d == d) &&
		    ci_has(s, n, quiet_lines[i].phrase))
			return true;
	return false;
}

static bool reads_like_error(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(error_words) / sizeof(error_words[0]); i++)
		if (ci_has(s, n, error_words[i]))
			return true;
	return false;
}

void lasterr_stderr(struct lasterr *le, const char *line, size_t len)
{
	char one[LASTERR_MAX + 1], both[2 * LASTERR_MAX + 2];
	size_t n, have;

	(void)lasterr_oneline(line, line ? len : 0, one, sizeof(one));
	n = strlen(one);
	if (n == 0)
		return; /* a blank line neither ends nor adds to an error */
	/* a stack trace's frame ("    at f (x.js:1:2)") is not the error */
	if (strncmp(one, "at ", 3) == 0 || quiet(le->dialect, one, n) ||
	    !reads_like_error(one, n)) {
		le->err_open = false;
		return;
	}
	have = strlen(le->err);
	if (!le->err_open || have == 0) {
		memcpy(le->err, one, n + 1);
	} else if (have < 3 || strcmp(le->err + have - 3, "...") != 0) {
		/* the error's next line ("Use /login to ..."): one text */
		(void)snprintf(both, sizeof(both), "%s %s", le->err, one);
		(void)lasterr_oneline(both, strlen(both), le->err, sizeof(le->err));
	}
	le->err_open = true;
}

const char *lasterr_text(const struct lasterr *le, char *buf, size_t size)
{
	const char *t = le->stream[0] ? le->stream : le->err;
	char code[8];

	if (!size)
		return buf;
	buf[0] = '\0';
	if (!t[0])
		return buf;
	if (le->stream[0] && le->http) {
		(void)snprintf(code, sizeof(code), "%d", le->http);
		if (!strstr(t, code)) {
			(void)snprintf(buf, size, "HTTP %d: %s", le->http, t);
			return buf;
		}
	}
	(void)snprintf(buf, size, "%s", t);
	return buf;
}
