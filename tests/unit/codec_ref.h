/* codec_ref.h — the JSON encoder as it was at commit 173b80a, kept as the
 * reference that tests/unit/test_codec.c compares today's with and that
 * bench/bench_hot.c times it against:
 *  - ref_fmt_f64_printf, the float printer before core/codec_dtoa.cc:
 *    integers below 2^53 as integers, values with at most 6 decimals below
 *    1e9 as plain decimals (tried one decimal count after another),
 *    otherwise the shortest of %.15g/%.16g/%.17g that strtod reads back;
 *  - ref_json_encode_row, the row encoder piece by piece through sv_buf.
 * Test and bench code only; assumes the C locale. */
#ifndef SV_CODEC_REF_H
#define SV_CODEC_REF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"

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

/* The row encoder as it was (sv_buf calls piece by piece), for
 * tests/unit/test_codec.c test_encode_vs_reference and bench_hot's
 * encode case; floats through ref_fmt_f64_printf. */
static inline void ref_json_encode_row(const sv_schema_t *schema,
				       const sv_value_t *row, sv_buf_t *out)
{
	char tmp[40];
	sv_buf_putc(out, '{');
	for (size_t i = 0; i < schema->nfields; i++) {
		const sv_value_t *v = &row[i];
		if (i)
			sv_buf_putc(out, ',');
		sv_buf_json_str(out, schema->fields[i].name,
				strlen(schema->fields[i].name));
		sv_buf_putc(out, ':');
		switch (v->type) {
		case SV_T_BOOL:
			if (v->v.b)
				sv_buf_append(out, "true", 4);
			else
				sv_buf_append(out, "false", 5);
			break;
		case SV_T_INT64:
		case SV_T_TIMESTAMP:
			sv_buf_append(out, tmp, sv_fmt_i64(tmp, v->v.i));
			break;
		case SV_T_FLOAT64:
			if (!isfinite(v->v.f)) {
				sv_buf_append(out, "null", 4);
				break;
			}
			sv_buf_append(out, tmp,
				      ref_fmt_f64_printf(tmp, v->v.f));
			break;
		case SV_T_STRING:
			sv_buf_json_str(out, v->v.s, v->len);
			break;
		default:
			sv_buf_append(out, "null", 4);
		}
	}
	sv_buf_putc(out, '}');
}

#endif
