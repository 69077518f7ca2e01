/* rowcodec.h — sv-row, the internal binary row format of repartition
 * topics (docs/repartition.md): typed cells in schema order, and the
 * watermark control records that travel beside the rows. Not a user
 * format: only the stages of a repartitioned job write and read it. */
#ifndef SV_ROWCODEC_H
#define SV_ROWCODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/record.h"
#include "core/util.h"

#define SV_ROWCODEC_ROW 'R'
#define SV_ROWCODEC_WATERMARK 'W'
#define SV_ROWCODEC_VERSION 1
#define SV_ROWCODEC_WM_LEN 18 /* 'W' 0x01 i32 i32 i64 */

/* Append row (of schema, borrowed) to out as one sv-row payload. */
void sv_rowcodec_encode(const sv_schema_t *schema, const sv_value_t *row,
			sv_buf_t *out);

/* Decode an sv-row payload into a new row of b (strings copied into b's
 * arena). Returns 0 and *meta_out; -1 with a reason naming the column and
 * no row added (a wrong type, a short or long payload, an unknown
 * version); 1 when the payload is a watermark record (no row added). */
int sv_rowcodec_decode(const sv_schema_t *schema, const char *p, size_t len,
		       sv_batch_t *b, sv_rowmeta_t **meta_out, char *reason,
		       size_t reason_len);

/* A watermark record: upstream task src_task of n_tasks is at
 * watermark_ms. buf: SV_ROWCODEC_WM_LEN bytes. */
void sv_rowcodec_watermark(char *buf, int32_t src_task, int32_t n_tasks,
			   int64_t watermark_ms);
/* Whether p is a watermark record; if so its fields. */
bool sv_rowcodec_is_watermark(const char *p, size_t len, int32_t *src_task,
			      int32_t *n_tasks, int64_t *watermark_ms);

#endif
