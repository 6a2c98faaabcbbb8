/* Rounding without libm. See mathx.h. */
#include "util/mathx.h"

#include "util/banned.h"

double mathx_round(double x)
{
	double a = x < 0 ? -x : x, t;

	/* 2^52 and up (and inf) is integral, zero keeps its sign; NaN fails
	 * every comparison */
	if (!(a < 4503599627370496.0) || a == 0)
		return x;
	t = (double)(long long)a; /* truncated: exact below 2^52 */
	if (a - t >= 0.5)	  /* exact: t and a are within 1 of each other */
		t += 1.0;
	return x < 0 ? -t : t;
}

long long mathx_llround(double x)
{
	return (long long)mathx_round(x);
}
