/* Levelled debug log. Below cli/ code may only log (never print); the sink and
 * level are set by cli/ from -v/-q. Default sink: none. */
#ifndef BERNSTEIN_UTIL_LOG_H
#define BERNSTEIN_UTIL_LOG_H

enum log_level {
	LOG_ERROR,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
	LOG_TRACE,
	_LOG_LEVEL_MAX,
};

typedef void log_sink_fn(enum log_level level, const char *file, int line, const char *msg,
			 void *userdata);

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
void log_set_sink(log_sink_fn *fn, void *userdata);
void log_emit(enum log_level level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *log_level_name(enum log_level level);

#define log_at(lvl, ...)                                                                           \
	do {                                                                                       \
		if ((lvl) <= log_get_level())                                                      \
			log_emit((lvl), __FILE__, __LINE__, __VA_ARGS__);                          \
	} while (0)
#define log_warn(...)  log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)
#define log_trace(...) log_at(LOG_TRACE, __VA_ARGS__)

#endif
