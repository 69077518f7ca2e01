/* codec.h — record formats: decode input payloads straight into typed rows,
 * encode rows for sinks.
 *
 * The null rule (docs/records.md): a missing field and an explicit JSON null
 * (or an empty CSV cell) both decode as null. Null in a non-nullable field
 * makes the record invalid. Fields not in the schema are ignored. A value of
 * the wrong type is invalid (no silent coercion), except that an integer is
 * accepted for float64, and timestamp_ms accepts an integer (ms since epoch)
 * or an RFC 3339 string. Invalid records are rejected with a reason naming
 * the field; they never crash a job. */
#ifndef SV_CODEC_H
#define SV_CODEC_H

#include "core/record.h"

typedef enum sv_format {
	SV_FMT_JSON = 0,
	SV_FMT_CSV,
	SV_FMT_ROW, /* sv-row (core/rowcodec.h): repartition topics only,
		     * never parsed from a spec */
} sv_format_t;

/* "json" / "csv"; false when unknown. */
bool sv_format_parse(const char *name, sv_format_t *out);
const char *sv_format_name(sv_format_t fmt);

typedef struct sv_decoder sv_decoder_t;

/* A decoder for schema (borrowed; must outlive the decoder). CSV: columns in
 * schema order, ',' separated, RFC 4180 quoting, no header. */
sv_decoder_t *sv_decoder_new(sv_format_t fmt, const sv_schema_t *schema);
void sv_decoder_destroy(sv_decoder_t *dec);

/* Decode payload into a new row appended to b (b->schema must be the
 * decoder's schema); strings are copied into b's arena. Returns 0 and sets
 * *meta_out to the row's meta for the caller to fill; or returns -1, adds no
 * row, and writes a reason ("field 'amount': expected float64, got string")
 * into reason (size reason_len). thread: one thread per decoder. */
int sv_decoder_decode(sv_decoder_t *dec, const char *payload, size_t len,
		      sv_batch_t *b, sv_rowmeta_t **meta_out, char *reason,
		      size_t reason_len);

/* Append row (of schema) as one JSON object, fields in schema order, nulls
 * as null, timestamps as integers, floats in shortest round-trip form. */
void sv_json_encode_row(const sv_schema_t *schema, const sv_value_t *row,
			sv_buf_t *out);

/* Number to text without snprintf, for per-record paths (the encoder, the
 * Kafka sink's keys, casts). No NUL is written. */
#define SV_FMT_I64_MAX 20 /* "-9223372036854775808" */
/* v in decimal into buf (SV_FMT_I64_MAX bytes); returns the length. */
size_t sv_fmt_i64(char *buf, int64_t v);
/* f as JSON number text (SV_FMT_F64_MAX bytes; no NUL): integers below
 * 2^53 as integers, others from their shortest round-trip digits, in the
 * layout of the shortest of %.15g/%.16g/%.17g that reads back ("0.1",
 * "123.45600000000002", "1e+16", "5e-324") except that values with at
 * most 6 decimals below 1e9 are plain decimals ("0.00005"); non-finite as
 * "null". What sv_json_encode_row writes. Returns the length. */
#define SV_FMT_F64_MAX 32 /* "-0.00012345678901234567", "-1.79...e+308" */
size_t sv_fmt_f64(char *buf, double f);
/* f as its shortest decimal text when it has at most 6 decimals and
 * 1e-4 <= |f| < 1e9 and is not an integer ("12.5", "-0.05"): exactly what
 * the shortest round-tripping %.15g..%.17g prints for it. Returns the
 * length (at most 17), or 0 for any other f (the caller falls back to
 * printf). buf: 24 bytes. */
size_t sv_fmt_f64_decimal(char *buf, double f);

#endif
