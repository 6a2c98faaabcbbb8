/* One events.jsonl line (adapter/events.h, docs/event-stream.md) as one
 * readable line for `bernstein logs`: "06:21:57 tool_call   Write
 * {\"file_path\":...}". The line comes from a file the agent's output
 * filled: anything is accepted, nothing is trusted. */
#ifndef BERNSTEIN_ADAPTER_EVENT_VIEW_H
#define BERNSTEIN_ADAPTER_EVENT_VIEW_H

#include <stddef.h>

/* Render line (len bytes, without its newline) into buf: the time of its
 * "ts" (HH:MM:SS, or "--:--:--"), its kind, and event_describe()'s text
 * (tool calls with their arguments, tool results with ok/error/denied and
 * their output, errors with their HTTP status); control bytes become
 * spaces, cut to size. Returns 1 when rendered, 0 for a blank line, -EBADMSG
 * for a line that is not a JSON object with a known "kind" (buf then says
 * so: "--:--:-- ?        not an event: ..."). */
int event_view_line(const char *line, size_t len, char *buf, size_t size);

#endif
