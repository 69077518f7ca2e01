/* test_join_random.c — randomized comparison of the join operators with
 * brute-force references written here, and the interval join's state
 * bound over a million records.
 *
 * Each case (fixed seeds) draws two inputs: keys of one or two columns
 * (string and int64, each including null; the string including ""),
 * values (including null) and event times, each input delivered out of
 * order with its own bounded disorder plus a few records delayed far
 * beyond it (late), cut into random batches and interleaved at random.
 * After some batches the pipeline is advanced to each input's watermark,
 * max_event_time - disorder - 1. The lookup join's table input has
 * tombstones and updates the same keys again and again. The references
 * know only the rules of docs/joins.md and recompute everything from the
 * list of records that arrived:
 *   - interval: a row is late when its time is at or behind its own
 *     input's watermark (of the last advance) on arrival; the output is
 *     every pair of non-late rows with equal non-null keys and
 *     lower <= r - l <= upper, at time max(l, r), plus (left join) every
 *     non-late left row without a pair, at time l;
 *   - lookup, event time: a non-late left row is answered as soon as the
 *     table's watermark (or, with retention R, the left watermark - R) is
 *     at or past its time, else at the advance that gets there (or at the
 *     end); the answer is the table row with the latest effective time
 *     <= l among those arrived by then (a later arrival wins a tie), none
 *     when that is a tombstone; a table row's effective time is its time,
 *     or the table's watermark + 1 when it is at or behind it;
 *   - lookup, processing time: the latest arrived table row of the key;
 *   - hash: every pair of rows with equal non-null keys, plus (left join)
 *     every left row without one.
 * Compared: the multiset of output rows with their event times, the late
 * counter, and the rows and keys held per input after every batch, which
 * the references derive from the rules for when state may be freed (so
 * state that outlives its use is caught). Every output row must also be
 * after the join's output watermark at the time it is emitted. Every case
 * runs twice, once with snapshot -> new pipeline -> restore at a random
 * batch boundary. Every case runs a third time with incremental
 * checkpoints (snapshot_delta, each confirmed with checkpointed) after
 * every batch, a full snapshot every fourth, and at the random boundary
 * the new pipeline restores the newest full snapshot plus the deltas
 * since, in order, and must go on exactly as the reference (a lookup
 * delta carries the table's changed and removed keys: updates,
 * tombstones and pruning; an interval or hash delta each input's changed
 * keys whole and the keys whose rows all expired). The pipeline is [join,
 * filter] so the second input's rows flow on through
 * sv_pipeline_push_right. The second and third runs advance with
 * sv_pipeline_advance_each in pieces of 1 to 4 rows (a lookup join's
 * answered rows then come out over several pieces), checked after every
 * piece against the output watermark the piece before left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/join_int.h"
#include "tests/unit/random_case.h"

#define MAXN 160 /* records per input */
#define MAXR (2 * MAXN)

#define NONE SV_WATERMARK_NONE

typedef struct jrec {
	int side; /* 0 left, 1 right */
	int key; /* -1 null */
	int g; /* the second key column: -1 null, 0, 1 */
	int64_t v;
	bool vnull;
	bool del; /* right of a lookup join: a tombstone */
	int64_t t;
} jrec_t;

typedef struct step {
	int side;
	size_t from, to; /* records r[from, to), all of side */
	bool adv;
	int64_t wl, wr; /* the watermarks passed to that advance */
} step_t;

typedef struct tcase {
	sv_jointype_t type;
	sv_joinkind_t kind;
	bool proc, take_all;
	bool two; /* the key is (k, g), else k */
	int64_t lower, upper, retention;
	int64_t disorder[2];
	size_t n;
	jrec_t r[MAXR]; /* in arrival order */
	size_t nsteps;
	step_t st[MAXR];
	size_t snap_at;
} tcase_t;

/* ---- output lines ---- */

static void fmt_row(char *buf, size_t cap, const sv_value_t *row, size_t n,
		    int64_t t)
{
	char *p = fmt_cells(buf, cap, row, n);
	snprintf(p, (size_t)(buf + cap - p), "@%lld", (long long)t);
}

/* ---- random cases ---- */

/* One input's records in arrival order. */
static size_t make_side(uint64_t *s, const tcase_t *c, int side, jrec_t *out)
{
	size_t n = (size_t)rnd(s, 0, MAXN);
	int64_t t = rnd(s, -60, 60);
	int64_t step = rnd(s, 1, 6);
	jrec_t tmp[MAXN];
	order_t ord[MAXN];
	for (size_t i = 0; i < n; i++) {
		t += rnd(s, 0, step);
		tmp[i] = (jrec_t){.side = side, .t = t};
		tmp[i].key = (int)rnd(s, -1, NKEYS - 1);
		if (rnd(s, 0, 12) == 0)
			tmp[i].key = -1;
		tmp[i].g = rnd(s, 0, 9) == 0 ? -1 : (int)rnd(s, 0, 1);
		tmp[i].vnull = rnd(s, 0, 9) == 0;
		tmp[i].v = rnd(s, -20, 20);
		tmp[i].del = side == 1 && c->type == SV_JOIN_LOOKUP &&
			rnd(s, 0, 5) == 0;
		ord[i].at = t + rnd(s, 0, c->disorder[side]);
		if (rnd(s, 0, 24) == 0)
			ord[i].at += rnd(s, 40, 200);
		ord[i].i = i;
	}
	qsort(ord, n, sizeof(order_t), order_cmp);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[ord[i].i];
	return n;
}

static void make_case(tcase_t *c, sv_jointype_t type, uint64_t seed)
{
	uint64_t s = seed;
	memset(c, 0, sizeof(*c));
	c->type = type;
	c->kind = rnd(&s, 0, 1) ? SV_JOIN_LEFT : SV_JOIN_INNER;
	c->two = rnd(&s, 0, 2) == 0;
	/* without take, the right g would clash unless it is a key */
	c->take_all = c->two && rnd(&s, 0, 1);
	c->lower = rnd(&s, -25, 10);
	c->upper = c->lower + rnd(&s, 0, 30);
	c->proc = type == SV_JOIN_LOOKUP && rnd(&s, 0, 3) == 0;
	c->retention = rnd(&s, 0, 2) ? 0 : rnd(&s, 1, 40);
	c->disorder[0] = rnd(&s, 0, 25);
	c->disorder[1] = rnd(&s, 0, 25);
	jrec_t side[2][MAXN];
	size_t n[2], at[2] = {0, 0};
	n[0] = make_side(&s, c, 0, side[0]);
	n[1] = make_side(&s, c, 1, side[1]);
	/* interleave batches of the two inputs; track their watermarks */
	int64_t maxt[2] = {INT64_MIN, INT64_MIN};
	while (at[0] < n[0] || at[1] < n[1]) {
		int sd = at[0] == n[0]  ? 1
			: at[1] == n[1] ? 0
					: (int)rnd(&s, 0, 1);
		size_t len = (size_t)rnd(&s, 1, 12);
		if (len > n[sd] - at[sd])
			len = n[sd] - at[sd];
		step_t *st = &c->st[c->nsteps++];
		st->side = sd;
		st->from = c->n;
		for (size_t j = 0; j < len; j++) {
			jrec_t *r = &side[sd][at[sd]++];
			c->r[c->n++] = *r;
			if (r->t > maxt[sd])
				maxt[sd] = r->t;
		}
		st->to = c->n;
		st->adv = rnd(&s, 0, 9) < 6;
		st->wl = maxt[0] == INT64_MIN ? NONE
					      : maxt[0] - c->disorder[0] - 1;
		st->wr = maxt[1] == INT64_MIN ? NONE
					      : maxt[1] - c->disorder[1] - 1;
	}
	c->snap_at = c->nsteps ? (size_t)rnd(&s, 0, (int64_t)c->nsteps - 1) : 0;
}

/* ---- the operator under test ---- */

typedef struct run {
	sv_schema_t *ls, *rs;
	sv_pipeline_t *pl;
	sv_batch_t b[2];
	sv_opstats_t st;
	sv_op_ctx_t ctx;
	lines_t lines;
	int64_t outwm; /* the join's output watermark so far */
	uint64_t bad_time; /* rows at or behind it */
	sv_op_side_state_t after[MAXR][2];
	size_t pieces; /* advance's output pieces (0: sv_pipeline_advance) */
	uint64_t npieces; /* pieces emitted */
} run_t;

static void schemas(sv_schema_t **ls, sv_schema_t **rs)
{
	*ls = sv_schema_new();
	sv_schema_add(*ls, "k", SV_T_STRING, true);
	sv_schema_add(*ls, "lv", SV_T_INT64, true);
	sv_schema_add(*ls, "ls", SV_T_STRING, true);
	sv_schema_add(*ls, "g", SV_T_INT64, true);
	*rs = sv_schema_new();
	sv_schema_add(*rs, "rv", SV_T_INT64, true);
	sv_schema_add(*rs, "k", SV_T_STRING, true);
	sv_schema_add(*rs, "rs", SV_T_STRING, true);
	sv_schema_add(*rs, "g", SV_T_INT64, true);
}

static sv_pipeline_t *new_pipeline(const tcase_t *c, const sv_schema_t *ls,
				   const sv_schema_t *rs)
{
	static const char *const keys[] = {"k", "g"};
	static const char *const names[] = {"rv", "rs"};
	sv_join_spec_t spec = {
		.type = c->type,
		.kind = c->kind,
		.nkeys = c->two ? 2 : 1,
		.left_keys = keys,
		.right_keys = keys,
		.ntake = c->take_all ? 0 : 2,
		.take_names = names,
		.take_cols = names,
		.lower_ms = c->lower,
		.upper_ms = c->upper,
		.processing_time = c->proc,
		.retention_ms = c->retention,
	};
	sv_op_t *op = NULL;
	sv_error_t *err = sv_op_join_new(ls, rs, &spec, &op);
	if (err)
		fail_msg("join: %s", err->message);
	sv_pipeline_t *pl = sv_pipeline_new(ls);
	sv_pipeline_add(pl, op);
	sv_op_t *f = NULL;
	if ((err = sv_op_filter_new(op->out_schema, "true", &f)))
		fail_msg("filter: %s", err->message);
	sv_pipeline_add(pl, f);
	return pl;
}

static void add_row(sv_batch_t *b, const jrec_t *r)
{
	sv_rowmeta_t *m;
	sv_value_t *row = sv_batch_add_row(b, &m);
	m->event_ms = r->t;
	m->flags = r->del ? SV_ROW_DELETE : 0;
	int kc = r->side == 0 ? 0 : 1, vc = r->side == 0 ? 1 : 0;
	if (r->key >= 0)
		row[kc] = sv_str(KEYS[r->key], (uint32_t)strlen(KEYS[r->key]));
	if (r->g >= 0)
		row[3] = sv_int(r->g);
	if (!r->vnull) {
		char tmp[16];
		int n = snprintf(tmp, sizeof(tmp), "%c%lld",
				 r->side ? 'r' : 's', (long long)r->v);
		row[vc] = sv_int(r->v);
		row[2] = sv_str(sv_batch_strdup(b, tmp, (size_t)n),
				(uint32_t)n);
	}
}

static void take(run_t *R, sv_batch_t *out)
{
	char buf[256];
	for (size_t r = 0; r < out->nrows; r++) {
		fmt_row(buf, sizeof(buf), sv_batch_row(out, r), out->ncols,
			out->meta[r].event_ms);
		lines_add(&R->lines, buf);
		if (R->outwm != NONE && out->meta[r].event_ms <= R->outwm)
			R->bad_time++;
	}
}

static void note_outwm(run_t *R)
{
	sv_op_t *j = sv_pipeline_join(R->pl);
	int64_t w = j->ops->out_watermark(j);
	if (w != NONE && (R->outwm == NONE || w > R->outwm))
		R->outwm = w;
}

static sv_error_t *take_piece(void *opaque, sv_batch_t *out)
{
	run_t *R = opaque;
	take(R, out);
	note_outwm(R);
	R->npieces++;
	return NULL;
}

static void sides_of(run_t *R, sv_op_side_state_t s[2])
{
	sv_op_t *j = sv_pipeline_join(R->pl);
	j->ops->state_sides(j, s);
}

/* Incremental checkpoints of the lookup join (pass 2): the newest full
 * snapshot and the deltas since. */
typedef struct chain {
	sv_buf_t full;
	sv_buf_t deltas[MAXR];
	size_t nd;
	bool have;
} chain_t;

static uint64_t g_delta_restores; /* restores that applied a delta */
static uint64_t g_split_advances; /* advances answered in pieces */

static void chain_release(chain_t *ch)
{
	sv_buf_release(&ch->full);
	for (size_t i = 0; i < ch->nd; i++)
		sv_buf_release(&ch->deltas[i]);
	ch->nd = 0;
	ch->have = false;
}

/* A checkpoint after batch i: a delta when the chain has a base and i is
 * not a multiple of 4 (and the operator writes one), else full. */
static void chain_take(chain_t *ch, sv_op_t *j, size_t i)
{
	bool written = false;
	if (ch->have && i % 4 && ch->nd < MAXR) {
		sv_buf_init(&ch->deltas[ch->nd]);
		assert_null(j->ops->snapshot_delta(j, &ch->deltas[ch->nd],
						   &written));
		if (written)
			ch->nd++;
		else
			sv_buf_release(&ch->deltas[ch->nd]);
	}
	if (!written) {
		chain_release(ch);
		sv_buf_init(&ch->full);
		assert_null(j->ops->snapshot(j, &ch->full));
		ch->have = true;
	}
	j->ops->checkpointed(j);
}

static void chain_restore(const chain_t *ch, sv_op_t *j)
{
	assert_null(j->ops->restore(j, ch->full.data, ch->full.len));
	for (size_t i = 0; i < ch->nd; i++)
		assert_null(j->ops->restore_delta(j, ch->deltas[i].data,
						  ch->deltas[i].len));
	if (ch->nd)
		g_delta_restores++;
	/* no confirmed base since the restore: the next is full */
	sv_buf_t none;
	sv_buf_init(&none);
	bool written = true;
	assert_null(j->ops->snapshot_delta(j, &none, &written));
	assert_false(written);
	sv_buf_release(&none);
}

static void run_case(const tcase_t *c, int pass, run_t *R)
{
	bool restore = pass > 0;
	chain_t *ch = pass == 2 ? calloc(1, sizeof(*ch)) : NULL;
	memset(R, 0, sizeof(*R));
	schemas(&R->ls, &R->rs);
	R->pl = new_pipeline(c, R->ls, R->rs);
	sv_batch_init(&R->b[0], R->ls);
	sv_batch_init(&R->b[1], R->rs);
	R->ctx.watermark_ms = NONE;
	R->ctx.right_watermark_ms = NONE;
	R->ctx.stats = &R->st;
	R->outwm = NONE;
	R->pieces = pass ? 1 + c->n % 4 : 0;
	sv_batch_t *out;
	for (size_t i = 0; i < c->nsteps; i++) {
		const step_t *st = &c->st[i];
		sv_batch_t *b = &R->b[st->side];
		sv_batch_reset(b);
		for (size_t j = st->from; j < st->to; j++)
			add_row(b, &c->r[j]);
		sv_error_t *err = st->side == 0
			? sv_pipeline_push(R->pl, &R->ctx, b, &out)
			: sv_pipeline_push_right(R->pl, &R->ctx, b, &out);
		assert_null(err);
		take(R, out);
		if (st->adv) {
			R->ctx.watermark_ms = st->wl;
			R->ctx.right_watermark_ms = st->wr;
			if (R->pieces) {
				uint64_t before = R->npieces;
				assert_null(sv_pipeline_advance_each(
					R->pl, &R->ctx, R->pieces, take_piece,
					R));
				if (R->npieces - before > 1)
					g_split_advances++;
			} else {
				assert_null(sv_pipeline_advance(R->pl, &R->ctx,
								&out));
				take(R, out);
				note_outwm(R);
			}
		}
		sides_of(R, R->after[i]);
		if (ch)
			chain_take(ch, sv_pipeline_join(R->pl), i);
		if (restore && i == c->snap_at) {
			sv_buf_t snap;
			sv_buf_init(&snap);
			sv_op_t *j = sv_pipeline_join(R->pl);
			int64_t w = j->ops->out_watermark(j);
			if (!ch)
				assert_null(j->ops->snapshot(j, &snap));
			sv_pipeline_destroy(R->pl);
			R->pl = new_pipeline(c, R->ls, R->rs);
			j = sv_pipeline_join(R->pl);
			if (ch)
				chain_restore(ch, j);
			else
				assert_null(j->ops->restore(j, snap.data,
							    snap.len));
			sv_op_side_state_t s[2];
			sides_of(R, s);
			for (int k = 0; k < 2; k++) {
				assert_int_equal(s[k].rows,
						 R->after[i][k].rows);
				assert_int_equal(s[k].keys,
						 R->after[i][k].keys);
			}
			assert_int_equal(j->ops->out_watermark(j), w);
			sv_buf_release(&snap);
		}
	}
	assert_null(sv_pipeline_finish(R->pl, &R->ctx, &out));
	take(R, out);
	sv_op_side_state_t s[2];
	sides_of(R, s);
	assert_int_equal(s[0].rows + s[1].rows, 0);
	assert_int_equal(s[0].keys + s[1].keys, 0);
	if (ch) {
		chain_release(ch);
		free(ch);
	}
}

static void run_release(run_t *R)
{
	lines_free(&R->lines);
	sv_batch_release(&R->b[0]);
	sv_batch_release(&R->b[1]);
	sv_pipeline_destroy(R->pl);
	sv_schema_destroy(R->ls);
	sv_schema_destroy(R->rs);
}

/* ---- the references ---- */

typedef struct ref {
	lines_t lines;
	uint64_t late;
	uint64_t behind; /* rows at or behind the output watermark: only a
			  * processing-time lookup join passes late left rows
			  * on, as a filter does */
	sv_op_side_state_t after[MAXR][2]; /* rows and keys */
} ref_t;

static void ref_emit(ref_t *ref, const jrec_t *l, const jrec_t *r, int64_t t)
{
	sv_value_t row[6] = {{0}};
	char ls[16], rs[16];
	if (l->key >= 0)
		row[0] = sv_str(KEYS[l->key], (uint32_t)strlen(KEYS[l->key]));
	if (!l->vnull) {
		int n = snprintf(ls, sizeof(ls), "s%lld", (long long)l->v);
		row[1] = sv_int(l->v);
		row[2] = sv_str(ls, (uint32_t)n);
	}
	if (l->g >= 0)
		row[3] = sv_int(l->g);
	if (r && !r->vnull) {
		int n = snprintf(rs, sizeof(rs), "r%lld", (long long)r->v);
		row[4] = sv_int(r->v);
		row[5] = sv_str(rs, (uint32_t)n);
	}
	char buf[256];
	fmt_row(buf, sizeof(buf), row, 6, t);
	lines_add(&ref->lines, buf);
}

static void move(int64_t *wm, int64_t to)
{
	if (to != NONE && (*wm == NONE || to > *wm))
		*wm = to;
}

/* The join key of a record as a number in [0, 2 * NKEYS), or -1 when a
 * key column is null. */
static int kid(const tcase_t *c, const jrec_t *r)
{
	if (r->key < 0 || (c->two && r->g < 0))
		return -1;
	return c->two ? r->key * 2 + r->g : r->key;
}

/* Number of distinct keys among the records idx[0..n). */
static uint64_t distinct_keys(const tcase_t *c, const size_t *idx, size_t n)
{
	bool seen[2 * NKEYS] = {false};
	uint64_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int id = kid(c, &c->r[idx[i]]);
		if (id >= 0 && !seen[id]) { /* a null key is no key */
			seen[id] = true;
			k++;
		}
	}
	return k;
}

/* interval and hash */
static void ref_symmetric(const tcase_t *c, ref_t *ref)
{
	bool interval = c->type == SV_JOIN_INTERVAL;
	bool *ok = calloc(c->n + 1, sizeof(bool)); /* not late */
	int64_t wl = NONE, wr = NONE;
	for (size_t i = 0; i < c->nsteps; i++) {
		const step_t *st = &c->st[i];
		for (size_t j = st->from; j < st->to; j++) {
			int64_t own = st->side == 0 ? wl : wr;
			ok[j] = !interval || own == NONE || c->r[j].t > own;
			ref->late += !ok[j];
		}
		if (st->adv) {
			move(&wl, st->wl);
			move(&wr, st->wr);
		}
		/* held: non-late rows with a key the other watermark has not
		 * passed */
		size_t held[2][MAXR], nh[2] = {0, 0};
		for (size_t j = 0; j < st->to; j++) {
			const jrec_t *r = &c->r[j];
			if (!ok[j] || kid(c, r) < 0)
				continue;
			if (interval && r->side == 0 && wr != NONE &&
			    r->t + c->upper <= wr)
				continue;
			if (interval && r->side == 1 && wl != NONE &&
			    r->t - c->lower <= wl)
				continue;
			held[r->side][nh[r->side]++] = j;
		}
		for (int s = 0; s < 2; s++) {
			ref->after[i][s].rows = nh[s];
			ref->after[i][s].keys = distinct_keys(c, held[s],
							      nh[s]);
		}
	}
	for (size_t a = 0; a < c->n; a++) {
		const jrec_t *l = &c->r[a];
		if (l->side != 0 || !ok[a])
			continue;
		bool matched = false;
		for (size_t b = 0; b < c->n; b++) {
			const jrec_t *r = &c->r[b];
			if (r->side != 1 || !ok[b] || kid(c, l) < 0 ||
			    kid(c, r) != kid(c, l))
				continue;
			int64_t d = r->t - l->t;
			if (interval && (d < c->lower || d > c->upper))
				continue;
			ref_emit(ref, l, r, l->t > r->t ? l->t : r->t);
			matched = true;
		}
		if (!matched && c->kind == SV_JOIN_LEFT)
			ref_emit(ref, l, NULL, l->t);
	}
	free(ok);
}

typedef struct tent { /* a table row that arrived */
	size_t idx;
	int64_t te;
} tent_t;

/* The table row of key current at t among the arrived ones (NULL: none
 * or a tombstone). */
static const jrec_t *ref_lookup(const tcase_t *c, const tent_t *tab, size_t nt,
				int key, int64_t t)
{
	const tent_t *best = NULL;
	for (size_t i = 0; i < nt; i++) {
		const jrec_t *r = &c->r[tab[i].idx];
		if (kid(c, r) != key)
			continue;
		if (c->proc) {
			best = &tab[i]; /* the latest arrival */
			continue;
		}
		if (tab[i].te <= t && (!best || tab[i].te >= best->te))
			best = &tab[i];
	}
	if (!best || c->r[best->idx].del)
		return NULL;
	return &c->r[best->idx];
}

static void ref_answer(const tcase_t *c, ref_t *ref, const tent_t *tab,
		       size_t nt, size_t li)
{
	const jrec_t *l = &c->r[li];
	const jrec_t *r = kid(c, l) < 0
		? NULL
		: ref_lookup(c, tab, nt, kid(c, l), l->t);
	if (r || c->kind == SV_JOIN_LEFT)
		ref_emit(ref, l, r, l->t);
}

static int64_t ref_bound(const tcase_t *c, int64_t wl, int64_t wr)
{
	int64_t b = wr;
	if (c->retention && wl != NONE && wl - c->retention > b)
		b = wl - c->retention;
	return b;
}

static void ref_lookup_join(const tcase_t *c, ref_t *ref)
{
	tent_t tab[MAXR];
	size_t nt = 0;
	size_t pend[MAXR];
	size_t np = 0;
	int64_t wl = NONE, wr = NONE;
	for (size_t i = 0; i < c->nsteps; i++) {
		const step_t *st = &c->st[i];
		for (size_t j = st->from; j < st->to; j++) {
			const jrec_t *r = &c->r[j];
			if (r->side == 1) {
				if (kid(c, r) < 0)
					continue;
				int64_t te = r->t;
				if (!c->proc && wr != NONE && te <= wr)
					te = wr + 1;
				tab[nt++] = (tent_t){j, te};
				continue;
			}
			if (c->proc) {
				size_t before = ref->lines.n;
				ref_answer(c, ref, tab, nt, j);
				if (wl != NONE && r->t <= wl)
					ref->behind += ref->lines.n - before;
				continue;
			}
			if (wl != NONE && r->t <= wl) {
				ref->late++;
				continue;
			}
			int64_t b = ref_bound(c, wl, wr);
			if (b != NONE && r->t <= b)
				ref_answer(c, ref, tab, nt, j);
			else
				pend[np++] = j;
		}
		if (st->adv) {
			move(&wl, st->wl);
			move(&wr, st->wr);
		}
		if (st->adv && !c->proc) {
			int64_t b = ref_bound(c, wl, wr);
			size_t keep = 0;
			for (size_t p = 0; p < np; p++) {
				if (b != NONE && c->r[pend[p]].t <= b)
					ref_answer(c, ref, tab, nt, pend[p]);
				else
					pend[keep++] = pend[p];
			}
			np = keep;
		}
		/* held: the pending rows; per key the versions by effective
		 * time (a later arrival replaces one of the same time), of
		 * those at or before the horizon only the latest, and not
		 * that one when it is a tombstone */
		ref->after[i][0].rows = np;
		ref->after[i][0].keys = 0;
		bool pruning = wl != NONE && wr != NONE;
		int64_t h = wl < wr ? wl : wr;
		uint64_t rows = 0, keys = 0;
		for (int k = 0; k < 2 * NKEYS; k++) {
			uint64_t n = 0;
			const tent_t *base = NULL;
			for (size_t a = 0; a < nt; a++) {
				if (kid(c, &c->r[tab[a].idx]) != k)
					continue;
				bool replaced = false;
				for (size_t b2 = a + 1; b2 < nt; b2++)
					if (kid(c, &c->r[tab[b2].idx]) == k &&
					    (c->proc ||
					     tab[b2].te == tab[a].te))
						replaced = true;
				if (replaced)
					continue;
				if (c->proc) {
					n += !c->r[tab[a].idx].del;
					continue;
				}
				if (!pruning || tab[a].te > h)
					n++;
				else if (!base || tab[a].te > base->te)
					base = &tab[a];
			}
			if (base && !c->r[base->idx].del)
				n++;
			rows += n;
			keys += n > 0;
		}
		ref->after[i][1].rows = rows;
		ref->after[i][1].keys = keys;
	}
	for (size_t p = 0; p < np; p++)
		ref_answer(c, ref, tab, nt, pend[p]);
}

static void reference(const tcase_t *c, ref_t *ref)
{
	if (c->type == SV_JOIN_LOOKUP)
		ref_lookup_join(c, ref);
	else
		ref_symmetric(c, ref);
}

static void check_case(sv_jointype_t type, uint64_t seed)
{
	tcase_t *c = malloc(sizeof(*c));
	make_case(c, type, seed);
	ref_t *ref = calloc(1, sizeof(*ref));
	reference(c, ref);
	int passes = 3; /* every join writes deltas */
	for (int pass = 0; pass < passes; pass++) {
		run_t *R = malloc(sizeof(*R));
		run_case(c, pass, R);
		bool ok = same_lines(&R->lines, &ref->lines) &&
			R->st.records_late == ref->late &&
			R->bad_time == ref->behind;
		size_t bad_i = SIZE_MAX;
		for (size_t i = 0; ok && i < c->nsteps; i++)
			for (int s = 0; s < 2; s++)
				if (R->after[i][s].rows !=
					    ref->after[i][s].rows ||
				    R->after[i][s].keys !=
					    ref->after[i][s].keys) {
					ok = false;
					bad_i = i;
				}
		if (!ok) {
			fprintf(stderr,
				"type %d seed %llu pass %d: kind %d proc %d "
				"take_all %d lower %lld upper %lld retention "
				"%lld disorder %lld/%lld n %zu steps %zu "
				"snap_at %zu late %llu/%llu behind the output "
				"watermark %llu\n",
				type, (unsigned long long)seed, pass, c->kind,
				c->proc, c->take_all, (long long)c->lower,
				(long long)c->upper, (long long)c->retention,
				(long long)c->disorder[0],
				(long long)c->disorder[1], c->n, c->nsteps,
				c->snap_at,
				(unsigned long long)R->st.records_late,
				(unsigned long long)ref->late,
				(unsigned long long)R->bad_time);
			if (bad_i != SIZE_MAX)
				fprintf(stderr,
					"after step %zu: rows %llu/%llu keys "
					"%llu/%llu, reference %llu/%llu keys "
					"%llu/%llu\n",
					bad_i,
					(unsigned long long)R->after[bad_i][0]
						.rows,
					(unsigned long long)R->after[bad_i][1]
						.rows,
					(unsigned long long)R->after[bad_i][0]
						.keys,
					(unsigned long long)R->after[bad_i][1]
						.keys,
					(unsigned long long)ref->after[bad_i][0]
						.rows,
					(unsigned long long)ref->after[bad_i][1]
						.rows,
					(unsigned long long)ref->after[bad_i][0]
						.keys,
					(unsigned long long)ref->after[bad_i][1]
						.keys);
			dump("operator", &R->lines, 60);
			dump("reference", &ref->lines, 60);
			fail_msg("mismatch");
		}
		run_release(R);
		free(R);
	}
	lines_free(&ref->lines);
	free(ref);
	free(c);
}

#define CASES 1000

static void run_type(sv_jointype_t type)
{
	for (uint64_t seed = 1; seed <= CASES; seed++)
		check_case(type, seed * 104729 + (uint64_t)type);
}

/* Not vacuous: most incremental restores of the type applied deltas. */
static void assert_deltas_applied(const char *type)
{
	fprintf(stderr, "%s: %llu of %d incremental restores applied deltas\n",
		type, (unsigned long long)g_delta_restores, CASES);
	assert_true(g_delta_restores >= CASES / 2);
	g_delta_restores = 0;
}

static void test_random_interval(void **state)
{
	(void)state;
	run_type(SV_JOIN_INTERVAL);
	assert_deltas_applied("interval");
}

static void test_random_lookup(void **state)
{
	(void)state;
	run_type(SV_JOIN_LOOKUP);
	assert_deltas_applied("lookup");
	/* and many advances gave their answers in several pieces */
	fprintf(stderr, "lookup: %llu advances in pieces\n",
		(unsigned long long)g_split_advances);
	assert_true(g_split_advances >= CASES);
}

static void test_random_hash(void **state)
{
	(void)state;
	run_type(SV_JOIN_HASH);
	assert_deltas_applied("hash");
}

/* Negative control: the comparison sees a reference with other bounds
 * (on the first case where a bound one wider changes the answer). */
static void test_reference_detects_difference(void **state)
{
	(void)state;
	tcase_t *c = malloc(sizeof(*c));
	ref_t *ref = calloc(1, sizeof(*ref));
	ref_t *other = calloc(1, sizeof(*other));
	for (uint64_t seed = 1;; seed++) {
		make_case(c, SV_JOIN_INTERVAL, seed);
		lines_free(&ref->lines);
		lines_free(&other->lines);
		memset(ref, 0, sizeof(*ref));
		memset(other, 0, sizeof(*other));
		reference(c, ref);
		c->upper++;
		reference(c, other);
		c->upper--;
		if (!same_lines(&ref->lines, &other->lines))
			break;
		assert_true(seed < 100);
	}
	run_t *R = malloc(sizeof(*R));
	run_case(c, false, R);
	assert_true(ref->lines.n > 0);
	assert_true(same_lines(&R->lines, &ref->lines));
	assert_false(same_lines(&R->lines, &other->lines));
	lines_free(&ref->lines);
	lines_free(&other->lines);
	free(ref);
	free(other);
	run_release(R);
	free(R);
	free(c);
}

/* The random cases exercise what they claim: late rows, unmatched left
 * rows, tombstones that hide a key, state freed before the end. */
static void test_cases_are_not_vacuous(void **state)
{
	(void)state;
	uint64_t late = 0, unmatched = 0, matched = 0, freed = 0, hidden = 0;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		for (int t = 0; t < 2; t++) {
			sv_jointype_t type = t ? SV_JOIN_LOOKUP
					       : SV_JOIN_INTERVAL;
			tcase_t *c = malloc(sizeof(*c));
			make_case(c, type, seed * 104729 + (uint64_t)type);
			ref_t *ref = calloc(1, sizeof(*ref));
			reference(c, ref);
			late += ref->late;
			for (size_t i = 0; i < ref->lines.n; i++) {
				bool um = strstr(ref->lines.v[i], "|~|~@");
				unmatched += um;
				matched += !um;
			}
			if (c->nsteps > 4) {
				size_t mid = c->nsteps / 2;
				uint64_t arrived = c->st[mid].to;
				freed += ref->after[mid][0].rows +
						ref->after[mid][1].rows <
					arrived / 2;
			}
			for (size_t i = 0; type == SV_JOIN_LOOKUP && i < c->n;
			     i++)
				hidden += c->r[i].del;
			lines_free(&ref->lines);
			free(ref);
			free(c);
		}
	}
	assert_true(late > 50);
	assert_true(unmatched > 200);
	assert_true(matched > 2000);
	assert_true(freed > 100);
	assert_true(hidden > 500);
}

/* ---- state bound ---- */

/* An interval join over STATE_N records whose event time advances: the
 * left input at RL records per ms, the right at RR, each delivered with up
 * to D ms of disorder and advanced every A ms of event time. A left row is
 * held until the right watermark (max right time - D - 1) reaches
 * l + upper, a right row until the left watermark reaches r - lower. At
 * any moment the rows held are therefore those with times in the last
 * upper + D + 1 + A ms (left) and -lower + D + 1 + A ms (right), plus the
 * rows of the batch in flight (B records):
 *
 *   rows <= RL * (max(upper, 0) + D + 1 + A)
 *         + RR * (max(-lower, 0) + D + 1 + A) + B
 *
 * The test checks the figure after every batch and every advance and
 * prints the maximum held (rows and bytes) beside it. */
#define STATE_N 1000000
static void test_interval_state_bound(void **state)
{
	(void)state;
	const int64_t lower = -100, upper = 200, D = 50, A = 10;
	const int64_t RL_PER_MS = 1, RR_EVERY_MS = 2; /* RR = 0.5 / ms */
	const size_t B = 64;
	sv_schema_t *ls, *rs;
	schemas(&ls, &rs);
	static const char *const keys[] = {"k"};
	static const char *const names[] = {"rv", "rs"};
	sv_join_spec_t spec = {.type = SV_JOIN_INTERVAL,
			       .kind = SV_JOIN_LEFT,
			       .nkeys = 1,
			       .left_keys = keys,
			       .right_keys = keys,
			       .ntake = 2,
			       .take_names = names,
			       .take_cols = names,
			       .lower_ms = lower,
			       .upper_ms = upper};
	sv_op_t *op = NULL;
	assert_null(sv_op_join_new(ls, rs, &spec, &op));
	sv_batch_t b[2], out;
	sv_batch_init(&b[0], ls);
	sv_batch_init(&b[1], rs);
	sv_batch_init(&out, op->out_schema);
	sv_opstats_t st = {0};
	sv_op_ctx_t ctx = {
		.watermark_ms = NONE, .right_watermark_ms = NONE, .stats = &st};
	uint64_t s = 42;
	int64_t maxt[2] = {INT64_MIN, INT64_MIN};
	uint64_t max_rows = 0, max_bytes = 0, outputs = 0, records = 0;
	double bound = (double)RL_PER_MS * (double)(upper + D + 1 + A) +
		(double)(-lower + D + 1 + A) / (double)RR_EVERY_MS + (double)B;
	char kbuf[16];
	int64_t now = 0, next_adv = A;
	while (records < STATE_N) {
		/* one ms of event time: RL left rows, a right row every
		 * RR_EVERY_MS; times jittered back by up to D */
		for (int sd = 0; sd < 2; sd++) {
			int n = sd == 0 ? (int)RL_PER_MS
					: (now % RR_EVERY_MS == 0);
			for (int i = 0; i < n; i++) {
				sv_rowmeta_t *m;
				sv_value_t *row = sv_batch_add_row(&b[sd], &m);
				int64_t t = now - rnd(&s, 0, D);
				m->event_ms = t;
				int kn = snprintf(kbuf, sizeof(kbuf), "k%d",
						  (int)rnd(&s, 0, 999));
				row[sd == 0 ? 0 : 1] = sv_str(
					sv_batch_strdup(&b[sd], kbuf,
							(size_t)kn),
					(uint32_t)kn);
				row[sd == 0 ? 1 : 0] = sv_int(t);
				if (t > maxt[sd])
					maxt[sd] = t;
				records++;
			}
		}
		for (int sd = 0; sd < 2; sd++) {
			if (b[sd].nrows < B && now < next_adv)
				continue;
			sv_error_t *err = sd == 0
				? op->ops->process(op, &ctx, &b[sd], &out)
				: op->ops->process_right(op, &ctx, &b[sd],
							 &out);
			assert_null(err);
			sv_batch_reset(&b[sd]);
			outputs += out.nrows;
			sv_batch_reset(&out);
			uint64_t bytes, k;
			op->ops->state_size(op, &bytes, &k);
			sv_op_side_state_t sides[2];
			op->ops->state_sides(op, sides);
			uint64_t rows = sides[0].rows + sides[1].rows;
			if (rows > max_rows)
				max_rows = rows;
			if (bytes > max_bytes)
				max_bytes = bytes;
			assert_true((double)rows <= bound);
		}
		if (now >= next_adv) {
			next_adv += A;
			ctx.watermark_ms = maxt[0] - D - 1;
			ctx.right_watermark_ms = maxt[1] - D - 1;
			assert_null(op->ops->advance(op, &ctx, &out));
			outputs += out.nrows;
			sv_batch_reset(&out);
			sv_op_side_state_t sides[2];
			op->ops->state_sides(op, sides);
			assert_true((double)(sides[0].rows + sides[1].rows) <=
				    bound);
		}
		now++;
	}
	printf("interval join state bound: %llu records over %lld ms of "
	       "event time, %llu output rows; max held %llu rows (%llu "
	       "bytes), bound RL*(upper+D+1+A) + RR*(-lower+D+1+A) + B = "
	       "%.0f rows (RL 1/ms, RR 0.5/ms, lower %lld, upper %lld, D "
	       "%lld, A %lld, B %zu)\n",
	       (unsigned long long)records, (long long)now,
	       (unsigned long long)outputs, (unsigned long long)max_rows,
	       (unsigned long long)max_bytes, bound, (long long)lower,
	       (long long)upper, (long long)D, (long long)A, B);
	assert_true(outputs > records / 2);
	assert_true(max_rows > bound / 4); /* the figure is not vacuous */
	sv_batch_release(&b[0]);
	sv_batch_release(&b[1]);
	sv_batch_release(&out);
	sv_op_destroy(op);
	sv_schema_destroy(ls);
	sv_schema_destroy(rs);
}

/* Negative control of the bound: without watermarks nothing is freed. */
static void test_interval_state_grows_without_watermarks(void **state)
{
	(void)state;
	sv_schema_t *ls, *rs;
	schemas(&ls, &rs);
	static const char *const keys[] = {"k"};
	static const char *const names[] = {"rv", "rs"};
	sv_join_spec_t spec = {.type = SV_JOIN_INTERVAL,
			       .nkeys = 1,
			       .left_keys = keys,
			       .right_keys = keys,
			       .ntake = 2,
			       .take_names = names,
			       .take_cols = names,
			       .lower_ms = -100,
			       .upper_ms = 200};
	sv_op_t *op = NULL;
	assert_null(sv_op_join_new(ls, rs, &spec, &op));
	sv_batch_t b, out;
	sv_batch_init(&b, ls);
	sv_batch_init(&out, op->out_schema);
	sv_op_ctx_t ctx = {.watermark_ms = NONE, .right_watermark_ms = NONE};
	for (int64_t t = 0; t < 10000; t++) {
		sv_rowmeta_t *m;
		sv_value_t *row = sv_batch_add_row(&b, &m);
		m->event_ms = t;
		row[0] = sv_str("a", 1);
		if (b.nrows == 100) {
			assert_null(op->ops->process(op, &ctx, &b, &out));
			assert_null(op->ops->advance(op, &ctx, &out));
			sv_batch_reset(&b);
		}
	}
	sv_op_side_state_t sides[2];
	op->ops->state_sides(op, sides);
	assert_int_equal(sides[0].rows, 10000);
	sv_batch_release(&b);
	sv_batch_release(&out);
	sv_op_destroy(op);
	sv_schema_destroy(ls);
	sv_schema_destroy(rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_detects_difference),
		cmocka_unit_test(test_cases_are_not_vacuous),
		cmocka_unit_test(test_random_interval),
		cmocka_unit_test(test_random_lookup),
		cmocka_unit_test(test_random_hash),
		cmocka_unit_test(test_interval_state_bound),
		cmocka_unit_test(test_interval_state_grows_without_watermarks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
