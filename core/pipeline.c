/* pipeline.c — a chain of operators run batch by batch (see operator.h).
 *
 * Every operator writes into a batch the pipeline owns (one per stage,
 * reused across calls: reset keeps memory, so a steady pipeline stops
 * allocating). A push resets the stages and runs the input through each
 * operator in turn; since the stages stay untouched until the next call, a
 * later stage may point at strings of an earlier one or of the caller's
 * input batch.
 *
 * advance and finish walk the operators in order: operator i first
 * processes what the operators before it emitted during this call, then
 * gets its own advance/finish (stateful operators only), so a window's
 * output flows through everything after it, and a downstream window sees
 * those rows before its own watermark moves.
 *
 * A pipeline may hold one two-input operator (a join). Its second input
 * enters there (push_right) and flows through the operators after it; in
 * advance and finish those operators see the join's out_watermark instead
 * of the source's, so a window after a join closes on the join's output
 * time.
 *
 * sv_pipeline_advance_each asks for the output in pieces: operators that
 * can (ops->more) stop at ctx->advance_rows rows and the pipeline advances
 * again, each piece flowing through the rest and out before the next, so a
 * burst (a lookup join answering the rows that waited for its table) never
 * sits whole in a stage batch, the sink's encoding or the producer. The
 * pieces are made within the one call, so no input, checkpoint or restore
 * comes between them. */
#include "core/operator.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct sv_pipeline {
	const sv_schema_t *in_schema; /* borrowed */
	size_t n, cap;
	sv_op_t **ops; /* owned */
	sv_batch_t **stages; /* owned; stages[i] holds ops[i]'s output */
	sv_batch_t empty; /* output of advance/finish with no operators */
	size_t join; /* index of the two-input operator, or SIZE_MAX */
};

sv_pipeline_t *sv_pipeline_new(const sv_schema_t *in_schema)
{
	sv_pipeline_t *pl = sv_calloc(1, sizeof(*pl));
	pl->in_schema = in_schema;
	pl->join = SIZE_MAX;
	sv_batch_init(&pl->empty, in_schema);
	return pl;
}

void sv_pipeline_destroy(sv_pipeline_t *pl)
{
	if (!pl)
		return;
	for (size_t i = 0; i < pl->n; i++) {
		sv_batch_release(pl->stages[i]);
		free(pl->stages[i]);
		sv_op_destroy(pl->ops[i]);
	}
	free(pl->stages);
	free(pl->ops);
	sv_batch_release(&pl->empty);
	free(pl);
}

static bool same_schema(const sv_schema_t *a, const sv_schema_t *b)
{
	if (a == b)
		return true;
	if (a->nfields != b->nfields)
		return false;
	for (size_t i = 0; i < a->nfields; i++)
		if (a->fields[i].type != b->fields[i].type ||
		    strcmp(a->fields[i].name, b->fields[i].name))
			return false;
	return true;
}

void sv_pipeline_add(sv_pipeline_t *pl, sv_op_t *op)
{
	assert(same_schema(op->in_schema, sv_pipeline_out_schema(pl)));
	(void)same_schema;
	if (pl->n == pl->cap) {
		pl->cap = pl->cap ? pl->cap * 2 : 4;
		pl->ops = sv_realloc(pl->ops, pl->cap * sizeof(sv_op_t *));
		pl->stages = sv_realloc(pl->stages,
					pl->cap * sizeof(sv_batch_t *));
	}
	sv_batch_t *b = sv_malloc(sizeof(*b));
	sv_batch_init(b, op->out_schema);
	if (op->ops->process_right) {
		assert(pl->join == SIZE_MAX);
		pl->join = pl->n;
	}
	pl->ops[pl->n] = op;
	pl->stages[pl->n] = b;
	pl->n++;
}

size_t sv_pipeline_len(const sv_pipeline_t *pl)
{
	return pl->n;
}

sv_op_t *sv_pipeline_op(const sv_pipeline_t *pl, size_t i)
{
	return i < pl->n ? pl->ops[i] : NULL;
}

const sv_schema_t *sv_pipeline_out_schema(const sv_pipeline_t *pl)
{
	return pl->n ? pl->ops[pl->n - 1]->out_schema : pl->in_schema;
}

/* A stage batch that took a burst (a lookup join answering the rows that
 * waited for its table, a window firing many keys at once) gives its
 * memory back at the next reset rather than keeping it for the rest of
 * the job; one of at most this many rows (the worker's batches are 2,048)
 * keeps it, so a steady pipeline still stops allocating. */
#define STAGE_KEEP_ROWS 16384

static void reset_stages(sv_pipeline_t *pl)
{
	for (size_t i = 0; i < pl->n; i++) {
		sv_batch_t *b = pl->stages[i];
		if (b->cap <= STAGE_KEEP_ROWS) {
			sv_batch_reset(b);
			continue;
		}
		const sv_schema_t *schema = b->schema;
		sv_batch_release(b);
		sv_batch_init(b, schema);
	}
}

/* The context operator i sees: after a two-input operator, its output
 * watermark is theirs. */
static void stage_ctx(const sv_pipeline_t *pl, size_t i, sv_op_ctx_t *c)
{
	if (pl->join != SIZE_MAX && i == pl->join + 1) {
		sv_op_t *j = pl->ops[pl->join];
		c->watermark_ms = j->ops->out_watermark(j);
		c->right_watermark_ms = SV_WATERMARK_NONE;
	}
}

/* Run cur through operators from..n-1, the first of them through
 * process_right when right is set. */
static sv_error_t *run_from(sv_pipeline_t *pl, sv_op_ctx_t *ctx, size_t from,
			    bool right, sv_batch_t *cur, sv_batch_t **out)
{
	sv_op_ctx_t c = *ctx;
	for (size_t i = from; i < pl->n; i++) {
		sv_op_t *op = pl->ops[i];
		stage_ctx(pl, i, &c);
		sv_error_t *err = right && i == from
			? op->ops->process_right(op, &c, cur, pl->stages[i])
			: op->ops->process(op, &c, cur, pl->stages[i]);
		if (err) {
			*out = pl->stages[i];
			return err;
		}
		cur = pl->stages[i];
	}
	*out = cur;
	return NULL;
}

sv_error_t *sv_pipeline_push(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
			     sv_batch_t *in, sv_batch_t **out)
{
	reset_stages(pl);
	return run_from(pl, ctx, 0, false, in, out);
}

sv_op_t *sv_pipeline_join(const sv_pipeline_t *pl)
{
	return pl->join == SIZE_MAX ? NULL : pl->ops[pl->join];
}

sv_error_t *sv_pipeline_push_right(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
				   sv_batch_t *in, sv_batch_t **out)
{
	reset_stages(pl);
	sv_batch_reset(&pl->empty);
	*out = &pl->empty;
	if (pl->join == SIZE_MAX)
		return sv_error_new(SV_ERR_PLANNING,
				    "the pipeline has no join to take a "
				    "second input");
	return run_from(pl, ctx, pl->join, true, in, out);
}

/* advance (finishing false) or finish (true), flowing output downstream. */
static sv_error_t *flow(sv_pipeline_t *pl, sv_op_ctx_t *ctx, bool finishing,
			sv_batch_t **out)
{
	reset_stages(pl);
	sv_batch_reset(&pl->empty);
	*out = pl->n ? pl->stages[pl->n - 1] : &pl->empty;
	sv_op_ctx_t c = *ctx;
	for (size_t i = 0; i < pl->n; i++) {
		sv_op_t *op = pl->ops[i];
		sv_error_t *err = NULL;
		/* the join's output watermark moves with its own advance,
		 * which ran at i - 1 */
		stage_ctx(pl, i, &c);
		if (i > 0 && pl->stages[i - 1]->nrows)
			err = op->ops->process(op, &c, pl->stages[i - 1],
					       pl->stages[i]);
		if (!err && finishing && op->ops->finish)
			err = op->ops->finish(op, &c, pl->stages[i]);
		else if (!err && !finishing && op->ops->advance)
			err = op->ops->advance(op, &c, pl->stages[i]);
		if (err)
			return err;
	}
	return NULL;
}

sv_error_t *sv_pipeline_advance(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
				sv_batch_t **out)
{
	return flow(pl, ctx, false, out);
}

/* Some operator has output ready beyond its last piece. */
static bool more_ready(const sv_pipeline_t *pl)
{
	for (size_t i = 0; i < pl->n; i++) {
		sv_op_t *op = pl->ops[i];
		if (op->ops->more && op->ops->more(op))
			return true;
	}
	return false;
}

sv_error_t *sv_pipeline_advance_each(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
				     size_t rows, sv_pipeline_emit_fn emit,
				     void *opaque)
{
	sv_op_ctx_t c = *ctx;
	c.advance_rows = rows;
	for (;;) {
		sv_batch_t *out;
		sv_error_t *err = flow(pl, &c, false, &out);
		if (!err)
			err = emit(opaque, out);
		if (err || !more_ready(pl))
			return err;
	}
}

sv_error_t *sv_pipeline_finish(sv_pipeline_t *pl, sv_op_ctx_t *ctx,
			       sv_batch_t **out)
{
	return flow(pl, ctx, true, out);
}

void sv_pipeline_state_size(const sv_pipeline_t *pl, uint64_t *bytes,
			    uint64_t *keys)
{
	*bytes = 0;
	*keys = 0;
	for (size_t i = 0; i < pl->n; i++) {
		sv_op_t *op = pl->ops[i];
		if (!op->ops->state_size)
			continue;
		uint64_t b = 0, k = 0;
		op->ops->state_size(op, &b, &k);
		*bytes += b;
		*keys += k;
	}
}
