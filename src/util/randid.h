/* Random identifiers: run and session names. */
#ifndef BERNSTEIN_UTIL_RANDID_H
#define BERNSTEIN_UTIL_RANDID_H

#include <stddef.h>
#include <stdint.h>

/* nhex random lower-case hex digits and a NUL into buf (nhex + 1 bytes;
 * nhex <= 64). From getrandom(); if that fails, from the pid and now_ns. */
void randid_hex(char *buf, size_t nhex, int64_t now_ns);

/* A run name "YYYYMMDDTHHMMSSZ-xxxxxx" for the UTC time now_ns into buf
 * (at least RANDID_RUN_LEN + 1 bytes). */
#define RANDID_RUN_LEN 23
void randid_run(char *buf, size_t size, int64_t now_ns);

#endif
