/* op_basic.c — the stateless operators filter and select, and
 * sv_op_destroy.
 *
 * Both are thin loops over a batch around compiled expressions (expr.c).
 * filter copies the 16-byte cells of each kept row and its meta; strings
 * keep pointing into the input batch, which operator.h guarantees stays
 * valid for the pass. Strings computed by the predicate go to a scratch
 * arena of the operator, reset at every batch. select evaluates one
 * expression per output column; bare column references are copied without
 * going through the evaluator (the common "rename/project" case), computed
 * strings go into the output batch's arena. Output rows carry the input
 * row's meta. */
#include "core/expr.h"
#include "core/operator.h"

#include <stdlib.h>
#include <string.h>

void sv_op_destroy(sv_op_t *op)
{
	if (op)
		op->ops->destroy(op);
}

/* ---- filter ---- */

typedef struct filter_op {
	sv_op_t base;
	sv_expr_t *expr;
	sv_arena_t scratch; /* strings computed by the predicate */
} filter_op_t;

static sv_error_t *filter_process(sv_op_t *op, sv_op_ctx_t *ctx, sv_batch_t *in,
				  sv_batch_t *out)
{
	filter_op_t *f = (filter_op_t *)op;
	size_t ncols = in->ncols;
	sv_arena_reset(&f->scratch);
	for (size_t r = 0; r < in->nrows; r++) {
		const sv_value_t *row = sv_batch_row(in, r);
		if (!sv_expr_test(f->expr, row, &f->scratch))
			continue;
		sv_rowmeta_t *m;
		sv_value_t *o = sv_batch_add_row(out, &m);
		memcpy(o, row, ncols * sizeof(sv_value_t));
		*m = in->meta[r];
	}
	return NULL;
}

static void filter_destroy(sv_op_t *op)
{
	filter_op_t *f = (filter_op_t *)op;
	sv_expr_destroy(f->expr);
	sv_arena_release(&f->scratch);
	sv_schema_destroy(op->out_schema);
	free(f);
}

static const sv_op_ops_t filter_ops = {
	.name = "filter",
	.process = filter_process,
	.destroy = filter_destroy,
};

sv_error_t *sv_op_filter_new(const sv_schema_t *in, const char *expr,
			     sv_op_t **out)
{
	*out = NULL;
	sv_expr_t *e;
	sv_error_t *err = sv_expr_parse(expr, in, &e);
	if (err)
		return err;
	/* the literal null (no type) is accepted: it is never true, as in
	 * SQL's WHERE NULL */
	sv_type_t t = sv_expr_type(e);
	if (t != SV_T_BOOL && t != SV_T_NULL) {
		/* worded like the parser's errors: the whole expression is at
		 * fault, so position 1 */
		err = sv_error_new(SV_ERR_SUBMISSION,
				   "expression '%s' at position 1: a filter "
				   "must be boolean, got %s",
				   expr, sv_type_name(t));
		err->position = 1;
		sv_expr_destroy(e);
		return err;
	}
	filter_op_t *f = sv_calloc(1, sizeof(*f));
	f->base.ops = &filter_ops;
	f->base.in_schema = in;
	f->base.out_schema = sv_schema_copy(in);
	f->expr = e;
	sv_arena_init(&f->scratch);
	*out = &f->base;
	return NULL;
}

/* ---- select ---- */

typedef struct select_op {
	sv_op_t base;
	size_t n;
	sv_expr_t **exprs; /* one per output column */
	int *cols; /* input column when exprs[i] is a bare column */
} select_op_t;

static sv_error_t *select_process(sv_op_t *op, sv_op_ctx_t *ctx, sv_batch_t *in,
				  sv_batch_t *out)
{
	select_op_t *s = (select_op_t *)op;
	for (size_t r = 0; r < in->nrows; r++) {
		const sv_value_t *row = sv_batch_row(in, r);
		sv_rowmeta_t *m;
		sv_value_t *o = sv_batch_add_row(out, &m);
		*m = in->meta[r];
		for (size_t c = 0; c < s->n; c++) {
			if (s->cols[c] >= 0)
				o[c] = row[s->cols[c]];
			else
				sv_expr_eval(s->exprs[c], row, &out->arena,
					     &o[c]);
		}
	}
	return NULL;
}

static void select_destroy(sv_op_t *op)
{
	select_op_t *s = (select_op_t *)op;
	for (size_t i = 0; i < s->n; i++)
		sv_expr_destroy(s->exprs[i]);
	free(s->exprs);
	free(s->cols);
	sv_schema_destroy(op->out_schema);
	free(s);
}

static const sv_op_ops_t select_ops = {
	.name = "select",
	.process = select_process,
	.destroy = select_destroy,
};

sv_error_t *sv_op_select_new(const sv_schema_t *in, size_t n,
			     const char *const *names, const char *const *exprs,
			     sv_op_t **out)
{
	*out = NULL;
	if (n == 0)
		return sv_error_new(SV_ERR_SUBMISSION,
				    "select needs at least one column");
	select_op_t *s = sv_calloc(1, sizeof(*s));
	s->base.ops = &select_ops;
	s->base.in_schema = in;
	s->base.out_schema = sv_schema_new();
	s->exprs = sv_calloc(n, sizeof(sv_expr_t *));
	s->cols = sv_calloc(n, sizeof(int));
	sv_error_t *err = NULL;
	for (size_t i = 0; i < n && !err; i++) {
		s->n = i + 1;
		if (!names[i] || !names[i][0]) {
			err = sv_error_new(
				SV_ERR_SUBMISSION,
				"select column %zu has an empty name", i + 1);
			break;
		}
		if (sv_schema_find(s->base.out_schema, names[i]) >= 0) {
			err = sv_error_new(SV_ERR_SUBMISSION,
					   "duplicate output column '%s' in "
					   "select",
					   names[i]);
			break;
		}
		if ((err = sv_expr_parse(exprs[i], in, &s->exprs[i])))
			break;
		sv_type_t t = sv_expr_type(s->exprs[i]);
		if (t == SV_T_NULL) {
			err = sv_error_new(SV_ERR_SUBMISSION,
					   "select column '%s' has no type: "
					   "write cast(null as <type>)",
					   names[i]);
			break;
		}
		sv_schema_add(s->base.out_schema, names[i], t,
			      sv_expr_nullable(s->exprs[i]));
		s->cols[i] = sv_expr_column(s->exprs[i]);
	}
	if (err) {
		select_destroy(&s->base);
		return err;
	}
	*out = &s->base;
	return NULL;
}
