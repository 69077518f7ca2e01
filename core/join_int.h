/* join_int.h — internals shared by join.c (interval and hash joins),
 * join_lookup.c (lookup join) and their tests: the stored row, the part
 * of the operator every join has (keys, take columns, state cap) and the
 * output row writer. */
#ifndef SV_JOIN_INT_H
#define SV_JOIN_INT_H

#include "core/join.h"
#include "core/window_int.h"

/* A row held in join state: one allocation, the cells then their string
 * bytes. */
typedef struct sv_jrow {
	int64_t t; /* event time (lookup: the version's effective time) */
	int64_t expire; /* interval: freed when the other side's watermark
			 * reaches it */
	void *key; /* the key entry listing the row */
	uint64_t seq; /* arrival order */
	uint32_t pos; /* index in the key's row list */
	uint32_t bytes; /* size of the allocation */
	uint8_t matched; /* a left row that has been output with a match */
	sv_value_t vals[];
} sv_jrow_t;

/* Copy ncols cells (strings included) into a new row. */
sv_jrow_t *sv_jrow_new(const sv_value_t *row, size_t ncols);

/* What every join operator has. Embedded first in each operator. */
typedef struct sv_joinbase {
	sv_op_t base;
	sv_jointype_t type;
	sv_joinkind_t kind;
	size_t nkeys;
	int *lkeys, *rkeys; /* key columns of each input */
	size_t nleft, nright; /* column counts of the inputs */
	size_t ntake;
	int *take_src; /* right column of each take column */
	uint64_t max_rows, max_bytes;
	sv_value_t *keybuf; /* nkeys */
} sv_joinbase_t;

/* Check spec against the schemas and fill jb (base.ops left to the
 * caller). On error jb is released. */
sv_error_t *sv_joinbase_init(sv_joinbase_t *jb, const sv_schema_t *left,
			     const sv_schema_t *right,
			     const sv_join_spec_t *spec);
void sv_joinbase_release(sv_joinbase_t *jb);

/* The key of row (columns cols) into jb->keybuf; false when a key value is
 * null (it matches nothing). */
bool sv_join_key(sv_joinbase_t *jb, const sv_value_t *row, const int *cols);

/* Append an output row: the left row's cells, then the take columns of
 * rrow (null when rrow is NULL); strings copied into out. */
void sv_join_emit(const sv_joinbase_t *jb, sv_batch_t *out,
		  const sv_value_t *lrow, const sv_value_t *rrow,
		  int64_t event_ms);

/* sv_join_emit with the right side already cut to the take columns:
 * taken[i] is take column i (NULL: no match). */
void sv_join_emit_taken(const sv_joinbase_t *jb, sv_batch_t *out,
			const sv_value_t *lrow, const sv_value_t *taken,
			int64_t event_ms);

/* NULL, or the non-retriable runtime error of a state cap exceeded by
 * holding rows rows of bytes bytes (left/right rows for the message). */
sv_error_t *sv_join_check_cap(const sv_joinbase_t *jb, uint64_t lrows,
			      uint64_t rrows, uint64_t bytes);

/* Snapshot header shared by the joins: u8 version, u8 kind letter, u8 type,
 * u8 kind, u32 nkeys, u32 left columns, u32 right columns. */
void sv_join_ser_header(const sv_joinbase_t *jb, sv_buf_t *out, char letter);
sv_error_t *sv_join_deser_header(const sv_joinbase_t *jb, sv_deser_t *d,
				 char letter);
sv_error_t *sv_join_corrupt(const sv_joinbase_t *jb, const sv_deser_t *d);

/* The lookup join (join_lookup.c); called by sv_op_join_new. */
sv_error_t *sv_op_lookup_join_new(const sv_schema_t *left,
				  const sv_schema_t *right,
				  const sv_join_spec_t *spec, sv_op_t **out);

#define SV_JOIN_SNAPSHOT_VERSION 1

#endif
