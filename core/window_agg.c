/* window_agg.c — window aggregates: parsing "fn(expr)", mergeable
 * accumulators, and the snapshot encoding helpers shared by the stateful
 * operators.
 *
 * Every aggregate keeps a small fixed accumulator (count, sum, one value
 * with its event time and arrival sequence, or a distinct set) so that
 * accumulators of disjoint inputs can be merged: sliding windows combine
 * panes and session windows combine merged sessions that way. Strings held
 * by min/max/first/last are owned copies that are reused when the new value
 * fits, so an update of an existing key does not allocate in the common
 * case. */
#include "core/window_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	sv_aggfn_t fn;
} agg_names[] = {
	{"count", SV_AGG_COUNT}, {"sum", SV_AGG_SUM},
	{"min", SV_AGG_MIN},     {"max", SV_AGG_MAX},
	{"avg", SV_AGG_AVG},     {"count_distinct", SV_AGG_COUNT_DISTINCT},
	{"first", SV_AGG_FIRST}, {"last", SV_AGG_LAST},
};

static const char *skip_ws(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

/* The parenthesis matching the '(' at open, skipping quoted text; NULL
 * when unbalanced. */
static const char *match_paren(const char *open)
{
	int depth = 0;
	char quote = 0;
	for (const char *p = open; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
			continue;
		}
		if (*p == '\'' || *p == '"' || *p == '`')
			quote = *p;
		else if (*p == '(')
			depth++;
		else if (*p == ')' && --depth == 0)
			return p;
	}
	return NULL;
}

static bool is_numeric(sv_type_t t)
{
	return t == SV_T_INT64 || t == SV_T_FLOAT64;
}

sv_error_t *sv_aggdef_parse(sv_aggdef_t *def, const char *name,
			    const char *text, const sv_schema_t *schema)
{
	memset(def, 0, sizeof(*def));
	def->col = -1;
	const char *p = skip_ws(text);
	const char *id = p;
	while (*p && (isalnum((unsigned char)*p) || *p == '_'))
		p++;
	size_t idlen = (size_t)(p - id);
	const char *open = skip_ws(p);
	if (!idlen || *open != '(') {
		return sv_error_new(SV_ERR_SUBMISSION,
				    "aggregate '%s' = '%s': expected fn(expr), "
				    "e.g. sum(amount) or count()",
				    name, text);
	}
	const char *close = match_paren(open);
	if (!close || *skip_ws(close + 1)) {
		return sv_error_new(SV_ERR_SUBMISSION,
				    "aggregate '%s' = '%s': expected a single "
				    "call fn(expr)",
				    name, text);
	}
	char fname[32];
	bool found = false;
	if (idlen < sizeof(fname)) {
		for (size_t i = 0; i < idlen; i++)
			fname[i] = (char)tolower((unsigned char)id[i]);
		fname[idlen] = '\0';
		for (size_t i = 0; i < SV_ARRAY_LEN(agg_names); i++) {
			if (!strcmp(fname, agg_names[i].name)) {
				def->fn = agg_names[i].fn;
				found = true;
			}
		}
	}
	if (!found)
		return sv_error_new(SV_ERR_COVERAGE,
				    "aggregate '%.*s' is not supported",
				    (int)idlen, id);

	/* argument text, trimmed */
	const char *a = skip_ws(open + 1);
	const char *e = close;
	while (e > a && isspace((unsigned char)e[-1]))
		e--;
	size_t alen = (size_t)(e - a);
	if (def->fn == SV_AGG_COUNT &&
	    (alen == 0 || (alen == 1 && *a == '*'))) {
		def->fn = SV_AGG_COUNT_ROWS;
		def->arg_type = SV_T_NULL;
		def->out_type = SV_T_INT64;
		def->name = sv_strdup(name);
		return NULL;
	}
	if (alen == 0)
		return sv_error_new(SV_ERR_SUBMISSION,
				    "aggregate '%s' = '%s': '%s' needs an "
				    "argument",
				    name, text, fname);
	char *arg = sv_strndup(a, alen);
	sv_error_t *err = sv_expr_parse(arg, schema, &def->expr);
	free(arg);
	if (err)
		return err;
	def->arg_type = sv_expr_type(def->expr);
	def->col = sv_expr_column(def->expr);
	if (def->arg_type == SV_T_NULL && def->fn != SV_AGG_COUNT) {
		sv_aggdef_release(def);
		return sv_error_new(SV_ERR_SUBMISSION,
				    "aggregate '%s' = '%s': the argument is "
				    "the null literal and has no type",
				    name, text);
	}
	switch (def->fn) {
	case SV_AGG_COUNT:
	case SV_AGG_COUNT_DISTINCT:
		def->out_type = SV_T_INT64;
		break;
	case SV_AGG_SUM:
	case SV_AGG_AVG:
		if (!is_numeric(def->arg_type)) {
			sv_type_t t = def->arg_type;
			sv_aggdef_release(def);
			return sv_error_new(SV_ERR_SUBMISSION,
					    "aggregate '%s' = '%s': '%s' needs "
					    "a numeric argument, not %s",
					    name, text, fname, sv_type_name(t));
		}
		def->out_type = def->fn == SV_AGG_AVG ? SV_T_FLOAT64
						      : def->arg_type;
		break;
	default:
		def->out_type = def->arg_type;
		break;
	}
	def->name = sv_strdup(name);
	return NULL;
}

void sv_aggdef_release(sv_aggdef_t *def)
{
	sv_expr_destroy(def->expr);
	free(def->name);
	memset(def, 0, sizeof(*def));
	def->col = -1;
}

void sv_agg_arg(const sv_aggdef_t *def, const sv_value_t *row,
		sv_arena_t *arena, sv_value_t *out)
{
	if (def->col >= 0)
		*out = row[def->col];
	else if (def->expr)
		sv_expr_eval(def->expr, row, arena, out);
	else
		*out = sv_null();
}

/* ---- accumulators ---- */

/* Hold x in acc->v: copied into the owned buffer, or borrowed. */
static void acc_set(sv_acc_t *acc, const sv_value_t *x, bool copy,
		    int64_t *bytes)
{
	acc->v = *x;
	if (x->type != SV_T_STRING || !copy)
		return;
	if (x->len > acc->vcap || !acc->buf) {
		uint32_t cap = x->len < 16 ? 16 : x->len;
		if (bytes)
			*bytes += (int64_t)cap - (int64_t)acc->vcap;
		free((void *)acc->buf);
		acc->buf = sv_malloc(cap);
		acc->vcap = cap;
	}
	if (x->len)
		memcpy(acc->buf, x->v.s, x->len);
	acc->v.v.s = acc->buf;
}

static void set_add(sv_acc_t *acc, const sv_value_t *x, int64_t *bytes)
{
	if (!acc->set) {
		acc->set = sv_statemap_new(1, 0);
		if (bytes)
			*bytes += (int64_t)sv_statemap_bytes(acc->set);
	}
	uint64_t before = sv_statemap_bytes(acc->set);
	bool created;
	sv_statemap_upsert(acc->set, x, sv_statemap_hash(acc->set, x),
			   &created);
	if (created && bytes)
		*bytes += (int64_t)(sv_statemap_bytes(acc->set) - before);
}

/* Does candidate (t, seq) beat the held first/last value? */
static bool better(sv_aggfn_t fn, int64_t t, uint64_t seq, const sv_acc_t *acc)
{
	if (fn == SV_AGG_FIRST)
		return t < acc->t || (t == acc->t && seq < acc->seq);
	return t > acc->t || (t == acc->t && seq > acc->seq);
}

void sv_acc_add(const sv_aggdef_t *def, sv_acc_t *acc, const sv_value_t *x,
		int64_t t, uint64_t seq, int64_t *bytes)
{
	if (def->fn == SV_AGG_COUNT_ROWS) {
		acc->n++;
		return;
	}
	if (x->type == SV_T_NULL)
		return;
	switch (def->fn) {
	case SV_AGG_SUM:
	case SV_AGG_AVG:
		/* integer sums wrap like Java longs (no UB) */
		if (x->type == SV_T_FLOAT64)
			acc->sum.f += x->v.f;
		else
			acc->sum.i = (int64_t)((uint64_t)acc->sum.i +
					       (uint64_t)x->v.i);
		break;
	case SV_AGG_MIN:
		if (!acc->n || sv_value_cmp(x, &acc->v) < 0)
			acc_set(acc, x, true, bytes);
		break;
	case SV_AGG_MAX:
		if (!acc->n || sv_value_cmp(x, &acc->v) > 0)
			acc_set(acc, x, true, bytes);
		break;
	case SV_AGG_FIRST:
	case SV_AGG_LAST:
		if (!acc->n || better(def->fn, t, seq, acc)) {
			acc_set(acc, x, true, bytes);
			acc->t = t;
			acc->seq = seq;
		}
		break;
	case SV_AGG_COUNT_DISTINCT:
		set_add(acc, x, bytes);
		break;
	default:
		break;
	}
	acc->n++;
}

void sv_acc_merge(const sv_aggdef_t *def, sv_acc_t *dst, const sv_acc_t *src,
		  bool copy, int64_t *bytes)
{
	if (!src->n)
		return;
	switch (def->fn) {
	case SV_AGG_SUM:
	case SV_AGG_AVG:
		if (def->arg_type == SV_T_FLOAT64)
			dst->sum.f += src->sum.f;
		else
			dst->sum.i = (int64_t)((uint64_t)dst->sum.i +
					       (uint64_t)src->sum.i);
		break;
	case SV_AGG_MIN:
		if (!dst->n || sv_value_cmp(&src->v, &dst->v) < 0)
			acc_set(dst, &src->v, copy, bytes);
		break;
	case SV_AGG_MAX:
		if (!dst->n || sv_value_cmp(&src->v, &dst->v) > 0)
			acc_set(dst, &src->v, copy, bytes);
		break;
	case SV_AGG_FIRST:
	case SV_AGG_LAST:
		if (!dst->n || better(def->fn, src->t, src->seq, dst)) {
			acc_set(dst, &src->v, copy, bytes);
			dst->t = src->t;
			dst->seq = src->seq;
		}
		break;
	case SV_AGG_COUNT_DISTINCT:
		if (src->set) {
			size_t it = 0;
			void *pl;
			while ((pl = sv_statemap_next(src->set, &it)))
				set_add(dst, sv_statemap_key(src->set, pl),
					bytes);
		}
		break;
	default:
		break;
	}
	dst->n += src->n;
}

void sv_acc_result(const sv_aggdef_t *def, const sv_acc_t *acc, sv_value_t *out)
{
	switch (def->fn) {
	case SV_AGG_COUNT_ROWS:
	case SV_AGG_COUNT:
		*out = sv_int(acc->n);
		return;
	case SV_AGG_COUNT_DISTINCT:
		*out = sv_int(acc->set ? (int64_t)sv_statemap_count(acc->set)
				       : 0);
		return;
	default:
		break;
	}
	if (!acc->n) {
		*out = sv_null();
		return;
	}
	switch (def->fn) {
	case SV_AGG_SUM:
		*out = def->out_type == SV_T_FLOAT64 ? sv_float(acc->sum.f)
						     : sv_int(acc->sum.i);
		return;
	case SV_AGG_AVG:
		*out = sv_float((def->arg_type == SV_T_FLOAT64
					 ? acc->sum.f
					 : (double)acc->sum.i) /
				(double)acc->n);
		return;
	default:
		*out = acc->v;
		return;
	}
}

void sv_acc_release(sv_acc_t *acc, int64_t *bytes)
{
	if (bytes) {
		*bytes -= acc->vcap;
		if (acc->set)
			*bytes -= (int64_t)sv_statemap_bytes(acc->set);
	}
	free(acc->buf);
	sv_statemap_destroy(acc->set);
	memset(acc, 0, sizeof(*acc));
}

/* ---- snapshot encoding ---- */

void sv_ser_u8(sv_buf_t *b, uint8_t x)
{
	sv_buf_append(b, &x, 1);
}

void sv_ser_u32(sv_buf_t *b, uint32_t x)
{
	unsigned char c[4];
	for (int i = 0; i < 4; i++)
		c[i] = (unsigned char)(x >> (8 * i));
	sv_buf_append(b, c, 4);
}

void sv_ser_u64(sv_buf_t *b, uint64_t x)
{
	unsigned char c[8];
	for (int i = 0; i < 8; i++)
		c[i] = (unsigned char)(x >> (8 * i));
	sv_buf_append(b, c, 8);
}

void sv_ser_value(sv_buf_t *b, const sv_value_t *v)
{
	sv_ser_u8(b, v->type);
	switch (v->type) {
	case SV_T_BOOL:
		sv_ser_u8(b, v->v.b);
		break;
	case SV_T_INT64:
	case SV_T_TIMESTAMP:
		sv_ser_i64(b, v->v.i);
		break;
	case SV_T_FLOAT64: {
		uint64_t bits;
		memcpy(&bits, &v->v.f, 8);
		sv_ser_u64(b, bits);
		break;
	}
	case SV_T_STRING:
		sv_ser_u32(b, v->len);
		sv_buf_append(b, v->v.s, v->len);
		break;
	default:
		break;
	}
}

void sv_ser_acc(sv_buf_t *b, const sv_acc_t *acc)
{
	sv_ser_i64(b, acc->n);
	sv_ser_u64(b, (uint64_t)acc->sum.i); /* the union's bits */
	sv_ser_value(b, &acc->v);
	sv_ser_i64(b, acc->t);
	sv_ser_u64(b, acc->seq);
	uint32_t n = acc->set ? (uint32_t)sv_statemap_count(acc->set) : 0;
	sv_ser_u32(b, n);
	if (n) {
		size_t it = 0;
		void *pl;
		while ((pl = sv_statemap_next(acc->set, &it)))
			sv_ser_value(b, sv_statemap_key(acc->set, pl));
	}
}

static const char *deser_take(sv_deser_t *d, size_t n)
{
	if (d->bad || d->len - d->off < n) {
		d->bad = true;
		return NULL;
	}
	const char *p = d->p + d->off;
	d->off += n;
	return p;
}

uint8_t sv_deser_u8(sv_deser_t *d)
{
	const char *p = deser_take(d, 1);
	return p ? (uint8_t)*p : 0;
}

uint32_t sv_deser_u32(sv_deser_t *d)
{
	const unsigned char *p = (const unsigned char *)deser_take(d, 4);
	uint32_t x = 0;
	for (int i = 0; p && i < 4; i++)
		x |= (uint32_t)p[i] << (8 * i);
	return x;
}

uint64_t sv_deser_u64(sv_deser_t *d)
{
	const unsigned char *p = (const unsigned char *)deser_take(d, 8);
	uint64_t x = 0;
	for (int i = 0; p && i < 8; i++)
		x |= (uint64_t)p[i] << (8 * i);
	return x;
}

void sv_deser_value(sv_deser_t *d, sv_value_t *v)
{
	*v = sv_null();
	uint8_t t = sv_deser_u8(d);
	switch (t) {
	case SV_T_NULL:
		break;
	case SV_T_BOOL:
		*v = sv_bool(sv_deser_u8(d) != 0);
		break;
	case SV_T_INT64:
		*v = sv_int(sv_deser_i64(d));
		break;
	case SV_T_TIMESTAMP:
		*v = sv_ts(sv_deser_i64(d));
		break;
	case SV_T_FLOAT64: {
		uint64_t bits = sv_deser_u64(d);
		double f;
		memcpy(&f, &bits, 8);
		*v = sv_float(f);
		break;
	}
	case SV_T_STRING: {
		uint32_t len = sv_deser_u32(d);
		const char *s = deser_take(d, len);
		if (s)
			*v = sv_str(s, len);
		break;
	}
	default:
		d->bad = true;
		break;
	}
	if (d->bad)
		*v = sv_null();
}

void sv_deser_acc(sv_deser_t *d, sv_acc_t *acc, int64_t *bytes)
{
	memset(acc, 0, sizeof(*acc));
	acc->n = sv_deser_i64(d);
	acc->sum.i = (int64_t)sv_deser_u64(d);
	sv_value_t v;
	sv_deser_value(d, &v);
	acc_set(acc, &v, true, bytes);
	acc->t = sv_deser_i64(d);
	acc->seq = sv_deser_u64(d);
	uint32_t n = sv_deser_u32(d);
	for (uint32_t i = 0; i < n && !d->bad; i++) {
		sv_deser_value(d, &v);
		set_add(acc, &v, bytes);
	}
}
