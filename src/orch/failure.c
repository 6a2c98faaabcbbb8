/* Failure you can act on (see failure.h). */
#include "orch/failure.h"

#include <stdio.h>
#include <string.h>

#include "adapter/lasterr.h"
#include "util/banned.h"

/* sep and s after the reason in buf; s cut at a character with "..." */
static void append(char *buf, size_t size, const char *sep, const char *s)
{
	size_t n = strlen(buf), m = strlen(sep);

	if (!s || !*s || n + m + 4 >= size)
		return;
	memcpy(buf + n, sep, m + 1);
	(void)lasterr_oneline(s, strlen(s), buf + n + m, size - n - m);
}

void orch_reason_with_agent_error(char *buf, size_t size, const char *err)
{
	append(buf, size, ORCH_AGENT_SAID, err);
}

void orch_reason_with_gate_log(char *buf, size_t size, const char *path)
{
	append(buf, size, ORCH_GATE_LOG, path);
}

const char *orch_reason_gate_log(const char *reason)
{
	const char *p, *last = NULL;

	if (!reason || (strncmp(reason, "gate '", 6) != 0 &&
			strncmp(reason, ORCH_SETUP_REASON, strlen(ORCH_SETUP_REASON)) != 0))
		return NULL;
	/* the last one: a gate's name could hold the separator */
	for (p = strstr(reason, ORCH_GATE_LOG); p; p = strstr(p + 1, ORCH_GATE_LOG))
		last = p;
	return last && last[strlen(ORCH_GATE_LOG)] ? last + strlen(ORCH_GATE_LOG) : NULL;
}
