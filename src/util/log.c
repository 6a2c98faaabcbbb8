#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

/* Process-wide logging configuration: the one sanctioned global below cli/,
 * written only by cli/ at start-up (arg_ prefix per STYLE.md). */
static enum log_level arg_log_level = LOG_WARN;
static log_sink_fn *arg_log_sink;
static void *arg_log_userdata;

void log_set_level(enum log_level level)
{
	arg_log_level = level;
}

enum log_level log_get_level(void)
{
	return arg_log_sink ? arg_log_level : LOG_ERROR;
}

void log_set_sink(log_sink_fn *fn, void *userdata)
{
	arg_log_sink = fn;
	arg_log_userdata = userdata;
}

void log_emit(enum log_level level, const char *file, int line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!arg_log_sink || level > arg_log_level)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	arg_log_sink(level, file, line, msg, arg_log_userdata);
}

const char *log_level_name(enum log_level level)
{
	static const char *const names[] = {"error", "warning", "info", "debug", "trace"};

	return level < _LOG_LEVEL_MAX ? names[level] : "?";
}
