/* Rounding without libm. bernstein needed libm for round() and llround()
 * alone, and loading it cost every start 15 page faults and 40,000
 * instructions (bench/README.md, "Libraries loaded on first use"). */
#ifndef BERNSTEIN_UTIL_MATHX_H
#define BERNSTEIN_UTIL_MATHX_H

/* round(x): the nearest integer, halfway cases away from zero; x itself when
 * it is already integral (|x| >= 2^52), infinite or NaN. */
double mathx_round(double x);
/* llround(x) for |x| < 2^63; the caller checks the range (as for llround,
 * whose result is unspecified outside it). */
long long mathx_llround(double x);

#endif
