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

int logs_view_events(FILE *out, const char *path, off_t *off, bool final)
{
	struct sbuf line = SBUF_INIT(VIEW_LINE_MAX);
	char chunk[65536];
	bool skipping = false;
	off_t pos = *off, done = *off;
	ssize_t n;
	int fd = open_regular(path, O_RDONLY, 0); /* a FIFO there would hang */
	int r = 0;

	if (fd < 0)
		return fd;
	if (lseek(fd, *off, SEEK_SET) < 0) {
		r = -errno;
		goto out;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		const char *p = chunk, *end = chunk + n;

		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t k = (size_t)((nl ? nl : end) - p);

			if (!skipping && sbuf_add(&line, p, k) < 0) {
				(void)fprintf(
					out,
					"--:--:-- ?            a line longer than %u bytes, skipped\n",
					VIEW_LINE_MAX);
				skipping = true;
				sbuf_reset(&line);
			}
			if (!nl)
				break;
			if (!skipping)
				show(out, line.buf, line.len);
			skipping = false;
			sbuf_reset(&line);
			p = nl + 1;
			done = pos + (p - chunk);
		}
		pos += n;
	}
	if (n < 0)
		r = -errno;
	else if (final && (line.len || skipping)) {
		if (!skipping)
			show(out, line.buf, line.len);
		done = pos;
	}
out:
	(void)close(fd);
	sbuf_release(&line);
	(void)fflush(out);
	*off = done;
	return r;
}
