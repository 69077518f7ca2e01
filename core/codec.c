/* codec.c — format names, the decoder front (dispatch to the JSON and CSV
 * decoders), the JSON row encoder, and the helpers both decoders share:
 * strict C-locale float parsing, RFC 3339 timestamps and UTF-8 validation.
 *
 * The decoders live in codec_json.c and codec_csv.c (and rowcodec.c, the
 * internal sv-row format of repartition topics). There is no private
 * header for the module yet (core/codec_int.h is not ours to add), so the
 * handful of cross-file functions below are declared again, identically, at
 * the top of those files under "codec-internal".
 *
 * The encoder writes straight into the caller's sv_buf_t: integers through
 * a two-digits-at-a-time itoa (no snprintf), floats from their shortest
 * round-trip digits (Google's double-conversion, codec_dtoa.cc) laid out
 * as the shortest of %.15g/%.16g/%.17g that reads back would print them
 * (sv_fmt_f64), non-finite floats as null. */
#define _GNU_SOURCE
#include "core/codec.h"

#include "core/rowcodec.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- codec-internal (shared with codec_json.c and codec_csv.c) ---- */
void *sv_codec_json_new(const sv_schema_t *schema);
void sv_codec_json_destroy(void *impl);
int sv_codec_json_decode(void *impl, const char *p, size_t len, sv_batch_t *b,
			 sv_rowmeta_t **meta_out, char *reason,
			 size_t reason_len);
void *sv_codec_csv_new(const sv_schema_t *schema);
void sv_codec_csv_destroy(void *impl);
int sv_codec_csv_decode(void *impl, const char *p, size_t len, sv_batch_t *b,
			sv_rowmeta_t **meta_out, char *reason,
			size_t reason_len);
void sv_codec_reason(char *reason, size_t reason_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sv_codec_strtod(const char *p, size_t n, double *out);
int sv_codec_rfc3339(const char *p, size_t n, int64_t *ms_out);
bool sv_codec_utf8_valid(const char *p, size_t n);
#define SV_DTOA_DIGITS_MAX 17
int sv_codec_dtoa_shortest(double v, char *digits, int *point,
			   int *negative); /* codec_dtoa.cc */
/* ---- end codec-internal ---- */

bool sv_format_parse(const char *name, sv_format_t *out)
{
	if (!strcmp(name, "json")) {
		*out = SV_FMT_JSON;
		return true;
	}
	if (!strcmp(name, "csv")) {
		*out = SV_FMT_CSV;
		return true;
	}
	return false;
}

const char *sv_format_name(sv_format_t fmt)
{
	switch (fmt) {
	case SV_FMT_JSON:
		return "json";
	case SV_FMT_CSV:
		return "csv";
	case SV_FMT_ROW:
		return "sv-row";
	}
	return "unknown";
}

struct sv_decoder {
	sv_format_t fmt;
	void *impl; /* owned: the format's decoder state */
};

sv_decoder_t *sv_decoder_new(sv_format_t fmt, const sv_schema_t *schema)
{
	void *impl;
	switch (fmt) {
	case SV_FMT_JSON:
		impl = sv_codec_json_new(schema);
		break;
	case SV_FMT_CSV:
		impl = sv_codec_csv_new(schema);
		break;
	case SV_FMT_ROW:
		impl = (void *)schema;
		break;
	default:
		return NULL;
	}
	sv_decoder_t *dec = sv_malloc(sizeof(*dec));
	dec->fmt = fmt;
	dec->impl = impl;
	return dec;
}

void sv_decoder_destroy(sv_decoder_t *dec)
{
	if (!dec)
		return;
	if (dec->fmt == SV_FMT_JSON)
		sv_codec_json_destroy(dec->impl);
	else if (dec->fmt == SV_FMT_CSV)
		sv_codec_csv_destroy(dec->impl);
	free(dec);
}

int sv_decoder_decode(sv_decoder_t *dec, const char *payload, size_t len,
		      sv_batch_t *b, sv_rowmeta_t **meta_out, char *reason,
		      size_t reason_len)
{
	if (dec->fmt == SV_FMT_JSON)
		return sv_codec_json_decode(dec->impl, payload, len, b,
					    meta_out, reason, reason_len);
	if (dec->fmt == SV_FMT_ROW) {
		/* a watermark record is not a row: the repartition stage
		 * takes it from the rejects (docs/repartition.md) */
		int rc = sv_rowcodec_decode(dec->impl, payload, len, b,
					    meta_out, reason, reason_len);
		if (rc == 1)
			sv_codec_reason(reason, reason_len,
					"sv-row watermark record");
		return rc ? -1 : 0;
	}
	return sv_codec_csv_decode(dec->impl, payload, len, b, meta_out, reason,
				   reason_len);
}

/* ---- shared helpers ---- */

void sv_codec_reason(char *reason, size_t reason_len, const char *fmt, ...)
{
	if (!reason || !reason_len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, reason_len, fmt, ap);
	va_end(ap);
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
	c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* Parse exactly p[0..n) as a decimal float in the C locale (the caller has
 * already checked the grammar). 0 on success; -1 when the value overflows
 * to infinity or the text is not fully consumed. Underflow to a subnormal
 * or zero is accepted, as every JSON parser does. */
int sv_codec_strtod(const char *p, size_t n, double *out)
{
	char small[64];
	char *s = n < sizeof(small) ? small : sv_malloc(n + 1);
	memcpy(s, p, n);
	s[n] = '\0';
	pthread_once(&c_locale_once, c_locale_init);
	char *end;
	errno = 0;
	double d = c_locale ? strtod_l(s, &end, c_locale) : strtod(s, &end);
	int rc = (end == s + n && n > 0 && isfinite(d)) ? 0 : -1;
	if (s != small)
		free(s);
	*out = d;
	return rc;
}

static int two(const char *p)
{
	if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
		return -1;
	return (p[0] - '0') * 10 + (p[1] - '0');
}

/* RFC 3339 date-time: YYYY-MM-DD('T'|'t'|' ')hh:mm:ss[.frac]('Z'|'z'|
 * (+|-)hh:mm), converted to ms since the epoch UTC. Fractions beyond ms are
 * truncated. A leap second (ss = 60) is rejected: ms timestamps cannot
 * represent it. 0 on success, -1 when invalid. */
int sv_codec_rfc3339(const char *p, size_t n, int64_t *ms_out)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30,
				      31, 31, 30, 31, 30, 31};
	if (n < 20)
		return -1;
	int y1 = two(p), y2 = two(p + 2), mo = two(p + 5), d = two(p + 8);
	int h = two(p + 11), mi = two(p + 14), s = two(p + 17);
	if (y1 < 0 || y2 < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 ||
	    mi < 0 || mi > 59 || s < 0 || s > 59)
		return -1;
	if (p[4] != '-' || p[7] != '-' || p[13] != ':' || p[16] != ':')
		return -1;
	if (p[10] != 'T' && p[10] != 't' && p[10] != ' ')
		return -1;
	int64_t y = y1 * 100 + y2;
	int dim = mdays[mo - 1] + (mo == 2 && sv_is_leap_year(y));
	if (d > dim)
		return -1;
	size_t i = 19;
	int64_t frac_ms = 0;
	if (p[i] == '.') {
		i++;
		size_t digits = 0;
		while (i < n && p[i] >= '0' && p[i] <= '9') {
			if (digits < 3)
				frac_ms = frac_ms * 10 + (p[i] - '0');
			digits++;
			i++;
		}
		if (!digits)
			return -1;
		for (size_t k = digits; k < 3; k++)
			frac_ms *= 10;
	}
	if (i >= n)
		return -1;
	int64_t off_min = 0;
	if (p[i] == 'Z' || p[i] == 'z') {
		i++;
	} else if (p[i] == '+' || p[i] == '-') {
		if (n - i < 6 || p[i + 3] != ':')
			return -1;
		int oh = two(p + i + 1), om = two(p + i + 4);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return -1;
		off_min = (oh * 60 + om) * (p[i] == '-' ? -1 : 1);
		i += 6;
	} else {
		return -1;
	}
	if (i != n)
		return -1;
	int64_t secs = sv_days_from_civil(y, mo, d) * 86400 + h * 3600 +
		mi * 60 + s - off_min * 60;
	*ms_out = secs * 1000 + frac_ms;
	return 0;
}

/* Strict UTF-8 (RFC 3629): no overlongs, no surrogates, max U+10FFFF. */
bool sv_codec_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;
	while (p < e) {
		unsigned c = *p;
		if (c < 0x80) {
			p++;
			continue;
		}
		size_t k;
		unsigned lo = 0x80, hi = 0xBF;
		if (c >= 0xC2 && c <= 0xDF) {
			k = 1;
		} else if (c >= 0xE0 && c <= 0xEF) {
			k = 2;
			if (c == 0xE0)
				lo = 0xA0;
			else if (c == 0xED)
				hi = 0x9F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			k = 3;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F;
		} else {
			return false;
		}
		if ((size_t)(e - p) <= k || p[1] < lo || p[1] > hi)
			return false;
		for (size_t j = 2; j <= k; j++)
			if ((p[j] & 0xC0) != 0x80)
				return false;
		p += k + 1;
	}
	return true;
}

/* ---- encoder ---- */

static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

size_t sv_fmt_i64(char *buf, int64_t v)
{
	char tmp[24];
	char *e = tmp + sizeof(tmp), *p = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	while (u >= 100) {
		unsigned r = (unsigned)(u % 100);
		u /= 100;
		p -= 2;
		memcpy(p, digit_pairs + 2 * r, 2);
	}
	if (u >= 10) {
		p -= 2;
		memcpy(p, digit_pairs + 2 * u, 2);
	} else {
		*--p = (char)('0' + u);
	}
	if (v < 0)
		*--p = '-';
	memcpy(buf, p, (size_t)(e - p));
	return (size_t)(e - p);
}

/* f == r / 10^k for an integer r below 2^53 and k <= 6: the text "r with k
 * decimals" parses back to f (reading it and dividing r by 10^k both round
 * the same rational correctly). The smallest such k is the shortest text.
 * Only for non-integers below 1e9 (fewer than 16 significant digits); the
 * caller bounds the magnitude from below.
 *
 * One probe at k = 6 decides: if some k <= 6 works, r * 10^(6-k) with 6
 * decimals is the same rational, so k = 6 works too, and its r6 =
 * nearbyint(f * 1e6) (exact: |f * 1e6| < 1e15, off by far less than 0.5)
 * ends in 6 - k zeros; the smallest k is 6 less its trailing zeros. A
 * value with more decimals costs one multiply and divide, not six. */
static size_t fmt_decimal(char *txt, double f)
{
	if (!(f != 0 && fabs(f) < 1e9))
		return 0;
	double r6 = nearbyint(f * 1e6);
	if (r6 / 1e6 != f)
		return 0;
	int64_t ri = (int64_t)fabs(r6);
	int k = 6;
	while (k > 1 && ri % 10 == 0) {
		ri /= 10;
		k--;
	}
	char dig[24];
	int nd = 0;
	do {
		dig[nd++] = (char)('0' + ri % 10);
		ri /= 10;
	} while (ri);
	while (nd <= k)
		dig[nd++] = '0'; /* 0.05: at least one integer digit */
	size_t t = 0;
	if (f < 0)
		txt[t++] = '-';
	for (int i = nd - 1; i >= 0; i--) {
		txt[t++] = dig[i];
		if (i == k)
			txt[t++] = '.';
	}
	return t;
}

size_t sv_fmt_f64_decimal(char *buf, double f)
{
	/* below 1e-4 %g switches to an exponent; integers print as such */
	if (!isfinite(f) || fabs(f) < 1e-4 || f == trunc(f))
		return 0;
	return fmt_decimal(buf, f);
}

/* Lay out the shortest round-trip digits of f (core/codec_dtoa.cc) as the
 * encoder always has, so that output stays byte for byte what it was
 * wherever that was already the shortest:
 *  - at most 6 decimals, |f| < 1e9: plain decimals ("12.5", "0.00005"),
 *    which the ≤ 6-decimal fast path (fmt_decimal) printed;
 *  - otherwise what the shortest of %.15g, %.16g and %.17g that reads back
 *    printed: %g at precision P = max(15, digits), i.e. an exponent
 *    ("1e+16", "5e-324", at least two exponent digits) when the decimal
 *    exponent is below -4 or at least P, else plain decimals.
 * The old search printed more digits than needed in a few cases, which
 * are now shorter: subnormals ("4.94065645841247e-324" is "5e-324") and
 * some exact powers of two (the rounding interval is narrower below, so
 * %.16g's nearest text missed it while another 16-digit text is in it). */
size_t sv_fmt_f64(char *buf, double f)
{
	if (!isfinite(f)) {
		memcpy(buf, "null", 4);
		return 4;
	}
	if (f == trunc(f) && fabs(f) < 9007199254740992.0 &&
	    !(f == 0 && signbit(f)))
		return sv_fmt_i64(buf, (int64_t)f);
	/* Most prices and measurements have a few decimals: fmt_decimal
	 * finds them in a multiply and a divide, cheaper than the digit
	 * generation (bench_hot f64_text). What it returns 0 for needs more
	 * than 6 decimals or is at least 1e9. */
	size_t d = fmt_decimal(buf, f);
	if (d)
		return d;
	char dig[SV_DTOA_DIGITS_MAX + 1];
	int point, neg;
	int nd = sv_codec_dtoa_shortest(f, dig, &point, &neg);
	int x = point - 1; /* f = d.ddd * 10^x */
	int prec = nd > 15 ? nd : 15;
	size_t t = 0;
	if (neg)
		buf[t++] = '-';
	if (x < -4 || x >= prec) {
		buf[t++] = dig[0];
		if (nd > 1) {
			buf[t++] = '.';
			memcpy(buf + t, dig + 1, (size_t)nd - 1);
			t += (size_t)nd - 1;
		}
		buf[t++] = 'e';
		buf[t++] = x < 0 ? '-' : '+';
		int ax = x < 0 ? -x : x;
		if (ax >= 100)
			buf[t++] = (char)('0' + ax / 100);
		buf[t++] = (char)('0' + ax / 10 % 10);
		buf[t++] = (char)('0' + ax % 10);
		return t;
	}
	if (point <= 0) {
		buf[t++] = '0';
		buf[t++] = '.';
		memset(buf + t, '0', (size_t)-point);
		t += (size_t)-point;
		memcpy(buf + t, dig, (size_t)nd);
		return t + (size_t)nd;
	}
	if (nd <= point) { /* an integer of 2^53 or more */
		memcpy(buf + t, dig, (size_t)nd);
		t += (size_t)nd;
		memset(buf + t, '0', (size_t)(point - nd));
		return t + (size_t)(point - nd);
	}
	memcpy(buf + t, dig, (size_t)point);
	t += (size_t)point;
	buf[t++] = '.';
	memcpy(buf + t, dig + point, (size_t)(nd - point));
	return t + (size_t)(nd - point);
}

/* Names without a byte that JSON escapes (nearly all) are copied as they
 * are: "name": into d, which has room for it. Returns the end, or NULL
 * when the name needs escaping (nothing useful written). */
static inline char *put_plain_name(char *d, const char *name, size_t n)
{
	*d++ = '"';
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)name[k];
		if (c < 0x20 || c == '"' || c == '\\')
			return NULL;
		*d++ = (char)c;
	}
	*d++ = '"';
	*d++ = ':';
	return d;
}

/* One reserve per field, then each piece written in place: a row was ~25
 * calls into sv_buf (putc, append, json_str) before, which was a good part
 * of the encoder's cost on W1 (bench/BASELINE.md, "W1 CPU per record").
 * String values and names that need escaping still go through
 * sv_buf_json_str, so the text is what it always was. */
void sv_json_encode_row(const sv_schema_t *schema, const sv_value_t *row,
			sv_buf_t *out)
{
	sv_buf_reserve(out, 1);
	out->data[out->len++] = '{';
	for (size_t i = 0; i < schema->nfields; i++) {
		const sv_field_t *f = &schema->fields[i];
		const sv_value_t *v = &row[i];
		size_t nl = strlen(f->name);
		/* ',' + "name": + the longest non-string value */
		sv_buf_reserve(out, nl + 4 + SV_FMT_F64_MAX);
		char *d = out->data + out->len;
		if (i)
			*d++ = ',';
		char *e = put_plain_name(d, f->name, nl);
		if (!e) {
			out->len = (size_t)(d - out->data);
			sv_buf_json_str(out, f->name, nl);
			sv_buf_reserve(out, 1 + SV_FMT_F64_MAX);
			e = out->data + out->len;
			*e++ = ':';
		}
		switch (v->type) {
		case SV_T_BOOL:
			if (v->v.b) {
				memcpy(e, "true", 4);
				e += 4;
			} else {
				memcpy(e, "false", 5);
				e += 5;
			}
			break;
		case SV_T_INT64:
		case SV_T_TIMESTAMP:
			e += sv_fmt_i64(e, v->v.i);
			break;
		case SV_T_FLOAT64:
			e += sv_fmt_f64(e, v->v.f);
			break;
		case SV_T_STRING:
			out->len = (size_t)(e - out->data);
			sv_buf_json_str(out, v->v.s, v->len);
			continue;
		default:
			memcpy(e, "null", 4);
			e += 4;
			break;
		}
		out->len = (size_t)(e - out->data);
	}
	sv_buf_reserve(out, 1);
	out->data[out->len++] = '}';
	out->data[out->len] = '\0';
}
