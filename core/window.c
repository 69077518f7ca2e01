/* window.c — keyed tumbling, sliding and session windows.
 *
 * Tumbling and sliding windows keep one state entry per (key, pane), where
 * a pane is a gcd(size, slide)-long slice of time; the state map is keyed
 * by the key tuple plus the pane start, so a record costs one hash lookup
 * and one accumulator update (tumbling windows are single panes). Panes are
 * also listed in time buckets (sorted by pane start, entries in creation
 * order) so that firing walks time rather than the whole map. A sliding
 * window fires by merging the accumulators of its panes, grouped by key.
 *
 * Session windows keep one entry per key holding its open sessions (sorted,
 * disjoint) and a min-heap of (session end, session id) for firing. The heap
 * is lazy: an item may hold an older, smaller end; when it comes due and the
 * session has grown, it is pushed again with the current end. Merged-away
 * sessions leave stale items that are dropped when popped; each key counts
 * the heap items that point at it so it is freed only when none remain.
 * A key entry without sessions is not state: snapshots leave it out.
 *
 * Incremental checkpoints (docs/checkpoints.md): panes are tracked by the
 * state map's dirty list and deleted by one range tombstone. Sessions are
 * tracked per session against a checkpoint epoch (bumped by checkpointed):
 * a session stamped with the current epoch changed since the last
 * checkpoint (its key is in the dirty list); one born before it is in the
 * checkpointed state, so removing it (fired, merged away, or given a new
 * id by a merge) records a tombstone (key, session id). A delta carries
 * the tombstones, then the changed sessions whole; restoring deletes the
 * tombstoned sessions and upserts the changed ones by id.
 *
 * Firing follows Flink's event-time windows with one result per window: a
 * window [start, end) is emitted once, when the watermark reaches
 * end - 1 + allowed_lateness_ms, and its state is freed then. A record is
 * late when every window it belongs to has been emitted. The operator's
 * own watermark is the one of its last advance(); process() never fires.
 * See docs/windows.md for the full rules and the output order. */
#define _GNU_SOURCE
#include "core/window_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN_SNAPSHOT_VERSION 1
#define WIN_SNAPSHOT_KIND 'W'
#define WIN_DELTA_KIND 'w'

/* Window ends are below 2 * SV_TIME_LIMIT and the lateness below
 * SV_TIME_LIMIT, so a watermark at WM_ALL_DUE has emitted every window and
 * one below WM_NOTHING_DUE emits none; between the two, arithmetic on the
 * watermark and window bounds cannot overflow. */
#define WM_ALL_DUE (3 * SV_TIME_LIMIT)
#define WM_NOTHING_DUE (-2 * SV_TIME_LIMIT)

typedef struct pane {
	uint64_t seq; /* creation order: emission order within a window */
	int64_t start; /* pane start */
	sv_acc_t accs[];
} pane_t;

typedef struct bucket {
	int64_t start;
	pane_t **v; /* in creation order */
	size_t n, cap;
} bucket_t;

typedef struct session {
	int64_t start, last; /* first and last event time */
	uint64_t uid;
	uint64_t born; /* epoch its uid was given: older ones are checkpointed */
	uint64_t mod; /* epoch of its last change */
	sv_acc_t accs[];
} session_t;

typedef struct stomb { /* a checkpointed session deleted since */
	uint64_t uid;
	sv_value_t *key; /* nkeys values, strings in the tombstone arena */
} stomb_t;

typedef struct skey {
	uint64_t seq; /* creation order of the key (emission order ties) */
	uint32_t nsess, cap;
	uint32_t nrefs; /* heap items pointing here */
	session_t **sess; /* sorted by start, disjoint */
} skey_t;

typedef struct hitem {
	int64_t end;
	uint64_t uid;
	skey_t *key;
} hitem_t;

typedef struct fired {
	skey_t *key;
	session_t *s;
} fired_t;

typedef struct fent { /* a pane of a sliding window being fired */
	uint64_t hash;
	const sv_value_t *key;
	pane_t *p;
	size_t group;
} fent_t;

typedef struct fgroup {
	size_t first, n;
	uint64_t minseq;
} fgroup_t;

typedef struct winop {
	sv_op_t base;
	sv_wintype_t type;
	int64_t size, slide, pane, gap, lateness;
	bool proc, side_output;
	size_t nkeys;
	int *keycols;
	size_t naggs;
	sv_aggdef_t *aggs;
	size_t accs_size; /* naggs * sizeof(sv_acc_t) */

	sv_statemap_t *map; /* panes: key + pane start; sessions: key */
	bucket_t *buckets;
	size_t nbuckets, bcap;
	hitem_t *heap;
	size_t nheap, hcap;
	uint64_t nsessions;

	int64_t wm; /* watermark of the last advance: fired up to */
	int64_t proc_now; /* processing-time clock (monotonic) */
	uint64_t seq; /* state entry creation counter */
	uint64_t rseq; /* record arrival counter */
	uint64_t uid; /* session id counter */
	int64_t extra_bytes;
	/* incremental checkpoints (panes only): the map tracks the panes
	 * changed since the last confirmed checkpoint; purged_to is the end of
	 * the pane starts purged since then (every pane with start below it
	 * is gone: one range tombstone); incr_base is true once a checkpoint
	 * was confirmed after the last restore */
	int64_t purged_to;
	bool incr_base;
	/* sessions: the checkpoint epoch (see the top) and the tombstones */
	uint64_t epoch;
	stomb_t *tombs;
	size_t ntombs, tombcap;
	sv_arena_t tomb_arena;

	sv_arena_t scratch;
	sv_value_t *keybuf; /* nkeys + 1 */
	fent_t *fents;
	size_t nfents, fcap;
	fgroup_t *groups;
	size_t ngroups, gcap;
	uint32_t *gslots; /* emit_sliding: key -> group + 1 */
	size_t gslot_cap;
	fent_t *fsorted; /* emit_sliding: fents grouped */
	size_t fscap;
	fired_t *fired;
	size_t nfired, firedcap;
	sv_acc_t *merged;
} winop_t;

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Window [.., end) is emitted once wm reaches end - 1 + lateness. */
static inline bool due(const winop_t *op, int64_t end, int64_t wm)
{
	return wm != SV_WATERMARK_NONE && end - 1 + op->lateness <= wm;
}

static void late_row(winop_t *op, sv_op_ctx_t *ctx, sv_batch_t *in, size_t r)
{
	if (ctx->stats)
		ctx->stats->records_late++;
	if (op->side_output && ctx->late)
		sv_batch_copy_row(ctx->late, in, r);
}

static void add_args(winop_t *op, sv_acc_t *accs, const sv_value_t *row,
		     int64_t t)
{
	for (size_t a = 0; a < op->naggs; a++) {
		sv_value_t x;
		sv_agg_arg(&op->aggs[a], row, &op->scratch, &x);
		sv_acc_add(&op->aggs[a], &accs[a], &x, t, op->rseq,
			   &op->extra_bytes);
	}
}

static void release_accs(winop_t *op, sv_acc_t *accs)
{
	for (size_t a = 0; a < op->naggs; a++)
		sv_acc_release(&accs[a], &op->extra_bytes);
}

/* Append one output row; strings are copied into out's arena because the
 * state they point into is freed right after. */
static void emit_row(winop_t *op, sv_batch_t *out, const sv_value_t *key,
		     int64_t start, int64_t end, const sv_acc_t *accs)
{
	sv_rowmeta_t *m;
	sv_value_t *row = sv_batch_add_row(out, &m);
	m->event_ms = end - 1;
	m->partition = -1;
	size_t c = 0;
	for (size_t k = 0; k < op->nkeys; k++, c++) {
		row[c] = key[k];
		if (key[k].type == SV_T_STRING)
			row[c].v.s = sv_batch_strdup(out, key[k].v.s,
						     key[k].len);
	}
	row[c++] = sv_ts(start);
	row[c++] = sv_ts(end);
	for (size_t a = 0; a < op->naggs; a++, c++) {
		sv_acc_result(&op->aggs[a], &accs[a], &row[c]);
		if (row[c].type == SV_T_STRING)
			row[c].v.s = sv_batch_strdup(out, row[c].v.s,
						     row[c].len);
	}
}

/* ---- panes (tumbling, sliding) ---- */

static bucket_t *bucket_get(winop_t *op, int64_t start)
{
	size_t lo = 0, hi = op->nbuckets;
	if (hi && op->buckets[hi - 1].start == start)
		return &op->buckets[hi - 1];
	if (hi && op->buckets[hi - 1].start < start) {
		lo = hi;
	} else {
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (op->buckets[mid].start < start)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < op->nbuckets && op->buckets[lo].start == start)
			return &op->buckets[lo];
	}
	if (op->nbuckets == op->bcap) {
		op->bcap = op->bcap ? op->bcap * 2 : 16;
		op->buckets = sv_realloc(op->buckets,
					 op->bcap * sizeof(bucket_t));
	}
	memmove(&op->buckets[lo + 1], &op->buckets[lo],
		(op->nbuckets - lo) * sizeof(bucket_t));
	op->nbuckets++;
	bucket_t *b = &op->buckets[lo];
	memset(b, 0, sizeof(*b));
	b->start = start;
	return b;
}

static void bucket_push(winop_t *op, bucket_t *b, pane_t *p)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 8;
		op->extra_bytes += (int64_t)((cap - b->cap) * sizeof(pane_t *));
		b->v = sv_realloc(b->v, cap * sizeof(pane_t *));
		b->cap = cap;
	}
	b->v[b->n++] = p;
}

static pane_t *pane_upsert(winop_t *op, int64_t ps)
{
	op->keybuf[op->nkeys] = sv_int(ps);
	uint64_t h = sv_statemap_hash(op->map, op->keybuf);
	bool created;
	pane_t *p = sv_statemap_upsert(op->map, op->keybuf, h, &created);
	if (created) {
		p->seq = op->seq++;
		p->start = ps;
		bucket_push(op, bucket_get(op, ps), p);
	}
	return p;
}

/* Add a record at time t to its pane; false when it is late. */
static bool pane_add(winop_t *op, const sv_value_t *row, int64_t t)
{
	if (op->type == SV_WIN_GLOBAL) { /* every record in window 0 */
		pane_t *p = pane_upsert(op, 0);
		add_args(op, p->accs, row, t);
		sv_statemap_touch(op->map, p);
		return true;
	}
	int64_t last_start = sv_floor_div(t, op->slide) * op->slide;
	if (due(op, last_start + op->size, op->wm))
		return false;
	pane_t *p = pane_upsert(op, sv_floor_div(t, op->pane) * op->pane);
	add_args(op, p->accs, row, t);
	sv_statemap_touch(op->map, p);
	return true;
}

/* Free bucket 0 and its panes. */
static void bucket_purge_first(winop_t *op)
{
	bucket_t *b = &op->buckets[0];
	if (b->start + 1 > op->purged_to)
		op->purged_to = b->start + 1;
	for (size_t i = 0; i < b->n; i++) {
		release_accs(op, b->v[i]->accs);
		sv_statemap_remove(op->map, b->v[i]);
	}
	op->extra_bytes -= (int64_t)(b->cap * sizeof(pane_t *));
	free(b->v);
	op->nbuckets--;
	memmove(&op->buckets[0], &op->buckets[1],
		op->nbuckets * sizeof(bucket_t));
}

static int group_cmp(const void *a, const void *b)
{
	const fgroup_t *x = a, *y = b;
	return x->minseq < y->minseq ? -1 : x->minseq > y->minseq;
}

static bool same_key(const winop_t *op, const fent_t *x, const fent_t *y)
{
	if (x->hash != y->hash)
		return false;
	for (size_t k = 0; k < op->nkeys; k++)
		if (x->key[k].type != y->key[k].type ||
		    !sv_value_equal(&x->key[k], &y->key[k]))
			return false;
	return true;
}

/* Emit the sliding window [s, s + size): merge each key's panes. */
static void emit_sliding(winop_t *op, int64_t s, sv_batch_t *out)
{
	op->nfents = 0;
	for (size_t i = 0; i < op->nbuckets; i++) {
		bucket_t *b = &op->buckets[i];
		if (b->start >= s + op->size)
			break;
		if (b->start < s)
			continue;
		for (size_t j = 0; j < b->n; j++) {
			if (op->nfents == op->fcap) {
				op->fcap = op->fcap ? op->fcap * 2 : 64;
				op->fents = sv_realloc(
					op->fents, op->fcap * sizeof(fent_t));
			}
			fent_t *f = &op->fents[op->nfents++];
			f->p = b->v[j];
			f->key = sv_statemap_key(op->map, f->p);
			/* the entry's own hash covers the pane start too: the
			 * grouping needs a hash of the key columns only */
			f->hash = 0x51ed27a1u;
			for (size_t k = 0; k < op->nkeys; k++)
				f->hash = sv_value_hash(&f->key[k], f->hash);
		}
	}
	/* Group the panes by key with a hash table (linear; sorting them was
	 * 61% of a sliding window's cost in bench_core), then lay each group
	 * out contiguously (counting sort by group). */
	size_t need = 16;
	while (need < 2 * op->nfents)
		need *= 2;
	if (need > op->gslot_cap) {
		free(op->gslots);
		op->gslots = sv_malloc(need * sizeof(uint32_t));
		op->gslot_cap = need;
	}
	memset(op->gslots, 0, need * sizeof(uint32_t));
	size_t mask = need - 1;
	op->ngroups = 0;
	for (size_t i = 0; i < op->nfents; i++) {
		fent_t *f = &op->fents[i];
		size_t h = (size_t)f->hash & mask;
		for (;;) {
			uint32_t v = op->gslots[h];
			if (!v) {
				if (op->ngroups == op->gcap) {
					op->gcap = op->gcap ? op->gcap * 2 : 64;
					op->groups = sv_realloc(
						op->groups,
						op->gcap * sizeof(fgroup_t));
				}
				op->groups[op->ngroups] = (fgroup_t){i, 0,
								     f->p->seq};
				op->gslots[h] = (uint32_t)++op->ngroups;
				f->group = op->ngroups - 1;
				break;
			}
			if (same_key(op, &op->fents[op->groups[v - 1].first],
				     f)) {
				f->group = v - 1;
				break;
			}
			h = (h + 1) & mask;
		}
		fgroup_t *g = &op->groups[f->group];
		g->n++;
		if (f->p->seq < g->minseq)
			g->minseq = f->p->seq;
	}
	if (op->nfents > op->fscap) {
		op->fscap = op->fents ? op->fcap : op->nfents;
		free(op->fsorted);
		op->fsorted = sv_malloc(op->fscap * sizeof(fent_t));
	}
	size_t at = 0;
	for (size_t g = 0; g < op->ngroups; g++) {
		op->groups[g].first = at;
		at += op->groups[g].n;
		op->groups[g].n = 0;
	}
	for (size_t i = 0; i < op->nfents; i++) {
		fgroup_t *g = &op->groups[op->fents[i].group];
		op->fsorted[g->first + g->n++] = op->fents[i];
	}
	fent_t *tmp = op->fents;
	op->fents = op->fsorted;
	op->fsorted = tmp;
	size_t tcap = op->fcap;
	op->fcap = op->fscap;
	op->fscap = tcap;
	if (op->ngroups > 1)
		qsort(op->groups, op->ngroups, sizeof(fgroup_t), group_cmp);
	for (size_t g = 0; g < op->ngroups; g++) {
		fgroup_t *gr = &op->groups[g];
		const fent_t *f = &op->fents[gr->first];
		if (gr->n == 1) {
			emit_row(op, out, f->key, s, s + op->size, f->p->accs);
			continue;
		}
		memset(op->merged, 0, op->accs_size);
		for (size_t i = 0; i < gr->n; i++)
			for (size_t a = 0; a < op->naggs; a++)
				sv_acc_merge(&op->aggs[a], &op->merged[a],
					     &f[i].p->accs[a], false, NULL);
		emit_row(op, out, f->key, s, s + op->size, op->merged);
		for (size_t a = 0; a < op->naggs; a++)
			sv_acc_release(&op->merged[a], NULL);
	}
}

static void fire_panes(winop_t *op, int64_t wm, sv_batch_t *out)
{
	while (op->nbuckets) {
		int64_t b0 = op->buckets[0].start;
		/* smallest window start containing pane b0 ... */
		int64_t s = sv_floor_div(b0 - op->size, op->slide) * op->slide +
			op->slide;
		/* ... among the windows not emitted yet */
		if (op->wm >= WM_ALL_DUE) { /* every window is emitted */
			s = INT64_MAX;
		} else if (op->wm >= WM_NOTHING_DUE) {
			int64_t x = op->wm - op->lateness - op->size + 2;
			int64_t smin = -sv_floor_div(-x, op->slide) * op->slide;
			if (smin > s)
				s = smin;
		}
		if (s > b0) { /* no open window needs this pane */
			bucket_purge_first(op);
			continue;
		}
		if (!due(op, s + op->size, wm))
			break;
		if (op->slide ==
		    op->size) { /* tumbling: the pane is the window */
			bucket_t *b = &op->buckets[0];
			for (size_t i = 0; i < b->n; i++)
				emit_row(op, out,
					 sv_statemap_key(op->map, b->v[i]), s,
					 s + op->size, b->v[i]->accs);
		} else {
			emit_sliding(op, s, out);
		}
		op->wm = s + op->size - 1 + op->lateness;
		while (op->nbuckets) {
			int64_t ls = sv_floor_div(op->buckets[0].start,
						  op->slide) *
				op->slide;
			if (!due(op, ls + op->size, op->wm))
				break;
			bucket_purge_first(op);
		}
	}
}

/* ---- sessions ---- */

static bool hitem_less(const hitem_t *a, const hitem_t *b)
{
	return a->end < b->end || (a->end == b->end && a->uid < b->uid);
}

static void heap_push(winop_t *op, int64_t end, uint64_t uid, skey_t *k)
{
	if (op->nheap == op->hcap) {
		op->hcap = op->hcap ? op->hcap * 2 : 64;
		op->heap = sv_realloc(op->heap, op->hcap * sizeof(hitem_t));
	}
	size_t i = op->nheap++;
	hitem_t it = {end, uid, k};
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!hitem_less(&it, &op->heap[parent]))
			break;
		op->heap[i] = op->heap[parent];
		i = parent;
	}
	op->heap[i] = it;
}

static hitem_t heap_pop(winop_t *op)
{
	hitem_t top = op->heap[0];
	hitem_t last = op->heap[--op->nheap];
	size_t i = 0, n = op->nheap;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && hitem_less(&op->heap[c + 1], &op->heap[c]))
			c++;
		if (!hitem_less(&op->heap[c], &last))
			break;
		op->heap[i] = op->heap[c];
		i = c;
	}
	if (n)
		op->heap[i] = last;
	return top;
}

static session_t *session_new(winop_t *op, int64_t t)
{
	size_t sz = sizeof(session_t) + op->accs_size;
	session_t *s = sv_calloc(1, sz);
	s->start = s->last = t;
	s->uid = ++op->uid;
	s->born = s->mod = op->epoch;
	op->extra_bytes += (int64_t)sz;
	op->nsessions++;
	return s;
}

static void session_free(winop_t *op, session_t *s)
{
	release_accs(op, s->accs);
	op->extra_bytes -= (int64_t)(sizeof(session_t) + op->accs_size);
	op->nsessions--;
	free(s);
}

/* Session s of key k changed (or was created): the next delta has it. */
static void session_changed(winop_t *op, skey_t *k, session_t *s)
{
	s->mod = op->epoch;
	sv_statemap_touch(op->map, k);
}

/* Session s of key k is about to be deleted or to get a new id: if the
 * last checkpoint holds it, the next delta deletes it (a tombstone). */
static void session_tomb(winop_t *op, skey_t *k, const session_t *s)
{
	if (!op->incr_base || s->born >= op->epoch)
		return;
	if (op->ntombs == op->tombcap) {
		op->tombcap = op->tombcap ? op->tombcap * 2 : 64;
		op->tombs = sv_realloc(op->tombs,
				       op->tombcap * sizeof(stomb_t));
	}
	stomb_t *t = &op->tombs[op->ntombs++];
	const sv_value_t *key = sv_statemap_key(op->map, k);
	t->uid = s->uid;
	t->key = sv_arena_alloc(&op->tomb_arena,
				(op->nkeys + 1) * sizeof(sv_value_t));
	for (size_t c = 0; c < op->nkeys; c++) {
		t->key[c] = key[c];
		if (key[c].type == SV_T_STRING)
			t->key[c].v.s = sv_arena_memdup(&op->tomb_arena,
							key[c].v.s, key[c].len);
	}
}

static void tombs_clear(winop_t *op)
{
	op->ntombs = 0;
	sv_arena_reset(&op->tomb_arena);
}

static void skey_insert(winop_t *op, skey_t *k, uint32_t at, session_t *s)
{
	if (k->nsess == k->cap) {
		uint32_t cap = k->cap ? k->cap * 2 : 2;
		op->extra_bytes += (int64_t)((cap - k->cap) *
					     sizeof(session_t *));
		k->sess = sv_realloc(k->sess, cap * sizeof(session_t *));
		k->cap = cap;
	}
	memmove(&k->sess[at + 1], &k->sess[at],
		(k->nsess - at) * sizeof(session_t *));
	k->sess[at] = s;
	k->nsess++;
}

static void skey_remove_at(skey_t *k, uint32_t at)
{
	memmove(&k->sess[at], &k->sess[at + 1],
		(k->nsess - at - 1) * sizeof(session_t *));
	k->nsess--;
}

/* Free the key entry when it holds no session and no heap item. */
static void skey_maybe_free(winop_t *op, skey_t *k)
{
	if (k->nsess || k->nrefs)
		return;
	op->extra_bytes -= (int64_t)(k->cap * sizeof(session_t *));
	free(k->sess);
	sv_statemap_remove(op->map, k);
}

/* Session of (key, t) after merging, or NULL when the record is late. */
static session_t *session_place(winop_t *op, skey_t *k, int64_t t)
{
	/* Flink merges windows that intersect or touch: the record's window
	 * [t, t + gap) joins session [start, last + gap) when
	 * t <= last + gap and t + gap >= start. */
	uint32_t lo = 0;
	while (lo < k->nsess && k->sess[lo]->last + op->gap < t)
		lo++;
	uint32_t hi = lo;
	while (hi < k->nsess && k->sess[hi]->start <= t + op->gap)
		hi++;
	if (lo == hi) {
		if (due(op, t + op->gap, op->wm))
			return NULL;
		session_t *s = session_new(op, t);
		skey_insert(op, k, lo, s);
		heap_push(op, t + op->gap, s->uid, k);
		k->nrefs++;
		return s;
	}
	session_t *dst = k->sess[lo];
	if (t < dst->start)
		dst->start = t;
	if (t > dst->last)
		dst->last = t;
	if (hi - lo > 1) {
		for (uint32_t i = lo + 1; i < hi; i++) {
			session_t *src = k->sess[i];
			for (size_t a = 0; a < op->naggs; a++)
				sv_acc_merge(&op->aggs[a], &dst->accs[a],
					     &src->accs[a], true,
					     &op->extra_bytes);
			if (src->last > dst->last)
				dst->last = src->last;
			session_tomb(op, k, src);
			session_free(op, src);
		}
		for (uint32_t i = lo + 1; i < hi; i++)
			skey_remove_at(k, lo + 1);
		/* a fresh id: the merged sessions' heap items go stale (and a
		 * restore deletes the old id, then adds the new one) */
		session_tomb(op, k, dst);
		dst->uid = ++op->uid;
		dst->born = op->epoch;
		heap_push(op, dst->last + op->gap, dst->uid, k);
		k->nrefs++;
	}
	return dst;
}

static bool session_add(winop_t *op, const sv_value_t *row, int64_t t)
{
	uint64_t h = sv_statemap_hash(op->map, op->keybuf);
	bool created;
	skey_t *k = sv_statemap_upsert(op->map, op->keybuf, h, &created);
	if (created)
		k->seq = op->seq++;
	session_t *s = session_place(op, k, t);
	if (!s) {
		skey_maybe_free(op, k);
		return false;
	}
	add_args(op, s->accs, row, t);
	session_changed(op, k, s);
	return true;
}

static int fired_cmp(const void *a, const void *b)
{
	const fired_t *x = a, *y = b;
	if (x->s->last != y->s->last)
		return x->s->last < y->s->last ? -1 : 1;
	if (x->s->start != y->s->start)
		return x->s->start < y->s->start ? -1 : 1;
	return x->key->seq < y->key->seq ? -1 : x->key->seq > y->key->seq;
}

static void fire_sessions(winop_t *op, int64_t wm, sv_batch_t *out)
{
	op->nfired = 0;
	while (op->nheap && due(op, op->heap[0].end, wm)) {
		hitem_t it = heap_pop(op);
		skey_t *k = it.key;
		session_t *s = NULL;
		for (uint32_t i = 0; i < k->nsess; i++)
			if (k->sess[i]->uid == it.uid)
				s = k->sess[i];
		if (!s) { /* merged away */
			k->nrefs--;
			skey_maybe_free(op, k);
			continue;
		}
		if (!due(op, s->last + op->gap, wm)) { /* grew since */
			heap_push(op, s->last + op->gap, s->uid, k);
			continue;
		}
		if (op->nfired == op->firedcap) {
			op->firedcap = op->firedcap ? op->firedcap * 2 : 64;
			op->fired = sv_realloc(op->fired,
					       op->firedcap * sizeof(fired_t));
		}
		op->fired[op->nfired++] = (fired_t){k, s};
	}
	if (op->nfired > 1) /* fired is NULL until first used */
		qsort(op->fired, op->nfired, sizeof(fired_t), fired_cmp);
	for (size_t i = 0; i < op->nfired; i++) {
		fired_t *f = &op->fired[i];
		emit_row(op, out, sv_statemap_key(op->map, f->key), f->s->start,
			 f->s->last + op->gap, f->s->accs);
	}
	for (size_t i = 0; i < op->nfired; i++) {
		skey_t *k = op->fired[i].key;
		for (uint32_t j = 0; j < k->nsess; j++) {
			if (k->sess[j] == op->fired[i].s) {
				skey_remove_at(k, j);
				break;
			}
		}
		session_tomb(op, k, op->fired[i].s);
		session_free(op, op->fired[i].s);
		k->nrefs--;
		skey_maybe_free(op, k);
	}
	op->nfired = 0;
}

/* ---- operator ---- */

static void fire(winop_t *op, int64_t wm, sv_batch_t *out)
{
	/* a watermark that cannot complete any window is ignored, which also
	 * keeps the window arithmetic in fire_panes from overflowing */
	if (wm < WM_NOTHING_DUE ||
	    (op->wm != SV_WATERMARK_NONE && wm <= op->wm))
		return;
	if (op->type == SV_WIN_SESSION)
		fire_sessions(op, wm, out);
	else
		fire_panes(op, wm, out);
	op->wm = wm;
}

static sv_error_t *win_process(sv_op_t *base, sv_op_ctx_t *ctx, sv_batch_t *in,
			       sv_batch_t *out)
{
	winop_t *op = (winop_t *)base;
	SV_UNUSED(out);
	sv_arena_reset(&op->scratch);
	if (op->proc && ctx->now_ms > op->proc_now)
		op->proc_now = ctx->now_ms;
	for (size_t r = 0; r < in->nrows; r++) {
		const sv_value_t *row = sv_batch_row(in, r);
		int64_t t = op->proc ? op->proc_now : in->meta[r].event_ms;
		if (op->type != SV_WIN_GLOBAL &&
		    (t <= -SV_TIME_LIMIT || t >= SV_TIME_LIMIT)) {
			late_row(op, ctx, in, r);
			continue;
		}
		for (size_t k = 0; k < op->nkeys; k++)
			op->keybuf[k] = row[op->keycols[k]];
		op->rseq++;
		bool ok = op->type == SV_WIN_SESSION ? session_add(op, row, t)
						     : pane_add(op, row, t);
		if (!ok)
			late_row(op, ctx, in, r);
	}
	return NULL;
}

static sv_error_t *win_advance(sv_op_t *base, sv_op_ctx_t *ctx, sv_batch_t *out)
{
	winop_t *op = (winop_t *)base;
	if (op->proc) {
		if (ctx->now_ms > op->proc_now)
			op->proc_now = ctx->now_ms;
		/* processing time: window [s, e) closes when the clock reaches e */
		if (op->proc_now > INT64_MIN)
			fire(op, op->proc_now - 1, out);
		return NULL;
	}
	fire(op, ctx->watermark_ms, out);
	return NULL;
}

static sv_error_t *win_finish(sv_op_t *base, sv_op_ctx_t *ctx, sv_batch_t *out)
{
	SV_UNUSED(ctx);
	fire((winop_t *)base, INT64_MAX, out);
	return NULL;
}

static void win_state_size(sv_op_t *base, uint64_t *bytes, uint64_t *keys)
{
	winop_t *op = (winop_t *)base;
	uint64_t b = sv_statemap_bytes(op->map) + (uint64_t)op->extra_bytes +
		op->bcap * sizeof(bucket_t) + op->hcap * sizeof(hitem_t) +
		op->tombcap * sizeof(stomb_t) + op->tomb_arena.used_bytes;
	if (bytes)
		*bytes = b;
	if (keys)
		*keys = op->type == SV_WIN_SESSION ? op->nsessions
						   : sv_statemap_count(op->map);
}

static void clear_state(winop_t *op)
{
	if (op->type == SV_WIN_SESSION) {
		size_t it = 0;
		skey_t *k;
		while ((k = sv_statemap_next(op->map, &it))) {
			for (uint32_t i = 0; i < k->nsess; i++)
				session_free(op, k->sess[i]);
			free(k->sess);
		}
	} else {
		for (size_t i = 0; i < op->nbuckets; i++) {
			bucket_t *b = &op->buckets[i];
			for (size_t j = 0; j < b->n; j++)
				release_accs(op, b->v[j]->accs);
			free(b->v);
		}
	}
	sv_statemap_clear(op->map);
	op->nbuckets = 0;
	op->nheap = 0;
	op->nsessions = 0;
	op->extra_bytes = 0;
	op->wm = SV_WATERMARK_NONE;
	op->proc_now = INT64_MIN;
	op->seq = op->rseq = op->uid = 0;
	op->purged_to = INT64_MIN;
	op->incr_base = false;
	tombs_clear(op);
	sv_statemap_track(op->map, false);
}

/* Overwrite the u64 written at offset at of b (a count known only after
 * the entries were written). */
static void patch_u64(sv_buf_t *b, size_t at, uint64_t x)
{
	for (int i = 0; i < 8; i++)
		b->data[at + (size_t)i] = (char)(uint8_t)(x >> (8 * i));
}

/* One key of a session snapshot or delta: u64 seq, nkeys values, u32 n,
 * then its sessions (all, or only those changed in the current epoch):
 * i64 start, i64 last, u64 uid, naggs accumulators. Returns n. */
static uint32_t ser_skey(winop_t *op, sv_buf_t *out, skey_t *k,
			 bool changed_only)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < k->nsess; i++)
		n += !changed_only || k->sess[i]->mod == op->epoch;
	if (!n)
		return 0;
	const sv_value_t *key = sv_statemap_key(op->map, k);
	sv_ser_u64(out, k->seq);
	for (size_t c = 0; c < op->nkeys; c++)
		sv_ser_value(out, &key[c]);
	sv_ser_u32(out, n);
	for (uint32_t i = 0; i < k->nsess; i++) {
		session_t *s = k->sess[i];
		if (changed_only && s->mod != op->epoch)
			continue;
		sv_ser_i64(out, s->start);
		sv_ser_i64(out, s->last);
		sv_ser_u64(out, s->uid);
		for (size_t a = 0; a < op->naggs; a++)
			sv_ser_acc(out, &s->accs[a]);
	}
	return n;
}

/* Snapshot layout (little-endian): u8 version, u8 'W', u8 window type,
 * u32 nkeys, u32 naggs, i64 watermark, i64 processing clock, u64 seq,
 * u64 record seq, u64 session uid; then
 *   panes:    u64 nbuckets, each: i64 start, u64 n, each pane: u64 seq,
 *             nkeys values, naggs accumulators;
 *   sessions: u64 nkeys, each: u64 seq, nkeys values, u32 nsessions, each:
 *             i64 start, i64 last, u64 uid, naggs accumulators (keys
 *             without sessions are left out). */
static sv_error_t *win_snapshot(sv_op_t *base, sv_buf_t *out)
{
	winop_t *op = (winop_t *)base;
	sv_ser_u8(out, WIN_SNAPSHOT_VERSION);
	sv_ser_u8(out, WIN_SNAPSHOT_KIND);
	sv_ser_u8(out, (uint8_t)op->type);
	sv_ser_u32(out, (uint32_t)op->nkeys);
	sv_ser_u32(out, (uint32_t)op->naggs);
	sv_ser_i64(out, op->wm);
	sv_ser_i64(out, op->proc_now);
	sv_ser_u64(out, op->seq);
	sv_ser_u64(out, op->rseq);
	sv_ser_u64(out, op->uid);
	if (op->type != SV_WIN_SESSION) {
		sv_ser_u64(out, op->nbuckets);
		for (size_t i = 0; i < op->nbuckets; i++) {
			bucket_t *b = &op->buckets[i];
			sv_ser_i64(out, b->start);
			sv_ser_u64(out, b->n);
			for (size_t j = 0; j < b->n; j++) {
				const sv_value_t *key = sv_statemap_key(
					op->map, b->v[j]);
				sv_ser_u64(out, b->v[j]->seq);
				for (size_t k = 0; k < op->nkeys; k++)
					sv_ser_value(out, &key[k]);
				for (size_t a = 0; a < op->naggs; a++)
					sv_ser_acc(out, &b->v[j]->accs[a]);
			}
		}
		return NULL;
	}
	size_t at = out->len;
	sv_ser_u64(out, 0);
	uint64_t nk = 0;
	size_t it = 0;
	skey_t *k;
	while ((k = sv_statemap_next(op->map, &it)))
		nk += ser_skey(op, out, k, false) > 0;
	patch_u64(out, at, nk);
	return NULL;
}

static void restore_accs(winop_t *op, sv_deser_t *d, sv_acc_t *accs)
{
	for (size_t a = 0; a < op->naggs; a++)
		sv_deser_acc(d, &accs[a], &op->extra_bytes);
}

static sv_error_t *win_restore(sv_op_t *base, const char *data, size_t len)
{
	winop_t *op = (winop_t *)base;
	sv_deser_t d = {.p = data, .len = len};
	clear_state(op);
	uint8_t ver = sv_deser_u8(&d), kind = sv_deser_u8(&d);
	uint8_t type = sv_deser_u8(&d);
	uint32_t nkeys = sv_deser_u32(&d), naggs = sv_deser_u32(&d);
	if (d.bad || ver != WIN_SNAPSHOT_VERSION || kind != WIN_SNAPSHOT_KIND ||
	    type != op->type || nkeys != op->nkeys || naggs != op->naggs)
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "window state snapshot does not match the "
				    "operator (version %u, type %u, %u keys, "
				    "%u aggregates)",
				    ver, type, nkeys, naggs);
	op->wm = sv_deser_i64(&d);
	op->proc_now = sv_deser_i64(&d);
	op->seq = sv_deser_u64(&d);
	op->rseq = sv_deser_u64(&d);
	op->uid = sv_deser_u64(&d);
	/* rebuilding bumps the counters: keep the saved ones */
	uint64_t saved_seq = op->seq, saved_uid = op->uid;
	uint64_t n = sv_deser_u64(&d);
	for (uint64_t i = 0; i < n && !d.bad; i++) {
		if (op->type != SV_WIN_SESSION) {
			int64_t start = sv_deser_i64(&d);
			uint64_t np = sv_deser_u64(&d);
			for (uint64_t j = 0; j < np && !d.bad; j++) {
				uint64_t seq = sv_deser_u64(&d);
				for (size_t k = 0; k < op->nkeys; k++)
					sv_deser_value(&d, &op->keybuf[k]);
				op->keybuf[op->nkeys] = sv_int(start);
				if (d.bad ||
				    sv_statemap_find(
					    op->map, op->keybuf,
					    sv_statemap_hash(op->map,
							     op->keybuf))) {
					d.bad = true; /* or a duplicate pane */
					break;
				}
				pane_t *p = pane_upsert(op, start);
				p->seq = seq;
				restore_accs(op, &d, p->accs);
			}
			continue;
		}
		uint64_t seq = sv_deser_u64(&d);
		for (size_t k = 0; k < op->nkeys; k++)
			sv_deser_value(&d, &op->keybuf[k]);
		uint32_t ns = sv_deser_u32(&d);
		if (d.bad)
			break;
		if (!ns) /* an older snapshot's empty key: not state */
			continue;
		uint64_t h = sv_statemap_hash(op->map, op->keybuf);
		bool created;
		skey_t *k = sv_statemap_upsert(op->map, op->keybuf, h,
					       &created);
		if (!created) { /* a key listed twice */
			d.bad = true;
			break;
		}
		k->seq = seq;
		for (uint32_t j = 0; j < ns && !d.bad; j++) {
			session_t *s = session_new(op, 0);
			s->start = sv_deser_i64(&d);
			s->last = sv_deser_i64(&d);
			s->uid = sv_deser_u64(&d);
			restore_accs(op, &d, s->accs);
			skey_insert(op, k, k->nsess, s);
			heap_push(op, s->last + op->gap, s->uid, k);
			k->nrefs++;
		}
	}
	op->seq = saved_seq;
	op->uid = saved_uid;
	if (d.bad || d.off != d.len) {
		clear_state(op);
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "window state snapshot is truncated or "
				    "corrupt (%zu of %zu bytes read)",
				    d.off, d.len);
	}
	return NULL;
}

/* Session delta, after the header: u64 ntombs, each: nkeys values, u64
 * uid (a session of the last checkpoint to delete); u64 nkeys, each key
 * with changed sessions as in a snapshot, listing only those (whole). */
static void session_delta(winop_t *op, sv_buf_t *out)
{
	sv_ser_u64(out, op->ntombs);
	for (size_t i = 0; i < op->ntombs; i++) {
		for (size_t c = 0; c < op->nkeys; c++)
			sv_ser_value(out, &op->tombs[i].key[c]);
		sv_ser_u64(out, op->tombs[i].uid);
	}
	size_t at = out->len;
	sv_ser_u64(out, 0);
	uint64_t nk = 0;
	size_t n = sv_statemap_dirty_count(op->map);
	for (size_t i = 0; i < n; i++)
		nk += ser_skey(op, out, sv_statemap_dirty_at(op->map, i),
			       true) > 0;
	patch_u64(out, at, nk);
}

/* Delta layout: u8 version, u8 'w', u8 type, u32 nkeys, u32 naggs, the
 * same five counters as a snapshot, then for sessions session_delta's,
 * for panes i64 purged_to (every pane with a start below it is deleted),
 * u64 n, each changed pane: i64 start, u64 seq, nkeys values, naggs
 * accumulators (the whole pane). */
static sv_error_t *win_snapshot_delta(sv_op_t *base, sv_buf_t *out,
				      bool *written)
{
	winop_t *op = (winop_t *)base;
	*written = false;
	if (!op->incr_base)
		return NULL;
	sv_ser_u8(out, WIN_SNAPSHOT_VERSION);
	sv_ser_u8(out, WIN_DELTA_KIND);
	sv_ser_u8(out, (uint8_t)op->type);
	sv_ser_u32(out, (uint32_t)op->nkeys);
	sv_ser_u32(out, (uint32_t)op->naggs);
	sv_ser_i64(out, op->wm);
	sv_ser_i64(out, op->proc_now);
	sv_ser_u64(out, op->seq);
	sv_ser_u64(out, op->rseq);
	sv_ser_u64(out, op->uid);
	if (op->type == SV_WIN_SESSION) {
		session_delta(op, out);
		*written = true;
		return NULL;
	}
	sv_ser_i64(out, op->purged_to);
	size_t n = sv_statemap_dirty_count(op->map);
	sv_ser_u64(out, n);
	for (size_t i = 0; i < n; i++) {
		pane_t *p = sv_statemap_dirty_at(op->map, i);
		const sv_value_t *key = sv_statemap_key(op->map, p);
		sv_ser_i64(out, p->start);
		sv_ser_u64(out, p->seq);
		for (size_t k = 0; k < op->nkeys; k++)
			sv_ser_value(out, &key[k]);
		for (size_t a = 0; a < op->naggs; a++)
			sv_ser_acc(out, &p->accs[a]);
	}
	*written = true;
	return NULL;
}

static int pane_seq_cmp(const void *a, const void *b)
{
	const pane_t *x = *(pane_t *const *)a, *y = *(pane_t *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The session of k with id uid, or NULL; *at its index. */
static session_t *skey_find(skey_t *k, uint64_t uid, uint32_t *at)
{
	for (uint32_t i = 0; i < k->nsess; i++)
		if (k->sess[i]->uid == uid) {
			*at = i;
			return k->sess[i];
		}
	return NULL;
}

/* Apply the body of a session delta (after the header). False when it is
 * corrupt or does not fit the state (a tombstone of a session the state
 * does not hold: a delta of another chain, or one left out). */
static bool session_restore_delta(winop_t *op, sv_deser_t *d)
{
	uint64_t nt = sv_deser_u64(d);
	for (uint64_t i = 0; i < nt && !d->bad; i++) {
		for (size_t c = 0; c < op->nkeys; c++)
			sv_deser_value(d, &op->keybuf[c]);
		uint64_t uid = sv_deser_u64(d);
		if (d->bad)
			return false;
		skey_t *k = sv_statemap_find(
			op->map, op->keybuf,
			sv_statemap_hash(op->map, op->keybuf));
		uint32_t at;
		session_t *s = k ? skey_find(k, uid, &at) : NULL;
		if (!s)
			return false;
		skey_remove_at(k, at);
		session_free(op, s);
		skey_maybe_free(op, k);
	}
	uint64_t nk = sv_deser_u64(d);
	for (uint64_t i = 0; i < nk && !d->bad; i++) {
		uint64_t seq = sv_deser_u64(d);
		for (size_t c = 0; c < op->nkeys; c++)
			sv_deser_value(d, &op->keybuf[c]);
		uint32_t ns = sv_deser_u32(d);
		if (d->bad || !ns) /* a key is listed with its changes */
			return false;
		uint64_t h = sv_statemap_hash(op->map, op->keybuf);
		skey_t *k = sv_statemap_upsert(op->map, op->keybuf, h, NULL);
		k->seq = seq;
		for (uint32_t j = 0; j < ns && !d->bad; j++) {
			int64_t start = sv_deser_i64(d), last = sv_deser_i64(d);
			uint64_t uid = sv_deser_u64(d);
			/* times outside (-2^61, 2^61) never open a session */
			if (d->bad || start > last || start <= -SV_TIME_LIMIT ||
			    last >= SV_TIME_LIMIT)
				return false;
			uint32_t at;
			session_t *s = skey_find(k, uid, &at);
			if (s) { /* grew: its heap item's end is still below */
				release_accs(op, s->accs);
				memset(s->accs, 0, op->accs_size);
			} else {
				s = session_new(op, 0);
				s->uid = uid;
				at = 0;
				while (at < k->nsess &&
				       k->sess[at]->start < start)
					at++;
				skey_insert(op, k, at, s);
				heap_push(op, last + op->gap, uid, k);
				k->nrefs++;
			}
			s->start = start;
			s->last = last;
			restore_accs(op, d, s->accs);
		}
	}
	return !d->bad;
}

static sv_error_t *win_restore_delta(sv_op_t *base, const char *data,
				     size_t len)
{
	winop_t *op = (winop_t *)base;
	sv_deser_t d = {.p = data, .len = len};
	uint8_t ver = sv_deser_u8(&d), kind = sv_deser_u8(&d);
	uint8_t type = sv_deser_u8(&d);
	uint32_t nkeys = sv_deser_u32(&d), naggs = sv_deser_u32(&d);
	if (d.bad || ver != WIN_SNAPSHOT_VERSION || kind != WIN_DELTA_KIND ||
	    type != op->type || nkeys != op->nkeys || naggs != op->naggs)
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "window state delta does not match the "
				    "operator (version %u, kind %u, type %u, "
				    "%u keys, %u aggregates)",
				    ver, kind, type, nkeys, naggs);
	op->wm = sv_deser_i64(&d);
	op->proc_now = sv_deser_i64(&d);
	uint64_t seq = sv_deser_u64(&d);
	op->rseq = sv_deser_u64(&d);
	op->uid = sv_deser_u64(&d);
	if (op->type == SV_WIN_SESSION) {
		uint64_t uid = op->uid; /* session_new counts */
		bool ok = session_restore_delta(op, &d);
		op->seq = seq;
		op->uid = uid;
		if (!ok || d.off != d.len) {
			clear_state(op);
			return sv_error_new(SV_ERR_CHECKPOINT,
					    "window state delta is truncated, "
					    "corrupt or not of this state (a "
					    "session it deletes is missing; "
					    "%zu of %zu bytes read)",
					    d.off, d.len);
		}
		op->incr_base = false;
		tombs_clear(op);
		sv_statemap_track(op->map, false);
		return NULL;
	}
	int64_t purged_to = sv_deser_i64(&d);
	while (!d.bad && op->nbuckets && op->buckets[0].start < purged_to)
		bucket_purge_first(op);
	uint64_t n = sv_deser_u64(&d);
	for (uint64_t i = 0; i < n && !d.bad; i++) {
		int64_t start = sv_deser_i64(&d);
		uint64_t pseq = sv_deser_u64(&d);
		for (size_t k = 0; k < op->nkeys; k++)
			sv_deser_value(&d, &op->keybuf[k]);
		if (d.bad)
			break;
		pane_t *p = pane_upsert(op, start);
		release_accs(op, p->accs);
		memset(p->accs, 0, op->accs_size);
		p->seq = pseq;
		restore_accs(op, &d, p->accs);
	}
	op->seq = seq;
	if (d.bad || d.off != d.len) {
		clear_state(op);
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "window state delta is truncated or "
				    "corrupt (%zu of %zu bytes read)",
				    d.off, d.len);
	}
	/* panes created by the delta were appended in change order: put every
	 * bucket back in creation order (the emission order) */
	for (size_t i = 0; i < op->nbuckets; i++) {
		bucket_t *b = &op->buckets[i];
		for (size_t j = 1; j < b->n; j++)
			if (b->v[j - 1]->seq > b->v[j]->seq) {
				qsort(b->v, b->n, sizeof(pane_t *),
				      pane_seq_cmp);
				break;
			}
	}
	op->purged_to = INT64_MIN;
	op->incr_base = false;
	sv_statemap_track(op->map, false);
	return NULL;
}

static void win_checkpointed(sv_op_t *base)
{
	winop_t *op = (winop_t *)base;
	sv_statemap_dirty_clear(op->map);
	sv_statemap_track(op->map, true);
	op->purged_to = INT64_MIN;
	op->incr_base = true;
	/* sessions: everything held now is checkpointed */
	op->epoch++;
	tombs_clear(op);
}

static void win_destroy(sv_op_t *base)
{
	winop_t *op = (winop_t *)base;
	if (!op)
		return;
	clear_state(op);
	sv_statemap_destroy(op->map);
	for (size_t a = 0; a < op->naggs; a++)
		sv_aggdef_release(&op->aggs[a]);
	free(op->aggs);
	free(op->keycols);
	free(op->keybuf);
	free(op->buckets);
	free(op->heap);
	free(op->fents);
	free(op->fsorted);
	free(op->gslots);
	free(op->groups);
	free(op->fired);
	free(op->merged);
	free(op->tombs);
	sv_arena_release(&op->tomb_arena);
	sv_arena_release(&op->scratch);
	sv_schema_destroy(op->base.out_schema);
	free(op);
}

static const sv_op_ops_t window_ops = {
	.name = "window",
	.process = win_process,
	.advance = win_advance,
	.finish = win_finish,
	.state_size = win_state_size,
	.snapshot = win_snapshot,
	.restore = win_restore,
	.snapshot_delta = win_snapshot_delta,
	.restore_delta = win_restore_delta,
	.checkpointed = win_checkpointed,
	.destroy = win_destroy,
};

/* ---- construction ---- */

static sv_error_t *check_ms(const char *field, int64_t v, bool zero_ok)
{
	if (v < 0 || (!zero_ok && v == 0) || v >= SV_TIME_LIMIT)
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "window '%s' must be %s and below 2^61, "
				     "got %lld",
				     field, zero_ok ? ">= 0" : "> 0",
				     (long long)v),
			field);
	return NULL;
}

static sv_error_t *build(winop_t *op, const sv_schema_t *in,
			 const sv_window_spec_t *spec)
{
	sv_error_t *err = NULL;
	switch (spec->type) {
	case SV_WIN_TUMBLING:
		if ((err = check_ms("size_ms", spec->size_ms, false)))
			return err;
		op->size = op->slide = op->pane = spec->size_ms;
		break;
	case SV_WIN_SLIDING:
		if ((err = check_ms("size_ms", spec->size_ms, false)) ||
		    (err = check_ms("slide_ms", spec->slide_ms, false)))
			return err;
		if (spec->slide_ms > spec->size_ms)
			return sv_error_set_field(
				sv_error_new(
					SV_ERR_SUBMISSION,
					"window 'slide_ms' (%lld) must not "
					"exceed 'size_ms' (%lld)",
					(long long)spec->slide_ms,
					(long long)spec->size_ms),
				"slide_ms");
		op->size = spec->size_ms;
		op->slide = spec->slide_ms;
		op->pane = gcd64(op->size, op->slide);
		break;
	case SV_WIN_SESSION:
		if ((err = check_ms("gap_ms", spec->gap_ms, false)))
			return err;
		op->gap = spec->gap_ms;
		break;
	case SV_WIN_GLOBAL:
		op->size = op->slide = op->pane = SV_TIME_LIMIT;
		break;
	default:
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "window 'type' must be tumbling, sliding "
				     "or session"),
			"type");
	}
	op->type = spec->type;
	if ((err = check_ms("allowed_lateness_ms", spec->allowed_lateness_ms,
			    true)))
		return err;
	op->proc = spec->processing_time;
	/* like Flink, lateness only applies to event time */
	op->lateness = op->proc ? 0 : spec->allowed_lateness_ms;
	op->side_output = spec->late_side_output;

	sv_schema_t *os = sv_schema_new();
	op->base.out_schema = os;
	op->nkeys = spec->nkeys;
	op->keycols = sv_calloc(spec->nkeys + 1, sizeof(int));
	for (size_t k = 0; k < spec->nkeys; k++) {
		int c = sv_schema_find(in, spec->keys[k]);
		if (c < 0)
			return sv_error_set_field(
				sv_error_new(SV_ERR_SUBMISSION,
					     "window key '%s' is not a column "
					     "of the input",
					     spec->keys[k]),
				"key");
		op->keycols[k] = c;
		if (sv_schema_add(os, in->fields[c].name, in->fields[c].type,
				  in->fields[c].nullable) < 0)
			return sv_error_set_field(
				sv_error_new(SV_ERR_SUBMISSION,
					     "window key '%s' is listed twice",
					     spec->keys[k]),
				"key");
	}
	static const char *const bounds[] = {"window_start", "window_end"};
	for (size_t i = 0; i < 2; i++)
		if (sv_schema_add(os, bounds[i], SV_T_TIMESTAMP, false) < 0)
			return sv_error_set_field(
				sv_error_new(SV_ERR_SUBMISSION,
					     "window key '%s' collides with "
					     "the output column of that name",
					     bounds[i]),
				"key");
	op->naggs = spec->naggs;
	op->aggs = sv_calloc(spec->naggs + 1, sizeof(sv_aggdef_t));
	for (size_t a = 0; a < spec->naggs; a++) {
		char field[256];
		snprintf(field, sizeof(field), "aggregates.%s",
			 spec->agg_names[a]);
		err = sv_aggdef_parse(&op->aggs[a], spec->agg_names[a],
				      spec->agg_exprs[a], in);
		if (err) {
			op->naggs = a;
			return err->field ? err
					  : sv_error_set_field(err, field);
		}
		if (sv_schema_add(os, spec->agg_names[a], op->aggs[a].out_type,
				  op->aggs[a].fn != SV_AGG_COUNT_ROWS &&
					  op->aggs[a].fn != SV_AGG_COUNT &&
					  op->aggs[a].fn !=
						  SV_AGG_COUNT_DISTINCT) < 0) {
			op->naggs = a + 1;
			return sv_error_set_field(
				sv_error_new(SV_ERR_SUBMISSION,
					     "aggregate '%s' collides with "
					     "another output column",
					     spec->agg_names[a]),
				field);
		}
	}
	op->accs_size = op->naggs * sizeof(sv_acc_t);
	op->merged = sv_calloc(op->naggs + 1, sizeof(sv_acc_t));
	op->keybuf = sv_calloc(op->nkeys + 1, sizeof(sv_value_t));
	if (op->type == SV_WIN_SESSION)
		op->map = sv_statemap_new(op->nkeys, sizeof(skey_t));
	else
		op->map = sv_statemap_new(op->nkeys + 1,
					  sizeof(pane_t) + op->accs_size);
	return NULL;
}

sv_error_t *sv_op_window_new(const sv_schema_t *in,
			     const sv_window_spec_t *spec, sv_op_t **out)
{
	winop_t *op = sv_calloc(1, sizeof(*op));
	op->base.ops = &window_ops;
	op->base.in_schema = in;
	op->wm = SV_WATERMARK_NONE;
	op->proc_now = INT64_MIN;
	op->epoch = 1;
	sv_arena_init(&op->scratch);
	sv_arena_init(&op->tomb_arena);
	sv_error_t *err = build(op, in, spec);
	if (err) {
		if (!op->map)
			op->map = sv_statemap_new(0, 0);
		win_destroy(&op->base);
		*out = NULL;
		return err;
	}
	*out = &op->base;
	return NULL;
}
