/* test_window_random.c — randomized comparison of the window and dedup
 * operators with brute-force reference implementations written here.
 *
 * Each case (fixed seeds) draws keys (including null and ""), values
 * (including null) and event times, delivers them out of order with a
 * bounded disorder plus a few records delayed far beyond it (late), in
 * random batches, advancing the operator after some batches to the
 * watermark max_event_time - disorder - 1 (sv_watermarks). The reference
 * knows only the rules of docs/windows.md:
 *   - tumbling/sliding: a record is late when the last window containing
 *     it was closed (end - 1 + lateness <= watermark) when it arrived;
 *     otherwise it belongs to every window containing it that was still
 *     open; every window with at least one record is emitted once, with
 *     aggregates computed from its list of records;
 *   - session: per key, a list of open sessions; a record merges every
 *     session whose [start, last + gap) touches [t, t + gap); one that
 *     merges nothing and whose own window is closed is late; sessions are
 *     emitted when last + gap - 1 + lateness <= watermark;
 *   - dedup: a record passes unless its key has a remembered time f (not
 *     yet expired: f + within - 1 > watermark) and t < f + within.
 * Compared: the multiset of output rows (dedup: the exact sequence), the
 * late/dropped counters, and the state key count after every advance
 * (state behind the watermark is freed). Every case runs twice, once with
 * a snapshot -> new operator -> restore at a random batch boundary; both
 * runs must match the reference.
 *
 * Windows run a third time with incremental checkpoints as
 * supervisor/ckpt.c takes them: at random batch boundaries a checkpoint,
 * full every few, deltas (snapshot_delta) in between, each confirmed
 * (checkpointed). After each, a second operator restores the newest full
 * snapshot plus the deltas since, in order, and its snapshot must be the
 * first's (sessions: compared with keys in seq order, as the state map's
 * order depends on its history); at one checkpoint the run goes on with
 * that restored operator (its next checkpoint full again), so the
 * reference also checks what it emits afterwards. Negative control:
 * leaving out the first delta of the chain must give another state or be
 * refused, in some checkpoints of every kind. Session deltas must show
 * merges (more tombstones than sessions fired since the checkpoint) and
 * fires (tombstones where sessions fired). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/watermark.h"
#include "core/window_int.h"
#include "tests/unit/random_case.h"

#define MAXR 240

#define AGGS                                                          \
	"n:count();c:count(v);s:sum(v);mn:min(v);mx:max(s);a:avg(x);" \
	"f:first(s);l:last(v);d:count_distinct(v);sx:sum(x)"

enum kind {
	K_TUMBLING,
	K_SLIDING,
	K_SESSION,
	K_DEDUP
};

typedef struct rec {
	int key; /* -1: null, else index into KEYS */
	int64_t v; /* value */
	bool vnull;
	int64_t t; /* event time */
	uint64_t arr; /* arrival index */
	int64_t wm; /* operator watermark when it arrives (reference) */
} rec_t;

typedef struct tcase {
	enum kind kind;
	int64_t size, slide, gap, lateness, within, disorder;
	bool keyed;
	size_t n;
	rec_t r[MAXR]; /* in arrival order */
	size_t nb; /* batches */
	size_t bend[MAXR]; /* batch b is r[bend[b-1] .. bend[b]) */
	bool adv[MAXR]; /* advance after batch b */
	int64_t bwm[MAXR]; /* the watermark after batch b */
	size_t snap_at; /* snapshot/restore after this batch */
	uint64_t seed;
} tcase_t;

static void take_rows(lines_t *l, sv_batch_t *b)
{
	char buf[512];
	for (size_t r = 0; r < b->nrows; r++) {
		fmt_cells(buf, sizeof(buf), sv_batch_row(b, r), b->ncols);
		lines_add(l, buf);
	}
	sv_batch_reset(b);
}

/* ---- random cases ---- */

static void make_case(tcase_t *c, enum kind kind, uint64_t seed)
{
	uint64_t s = seed;
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->seed = seed;
	c->size = rnd(&s, 1, 40);
	c->slide = rnd(&s, (c->size + 3) / 4, c->size);
	c->gap = rnd(&s, 1, 25);
	c->lateness = rnd(&s, 0, 3) ? 0 : rnd(&s, 1, 30);
	c->within = rnd(&s, 1, 40);
	if (kind == K_DEDUP) /* dedup has no lateness */
		c->lateness = 0;
	c->disorder = rnd(&s, 0, 30);
	c->keyed = rnd(&s, 0, 7) != 0;
	c->n = (size_t)rnd(&s, 1, MAXR);
	int64_t t = rnd(&s, -100, 100);
	int64_t step = rnd(&s, 1, 6);
	rec_t tmp[MAXR];
	order_t ord[MAXR];
	for (size_t i = 0; i < c->n; i++) {
		t += rnd(&s, 0, step);
		tmp[i].t = t;
		tmp[i].key = (int)rnd(&s, -1, NKEYS - 1);
		tmp[i].vnull = rnd(&s, 0, 9) == 0;
		tmp[i].v = rnd(&s, -20, 20);
		/* bounded disorder, and a few far later (late data) */
		ord[i].at = t + rnd(&s, 0, c->disorder);
		if (rnd(&s, 0, 24) == 0)
			ord[i].at += rnd(&s, 40, 300);
		ord[i].i = i;
	}
	qsort(ord, c->n, sizeof(order_t), order_cmp);
	for (size_t i = 0; i < c->n; i++) {
		c->r[i] = tmp[ord[i].i];
		c->r[i].arr = i;
	}
	/* batches, advances and the watermark each would see */
	size_t i = 0;
	int64_t maxt = INT64_MIN, opwm = SV_WATERMARK_NONE;
	while (i < c->n) {
		size_t end = i + (size_t)rnd(&s, 1, 25);
		if (end > c->n)
			end = c->n;
		for (size_t j = i; j < end; j++) {
			c->r[j].wm = opwm;
			if (c->r[j].t > maxt)
				maxt = c->r[j].t;
		}
		size_t b = c->nb++;
		c->bend[b] = end;
		c->bwm[b] = maxt - c->disorder - 1;
		c->adv[b] = rnd(&s, 0, 9) < 6;
		if (c->adv[b] && c->bwm[b] > opwm)
			opwm = c->bwm[b];
		i = end;
	}
	c->snap_at = (size_t)rnd(&s, 0, (int64_t)c->nb - 1);
}

/* ---- the operator under test ---- */

typedef struct run {
	sv_schema_t *in;
	sv_op_t *op;
	sv_batch_t b, out;
	sv_opstats_t st;
	sv_op_ctx_t ctx;
	lines_t lines;
	uint64_t keys_after[MAXR]; /* state keys after batch b's advance */
} run_t;

static sv_schema_t *input_schema(void)
{
	sv_schema_t *in = sv_schema_new();
	sv_schema_add(in, "k", SV_T_STRING, true);
	sv_schema_add(in, "v", SV_T_INT64, true);
	sv_schema_add(in, "x", SV_T_FLOAT64, true);
	sv_schema_add(in, "s", SV_T_STRING, true);
	return in;
}

static sv_op_t *new_op(const tcase_t *c, const sv_schema_t *in)
{
	static const char *const key[] = {"k"};
	sv_op_t *op = NULL;
	sv_error_t *err;
	if (c->kind == K_DEDUP) {
		err = sv_op_dedup_new(in, c->keyed ? 1 : 0, key, c->within,
				      &op);
	} else {
		static const char *names[16], *exprs[16];
		static char buf[256];
		size_t na = 0;
		snprintf(buf, sizeof(buf), "%s", AGGS);
		char *save = NULL;
		for (char *tok = strtok_r(buf, ";", &save); tok;
		     tok = strtok_r(NULL, ";", &save)) {
			char *colon = strchr(tok, ':');
			*colon = '\0';
			names[na] = tok;
			exprs[na++] = colon + 1;
		}
		sv_window_spec_t spec = {
			.type = c->kind == K_TUMBLING  ? SV_WIN_TUMBLING
				: c->kind == K_SLIDING ? SV_WIN_SLIDING
						       : SV_WIN_SESSION,
			.size_ms = c->size,
			.slide_ms = c->slide,
			.gap_ms = c->gap,
			.allowed_lateness_ms = c->lateness,
			.nkeys = c->keyed ? 1 : 0,
			.keys = key,
			.naggs = na,
			.agg_names = names,
			.agg_exprs = exprs,
		};
		err = sv_op_window_new(in, &spec, &op);
	}
	if (err)
		fail_msg("op: %s", err->message);
	return op;
}

static void add_row(sv_batch_t *b, const rec_t *r)
{
	sv_rowmeta_t *m;
	sv_value_t *row = sv_batch_add_row(b, &m);
	m->event_ms = r->t;
	m->offset = (int64_t)r->arr;
	if (r->key >= 0)
		row[0] = sv_str(KEYS[r->key], (uint32_t)strlen(KEYS[r->key]));
	if (!r->vnull) {
		char tmp[16];
		int n = snprintf(tmp, sizeof(tmp), "s%lld", (long long)r->v);
		row[1] = sv_int(r->v);
		row[2] = sv_float((double)r->v / 2);
		row[3] = sv_str(sv_batch_strdup(b, tmp, (size_t)n),
				(uint32_t)n);
	}
}

/* ---- incremental checkpoints ---- */

/* Canonical forms: the bytes of the state with what depends on a hash
 * table's history put in order. */

static void copy_span(sv_deser_t *d, size_t from, sv_buf_t *out)
{
	if (!d->bad)
		sv_buf_append(out, d->p + from, d->off - from);
}

static void copy_value(sv_deser_t *d, sv_buf_t *out)
{
	size_t at = d->off;
	sv_value_t v;
	sv_deser_value(d, &v);
	copy_span(d, at, out);
}

typedef struct span {
	uint64_t seq;
	sv_buf_t b;
} span_t;

static int span_cmp(const void *a, const void *b)
{
	const span_t *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	size_t n = x->b.len < y->b.len ? x->b.len : y->b.len;
	int r = memcmp(x->b.data, y->b.data, n);
	return r ? r : (x->b.len > y->b.len) - (x->b.len < y->b.len);
}

static void spans_put(span_t *v, size_t n, sv_buf_t *out)
{
	qsort(v, n, sizeof(span_t), span_cmp);
	for (size_t i = 0; i < n; i++) {
		sv_buf_append(out, v[i].b.data, v[i].b.len);
		sv_buf_release(&v[i].b);
	}
	free(v);
}

/* An accumulator with its count_distinct set in value order (the set is a
 * state map, written in its slot order). */
static void canon_acc(sv_deser_t *d, sv_buf_t *out)
{
	size_t at = d->off;
	sv_deser_i64(d);
	sv_deser_u64(d);
	sv_value_t v;
	sv_deser_value(d, &v);
	sv_deser_i64(d);
	sv_deser_u64(d);
	uint32_t n = sv_deser_u32(d);
	copy_span(d, at, out);
	span_t *vals = calloc(n + 1u, sizeof(span_t));
	for (uint32_t i = 0; i < n && !d->bad; i++) {
		sv_buf_init(&vals[i].b);
		copy_value(d, &vals[i].b);
	}
	spans_put(vals, d->bad ? 0 : n, out);
}

/* snap in canonical form into out: accumulators as above, and a session
 * snapshot's keys in seq order (docs/windows.md "Snapshots"). */
static void canon(const tcase_t *c, const sv_buf_t *snap, sv_buf_t *out)
{
	sv_buf_reset(out);
	sv_deser_t d = {.p = snap->data, .len = snap->len};
	for (int i = 0; i < 3; i++)
		sv_deser_u8(&d);
	uint32_t nk = sv_deser_u32(&d), na = sv_deser_u32(&d);
	for (int i = 0; i < 5; i++)
		sv_deser_u64(&d);
	uint64_t n = sv_deser_u64(&d);
	copy_span(&d, 0, out);
	assert_true(n < 100000);
	if (c->kind != K_SESSION) { /* buckets and panes in time order */
		for (uint64_t i = 0; i < n && !d.bad; i++) {
			size_t at = d.off;
			sv_deser_i64(&d);
			uint64_t np = sv_deser_u64(&d);
			copy_span(&d, at, out);
			for (uint64_t j = 0; j < np && !d.bad; j++) {
				at = d.off;
				sv_deser_u64(&d);
				for (uint32_t k = 0; k < nk; k++)
					sv_deser_value(&d, &(sv_value_t){0});
				copy_span(&d, at, out);
				for (uint32_t a = 0; a < na; a++)
					canon_acc(&d, out);
			}
		}
	} else {
		span_t *keys = calloc(n + 1, sizeof(span_t));
		for (uint64_t i = 0; i < n && !d.bad; i++) {
			sv_buf_t *b = &keys[i].b;
			sv_buf_init(b);
			size_t at = d.off;
			keys[i].seq = sv_deser_u64(&d);
			for (uint32_t k = 0; k < nk; k++)
				sv_deser_value(&d, &(sv_value_t){0});
			uint32_t ns = sv_deser_u32(&d);
			copy_span(&d, at, b);
			for (uint32_t j = 0; j < ns && !d.bad; j++) {
				at = d.off;
				sv_deser_i64(&d);
				sv_deser_i64(&d);
				sv_deser_u64(&d);
				copy_span(&d, at, b);
				for (uint32_t a = 0; a < na; a++)
					canon_acc(&d, b);
			}
		}
		spans_put(keys, d.bad ? 0 : n, out);
	}
	assert_false(d.bad);
	assert_int_equal(d.off, d.len);
}

static bool same_state(const tcase_t *c, sv_op_t *a, sv_op_t *b)
{
	sv_buf_t sa, sb, ca, cb;
	sv_buf_init(&sa);
	sv_buf_init(&sb);
	sv_buf_init(&ca);
	sv_buf_init(&cb);
	assert_null(a->ops->snapshot(a, &sa));
	assert_null(b->ops->snapshot(b, &sb));
	canon(c, &sa, &ca);
	canon(c, &sb, &cb);
	bool same = ca.len == cb.len && !memcmp(ca.data, cb.data, ca.len);
	sv_buf_release(&sa);
	sv_buf_release(&sb);
	sv_buf_release(&ca);
	sv_buf_release(&cb);
	return same;
}

/* What the incremental runs of one kind showed, over all its cases. */
typedef struct incr_stats {
	uint64_t checkpoints, deltas, controls, control_trials;
	uint64_t merge_deltas, fire_deltas;
} incr_stats_t;

static incr_stats_t g_incr;

/* A checkpoint chain: the newest full snapshot and the deltas since. */
typedef struct chain {
	sv_buf_t base;
	sv_buf_t deltas[MAXR];
	size_t nd;
	bool have_base;
	int full_every, nck;
	size_t rows_at; /* output rows when the last checkpoint was taken */
	bool swapped;
	uint64_t rng;
} chain_t;

static void chain_drop(chain_t *ch)
{
	sv_buf_release(&ch->base);
	sv_buf_init(&ch->base);
	for (size_t i = 0; i < ch->nd; i++)
		sv_buf_release(&ch->deltas[i]);
	ch->nd = 0;
}

/* The base and deltas [from, nd) into op; false when a delta is refused. */
static bool chain_restore(const chain_t *ch, sv_op_t *op, size_t from)
{
	assert_null(op->ops->restore(op, ch->base.data, ch->base.len));
	for (size_t i = from; i < ch->nd; i++) {
		sv_error_t *err = op->ops->restore_delta(op, ch->deltas[i].data,
							 ch->deltas[i].len);
		if (err) {
			assert_int_equal(err->category, SV_ERR_CHECKPOINT);
			sv_error_destroy(err);
			return false;
		}
	}
	return true;
}

static uint64_t le_u64(const char *p)
{
	uint64_t x = 0;
	for (int i = 0; i < 8; i++)
		x |= (uint64_t)(uint8_t)p[i] << (8 * i);
	return x;
}

/* One checkpoint of R->op after batch b (ckpt.c's rule: a delta when a
 * confirmed base exists and the chain is short, else full), then the
 * checks above; swap: go on with the restored operator. */
static void checkpoint(const tcase_t *c, run_t *R, chain_t *ch, size_t b,
		       bool swap)
{
	sv_op_t *op = R->op;
	g_incr.checkpoints++;
	bool written = false;
	if (ch->have_base && ch->nck++ % ch->full_every) {
		sv_buf_t *d = &ch->deltas[ch->nd];
		sv_buf_init(d);
		assert_null(op->ops->snapshot_delta(op, d, &written));
		if (written) {
			ch->nd++;
			g_incr.deltas++;
			if (c->kind == K_SESSION) {
				/* after the 51-byte header: tombstones */
				assert_true(d->len >= 59);
				uint64_t nt = le_u64(d->data + 51);
				size_t fired = R->lines.n - ch->rows_at;
				g_incr.merge_deltas += nt > fired;
				g_incr.fire_deltas += fired && nt;
			}
		} else {
			sv_buf_release(d);
		}
	}
	if (!written) {
		chain_drop(ch);
		assert_null(op->ops->snapshot(op, &ch->base));
		ch->have_base = true;
		ch->nck = 1;
	}
	op->ops->checkpointed(op);
	ch->rows_at = R->lines.n;

	sv_op_t *r = new_op(c, R->in);
	assert_true(chain_restore(ch, r, 0));
	if (!same_state(c, op, r))
		fail_msg("kind %d seed %llu: incremental restore after batch "
			 "%zu (%zu deltas) differs from the state",
			 c->kind, (unsigned long long)c->seed, b, ch->nd);
	uint64_t keys;
	r->ops->state_size(r, NULL, &keys);
	assert_int_equal(keys, R->keys_after[b]);
	/* a restored operator has no confirmed base: full next */
	sv_buf_t none;
	sv_buf_init(&none);
	written = true;
	assert_null(r->ops->snapshot_delta(r, &none, &written));
	assert_false(written);
	sv_buf_release(&none);
	if (ch->nd >= 1) { /* negative control: the first delta left out */
		sv_op_t *x = new_op(c, R->in);
		g_incr.control_trials++;
		if (!chain_restore(ch, x, 1) || !same_state(c, op, x))
			g_incr.controls++;
		sv_op_destroy(x);
	}
	if (swap) { /* on with the restored operator, as after a crash */
		sv_op_destroy(R->op);
		R->op = r;
		ch->have_base = false;
		ch->swapped = true;
	} else {
		sv_op_destroy(r);
	}
}

static void run_case(const tcase_t *c, int mode, run_t *R)
{
	bool restore = mode == 1, incr = mode == 2;
	chain_t *ch = incr ? calloc(1, sizeof(chain_t)) : NULL;
	if (ch) {
		ch->rng = c->seed ^ 0x5e55104ull;
		ch->full_every = (int)rnd(&ch->rng, 2, 8);
		sv_buf_init(&ch->base);
	}
	memset(R, 0, sizeof(*R));
	R->in = input_schema();
	R->op = new_op(c, R->in);
	sv_batch_init(&R->b, R->in);
	sv_batch_init(&R->out, R->op->out_schema);
	R->ctx.watermark_ms = SV_WATERMARK_NONE;
	R->ctx.stats = &R->st;
	sv_watermarks_t *wmk = sv_watermarks_new(c->disorder, 0);
	size_t i = 0;
	for (size_t b = 0; b < c->nb; b++) {
		for (; i < c->bend[b]; i++) {
			add_row(&R->b, &c->r[i]);
			sv_watermarks_observe(wmk, 0, c->r[i].t, 0);
		}
		assert_null(
			R->op->ops->process(R->op, &R->ctx, &R->b, &R->out));
		if (c->kind == K_DEDUP) /* it passes rows, windows never emit */
			take_rows(&R->lines, &R->out);
		assert_int_equal(R->out.nrows, 0);
		sv_batch_reset(&R->b);
		int64_t wm = sv_watermarks_current(wmk, 0);
		assert_int_equal(wm, c->bwm[b]);
		if (c->adv[b]) {
			R->ctx.watermark_ms = wm;
			assert_null(
				R->op->ops->advance(R->op, &R->ctx, &R->out));
			take_rows(&R->lines, &R->out);
		}
		R->op->ops->state_size(R->op, NULL, &R->keys_after[b]);
		if (restore && b == c->snap_at) {
			sv_buf_t snap;
			sv_buf_init(&snap);
			assert_null(R->op->ops->snapshot(R->op, &snap));
			sv_op_destroy(R->op);
			R->op = new_op(c, R->in);
			assert_null(R->op->ops->restore(R->op, snap.data,
							snap.len));
			uint64_t keys;
			R->op->ops->state_size(R->op, NULL, &keys);
			assert_int_equal(keys, R->keys_after[b]);
			sv_buf_release(&snap);
		}
		if (incr && rnd(&ch->rng, 0, 2))
			checkpoint(c, R, ch, b,
				   !ch->swapped && b >= c->snap_at);
	}
	if (ch) {
		chain_drop(ch);
		free(ch);
	}
	assert_null(R->op->ops->finish(R->op, &R->ctx, &R->out));
	take_rows(&R->lines, &R->out);
	uint64_t keys;
	R->op->ops->state_size(R->op, NULL, &keys);
	assert_int_equal(keys, 0);
	sv_watermarks_destroy(wmk);
}

static void run_release(run_t *R)
{
	lines_free(&R->lines);
	sv_batch_release(&R->b);
	sv_batch_release(&R->out);
	sv_op_destroy(R->op);
	sv_schema_destroy(R->in);
}

/* ---- the reference ---- */

typedef struct ref {
	lines_t lines;
	uint64_t late, dropped;
	uint64_t keys_after[MAXR];
} ref_t;

static bool closed(const tcase_t *c, int64_t end, int64_t wm)
{
	return wm != SV_WATERMARK_NONE && end - 1 + c->lateness <= wm;
}

static int64_t fdiv(int64_t a, int64_t b)
{
	return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

static int gkey(const tcase_t *c, const rec_t *r)
{
	return c->keyed ? r->key : 0;
}

/* One output row from a window's records (indices into c->r). */
static void ref_emit(const tcase_t *c, ref_t *ref, int key, int64_t start,
		     int64_t end, const size_t *idx, size_t n)
{
	sv_value_t row[16];
	size_t k = 0;
	if (c->keyed)
		row[k++] = key >= 0
			? sv_str(KEYS[key], (uint32_t)strlen(KEYS[key]))
			: sv_null();
	row[k++] = sv_ts(start);
	row[k++] = sv_ts(end);
	int64_t cnt = 0, sum = 0;
	double sx = 0;
	const rec_t *mn = NULL, *mx = NULL, *first = NULL, *last = NULL;
	int64_t seen[64];
	size_t nseen = 0;
	char mxs[16] = "", fs[16] = "";
	for (size_t i = 0; i < n; i++) {
		const rec_t *r = &c->r[idx[i]];
		if (r->vnull)
			continue;
		cnt++;
		sum += r->v;
		sx += (double)r->v / 2;
		if (!mn || r->v < mn->v)
			mn = r;
		char a[16], b[16];
		snprintf(a, sizeof(a), "s%lld", (long long)r->v);
		if (mx)
			snprintf(b, sizeof(b), "s%lld", (long long)mx->v);
		if (!mx) {
			mx = r;
		} else {
			sv_value_t va = sv_str(a, (uint32_t)strlen(a));
			sv_value_t vb = sv_str(b, (uint32_t)strlen(b));
			if (sv_value_cmp(&va, &vb) > 0)
				mx = r;
		}
		if (!first || r->t < first->t ||
		    (r->t == first->t && r->arr < first->arr))
			first = r;
		if (!last || r->t > last->t ||
		    (r->t == last->t && r->arr > last->arr))
			last = r;
		bool dup = false;
		for (size_t j = 0; j < nseen; j++)
			dup |= seen[j] == r->v;
		if (!dup)
			seen[nseen++] = r->v;
	}
	row[k++] = sv_int((int64_t)n);
	row[k++] = sv_int(cnt);
	row[k++] = cnt ? sv_int(sum) : sv_null();
	row[k++] = cnt ? sv_int(mn->v) : sv_null();
	if (cnt) {
		int l = snprintf(mxs, sizeof(mxs), "s%lld", (long long)mx->v);
		row[k++] = sv_str(mxs, (uint32_t)l);
	} else {
		row[k++] = sv_null();
	}
	row[k++] = cnt ? sv_float(sx / (double)cnt) : sv_null();
	if (cnt) {
		int l = snprintf(fs, sizeof(fs), "s%lld", (long long)first->v);
		row[k++] = sv_str(fs, (uint32_t)l);
	} else {
		row[k++] = sv_null();
	}
	row[k++] = cnt ? sv_int(last->v) : sv_null();
	row[k++] = sv_int((int64_t)nseen);
	row[k++] = cnt ? sv_float(sx) : sv_null();
	char buf[512];
	fmt_cells(buf, sizeof(buf), row, k);
	lines_add(&ref->lines, buf);
}

typedef struct went { /* a record in a window */
	int key;
	int64_t start;
	size_t i;
} went_t;

static int went_cmp(const void *a, const void *b)
{
	const went_t *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int pair_cmp(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void ref_panes(const tcase_t *c, ref_t *ref)
{
	int64_t slide = c->kind == K_TUMBLING ? c->size : c->slide;
	int64_t pane = slide;
	for (int64_t a = c->size, b = slide; b;) { /* gcd */
		int64_t t = a % b;
		a = b;
		b = t;
		pane = a;
	}
	went_t *w = calloc(c->n * 64 + 1, sizeof(went_t));
	size_t nw = 0;
	bool *acc = calloc(c->n + 1, sizeof(bool));
	for (size_t i = 0; i < c->n; i++) {
		const rec_t *r = &c->r[i];
		int64_t last = fdiv(r->t, slide) * slide;
		if (closed(c, last + c->size, r->wm)) {
			ref->late++;
			continue;
		}
		acc[i] = true;
		for (int64_t s = last; s > r->t - c->size; s -= slide)
			if (!closed(c, s + c->size, r->wm))
				w[nw++] = (went_t){gkey(c, r), s, i};
	}
	qsort(w, nw, sizeof(went_t), went_cmp);
	size_t idx[MAXR];
	for (size_t i = 0; i < nw;) {
		size_t j = i, n = 0;
		while (j < nw && w[j].key == w[i].key &&
		       w[j].start == w[i].start)
			idx[n++] = w[j++].i;
		ref_emit(c, ref, w[i].key, w[i].start, w[i].start + c->size,
			 idx, n);
		i = j;
	}
	/* state after each batch: distinct (key, pane) of accepted records
	 * whose last window is still open */
	int64_t opwm = SV_WATERMARK_NONE;
	int64_t(*pairs)[2] = calloc(c->n + 1, sizeof(*pairs));
	for (size_t b = 0; b < c->nb; b++) {
		if (c->adv[b] && c->bwm[b] > opwm)
			opwm = c->bwm[b];
		size_t np = 0;
		for (size_t i = 0; i < c->bend[b]; i++) {
			const rec_t *r = &c->r[i];
			int64_t last = fdiv(r->t, slide) * slide;
			if (acc[i] && !closed(c, last + c->size, opwm)) {
				pairs[np][0] = gkey(c, r);
				pairs[np++][1] = fdiv(r->t, pane);
			}
		}
		qsort(pairs, np, sizeof(*pairs), pair_cmp);
		uint64_t d = 0;
		for (size_t i = 0; i < np; i++)
			d += !i || pair_cmp(pairs[i], pairs[i - 1]);
		ref->keys_after[b] = d;
	}
	free(pairs);
	free(acc);
	free(w);
}

typedef struct rsess {
	int key;
	int64_t start, last;
	size_t idx[MAXR];
	size_t n;
} rsess_t;

static void ref_sessions(const tcase_t *c, ref_t *ref)
{
	rsess_t *ss = calloc(MAXR, sizeof(rsess_t));
	size_t ns = 0;
	int64_t opwm = SV_WATERMARK_NONE;
	size_t i = 0;
	for (size_t b = 0; b < c->nb; b++) {
		for (; i < c->bend[b]; i++) {
			const rec_t *r = &c->r[i];
			int key = gkey(c, r);
			/* merge every open session of the key that touches
			 * [t, t + gap) */
			rsess_t cur = {.key = key, .start = r->t, .last = r->t};
			bool merged = false;
			for (size_t j = 0; j < ns;) {
				rsess_t *x = &ss[j];
				if (x->key != key || r->t > x->last + c->gap ||
				    r->t + c->gap < x->start) {
					j++;
					continue;
				}
				merged = true;
				if (x->start < cur.start)
					cur.start = x->start;
				if (x->last > cur.last)
					cur.last = x->last;
				memcpy(cur.idx + cur.n, x->idx,
				       x->n * sizeof(size_t));
				cur.n += x->n;
				ss[j] = ss[--ns];
			}
			if (!merged && closed(c, r->t + c->gap, opwm)) {
				ref->late++;
				continue;
			}
			cur.idx[cur.n++] = i;
			ss[ns++] = cur;
		}
		if (c->adv[b] && c->bwm[b] > opwm) {
			opwm = c->bwm[b];
			for (size_t j = 0; j < ns;) {
				rsess_t *x = &ss[j];
				if (!closed(c, x->last + c->gap, opwm)) {
					j++;
					continue;
				}
				ref_emit(c, ref, x->key, x->start,
					 x->last + c->gap, x->idx, x->n);
				ss[j] = ss[--ns];
			}
		}
		ref->keys_after[b] = ns;
	}
	for (size_t j = 0; j < ns; j++)
		ref_emit(c, ref, ss[j].key, ss[j].start, ss[j].last + c->gap,
			 ss[j].idx, ss[j].n);
	free(ss);
}

static void ref_dedup(const tcase_t *c, ref_t *ref)
{
	/* per key (index + 1; 0 for null): remembered time, or none */
	bool have[NKEYS + 1] = {0};
	int64_t first[NKEYS + 1] = {0};
	int64_t opwm = SV_WATERMARK_NONE;
	sv_schema_t *in = input_schema();
	sv_batch_t one;
	sv_batch_init(&one, in);
	size_t i = 0;
	for (size_t b = 0; b < c->nb; b++) {
		for (; i < c->bend[b]; i++) {
			const rec_t *r = &c->r[i];
			int k = gkey(c, r) + 1;
			if (have[k] && closed(c, first[k] + c->within, opwm))
				have[k] = false; /* expired */
			if (have[k] && r->t < first[k] + c->within) {
				ref->dropped++;
				continue;
			}
			add_row(&one, r);
			take_rows(&ref->lines, &one);
			if (!closed(c, r->t + c->within, opwm)) {
				have[k] = true;
				first[k] = r->t;
			}
		}
		if (c->adv[b] && c->bwm[b] > opwm)
			opwm = c->bwm[b];
		uint64_t alive = 0;
		for (int k = 0; k <= NKEYS; k++)
			alive += have[k] &&
				!closed(c, first[k] + c->within, opwm);
		ref->keys_after[b] = alive;
	}
	sv_batch_release(&one);
	sv_schema_destroy(in);
}

/* ---- the comparison ---- */

static void check_case(enum kind kind, uint64_t seed)
{
	tcase_t *c = malloc(sizeof(*c));
	make_case(c, kind, seed);
	ref_t ref = {0};
	if (kind == K_DEDUP)
		ref_dedup(c, &ref);
	else if (kind == K_SESSION)
		ref_sessions(c, &ref);
	else
		ref_panes(c, &ref);
	if (kind != K_DEDUP) /* windows: a multiset */
		qsort(ref.lines.v, ref.lines.n, sizeof(char *), str_cmp);
	for (int pass = 0; pass < (kind == K_DEDUP ? 2 : 3); pass++) {
		run_t *R = malloc(sizeof(*R));
		run_case(c, pass, R);
		if (kind != K_DEDUP)
			qsort(R->lines.v, R->lines.n, sizeof(char *), str_cmp);
		bool ok = R->lines.n == ref.lines.n;
		for (size_t i = 0; ok && i < ref.lines.n; i++)
			ok = !strcmp(R->lines.v[i], ref.lines.v[i]);
		ok = ok && R->st.records_late == ref.late &&
			R->st.records_dropped == ref.dropped;
		size_t bad_b = SIZE_MAX;
		for (size_t b = 0; ok && b < c->nb; b++)
			if (R->keys_after[b] != ref.keys_after[b]) {
				ok = false;
				bad_b = b;
			}
		if (!ok) {
			fprintf(stderr,
				"kind %d seed %llu pass %d: size %lld slide "
				"%lld gap %lld lateness %lld within %lld "
				"disorder %lld keyed %d n %zu batches %zu "
				"snap_at %zu\n",
				kind, (unsigned long long)seed, pass,
				(long long)c->size, (long long)c->slide,
				(long long)c->gap, (long long)c->lateness,
				(long long)c->within, (long long)c->disorder,
				c->keyed, c->n, c->nb, c->snap_at);
			fprintf(stderr, "late %llu/%llu dropped %llu/%llu\n",
				(unsigned long long)R->st.records_late,
				(unsigned long long)ref.late,
				(unsigned long long)R->st.records_dropped,
				(unsigned long long)ref.dropped);
			if (bad_b != SIZE_MAX)
				fprintf(stderr,
					"state keys after batch %zu: %llu, "
					"reference %llu\n",
					bad_b,
					(unsigned long long)R->keys_after[bad_b],
					(unsigned long long)
						ref.keys_after[bad_b]);
			dump("operator", &R->lines, SIZE_MAX);
			dump("reference", &ref.lines, SIZE_MAX);
			fail_msg("mismatch");
		}
		run_release(R);
		free(R);
	}
	lines_free(&ref.lines);
	free(c);
}

#define CASES 1000

static void run_kind(enum kind kind)
{
	/* the reference must not be vacuous: some cases have late records,
	 * multi-window output and drops */
	memset(&g_incr, 0, sizeof(g_incr));
	for (uint64_t seed = 1; seed <= CASES; seed++)
		check_case(kind, seed * 7919 + (uint64_t)kind);
	if (kind == K_DEDUP) /* test_dedup checks its deltas */
		return;
	fprintf(stderr,
		"kind %d incremental: %llu checkpoints, %llu deltas, first "
		"delta left out changed the state %llu of %llu times; "
		"session deltas with merges %llu, with fires %llu\n",
		kind, (unsigned long long)g_incr.checkpoints,
		(unsigned long long)g_incr.deltas,
		(unsigned long long)g_incr.controls,
		(unsigned long long)g_incr.control_trials,
		(unsigned long long)g_incr.merge_deltas,
		(unsigned long long)g_incr.fire_deltas);
	assert_true(g_incr.deltas > 1000);
	assert_true(g_incr.controls > g_incr.control_trials / 4);
	if (kind == K_SESSION) {
		assert_true(g_incr.merge_deltas > 50);
		assert_true(g_incr.fire_deltas > 500);
	}
}

static void test_random_tumbling(void **state)
{
	(void)state;
	run_kind(K_TUMBLING);
}

static void test_random_sliding(void **state)
{
	(void)state;
	run_kind(K_SLIDING);
}

static void test_random_session(void **state)
{
	(void)state;
	run_kind(K_SESSION);
}

static void test_random_dedup(void **state)
{
	(void)state;
	run_kind(K_DEDUP);
}

/* Negative control: the comparison sees a wrong reference. */
static void test_reference_detects_difference(void **state)
{
	(void)state;
	tcase_t *c = malloc(sizeof(*c));
	make_case(c, K_TUMBLING, 12345);
	ref_t ref = {0};
	ref_panes(c, &ref);
	run_t *R = malloc(sizeof(*R));
	run_case(c, 0, R);
	assert_true(ref.lines.n > 0);
	assert_int_equal(R->lines.n, ref.lines.n);
	/* a window one ms longer in the reference: must differ */
	c->size++;
	ref_t other = {0};
	ref_panes(c, &other);
	qsort(R->lines.v, R->lines.n, sizeof(char *), str_cmp);
	qsort(other.lines.v, other.lines.n, sizeof(char *), str_cmp);
	bool same = R->lines.n == other.lines.n;
	for (size_t i = 0; same && i < R->lines.n; i++)
		same = !strcmp(R->lines.v[i], other.lines.v[i]);
	assert_false(same);
	lines_free(&ref.lines);
	lines_free(&other.lines);
	run_release(R);
	free(R);
	free(c);
}

/* The random cases exercise what they claim: late records, drops,
 * multi-record windows, merged sessions. */
static void test_cases_are_not_vacuous(void **state)
{
	(void)state;
	uint64_t late = 0, dropped = 0, multi = 0;
	for (uint64_t seed = 1; seed <= 100; seed++) {
		tcase_t *c = malloc(sizeof(*c));
		ref_t ref = {0};
		make_case(c, K_SESSION, seed * 7919 + K_SESSION);
		ref_sessions(c, &ref);
		late += ref.late;
		for (size_t i = 0; i < ref.lines.n; i++) {
			/* count column after key, start, end */
			const char *p = ref.lines.v[i];
			for (int bars = 0; bars < (c->keyed ? 3 : 2); p++)
				bars += *p == '|';
			multi += atoi(p) > 1;
		}
		lines_free(&ref.lines);
		memset(&ref, 0, sizeof(ref));
		make_case(c, K_DEDUP, seed);
		ref_dedup(c, &ref);
		dropped += ref.dropped;
		lines_free(&ref.lines);
		free(c);
	}
	assert_true(late > 10);
	assert_true(dropped > 100);
	assert_true(multi > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_detects_difference),
		cmocka_unit_test(test_cases_are_not_vacuous),
		cmocka_unit_test(test_random_tumbling),
		cmocka_unit_test(test_random_sliding),
		cmocka_unit_test(test_random_session),
		cmocka_unit_test(test_random_dedup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
