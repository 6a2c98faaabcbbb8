/* `bernstein logs`: a task's events.jsonl as readable lines (adapter/event-view.h),
 * read from an offset so that --follow prints each line once. */
#ifndef BERNSTEIN_CLI_LOGS_VIEW_H
#define BERNSTEIN_CLI_LOGS_VIEW_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Print the complete lines of path from *off on as readable lines on out,
 * moving *off past them; with final, a last line without its newline too.
 * 0, or -errno (-ENOENT: no file yet). */
int logs_view_events(FILE *out, const char *path, off_t *off, bool final);

#endif
