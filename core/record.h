/* record.h — schemas, typed values and record batches.
 *
 * Records are typed rows of a declared schema, decoded once at the source and
 * encoded once at the sink. A batch holds rows row-major as fixed-size
 * sv_value_t cells; string bytes live in the batch arena (or in an upstream
 * batch's arena, which stays valid while a pipeline pass runs). A batch is
 * reused: reset keeps its memory, so the hot path does not allocate per
 * record. */
#ifndef SV_RECORD_H
#define SV_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util.h"

typedef enum sv_type {
	SV_T_NULL = 0, /* only as a value's type: the value is null */
	SV_T_BOOL,
	SV_T_INT64,
	SV_T_FLOAT64,
	SV_T_STRING,
	SV_T_TIMESTAMP, /* milliseconds since the epoch, UTC */
	SV_T__COUNT
} sv_type_t;

/* One cell. 16 bytes. Strings are not NUL-terminated: use len. */
typedef struct sv_value {
	uint8_t type; /* sv_type_t; SV_T_NULL when null */
	uint32_t len; /* string length in bytes */
	union {
		bool b;
		int64_t i; /* INT64 and TIMESTAMP */
		double f;
		const char *s;
	} v;
} sv_value_t;

static inline sv_value_t sv_null(void)
{
	sv_value_t x = {0};
	return x;
}
static inline sv_value_t sv_bool(bool b)
{
	sv_value_t x = {.type = SV_T_BOOL};
	x.v.b = b;
	return x;
}
static inline sv_value_t sv_int(int64_t i)
{
	sv_value_t x = {.type = SV_T_INT64};
	x.v.i = i;
	return x;
}
static inline sv_value_t sv_float(double f)
{
	sv_value_t x = {.type = SV_T_FLOAT64};
	x.v.f = f;
	return x;
}
static inline sv_value_t sv_ts(int64_t ms)
{
	sv_value_t x = {.type = SV_T_TIMESTAMP};
	x.v.i = ms;
	return x;
}
static inline sv_value_t sv_str(const char *s, uint32_t len)
{
	sv_value_t x = {.type = SV_T_STRING, .len = len};
	x.v.s = s;
	return x;
}
static inline bool sv_is_null(const sv_value_t *v)
{
	return v->type == SV_T_NULL;
}

/* "bool", "int64", "float64", "string", "timestamp_ms" ("null" for SV_T_NULL). */
const char *sv_type_name(sv_type_t t);
/* Parse a type name as written in a job spec; false when unknown. */
bool sv_type_parse(const char *name, sv_type_t *out);

/* Deep equality of two values (null equals null here; SQL null semantics
 * are the expression evaluator's business). Strings compare bytes. */
bool sv_value_equal(const sv_value_t *a, const sv_value_t *b);
/* Total order for sorting and min/max: null < bool < numbers < string. */
int sv_value_cmp(const sv_value_t *a, const sv_value_t *b);
/* 64-bit hash consistent with sv_value_equal. */
uint64_t sv_value_hash(const sv_value_t *v, uint64_t seed);

typedef struct sv_field {
	char *name;
	sv_type_t type;
	bool nullable; /* default true in specs */
} sv_field_t;

typedef struct sv_schema {
	size_t nfields;
	sv_field_t *fields;
} sv_schema_t;

sv_schema_t *sv_schema_new(void);
void sv_schema_destroy(sv_schema_t *schema);
sv_schema_t *sv_schema_copy(const sv_schema_t *schema);
/* Append a field (name copied). Returns its index, or -1 if the name exists. */
int sv_schema_add(sv_schema_t *schema, const char *name, sv_type_t type,
		  bool nullable);
/* Index of the field, or -1. */
int sv_schema_find(const sv_schema_t *schema, const char *name);
int sv_schema_findn(const sv_schema_t *schema, const char *name, size_t len);

/* Where a row came from; used for offsets, partition watermarks, DLQ. */
#define SV_ROW_DELETE 1u /* a table tombstone: the key's value is null */

typedef struct sv_rowmeta {
	int32_t partition; /* -1 when not from a partitioned source */
	uint32_t flags; /* SV_ROW_*; 0 for ordinary rows */
	int64_t offset;
	int64_t source_ts_ms; /* broker/creation timestamp, or -1 */
	int64_t event_ms; /* event time assigned at the source (the spec's
			       * event_time.field, else processing time); it
			       * travels with the row through select/filter */
} sv_rowmeta_t;

/* An input that could not be decoded: counted, and sent to the dead-letter
 * sink when the job has one. Payload and reason live in the batch arena. */
typedef struct sv_reject {
	int32_t partition;
	int64_t offset;
	const char *payload;
	size_t len;
	const char *reason;
} sv_reject_t;

typedef struct sv_batch {
	const sv_schema_t *schema; /* borrowed; outlives the batch */
	size_t ncols;
	size_t nrows, cap;
	sv_value_t *vals; /* nrows * ncols, row-major */
	sv_rowmeta_t *meta; /* nrows */
	size_t nrejects, rejcap;
	sv_reject_t *rejects;
	sv_arena_t arena; /* string bytes owned by this batch */
} sv_batch_t;

void sv_batch_init(sv_batch_t *b, const sv_schema_t *schema);
void sv_batch_release(sv_batch_t *b);
/* Drop rows, rejects and arena contents; keep memory. */
void sv_batch_reset(sv_batch_t *b);
/* Append a row with every cell null and meta zeroed (partition -1); returns
 * its cells. Pointers into the batch are invalidated by the next add. */
sv_value_t *sv_batch_add_row(sv_batch_t *b, sv_rowmeta_t **meta);
/* Remove the last row (a decoder that failed half-way). */
void sv_batch_pop_row(sv_batch_t *b);
static inline sv_value_t *sv_batch_row(const sv_batch_t *b, size_t r)
{
	return b->vals + r * b->ncols;
}
/* Keep only the rows whose keep[r] is nonzero, in order. */
void sv_batch_compact(sv_batch_t *b, const uint8_t *keep);
/* Copy bytes into the batch arena. */
const char *sv_batch_strdup(sv_batch_t *b, const char *p, size_t n);
/* Record an undecodable input (payload and reason copied). */
void sv_batch_reject(sv_batch_t *b, int32_t partition, int64_t offset,
		     const char *payload, size_t len, const char *reason);
/* Copy row r of src (same schema) into dst; strings copied into dst's arena. */
void sv_batch_copy_row(sv_batch_t *dst, const sv_batch_t *src, size_t r);

#endif
