/* Footguns banned at compile time (git banned.h). Included last by every
 * project .c file through util/common.h. */
#ifndef BERNSTEIN_UTIL_BANNED_H
#define BERNSTEIN_UTIL_BANNED_H

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef gets
#define gets(x) BANNED(gets)
#undef tmpnam
#define tmpnam(x) BANNED(tmpnam)
#undef mktemp
#define mktemp(x) BANNED(mktemp)
#undef system
#define system(x) BANNED(system)
#undef popen
#define popen(x, y) BANNED(popen)

#endif
