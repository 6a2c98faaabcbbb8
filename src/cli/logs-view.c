/* A task's events as readable lines (see logs-view.h). */
#include "cli/logs-view.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "adapter/event-view.h"
#include "util/fsutil.h"
#include "util/sbuf.h"
#include "util/banned.h"

#define VIEW_LINE_MAX (8u << 20) /* longer lines are skipped, said so */
#define VIEW_OUT_MAX  4096	 /* bytes of a readable line */

static void show(FILE *out, const char *line, size_t len)
{
	char buf[VIEW_OUT_MAX];

	if (event_view_line(line, len, buf, sizeof(buf)) != 0)
		(void)fprintf(out, "%s\n", buf);
}

/* fsutil_lines()'s callback: the line shown, or said skipped. */
static bool view_line(void *ctx, const char *line, size_t len, off_t end)
{
	FILE *out = ctx;

	(void)end;
	if (line)
		show(out, line, len);
	else
		(void)fprintf(out, "--:--:-- ?            a line longer than %u bytes, skipped\n",
			      VIEW_LINE_MAX);
	return true;
}

int logs_view_events(FILE *out, const char *path, off_t *off, bool final)
{
	int fd = open_regular(path, O_RDONLY, 0); /* a FIFO there would hang */
	int r;

	if (fd < 0)
		return fd;
	r = fsutil_lines(fd, off, VIEW_LINE_MAX, final, view_line, out);
	(void)close(fd);
	(void)fflush(out);
	return r;
}
