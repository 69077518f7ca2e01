/* operator.h — the operator interface and the pipeline that chains them.
 *
 * An operator turns input batches into output batches of its output schema.
 * Stateless operators (filter, select) only implement process; stateful ones
 * (window, dedup) also react to the watermark (advance), to the end of input
 * (finish), account their state and serialize it for checkpoints.
 *
 * Output rows may point at strings of the input batch: every stage batch of a
 * pipeline stays valid until the next call into the pipeline. Stateful
 * operators copy what they keep. Output rows carry meta: stateless operators
 * copy the input row's meta; windows set event_ms = window_end - 1 and
 * partition -1.
 *
 * Two-input operators (joins, core/join.h) extend the interface by three
 * entries: process_right takes batches of the second ("right") input,
 * whose schema is op->right_schema; out_watermark says how far the output's
 * event time has advanced, for the operators after it; state_sides splits
 * state_size by input. process and advance stay what they are: process
 * takes the first ("left") input, and advance reads both inputs'
 * watermarks, ctx->watermark_ms (left) and ctx->right_watermark_ms. A
 * pipeline holds at most one two-input operator; its right input enters
 * there (sv_pipeline_push_right). See docs/joins.md. */
#ifndef SV_OPERATOR_H
#define SV_OPERATOR_H

#include <stdint.h>

#include "core/error.h"
#include "core/record.h"

#define SV_WATERMARK_NONE INT64_MIN

/* Counters an operator adds to; owned by the job attempt. */
typedef struct sv_opstats {
	uint64_t records_late; /* late records dropped or side-output */
	uint64_t records_dropped; /* by dedup */
} sv_opstats_t;

typedef struct sv_op_ctx {
	int64_t watermark_ms; /* combined event-time watermark, or NONE */
	int64_t right_watermark_ms; /* two-input operators: the second
				     * input's watermark, or NONE */
	int64_t now_ms; /* processing time of this pass */
	sv_batch_t *late; /* side output for late records (input schema
				 * of the window), or NULL when policy is drop */
	sv_opstats_t *stats;
	/* advance only: 0, or the most output rows an operator with
	 * ops->more may emit in one call, leaving the rest ready for the
	 * next (sv_pipeline_advance_each sets it) */
	size_t advance_rows;
} sv_op_ctx_t;

typedef struct sv_op sv_op_t;

/* The state a two-input operator holds for one of its inputs. */
typedef struct sv_op_side_state {
	uint64_t bytes;
	uint64_t keys; /* distinct join keys held */
	uint64_t rows; /* rows (or table versions) held */
} sv_op_side_state_t;

typedef struct sv_op_ops {
	const char *name; /* "filter", "select", "window", "dedup" */
	/* Append output rows for the rows of in to out. */
	sv_error_t *(*process)(sv_op_t *op, sv_op_ctx_t *ctx, sv_batch_t *in,
			       sv_batch_t *out);
	/* The watermark moved to ctx->watermark_ms: emit what it completes and
	 * free state behind it. NULL for stateless operators. */
	sv_error_t *(*advance)(sv_op_t *op, sv_op_ctx_t *ctx, sv_batch_t *out);
	/* End of input (bounded end, or drain with final watermark): emit all
	 * open state. NULL for stateless operators. */
	sv_error_t *(*finish)(sv_op_t *op, sv_op_ctx_t *ctx, sv_batch_t *out);
	/* State held now. NULL for stateless operators. */
	void (*state_size)(sv_op_t *op, uint64_t *bytes, uint64_t *keys);
	/* Append a self-contained serialization of the state to out. */
	sv_error_t *(*snapshot)(sv_op_t *op, sv_buf_t *out);
	/* Replace the state with a snapshot's. */
	sv_error_t *(*restore)(sv_op_t *op, const char *data, size_t len);
	/* Incremental checkpoints (all three NULL when unsupported).
	 * snapshot_delta: append what changed since the last snapshot or
	 * delta that checkpointed() confirmed; *written false (nothing
	 * appended) when it cannot (no confirmed base since the last restore,
	 * or a state shape without change tracking): take a full snapshot.
	 * restore_delta: apply a delta on top of the restored state.
	 * checkpointed: the last snapshot or delta is durable; changes are
	 * counted from here. */
	sv_error_t *(*snapshot_delta)(sv_op_t *op, sv_buf_t *out,
				      bool *written);
	sv_error_t *(*restore_delta)(sv_op_t *op, const char *data, size_t len);
	void (*checkpointed)(sv_op_t *op);
	void (*destroy)(sv_op_t *op);
	/* Output in pieces (NULL: advance emits everything at once): true
	 * when the last advance stopped at ctx->advance_rows with more output
	 * ready, which the next advance at the same watermarks emits. Until
	 * then an operator changes nothing else (pruning waits) and a
	 * two-input operator's out_watermark stays below the rows still to
	 * come. */
	bool (*more)(sv_op_t *op);

	/* ---- two-input operators only; NULL for the others ---- */
	/* Append output rows for the rows of in, a batch of the second input
	 * (schema op->right_schema), to out. */
	sv_error_t *(*process_right)(sv_op_t *op, sv_op_ctx_t *ctx,
				     sv_batch_t *in, sv_batch_t *out);
	/* The watermark of the output as of the last advance: no row emitted
	 * later has an event time at or below it. NONE until both inputs
	 * have one. */
	int64_t (*out_watermark)(sv_op_t *op);
	/* State per input: sides[0] the left (first), sides[1] the right. */
	void (*state_sides)(sv_op_t *op, sv_op_side_state_t sides[2]);
} sv_op_ops_t;

struct sv_op {
	const sv_op_ops_t *ops;
	const sv_schema_t *in_schema; /* borrowed: the previous stage's */
	sv_schema_t *out_schema; /* owned by the operator */
	const sv_schema_t *right_schema; /* two-input operators: the second
					  * input's, borrowed; else NULL */
};

/* Free an operator through its vtable. */
void sv_op_destroy(sv_op_t *op);

/* filter: keep rows where expr is true. Errors as sv_expr_parse; a
 * non-boolean expression is a SV_ERR_SUBMISSION error. */
sv_error_t *sv_op_filter_new(const sv_schema_t *in, const char *expr,
			     sv_op_t **out);
/* select: output columns names[i] = exprs[i], in the order given. */
sv_error_t *sv_op_select_new(const sv_schema_t *in, size_t n,
			     const char *const *names, const char *const *exprs,
			     sv_op_t **out);

/* order: buffer every row, and at the end of input emit them sorted by the
 * key expressions (desc[i], nulls_first[i]), skipping offset rows and
 * keeping at most limit (-1: all). Bounded jobs only. */
sv_error_t *sv_op_order_new(const sv_schema_t *in, size_t nkeys,
			    const char *const *exprs, const bool *desc,
			    const bool *nulls_first, int64_t limit,
			    int64_t offset, sv_op_t **out);

/* ---- pipeline ---- */

typedef struct sv_pipeline sv_pipeline_t;

/* in_schema is borrowed and must outlive the pipeline. */
sv_pipeline_t *sv_pipeline_new(const sv_schema_t *in_schema);
void sv_pipeline_destroy(sv_pipeline_t *pl);
/* Append an operator (ownership taken). Its in_schema must be the current
 * output schema. */
void sv_pipeline_add(sv_pipeline_t *pl, sv_op_t *op);
size_t sv_pipeline_len(const sv_pipeline_t *pl);
sv_op_t *sv_pipeline_op(const sv_pipeline_t *pl, size_t i);
const sv_schema_t *sv_pipeline_out_schema(const sv_pipeline_t *pl);

/* Run in through every operator. *out is the final batch, owned by the
 * pipeline, valid until the next call. in must stay valid until then too. */
sv_error_t *sv_pipeline_push(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
			     sv_batch_t *in, sv_batch_t **out);
/* Propagate a watermark: each stateful operator's advance output flows
 * through the operators after it. Operators after a two-input operator see
 * its out_watermark as ctx->watermark_ms (ctx itself is not changed). */
sv_error_t *sv_pipeline_advance(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
				sv_batch_t **out);
/* The same, the output in pieces of at most rows rows (0: no limit) where
 * an operator can (ops->more: a lookup join answering the rows that waited
 * for its table): each piece goes through the operators after it and to
 * emit(opaque, out) before the next is made, so no stage holds the whole
 * burst. Everything the watermarks release is emitted before it returns;
 * it stops at the first error, of the pipeline or of emit. */
typedef sv_error_t *(*sv_pipeline_emit_fn)(void *opaque, sv_batch_t *out);
sv_error_t *sv_pipeline_advance_each(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
				     size_t rows, sv_pipeline_emit_fn emit,
				     void *opaque);
/* End of input: finish every operator in order, flowing output down. */
sv_error_t *sv_pipeline_finish(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
			       sv_batch_t **out);
/* The pipeline's two-input operator, or NULL (at most one). */
sv_op_t *sv_pipeline_join(const sv_pipeline_t *pl);
/* Run in, a batch of the second input (schema sv_pipeline_join()'s
 * right_schema), into the two-input operator and its output through the
 * operators after it. *out and the validity rules as for push. A
 * SV_ERR_PLANNING error when the pipeline has no two-input operator. */
sv_error_t *sv_pipeline_push_right(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
				   sv_batch_t *in, sv_batch_t **out);
/* Sum of the operators' state. */
void sv_pipeline_state_size(const sv_pipeline_t *pl, uint64_t *bytes,
			    uint64_t *keys);

#endif
