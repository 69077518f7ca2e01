/* test_ckpt_tasks.c — incremental per-task checkpoints (parallelism > 1,
 * standalone) through sv_ckpt_take and sv_ckpt_recover on a real store:
 * two tasks, each a dedup followed by a tumbling count window, take random
 * records, watermark advances that expire dedup entries and fire and purge
 * windows (the deletes), and checkpoints. After every checkpoint a second
 * set of pipelines is recovered from the store (the task's newest full
 * snapshot plus its deltas, retention having run) and must hold exactly
 * the state of the first (the window's snapshot byte for byte, the dedup's
 * entries compared sorted, as its map order differs); the chain is also
 * applied by hand with one delta left out, which must give a different
 * state at least once (negative control). Also: deltas and periodic full
 * rewrites both happen, retention deletes old records but keeps every
 * chain a restore needs, and a checkpoint whose transaction did not
 * commit (aborted at recovery) contributes no delta: the restore is the
 * previous checkpoint's state. The source and sink are the smallest
 * drivers sv_ckpt needs (positions and seek; nothing to flush): this is
 * the checkpoint protocol's bookkeeping, the integration tests run it on
 * Kafka.
 *
 * test_state_topic_chain_random: the same tasks in distributed mode
 * (grouped, an on_tasks hook that writes each task record through the
 * state topic's writer into an in-memory compacted log, memlog.h, some
 * transactions aborting, compaction at random times); after every
 * checkpoint each partition's chain is read back up to the committed
 * manifest as a new owner does and restored (full, then each delta) into
 * fresh pipelines, which must hold exactly the live state, and so must the
 * local cache's path (the store's task record on its chain in the store);
 * a chain with a delta left out is refused, and so is a log whose newest
 * delta slot lost its value (negative controls). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster/state.h"
#include "core/window.h"
#include "core/window_int.h"
#include "supervisor/ckpt.h"
#include "supervisor/observe.h"
#include "tests/unit/dedup_text.h"
#include "tests/unit/memlog.h"

#define NT 2

typedef struct stub_src {
	sv_source_t base;
	sv_partpos_t pos[NT];
	int64_t tag; /* the checkpoint the "group's offsets" carry */
} stub_src_t;

static size_t stub_positions(sv_source_t *s, const sv_partpos_t **pos)
{
	*pos = ((stub_src_t *)s)->pos;
	return NT;
}

static sv_error_t *stub_seek(sv_source_t *s, const sv_partpos_t *pos, size_t n)
{
	stub_src_t *x = (stub_src_t *)s;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < NT; j++)
			if (x->pos[j].partition == pos[i].partition)
				x->pos[j].next_offset = pos[i].next_offset;
	return NULL;
}

static int64_t stub_tag(sv_source_t *s, int32_t partition)
{
	(void)partition;
	return ((stub_src_t *)s)->tag;
}

static const sv_source_ops_t stub_src_ops = {
	.seek = stub_seek,
	.positions = stub_positions,
	.committed_checkpoint_of = stub_tag,
};
static const sv_sink_ops_t stub_sink_ops = {0};

typedef struct task {
	sv_pipeline_t *pl;
	sv_watermarks_t *wm;
} task_t;

static sv_schema_t *schema(void)
{
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "k", SV_T_STRING, true);
	sv_schema_add(s, "v", SV_T_INT64, true);
	return s;
}

static void task_new(const sv_schema_t *in, task_t *t)
{
	static const char *const keys[] = {"k"};
	static const char *const names[] = {"n"};
	static const char *const exprs[] = {"count()"};
	t->pl = sv_pipeline_new(in);
	sv_op_t *op;
	assert_null(sv_op_dedup_new(in, 1, keys, 40, &op));
	sv_pipeline_add(t->pl, op);
	sv_window_spec_t spec = {.type = SV_WIN_TUMBLING,
				 .size_ms = 20,
				 .nkeys = 1,
				 .keys = keys,
				 .naggs = 1,
				 .agg_names = names,
				 .agg_exprs = exprs};
	assert_null(
		sv_op_window_new(sv_pipeline_out_schema(t->pl), &spec, &op));
	sv_pipeline_add(t->pl, op);
	t->wm = sv_watermarks_new(0, 0);
}

static void task_free(task_t *t)
{
	sv_pipeline_destroy(t->pl);
	sv_watermarks_destroy(t->wm);
	memset(t, 0, sizeof(*t));
}

/* A pipeline's whole state as text: the dedup's sorted entries, then the
 * window's full snapshot in hex. */
static char *state_text(sv_pipeline_t *pl)
{
	size_t cap = 1 << 20;
	char *txt = malloc(cap);
	sv_buf_t b;
	sv_buf_init(&b);
	sv_op_t *dd = sv_pipeline_op(pl, 0), *win = sv_pipeline_op(pl, 1);
	assert_null(dd->ops->snapshot(dd, &b));
	dedup_text(b.data, b.len, txt, cap / 2);
	sv_buf_release(&b);
	sv_buf_init(&b);
	assert_null(win->ops->snapshot(win, &b));
	size_t off = strlen(txt);
	assert_true(off + 2 * b.len + 8 < cap);
	off += (size_t)sprintf(txt + off, " | ");
	for (size_t i = 0; i < b.len; i++)
		off += (size_t)sprintf(txt + off, "%02x",
				       (unsigned char)b.data[i]);
	sv_buf_release(&b);
	return txt;
}

typedef struct fx {
	char dir[64];
	sv_ckstore_t *st;
	sv_obslog_t *obs;
	sv_schema_t *in;
	stub_src_t src;
	sv_sink_t snk;
	sv_ckpt_incr_t incr;
	sv_ckpt_conf_t conf;
	task_t a[NT];
	sv_ckpt_task_t ct[NT];
	int64_t wm[NT], seq;
	sv_batch_t b;
	sv_opstats_t stats;
} fx_t;

static sv_ckpt_parts_t parts_of(fx_t *f, sv_ckpt_task_t *ct)
{
	sv_ckpt_parts_t p = {
		.src = &f->src.base,
		.snk = &f->snk,
		.pl = ct[0].pl,
		.wm = ct[0].wm,
		.tasks = ct,
		.ntasks = NT,
		.member = 0,
		.parallelism = NT,
	};
	return p;
}

static void fx_init(fx_t *f, int full_every)
{
	memset(f, 0, sizeof(*f));
	strcpy(f->dir, "/tmp/sv-ckpt-tasks-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_null(sv_ckstore_open(f->dir, &f->st));
	f->obs = sv_obslog_new("j", 64);
	f->in = schema();
	f->src.base.ops = &stub_src_ops;
	f->src.tag = -1;
	for (int i = 0; i < NT; i++)
		f->src.pos[i] = (sv_partpos_t){i, 0, -1};
	f->snk.ops = &stub_sink_ops;
	f->incr.full_every = full_every;
	f->conf = (sv_ckpt_conf_t){
		.store = f->st,
		.job_id = "j",
		.plan_id = "plan",
		.topic = "t",
		.attempt = 1,
		.retain = 2,
		.obs = f->obs,
		.restore_from = -1,
		.incr = full_every > 1 ? &f->incr : NULL,
	};
	for (int i = 0; i < NT; i++) {
		task_new(f->in, &f->a[i]);
		f->ct[i] = (sv_ckpt_task_t){
			.partition = i, .pl = f->a[i].pl, .wm = f->a[i].wm};
		f->wm[i] = 0;
	}
	sv_batch_init(&f->b, f->in);
}

static void fx_free(fx_t *f)
{
	for (int i = 0; i < NT; i++)
		task_free(&f->a[i]);
	sv_batch_release(&f->b);
	sv_schema_destroy(f->in);
	sv_obslog_destroy(f->obs);
	sv_ckstore_close(f->st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
}

/* Random records into task i, and sometimes a watermark advance (the
 * deletes: dedup expiry, windows firing and purged). */
static void feed(fx_t *f, int i)
{
	sv_op_ctx_t ctx = {.watermark_ms = f->wm[i],
			   .right_watermark_ms = SV_WATERMARK_NONE,
			   .stats = &f->stats};
	sv_batch_reset(&f->b);
	int n = (int)(random() % 12);
	for (int r = 0; r < n; r++) {
		sv_rowmeta_t *m;
		sv_value_t *row = sv_batch_add_row(&f->b, &m);
		m->event_ms = f->wm[i] - 5 + random() % 60;
		m->partition = i;
		m->offset = f->src.pos[i].next_offset++;
		char k[8];
		snprintf(k, sizeof(k), "k%ld", random() % 25);
		if (random() % 10)
			row[0] = sv_str(sv_batch_strdup(&f->b, k, strlen(k)),
					(uint32_t)strlen(k));
		row[1] = sv_int(f->seq++);
	}
	sv_batch_t *out;
	assert_null(sv_pipeline_push(f->a[i].pl, &ctx, &f->b, &out));
	if (random() % 3 == 0) {
		f->wm[i] += random() % 20;
		ctx.watermark_ms = f->wm[i];
		assert_null(sv_pipeline_advance(f->a[i].pl, &ctx, &out));
	}
}

/* Recover a fresh set of tasks from the store with conf (attempt 2). */
static void recover(fx_t *f, const sv_ckpt_conf_t *conf, task_t *b,
		    sv_ckpt_task_t *ct, int64_t *restored)
{
	for (int i = 0; i < NT; i++) {
		task_new(f->in, &b[i]);
		ct[i] = (sv_ckpt_task_t){
			.partition = i, .pl = b[i].pl, .wm = b[i].wm};
	}
	sv_ckpt_parts_t p = parts_of(f, ct);
	int64_t wm;
	sv_error_t *err = sv_ckpt_recover(conf, &p, restored, &wm);
	if (err)
		fail_msg("recover: %s", err->message);
}

/* The chain of partition part's task record at id, oldest (full) first,
 * applied by hand into pl, leaving out chain index skip (-1: none).
 * Returns the chain's length. */
static size_t apply_chain(fx_t *f, int32_t part, int64_t id, sv_pipeline_t *pl,
			  int skip)
{
	sv_ckrec_t *chain[256];
	size_t n = 0;
	for (int64_t at = id; at > 0;) {
		assert_true(n < 256);
		assert_null(
			sv_ckstore_get_task(f->st, "j", part, at, &chain[n]));
		assert_non_null(chain[n]);
		at = chain[n]->delta_of;
		n++;
	}
	for (size_t k = n; k-- > 0;) {
		if ((int)(n - 1 - k) == skip)
			continue;
		const sv_ckrec_t *r = chain[k];
		for (size_t o = 0; o < r->n_operators; o++) {
			const Streamvisor__OperatorState *os = r->operators[o];
			sv_op_t *op = sv_pipeline_op(pl, os->index);
			const char *d = (const char *)os->state.data;
			assert_int_equal(os->delta, k != n - 1);
			assert_null(os->delta ? op->ops->restore_delta(
							op, d, os->state.len)
					      : op->ops->restore(
							op, d, os->state.len));
		}
	}
	for (size_t k = 0; k < n; k++)
		sv_ckstore_free_record(chain[k]);
	return n;
}

static void test_incremental_tasks_random(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 3; seed++) {
		fx_t f;
		fx_init(&f, 100);
		srandom(seed);
		int nck = 0, controls = 0, chained = 0;
		size_t longest = 0;
		for (int step = 0; step < 400; step++) {
			feed(&f, (int)(random() % NT));
			if (random() % 6)
				continue;
			sv_ckpt_parts_t p = parts_of(&f, f.ct);
			sv_ckpt_info_t info;
			sv_error_t *err = sv_ckpt_take(
				&f.conf, &p, SV_WATERMARK_NONE, &info);
			if (err)
				fail_msg("take: %s", err->message);
			nck++;
			/* a restore from the store equals the state */
			sv_ckpt_conf_t rc = f.conf;
			sv_ckpt_incr_t rincr = {.full_every = 100};
			rc.attempt = 2;
			rc.incr = &rincr;
			task_t b[NT];
			sv_ckpt_task_t bct[NT];
			int64_t restored;
			recover(&f, &rc, b, bct, &restored);
			assert_int_equal(restored, info.id);
			for (int i = 0; i < NT; i++) {
				char *sa = state_text(f.a[i].pl);
				char *sb = state_text(b[i].pl);
				assert_string_equal(sb, sa);
				free(sb);
				task_free(&b[i]);
				/* by hand: the same, and one delta less
				 * differs */
				task_t c;
				task_new(f.in, &c);
				size_t n = apply_chain(&f, i, info.id, c.pl,
						       -1);
				sb = state_text(c.pl);
				assert_string_equal(sb, sa);
				free(sb);
				task_free(&c);
				if (n > longest)
					longest = n;
				if (n >= 3) {
					chained++;
					task_new(f.in, &c);
					apply_chain(
						&f, i, info.id, c.pl,
						1 +
							(int)(random() %
							      (long)(n - 2)));
					sb = state_text(c.pl);
					controls += strcmp(sa, sb) != 0;
					free(sb);
					task_free(&c);
				}
				free(sa);
			}
		}
		assert_true(nck > 40);
		assert_true(f.incr.deltas > 0);
		/* a full rewrite ended some chains (bytes rule), beyond the
		 * first full of each task */
		assert_true(f.incr.fulls > NT);
		assert_true(longest >= 3);
		assert_true(chained > 0);
		assert_true(controls > 0);
		/* retention deleted old records (retain 2) */
		int64_t *ids;
		size_t n;
		assert_null(sv_ckstore_task_ids(f.st, "j", 0, &ids, &n));
		assert_true(n < (size_t)nck);
		free(ids);
		fx_free(&f);
	}
}

/* A checkpoint whose transaction did not commit gives no delta: its
 * record is marked aborted at recovery and the restore is the state of
 * the checkpoint before it, from that one's chain. */
static void test_aborted_delta_not_applied(void **state)
{
	(void)state;
	fx_t f;
	fx_init(&f, 100);
	srandom(7);
	sv_ckpt_info_t info;
	int64_t last = 0;
	char *want[NT] = {0};
	/* checkpoints until one of partition 0 is a delta on top of one
	 * that is itself a delta: that one will not commit */
	for (int c = 0;; c++) {
		assert_true(c < 50);
		for (int s = 0; s < 8; s++)
			feed(&f, s % NT);
		char *cur[NT]; /* the state this checkpoint holds */
		for (int i = 0; i < NT; i++)
			cur[i] = state_text(f.a[i].pl);
		int64_t before = f.ct[0].incr.chain;
		sv_ckpt_parts_t p = parts_of(&f, f.ct);
		assert_null(
			sv_ckpt_take(&f.conf, &p, SV_WATERMARK_NONE, &info));
		bool stop = before >= 1 && f.ct[0].incr.chain == before + 1;
		for (int i = 0; i < NT; i++) {
			free(stop ? cur[i] : want[i]);
			if (!stop)
				want[i] = cur[i];
		}
		if (stop)
			break;
		last = info.id;
	}
	/* the newest: back to PREPARED, its transaction "not committed" */
	assert_null(sv_ckstore_mark(
		f.st, "j", info.id,
		STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED, -1));
	sv_ckrec_t *tr;
	assert_null(sv_ckstore_get_task(f.st, "j", 0, info.id, &tr));
	assert_true(tr->delta_of > 0); /* it was a delta */
	sv_ckstore_free_record(tr);
	sv_ckpt_conf_t rc = f.conf;
	sv_ckpt_incr_t rincr = {.full_every = 100};
	rc.attempt = 2;
	rc.incr = &rincr;
	rc.transactional = true;
	f.src.tag = last;
	task_t b[NT];
	sv_ckpt_task_t bct[NT];
	int64_t restored;
	recover(&f, &rc, b, bct, &restored);
	assert_int_equal(restored, last);
	for (int i = 0; i < NT; i++) {
		char *sb = state_text(b[i].pl);
		assert_string_equal(sb, want[i]);
		free(sb);
		free(want[i]);
		task_free(&b[i]);
	}
	sv_ckrec_t *ck;
	assert_null(sv_ckstore_get(f.st, "j", info.id, &ck));
	assert_int_equal(ck->status,
			 STREAMVISOR__CHECKPOINT_RECORD__STATUS__ABORTED);
	sv_ckstore_free_record(ck);
	fx_free(&f);
}

/* full_every 1 (incremental off) writes full task records only. */
static void test_full_when_off(void **state)
{
	(void)state;
	fx_t f;
	fx_init(&f, 1);
	srandom(3);
	for (int c = 0; c < 5; c++) {
		for (int s = 0; s < 10; s++)
			feed(&f, s % NT);
		sv_ckpt_parts_t p = parts_of(&f, f.ct);
		sv_ckpt_info_t info;
		assert_null(
			sv_ckpt_take(&f.conf, &p, SV_WATERMARK_NONE, &info));
		for (int i = 0; i < NT; i++) {
			sv_ckrec_t *tr;
			assert_null(sv_ckstore_get_task(f.st, "j", i, info.id,
							&tr));
			assert_int_equal(tr->delta_of, 0);
			sv_ckstore_free_record(tr);
		}
	}
	assert_int_equal(f.incr.deltas, 0);
	fx_free(&f);
}

/* ---- distributed mode: the state topic ---- */

typedef struct topic {
	memlog_t log;
	sv_state_chain_t chain[NT], next[NT];
	char tag[NT][SV_STATE_TAG_MAX]; /* committed */
	char pending[SV_STATE_TAG_MAX];
	bool fail; /* this checkpoint's transaction aborts */
	int64_t bytes; /* task record bytes written */
} topic_t;

/* The worker's gm_on_tasks in small: each task record as the next link
 * of its partition's chain, inside the checkpoint's "transaction". */
static sv_error_t *topic_on_tasks(void *opaque, int64_t id,
				  const sv_ckrec_t *const *recs, size_t n)
{
	topic_t *x = opaque;
	snprintf(x->pending, sizeof(x->pending), "n1-t0:%lld", (long long)id);
	for (size_t i = 0; i < n; i++) {
		size_t len = streamvisor__checkpoint_record__get_packed_size(
			recs[i]);
		char *buf = malloc(len ? len : 1);
		streamvisor__checkpoint_record__pack(recs[i], (uint8_t *)buf);
		sv_state_put_t put = {
			.partition = (int32_t)i,
			.tag = x->pending,
			.checkpoint = id,
			.next_offset = recs[i]->offsets[0]->next_offset,
			.delta_of = recs[i]->delta_of,
			.rec = buf,
			.len = len,
			.emit = memlog_emit,
			.opaque = &x->log,
		};
		sv_error_t *err = sv_state_write(&x->chain[i], &put,
						 &x->next[i]);
		free(buf);
		if (err)
			return err;
		x->bytes += (int64_t)len;
	}
	if (x->fail)
		return sv_error_new(SV_ERR_BINDING,
				    "test: the transaction aborts");
	return NULL;
}

/* Partition i's committed chain read from the log, unpacked (oldest
 * first) into recs; its length, or 0 with *err. */
static size_t topic_chain(const topic_t *x, const memlog_t *log, int i,
			  sv_ckrec_t **recs, sv_error_t **err)
{
	sv_state_snap_t *snap = malloc(sizeof(*snap));
	sv_state_snap_init(snap);
	*err = memlog_read(log, i, x->tag[i], snap);
	size_t n = *err ? 0 : (size_t)snap->m.nchain;
	for (size_t k = 0; k < n; k++) {
		recs[k] = streamvisor__checkpoint_record__unpack(
			NULL, snap->link[k].len,
			(const uint8_t *)snap->link[k].data);
		assert_non_null(recs[k]);
	}
	sv_state_snap_release(snap);
	free(snap);
	return n;
}

static void free_chain(sv_ckrec_t **recs, size_t n)
{
	for (size_t k = 0; k < n; k++)
		streamvisor__checkpoint_record__free_unpacked(recs[k], NULL);
}

static void test_state_topic_chain_random(void **state)
{
	(void)state;
	int total_deltas = 0, refused_skip = 0, refused_slot = 0, aborts = 0,
	    restores = 0, max_applied = 0, stale = 0;
	for (unsigned seed = 1; seed <= 3; seed++) {
		fx_t f;
		fx_init(&f, 100);
		srandom(100 + seed);
		topic_t *x = calloc(1, sizeof(*x));
		for (int i = 0; i < NT; i++)
			sv_state_chain_unknown(&x->chain[i]);
		int cap = 2 + (int)(random() % 6); /* deltas in a row */
		int nck = 0;
		for (int step = 0; step < 300; step++) {
			feed(&f, (int)(random() % NT));
			if (random() % 5)
				continue;
			sv_ckpt_parts_t p = parts_of(&f, f.ct);
			p.grouped = true;
			p.on_tasks = topic_on_tasks;
			p.tasks_opaque = x;
			p.task_deltas_max = cap;
			x->fail = nck > 2 && random() % 10 == 0;
			sv_ckpt_info_t info;
			sv_error_t *err = sv_ckpt_take(
				&f.conf, &p, SV_WATERMARK_NONE, &info);
			memlog_end(&x->log, !err);
			if (err) {
				assert_true(x->fail);
				sv_error_destroy(err);
				aborts++;
				continue;
			}
			nck++;
			for (int i = 0; i < NT; i++) {
				x->chain[i] = x->next[i];
				snprintf(x->tag[i], sizeof(x->tag[i]), "%s",
					 x->pending);
			}
			if (random() % 3 == 0)
				memlog_compact(&x->log);
			for (int i = 0; i < NT; i++) {
				sv_ckrec_t *recs[SV_STATE_CHAIN_MAX];
				size_t n = topic_chain(x, &x->log, i, recs,
						       &err);
				if (err)
					fail_msg("read: %s", err->message);
				assert_true(n >= 1 && (int)n <= cap + 1);
				assert_int_equal(recs[n - 1]->id, info.id);
				/* a new owner's restore equals the state */
				sv_ckpt_conf_t rc = f.conf;
				sv_ckpt_incr_t rincr = {.full_every = 100};
				rc.attempt = 2;
				rc.incr = &rincr;
				task_t c;
				task_new(f.in, &c);
				sv_ckpt_task_t ct = {
					.partition = i, .pl = c.pl, .wm = c.wm};
				err = sv_ckpt_restore_task_chain(
					&rc, &ct,
					(const sv_ckrec_t *const *)recs, n);
				if (err)
					fail_msg("restore: %s", err->message);
				char *sa = state_text(f.a[i].pl);
				char *sb = state_text(c.pl);
				assert_string_equal(sb, sa);
				free(sb);
				task_free(&c);
				/* the local cache's path: the store's task
				 * record, a delta on its chain in the store,
				 * the same chain as the topic's */
				sv_ckrec_t *cr = NULL;
				assert_null(sv_ckstore_get_task(f.st, "j", i,
								info.id, &cr));
				assert_non_null(cr);
				task_new(f.in, &c);
				ct.pl = c.pl;
				ct.wm = c.wm;
				int nd = -1;
				err = sv_ckpt_restore_task(&rc, &ct, cr, &nd);
				if (err)
					fail_msg("cache restore: %s",
						 err->message);
				assert_int_equal(nd, (int)n - 1);
				sb = state_text(c.pl);
				assert_string_equal(sb, sa);
				free(sb);
				free(sa);
				task_free(&c);
				sv_ckstore_free_record(cr);
				restores++;
				total_deltas += (int)n - 1;
				if ((int)n - 1 > max_applied)
					max_applied = (int)n - 1;
				if (n >= 3) {
					/* a delta before the newest left
					 * out: refused (the newest left out
					 * is an older chain, which only the
					 * manifest's tag tells apart) */
					size_t skip = 1 +
						(size_t)random() % (n - 2);
					sv_ckrec_t *less[SV_STATE_CHAIN_MAX];
					size_t m = 0;
					for (size_t k = 0; k < n; k++)
						if (k != skip)
							less[m++] = recs[k];
					task_new(f.in, &c);
					ct.pl = c.pl;
					ct.wm = c.wm;
					err = sv_ckpt_restore_task_chain(
						&rc, &ct,
						(const sv_ckrec_t *const *)less,
						m);
					assert_non_null(err);
					assert_int_equal(err->category,
							 SV_ERR_CHECKPOINT);
					sv_error_destroy(err);
					task_free(&c);
					refused_skip++;
				}
				if (n >= 2) {
					/* the newest delta's slot loses its
					 * newest value: refused */
					memlog_t cp = {0};
					char key[64];
					sv_state_chunk_key(i, (int32_t)n - 1, 0,
							   key, sizeof(key));
					size_t last = SIZE_MAX;
					for (size_t r = 0; r < x->log.n; r++) {
						memrec_t *mr = &x->log.r[r];
						memlog_emit(&cp, mr->key,
							    strlen(mr->key),
							    mr->val, mr->vlen);
						cp.r[cp.n - 1].committed =
							mr->committed;
						cp.r[cp.n - 1].gone = mr->gone;
						if (!mr->gone &&
						    mr->committed &&
						    !strcmp(mr->key, key))
							last = r;
					}
					assert_true(last != SIZE_MAX);
					cp.r[last].gone = true;
					/* every other second seed the slot's
					 * tombstones go too: an older chain's
					 * delta there (if compaction left
					 * one) shows, with its older tag */
					for (size_t r = 0;
					     seed % 2 == 0 && r < cp.n; r++)
						if (!strcmp(cp.r[r].key, key) &&
						    !cp.r[r].val)
							cp.r[r].gone = true;
					sv_ckrec_t *r2[SV_STATE_CHAIN_MAX];
					assert_int_equal(topic_chain(x, &cp, i,
								     r2, &err),
							 0);
					assert_non_null(err);
					assert_int_equal(err->category,
							 SV_ERR_CHECKPOINT);
					stale += strstr(err->message,
							"carries the tag") !=
						NULL;
					sv_error_destroy(err);
					memlog_free(&cp);
					refused_slot++;
				}
				free_chain(recs, n);
			}
		}
		assert_true(nck > 20);
		assert_true(f.incr.deltas > 0 && f.incr.fulls > NT);
		memlog_free(&x->log);
		free(x);
		fx_free(&f);
	}
	printf("state topic chains: %d restores, %d deltas applied (at most "
	       "%d in one), %d aborted transactions, refused: %d with a delta "
	       "left out, %d with a lost delta slot (%d of them showing a "
	       "stale delta)\n",
	       restores, total_deltas, max_applied, aborts, refused_skip,
	       refused_slot, stale);
	assert_true(total_deltas > 50);
	assert_true(max_applied >= 2);
	assert_true(aborts > 0);
	assert_true(refused_skip > 20 && refused_slot > 20 && stale > 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_incremental_tasks_random),
		cmocka_unit_test(test_aborted_delta_not_applied),
		cmocka_unit_test(test_full_when_off),
		cmocka_unit_test(test_state_topic_chain_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
