/* join_lookup.c — the lookup join: a stream (left) joined with a versioned
 * table (right).
 *
 * The right input is a changelog: each row sets its key's value from its
 * event time on, and a row flagged SV_ROW_DELETE (a tombstone) removes the
 * key from its time on. The table keeps, per key, its versions sorted by
 * effective time. A left row at time l joins the version of its key whose
 * effective time is the latest <= l (none, or a tombstone: no match).
 *
 * Event time (Flink's temporal join): a left row can be answered once the
 * table's watermark has reached l, since then no version <= l is still to
 * come; until then it waits in a min-heap by time (or, with retention_ms,
 * until the left watermark reaches l + retention_ms). A table row that
 * arrives at or behind the table's watermark w is not dropped: it takes
 * effect at w + 1, the earliest time no left row has been answered for.
 * Versions are pruned at the horizon H = min(left watermark, table
 * watermark): every left row still to be answered has l > H, so of the
 * versions <= H only the latest is needed, and not even that one when it
 * is a tombstone; a key with no version left goes. Pruning is driven by a
 * lazy min-heap of (due, key), due being the time at which the key's
 * oldest version can go.
 *
 * The rows one advance releases (all that waited for the table: on W4
 * the auctions read before the whole table, up to the budget's share for
 * waiting rows) go out in pieces when the pipeline asks
 * (ctx->advance_rows, sv_pipeline_advance_each): release stops there and
 * the next advance goes on; pruning waits for the last piece, and the
 * output watermark stays below the rows still to come.
 *
 * Processing time (Kafka Streams' KStream-KTable join): the table is the
 * latest value per key in arrival order and a left row is answered at once.
 *
 * A version keeps only the join's take columns of its row (trow_t), as the
 * bytes a snapshot holds (a lookup reads them back as cells): the key is
 * the statemap's, and nothing else of a table row is ever read, so the
 * other columns would only cost memory (W4's persons table: the id and the
 * time of every person) and snapshot bytes. A key's single version sits
 * in its map entry; a second moves them into an array. Snapshots hold the
 * same cut rows; those of the earlier format (every right column, kinds
 * 'L'/'l') still restore, cut on the way in.
 * See docs/joins.md. */
#include "core/join_int.h"

#include <stdlib.h>
#include <string.h>

#define LOOKUP_SNAPSHOT_KIND 'T' /* versions hold the take columns */
#define LOOKUP_DELTA_KIND 't'
#define LOOKUP_SNAPSHOT_KIND_ALL 'L' /* earlier: every right column */
#define LOOKUP_DELTA_KIND_ALL 'l'

/* A version's row: the take columns in take order (jb.take_src), each as
 * a snapshot writes it (sv_ser_value: a type byte, then 8 bytes, a u32
 * length and the bytes, or nothing for a null), one allocation. W4's
 * person (three strings): 50 bytes, not 83 as cells and bytes; a lookup
 * reads the cells back (table_get), a snapshot copies the bytes. */
typedef struct trow {
	uint32_t bytes; /* size of the allocation */
	uint32_t len; /* of ser */
	char ser[];
} trow_t;

typedef struct tver {
	int64_t t; /* effective time */
	trow_t *row; /* NULL: tombstone */
} tver_t;

/* A key's versions, sorted by t, distinct t (kv()): while it has room
 * for one (cap <= 1, most keys) the version is in place, in the map's
 * entry, else an array of cap. */
typedef struct tkey {
	union {
		tver_t one; /* cap <= 1 */
		tver_t *arr; /* cap >= 2 */
	} u;
	uint32_t n, cap;
	uint32_t nrefs; /* prune heap items pointing here */
	int64_t queued; /* smallest due queued, or NONE */
} tkey_t;

static inline tver_t *kv(const tkey_t *k)
{
	return k->cap <= 1 ? (tver_t *)&k->u.one : k->u.arr;
}

/* Bytes of k's own version array (none while in place). */
static inline uint64_t kv_bytes(const tkey_t *k)
{
	return k->cap >= 2 ? (uint64_t)k->cap * sizeof(tver_t) : 0;
}

typedef struct titem {
	int64_t due;
	tkey_t *key;
} titem_t;

typedef struct pitem {
	int64_t t;
	uint64_t seq;
	sv_jrow_t *row;
} pitem_t;

typedef struct lookupjoin {
	sv_joinbase_t jb;
	bool proc;
	int64_t retention;
	sv_statemap_t *table; /* key -> tkey_t */
	uint64_t live_keys; /* keys with at least one version */
	uint64_t versions;
	uint64_t table_bytes; /* version rows and arrays */
	titem_t *prune;
	size_t nprune, prcap;
	pitem_t *pending; /* event time: left rows waiting, by (t, seq) */
	size_t npending, pcap;
	uint64_t pending_bytes;
	int64_t wl, wr; /* watermarks of the last advance */
	uint64_t seq;
	struct lrun *run; /* left rows being answered (scratch) */
	sv_buf_t rowbuf; /* trow_new's scratch */
	sv_value_t *cells; /* trow_cells' scratch: ntake cells */
	bool more; /* the last advance stopped at its piece's rows */
	/* incremental checkpoints: the table's changed keys are its
	 * statemap's dirty list; removed keys since the last confirmed
	 * checkpoint are copied here (a row of the key's values) */
	bool incr_base;
	sv_jrow_t **removed;
	size_t nremoved, rmcap;
} lookupjoin_t;

/* ---- heaps ---- */

static void prune_push(lookupjoin_t *op, int64_t due, tkey_t *k)
{
	if (op->nprune == op->prcap) {
		op->prcap = op->prcap ? op->prcap * 2 : 64;
		op->prune = sv_realloc(op->prune, op->prcap * sizeof(titem_t));
	}
	size_t i = op->nprune++;
	while (i > 0 && op->prune[(i - 1) / 2].due > due) {
		op->prune[i] = op->prune[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	op->prune[i] = (titem_t){due, k};
	k->nrefs++;
}

static titem_t prune_pop(lookupjoin_t *op)
{
	titem_t top = op->prune[0];
	titem_t last = op->prune[--op->nprune];
	size_t i = 0, n = op->nprune;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && op->prune[c + 1].due < op->prune[c].due)
			c++;
		if (op->prune[c].due >= last.due)
			break;
		op->prune[i] = op->prune[c];
		i = c;
	}
	if (n)
		op->prune[i] = last;
	return top;
}

static bool pless(const pitem_t *a, const pitem_t *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void pending_push(lookupjoin_t *op, pitem_t it)
{
	if (op->npending == op->pcap) {
		op->pcap = op->pcap ? op->pcap * 2 : 64;
		op->pending = sv_realloc(op->pending,
					 op->pcap * sizeof(pitem_t));
	}
	size_t i = op->npending++;
	while (i > 0 && pless(&it, &op->pending[(i - 1) / 2])) {
		op->pending[i] = op->pending[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	op->pending[i] = it;
}

static pitem_t pending_pop(lookupjoin_t *op)
{
	pitem_t top = op->pending[0];
	pitem_t last = op->pending[--op->npending];
	size_t i = 0, n = op->npending;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && pless(&op->pending[c + 1], &op->pending[c]))
			c++;
		if (!pless(&op->pending[c], &last))
			break;
		op->pending[i] = op->pending[c];
		i = c;
	}
	if (n)
		op->pending[i] = last;
	return top;
}

/* ---- the table ---- */

/* A version's row from row: take column i is row[src[i]] (src NULL:
 * row[i], a row already cut). */
static trow_t *trow_new(lookupjoin_t *op, const sv_value_t *row, const int *src)
{
	sv_buf_t *b = &op->rowbuf;
	sv_buf_reset(b);
	for (size_t i = 0; i < op->jb.ntake; i++)
		sv_ser_value(b, &row[src ? (size_t)src[i] : i]);
	size_t size = sizeof(trow_t) + b->len;
	trow_t *r = sv_malloc(size);
	r->bytes = (uint32_t)size;
	r->len = (uint32_t)b->len;
	if (b->len)
		memcpy(r->ser, b->data, b->len);
	return r;
}

/* The take columns of r as cells (strings pointing into r), in the
 * operator's scratch row: valid until the next call. */
static const sv_value_t *trow_cells(lookupjoin_t *op, const trow_t *r)
{
	sv_deser_t d = {.p = r->ser, .len = r->len};
	for (size_t i = 0; i < op->jb.ntake; i++)
		sv_deser_value(&d, &op->cells[i]);
	return op->cells;
}

static void ver_free(lookupjoin_t *op, tver_t *v)
{
	if (v->row) {
		op->table_bytes -= v->row->bytes;
		free(v->row);
	}
	op->versions--;
}

/* When the key's oldest version can go: a tombstone at its own time, a
 * value once the next version's time is behind the horizon. */
static int64_t key_due(const tkey_t *k)
{
	if (k->n == 0)
		return SV_WATERMARK_NONE;
	if (!kv(k)[0].row)
		return kv(k)[0].t;
	return k->n >= 2 ? kv(k)[1].t : SV_WATERMARK_NONE;
}

static void schedule(lookupjoin_t *op, tkey_t *k)
{
	if (op->proc)
		return;
	int64_t due = key_due(k);
	if (due == SV_WATERMARK_NONE)
		return;
	if (k->queued != SV_WATERMARK_NONE && k->queued <= due)
		return;
	k->queued = due;
	prune_push(op, due, k);
}

/* Drop the versions of k no left row at a time > h can need. */
static void prune_key(lookupjoin_t *op, tkey_t *k, int64_t h)
{
	uint32_t drop = 0;
	while (drop + 1 < k->n && kv(k)[drop + 1].t <= h)
		drop++;
	if (drop < k->n && !kv(k)[drop].row && kv(k)[drop].t <= h)
		drop++;
	if (!drop)
		return;
	for (uint32_t i = 0; i < drop; i++)
		ver_free(op, &kv(k)[i]);
	memmove(kv(k), kv(k) + drop, (k->n - drop) * sizeof(tver_t));
	k->n -= drop;
	sv_statemap_touch(op->table, k);
	if (k->n == 0)
		op->live_keys--;
}

static void key_forget(lookupjoin_t *op, tkey_t *k)
{
	if (sv_statemap_tracking(op->table)) {
		/* the statemap does not record removals: the next delta must
		 * delete the key */
		if (op->nremoved == op->rmcap) {
			op->rmcap = op->rmcap ? op->rmcap * 2 : 16;
			op->removed = sv_realloc(
				op->removed, op->rmcap * sizeof(*op->removed));
		}
		op->removed[op->nremoved++] = sv_jrow_new(
			sv_statemap_key(op->table, k), op->jb.nkeys);
	}
	op->table_bytes -= kv_bytes(k);
	if (k->cap >= 2)
		free(k->u.arr);
	sv_statemap_remove(op->table, k);
}

static void prune_to(lookupjoin_t *op, int64_t h)
{
	while (op->nprune && op->prune[0].due <= h) {
		titem_t it = prune_pop(op);
		tkey_t *k = it.key;
		k->nrefs--;
		if (k->queued == it.due)
			k->queued = SV_WATERMARK_NONE;
		prune_key(op, k, h);
		schedule(op, k);
		if (k->n == 0 && k->nrefs == 0)
			key_forget(op, k);
	}
}

/* Room for one more version: the first in place (most keys keep one: no
 * allocation of its own, 3.2 MB of W4's 100,000 persons), then an array
 * that doubles. */
static void kv_grow(lookupjoin_t *op, tkey_t *k)
{
	if (k->cap == 0) {
		k->cap = 1;
		return;
	}
	uint32_t cap = k->cap * 2;
	op->table_bytes -= kv_bytes(k);
	if (k->cap == 1) {
		tver_t one = k->u.one;
		k->u.arr = sv_malloc(cap * sizeof(tver_t));
		k->u.arr[0] = one;
	} else {
		k->u.arr = sv_realloc(k->u.arr, cap * sizeof(tver_t));
	}
	k->cap = cap;
	op->table_bytes += kv_bytes(k);
}

/* Set the key in keybuf to jr (trow_new's, now the table's; NULL:
 * tombstone) from time t on. */
static void table_put(lookupjoin_t *op, trow_t *jr, int64_t t)
{
	uint64_t h = sv_statemap_hash(op->table, op->jb.keybuf);
	bool created;
	tkey_t *k = sv_statemap_upsert(op->table, op->jb.keybuf, h, &created);
	if (created)
		k->queued = SV_WATERMARK_NONE;
	else
		sv_statemap_touch(op->table, k);
	if (op->proc) {
		/* the latest value only; a tombstone removes the key */
		if (!created) {
			ver_free(op, &kv(k)[0]);
			k->n = 0;
			op->live_keys--;
		}
		if (!jr) {
			key_forget(op, k);
			return;
		}
	}
	uint32_t i = k->n;
	while (i > 0 && kv(k)[i - 1].t > t)
		i--;
	if (jr)
		op->table_bytes += jr->bytes;
	if (i > 0 && kv(k)[i - 1].t == t) {
		/* the later arrival of one time wins */
		ver_free(op, &kv(k)[i - 1]);
		kv(k)[i - 1] = (tver_t){t, jr};
		op->versions++;
		schedule(op, k);
		return;
	}
	if (k->n == k->cap)
		kv_grow(op, k);
	memmove(kv(k) + i + 1, kv(k) + i, (k->n - i) * sizeof(tver_t));
	kv(k)[i] = (tver_t){t, jr};
	if (k->n++ == 0)
		op->live_keys++;
	op->versions++;
	schedule(op, k);
}

/* The take columns of the key in keybuf (hash h) at time t, or NULL. */
static const sv_value_t *table_get(lookupjoin_t *op, int64_t t, uint64_t h)
{
	tkey_t *k = sv_statemap_find(op->table, op->jb.keybuf, h);
	if (!k || k->n == 0)
		return NULL;
	if (op->proc)
		return kv(k)[0].row ? trow_cells(op, kv(k)[0].row) : NULL;
	uint32_t lo = 0, hi = k->n; /* first version with t > t */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (kv(k)[mid].t <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || !kv(k)[lo - 1].row)
		return NULL;
	return trow_cells(op, kv(k)[lo - 1].row);
}

/* ---- the operator ---- */

/* ---- answering left rows, a run at a time ----
 *
 * A large table misses the cache on every probe (its slot, then its
 * entry), so a run of left rows is answered in two passes: hash every key
 * first, then probe each while the slot of the row PF_SLOT ahead and the
 * entry of the row PF_ENTRY ahead are being fetched. */

#define PF_SLOT 16
#define PF_ENTRY 8
#define NO_KEY \
	UINT64_MAX /* in hashes: a null key (a real hash of it is
			   * only a wasted prefetch) */

typedef struct lrun {
	const sv_value_t **rows;
	int64_t *t;
	uint64_t *h;
	sv_jrow_t **own; /* a waiting row to free once answered, or NULL */
	size_t n, cap;
} lrun_t;

static void run_add(lrun_t *run, const sv_value_t *row, int64_t t,
		    sv_jrow_t *own)
{
	if (run->n == run->cap) {
		run->cap = run->cap ? run->cap * 2 : 256;
		run->rows = sv_realloc(run->rows,
				       run->cap * sizeof(*run->rows));
		run->t = sv_realloc(run->t, run->cap * sizeof(*run->t));
		run->h = sv_realloc(run->h, run->cap * sizeof(*run->h));
		run->own = sv_realloc(run->own, run->cap * sizeof(*run->own));
	}
	run->rows[run->n] = row;
	run->t[run->n] = t;
	run->own[run->n++] = own;
}

static void run_destroy(lrun_t *run)
{
	if (!run)
		return;
	free(run->rows);
	free(run->t);
	free(run->h);
	free(run->own);
	free(run);
}

static void answer_run(lookupjoin_t *op, lrun_t *run, sv_batch_t *out)
{
	sv_joinbase_t *jb = &op->jb;
	for (size_t i = 0; i < run->n; i++)
		run->h[i] = sv_join_key(jb, run->rows[i], jb->lkeys)
			? sv_statemap_hash(op->table, jb->keybuf)
			: NO_KEY;
	for (size_t i = 0; i < run->n; i++) {
		if (i + PF_SLOT < run->n && run->h[i + PF_SLOT] != NO_KEY)
			sv_statemap_prefetch(op->table, run->h[i + PF_SLOT], 0);
		if (i + PF_ENTRY < run->n && run->h[i + PF_ENTRY] != NO_KEY)
			sv_statemap_prefetch(op->table, run->h[i + PF_ENTRY],
					     1);
		const sv_value_t *r = NULL;
		if (run->h[i] != NO_KEY) {
			sv_join_key(jb, run->rows[i], jb->lkeys);
			r = table_get(op, run->t[i], run->h[i]);
		}
		if (r || jb->kind == SV_JOIN_LEFT)
			sv_join_emit_taken(jb, out, run->rows[i], r, run->t[i]);
		if (run->own[i]) {
			op->pending_bytes -= run->own[i]->bytes;
			free(run->own[i]);
		}
	}
	run->n = 0;
}

/* Left rows at or before this time can be answered now. */
static int64_t release_bound(const lookupjoin_t *op)
{
	int64_t b = op->wr;
	/* wl - retention, saturating (watermarks are any int64) */
	if (op->retention && op->wl != SV_WATERMARK_NONE &&
	    op->wl > INT64_MIN + op->retention && op->wl - op->retention > b)
		b = op->wl - op->retention;
	return b;
}

static uint64_t lk_left_bytes(const lookupjoin_t *op)
{
	return op->pending_bytes + op->pcap * sizeof(pitem_t);
}

static uint64_t lk_right_bytes(const lookupjoin_t *op)
{
	return sv_statemap_bytes(op->table) + op->table_bytes +
		op->prcap * sizeof(titem_t);
}

static sv_error_t *lk_cap(const lookupjoin_t *op)
{
	if (!op->jb.max_rows && !op->jb.max_bytes)
		return NULL;
	return sv_join_check_cap(&op->jb, op->npending, op->versions,
				 lk_left_bytes(op) + lk_right_bytes(op));
}

static sv_error_t *lk_process(sv_op_t *base, sv_op_ctx_t *ctx, sv_batch_t *in,
			      sv_batch_t *out)
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	for (size_t r = 0; r < in->nrows; r++) {
		const sv_value_t *row = sv_batch_row(in, r);
		int64_t t = in->meta[r].event_ms;
		if (op->proc) {
			run_add(op->run, row, t, NULL);
			continue;
		}
		if (t <= -SV_TIME_LIMIT || t >= SV_TIME_LIMIT ||
		    (op->wl != SV_WATERMARK_NONE && t <= op->wl)) {
			/* a version it needs may be pruned */
			if (ctx->stats)
				ctx->stats->records_late++;
			continue;
		}
		int64_t b = release_bound(op);
		if (b != SV_WATERMARK_NONE && t <= b) {
			run_add(op->run, row, t, NULL);
			continue;
		}
		sv_jrow_t *jr = sv_jrow_new(row, in->ncols);
		jr->t = t;
		op->pending_bytes += jr->bytes;
		pending_push(op, (pitem_t){t, op->seq++, jr});
	}
	answer_run(op, op->run, out);
	return lk_cap(op);
}

static sv_error_t *lk_process_right(sv_op_t *base, sv_op_ctx_t *ctx,
				    sv_batch_t *in, sv_batch_t *out)
{
	SV_UNUSED(out);
	lookupjoin_t *op = (lookupjoin_t *)base;
	for (size_t r = 0; r < in->nrows; r++) {
		const sv_value_t *row = sv_batch_row(in, r);
		int64_t t = in->meta[r].event_ms;
		if (!op->proc) {
			if (t <= -SV_TIME_LIMIT || t >= SV_TIME_LIMIT) {
				if (ctx->stats)
					ctx->stats->records_late++;
				continue;
			}
			/* a late table row takes effect where the table's
			 * time stands (none after the end of input) */
			if (op->wr != SV_WATERMARK_NONE && t <= op->wr) {
				if (op->wr >= SV_TIME_LIMIT) {
					if (ctx->stats)
						ctx->stats->records_late++;
					continue;
				}
				t = op->wr + 1;
			}
		}
		if (!sv_join_key(&op->jb, row, op->jb.rkeys))
			continue; /* a null key is no table row */
		bool del = in->meta[r].flags & SV_ROW_DELETE;
		table_put(op, del ? NULL : trow_new(op, row, op->jb.take_src),
			  t);
	}
	return lk_cap(op);
}

/* Waiting-row heap slots kept once it is empty (the rest is freed). */
#define PENDING_KEEP 4096

/* The first waiting row can be answered at bound b. */
static bool top_ready(const lookupjoin_t *op, int64_t b)
{
	return op->npending &&
		(b == INT64_MAX ||
		 (b != SV_WATERMARK_NONE && op->pending[0].t <= b));
}

/* Answer the waiting rows at or before b, in (time, seq) order; with
 * rows > 0 at most that many output rows (a piece: op->more says whether
 * some are left). */
static void release(lookupjoin_t *op, int64_t b, size_t rows, sv_batch_t *out)
{
	while (top_ready(op, b) && (!rows || out->nrows + op->run->n < rows)) {
		pitem_t it = pending_pop(op);
		run_add(op->run, it.row->vals, it.t, it.row);
		if (op->run->n == 1024)
			answer_run(op, op->run, out);
	}
	answer_run(op, op->run, out);
	op->more = top_ready(op, b);
	if (!op->npending && op->pcap > PENDING_KEEP) {
		/* the heap of a burst (W4: the auctions that waited for the
		 * table, 0.8 MB a member) goes with it */
		free(op->pending);
		op->pending = NULL;
		op->pcap = 0;
	}
}

static void move_wm(int64_t *wm, int64_t to)
{
	if (to != SV_WATERMARK_NONE && (*wm == SV_WATERMARK_NONE || to > *wm))
		*wm = to;
}

static sv_error_t *lk_advance(sv_op_t *base, sv_op_ctx_t *ctx, sv_batch_t *out)
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	move_wm(&op->wl, ctx->watermark_ms);
	move_wm(&op->wr, ctx->right_watermark_ms);
	if (op->proc)
		return NULL;
	release(op, release_bound(op), ctx->advance_rows, out);
	if (op->more)
		return NULL; /* the rest first: they may need what pruning
			      * takes */
	if (op->wl != SV_WATERMARK_NONE && op->wr != SV_WATERMARK_NONE)
		prune_to(op, op->wl < op->wr ? op->wl : op->wr);
	return NULL;
}

static void removed_clear(lookupjoin_t *op)
{
	for (size_t i = 0; i < op->nremoved; i++)
		free(op->removed[i]);
	op->nremoved = 0;
}

static void lk_clear(lookupjoin_t *op)
{
	size_t it = 0;
	tkey_t *k;
	while ((k = sv_statemap_next(op->table, &it))) {
		for (uint32_t i = 0; i < k->n; i++)
			free(kv(k)[i].row);
		if (k->cap >= 2)
			free(k->u.arr);
	}
	sv_statemap_clear(op->table);
	removed_clear(op);
	for (size_t i = 0; i < op->npending; i++)
		free(op->pending[i].row);
	op->npending = 0;
	op->nprune = 0;
	op->live_keys = op->versions = 0;
	op->table_bytes = op->pending_bytes = 0;
	op->wl = op->wr = SV_WATERMARK_NONE;
	op->more = false;
}

static sv_error_t *lk_finish(sv_op_t *base, sv_op_ctx_t *ctx, sv_batch_t *out)
{
	SV_UNUSED(ctx);
	lookupjoin_t *op = (lookupjoin_t *)base;
	/* end of input: both inputs are complete */
	release(op, INT64_MAX, 0, out);
	lk_clear(op);
	op->wl = op->wr = INT64_MAX;
	return NULL;
}

static int64_t lk_out_watermark(sv_op_t *base)
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	if (op->proc)
		return op->wl;
	if (op->wl == SV_WATERMARK_NONE || op->wr == SV_WATERMARK_NONE)
		return SV_WATERMARK_NONE;
	int64_t w = op->wl < op->wr ? op->wl : op->wr;
	/* rows of the next pieces are still to come */
	if (op->more && op->pending[0].t - 1 < w)
		w = op->pending[0].t - 1;
	return w;
}

static bool lk_more(sv_op_t *base)
{
	return ((lookupjoin_t *)base)->more;
}

static void lk_state_sides(sv_op_t *base, sv_op_side_state_t sides[2])
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	sides[0].bytes = lk_left_bytes(op);
	sides[0].keys = 0;
	sides[0].rows = op->npending;
	sides[1].bytes = lk_right_bytes(op);
	sides[1].keys = op->live_keys;
	sides[1].rows = op->versions;
}

static void lk_state_size(sv_op_t *base, uint64_t *bytes, uint64_t *keys)
{
	sv_op_side_state_t sides[2];
	lk_state_sides(base, sides);
	if (bytes)
		*bytes = sides[0].bytes + sides[1].bytes;
	if (keys)
		*keys = sides[0].keys + sides[1].keys;
}

/* One key of the table: its values, u32 n, n times i64 time, u8 present,
 * then (present) the row's take columns. */
static void ser_key(lookupjoin_t *op, sv_buf_t *out, tkey_t *k)
{
	const sv_value_t *key = sv_statemap_key(op->table, k);
	for (size_t c = 0; c < op->jb.nkeys; c++)
		sv_ser_value(out, &key[c]);
	sv_ser_u32(out, k->n);
	for (uint32_t i = 0; i < k->n; i++) {
		sv_ser_i64(out, kv(k)[i].t);
		sv_ser_u8(out, kv(k)[i].row != NULL);
		if (kv(k)[i].row)
			sv_buf_append(out, kv(k)[i].row->ser,
				      kv(k)[i].row->len);
	}
}

/* u64 npending, each: i64 time, u64 seq, the row's values. */
static void ser_pending(lookupjoin_t *op, sv_buf_t *out)
{
	sv_ser_u64(out, op->npending);
	for (size_t i = 0; i < op->npending; i++) {
		sv_ser_i64(out, op->pending[i].t);
		sv_ser_u64(out, op->pending[i].seq);
		for (size_t c = 0; c < op->jb.nleft; c++)
			sv_ser_value(out, &op->pending[i].row->vals[c]);
	}
}

/* Snapshot: the join header ('T'), u8 processing time, i64 left and i64
 * table watermark, u64 sequence, u64 nkeys, each: the key's values, u32 n,
 * n times i64 time, u8 present, then (present) the row's take columns;
 * u64 npending, each: i64 time, u64 seq, the row's values. The earlier
 * 'L' had every right column where 'T' has the take columns. */
static sv_error_t *lk_snapshot(sv_op_t *base, sv_buf_t *out)
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	sv_join_ser_header(&op->jb, out, LOOKUP_SNAPSHOT_KIND);
	sv_ser_u8(out, op->proc);
	sv_ser_i64(out, op->wl);
	sv_ser_i64(out, op->wr);
	sv_ser_u64(out, op->seq);
	sv_ser_u64(out, op->live_keys);
	size_t it = 0;
	tkey_t *k;
	while ((k = sv_statemap_next(op->table, &it)))
		if (k->n)
			ser_key(op, out, k);
	ser_pending(op, out);
	return NULL;
}

/* The waiting left rows of a snapshot or delta into the pending heap;
 * row: scratch of the left width. */
static void deser_pending(lookupjoin_t *op, sv_deser_t *d, sv_value_t *row)
{
	uint64_t np = sv_deser_u64(d);
	for (uint64_t i = 0; i < np && !d->bad; i++) {
		int64_t t = sv_deser_i64(d);
		uint64_t s = sv_deser_u64(d);
		for (size_t c = 0; c < op->jb.nleft; c++)
			sv_deser_value(d, &row[c]);
		if (d->bad)
			break;
		sv_jrow_t *jr = sv_jrow_new(row, op->jb.nleft);
		jr->t = t;
		op->pending_bytes += jr->bytes;
		pending_push(op, (pitem_t){t, s, jr});
	}
}

/* The time domain of a snapshot or delta (what: its name) must be the
 * operator's. */
static sv_error_t *deser_proc(lookupjoin_t *op, sv_deser_t *d, const char *what)
{
	uint8_t proc = sv_deser_u8(d);
	if (d->bad || proc == op->proc)
		return NULL;
	return sv_error_new(SV_ERR_CHECKPOINT,
			    "lookup join state %s is of %s time and the "
			    "operator of %s time",
			    what, proc ? "processing" : "event",
			    op->proc ? "processing" : "event");
}

/* One key's versions of a snapshot or delta into the table; row: scratch
 * of scratch_width(op). all: the earlier format, every right column (cut
 * to the take columns here). */
static void deser_versions(lookupjoin_t *op, sv_deser_t *d,
			   const sv_value_t *key, sv_value_t *row, bool all)
{
	uint32_t n = sv_deser_u32(d);
	size_t ncols = all ? op->jb.nright : op->jb.ntake;
	for (uint32_t j = 0; j < n && !d->bad; j++) {
		int64_t t = sv_deser_i64(d);
		bool present = sv_deser_u8(d);
		for (size_t c = 0; present && c < ncols; c++)
			sv_deser_value(d, &row[c]);
		if (d->bad)
			break;
		memcpy(op->jb.keybuf, key, op->jb.nkeys * sizeof(sv_value_t));
		table_put(op,
			  present ? trow_new(op, row,
					     all ? op->jb.take_src : NULL)
				  : NULL,
			  t);
	}
}

/* Cells of a restore's scratch row: a left row, a right row of the
 * earlier format or a cut one. */
static size_t scratch_width(const lookupjoin_t *op)
{
	size_t w = op->jb.nleft > op->jb.nright ? op->jb.nleft : op->jb.nright;
	return (w > op->jb.ntake ? w : op->jb.ntake) + 1;
}

/* The kind letter of a snapshot or delta: its second byte (the header's
 * check reports anything else). */
static char kind_of(const char *data, size_t len, char now, char all)
{
	return len >= 2 && data[1] == all ? all : now;
}

/* The end of a restore: the waiting rows, then the whole input must have
 * been read (the operator is cleared otherwise), then the watermarks and
 * sequence; frees the scratch row and key. */
static sv_error_t *restore_end(lookupjoin_t *op, sv_deser_t *d, sv_value_t *row,
			       sv_value_t *key, int64_t wl, int64_t wr,
			       uint64_t seq)
{
	deser_pending(op, d, row);
	free(row);
	free(key);
	if (d->bad || d->off != d->len) {
		lk_clear(op);
		return sv_join_corrupt(&op->jb, d);
	}
	op->wl = wl;
	op->wr = wr;
	op->seq = seq;
	op->incr_base = false;
	return NULL;
}

static sv_error_t *lk_restore(sv_op_t *base, const char *data, size_t len)
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	sv_deser_t d = {.p = data, .len = len};
	lk_clear(op);
	char kind = kind_of(data, len, LOOKUP_SNAPSHOT_KIND,
			    LOOKUP_SNAPSHOT_KIND_ALL);
	sv_error_t *err = sv_join_deser_header(&op->jb, &d, kind);
	if (err)
		return err;
	if ((err = deser_proc(op, &d, "snapshot")))
		return err;
	int64_t wl = sv_deser_i64(&d), wr = sv_deser_i64(&d);
	uint64_t seq = sv_deser_u64(&d);
	uint64_t nkeys = sv_deser_u64(&d);
	/* the keys come in the order of the snapshotted table's slots: room
	 * for them first (a key takes at least 5 bytes: a corrupt count
	 * reserves no more than the snapshot could hold) */
	sv_statemap_reserve(op->table,
			    (size_t)(nkeys < len / 5 ? nkeys : len / 5));
	sv_value_t *row = sv_calloc(scratch_width(op), sizeof(sv_value_t));
	sv_value_t *key = sv_calloc(op->jb.nkeys, sizeof(sv_value_t));
	/* versions go in with the watermarks unset, so nothing is moved */
	for (uint64_t i = 0; i < nkeys && !d.bad; i++) {
		for (size_t c = 0; c < op->jb.nkeys; c++)
			sv_deser_value(&d, &key[c]);
		deser_versions(op, &d, key, row,
			       kind == LOOKUP_SNAPSHOT_KIND_ALL);
	}
	if ((err = restore_end(op, &d, row, key, wl, wr, seq)))
		return err;
	sv_statemap_track(op->table, false);
	return NULL;
}

/* Delta: the join header ('t'; the earlier 'l' with every right column),
 * u8 processing time, i64 left and i64
 * table watermark, u64 sequence, u64 nremoved, each: a key's values (a
 * key of the last checkpoint removed since), u64 nchanged, each a key
 * changed since as in a snapshot (all its versions; none: it has no
 * version left), then the waiting left rows whole, as in a snapshot
 * (their number is bounded by the watermarks, the table's size is not). */
static sv_error_t *lk_snapshot_delta(sv_op_t *base, sv_buf_t *out,
				     bool *written)
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	*written = false;
	if (!op->incr_base)
		return NULL;
	sv_join_ser_header(&op->jb, out, LOOKUP_DELTA_KIND);
	sv_ser_u8(out, op->proc);
	sv_ser_i64(out, op->wl);
	sv_ser_i64(out, op->wr);
	sv_ser_u64(out, op->seq);
	sv_ser_u64(out, op->nremoved);
	for (size_t i = 0; i < op->nremoved; i++)
		for (size_t c = 0; c < op->jb.nkeys; c++)
			sv_ser_value(out, &op->removed[i]->vals[c]);
	size_t n = sv_statemap_dirty_count(op->table);
	sv_ser_u64(out, n);
	for (size_t i = 0; i < n; i++)
		ser_key(op, out, sv_statemap_dirty_at(op->table, i));
	ser_pending(op, out);
	*written = true;
	return NULL;
}

/* Every version of the key in keybuf goes (the entry stays while the
 * prune heap points at it, as when pruning empties a key). */
static void key_drop(lookupjoin_t *op)
{
	uint64_t h = sv_statemap_hash(op->table, op->jb.keybuf);
	tkey_t *k = sv_statemap_find(op->table, op->jb.keybuf, h);
	if (!k)
		return;
	for (uint32_t i = 0; i < k->n; i++)
		ver_free(op, &kv(k)[i]);
	if (k->n)
		op->live_keys--;
	k->n = 0;
	if (!k->nrefs)
		key_forget(op, k);
}

static sv_error_t *lk_restore_delta(sv_op_t *base, const char *data, size_t len)
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	sv_deser_t d = {.p = data, .len = len};
	char kind = kind_of(data, len, LOOKUP_DELTA_KIND,
			    LOOKUP_DELTA_KIND_ALL);
	sv_error_t *err = sv_join_deser_header(&op->jb, &d, kind);
	if (err)
		return err;
	if ((err = deser_proc(op, &d, "delta")))
		return err;
	sv_statemap_track(op->table, false);
	int64_t wl = sv_deser_i64(&d), wr = sv_deser_i64(&d);
	uint64_t seq = sv_deser_u64(&d);
	sv_value_t *row = sv_calloc(scratch_width(op), sizeof(sv_value_t));
	sv_value_t *key = sv_calloc(op->jb.nkeys, sizeof(sv_value_t));
	uint64_t nrm = sv_deser_u64(&d);
	for (uint64_t i = 0; i < nrm && !d.bad; i++) {
		for (size_t c = 0; c < op->jb.nkeys; c++)
			sv_deser_value(&d, &op->jb.keybuf[c]);
		if (!d.bad)
			key_drop(op);
	}
	uint64_t nk = sv_deser_u64(&d);
	for (uint64_t i = 0; i < nk && !d.bad; i++) {
		for (size_t c = 0; c < op->jb.nkeys; c++)
			sv_deser_value(&d, &key[c]);
		if (d.bad)
			break;
		memcpy(op->jb.keybuf, key, op->jb.nkeys * sizeof(sv_value_t));
		key_drop(op);
		deser_versions(op, &d, key, row, kind == LOOKUP_DELTA_KIND_ALL);
	}
	for (size_t i = 0; i < op->npending; i++)
		free(op->pending[i].row);
	op->npending = 0;
	op->pending_bytes = 0;
	return restore_end(op, &d, row, key, wl, wr, seq);
}

static void lk_checkpointed(sv_op_t *base)
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	sv_statemap_dirty_clear(op->table);
	sv_statemap_track(op->table, true);
	removed_clear(op);
	op->incr_base = true;
}

static void lk_destroy(sv_op_t *base)
{
	lookupjoin_t *op = (lookupjoin_t *)base;
	if (!op)
		return;
	lk_clear(op);
	free(op->removed);
	sv_statemap_destroy(op->table);
	free(op->prune);
	free(op->pending);
	run_destroy(op->run);
	sv_buf_release(&op->rowbuf);
	free(op->cells);
	sv_joinbase_release(&op->jb);
	free(op);
}

static const sv_op_ops_t lookup_ops = {
	.name = "join",
	.process = lk_process,
	.advance = lk_advance,
	.finish = lk_finish,
	.state_size = lk_state_size,
	.snapshot = lk_snapshot,
	.restore = lk_restore,
	.snapshot_delta = lk_snapshot_delta,
	.restore_delta = lk_restore_delta,
	.checkpointed = lk_checkpointed,
	.destroy = lk_destroy,
	.more = lk_more,
	.process_right = lk_process_right,
	.out_watermark = lk_out_watermark,
	.state_sides = lk_state_sides,
};

sv_error_t *sv_op_lookup_join_new(const sv_schema_t *left,
				  const sv_schema_t *right,
				  const sv_join_spec_t *spec, sv_op_t **out)
{
	*out = NULL;
	if (spec->retention_ms < 0 || spec->retention_ms >= SV_TIME_LIMIT)
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "lookup join 'retention_ms' must be >= 0 "
				     "and below 2^61, got %lld",
				     (long long)spec->retention_ms),
			"retention_ms");
	lookupjoin_t *op = sv_calloc(1, sizeof(*op));
	sv_error_t *err = sv_joinbase_init(&op->jb, left, right, spec);
	if (err) {
		free(op);
		return err;
	}
	op->jb.base.ops = &lookup_ops;
	op->proc = spec->processing_time;
	op->retention = spec->retention_ms;
	op->table = sv_statemap_new(op->jb.nkeys, sizeof(tkey_t));
	op->run = sv_calloc(1, sizeof(*op->run));
	sv_buf_init(&op->rowbuf);
	op->cells = sv_calloc(op->jb.ntake ? op->jb.ntake : 1,
			      sizeof(sv_value_t));
	op->wl = op->wr = SV_WATERMARK_NONE;
	*out = &op->jb.base;
	return NULL;
}
