/* dedup.c — keep the first record of each key within a time bound.
 *
 * State is one entry per key holding the event time of the record that
 * passed (its "first" time f). A record is a duplicate, and dropped, while
 * its key's entry exists and its event time is before f + within_ms. An
 * entry is forgotten when the watermark reaches f + within_ms - 1 (the
 * last millisecond of [f, f + within_ms), the same rule as a window's
 * maxTimestamp), so the state is bounded by the watermark; a record of the
 * same key passes again after that. Expiry uses a min-heap of
 * (f + within_ms - 1, entry); an entry whose f was replaced has several
 * items, counted, and is freed when the last one pops. Records pass
 * through unchanged (same schema, same meta). See docs/windows.md.
 *
 * Incremental checkpoints (docs/checkpoints.md): the state map tracks the
 * entries created or renewed since the last checkpoint; a delta holds
 * those (key, first) and the watermark. Deletes need no tombstones: an
 * entry is only ever removed by expiry, which the watermark decides, so a
 * restore applies the changed entries and then expires to the delta's
 * watermark, which removes exactly what the operator had removed. */
#include "core/window_int.h"

#include <stdlib.h>
#include <string.h>

#define DEDUP_SNAPSHOT_VERSION 1
#define DEDUP_SNAPSHOT_KIND 'D'
#define DEDUP_DELTA_KIND 'd'

typedef struct dkey {
	int64_t first;
	uint32_t nrefs; /* heap items pointing here */
} dkey_t;

typedef struct ditem {
	int64_t expire;
	dkey_t *key;
} ditem_t;

typedef struct dedupop {
	sv_op_t base;
	size_t nkeys;
	int *keycols;
	int64_t within;
	sv_statemap_t *map;
	ditem_t *heap;
	size_t nheap, hcap;
	int64_t wm; /* watermark of the last advance */
	sv_value_t *keybuf;
	bool incr_base; /* a checkpointed snapshot or delta to build on */
} dedupop_t;

static void heap_push(dedupop_t *op, int64_t expire, dkey_t *k)
{
	if (op->nheap == op->hcap) {
		op->hcap = op->hcap ? op->hcap * 2 : 64;
		op->heap = sv_realloc(op->heap, op->hcap * sizeof(ditem_t));
	}
	size_t i = op->nheap++;
	while (i > 0 && op->heap[(i - 1) / 2].expire > expire) {
		op->heap[i] = op->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	op->heap[i] = (ditem_t){expire, k};
	k->nrefs++;
}

static ditem_t heap_pop(dedupop_t *op)
{
	ditem_t top = op->heap[0];
	ditem_t last = op->heap[--op->nheap];
	size_t i = 0, n = op->nheap;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && op->heap[c + 1].expire < op->heap[c].expire)
			c++;
		if (op->heap[c].expire >= last.expire)
			break;
		op->heap[i] = op->heap[c];
		i = c;
	}
	if (n)
		op->heap[i] = last;
	return top;
}

/* Remember key (in keybuf) as first seen at t, unless it would expire at
 * once. k is its existing entry or NULL. */
static void remember(dedupop_t *op, dkey_t *k, uint64_t h, int64_t t)
{
	int64_t expire = t + op->within - 1;
	if (op->wm != SV_WATERMARK_NONE && expire <= op->wm)
		return;
	if (!k)
		k = sv_statemap_upsert(op->map, op->keybuf, h, NULL);
	else
		sv_statemap_touch(op->map, k);
	k->first = t;
	heap_push(op, expire, k);
}

static sv_error_t *dedup_process(sv_op_t *base, sv_op_ctx_t *ctx,
				 sv_batch_t *in, sv_batch_t *out)
{
	dedupop_t *op = (dedupop_t *)base;
	for (size_t r = 0; r < in->nrows; r++) {
		const sv_value_t *row = sv_batch_row(in, r);
		int64_t t = in->meta[r].event_ms;
		bool track = t > -SV_TIME_LIMIT && t < SV_TIME_LIMIT;
		dkey_t *k = NULL;
		uint64_t h = 0;
		if (track) {
			for (size_t c = 0; c < op->nkeys; c++)
				op->keybuf[c] = row[op->keycols[c]];
			h = sv_statemap_hash(op->map, op->keybuf);
			k = sv_statemap_find(op->map, op->keybuf, h);
			if (k && t < k->first + op->within) {
				if (ctx->stats)
					ctx->stats->records_dropped++;
				continue;
			}
		}
		/* pass: rows may point at the input's strings */
		sv_rowmeta_t *m;
		sv_value_t *o = sv_batch_add_row(out, &m);
		memcpy(o, row, in->ncols * sizeof(sv_value_t));
		*m = in->meta[r];
		if (track)
			remember(op, k, h, t);
	}
	return NULL;
}

static void expire_to(dedupop_t *op, int64_t wm)
{
	if (wm == SV_WATERMARK_NONE ||
	    (op->wm != SV_WATERMARK_NONE && wm <= op->wm))
		return;
	op->wm = wm;
	while (op->nheap && op->heap[0].expire <= wm) {
		ditem_t it = heap_pop(op);
		/* the newest item of a key expires last, so at zero the
		 * entry itself has expired */
		if (--it.key->nrefs == 0)
			sv_statemap_remove(op->map, it.key);
	}
}

static sv_error_t *dedup_advance(sv_op_t *base, sv_op_ctx_t *ctx,
				 sv_batch_t *out)
{
	SV_UNUSED(out);
	expire_to((dedupop_t *)base, ctx->watermark_ms);
	return NULL;
}

static sv_error_t *dedup_finish(sv_op_t *base, sv_op_ctx_t *ctx,
				sv_batch_t *out)
{
	SV_UNUSED(ctx);
	SV_UNUSED(out);
	expire_to((dedupop_t *)base, INT64_MAX);
	return NULL;
}

static void dedup_state_size(sv_op_t *base, uint64_t *bytes, uint64_t *keys)
{
	dedupop_t *op = (dedupop_t *)base;
	if (bytes)
		*bytes = sv_statemap_bytes(op->map) +
			op->hcap * sizeof(ditem_t);
	if (keys)
		*keys = sv_statemap_count(op->map);
}

/* Snapshot: u8 version, u8 'D', u32 nkeys, i64 within_ms, i64 watermark,
 * u64 n, then n times: nkeys values, i64 first. */
static sv_error_t *dedup_snapshot(sv_op_t *base, sv_buf_t *out)
{
	dedupop_t *op = (dedupop_t *)base;
	sv_ser_u8(out, DEDUP_SNAPSHOT_VERSION);
	sv_ser_u8(out, DEDUP_SNAPSHOT_KIND);
	sv_ser_u32(out, (uint32_t)op->nkeys);
	sv_ser_i64(out, op->within);
	sv_ser_i64(out, op->wm);
	sv_ser_u64(out, sv_statemap_count(op->map));
	size_t it = 0;
	dkey_t *k;
	while ((k = sv_statemap_next(op->map, &it))) {
		const sv_value_t *key = sv_statemap_key(op->map, k);
		for (size_t c = 0; c < op->nkeys; c++)
			sv_ser_value(out, &key[c]);
		sv_ser_i64(out, k->first);
	}
	return NULL;
}

static void dedup_clear(dedupop_t *op)
{
	sv_statemap_clear(op->map);
	op->nheap = 0;
	op->wm = SV_WATERMARK_NONE;
	op->incr_base = false;
	sv_statemap_track(op->map, false);
}

static sv_error_t *dedup_restore(sv_op_t *base, const char *data, size_t len)
{
	dedupop_t *op = (dedupop_t *)base;
	sv_deser_t d = {.p = data, .len = len};
	dedup_clear(op);
	uint8_t ver = sv_deser_u8(&d), kind = sv_deser_u8(&d);
	uint32_t nkeys = sv_deser_u32(&d);
	int64_t within = sv_deser_i64(&d);
	if (d.bad || ver != DEDUP_SNAPSHOT_VERSION ||
	    kind != DEDUP_SNAPSHOT_KIND || nkeys != op->nkeys)
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "dedup state snapshot does not match the "
				    "operator (version %u, %u keys)",
				    ver, nkeys);
	SV_UNUSED(within); /* a changed bound applies from now on */
	int64_t wm = sv_deser_i64(&d);
	uint64_t n = sv_deser_u64(&d);
	op->wm = SV_WATERMARK_NONE;
	/* keys in the order of the snapshotted table's slots: room first (a
	 * key takes at least 8 bytes, so a corrupt count reserves no more
	 * than the snapshot could hold) */
	sv_statemap_reserve(op->map, (size_t)(n < len / 8 ? n : len / 8));
	for (uint64_t i = 0; i < n && !d.bad; i++) {
		for (size_t c = 0; c < op->nkeys; c++)
			sv_deser_value(&d, &op->keybuf[c]);
		int64_t first = sv_deser_i64(&d);
		/* a first-seen time whose expiry overflows is corruption
		 * (found by tests/fuzz/fuzz_checkpoint.c) */
		if (!d.bad && first > INT64_MAX - op->within)
			d.bad = true;
		if (d.bad)
			break;
		uint64_t h = sv_statemap_hash(op->map, op->keybuf);
		dkey_t *k = sv_statemap_upsert(op->map, op->keybuf, h, NULL);
		k->first = first;
		heap_push(op, first + op->within - 1, k);
	}
	if (d.bad || d.off != d.len) {
		dedup_clear(op);
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "dedup state snapshot is truncated or "
				    "corrupt (%zu of %zu bytes read)",
				    d.off, d.len);
	}
	op->wm = wm;
	return NULL;
}

/* Delta: u8 version, u8 'd', u32 nkeys, i64 watermark, u64 n, then n
 * times: nkeys values, i64 first (the entries created or renewed since
 * the last checkpoint that are still held). */
static sv_error_t *dedup_snapshot_delta(sv_op_t *base, sv_buf_t *out,
					bool *written)
{
	dedupop_t *op = (dedupop_t *)base;
	*written = false;
	if (!op->incr_base)
		return NULL;
	sv_ser_u8(out, DEDUP_SNAPSHOT_VERSION);
	sv_ser_u8(out, DEDUP_DELTA_KIND);
	sv_ser_u32(out, (uint32_t)op->nkeys);
	sv_ser_i64(out, op->wm);
	size_t n = sv_statemap_dirty_count(op->map);
	sv_ser_u64(out, n);
	for (size_t i = 0; i < n; i++) {
		dkey_t *k = sv_statemap_dirty_at(op->map, i);
		const sv_value_t *key = sv_statemap_key(op->map, k);
		for (size_t c = 0; c < op->nkeys; c++)
			sv_ser_value(out, &key[c]);
		sv_ser_i64(out, k->first);
	}
	*written = true;
	return NULL;
}

static sv_error_t *dedup_restore_delta(sv_op_t *base, const char *data,
				       size_t len)
{
	dedupop_t *op = (dedupop_t *)base;
	sv_deser_t d = {.p = data, .len = len};
	uint8_t ver = sv_deser_u8(&d), kind = sv_deser_u8(&d);
	uint32_t nkeys = sv_deser_u32(&d);
	if (d.bad || ver != DEDUP_SNAPSHOT_VERSION ||
	    kind != DEDUP_DELTA_KIND || nkeys != op->nkeys)
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "dedup state delta does not match the "
				    "operator (version %u, kind %u, %u keys)",
				    ver, kind, nkeys);
	int64_t wm = sv_deser_i64(&d);
	uint64_t n = sv_deser_u64(&d);
	for (uint64_t i = 0; i < n && !d.bad; i++) {
		for (size_t c = 0; c < op->nkeys; c++)
			sv_deser_value(&d, &op->keybuf[c]);
		int64_t first = sv_deser_i64(&d);
		if (!d.bad && first > INT64_MAX - op->within)
			d.bad = true;
		if (d.bad)
			break;
		uint64_t h = sv_statemap_hash(op->map, op->keybuf);
		dkey_t *k = sv_statemap_find(op->map, op->keybuf, h);
		if (!k)
			k = sv_statemap_upsert(op->map, op->keybuf, h, NULL);
		k->first = first;
		heap_push(op, first + op->within - 1, k);
	}
	if (d.bad || d.off != d.len) {
		dedup_clear(op);
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "dedup state delta is truncated or "
				    "corrupt (%zu of %zu bytes read)",
				    d.off, d.len);
	}
	/* the deletes: what expired up to the delta's watermark */
	expire_to(op, wm);
	op->incr_base = false;
	sv_statemap_track(op->map, false);
	return NULL;
}

static void dedup_checkpointed(sv_op_t *base)
{
	dedupop_t *op = (dedupop_t *)base;
	sv_statemap_dirty_clear(op->map);
	sv_statemap_track(op->map, true);
	op->incr_base = true;
}

static void dedup_destroy(sv_op_t *base)
{
	dedupop_t *op = (dedupop_t *)base;
	if (!op)
		return;
	sv_statemap_destroy(op->map);
	free(op->heap);
	free(op->keycols);
	free(op->keybuf);
	sv_schema_destroy(op->base.out_schema);
	free(op);
}

static const sv_op_ops_t dedup_ops = {
	.name = "dedup",
	.process = dedup_process,
	.advance = dedup_advance,
	.finish = dedup_finish,
	.state_size = dedup_state_size,
	.snapshot = dedup_snapshot,
	.restore = dedup_restore,
	.snapshot_delta = dedup_snapshot_delta,
	.restore_delta = dedup_restore_delta,
	.checkpointed = dedup_checkpointed,
	.destroy = dedup_destroy,
};

sv_error_t *sv_op_dedup_new(const sv_schema_t *in, size_t nkeys,
			    const char *const *keys, int64_t within_ms,
			    sv_op_t **out)
{
	*out = NULL;
	if (within_ms <= 0 || within_ms >= SV_TIME_LIMIT)
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "dedup 'within_ms' must be > 0 and below "
				     "2^61, got %lld",
				     (long long)within_ms),
			"within_ms");
	int *cols = sv_calloc(nkeys + 1, sizeof(int));
	for (size_t k = 0; k < nkeys; k++) {
		cols[k] = sv_schema_find(in, keys[k]);
		if (cols[k] < 0) {
			free(cols);
			return sv_error_set_field(
				sv_error_new(
					SV_ERR_SUBMISSION,
					"dedup key '%s' is not a column of "
					"the input",
					keys[k]),
				"key");
		}
	}
	dedupop_t *op = sv_calloc(1, sizeof(*op));
	op->base.ops = &dedup_ops;
	op->base.in_schema = in;
	op->base.out_schema = sv_schema_copy(in);
	op->nkeys = nkeys;
	op->keycols = cols;
	op->within = within_ms;
	op->map = sv_statemap_new(nkeys, sizeof(dkey_t));
	op->keybuf = sv_calloc(nkeys + 1, sizeof(sv_value_t));
	op->wm = SV_WATERMARK_NONE;
	*out = &op->base;
	return NULL;
}
