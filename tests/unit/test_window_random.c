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
 * runs must match the reference. */
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

static void run_case(const tcase_t *c, bool restore, run_t *R)
{
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
	for (int pass = 0; pass < 2; pass++) {
		run_t *R = malloc(sizeof(*R));
		run_case(c, pass == 1, R);
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
	for (uint64_t seed = 1; seed <= CASES; seed++)
		check_case(kind, seed * 7919 + (uint64_t)kind);
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
	run_case(c, false, R);
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
