/* join.c — the interval join and the bounded hash join, and what every
 * join shares (join_int.h).
 *
 * Both are symmetric hash joins: each input keeps a hash table from join
 * key to the list of its rows held. A row arriving on one side probes the
 * other side's list for its key, emits one output row per match, and is
 * then stored, so every matching pair is emitted exactly once, by the
 * second of the two to arrive. The hash join (bounded inputs) stores
 * everything and, for a left join, emits the never-matched left rows at
 * finish.
 *
 * The interval join frees state by the other input's watermark. A left row
 * at time l can only match right rows with r <= l + upper; once the right
 * watermark reaches l + upper no such right row is still to come, so the
 * row is freed (and, unmatched in a left join, emitted then). A right row
 * at r is freed once the left watermark reaches r - lower. Rows are
 * expired through one min-heap per side. A row at or behind its own
 * input's watermark is late: dropped and counted, because a row it should
 * match may already be freed. See docs/joins.md for the proof that no
 * match is lost, the output time and watermark, and the state bound.
 *
 * Incremental checkpoints (docs/checkpoints.md): each input's state map
 * tracks the keys whose rows changed (a row stored or freed, a left row
 * matched); keys of the last checkpoint whose rows all went are recorded
 * as tombstones. A delta writes those keys whole. */
#include "core/join_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYM_SNAPSHOT_KIND 'J'
#define SYM_DELTA_KIND 'j'

const char *sv_jointype_name(sv_jointype_t t)
{
	switch (t) {
	case SV_JOIN_INTERVAL:
		return "interval";
	case SV_JOIN_LOOKUP:
		return "lookup";
	default:
		return "hash";
	}
}

const char *sv_joinkind_name(sv_joinkind_t k)
{
	return k == SV_JOIN_LEFT ? "left" : "inner";
}

/* ---- shared ---- */

sv_jrow_t *sv_jrow_new(const sv_value_t *row, size_t ncols)
{
	size_t strbytes = 0;
	for (size_t c = 0; c < ncols; c++)
		if (row[c].type == SV_T_STRING)
			strbytes += row[c].len;
	size_t size = sizeof(sv_jrow_t) + ncols * sizeof(sv_value_t) + strbytes;
	sv_jrow_t *r = sv_malloc(size);
	memset(r, 0, sizeof(*r));
	r->bytes = (uint32_t)size;
	char *p = (char *)(r->vals + ncols);
	for (size_t c = 0; c < ncols; c++) {
		r->vals[c] = row[c];
		if (row[c].type == SV_T_STRING) {
			if (row[c].len)
				memcpy(p, row[c].v.s, row[c].len);
			r->vals[c].v.s = p;
			p += row[c].len;
		}
	}
	return r;
}

static sv_error_t *field_err(sv_error_t *err, const char *field)
{
	return sv_error_set_field(err, field);
}

static sv_error_t *build_schema(sv_joinbase_t *jb, const sv_schema_t *left,
				const sv_schema_t *right,
				const sv_join_spec_t *spec)
{
	sv_schema_t *out = sv_schema_copy(left);
	jb->base.out_schema = out;
	bool nullable_right = spec->kind == SV_JOIN_LEFT;
	if (spec->ntake) {
		jb->take_src = sv_calloc(spec->ntake, sizeof(int));
		for (size_t i = 0; i < spec->ntake; i++) {
			char f[160];
			snprintf(f, sizeof(f), "take.%s", spec->take_names[i]);
			int src = sv_schema_find(right, spec->take_cols[i]);
			if (src < 0)
				return field_err(
					sv_error_new(SV_ERR_SUBMISSION,
						     "join take '%s': '%s' is "
						     "not a column of the "
						     "right input",
						     spec->take_names[i],
						     spec->take_cols[i]),
					f);
			const sv_field_t *rf = &right->fields[src];
			int clash = sv_schema_find(out, spec->take_names[i]);
			if (clash >= 0)
				return field_err(
					sv_error_new(
						SV_ERR_SUBMISSION,
						"join output column '%s' "
						"(right column '%s') clashes "
						"with %s column '%s'",
						spec->take_names[i],
						spec->take_cols[i],
						(size_t)clash < left->nfields
							? "left"
							: "take",
						out->fields[clash].name),
					f);
			sv_schema_add(out, spec->take_names[i], rf->type,
				      rf->nullable || nullable_right);
			jb->take_src[jb->ntake++] = src;
		}
		return NULL;
	}
	jb->take_src = sv_calloc(right->nfields + 1, sizeof(int));
	for (size_t c = 0; c < right->nfields; c++) {
		const sv_field_t *rf = &right->fields[c];
		bool paired = false;
		for (size_t k = 0; k < spec->nkeys; k++)
			if ((size_t)jb->rkeys[k] == c &&
			    !strcmp(left->fields[jb->lkeys[k]].name, rf->name))
				paired = true;
		if (paired)
			continue;
		if (sv_schema_find(out, rf->name) >= 0)
			return field_err(sv_error_new(SV_ERR_SUBMISSION,
						      "join right column '%s' "
						      "clashes with left "
						      "column '%s'; name the "
						      "right columns to keep "
						      "with 'take'",
						      rf->name, rf->name),
					 "take");
		sv_schema_add(out, rf->name, rf->type,
			      rf->nullable || nullable_right);
		jb->take_src[jb->ntake++] = (int)c;
	}
	return NULL;
}

sv_error_t *sv_joinbase_init(sv_joinbase_t *jb, const sv_schema_t *left,
			     const sv_schema_t *right,
			     const sv_join_spec_t *spec)
{
	jb->base.in_schema = left;
	jb->base.right_schema = right;
	jb->type = spec->type;
	jb->kind = spec->kind;
	jb->nleft = left->nfields;
	jb->nright = right->nfields;
	jb->max_rows = spec->max_state_rows;
	jb->max_bytes = spec->max_state_bytes;
	sv_error_t *err = NULL;
	if (spec->nkeys == 0) {
		err = field_err(sv_error_new(SV_ERR_SUBMISSION,
					     "a join needs at least one key "
					     "column on each side"),
				"on");
		goto fail;
	}
	jb->nkeys = spec->nkeys;
	jb->lkeys = sv_calloc(spec->nkeys, sizeof(int));
	jb->rkeys = sv_calloc(spec->nkeys, sizeof(int));
	jb->keybuf = sv_calloc(spec->nkeys, sizeof(sv_value_t));
	for (size_t k = 0; k < spec->nkeys; k++) {
		jb->lkeys[k] = sv_schema_find(left, spec->left_keys[k]);
		jb->rkeys[k] = sv_schema_find(right, spec->right_keys[k]);
		if (jb->lkeys[k] < 0) {
			err = field_err(sv_error_new(SV_ERR_SUBMISSION,
						     "join key '%s' is not a "
						     "column of the left input",
						     spec->left_keys[k]),
					"on.left");
			goto fail;
		}
		if (jb->rkeys[k] < 0) {
			err = field_err(sv_error_new(SV_ERR_SUBMISSION,
						     "join key '%s' is not a "
						     "column of the right "
						     "input",
						     spec->right_keys[k]),
					"on.right");
			goto fail;
		}
		sv_type_t lt = left->fields[jb->lkeys[k]].type;
		sv_type_t rt = right->fields[jb->rkeys[k]].type;
		if (lt != rt) {
			err = field_err(
				sv_error_new(
					SV_ERR_SUBMISSION,
					"join key '%s' is %s on the left "
					"but '%s' is %s on the right",
					spec->left_keys[k], sv_type_name(lt),
					spec->right_keys[k], sv_type_name(rt)),
				"on");
			goto fail;
		}
	}
	if ((err = build_schema(jb, left, right, spec)))
		goto fail;
	return NULL;
fail:
	sv_joinbase_release(jb);
	return err;
}

void sv_joinbase_release(sv_joinbase_t *jb)
{
	free(jb->lkeys);
	free(jb->rkeys);
	free(jb->keybuf);
	free(jb->take_src);
	sv_schema_destroy(jb->base.out_schema);
	jb->lkeys = jb->rkeys = jb->take_src = NULL;
	jb->keybuf = NULL;
	jb->base.out_schema = NULL;
}

bool sv_join_key(sv_joinbase_t *jb, const sv_value_t *row, const int *cols)
{
	for (size_t k = 0; k < jb->nkeys; k++) {
		jb->keybuf[k] = row[cols[k]];
		if (sv_is_null(&jb->keybuf[k]))
			return false;
	}
	return true;
}

/* The output row: lrow's cells, then take column i from rrow[src[i]]
 * (src NULL: rrow[i]); none when rrow is NULL. */
static void emit_cells(const sv_joinbase_t *jb, sv_batch_t *out,
		       const sv_value_t *lrow, const sv_value_t *rrow,
		       const int *src, int64_t event_ms)
{
	sv_rowmeta_t *m;
	sv_value_t *o = sv_batch_add_row(out, &m);
	m->event_ms = event_ms;
	m->partition = -1;
	m->source_ts_ms = -1;
	size_t c = 0;
	for (; c < jb->nleft; c++)
		o[c] = lrow[c];
	if (rrow)
		for (size_t i = 0; i < jb->ntake; i++)
			o[c + i] = rrow[src ? (size_t)src[i] : i];
	for (size_t i = 0; i < out->ncols; i++)
		if (o[i].type == SV_T_STRING)
			o[i].v.s = sv_batch_strdup(out, o[i].v.s, o[i].len);
}

void sv_join_emit(const sv_joinbase_t *jb, sv_batch_t *out,
		  const sv_value_t *lrow, const sv_value_t *rrow,
		  int64_t event_ms)
{
	emit_cells(jb, out, lrow, rrow, jb->take_src, event_ms);
}

void sv_join_emit_taken(const sv_joinbase_t *jb, sv_batch_t *out,
			const sv_value_t *lrow, const sv_value_t *taken,
			int64_t event_ms)
{
	emit_cells(jb, out, lrow, taken, NULL, event_ms);
}

sv_error_t *sv_join_check_cap(const sv_joinbase_t *jb, uint64_t lrows,
			      uint64_t rrows, uint64_t bytes)
{
	sv_error_t *err = NULL;
	if (jb->max_rows && lrows + rrows > jb->max_rows)
		err = sv_error_new(SV_ERR_RUNTIME,
				   "%s join state cap exceeded: %llu rows "
				   "held (left %llu, right %llu), "
				   "max_state_rows is %llu",
				   sv_jointype_name(jb->type),
				   (unsigned long long)(lrows + rrows),
				   (unsigned long long)lrows,
				   (unsigned long long)rrows,
				   (unsigned long long)jb->max_rows);
	else if (jb->max_bytes && bytes > jb->max_bytes)
		err = sv_error_new(
			SV_ERR_RUNTIME,
			"%s join state cap exceeded: %llu bytes "
			"held (left %llu rows, right %llu rows), "
			"max_state_bytes is %llu",
			sv_jointype_name(jb->type), (unsigned long long)bytes,
			(unsigned long long)lrows, (unsigned long long)rrows,
			(unsigned long long)jb->max_bytes);
	if (err) {
		/* the same input would fill the same state again */
		err->retriable = false;
		sv_error_set_field(err, "max_state");
	}
	return err;
}

void sv_join_ser_header(const sv_joinbase_t *jb, sv_buf_t *out, char letter)
{
	sv_ser_u8(out, SV_JOIN_SNAPSHOT_VERSION);
	sv_ser_u8(out, (uint8_t)letter);
	sv_ser_u8(out, (uint8_t)jb->type);
	sv_ser_u8(out, (uint8_t)jb->kind);
	sv_ser_u32(out, (uint32_t)jb->nkeys);
	sv_ser_u32(out, (uint32_t)jb->nleft);
	sv_ser_u32(out, (uint32_t)jb->nright);
}

sv_error_t *sv_join_deser_header(const sv_joinbase_t *jb, sv_deser_t *d,
				 char letter)
{
	uint8_t ver = sv_deser_u8(d), l = sv_deser_u8(d);
	uint8_t type = sv_deser_u8(d), kind = sv_deser_u8(d);
	uint32_t nkeys = sv_deser_u32(d), nl = sv_deser_u32(d),
		 nr = sv_deser_u32(d);
	if (d->bad || ver != SV_JOIN_SNAPSHOT_VERSION || l != (uint8_t)letter ||
	    type != jb->type || kind != jb->kind || nkeys != jb->nkeys ||
	    nl != jb->nleft || nr != jb->nright)
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "join state snapshot does not match the "
				    "operator (version %u, type %u, kind %u, "
				    "%u keys, %u+%u columns)",
				    ver, type, kind, nkeys, nl, nr);
	return NULL;
}

sv_error_t *sv_join_corrupt(const sv_joinbase_t *jb, const sv_deser_t *d)
{
	return sv_error_new(SV_ERR_CHECKPOINT,
			    "%s join state snapshot is truncated or corrupt "
			    "(%zu of %zu bytes read)",
			    sv_jointype_name(jb->type), d->off, d->len);
}

/* ---- the symmetric join (interval, hash) ---- */

typedef struct jkey {
	sv_jrow_t **rows;
	uint32_t n, cap;
	uint64_t born; /* the checkpoint epoch it was created in */
} jkey_t;

typedef struct jitem {
	int64_t expire;
	sv_jrow_t *row;
} jitem_t;

typedef struct jside {
	sv_statemap_t *map; /* key -> jkey_t; its dirty list: keys changed */
	jitem_t *heap; /* interval: by expire */
	size_t nheap, hcap;
	uint64_t rows;
	uint64_t row_bytes; /* rows and the keys' row lists */
	int64_t wm; /* this input's watermark of the last advance */
	/* keys of the last checkpoint removed since (their values) */
	sv_jrow_t **removed;
	size_t nremoved, rmcap;
} jside_t;

typedef struct symjoin {
	sv_joinbase_t jb;
	int64_t lower, upper;
	jside_t side[2]; /* 0 left, 1 right */
	uint64_t seq;
	/* incremental checkpoints: a confirmed base to write deltas against,
	 * and the epoch checkpointed() bumps (a key born before the current
	 * one is in the last checkpoint) */
	bool incr_base;
	uint64_t epoch;
	/* a delta was restored: the expiry heaps are rebuilt at the next
	 * advance (once for a whole chain of deltas) */
	bool heaps_stale;
} symjoin_t;

#define LEFT 0
#define RIGHT 1

static void heap_push(jside_t *s, int64_t expire, sv_jrow_t *r)
{
	if (s->nheap == s->hcap) {
		s->hcap = s->hcap ? s->hcap * 2 : 64;
		s->heap = sv_realloc(s->heap, s->hcap * sizeof(jitem_t));
	}
	size_t i = s->nheap++;
	while (i > 0 && s->heap[(i - 1) / 2].expire > expire) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = (jitem_t){expire, r};
}

static jitem_t heap_pop(jside_t *s)
{
	jitem_t top = s->heap[0];
	jitem_t last = s->heap[--s->nheap];
	size_t i = 0, n = s->nheap;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && s->heap[c + 1].expire < s->heap[c].expire)
			c++;
		if (s->heap[c].expire >= last.expire)
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (n)
		s->heap[i] = last;
	return top;
}

/* Store a copy of row (key in keybuf) on side s. */
static sv_jrow_t *store(symjoin_t *op, int s, const sv_value_t *row,
			size_t ncols, int64_t t, int64_t expire)
{
	jside_t *sd = &op->side[s];
	uint64_t h = sv_statemap_hash(sd->map, op->jb.keybuf);
	bool created;
	jkey_t *k = sv_statemap_upsert(sd->map, op->jb.keybuf, h, &created);
	if (created)
		k->born = op->epoch;
	else
		sv_statemap_touch(sd->map, k);
	if (k->n == k->cap) {
		uint32_t cap = k->cap ? k->cap * 2 : 2;
		sd->row_bytes += (cap - k->cap) * sizeof(sv_jrow_t *);
		k->rows = sv_realloc(k->rows, cap * sizeof(sv_jrow_t *));
		k->cap = cap;
	}
	sv_jrow_t *r = sv_jrow_new(row, ncols);
	r->t = t;
	r->expire = expire;
	r->key = k;
	r->seq = op->seq++;
	r->pos = k->n;
	k->rows[k->n++] = r;
	sd->rows++;
	sd->row_bytes += r->bytes;
	if (op->jb.type == SV_JOIN_INTERVAL && !op->heaps_stale)
		heap_push(sd, expire, r);
	return r;
}

/* Remove key k (its rows already freed) from side s; a key the last
 * checkpoint holds is recorded for the next delta. */
static void key_remove(symjoin_t *op, int s, jkey_t *k)
{
	jside_t *sd = &op->side[s];
	if (sv_statemap_tracking(sd->map) && k->born < op->epoch) {
		if (sd->nremoved == sd->rmcap) {
			sd->rmcap = sd->rmcap ? sd->rmcap * 2 : 16;
			sd->removed = sv_realloc(
				sd->removed, sd->rmcap * sizeof(*sd->removed));
		}
		sd->removed[sd->nremoved++] = sv_jrow_new(
			sv_statemap_key(sd->map, k), op->jb.nkeys);
	}
	sd->row_bytes -= k->cap * sizeof(sv_jrow_t *);
	free(k->rows);
	sv_statemap_remove(sd->map, k);
}

/* Unlink and free a stored row; its key goes when it was the last. */
static void drop_row(symjoin_t *op, int s, sv_jrow_t *r)
{
	jside_t *sd = &op->side[s];
	jkey_t *k = r->key;
	k->rows[r->pos] = k->rows[--k->n];
	k->rows[r->pos]->pos = r->pos;
	sd->rows--;
	sd->row_bytes -= r->bytes;
	if (k->n == 0)
		key_remove(op, s, k);
	else
		sv_statemap_touch(sd->map, k);
	free(r);
}

static uint64_t sym_bytes(const symjoin_t *op, int s)
{
	const jside_t *sd = &op->side[s];
	return sv_statemap_bytes(sd->map) + sd->row_bytes +
		sd->hcap * sizeof(jitem_t);
}

static sv_error_t *sym_cap(const symjoin_t *op)
{
	if (!op->jb.max_rows && !op->jb.max_bytes)
		return NULL;
	return sv_join_check_cap(&op->jb, op->side[LEFT].rows,
				 op->side[RIGHT].rows,
				 sym_bytes(op, LEFT) + sym_bytes(op, RIGHT));
}

static sv_error_t *sym_process_side(symjoin_t *op, int s, sv_op_ctx_t *ctx,
				    sv_batch_t *in, sv_batch_t *out)
{
	sv_joinbase_t *jb = &op->jb;
	bool interval = jb->type == SV_JOIN_INTERVAL;
	bool left_join = jb->kind == SV_JOIN_LEFT;
	const int *cols = s == LEFT ? jb->lkeys : jb->rkeys;
	jside_t *own = &op->side[s], *other = &op->side[1 - s];
	for (size_t r = 0; r < in->nrows; r++) {
		const sv_value_t *row = sv_batch_row(in, r);
		int64_t t = in->meta[r].event_ms;
		if (interval &&
		    (t <= -SV_TIME_LIMIT || t >= SV_TIME_LIMIT ||
		     (own->wm != SV_WATERMARK_NONE && t <= own->wm))) {
			if (ctx->stats)
				ctx->stats->records_late++;
			continue;
		}
		if (!sv_join_key(jb, row, cols)) {
			/* a null key matches nothing */
			if (s == LEFT && left_join)
				sv_join_emit(jb, out, row, NULL, t);
			continue;
		}
		bool matched = false;
		uint64_t h = sv_statemap_hash(other->map, jb->keybuf);
		jkey_t *k = sv_statemap_find(other->map, jb->keybuf, h);
		for (uint32_t i = 0; k && i < k->n; i++) {
			sv_jrow_t *o = k->rows[i];
			int64_t tl = s == LEFT ? t : o->t;
			int64_t tr = s == LEFT ? o->t : t;
			if (interval &&
			    (tr - tl < op->lower || tr - tl > op->upper))
				continue;
			int64_t et = tl > tr ? tl : tr;
			if (s == LEFT) {
				sv_join_emit(jb, out, row, o->vals, et);
			} else {
				sv_join_emit(jb, out, o->vals, row, et);
				if (!o->matched) {
					o->matched = 1;
					sv_statemap_touch(other->map, k);
				}
			}
			matched = true;
		}
		int64_t expire = 0;
		if (interval) {
			/* freed when the other side's watermark reaches it */
			expire = s == LEFT ? t + op->upper : t - op->lower;
			if (other->wm != SV_WATERMARK_NONE &&
			    expire <= other->wm) {
				if (s == LEFT && left_join && !matched)
					sv_join_emit(jb, out, row, NULL, t);
				continue;
			}
		}
		sv_jrow_t *st = store(op, s, row, in->ncols, t, expire);
		st->matched = matched;
	}
	return sym_cap(op);
}

static sv_error_t *sym_process(sv_op_t *base, sv_op_ctx_t *ctx, sv_batch_t *in,
			       sv_batch_t *out)
{
	return sym_process_side((symjoin_t *)base, LEFT, ctx, in, out);
}

static sv_error_t *sym_process_right(sv_op_t *base, sv_op_ctx_t *ctx,
				     sv_batch_t *in, sv_batch_t *out)
{
	return sym_process_side((symjoin_t *)base, RIGHT, ctx, in, out);
}

/* Free side s's rows with expire <= wm; unmatched left rows of a left
 * join are emitted as they go. */
static void expire_side(symjoin_t *op, int s, int64_t wm, sv_batch_t *out)
{
	jside_t *sd = &op->side[s];
	if (wm == SV_WATERMARK_NONE)
		return;
	while (sd->nheap && sd->heap[0].expire <= wm) {
		sv_jrow_t *r = heap_pop(sd).row;
		if (s == LEFT && op->jb.kind == SV_JOIN_LEFT && !r->matched)
			sv_join_emit(&op->jb, out, r->vals, NULL, r->t);
		drop_row(op, s, r);
	}
}

static void move_wm(int64_t *wm, int64_t to)
{
	if (to != SV_WATERMARK_NONE && (*wm == SV_WATERMARK_NONE || to > *wm))
		*wm = to;
}

/* The expiry heaps again from the rows held (a restored delta freed rows
 * that they pointed at). */
static void heaps_rebuild(symjoin_t *op)
{
	op->heaps_stale = false;
	if (op->jb.type != SV_JOIN_INTERVAL)
		return;
	for (int s = 0; s < 2; s++) {
		jside_t *sd = &op->side[s];
		sd->nheap = 0;
		size_t it = 0;
		jkey_t *k;
		while ((k = sv_statemap_next(sd->map, &it)))
			for (uint32_t i = 0; i < k->n; i++)
				heap_push(sd, k->rows[i]->expire, k->rows[i]);
	}
}

static sv_error_t *sym_advance(sv_op_t *base, sv_op_ctx_t *ctx, sv_batch_t *out)
{
	symjoin_t *op = (symjoin_t *)base;
	if (op->jb.type != SV_JOIN_INTERVAL)
		return NULL;
	if (op->heaps_stale)
		heaps_rebuild(op);
	move_wm(&op->side[LEFT].wm, ctx->watermark_ms);
	move_wm(&op->side[RIGHT].wm, ctx->right_watermark_ms);
	expire_side(op, LEFT, op->side[RIGHT].wm, out);
	expire_side(op, RIGHT, op->side[LEFT].wm, out);
	return NULL;
}

static void removed_clear(jside_t *sd)
{
	for (size_t i = 0; i < sd->nremoved; i++)
		free(sd->removed[i]);
	sd->nremoved = 0;
}

static void sym_clear(symjoin_t *op)
{
	for (int s = 0; s < 2; s++) {
		jside_t *sd = &op->side[s];
		size_t it = 0;
		jkey_t *k;
		while ((k = sv_statemap_next(sd->map, &it))) {
			for (uint32_t i = 0; i < k->n; i++)
				free(k->rows[i]);
			free(k->rows);
		}
		sv_statemap_clear(sd->map);
		sv_statemap_track(sd->map, false);
		removed_clear(sd);
		sd->nheap = 0;
		sd->rows = 0;
		sd->row_bytes = 0;
		sd->wm = SV_WATERMARK_NONE;
	}
	/* the removals are not recorded: the next checkpoint is full */
	op->incr_base = false;
	op->heaps_stale = false;
}

static sv_error_t *sym_finish(sv_op_t *base, sv_op_ctx_t *ctx, sv_batch_t *out)
{
	SV_UNUSED(ctx);
	symjoin_t *op = (symjoin_t *)base;
	if (op->jb.kind == SV_JOIN_LEFT) {
		size_t it = 0;
		jkey_t *k;
		while ((k = sv_statemap_next(op->side[LEFT].map, &it)))
			for (uint32_t i = 0; i < k->n; i++)
				if (!k->rows[i]->matched)
					sv_join_emit(&op->jb, out,
						     k->rows[i]->vals, NULL,
						     k->rows[i]->t);
	}
	sym_clear(op);
	/* like a window after MAX_WATERMARK: every later row is late */
	op->side[LEFT].wm = op->side[RIGHT].wm = INT64_MAX;
	return NULL;
}

static int64_t sym_out_watermark(sv_op_t *base)
{
	symjoin_t *op = (symjoin_t *)base;
	int64_t wl = op->side[LEFT].wm, wr = op->side[RIGHT].wm;
	if (wl == SV_WATERMARK_NONE || wr == SV_WATERMARK_NONE)
		return SV_WATERMARK_NONE;
	/* an unmatched left row l leaves when wr reaches l + upper, with
	 * event time l: hold the output back by upper */
	if (op->jb.kind == SV_JOIN_LEFT && op->upper > 0 && wr != INT64_MAX)
		wr = wr > INT64_MIN + op->upper ? wr - op->upper
						: INT64_MIN + 1;
	return wl < wr ? wl : wr;
}

static void sym_state_sides(sv_op_t *base, sv_op_side_state_t sides[2])
{
	symjoin_t *op = (symjoin_t *)base;
	for (int s = 0; s < 2; s++) {
		sides[s].bytes = sym_bytes(op, s);
		sides[s].keys = sv_statemap_count(op->side[s].map);
		sides[s].rows = op->side[s].rows;
	}
}

static void sym_state_size(sv_op_t *base, uint64_t *bytes, uint64_t *keys)
{
	sv_op_side_state_t sides[2];
	sym_state_sides(base, sides);
	if (bytes)
		*bytes = sides[0].bytes + sides[1].bytes;
	if (keys)
		*keys = sides[0].keys + sides[1].keys;
}

/* What snapshots and deltas open with: the join header (kind), i64
 * lower, i64 upper, i64 left and i64 right watermark. */
static void ser_head(const symjoin_t *op, sv_buf_t *out, char kind)
{
	sv_join_ser_header(&op->jb, out, kind);
	sv_ser_i64(out, op->lower);
	sv_ser_i64(out, op->upper);
	sv_ser_i64(out, op->side[LEFT].wm);
	sv_ser_i64(out, op->side[RIGHT].wm);
}

static sv_error_t *deser_head(symjoin_t *op, sv_deser_t *d, char kind,
			      int64_t wm[2])
{
	sv_error_t *err = sv_join_deser_header(&op->jb, d, kind);
	if (err)
		return err;
	(void)sv_deser_i64(d); /* changed bounds apply from now on */
	(void)sv_deser_i64(d);
	wm[LEFT] = sv_deser_i64(d);
	wm[RIGHT] = sv_deser_i64(d);
	return NULL;
}

/* A stored row as snapshots and deltas hold it: i64 time, u8 matched,
 * the row's values. */
static void ser_row(const symjoin_t *op, int s, sv_buf_t *out,
		    const sv_jrow_t *r)
{
	size_t ncols = s == LEFT ? op->jb.nleft : op->jb.nright;
	sv_ser_i64(out, r->t);
	sv_ser_u8(out, r->matched);
	for (size_t c = 0; c < ncols; c++)
		sv_ser_value(out, &r->vals[c]);
}

/* Read a row written by ser_row into row (scratch) and store it on side
 * s; false when it is corrupt. */
static bool deser_row(symjoin_t *op, int s, sv_deser_t *d, sv_value_t *row)
{
	size_t ncols = s == LEFT ? op->jb.nleft : op->jb.nright;
	const int *cols = s == LEFT ? op->jb.lkeys : op->jb.rkeys;
	int64_t t = sv_deser_i64(d);
	uint8_t matched = sv_deser_u8(d);
	for (size_t c = 0; c < ncols; c++)
		sv_deser_value(d, &row[c]);
	if (d->bad || !sv_join_key(&op->jb, row, cols))
		return false;
	int64_t expire = s == LEFT ? t + op->upper : t - op->lower;
	store(op, s, row, ncols, t, expire)->matched = matched;
	return true;
}

/* Snapshot: the join header ('J'), i64 lower, i64 upper, i64 left
 * watermark, i64 right watermark, then for each side u64 n and n rows
 * (ser_row). */
static sv_error_t *sym_snapshot(sv_op_t *base, sv_buf_t *out)
{
	symjoin_t *op = (symjoin_t *)base;
	ser_head(op, out, SYM_SNAPSHOT_KIND);
	for (int s = 0; s < 2; s++) {
		sv_ser_u64(out, op->side[s].rows);
		size_t it = 0;
		jkey_t *k;
		while ((k = sv_statemap_next(op->side[s].map, &it)))
			for (uint32_t i = 0; i < k->n; i++)
				ser_row(op, s, out, k->rows[i]);
	}
	return NULL;
}

/* After a snapshot's or a delta's rows: a corrupt one leaves the join
 * empty (a checkpoint error), a whole one sets the watermarks. */
static sv_error_t *restore_end(symjoin_t *op, const sv_deser_t *d,
			       const int64_t wm[2])
{
	if (d->bad || d->off != d->len) {
		sym_clear(op);
		return sv_join_corrupt(&op->jb, d);
	}
	op->side[LEFT].wm = wm[LEFT];
	op->side[RIGHT].wm = wm[RIGHT];
	return NULL;
}

static sv_error_t *sym_restore(sv_op_t *base, const char *data, size_t len)
{
	symjoin_t *op = (symjoin_t *)base;
	sv_deser_t d = {.p = data, .len = len};
	sym_clear(op);
	int64_t wm[2];
	sv_error_t *err = deser_head(op, &d, SYM_SNAPSHOT_KIND, wm);
	if (err)
		return err;
	sv_value_t *row = sv_calloc(op->jb.nleft + op->jb.nright + 1,
				    sizeof(sv_value_t));
	for (int s = 0; s < 2 && !d.bad; s++) {
		uint64_t n = sv_deser_u64(&d);
		for (uint64_t i = 0; i < n && !d.bad; i++)
			if (!deser_row(op, s, &d, row))
				d.bad = true;
	}
	free(row);
	if ((err = restore_end(op, &d, wm)))
		return err;
	return NULL;
}

/* Delta: the join header ('j'), i64 lower, i64 upper, i64 left and i64
 * right watermark, then for each side u64 nremoved, each a key's values
 * (a key of the last checkpoint removed since: its rows all expired),
 * u64 nchanged, each a key changed since (a row stored or freed, a left
 * row matched): its values, u32 n and its n rows (ser_row). Rows are
 * freed by the watermarks, so a key's rows change only while it is in
 * the interval: a delta holds the rows of about one checkpoint interval,
 * not the whole state. */
static sv_error_t *sym_snapshot_delta(sv_op_t *base, sv_buf_t *out,
				      bool *written)
{
	symjoin_t *op = (symjoin_t *)base;
	*written = false;
	if (!op->incr_base)
		return NULL;
	ser_head(op, out, SYM_DELTA_KIND);
	for (int s = 0; s < 2; s++) {
		jside_t *sd = &op->side[s];
		sv_ser_u64(out, sd->nremoved);
		for (size_t i = 0; i < sd->nremoved; i++)
			for (size_t c = 0; c < op->jb.nkeys; c++)
				sv_ser_value(out, &sd->removed[i]->vals[c]);
		size_t n = sv_statemap_dirty_count(sd->map);
		sv_ser_u64(out, n);
		for (size_t i = 0; i < n; i++) {
			const jkey_t *k = sv_statemap_dirty_at(sd->map, i);
			const sv_value_t *key = sv_statemap_key(sd->map, k);
			for (size_t c = 0; c < op->jb.nkeys; c++)
				sv_ser_value(out, &key[c]);
			sv_ser_u32(out, k->n);
			for (uint32_t r = 0; r < k->n; r++)
				ser_row(op, s, out, k->rows[r]);
		}
	}
	*written = true;
	return NULL;
}

/* Free every row of the key in keybuf on side s, and the key (restore:
 * the heap is rebuilt afterwards). */
static void key_forget(symjoin_t *op, int s)
{
	jside_t *sd = &op->side[s];
	uint64_t h = sv_statemap_hash(sd->map, op->jb.keybuf);
	jkey_t *k = sv_statemap_find(sd->map, op->jb.keybuf, h);
	if (!k)
		return;
	for (uint32_t i = 0; i < k->n; i++) {
		sd->rows--;
		sd->row_bytes -= k->rows[i]->bytes;
		free(k->rows[i]);
	}
	k->n = 0;
	key_remove(op, s, k);
}

static sv_error_t *sym_restore_delta(sv_op_t *base, const char *data,
				     size_t len)
{
	symjoin_t *op = (symjoin_t *)base;
	sv_deser_t d = {.p = data, .len = len};
	int64_t wm[2];
	sv_error_t *err = deser_head(op, &d, SYM_DELTA_KIND, wm);
	if (err)
		return err;
	for (int s = 0; s < 2; s++)
		sv_statemap_track(op->side[s].map, false);
	/* the rows freed below leave the heaps pointing at them */
	op->heaps_stale = true;
	sv_value_t *row = sv_calloc(op->jb.nleft + op->jb.nright + 1,
				    sizeof(sv_value_t));
	sv_value_t *key = sv_calloc(op->jb.nkeys, sizeof(sv_value_t));
	for (int s = 0; s < 2 && !d.bad; s++) {
		uint64_t nrm = sv_deser_u64(&d);
		for (uint64_t i = 0; i < nrm && !d.bad; i++) {
			for (size_t c = 0; c < op->jb.nkeys; c++)
				sv_deser_value(&d, &op->jb.keybuf[c]);
			if (!d.bad)
				key_forget(op, s);
		}
		uint64_t nk = sv_deser_u64(&d);
		for (uint64_t i = 0; i < nk && !d.bad; i++) {
			for (size_t c = 0; c < op->jb.nkeys; c++)
				sv_deser_value(&d, &key[c]);
			uint32_t n = sv_deser_u32(&d);
			if (d.bad || n == 0) {
				d.bad = true; /* a changed key holds rows */
				break;
			}
			memcpy(op->jb.keybuf, key,
			       op->jb.nkeys * sizeof(sv_value_t));
			key_forget(op, s);
			for (uint32_t r = 0; r < n && !d.bad; r++)
				if (!deser_row(op, s, &d, row))
					d.bad = true;
		}
	}
	free(key);
	free(row);
	if ((err = restore_end(op, &d, wm)))
		return err;
	op->incr_base = false;
	return NULL;
}

/* The last snapshot or delta is durable: changes count from here. */
static void sym_checkpointed(sv_op_t *base)
{
	symjoin_t *op = (symjoin_t *)base;
	op->epoch++;
	for (int s = 0; s < 2; s++) {
		sv_statemap_dirty_clear(op->side[s].map);
		sv_statemap_track(op->side[s].map, true);
		removed_clear(&op->side[s]);
	}
	op->incr_base = true;
}

static void sym_destroy(sv_op_t *base)
{
	symjoin_t *op = (symjoin_t *)base;
	if (!op)
		return;
	sym_clear(op);
	for (int s = 0; s < 2; s++) {
		sv_statemap_destroy(op->side[s].map);
		free(op->side[s].heap);
		free(op->side[s].removed);
	}
	sv_joinbase_release(&op->jb);
	free(op);
}

static const sv_op_ops_t sym_ops = {
	.name = "join",
	.process = sym_process,
	.advance = sym_advance,
	.finish = sym_finish,
	.state_size = sym_state_size,
	.snapshot = sym_snapshot,
	.restore = sym_restore,
	.snapshot_delta = sym_snapshot_delta,
	.restore_delta = sym_restore_delta,
	.checkpointed = sym_checkpointed,
	.destroy = sym_destroy,
	.process_right = sym_process_right,
	.out_watermark = sym_out_watermark,
	.state_sides = sym_state_sides,
};

sv_error_t *sv_op_join_new(const sv_schema_t *left, const sv_schema_t *right,
			   const sv_join_spec_t *spec, sv_op_t **out)
{
	*out = NULL;
	if (spec->type == SV_JOIN_LOOKUP)
		return sv_op_lookup_join_new(left, right, spec, out);
	if (spec->type == SV_JOIN_INTERVAL) {
		if (spec->lower_ms <= -SV_TIME_LIMIT ||
		    spec->lower_ms >= SV_TIME_LIMIT ||
		    spec->upper_ms <= -SV_TIME_LIMIT ||
		    spec->upper_ms >= SV_TIME_LIMIT)
			return sv_error_set_field(
				sv_error_new(SV_ERR_SUBMISSION,
					     "interval join bounds must be "
					     "within +-2^61 ms"),
				"lower_ms");
		if (spec->lower_ms > spec->upper_ms)
			return sv_error_set_field(
				sv_error_new(SV_ERR_SUBMISSION,
					     "interval join 'lower_ms' (%lld) "
					     "must not exceed 'upper_ms' "
					     "(%lld)",
					     (long long)spec->lower_ms,
					     (long long)spec->upper_ms),
				"lower_ms");
	}
	symjoin_t *op = sv_calloc(1, sizeof(*op));
	sv_error_t *err = sv_joinbase_init(&op->jb, left, right, spec);
	if (err) {
		free(op);
		return err;
	}
	op->jb.base.ops = &sym_ops;
	op->lower = spec->lower_ms;
	op->upper = spec->upper_ms;
	for (int s = 0; s < 2; s++) {
		op->side[s].map = sv_statemap_new(op->jb.nkeys, sizeof(jkey_t));
		op->side[s].wm = SV_WATERMARK_NONE;
	}
	*out = &op->jb.base;
	return NULL;
}
