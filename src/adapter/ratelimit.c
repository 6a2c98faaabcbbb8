#include "adapter/ratelimit.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "util/banned.h"

#define NOT_FOUND ((size_t)-1)

/* ---- byte helpers (ASCII only: agents' messages are matched in English) --- */

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(int c)
{
	c = lower(c);
	return c >= 'a' && c <= 'z';
}

static bool is_alnum(int c)
{
	return is_alpha(c) || is_digit(c);
}

/* A byte that continues a word: a needle may not start right after one. */
static bool is_word(int c)
{
	return is_alnum(c) || c == '_' || c == '-';
}

static bool is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static unsigned char at(const char *s, size_t n, size_t i)
{
	return i < n ? (unsigned char)s[i] : 0;
}

/* Does s[i..] start with the lowercase word w (case-insensitively)? */
static bool ci_at(const char *s, size_t n, size_t i, const char *w)
{
	size_t k;

	for (k = 0; w[k]; k++)
		if (i + k >= n || lower((unsigned char)s[i + k]) != (unsigned char)w[k])
			return false;
	return true;
}

/* The next position >= from where the lowercase needle w starts at a word
 * boundary, or NOT_FOUND. */
static size_t ci_find(const char *s, size_t n, size_t from, const char *w)
{
	size_t m = strlen(w), i;

	if (m == 0 || n < m)
		return NOT_FOUND;
	for (i = from; i + m <= n; i++) {
		if (lower((unsigned char)s[i]) != (unsigned char)w[0])
			continue;
		if (i > 0 && is_word((unsigned char)s[i - 1]))
			continue;
		if (ci_at(s, n, i, w))
			return i;
	}
	return NOT_FOUND;
}

static size_t skip_spaces(const char *s, size_t n, size_t i)
{
	while (i < n && is_space((unsigned char)s[i]))
		i++;
	return i;
}

/* Skip what sits between a key and its value: spaces, ':', '=', quotes. */
static size_t skip_seps(const char *s, size_t n, size_t i)
{
	while (i < n && (is_space((unsigned char)s[i]) || s[i] == ':' || s[i] == '=' ||
			 s[i] == '"' || s[i] == '\''))
		i++;
	return i;
}

/* If the lowercase word w is at i and ends at a word end, return the index
 * after it, else NOT_FOUND. */
static size_t word_at(const char *s, size_t n, size_t i, const char *w)
{
	size_t m = strlen(w);

	if (!ci_at(s, n, i, w) || is_alnum(at(s, n, i + m)))
		return NOT_FOUND;
	return i + m;
}

/* ---- HTTP status ------------------------------------------------------------ */

static const char *const status_keys[] = {
	"status",     "statuscode", "status_code", "code",     "error",	 "errorcode",
	"error_code", "http",	    "http/1.0",	   "http/1.1", "http/2", "http/2.0",
};

/* Does the text before position end (after separators) with a status key
 * that starts at a word boundary? */
static bool status_context(const char *s, size_t pos)
{
	size_t k = pos, i;

	while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t' || s[k - 1] == ':' ||
			 s[k - 1] == '=' || s[k - 1] == '"' || s[k - 1] == '\'' || s[k - 1] == '#'))
		k--;
	if (k == pos && pos > 0)
		return false; /* "code429": no separator */
	for (i = 0; i < sizeof(status_keys) / sizeof(status_keys[0]); i++) {
		size_t m = strlen(status_keys[i]);

		if (k < m || !ci_at(s, k, k - m, status_keys[i]))
			continue;
		if (k - m > 0 && (is_alnum((unsigned char)s[k - m - 1]) || s[k - m - 1] == '_'))
			continue;
		return true;
	}
	return false;
}

/* A 3-digit status 100-599 starting at i with digit boundaries, or 0. */
static int status_number(const char *s, size_t n, size_t i)
{
	int v;

	if (i + 3 > n || !is_digit(at(s, n, i)) || !is_digit(at(s, n, i + 1)) ||
	    !is_digit(at(s, n, i + 2)))
		return 0;
	if (i > 0 && (is_digit((unsigned char)s[i - 1]) || s[i - 1] == '.'))
		return 0;
	if (is_digit(at(s, n, i + 3)) || (at(s, n, i + 3) == '.' && is_digit(at(s, n, i + 4))))
		return 0;
	v = (s[i] - '0') * 100 + (s[i + 1] - '0') * 10 + (s[i + 2] - '0');
	return v >= 100 && v <= 599 ? v : 0;
}

/* The status at i if it is one in context, else 0. */
static int status_at(const char *s, size_t n, size_t i, bool allow_leading)
{
	int v = status_number(s, n, i);

	if (!v)
		return 0;
	if (allow_leading && skip_spaces(s, n, 0) == i) {
		unsigned char c = at(s, n, i + 3);

		if (c == 0 || c == ' ' || c == ':')
			return v;
	}
	return status_context(s, i) ? v : 0;
}

int ratelimit_http_status(const char *s, size_t n, bool allow_leading)
{
	size_t i;

	if (!s)
		return 0;
	for (i = 0; i + 3 <= n; i++) {
		int v;

		if (is_digit((unsigned char)s[i]) && (v = status_at(s, n, i, allow_leading)))
			return v;
	}
	return 0;
}

static bool has_status_429(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i + 3 <= n; i++)
		if (s[i] == '4' && status_at(s, n, i, false) == 429)
			return true;
	return false;
}

/* ---- needles ------------------------------------------------------------------ */

static const char *const needles[] = {
	"rate limit",	      "rate-limit",
	"rate_limit",	      "ratelimit",
	"usage limit",	      "usage_limit",
	"quota exceeded",     "exceeded your current quota",
	"insufficient_quota", "too many requests",
	"overloaded",	      "you've hit your limit",
	"hit your limit",     "limit exceeded",
	"resource_exhausted", "resource exhausted",
};

/* "resets" (or "reset at/in/after") followed by a time or duration. */
static bool resets_with_time(const char *s, size_t n)
{
	static const char *const heads[] = {"resets", "reset"};
	static const char *const links[] = {"at", "in", "after", "on"};
	size_t h, from, i, j, l;

	for (h = 0; h < 2; h++) {
		for (from = 0; (i = ci_find(s, n, from, heads[h])) != NOT_FOUND; from = i + 1) {
			bool linked = false;

			j = word_at(s, n, i, heads[h]);
			if (j == NOT_FOUND)
				continue;
			j = skip_spaces(s, n, j);
			for (l = 0; l < sizeof(links) / sizeof(links[0]); l++) {
				size_t k = word_at(s, n, j, links[l]);

				if (k != NOT_FOUND) {
					j = skip_spaces(s, n, k);
					linked = true;
					break;
				}
			}
			/* plain "reset" needs its link word: "reset 3 files" is not one */
			if (h == 1 && !linked)
				continue;
			if (is_digit(at(s, n, j)))
				return true;
		}
	}
	return false;
}

bool ratelimit_text_matches(const char *s, size_t n)
{
	size_t i;

	if (!s || n == 0)
		return false;
	for (i = 0; i < sizeof(needles) / sizeof(needles[0]); i++)
		if (ci_find(s, n, 0, needles[i]) != NOT_FOUND)
			return true;
	return has_status_429(s, n) || resets_with_time(s, n);
}

/* ---- hints -------------------------------------------------------------------- */

void ratelimit_hint_init(struct ratelimit_hint *h)
{
	h->retry_after_s = -1;
	h->reset_at_s = -1;
	h->reset_hour = -1;
	h->reset_minute = -1;
}

bool ratelimit_hint_empty(const struct ratelimit_hint *h)
{
	return h->retry_after_s < 0 && h->reset_at_s < 0 && h->reset_hour < 0;
}

/* A decimal number at i ("27", "27.9"): milli-units in *ret_milli (capped),
 * index after it, or NOT_FOUND. */
static size_t parse_number(const char *s, size_t n, size_t i, uint64_t *ret_milli)
{
	uint64_t whole = 0, frac = 0;
	unsigned digits = 0;

	while (i < n && is_digit((unsigned char)s[i])) {
		if (digits < 12)
			whole = whole * 10 + (uint64_t)(s[i] - '0');
		digits++;
		i++;
	}
	if (!digits || digits > 12)
		return NOT_FOUND;
	if (i + 1 < n && s[i] == '.' && is_digit((unsigned char)s[i + 1])) {
		unsigned fdigits = 0;

		i++;
		while (i < n && is_digit((unsigned char)s[i])) {
			if (fdigits < 3) {
				frac = frac * 10 + (uint64_t)(s[i] - '0');
				fdigits++;
			}
			i++;
		}
		while (fdigits < 3) {
			frac *= 10;
			fdigits++;
		}
	}
	*ret_milli = whole * 1000 + frac;
	return i;
}

struct unit {
	const char *name;
	uint64_t ms;
};

static const struct unit units[] = {
	{"ms", 1},	   {"msec", 1},	       {"millisecond", 1}, {"milliseconds", 1},
	{"s", 1000},	   {"sec", 1000},      {"secs", 1000},	   {"second", 1000},
	{"seconds", 1000}, {"m", 60000},       {"min", 60000},	   {"mins", 60000},
	{"minute", 60000}, {"minutes", 60000}, {"h", 3600000},	   {"hr", 3600000},
	{"hrs", 3600000},  {"hour", 3600000},  {"hours", 3600000}, {"d", 86400000},
	{"day", 86400000}, {"days", 86400000},
};

/* The unit word at i (letters only): its multiplier and end, or 0. */
static uint64_t unit_at(const char *s, size_t n, size_t i, size_t *ret_end)
{
	size_t j = i, k;

	while (j < n && is_alpha((unsigned char)s[j]))
		j++;
	if (j == i)
		return 0;
	for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		if (strlen(units[k].name) == j - i && ci_at(s, n, i, units[k].name)) {
			*ret_end = j;
			return units[k].ms;
		}
	}
	return 0;
}

/* DURATION at i: one or more NUMBER [UNIT] groups. Whole seconds, rounded
 * up, in *ret_s. */
static bool parse_duration(const char *s, size_t n, size_t i, int64_t *ret_s)
{
	uint64_t total = 0;
	unsigned groups = 0;

	for (;;) {
		uint64_t milli, mult;
		size_t j, end;

		j = skip_spaces(s, n, i);
		if (groups > 0) {
			if (at(s, n, j) == ',')
				j = skip_spaces(s, n, j + 1);
			if (word_at(s, n, j, "and") != NOT_FOUND)
				j = skip_spaces(s, n, j + 3);
		}
		j = parse_number(s, n, j, &milli);
		if (j == NOT_FOUND)
			break;
		end = j;
		j = skip_spaces(s, n, j);
		mult = unit_at(s, n, j, &end);
		if (!mult) {
			if (is_alpha(at(s, n, j)))
				break;	/* "2 weeks": not a unit we know, the duration ends */
			total += milli; /* a bare number is seconds and ends the duration */
			groups++;
			break;
		}
		if (milli > UINT64_MAX / mult)
			return false;
		total += milli * mult / 1000;
		groups++;
		i = end;
	}
	if (!groups || total / 1000 > (uint64_t)INT64_MAX / 2)
		return false;
	*ret_s = (int64_t)((total + 999) / 1000);
	return true;
}

/* TIME-OF-DAY at i: "10pm", "10 pm", "10:30pm", "22:00". A bare hour with no
 * colon and no am/pm is not one. */
static bool parse_time_of_day(const char *s, size_t n, size_t i, int *ret_h, int *ret_m)
{
	int h = 0, m = 0, digits = 0;
	bool colon = false, pm = false, ampm = false;
	size_t j = i;

	while (j < n && is_digit((unsigned char)s[j]) && digits < 3) {
		h = h * 10 + (s[j] - '0');
		digits++;
		j++;
	}
	if (digits == 0 || digits > 2)
		return false;
	if (at(s, n, j) == ':' && is_digit(at(s, n, j + 1)) && is_digit(at(s, n, j + 2)) &&
	    !is_digit(at(s, n, j + 3))) {
		m = (s[j + 1] - '0') * 10 + (s[j + 2] - '0');
		colon = true;
		j += 3;
	}
	j = skip_spaces(s, n, j);
	if ((lower(at(s, n, j)) == 'a' || lower(at(s, n, j)) == 'p')) {
		size_t k = j + 1;

		if (at(s, n, k) == '.')
			k++;
		if (lower(at(s, n, k)) == 'm') {
			k++;
			if (at(s, n, k) == '.')
				k++;
			if (!is_alpha(at(s, n, k))) {
				ampm = true;
				pm = lower(at(s, n, j)) == 'p';
			}
		}
	}
	if (!colon && !ampm)
		return false;
	if (m > 59)
		return false;
	if (ampm) {
		if (h < 1 || h > 12)
			return false;
		if (pm && h < 12)
			h += 12;
		else if (!pm && h == 12)
			h = 0;
	} else if (h > 23) {
		return false;
	}
	*ret_h = h;
	*ret_m = m;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned mo, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= mo <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool digits_at(const char *s, size_t n, size_t i, unsigned count, unsigned *ret)
{
	unsigned v = 0, k;

	for (k = 0; k < count; k++) {
		if (!is_digit(at(s, n, i + k)))
			return false;
		v = v * 10 + (unsigned)(s[i + k] - '0');
	}
	*ret = v;
	return true;
}

/* ISO-8601 date-time at i: YYYY-MM-DD[T ]HH:MM[:SS[.frac]][Z|+HH:MM|-HH:MM];
 * no zone = UTC. */
static bool parse_iso(const char *s, size_t n, size_t i, int64_t *ret_s)
{
	unsigned y, mo, d, h, mi, se = 0, oh, om;
	int64_t t;
	size_t j;

	if (!digits_at(s, n, i, 4, &y) || at(s, n, i + 4) != '-' ||
	    !digits_at(s, n, i + 5, 2, &mo) || at(s, n, i + 7) != '-' ||
	    !digits_at(s, n, i + 8, 2, &d) ||
	    (at(s, n, i + 10) != 'T' && at(s, n, i + 10) != 't' && at(s, n, i + 10) != ' ') ||
	    !digits_at(s, n, i + 11, 2, &h) || at(s, n, i + 13) != ':' ||
	    !digits_at(s, n, i + 14, 2, &mi))
		return false;
	j = i + 16;
	if (at(s, n, j) == ':' && digits_at(s, n, j + 1, 2, &se)) {
		j += 3;
		if (at(s, n, j) == '.')
			for (j++; is_digit(at(s, n, j)); j++)
				;
	}
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return false;
	t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
	if (at(s, n, j) == '+' || at(s, n, j) == '-') {
		if (!digits_at(s, n, j + 1, 2, &oh))
			return false;
		om = 0;
		if (at(s, n, j + 3) == ':')
			(void)digits_at(s, n, j + 4, 2, &om);
		else
			(void)digits_at(s, n, j + 3, 2, &om);
		t += (at(s, n, j) == '+' ? -1 : 1) * (int64_t)(oh * 3600 + om * 60);
	}
	*ret_s = t;
	return true;
}

/* Epoch seconds from 10 digits (or milliseconds from 13) at i. */
static bool parse_epoch(const char *s, size_t n, size_t i, int64_t *ret_s)
{
	size_t j = i;
	int64_t v = 0;

	while (j < n && is_digit((unsigned char)s[j]) && j - i < 14) {
		v = v * 10 + (s[j] - '0');
		j++;
	}
	if (is_digit(at(s, n, j)))
		return false;
	if (j - i == 10) {
		*ret_s = v;
		return true;
	}
	if (j - i == 13) {
		*ret_s = v / 1000;
		return true;
	}
	return false;
}

static void hint_retry_after(const char *s, size_t n, struct ratelimit_hint *h)
{
	static const char *const header_keys[] = {"retry-after", "retry_after", "retryafter",
						  "retry_after_seconds", "resets_in_seconds"};
	static const char *const duration_keys[] = {
		"try again in", "retry in", "retry after", "reset after", "resets after",
		"resets in",	"reset in", "retrydelay",  "retry_delay", "wait",
	};
	size_t k, i, from;

	for (k = 0; k < sizeof(header_keys) / sizeof(header_keys[0]); k++) {
		for (from = 0; (i = ci_find(s, n, from, header_keys[k])) != NOT_FOUND;
		     from = i + 1) {
			size_t j = skip_seps(s, n, i + strlen(header_keys[k]));
			uint64_t milli;

			if (parse_number(s, n, j, &milli) != NOT_FOUND) {
				h->retry_after_s = (int64_t)((milli + 999) / 1000);
				return;
			}
		}
	}
	for (k = 0; k < sizeof(duration_keys) / sizeof(duration_keys[0]); k++) {
		for (from = 0; (i = ci_find(s, n, from, duration_keys[k])) != NOT_FOUND;
		     from = i + 1) {
			size_t j = skip_seps(s, n, i + strlen(duration_keys[k]));
			int64_t secs;

			if (is_alnum(at(s, n, i + strlen(duration_keys[k]))))
				continue; /* "waiting" */
			if (parse_duration(s, n, j, &secs)) {
				h->retry_after_s = secs;
				return;
			}
		}
	}
}

static void hint_reset(const char *s, size_t n, struct ratelimit_hint *h)
{
	static const char *const at_keys[] = {"resets at", "reset at", "resets on", "resets"};
	static const char *const epoch_keys[] = {"reset_at", "resets_at",  "resetsat",
						 "resetat",  "reset_time", "resettime"};
	size_t k, i, from;

	for (k = 0; k < sizeof(at_keys) / sizeof(at_keys[0]); k++) {
		for (from = 0; (i = ci_find(s, n, from, at_keys[k])) != NOT_FOUND; from = i + 1) {
			size_t j = i + strlen(at_keys[k]);
			int64_t t;

			if (is_alnum(at(s, n, j)))
				continue;
			j = skip_spaces(s, n, j);
			if (h->reset_at_s < 0 && parse_iso(s, n, j, &t)) {
				h->reset_at_s = t;
				return;
			}
			if (h->reset_hour < 0 &&
			    parse_time_of_day(s, n, j, &h->reset_hour, &h->reset_minute))
				return;
		}
	}
	for (k = 0; k < sizeof(epoch_keys) / sizeof(epoch_keys[0]); k++) {
		for (from = 0; (i = ci_find(s, n, from, epoch_keys[k])) != NOT_FOUND;
		     from = i + 1) {
			size_t j = skip_seps(s, n, i + strlen(epoch_keys[k]));
			int64_t t;

			if (parse_epoch(s, n, j, &t) || parse_iso(s, n, j, &t)) {
				h->reset_at_s = t;
				return;
			}
		}
	}
	/* Claude Code's "Claude AI usage limit reached|1748404800" */
	for (i = 0; i < n; i++) {
		int64_t t;

		if (s[i] == '|' && parse_epoch(s, n, i + 1, &t)) {
			h->reset_at_s = t;
			return;
		}
	}
}

bool ratelimit_parse_hint(const char *s, size_t n, struct ratelimit_hint *ret)
{
	ratelimit_hint_init(ret);
	if (!s || n == 0)
		return false;
	hint_retry_after(s, n, ret);
	hint_reset(s, n, ret);
	return !ratelimit_hint_empty(ret);
}

int64_t ratelimit_hint_wait_s(const struct ratelimit_hint *h, int64_t now_s, long utc_offset_s)
{
	int64_t best = -1;

	if (!h)
		return -1;
	if (h->retry_after_s >= 0 && h->retry_after_s > best)
		best = h->retry_after_s;
	if (h->reset_at_s >= 0) {
		int64_t d = h->reset_at_s > now_s ? h->reset_at_s - now_s : 0;

		if (d > best)
			best = d;
	}
	if (h->reset_hour >= 0) {
		int64_t local = now_s + utc_offset_s;
		int64_t sod = ((local % 86400) + 86400) % 86400;
		int64_t target = (int64_t)h->reset_hour * 3600 +
				 (int64_t)(h->reset_minute > 0 ? h->reset_minute : 0) * 60;
		int64_t d = target - sod;

		if (d < 0)
			d += 86400;
		if (d > best)
			best = d;
	}
	return best;
}

/* ---- the meter ---------------------------------------------------------------- */

static void copy_name(char *dst, size_t size, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

void ratelimit_meter_init(struct ratelimit_meter *m, const char *adapter,
			  const struct ratelimit_policy *policy, const struct clock *clock)
{
	static const struct ratelimit_policy dflt = RATELIMIT_POLICY_DEFAULT;

	memset(m, 0, sizeof(*m));
	copy_name(m->adapter, sizeof(m->adapter), adapter);
	m->policy = policy ? *policy : dflt;
	m->clock = clock ? clock : clock_system();
}

static void prune(struct ratelimit_meter *m, uint64_t now)
{
	unsigned drop = 0;

	while (drop < m->nhits && now > m->hits[drop] && now - m->hits[drop] > m->policy.window_ms)
		drop++;
	if (drop) {
		memmove(m->hits, m->hits + drop, (m->nhits - drop) * sizeof(m->hits[0]));
		m->nhits -= drop;
	}
}

void ratelimit_meter_hit(struct ratelimit_meter *m, const char *error_code,
			 const struct ratelimit_hint *hint, long utc_offset_s, uint32_t jitter)
{
	uint64_t now = m->clock->mono_ms(m->clock);
	int64_t wall = m->clock->now_ns(m->clock);
	int64_t w = hint ? ratelimit_hint_wait_s(hint, wall / 1000000000, utc_offset_s) : -1;

	prune(m, now);
	if (m->nhits == RATELIMIT_WINDOW_MAX_HITS) {
		memmove(m->hits, m->hits + 1, (m->nhits - 1) * sizeof(m->hits[0]));
		m->nhits--;
	}
	m->hits[m->nhits++] = now;
	if (m->consecutive < UINT_MAX)
		m->consecutive++;
	m->total_hits++;
	if (w > INT64_MAX / 1000000000)
		w = INT64_MAX / 1000000000;
	m->backoff_ms = backoff_delay_ms(&m->policy.backoff, m->consecutive, w >= 0 ? w * 1000 : -1,
					 jitter);
	m->ever_hit = true;
	m->last_hit_ms = now;
	m->last_hit_ns = wall;
	copy_name(m->last_error_code, sizeof(m->last_error_code), error_code);
	m->reset_at_ns = w >= 0 ? wall + (int64_t)m->backoff_ms * 1000000 : 0;
}

void ratelimit_meter_success(struct ratelimit_meter *m)
{
	m->consecutive = 0;
	m->backoff_ms = 0;
	m->reset_at_ns = 0;
}

unsigned ratelimit_meter_hits_in_window(struct ratelimit_meter *m)
{
	prune(m, m->clock->mono_ms(m->clock));
	return m->nhits;
}

uint64_t ratelimit_meter_wait_ms(const struct ratelimit_meter *m)
{
	uint64_t now = m->clock->mono_ms(m->clock), end;

	if (!m->ever_hit || !m->backoff_ms)
		return 0;
	end = m->last_hit_ms + m->backoff_ms;
	return end > now ? end - now : 0;
}

void ratelimit_meter_snapshot(struct ratelimit_meter *m, struct ratelimit_snapshot *snap)
{
	uint64_t now = m->clock->mono_ms(m->clock);

	memset(snap, 0, sizeof(*snap));
	snap->adapter = m->adapter;
	snap->window_ms = m->policy.window_ms;
	snap->hits_in_window = ratelimit_meter_hits_in_window(m);
	snap->consecutive = m->consecutive;
	snap->total_hits = m->total_hits;
	snap->backoff_ms = m->backoff_ms;
	snap->wait_ms = ratelimit_meter_wait_ms(m);
	snap->ever_hit = m->ever_hit;
	if (m->ever_hit) {
		snap->last_hit_ns = m->last_hit_ns;
		snap->last_hit_ago_ms = now > m->last_hit_ms ? now - m->last_hit_ms : 0;
	}
	snap->reset_at_ns = m->reset_at_ns;
	snap->last_error_code = m->last_error_code;
}
