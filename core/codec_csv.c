/* codec_csv.c — the CSV record decoder: one payload is one record, cells
 * in schema order, ',' separated, RFC 4180 quoting ("" inside a quoted cell
 * is one quote; quoted cells may hold commas and line breaks). No header.
 *
 * One trailing line break ("\n" or "\r\n") is dropped, so lines from files
 * and bare Kafka values both work. An empty unquoted cell is null; a quoted
 * empty cell ("") is the empty string for a string field and invalid for
 * any other type. Cells are parsed strictly: bool is true/false, int64 is
 * an optional '-' then digits (no '+', no spaces, in range), float64 is a
 * decimal number (strtod in the C locale, fully consumed, finite; no hex,
 * inf or nan), timestamp_ms is integer ms or RFC 3339, strings must be
 * valid UTF-8. A wrong cell count, a stray quote or a bad cell rejects the
 * record with a reason naming the column. */
#define _GNU_SOURCE
#include "core/codec.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- codec-internal (defined in codec.c) ---- */
void sv_codec_reason(char *reason, size_t reason_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sv_codec_strtod(const char *p, size_t n, double *out);
int sv_codec_rfc3339(const char *p, size_t n, int64_t *ms_out);
bool sv_codec_utf8_valid(const char *p, size_t n);
void *sv_codec_csv_new(const sv_schema_t *schema);
void sv_codec_csv_destroy(void *impl);
int sv_codec_csv_decode(void *impl, const char *p, size_t len, sv_batch_t *b,
			sv_rowmeta_t **meta_out, char *reason,
			size_t reason_len);
/* ---- end codec-internal ---- */

typedef struct sv_csv_dec {
	const sv_schema_t *schema; /* borrowed */
	sv_buf_t cell; /* unquoted text of a quoted cell */
} sv_csv_dec_t;

void *sv_codec_csv_new(const sv_schema_t *schema)
{
	sv_csv_dec_t *dec = sv_calloc(1, sizeof(*dec));
	dec->schema = schema;
	sv_buf_init(&dec->cell);
	return dec;
}

void sv_codec_csv_destroy(void *impl)
{
	sv_csv_dec_t *dec = impl;
	if (!dec)
		return;
	sv_buf_release(&dec->cell);
	free(dec);
}

static int parse_i64(const char *p, size_t n, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	if (n && p[0] == '-') {
		neg = true;
		i = 1;
	}
	if (i == n)
		return -1;
	if (p[i] == '0' && n - i > 1)
		return -1; /* leading zero, as in JSON */
	uint64_t m = 0;
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		unsigned d = (unsigned)(p[i] - '0');
		if (m > (UINT64_MAX - d) / 10)
			return -1;
		m = m * 10 + d;
	}
	if (neg ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX)
		return -1;
	*out = neg ? (int64_t)(0 - m) : (int64_t)m;
	return 0;
}

static int parse_f64(const char *p, size_t n, double *out)
{
	bool digit = false;
	for (size_t i = 0; i < n; i++) {
		char ch = p[i];
		if (ch >= '0' && ch <= '9')
			digit = true;
		else if (ch != '-' && ch != '+' && ch != '.' && ch != 'e' &&
			 ch != 'E')
			return -1;
	}
	if (!digit || p[0] == '+')
		return -1;
	return sv_codec_strtod(p, n, out);
}

static int cell_err(sv_csv_dec_t *dec, size_t col, char *reason,
		    size_t reason_len, const char *what)
{
	const sv_field_t *f = &dec->schema->fields[col];
	sv_codec_reason(reason, reason_len, "column %zu ('%s'): %s", col + 1,
			f->name, what);
	return -1;
}

/* Convert the text of one cell into v. */
static int put_cell(sv_csv_dec_t *dec, sv_batch_t *b, size_t col, const char *s,
		    size_t n, bool quoted, sv_value_t *v, char *reason,
		    size_t reason_len)
{
	const sv_field_t *f = &dec->schema->fields[col];
	char what[96];
	if (n == 0 && !quoted) {
		if (!f->nullable) {
			sv_codec_reason(reason, reason_len,
					"field '%s' is null but not nullable",
					f->name);
			return -1;
		}
		*v = sv_null();
		return 0;
	}
	switch (f->type) {
	case SV_T_STRING:
		if (n > UINT32_MAX)
			return cell_err(dec, col, reason, reason_len,
					"string too long");
		if (!sv_codec_utf8_valid(s, n))
			return cell_err(dec, col, reason, reason_len,
					"invalid UTF-8");
		*v = sv_str(sv_batch_strdup(b, s, n), (uint32_t)n);
		return 0;
	case SV_T_BOOL:
		if (n == 4 && !memcmp(s, "true", 4)) {
			*v = sv_bool(true);
			return 0;
		}
		if (n == 5 && !memcmp(s, "false", 5)) {
			*v = sv_bool(false);
			return 0;
		}
		break;
	case SV_T_INT64: {
		int64_t i;
		if (parse_i64(s, n, &i))
			break;
		*v = sv_int(i);
		return 0;
	}
	case SV_T_FLOAT64: {
		double d;
		if (parse_f64(s, n, &d))
			break;
		*v = sv_float(d);
		return 0;
	}
	case SV_T_TIMESTAMP: {
		int64_t ms;
		if (parse_i64(s, n, &ms) && sv_codec_rfc3339(s, n, &ms))
			break;
		*v = sv_ts(ms);
		return 0;
	}
	default:
		break;
	}
	snprintf(what, sizeof(what), "expected %s, got '%.*s'",
		 sv_type_name(f->type), n > 40 ? 40 : (int)n, s);
	return cell_err(dec, col, reason, reason_len, what);
}

int sv_codec_csv_decode(void *impl, const char *payload, size_t len,
			sv_batch_t *b, sv_rowmeta_t **meta_out, char *reason,
			size_t reason_len)
{
	sv_csv_dec_t *dec = impl;
	const sv_schema_t *schema = dec->schema;
	if (!payload)
		payload = "";
	const char *p = payload, *end = payload + len;
	if (end > p && end[-1] == '\n') {
		end--;
		if (end > p && end[-1] == '\r')
			end--;
	}
	sv_rowmeta_t *meta;
	sv_value_t *row = sv_batch_add_row(b, &meta);
	size_t col = 0;

	if (schema->nfields == 0) {
		if (p != end) {
			sv_codec_reason(reason, reason_len,
					"expected 0 columns, got data");
			goto fail;
		}
		goto ok;
	}
	for (;;) {
		const char *s;
		size_t n;
		bool quoted = false;
		if (col >= schema->nfields) {
			sv_codec_reason(reason, reason_len,
					"expected %zu columns, got more",
					schema->nfields);
			goto fail;
		}
		if (p < end && *p == '"') {
			quoted = true;
			sv_buf_t *cb = &dec->cell;
			sv_buf_reset(cb);
			p++;
			for (;;) {
				const char *q = memchr(p, '"',
						       (size_t)(end - p));
				if (!q) {
					sv_codec_reason(
						reason, reason_len,
						"column %zu: unterminated "
						"quoted cell",
						col + 1);
					goto fail;
				}
				sv_buf_append(cb, p, (size_t)(q - p));
				p = q + 1;
				if (p < end && *p == '"') {
					sv_buf_putc(cb, '"');
					p++;
					continue;
				}
				break;
			}
			if (p < end && *p != ',') {
				sv_codec_reason(reason, reason_len,
						"column %zu: characters after "
						"closing quote",
						col + 1);
				goto fail;
			}
			s = cb->data ? cb->data : "";
			n = cb->len;
		} else {
			s = p;
			while (p < end && *p != ',' && *p != '"' &&
			       *p != '\n' && *p != '\r')
				p++;
			if (p < end && *p != ',') {
				sv_codec_reason(
					reason, reason_len,
					*p == '"' ? "column %zu: quote inside "
						    "unquoted cell"
						  : "column %zu: line break "
						    "inside unquoted cell",
					col + 1);
				goto fail;
			}
			n = (size_t)(p - s);
		}
		if (put_cell(dec, b, col, s, n, quoted, &row[col], reason,
			     reason_len))
			goto fail;
		col++;
		if (p >= end)
			break;
		p++; /* ',' */
	}
	if (col != schema->nfields) {
		sv_codec_reason(reason, reason_len,
				"expected %zu columns, got %zu",
				schema->nfields, col);
		goto fail;
	}
ok:
	if (meta_out)
		*meta_out = meta;
	return 0;
fail:
	sv_batch_pop_row(b);
	return -1;
}
