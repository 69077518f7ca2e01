/* rowcodec.c — the sv-row format (rowcodec.h, docs/repartition.md).
 *
 * A row is 'R', a version byte, then one cell per schema column: a type
 * tag (sv_type_t, 0 for null) and its payload, fixed-width little-endian
 * for numbers and timestamps, an unsigned LEB128 length before string
 * bytes. Encoding is a handful of appends per cell, no text formatting;
 * decoding checks every tag against the schema (the writer and the reader
 * share the schema, so a mismatch is a bug or a foreign record, refused
 * with a reason). A watermark record is 'W', the version, the upstream
 * task and the task count as int32 and the watermark as int64. */
#include "core/rowcodec.h"

#include <stdio.h>
#include <string.h>

static void put_u64(sv_buf_t *out, uint64_t v)
{
	char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (char)(v >> (8 * i));
	sv_buf_append(out, b, 8);
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		(uint32_t)p[3] << 24;
}

void sv_rowcodec_encode(const sv_schema_t *schema, const sv_value_t *row,
			sv_buf_t *out)
{
	sv_buf_putc(out, SV_ROWCODEC_ROW);
	sv_buf_putc(out, SV_ROWCODEC_VERSION);
	for (size_t c = 0; c < schema->nfields; c++) {
		const sv_value_t *v = &row[c];
		sv_buf_putc(out, (char)v->type);
		switch (v->type) {
		case SV_T_BOOL:
			sv_buf_putc(out, v->v.b ? 1 : 0);
			break;
		case SV_T_INT64:
		case SV_T_TIMESTAMP:
			put_u64(out, (uint64_t)v->v.i);
			break;
		case SV_T_FLOAT64: {
			uint64_t bits;
			memcpy(&bits, &v->v.f, 8);
			put_u64(out, bits);
			break;
		}
		case SV_T_STRING: {
			uint32_t n = v->len;
			do {
				unsigned char byte = n & 0x7f;
				n >>= 7;
				sv_buf_putc(out, (char)(byte | (n ? 0x80 : 0)));
			} while (n);
			sv_buf_append(out, v->v.s, v->len);
			break;
		}
		default:
			break;
		}
	}
}

static int refuse(sv_batch_t *b, char *reason, size_t reason_len,
		  const char *what, const char *col)
{
	sv_batch_pop_row(b);
	if (reason && reason_len)
		snprintf(reason, reason_len, "sv-row: %s at column '%s'", what,
			 col);
	return -1;
}

int sv_rowcodec_decode(const sv_schema_t *schema, const char *payload,
		       size_t len, sv_batch_t *b, sv_rowmeta_t **meta_out,
		       char *reason, size_t reason_len)
{
	const unsigned char *p = (const unsigned char *)payload;
	const unsigned char *end = p + len;
	if (len >= 2 && p[0] == SV_ROWCODEC_WATERMARK)
		return 1;
	if (len < 2 || p[0] != SV_ROWCODEC_ROW || p[1] != SV_ROWCODEC_VERSION) {
		if (reason && reason_len)
			snprintf(reason, reason_len,
				 "not an sv-row record of version %d",
				 SV_ROWCODEC_VERSION);
		return -1;
	}
	p += 2;
	sv_rowmeta_t *meta;
	sv_value_t *row = sv_batch_add_row(b, &meta);
	for (size_t c = 0; c < schema->nfields; c++) {
		const char *col = schema->fields[c].name;
		if (p >= end)
			return refuse(b, reason, reason_len, "short record",
				      col);
		unsigned tag = *p++;
		if (tag == SV_T_NULL) {
			if (!schema->fields[c].nullable)
				return refuse(b, reason, reason_len,
					      "null in a non-nullable column",
					      col);
			continue;
		}
		if (tag != (unsigned)schema->fields[c].type)
			return refuse(b, reason, reason_len, "another type",
				      col);
		/* cells are added in order: row stays valid (no add here) */
		sv_value_t *v = &row[c];
		if (tag == SV_T_BOOL) {
			if (end - p < 1)
				return refuse(b, reason, reason_len,
					      "short record", col);
			*v = sv_bool(*p++ != 0);
		} else if (tag == SV_T_STRING) {
			uint64_t n = 0;
			int shift = 0;
			for (;;) {
				if (p >= end || shift > 28)
					return refuse(b, reason, reason_len,
						      "bad string length", col);
				unsigned char byte = *p++;
				n |= (uint64_t)(byte & 0x7f) << shift;
				shift += 7;
				if (!(byte & 0x80))
					break;
			}
			if ((uint64_t)(end - p) < n)
				return refuse(b, reason, reason_len,
					      "short string", col);
			const char *s = n
				? sv_batch_strdup(b, (const char *)p, (size_t)n)
				: "";
			row = sv_batch_row(b, b->nrows - 1);
			v = &row[c];
			*v = sv_str(s, (uint32_t)n);
			p += n;
		} else {
			if (end - p < 8)
				return refuse(b, reason, reason_len,
					      "short record", col);
			uint64_t bits = get_u64(p);
			p += 8;
			if (tag == SV_T_FLOAT64) {
				double f;
				memcpy(&f, &bits, 8);
				*v = sv_float(f);
			} else if (tag == SV_T_INT64) {
				*v = sv_int((int64_t)bits);
			} else {
				*v = sv_ts((int64_t)bits);
			}
		}
	}
	if (p != end)
		return refuse(b, reason, reason_len, "extra bytes",
			      schema->nfields
				      ? schema->fields[schema->nfields - 1].name
				      : "");
	*meta_out = meta;
	return 0;
}

void sv_rowcodec_watermark(char *buf, int32_t src_task, int32_t n_tasks,
			   int64_t watermark_ms)
{
	buf[0] = SV_ROWCODEC_WATERMARK;
	buf[1] = SV_ROWCODEC_VERSION;
	uint32_t a = (uint32_t)src_task, n = (uint32_t)n_tasks;
	uint64_t w = (uint64_t)watermark_ms;
	for (int i = 0; i < 4; i++) {
		buf[2 + i] = (char)(a >> (8 * i));
		buf[6 + i] = (char)(n >> (8 * i));
	}
	for (int i = 0; i < 8; i++)
		buf[10 + i] = (char)(w >> (8 * i));
}

bool sv_rowcodec_is_watermark(const char *payload, size_t len,
			      int32_t *src_task, int32_t *n_tasks,
			      int64_t *watermark_ms)
{
	const unsigned char *p = (const unsigned char *)payload;
	if (len != SV_ROWCODEC_WM_LEN || p[0] != SV_ROWCODEC_WATERMARK ||
	    p[1] != SV_ROWCODEC_VERSION)
		return false;
	*src_task = (int32_t)get_u32(p + 2);
	*n_tasks = (int32_t)get_u32(p + 6);
	*watermark_ms = (int64_t)get_u64(p + 10);
	return true;
}
