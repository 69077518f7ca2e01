/* order.c — the order operator: a bounded job's ORDER BY ... LIMIT.
 *
 * It keeps every input row (copied, strings included) with its sort key
 * values computed once, and emits nothing until the end of input; finish
 * sorts them (stable: ties keep arrival order) by the keys, each ascending
 * or descending with nulls first or last as asked (SQL's NULLS FIRST/LAST;
 * NaN sorts above every number, as in DataFusion), skips `offset` rows and
 * emits at most `limit` (-1: all). The buffered rows are its state: counted
 * in state_size and written into checkpoints like a window's, so a restart
 * loses nothing. Only a bounded job has an end of input, which the spec
 * checks. */
#define _GNU_SOURCE
#include "core/operator.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "core/window_int.h"

typedef struct order_op {
	sv_op_t base;
	size_t nkeys;
	sv_expr_t **keys;
	bool *desc, *nulls_first;
	int64_t limit, offset;
	sv_schema_t *store_schema; /* input columns, then the key values */
	sv_batch_t rows;
	sv_arena_t scratch;
} order_op_t;

static sv_error_t *order_process(sv_op_t *base, sv_op_ctx_t *ctx,
				 sv_batch_t *in, sv_batch_t *out)
{
	order_op_t *op = (order_op_t *)base;
	SV_UNUSED(ctx);
	SV_UNUSED(out);
	size_t nc = in->ncols;
	for (size_t r = 0; r < in->nrows; r++) {
		sv_arena_reset(&op->scratch);
		const sv_value_t *row = sv_batch_row(in, r);
		sv_rowmeta_t *m;
		sv_value_t *o = sv_batch_add_row(&op->rows, &m);
		*m = in->meta[r];
		for (size_t k = 0; k < nc + op->nkeys; k++) {
			sv_value_t v;
			if (k < nc)
				v = row[k];
			else
				sv_expr_eval(op->keys[k - nc], row,
					     &op->scratch, &v);
			if (v.type == SV_T_STRING)
				v.v.s = sv_batch_strdup(&op->rows, v.v.s,
							v.len);
			o = sv_batch_row(&op->rows, op->rows.nrows - 1);
			o[k] = v;
		}
	}
	return NULL;
}

static int key_cmp(const order_op_t *op, const sv_value_t *a,
		   const sv_value_t *b)
{
	size_t nc = op->base.in_schema->nfields;
	for (size_t k = 0; k < op->nkeys; k++) {
		const sv_value_t *x = &a[nc + k], *y = &b[nc + k];
		bool xn = sv_is_null(x), yn = sv_is_null(y);
		if (xn || yn) {
			if (xn && yn)
				continue;
			return (xn ? -1 : 1) * (op->nulls_first[k] ? 1 : -1);
		}
		int c;
		bool xnan = x->type == SV_T_FLOAT64 && isnan(x->v.f);
		bool ynan = y->type == SV_T_FLOAT64 && isnan(y->v.f);
		if (xnan || ynan)
			c = xnan && ynan ? 0 : xnan ? 1 : -1;
		else
			c = sv_value_cmp(x, y);
		if (c)
			return op->desc[k] ? -c : c;
	}
	return 0;
}

static int idx_cmp(const void *pa, const void *pb, void *arg)
{
	const order_op_t *op = arg;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	int c = key_cmp(op, sv_batch_row(&op->rows, a),
			sv_batch_row(&op->rows, b));
	return c ? c : (a < b ? -1 : a > b);
}

static sv_error_t *order_finish(sv_op_t *base, sv_op_ctx_t *ctx,
				sv_batch_t *out)
{
	order_op_t *op = (order_op_t *)base;
	SV_UNUSED(ctx);
	size_t n = op->rows.nrows;
	size_t *idx = sv_calloc(n + 1, sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(size_t), idx_cmp, op);
	size_t nc = base->in_schema->nfields;
	size_t from = op->offset > 0 ? (size_t)op->offset : 0;
	size_t to = n;
	if (op->limit >= 0 && from + (size_t)op->limit < to)
		to = from + (size_t)op->limit;
	for (size_t i = from; i < to; i++) {
		const sv_value_t *row = sv_batch_row(&op->rows, idx[i]);
		sv_rowmeta_t *m;
		sv_value_t *o = sv_batch_add_row(out, &m);
		memcpy(o, row, nc * sizeof(sv_value_t));
		*m = op->rows.meta[idx[i]];
	}
	free(idx);
	/* out's rows point at our strings: keep them until destroy */
	return NULL;
}

static void order_state_size(sv_op_t *base, uint64_t *bytes, uint64_t *keys)
{
	order_op_t *op = (order_op_t *)base;
	*bytes = op->rows.nrows * op->rows.ncols * sizeof(sv_value_t);
	*keys = op->rows.nrows;
}

static sv_error_t *order_snapshot(sv_op_t *base, sv_buf_t *out)
{
	order_op_t *op = (order_op_t *)base;
	sv_ser_u64(out, op->rows.nrows);
	for (size_t r = 0; r < op->rows.nrows; r++) {
		const sv_value_t *row = sv_batch_row(&op->rows, r);
		const sv_rowmeta_t *m = &op->rows.meta[r];
		sv_ser_u32(out, (uint32_t)m->partition);
		sv_ser_i64(out, m->offset);
		sv_ser_i64(out, m->source_ts_ms);
		sv_ser_i64(out, m->event_ms);
		for (size_t k = 0; k < op->rows.ncols; k++)
			sv_ser_value(out, &row[k]);
	}
	return NULL;
}

static sv_error_t *order_restore(sv_op_t *base, const char *data, size_t len)
{
	order_op_t *op = (order_op_t *)base;
	sv_batch_reset(&op->rows);
	sv_deser_t d = {.p = data, .len = len};
	uint64_t n = sv_deser_u64(&d);
	for (uint64_t r = 0; r < n && !d.bad; r++) {
		sv_rowmeta_t *m;
		sv_batch_add_row(&op->rows, &m);
		m->partition = (int32_t)sv_deser_u32(&d);
		m->offset = sv_deser_i64(&d);
		m->source_ts_ms = sv_deser_i64(&d);
		m->event_ms = sv_deser_i64(&d);
		for (size_t k = 0; k < op->rows.ncols; k++) {
			sv_value_t v;
			sv_deser_value(&d, &v);
			if (v.type == SV_T_STRING)
				v.v.s = sv_batch_strdup(&op->rows, v.v.s,
							v.len);
			sv_batch_row(&op->rows, op->rows.nrows - 1)[k] = v;
		}
	}
	if (d.bad)
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "order state in the checkpoint is "
				    "truncated");
	return NULL;
}

static void order_destroy(sv_op_t *base)
{
	order_op_t *op = (order_op_t *)base;
	for (size_t k = 0; k < op->nkeys; k++)
		sv_expr_destroy(op->keys[k]);
	free(op->keys);
	free(op->desc);
	free(op->nulls_first);
	sv_batch_release(&op->rows);
	sv_arena_release(&op->scratch);
	sv_schema_destroy(op->store_schema);
	sv_schema_destroy(base->out_schema);
	free(op);
}

static const sv_op_ops_t order_ops = {
	.name = "order",
	.process = order_process,
	/* advance: nothing is due before the end of input; the pipeline
	 * treats an operator with finish but no advance as stateful */
	.finish = order_finish,
	.state_size = order_state_size,
	.snapshot = order_snapshot,
	.restore = order_restore,
	.destroy = order_destroy,
};

sv_error_t *sv_op_order_new(const sv_schema_t *in, size_t nkeys,
			    const char *const *exprs, const bool *desc,
			    const bool *nulls_first, int64_t limit,
			    int64_t offset, sv_op_t **out)
{
	*out = NULL;
	order_op_t *op = sv_calloc(1, sizeof(*op));
	op->base.ops = &order_ops;
	op->base.in_schema = in;
	op->base.out_schema = sv_schema_copy(in);
	op->nkeys = nkeys;
	op->keys = sv_calloc(nkeys + 1, sizeof(sv_expr_t *));
	op->desc = sv_calloc(nkeys + 1, sizeof(bool));
	op->nulls_first = sv_calloc(nkeys + 1, sizeof(bool));
	op->limit = limit;
	op->offset = offset;
	op->store_schema = sv_schema_copy(in);
	sv_arena_init(&op->scratch);
	for (size_t k = 0; k < nkeys; k++) {
		sv_error_t *err = sv_expr_parse(exprs[k], in, &op->keys[k]);
		if (err) {
			char f[32];
			snprintf(f, sizeof(f), "keys[%zu].expr", k);
			sv_error_set_field(err, f);
			order_destroy(&op->base);
			return err;
		}
		op->desc[k] = desc[k];
		op->nulls_first[k] = nulls_first[k];
		char name[32];
		snprintf(name, sizeof(name), "\x01key%zu", k);
		sv_type_t t = sv_expr_type(op->keys[k]);
		sv_schema_add(op->store_schema, name,
			      t == SV_T_NULL ? SV_T_INT64 : t, true);
	}
	sv_batch_init(&op->rows, op->store_schema);
	*out = &op->base;
	return NULL;
}
