/* Replays every file of the given directories through a fuzz target, without
 * libFuzzer (gcc, normal build). Prints TAP, one case per file; a crash or a
 * sanitizer report aborts the run, which the test harness counts as failure.
 * A missing directory is fine (no crashers recorded yet). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/fsutil.h"

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	char *names[4096] = {NULL};
	size_t n = 0, i, count = 0;
	int a;

	for (a = 1; a < argc; a++) {
		DIR *d = opendir(argv[a]);
		struct dirent *e;

		if (!d)
			continue;
		while ((e = readdir(d)) && n < 4096) {
			char path[4096];

			if (e->d_name[0] == '.')
				continue;
			(void)snprintf(path, sizeof(path), "%s/%s", argv[a], e->d_name);
			names[n++] = strdup(path);
		}
		(void)closedir(d);
	}
	qsort(names, n, sizeof(*names), cmp);
	printf("1..%zu\n", n ? n : 1);
	for (i = 0; i < n; i++) {
		char *data = NULL;
		size_t len = 0;
		int r = read_file_capped(names[i], 64 << 20, &data, &len);

		if (r < 0) {
			printf("not ok %zu - %s: %s\n", i + 1, names[i], strerror(-r));
		} else {
			(void)LLVMFuzzerTestOneInput((const unsigned char *)data, len);
			printf("ok %zu - %s\n", i + 1, names[i]);
		}
		fflush(stdout);
		free(data);
		free(names[i]);
		count++;
	}
	if (!n)
		printf("ok 1 - no inputs # SKIP empty corpus\n");
	return 0;
}
