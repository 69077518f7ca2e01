/* test_checkpoint_store.c — the RocksDB checkpoint store: records survive a
 * reopen, ids are never reused (lazy ones too, across kill -9), latest/latest-committed/list, retention
 * keeps the newest committed (and pending) ones, job definitions, delete;
 * per-task snapshots (parallelism > 1) keyed by partition, with retention
 * per partition; the dropping writes let the caller free each state once
 * it is in the batch;
 * a torn WAL tail (what kill -9 leaves) recovers silently, and corruption in
 * the middle of the log or a record that does not unpack is a loud
 * checkpoint error, never a silent fall-back to older state. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rocksdb/c.h>

#include "checkpoint/store.h"

static char *tmpdir(void)
{
	char tmpl[] = "/tmp/sv-ckstore-XXXXXX";
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return strdup(d);
}

static void rmtree(const char *dir)
{
	char *cmd;
	if (asprintf(&cmd, "rm -rf '%s'", dir) < 0)
		abort();
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static void put(sv_ckstore_t *st, const char *job, int64_t *id_out,
		Streamvisor__CheckpointRecord__Status status, int64_t offset)
{
	int64_t id;
	assert_null(sv_ckstore_next_id(st, job, &id));
	Streamvisor__CheckpointRecord rec = STREAMVISOR__CHECKPOINT_RECORD__INIT;
	Streamvisor__PartitionOffset po = STREAMVISOR__PARTITION_OFFSET__INIT;
	Streamvisor__PartitionOffset *pos[1] = {&po};
	po.topic = "in";
	po.partition = 3;
	po.next_offset = offset;
	rec.id = id;
	rec.job_id = (char *)job;
	rec.plan_id = "p";
	rec.n_offsets = 1;
	rec.offsets = pos;
	rec.status = STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED;
	assert_null(sv_ckstore_put(st, &rec));
	if (status != STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED)
		assert_null(sv_ckstore_mark(st, job, id, status, 7));
	if (id_out)
		*id_out = id;
}

static void test_records_and_reopen(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	sv_ckrec_t *rec;
	assert_null(sv_ckstore_latest(st, "j1", &rec));
	assert_null(rec);
	int64_t a, b, c;
	put(st, "j1", &a, STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED,
	    10);
	put(st, "j1", &b, STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED,
	    20);
	put(st, "j1", &c, STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED, 30);
	put(st, "j10", NULL, STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED,
	    99);
	assert_int_equal(a, 1);
	assert_int_equal(c, 3);
	sv_ckstore_close(st);

	assert_null(sv_ckstore_open(dir, &st));
	assert_null(sv_ckstore_latest(st, "j1", &rec));
	assert_non_null(rec);
	assert_int_equal(rec->id, 3);
	assert_int_equal(rec->status,
			 STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED);
	assert_int_equal(rec->offsets[0]->next_offset, 30);
	sv_ckstore_free_record(rec);
	assert_null(sv_ckstore_latest_committed(st, "j1", INT64_MAX, &rec));
	assert_int_equal(rec->id, 2);
	assert_int_equal(rec->duration_ms, 7);
	sv_ckstore_free_record(rec);
	assert_null(sv_ckstore_latest_committed(st, "j1", 2, &rec));
	assert_int_equal(rec->id, 1);
	sv_ckstore_free_record(rec);
	assert_null(sv_ckstore_latest_committed(st, "j1", 1, &rec));
	assert_null(rec);
	/* j10 is not j1's neighbour in the walks */
	assert_null(sv_ckstore_latest(st, "j10", &rec));
	assert_int_equal(rec->offsets[0]->next_offset, 99);
	sv_ckstore_free_record(rec);
	/* ids continue after reopen */
	int64_t d;
	assert_null(sv_ckstore_next_id(st, "j1", &d));
	assert_int_equal(d, 4);
	sv_ckrec_t **recs;
	size_t n;
	assert_null(sv_ckstore_list(st, "j1", 10, &recs, &n));
	assert_int_equal(n, 3);
	assert_int_equal(recs[0]->id, 3);
	assert_int_equal(recs[2]->id, 1);
	for (size_t i = 0; i < n; i++)
		sv_ckstore_free_record(recs[i]);
	free(recs);
	sv_ckstore_close(st);
	rmtree(dir);
	free(dir);
}

static void test_many_ids_ordered(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	/* ids beyond one and two bytes keep their order */
	for (int i = 0; i < 300; i++)
		put(st, "j", NULL,
		    STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED, i);
	sv_ckrec_t *rec;
	assert_null(sv_ckstore_latest(st, "j", &rec));
	assert_int_equal(rec->id, 300);
	sv_ckstore_free_record(rec);
	assert_null(sv_ckstore_latest_committed(st, "j", 257, &rec));
	assert_int_equal(rec->id, 256);
	sv_ckstore_free_record(rec);
	sv_ckstore_close(st);
	rmtree(dir);
	free(dir);
}

/* Lazy ids (the sequence's write not synced) share the one sequence with
 * synced ones, and one taken just before a kill -9 is not handed out again
 * (the WAL was written, only not synced). */
static void test_lazy_ids(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	int64_t id;
	assert_null(sv_ckstore_open(dir, &st));
	assert_null(sv_ckstore_next_id_lazy(st, "j", &id));
	assert_int_equal(id, 1);
	assert_null(sv_ckstore_next_id(st, "j", &id));
	assert_int_equal(id, 2);
	assert_null(sv_ckstore_next_id_lazy(st, "j", &id));
	assert_int_equal(id, 3);
	sv_ckstore_close(st);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sv_ckstore_t *cst;
		int64_t cid = 0;
		if (sv_ckstore_open(dir, &cst) ||
		    sv_ckstore_next_id_lazy(cst, "j", &cid) || cid != 4)
			_exit(1);
		kill(getpid(), SIGKILL); /* no close, nothing synced */
		_exit(2);
	}
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	assert_null(sv_ckstore_open(dir, &st));
	assert_null(sv_ckstore_next_id(st, "j", &id));
	assert_int_equal(id, 5);
	sv_ckstore_close(st);
	rmtree(dir);
	free(dir);
}

static void test_retention(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	const Streamvisor__CheckpointRecord__Status C =
		STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED;
	const Streamvisor__CheckpointRecord__Status A =
		STREAMVISOR__CHECKPOINT_RECORD__STATUS__ABORTED;
	const Streamvisor__CheckpointRecord__Status P =
		STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED;
	/* 1C 2A 3C 4C 5A 6C 7P */
	Streamvisor__CheckpointRecord__Status seq[] = {C, A, C, C, A, C, P};
	for (size_t i = 0; i < 7; i++)
		put(st, "j", NULL, seq[i], (int64_t)i);
	assert_null(sv_ckstore_retain(st, "j", 2));
	sv_ckrec_t **recs;
	size_t n;
	assert_null(sv_ckstore_list(st, "j", 100, &recs, &n));
	/* kept: 7 (pending), 6, 5, 4 (the 2nd newest committed) */
	assert_int_equal(n, 4);
	assert_int_equal(recs[0]->id, 7);
	assert_int_equal(recs[3]->id, 4);
	for (size_t i = 0; i < n; i++)
		sv_ckstore_free_record(recs[i]);
	free(recs);
	/* ids are not reused after retention */
	int64_t id;
	assert_null(sv_ckstore_next_id(st, "j", &id));
	assert_int_equal(id, 8);
	sv_ckstore_close(st);
	rmtree(dir);
	free(dir);
}

/* Incremental checkpoints: retention keeps, below the newest `retain`
 * committed records, the chain (delta_of) the oldest kept delta builds on,
 * down to its full record, and nothing older. */
static void test_retention_keeps_delta_chain(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	/* 1 full, 2 full, 3 delta of 2, 4 delta of 3, 5 delta of 4: all
	 * committed */
	for (int64_t i = 1; i <= 5; i++) {
		int64_t id;
		assert_null(sv_ckstore_next_id(st, "j", &id));
		assert_int_equal(id, i);
		Streamvisor__CheckpointRecord rec =
			STREAMVISOR__CHECKPOINT_RECORD__INIT;
		Streamvisor__OperatorState os =
			STREAMVISOR__OPERATOR_STATE__INIT;
		Streamvisor__OperatorState *osp[1] = {&os};
		os.index = 0;
		os.kind = "window";
		os.state.data = (uint8_t *)"state";
		os.state.len = 5;
		os.delta = i >= 3;
		rec.id = id;
		rec.job_id = "j";
		rec.plan_id = "p";
		rec.n_operators = 1;
		rec.operators = osp;
		rec.delta_of = i >= 3 ? i - 1 : 0;
		assert_null(sv_ckstore_put(st, &rec));
		assert_null(sv_ckstore_mark(
			st, "j", id,
			STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED, 1));
	}
	assert_null(sv_ckstore_retain(st, "j", 2));
	sv_ckrec_t **recs;
	size_t n;
	assert_null(sv_ckstore_list(st, "j", 100, &recs, &n));
	/* kept: 5, 4 (retain 2), 3 and 2 (the chain of 4); 1 deleted */
	assert_int_equal(n, 4);
	assert_int_equal(recs[0]->id, 5);
	assert_int_equal(recs[3]->id, 2);
	assert_int_equal(recs[1]->delta_of, 3);
	assert_true(recs[1]->operators[0]->delta);
	for (size_t i = 0; i < n; i++)
		sv_ckstore_free_record(recs[i]);
	free(recs);
	/* the base's state bytes are still there */
	sv_ckrec_t *base;
	assert_null(sv_ckstore_get(st, "j", 2, &base));
	assert_non_null(base);
	assert_int_equal(base->operators[0]->state.len, 5);
	sv_ckstore_free_record(base);
	sv_ckstore_close(st);
	rmtree(dir);
	free(dir);
}

/* A member's checkpoint at parallelism 2 as put_tasks takes it: the
 * member record over partitions (a, b), task i over partition i's offset
 * with the operator states ops[i] (one operator each). */
typedef struct member_rec {
	Streamvisor__PartitionOffset po[2];
	Streamvisor__PartitionOffset *pos[2];
	Streamvisor__CheckpointRecord rec;
	Streamvisor__CheckpointRecord t[2];
	const Streamvisor__CheckpointRecord *tp[2];
} member_rec_t;

static void member_rec(member_rec_t *mr, int64_t id, int32_t a, int32_t b,
		       Streamvisor__OperatorState **ops[2])
{
	for (int i = 0; i < 2; i++) {
		mr->po[i] = (Streamvisor__PartitionOffset)
			STREAMVISOR__PARTITION_OFFSET__INIT;
		mr->pos[i] = &mr->po[i];
		mr->t[i] = (Streamvisor__CheckpointRecord)
			STREAMVISOR__CHECKPOINT_RECORD__INIT;
		mr->t[i].id = id;
		mr->t[i].job_id = "j";
		mr->t[i].n_offsets = 1;
		mr->t[i].offsets = &mr->pos[i];
		mr->t[i].n_operators = 1;
		mr->t[i].operators = ops[i];
		mr->tp[i] = &mr->t[i];
	}
	mr->po[0].partition = a;
	mr->po[0].next_offset = 100 + id;
	mr->po[1].partition = b;
	mr->po[1].next_offset = 200 + id;
	mr->rec = (Streamvisor__CheckpointRecord)
		STREAMVISOR__CHECKPOINT_RECORD__INIT;
	mr->rec.id = id;
	mr->rec.job_id = "j";
	mr->rec.plan_id = "p";
	mr->rec.n_offsets = 2;
	mr->rec.offsets = mr->pos;
	mr->rec.parallelism = 2;
}

/* The dropping writes: drop is called once per state that is in the
 * batch, and the caller may overwrite and free it there: what is read back
 * is what was put (parallelism 1 and task records). */
typedef struct drops {
	uint8_t **bufs; /* [r * 2 + op] */
	size_t len;
	int calls;
} drops_t;

static void drop_poison(void *opaque, size_t r, size_t op)
{
	drops_t *d = opaque;
	uint8_t **b = &d->bufs[r * 2 + op];
	assert_non_null(*b); /* once each */
	memset(*b, 0xAA, d->len);
	free(*b);
	*b = NULL;
	d->calls++;
}

static uint8_t *state_bytes(size_t len, int seed)
{
	uint8_t *b = malloc(len);
	assert_non_null(b);
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 7 + (size_t)seed);
	return b;
}

static void test_put_dropping(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	const size_t len = 1 << 20; /* a large value: blob-file sized */
	uint8_t *bufs[4] = {0};
	drops_t d = {.bufs = bufs, .len = len};
	Streamvisor__OperatorState os[4] = {STREAMVISOR__OPERATOR_STATE__INIT,
					    STREAMVISOR__OPERATOR_STATE__INIT,
					    STREAMVISOR__OPERATOR_STATE__INIT,
					    STREAMVISOR__OPERATOR_STATE__INIT};
	Streamvisor__OperatorState *osp[4] = {&os[0], &os[1], &os[2], &os[3]};
	for (int i = 0; i < 4; i++) {
		os[i].index = (uint32_t)(i % 2);
		os[i].kind = "lookup";
		bufs[i] = state_bytes(len, i);
		os[i].state.data = bufs[i];
		os[i].state.len = len;
	}
	/* parallelism 1: two operators */
	int64_t id;
	assert_null(sv_ckstore_next_id(st, "j", &id));
	Streamvisor__CheckpointRecord rec = STREAMVISOR__CHECKPOINT_RECORD__INIT;
	rec.id = id;
	rec.job_id = "j";
	rec.plan_id = "p";
	rec.n_operators = 2;
	rec.operators = osp;
	assert_null(sv_ckstore_put_dropping(st, &rec, drop_poison, &d));
	assert_int_equal(d.calls, 2);
	sv_ckrec_t *got;
	assert_null(sv_ckstore_get(st, "j", id, &got));
	assert_non_null(got);
	assert_int_equal(got->n_operators, 2);
	for (int i = 0; i < 2; i++) {
		uint8_t *want = state_bytes(len, i);
		assert_int_equal(got->operators[i]->state.len, len);
		assert_memory_equal(got->operators[i]->state.data, want, len);
		free(want);
	}
	sv_ckstore_free_record(got);

	/* task records: two tasks of one operator each (fresh states: the
	 * first ones of slots 2 and 3 were not in the p1 record) */
	for (int i = 2; i < 4; i++) {
		free(bufs[i]);
		bufs[i] = state_bytes(len, i);
		os[i].state.data = bufs[i];
	}
	d.calls = 0;
	assert_null(sv_ckstore_next_id(st, "j", &id));
	member_rec_t mr;
	member_rec(&mr, id, 0, 1,
		   (Streamvisor__OperatorState * *[2]){&osp[2], &osp[3]});
	/* task i's operator 0 is bufs[i * 2 + 0]: give them those slots */
	bufs[0] = bufs[2];
	bufs[2] = bufs[3];
	bufs[3] = NULL;
	assert_null(sv_ckstore_put_tasks_dropping(st, &mr.rec, mr.tp, 2,
						  drop_poison, &d));
	assert_int_equal(d.calls, 2);
	for (int i = 0; i < 2; i++) {
		assert_null(sv_ckstore_get_task(st, "j", i, id, &got));
		assert_non_null(got);
		uint8_t *want = state_bytes(len, 2 + i);
		assert_int_equal(got->operators[0]->state.len, len);
		assert_memory_equal(got->operators[0]->state.data, want, len);
		free(want);
		sv_ckstore_free_record(got);
	}
	for (int i = 0; i < 4; i++)
		free(bufs[i]);
	sv_ckstore_close(st);
	rmtree(dir);
	free(dir);
}

/* One member checkpoint at parallelism > 1: the member record over
 * partitions (a, b) and a task snapshot of each, with state bytes. */
static int64_t put_member(sv_ckstore_t *st, int32_t a, int32_t b,
			  Streamvisor__CheckpointRecord__Status status)
{
	int64_t id;
	assert_null(sv_ckstore_next_id(st, "j", &id));
	Streamvisor__OperatorState os = STREAMVISOR__OPERATOR_STATE__INIT;
	Streamvisor__OperatorState *osp[1] = {&os};
	char bytes[16];
	snprintf(bytes, sizeof(bytes), "state-%lld", (long long)id);
	os.kind = "window";
	os.state.data = (uint8_t *)bytes;
	os.state.len = strlen(bytes);
	member_rec_t mr;
	member_rec(&mr, id, a, b,
		   (Streamvisor__OperatorState * *[2]){osp, osp});
	assert_null(sv_ckstore_put_tasks(st, &mr.rec, mr.tp, 2));
	if (status != STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED)
		assert_null(sv_ckstore_mark(st, "j", id, status, 1));
	return id;
}

/* Task snapshots are keyed by partition: listed newest first per
 * partition, read back with their state; retention keeps the newest
 * `retain` committed per partition (and newer pending ones), and drops a
 * member record once none of its partitions has a snapshot of it; the
 * largest parallelism is remembered. */
static void test_task_snapshots(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	const Streamvisor__CheckpointRecord__Status C =
		STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED;
	const Streamvisor__CheckpointRecord__Status P =
		STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED;
	/* member 0 owns 0 and 2, member 1 owns 1 and 3 */
	put_member(st, 0, 2, C); /* 1 */
	put_member(st, 1, 3, C); /* 2 */
	put_member(st, 0, 2, C); /* 3 */
	put_member(st, 0, 2, C); /* 4 */
	put_member(st, 1, 3, C); /* 5 */
	put_member(st, 0, 2, P); /* 6 */
	int64_t *ids;
	size_t n;
	assert_null(sv_ckstore_task_ids(st, "j", 2, &ids, &n));
	assert_int_equal(n, 4);
	assert_int_equal(ids[0], 6);
	assert_int_equal(ids[3], 1);
	free(ids);
	sv_ckrec_t *t;
	assert_null(sv_ckstore_get_task(st, "j", 3, 5, &t));
	assert_non_null(t);
	assert_int_equal(t->offsets[0]->partition, 3);
	assert_int_equal(t->offsets[0]->next_offset, 205);
	assert_int_equal(t->n_operators, 1);
	assert_memory_equal(t->operators[0]->state.data, "state-5", 7);
	sv_ckstore_free_record(t);
	assert_null(sv_ckstore_get_task(st, "j", 0, 5, &t));
	assert_null(t);

	/* member 0's retention (retain 2): partitions 0 and 2 keep 6 (pending),
	 * 4 and 3; 1 goes, with its member record. Member 1's records stay. */
	int32_t mine[2] = {0, 2};
	assert_null(sv_ckstore_retain_tasks(st, "j", mine, 2, 2));
	assert_null(sv_ckstore_task_ids(st, "j", 0, &ids, &n));
	assert_int_equal(n, 3);
	assert_int_equal(ids[2], 3);
	free(ids);
	sv_ckrec_t *rec;
	assert_null(sv_ckstore_get(st, "j", 1, &rec));
	assert_null(rec);
	assert_null(sv_ckstore_get(st, "j", 2, &rec));
	assert_non_null(rec);
	assert_int_equal(rec->parallelism, 2);
	sv_ckstore_free_record(rec);

	int before;
	assert_null(sv_ckstore_max_parallelism(st, "j", 4, &before));
	assert_int_equal(before, 0);
	assert_null(sv_ckstore_max_parallelism(st, "j", 2, &before));
	assert_int_equal(before, 4);
	assert_null(sv_ckstore_max_parallelism(st, "j", 2, &before));
	assert_int_equal(before, 4);

	/* deleting the job with its checkpoints removes the snapshots too */
	assert_null(sv_ckstore_delete_job(st, "j", true));
	assert_null(sv_ckstore_task_ids(st, "j", 3, &ids, &n));
	assert_int_equal(n, 0);
	free(ids);
	assert_null(sv_ckstore_max_parallelism(st, "j", 1, &before));
	assert_int_equal(before, 0);
	sv_ckstore_close(st);
	rmtree(dir);
	free(dir);
}

/* A raw read of key (the test speaks RocksDB directly, store closed):
 * the value, or NULL; *len its length. */
static char *raw_get(const char *dir, const char *key, size_t *len)
{
	rocksdb_options_t *o = rocksdb_options_create();
	char *rerr = NULL;
	rocksdb_t *db = rocksdb_open(o, dir, &rerr);
	assert_null(rerr);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *v = rocksdb_get(db, ro, key, strlen(key), len, &rerr);
	assert_null(rerr);
	rocksdb_readoptions_destroy(ro);
	rocksdb_close(db);
	rocksdb_options_destroy(o);
	return v;
}

/* Task state lives apart from its task record (tv/, docs/checkpoints.md):
 * the record under ts/ holds no state bytes, the state reads back with
 * sv_ckstore_get_task, retention and job deletion remove it, and a task
 * record of the older layout (state inline) still reads. */
static void test_task_state_apart(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	const Streamvisor__CheckpointRecord__Status C =
		STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED;
	for (int i = 0; i < 3; i++)
		put_member(st, 0, 1, C); /* 1, 2, 3 */
	sv_ckstore_close(st);
	size_t len;
	char *v = raw_get(dir, "ts/j/00000000/0000000000000001", &len);
	assert_non_null(v);
	assert_null(memmem(v, len, "state-1", 7));
	free(v);
	v = raw_get(dir, "tv/j/00000000/0000000000000001/0000", &len);
	assert_non_null(v);
	assert_int_equal(len, 7);
	assert_memory_equal(v, "state-1", 7);
	free(v);
	/* a task record of the older layout, written behind the store */
	Streamvisor__PartitionOffset po = STREAMVISOR__PARTITION_OFFSET__INIT;
	Streamvisor__PartitionOffset *pop = &po;
	po.partition = 5;
	Streamvisor__OperatorState os = STREAMVISOR__OPERATOR_STATE__INIT;
	Streamvisor__OperatorState *osp = &os;
	os.kind = "window";
	os.state.data = (uint8_t *)"inline-9";
	os.state.len = 8;
	Streamvisor__CheckpointRecord t = STREAMVISOR__CHECKPOINT_RECORD__INIT;
	t.id = 9;
	t.job_id = "j";
	t.n_offsets = 1;
	t.offsets = &pop;
	t.n_operators = 1;
	t.operators = &osp;
	size_t tl = streamvisor__checkpoint_record__get_packed_size(&t);
	uint8_t *tb = malloc(tl);
	streamvisor__checkpoint_record__pack(&t, tb);
	rocksdb_options_t *o = rocksdb_options_create();
	char *rerr = NULL;
	rocksdb_t *db = rocksdb_open(o, dir, &rerr);
	assert_null(rerr);
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	const char *key = "ts/j/00000005/0000000000000009";
	rocksdb_put(db, wo, key, strlen(key), (const char *)tb, tl, &rerr);
	assert_null(rerr);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_close(db);
	rocksdb_options_destroy(o);
	free(tb);
	assert_null(sv_ckstore_open(dir, &st));
	sv_ckrec_t *r;
	assert_null(sv_ckstore_get_task(st, "j", 5, 9, &r));
	assert_non_null(r);
	assert_int_equal(r->operators[0]->state.len, 8);
	assert_memory_equal(r->operators[0]->state.data, "inline-9", 8);
	sv_ckstore_free_record(r);
	assert_null(sv_ckstore_get_task(st, "j", 0, 2, &r));
	assert_memory_equal(r->operators[0]->state.data, "state-2", 7);
	sv_ckstore_free_record(r);
	/* retention (retain 1) deletes 1 and 2 with their state */
	int32_t mine[1] = {0};
	assert_null(sv_ckstore_retain_tasks(st, "j", mine, 1, 1));
	sv_ckstore_close(st);
	v = raw_get(dir, "tv/j/00000000/0000000000000002/0000", &len);
	assert_null(v);
	v = raw_get(dir, "tv/j/00000000/0000000000000003/0000", &len);
	assert_non_null(v);
	free(v);
	assert_null(sv_ckstore_open(dir, &st));
	assert_null(sv_ckstore_delete_job(st, "j", true));
	sv_ckstore_close(st);
	v = raw_get(dir, "tv/j/00000000/0000000000000003/0000", &len);
	assert_null(v);
	rmtree(dir);
	free(dir);
}

static sv_error_t *count_job(void *opaque, const char *id, const char *data,
			     size_t len)
{
	int *n = opaque;
	(*n)++;
	if (!strcmp(id, "j2"))
		assert_memory_equal(data, "{\"b\":2}", len);
	return NULL;
}

static void test_jobs(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	assert_null(sv_ckstore_put_job(st, "j1", "{\"a\":1}", 7));
	assert_null(sv_ckstore_put_job(st, "j2", "{\"b\":2}", 7));
	put(st, "j1", NULL, STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED,
	    1);
	int n = 0;
	assert_null(sv_ckstore_each_job(st, count_job, &n));
	assert_int_equal(n, 2);
	/* forgetting the job keeps its checkpoints unless asked */
	assert_null(sv_ckstore_delete_job(st, "j1", false));
	n = 0;
	assert_null(sv_ckstore_each_job(st, count_job, &n));
	assert_int_equal(n, 1);
	sv_ckrec_t *rec;
	assert_null(sv_ckstore_latest(st, "j1", &rec));
	assert_non_null(rec);
	sv_ckstore_free_record(rec);
	assert_null(sv_ckstore_delete_job(st, "j1", true));
	assert_null(sv_ckstore_latest(st, "j1", &rec));
	assert_null(rec);
	sv_ckstore_close(st);
	rmtree(dir);
	free(dir);
}

/* The one WAL file of the store (the newest *.log). */
static char *wal_path(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	char *best = NULL;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".log") &&
		    (!best || strcmp(e->d_name, best) > 0)) {
			free(best);
			best = strdup(e->d_name);
		}
	}
	closedir(d);
	assert_non_null(best);
	char *p;
	if (asprintf(&p, "%s/%s", dir, best) < 0)
		abort();
	free(best);
	return p;
}

static void test_torn_tail_recovers(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	for (int i = 0; i < 5; i++)
		put(st, "j", NULL,
		    STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED, i);
	sv_ckstore_close(st);
	/* a half-written record at the end: garbage appended, as kill -9
	 * in the middle of a write leaves it */
	char *wal = wal_path(dir);
	struct stat sb;
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(sb.st_size > 0);
	int fd = open(wal, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	char junk[40];
	memset(junk, 0xab, sizeof(junk));
	junk[0] = 0x11; /* a header that claims more than is there */
	assert_int_equal(write(fd, junk, sizeof(junk)), sizeof(junk));
	close(fd);
	assert_null(sv_ckstore_open(dir, &st));
	sv_ckrec_t *rec;
	assert_null(sv_ckstore_latest(st, "j", &rec));
	assert_non_null(rec);
	assert_int_equal(rec->id, 5);
	sv_ckstore_free_record(rec);
	sv_ckstore_close(st);
	free(wal);
	rmtree(dir);
	free(dir);
}

static void test_mid_log_corruption_is_loud(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	for (int i = 0; i < 50; i++)
		put(st, "j", NULL,
		    STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED, i);
	sv_ckstore_close(st);
	char *wal = wal_path(dir);
	struct stat sb;
	assert_int_equal(stat(wal, &sb), 0);
	/* flip bytes in the middle of the log: a checksum mismatch that is
	 * not at the tail */
	int fd = open(wal, O_RDWR);
	assert_true(fd >= 0);
	off_t mid = sb.st_size / 2;
	unsigned char buf[16];
	assert_int_equal(pread(fd, buf, sizeof(buf), mid), sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] ^= 0x5a;
	assert_int_equal(pwrite(fd, buf, sizeof(buf), mid), sizeof(buf));
	close(fd);
	sv_error_t *err = sv_ckstore_open(dir, &st);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	assert_non_null(strstr(err->message, dir));
	assert_non_null(strstr(err->message, "orrupt"));
	sv_error_destroy(err);
	free(wal);
	rmtree(dir);
	free(dir);
}

static void test_unreadable_record_is_loud(void **state)
{
	(void)state;
	char *dir = tmpdir();
	sv_ckstore_t *st;
	assert_null(sv_ckstore_open(dir, &st));
	put(st, "j", NULL, STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED,
	    1);
	sv_ckstore_close(st);
	/* a newer record whose bytes are not a CheckpointRecord, written
	 * behind the store's back (the test speaks RocksDB directly) */
	rocksdb_options_t *o = rocksdb_options_create();
	char *rerr = NULL;
	rocksdb_t *db = rocksdb_open(o, dir, &rerr);
	assert_null(rerr);
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	const char *key = "ck/j/0000000000000002";
	rocksdb_put(db, wo, key, strlen(key), "\xff\xff\xff\x07", 4, &rerr);
	assert_null(rerr);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_close(db);
	rocksdb_options_destroy(o);
	assert_null(sv_ckstore_open(dir, &st));
	sv_ckrec_t *got = NULL;
	/* never a silent fall-back to checkpoint 1 */
	sv_error_t *err = sv_ckstore_latest(st, "j", &got);
	assert_non_null(err);
	assert_null(got);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	assert_non_null(strstr(err->message, key));
	assert_non_null(strstr(err->message, "corrupt"));
	sv_error_destroy(err);
	err = sv_ckstore_latest_committed(st, "j", INT64_MAX, &got);
	assert_non_null(err);
	sv_error_destroy(err);
	sv_ckstore_close(st);
	rmtree(dir);
	free(dir);
}

static void test_open_errors(void **state)
{
	(void)state;
	sv_ckstore_t *st;
	sv_error_t *err = sv_ckstore_open("/proc/no-such/dir", &st);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	assert_non_null(strstr(err->message, "/proc/no-such/dir"));
	sv_error_destroy(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_and_reopen),
		cmocka_unit_test(test_many_ids_ordered),
		cmocka_unit_test(test_lazy_ids),
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_retention_keeps_delta_chain),
		cmocka_unit_test(test_put_dropping),
		cmocka_unit_test(test_task_snapshots),
		cmocka_unit_test(test_task_state_apart),
		cmocka_unit_test(test_jobs),
		cmocka_unit_test(test_torn_tail_recovers),
		cmocka_unit_test(test_mid_log_corruption_is_loud),
		cmocka_unit_test(test_unreadable_record_is_loud),
		cmocka_unit_test(test_open_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
