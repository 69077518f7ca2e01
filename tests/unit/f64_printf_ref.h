/* f64_printf_ref.h — the JSON encoder's float printer as it was before
 * core/codec_dtoa.cc (commit 173b80a's core/codec.c put_f64), kept as the
 * reference that tests/unit/test_codec.c compares the new one with and
 * that bench/bench_hot.c times it against: integers below 2^53 as
 * integers, values with at most 6 decimals below 1e9 as plain decimals,
 * otherwise the shortest of %.15g/%.16g/%.17g that strtod reads back.
 * Test and bench code only; assumes the C locale. */
#ifndef SV_F64_PRINTF_REF_H
#define SV_F64_PRINTF_REF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline size_t ref_fmt_decimal(char *txt, double f)
{
	static const double p10[] = {1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
	if (!(f != 0 && fabs(f) < 1e9))
		return 0;
	for (int k = 0; k < 6; k++) {
		double r = nearbyint(f * p10[k]);
		if (r / p10[k] != f)
			continue;
		char dig[24];
		int64_t ri = (int64_t)fabs(r);
		int nd = 0;
		do {
			dig[nd++] = (char)('0' + ri % 10);
			ri /= 10;
		} while (ri);
		while (nd <= k + 1)
			dig[nd++] = '0';
		size_t t = 0;
		if (f < 0)
			txt[t++] = '-';
		for (int i = nd - 1; i >= 0; i--) {
			txt[t++] = dig[i];
			if (i == k + 1)
				txt[t++] = '.';
		}
		return t;
	}
	return 0;
}

/* f (finite) into buf (40 bytes, NUL-terminated); returns the length. */
static inline size_t ref_fmt_f64_printf(char *buf, double f)
{
	if (f == trunc(f) && fabs(f) < 9007199254740992.0 &&
	    !(f == 0 && signbit(f)))
		return (size_t)snprintf(buf, 40, "%lld", (long long)f);
	size_t d = ref_fmt_decimal(buf, f);
	if (d) {
		buf[d] = 0;
		return d;
	}
	int n = 0;
	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(buf, 40, "%.*g", prec, f);
		if (prec == 17 || strtod(buf, NULL) == f)
			break;
	}
	return (size_t)n;
}

#endif
