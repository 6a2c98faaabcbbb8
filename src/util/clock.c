#include "util/clock.h"

#include <stdio.h>

static int64_t sys_now_ns(const struct clock *c)
{
	struct timespec ts;

	(void)c;
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t sys_mono_ms(const struct clock *c)
{
	struct timespec ts;

	(void)c;
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const struct clock system_clock = {.now_ns = sys_now_ns, .mono_ms = sys_mono_ms};

const struct clock *clock_system(void)
{
	return &system_clock;
}

static int64_t fixed_now_ns(const struct clock *c)
{
	return c->fixed_ns;
}

static uint64_t fixed_mono(const struct clock *c)
{
	return c->fixed_mono_ms;
}

void clock_fixed_init(struct clock *c, int64_t now_ns, uint64_t mono_ms)
{
	c->now_ns = fixed_now_ns;
	c->mono_ms = fixed_mono;
	c->fixed_ns = now_ns;
	c->fixed_mono_ms = mono_ms;
}

static void split(int64_t ns, struct tm *tm, long *usec)
{
	time_t s = (time_t)(ns / 1000000000);
	int64_t rem = ns % 1000000000;

	if (rem < 0) {
		rem += 1000000000;
		s--;
	}
	*usec = (long)(rem / 1000);
	(void)gmtime_r(&s, tm);
}

const char *clock_iso8601_utc(int64_t ns, char *buf, unsigned long size)
{
	struct tm tm;
	long usec;

	split(ns, &tm, &usec);
	(void)snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
		       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
	return buf;
}

const char *clock_utc_day(int64_t ns, char *buf, unsigned long size)
{
	struct tm tm;
	long usec;

	split(ns, &tm, &usec);
	(void)snprintf(buf, size, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
	return buf;
}
