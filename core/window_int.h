/* window_int.h — internals shared by window.c, window_agg.c, dedup.c and
 * their tests: aggregate definitions and accumulators, and the little-endian
 * binary writer/reader used for operator snapshots. */
#ifndef SV_WINDOW_INT_H
#define SV_WINDOW_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/expr.h"
#include "core/statemap.h"
#include "core/window.h"

/* ---- aggregates ---- */

typedef enum sv_aggfn {
	SV_AGG_COUNT_ROWS = 0, /* count() / count(*) */
	SV_AGG_COUNT, /* count(x): non-null x */
	SV_AGG_SUM,
	SV_AGG_MIN,
	SV_AGG_MAX,
	SV_AGG_AVG,
	SV_AGG_COUNT_DISTINCT,
	SV_AGG_FIRST,
	SV_AGG_LAST,
} sv_aggfn_t;

typedef struct sv_aggdef {
	sv_aggfn_t fn;
	char *name; /* output column */
	sv_expr_t *expr; /* argument; NULL for count() */
	int col; /* argument is a bare column: its index, else -1 */
	sv_type_t arg_type;
	sv_type_t out_type;
} sv_aggdef_t;

/* One aggregate's running state for one key and pane/window/session. All
 * aggregates are mergeable: merging the accumulators of disjoint inputs
 * gives the accumulator of their union. */
typedef struct sv_acc {
	int64_t n; /* rows (count()), non-null values (others) */
	union {
		int64_t i;
		double f;
	} sum;
	sv_value_t v; /* min/max/first/last (type NULL while none); a
			   * string points into buf, or is borrowed */
	char *buf; /* owned string storage, reused while it fits */
	uint32_t vcap; /* capacity of buf */
	int64_t t; /* first/last: event time of v */
	uint64_t seq; /* first/last: arrival order of v (ties) */
	sv_statemap_t *set; /* count_distinct: distinct non-null values */
} sv_acc_t;

/* Parse "fn(expr)" for output column name against the input schema. */
sv_error_t *sv_aggdef_parse(sv_aggdef_t *def, const char *name,
			    const char *text, const sv_schema_t *schema);
void sv_aggdef_release(sv_aggdef_t *def);

/* Evaluate the argument on row (string results in arena). */
void sv_agg_arg(const sv_aggdef_t *def, const sv_value_t *row,
		sv_arena_t *arena, sv_value_t *out);
/* Add one input value x (already evaluated; ignored for count()) with event
 * time t and arrival sequence seq. *bytes changes by the heap bytes the
 * accumulator gained or lost. */
void sv_acc_add(const sv_aggdef_t *def, sv_acc_t *acc, const sv_value_t *x,
		int64_t t, uint64_t seq, int64_t *bytes);
/* Merge src into dst. copy=false lets dst borrow src's strings (dst must be
 * released before src and only read meanwhile); count_distinct sets are
 * always copied. */
void sv_acc_merge(const sv_aggdef_t *def, sv_acc_t *dst, const sv_acc_t *src,
		  bool copy, int64_t *bytes);
/* The aggregate's value; strings point into the accumulator. */
void sv_acc_result(const sv_aggdef_t *def, const sv_acc_t *acc,
		   sv_value_t *out);
/* Free what the accumulator owns; *bytes as above (may be NULL). */
void sv_acc_release(sv_acc_t *acc, int64_t *bytes);

/* ---- snapshot encoding (little-endian) ---- */

void sv_ser_u8(sv_buf_t *b, uint8_t x);
void sv_ser_u32(sv_buf_t *b, uint32_t x);
void sv_ser_u64(sv_buf_t *b, uint64_t x);
static inline void sv_ser_i64(sv_buf_t *b, int64_t x)
{
	sv_ser_u64(b, (uint64_t)x);
}
void sv_ser_value(sv_buf_t *b, const sv_value_t *v);
void sv_ser_acc(sv_buf_t *b, const sv_acc_t *acc);

typedef struct sv_deser {
	const char *p;
	size_t len, off;
	bool bad; /* truncated or malformed; reads return 0 from then on */
} sv_deser_t;

uint8_t sv_deser_u8(sv_deser_t *d);
uint32_t sv_deser_u32(sv_deser_t *d);
uint64_t sv_deser_u64(sv_deser_t *d);
static inline int64_t sv_deser_i64(sv_deser_t *d)
{
	return (int64_t)sv_deser_u64(d);
}
/* A value; string bytes point into the snapshot data. */
void sv_deser_value(sv_deser_t *d, sv_value_t *v);
/* An accumulator written by sv_ser_acc (strings and sets copied). */
void sv_deser_acc(sv_deser_t *d, sv_acc_t *acc, int64_t *bytes);

/* Floor division and modulo for negative times. */
static inline int64_t sv_floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Event times outside this range are treated as late (arithmetic on
 * window bounds must not overflow). */
#define SV_TIME_LIMIT ((int64_t)1 << 61)

#endif
