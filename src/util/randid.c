#include "util/randid.h"

#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/banned.h"

void randid_hex(char *buf, size_t nhex, int64_t now_ns)
{
	unsigned char raw[32];
	size_t i, n;
	static const char hex[] = "0123456789abcdef";

	if (nhex > 2 * sizeof(raw))
		nhex = 2 * sizeof(raw);
	n = (nhex + 1) / 2;
	if (getrandom(raw, n, 0) != (ssize_t)n) {
		/* practically never; fall back to something unique enough */
		uint64_t v = (uint64_t)getpid() ^ (uint64_t)now_ns;

		for (i = 0; i < n; i++)
			raw[i] = (unsigned char)(v >> ((i % 8) * 8));
	}
	for (i = 0; i < nhex; i++)
		buf[i] = hex[(raw[i / 2] >> ((i % 2) ? 0 : 4)) & 0xF];
	buf[nhex] = '\0';
}

void randid_run(char *buf, size_t size, int64_t now_ns)
{
	char day[40], hex[8];
	time_t t = (time_t)(now_ns / 1000000000);
	struct tm tm;

	(void)gmtime_r(&t, &tm);
	(void)strftime(day, sizeof(day), "%Y%m%dT%H%M%SZ", &tm);
	randid_hex(hex, 6, now_ns);
	(void)snprintf(buf, size, "%s-%s", day, hex);
}
