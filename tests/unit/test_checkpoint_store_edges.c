/* test_checkpoint_store_edges.c — the checkpoint store (checkpoint/store.c)
 * past what test_checkpoint_store.c covers: multi-MiB operator state read
 * back byte for byte (also after marking and a reopen), key order with ids
 * past two and four bytes, many jobs with prefix-like ids interleaved,
 * retention edge cases, a WAL whose last (multi-block) record was cut short
 * recovering silently, a damaged SST failing loudly instead of returning
 * other bytes or an older checkpoint, and every write acknowledged before a
 * real SIGKILL of the writing process present after reopening (RocksDB
 * db_crashtest's invariant). The test speaks RocksDB directly only to
 * flush memtables into an SST. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rocksdb/c.h>

#include "checkpoint/store.h"
#include "core/util.h"

#define PREPARED STREAMVISOR__CHECKPOINT_RECORD__STATUS__PREPARED
#define COMMITTED STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED
#define ABORTED STREAMVISOR__CHECKPOINT_RECORD__STATUS__ABORTED

typedef struct fx {
	char root[64]; /* mkdtemp */
	char dir[128]; /* root/data/checkpoints: created by the store */
	sv_ckstore_t *st;
} fx_t;

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	snprintf(f->root, sizeof(f->root), "/tmp/sv-ckstore-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->dir, sizeof(f->dir), "%s/data/checkpoints", f->root);
	*state = f;
	return 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	fx_t *f = *state;
	sv_ckstore_close(f->st);
	assert_int_equal(nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
	free(f);
	return 0;
}

static void ok(sv_error_t *err)
{
	if (err) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", err->message);
		sv_error_destroy(err);
		fail_msg("unexpected error: %s", msg);
	}
}

static void open_store(fx_t *f)
{
	ok(sv_ckstore_open(f->dir, &f->st));
}

static void close_store(fx_t *f)
{
	sv_ckstore_close(f->st);
	f->st = NULL;
}

static void reopen(fx_t *f)
{
	close_store(f);
	open_store(f);
}

/* A record of job with one partition offset, and nops operators whose
 * state is statelen bytes derived from (id, operator). The caller frees
 * with rec_release. */
typedef struct rec_parts {
	sv_ckrec_t rec;
	Streamvisor__PartitionOffset off[2], *offp[2];
	Streamvisor__OperatorState ops[3], *opp[3];
	uint8_t *state[3];
	char kind[3][16];
} rec_parts_t;

/* State bytes that do not compress (so an SST holds them as they are). */
static uint8_t state_byte(int64_t id, size_t op, size_t i)
{
	uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15ULL ^ op << 40 ^ i;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return (uint8_t)(x >> 24);
}

static void rec_make(rec_parts_t *p, const char *job, int64_t id, size_t nops,
		     size_t statelen)
{
	memset(p, 0, sizeof(*p));
	streamvisor__checkpoint_record__init(&p->rec);
	p->rec.id = id;
	p->rec.job_id = (char *)job;
	p->rec.attempt = 3;
	p->rec.plan_id = "plan-abc";
	p->rec.status = PREPARED;
	p->rec.watermark_ms = 1000 + id;
	p->rec.started_at_ms = 1700000000000LL + id;
	p->rec.duration_ms = 7;
	p->rec.sink_state.data = (uint8_t *)"txn-state";
	p->rec.sink_state.len = 9;
	for (int i = 0; i < 2; i++) {
		streamvisor__partition_offset__init(&p->off[i]);
		p->off[i].topic = "orders";
		p->off[i].partition = i;
		p->off[i].next_offset = id * 100 + i;
		p->off[i].watermark_ms = i ? INT64_MIN : 900 + id;
		p->offp[i] = &p->off[i];
	}
	p->rec.n_offsets = 2;
	p->rec.offsets = p->offp;
	for (size_t k = 0; k < nops; k++) {
		streamvisor__operator_state__init(&p->ops[k]);
		p->ops[k].index = (uint32_t)k; /* index 0: field left out */
		snprintf(p->kind[k], sizeof(p->kind[k]), k == 1 ? "" : "win%zu",
			 k);
		p->ops[k].kind = p->kind[k];
		/* operator 1 holds no state at all */
		size_t len = k == 1 ? 0 : statelen;
		p->state[k] = malloc(len ? len : 1);
		for (size_t i = 0; i < len; i++)
			p->state[k][i] = state_byte(id, k, i);
		p->ops[k].state.data = p->state[k];
		p->ops[k].state.len = len;
		p->opp[k] = &p->ops[k];
	}
	p->rec.n_operators = nops;
	p->rec.operators = nops ? p->opp : NULL;
}

static void rec_release(rec_parts_t *p)
{
	for (size_t k = 0; k < 3; k++)
		free(p->state[k]);
}

static void put_rec(sv_ckstore_t *st, const char *job, int64_t id, int status)
{
	rec_parts_t p;
	rec_make(&p, job, id, 2, 64);
	ok(sv_ckstore_put(st, &p.rec));
	rec_release(&p);
	if (status != PREPARED)
		ok(sv_ckstore_mark(st, job, id, status, -1));
}

/* got equals the record rec_make(job, id, nops, statelen) would build. */
static void assert_rec(const sv_ckrec_t *got, const char *job, int64_t id,
		       size_t nops, size_t statelen)
{
	assert_non_null(got);
	assert_int_equal(got->id, id);
	assert_string_equal(got->job_id, job);
	assert_int_equal(got->attempt, 3);
	assert_string_equal(got->plan_id, "plan-abc");
	assert_int_equal(got->watermark_ms, 1000 + id);
	assert_int_equal(got->started_at_ms, 1700000000000LL + id);
	assert_int_equal(got->sink_state.len, 9);
	assert_memory_equal(got->sink_state.data, "txn-state", 9);
	assert_int_equal(got->n_offsets, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_string_equal(got->offsets[i]->topic, "orders");
		assert_int_equal(got->offsets[i]->partition, i);
		assert_int_equal(got->offsets[i]->next_offset,
				 id * 100 + (int64_t)i);
		assert_true(got->offsets[i]->watermark_ms ==
			    (i ? INT64_MIN : 900 + id));
	}
	assert_int_equal(got->n_operators, nops);
	for (size_t k = 0; k < nops; k++) {
		const Streamvisor__OperatorState *os = got->operators[k];
		char kind[16];
		snprintf(kind, sizeof(kind), k == 1 ? "" : "win%zu", k);
		assert_int_equal(os->index, k);
		assert_string_equal(os->kind, kind);
		size_t len = k == 1 ? 0 : statelen;
		assert_int_equal(os->state.len, len);
		for (size_t i = 0; i < len; i++)
			if (os->state.data[i] != state_byte(id, k, i))
				fail_msg("checkpoint %" PRId64
					 " operator %zu: byte "
					 "%zu differs",
					 id, k, i);
	}
}

static int64_t *list_ids(sv_ckstore_t *st, const char *job, size_t limit,
			 size_t *n)
{
	sv_ckrec_t **recs;
	ok(sv_ckstore_list(st, job, limit, &recs, n));
	int64_t *ids = calloc(*n + 1, sizeof(*ids));
	for (size_t i = 0; i < *n; i++) {
		ids[i] = recs[i]->id;
		sv_ckstore_free_record(recs[i]);
	}
	free(recs);
	return ids;
}

static void assert_ids(sv_ckstore_t *st, const char *job, const int64_t *want,
		       size_t nwant)
{
	size_t n;
	int64_t *ids = list_ids(st, job, 0 + 10000, &n);
	if (n != nwant) {
		free(ids);
		fail_msg("job %s: %zu checkpoints, want %zu", job, n, nwant);
	}
	for (size_t i = 0; i < n; i++)
		if (ids[i] != want[i]) {
			int64_t a = ids[i], b = want[i];
			free(ids);
			fail_msg("job %s: list[%zu] = %" PRId64
				 ", want %" PRId64,
				 job, i, a, b);
		}
	free(ids);
}

static int64_t latest_committed_id(sv_ckstore_t *st, const char *job,
				   int64_t before)
{
	sv_ckrec_t *rec;
	ok(sv_ckstore_latest_committed(st, job, before, &rec));
	int64_t id = rec ? rec->id : -1;
	sv_ckstore_free_record(rec);
	return id;
}


/* ---- state, order, jobs, retention ---- */

static void test_large_state_roundtrip(void **state)
{
	fx_t *f = *state;
	open_store(f);
	/* 3 MiB + 1 in each of two operators; operator 1 holds none */
	size_t big = (3u << 20) + 1;
	rec_parts_t p;
	rec_make(&p, "job1", 1, 3, big);
	ok(sv_ckstore_put(f->st, &p.rec));
	rec_release(&p);
	rec_make(&p, "job1", 2, 0, 0); /* no operators at all */
	ok(sv_ckstore_put(f->st, &p.rec));
	rec_release(&p);

	sv_ckrec_t *rec;
	ok(sv_ckstore_get(f->st, "job1", 1, &rec));
	assert_rec(rec, "job1", 1, 3, big);
	assert_int_equal(rec->status, PREPARED);
	sv_ckstore_free_record(rec);
	ok(sv_ckstore_get(f->st, "job1", 2, &rec));
	assert_rec(rec, "job1", 2, 0, 0);
	sv_ckstore_free_record(rec);
	ok(sv_ckstore_get(f->st, "job1", 3, &rec));
	assert_null(rec);
	ok(sv_ckstore_get(f->st, "other", 1, &rec));
	assert_null(rec);

	/* marking keeps the state exact, also across a reopen */
	ok(sv_ckstore_mark(f->st, "job1", 1, COMMITTED, 1234));
	reopen(f);
	ok(sv_ckstore_latest_committed(f->st, "job1", INT64_MAX, &rec));
	assert_rec(rec, "job1", 1, 3, big);
	assert_int_equal(rec->status, COMMITTED);
	assert_int_equal(rec->duration_ms, 1234);
	sv_ckstore_free_record(rec);
	const int64_t both[] = {2, 1};
	assert_ids(f->st, "job1", both, 2);
}

/* Keys order by id also past one, two and four bytes of id. */
static void test_order_large_ids(void **state)
{
	fx_t *f = *state;
	open_store(f);
	const int64_t ids[] = {
		65536, 1,    4096, 255, 1LL << 32,       256,
		65535, 4095, 16,   15,  (1LL << 32) - 1, 1LL << 40};
	for (size_t i = 0; i < SV_ARRAY_LEN(ids); i++)
		put_rec(f->st, "j", ids[i],
			ids[i] == 65535 || ids[i] == 256 ? COMMITTED
							 : PREPARED);
	const int64_t want[] = {1LL << 40, 1LL << 32, (1LL << 32) - 1,
				65536,     65535,     4096,
				4095,      256,       255,
				16,        15,        1};
	assert_ids(f->st, "j", want, SV_ARRAY_LEN(want));
	size_t n;
	int64_t *top = list_ids(f->st, "j", 3, &n); /* limit */
	assert_int_equal(n, 3);
	assert_int_equal(top[2], (1LL << 32) - 1);
	free(top);
	sv_ckrec_t *rec;
	ok(sv_ckstore_latest(f->st, "j", &rec));
	assert_rec(rec, "j", 1LL << 40, 2, 64);
	sv_ckstore_free_record(rec);
	assert_int_equal(latest_committed_id(f->st, "j", INT64_MAX), 65535);
	assert_int_equal(latest_committed_id(f->st, "j", 65535), 256);
	assert_int_equal(latest_committed_id(f->st, "j", 65536), 65535);
	assert_int_equal(latest_committed_id(f->st, "j", 256), -1);
	reopen(f);
	assert_ids(f->st, "j", want, SV_ARRAY_LEN(want));
}

/* Job ids that are prefixes of each other or sort around '/'. */
static void test_many_jobs_interleaved(void **state)
{
	fx_t *f = *state;
	open_store(f);
	const char *jobs[] = {"a", "a.b", "a-b", "ab", "a0", "b", "A"};
	size_t nj = SV_ARRAY_LEN(jobs);
	for (int round = 1; round <= 40; round++)
		for (size_t j = 0; j < nj; j++) {
			if ((size_t)round % (j + 1))
				continue; /* job j writes every (j+1)th round */
			int64_t id;
			ok(sv_ckstore_next_id(f->st, jobs[j], &id));
			put_rec(f->st, jobs[j], id,
				round % 3 ? COMMITTED : PREPARED);
			ok(sv_ckstore_retain(f->st, jobs[j], 100));
		}
	reopen(f);
	for (size_t j = 0; j < nj; j++) {
		size_t n;
		int64_t *ids = list_ids(f->st, jobs[j], 1000, &n);
		assert_int_equal(n, 40 / (j + 1));
		for (size_t i = 0; i < n; i++)
			assert_int_equal(ids[i], (int64_t)(n - i));
		free(ids);
		sv_ckrec_t *rec;
		ok(sv_ckstore_latest(f->st, jobs[j], &rec));
		assert_rec(rec, jobs[j], (int64_t)n, 2, 64);
		sv_ckstore_free_record(rec);
	}
	/* deleting one job leaves its prefix-like neighbours alone */
	ok(sv_ckstore_delete_job(f->st, "a", true));
	for (size_t j = 0; j < nj; j++) {
		size_t n;
		free(list_ids(f->st, jobs[j], 1000, &n));
		assert_int_equal(n, j == 0 ? 0 : 40 / (j + 1));
	}
}

static void test_retention_edges(void **state)
{
	fx_t *f = *state;
	open_store(f);
	/* nothing committed: nothing deleted, however many */
	for (int64_t id = 1; id <= 4; id++)
		put_rec(f->st, "p", id, id == 2 ? ABORTED : PREPARED);
	ok(sv_ckstore_retain(f->st, "p", 1));
	const int64_t p_all[] = {4, 3, 2, 1};
	assert_ids(f->st, "p", p_all, 4);

	/* 1C 2A 3C 4P 5C 6P 7A */
	const int st7[] = {COMMITTED, ABORTED,  COMMITTED, PREPARED,
			   COMMITTED, PREPARED, ABORTED};
	for (int64_t id = 1; id <= 7; id++)
		put_rec(f->st, "j", id, st7[id - 1]);
	ok(sv_ckstore_retain(f->st, "j", 10)); /* more than there are */
	const int64_t all7[] = {7, 6, 5, 4, 3, 2, 1};
	assert_ids(f->st, "j", all7, 7);
	/* keep 2: from the newest down to the 2nd newest committed (3) */
	ok(sv_ckstore_retain(f->st, "j", 2));
	const int64_t kept2[] = {7, 6, 5, 4, 3};
	assert_ids(f->st, "j", kept2, 5);
	ok(sv_ckstore_retain(f->st, "j", 2)); /* stable */
	assert_ids(f->st, "j", kept2, 5);
	/* retain 0 or less counts as 1: the restore point stays */
	ok(sv_ckstore_retain(f->st, "j", 0));
	const int64_t kept1[] = {7, 6, 5};
	assert_ids(f->st, "j", kept1, 3);
	ok(sv_ckstore_retain(f->st, "j", -3));
	assert_ids(f->st, "j", kept1, 3);
	assert_int_equal(latest_committed_id(f->st, "j", INT64_MAX), 5);
	/* the job "p" was not touched by any of it */
	assert_ids(f->st, "p", p_all, 4);

	/* the checkpoint protocol's steady state: retain 3 after each */
	for (int64_t id = 8; id <= 30; id++) {
		put_rec(f->st, "j", id, PREPARED);
		ok(sv_ckstore_mark(f->st, "j", id, COMMITTED, -1));
		ok(sv_ckstore_retain(f->st, "j", 3));
	}
	const int64_t steady[] = {30, 29, 28};
	assert_ids(f->st, "j", steady, 3);
	reopen(f);
	assert_ids(f->st, "j", steady, 3);
}

/* ---- files under the store: WAL and SST ---- */

/* Path of the newest file in dir ending with suffix, or fail. */
static void newest_file(const char *dir, const char *suffix, char *out,
			size_t len)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	unsigned long best = 0;
	out[0] = '\0';
	size_t sl = strlen(suffix);
	while ((e = readdir(d))) {
		size_t nl = strlen(e->d_name);
		if (nl <= sl || strcmp(e->d_name + nl - sl, suffix))
			continue;
		unsigned long num = strtoul(e->d_name, NULL, 10);
		if (num >= best) {
			best = num;
			snprintf(out, len, "%s/%s", dir, e->d_name);
		}
	}
	closedir(d);
	if (!out[0])
		fail_msg("no *%s file in %s", suffix, dir);
}

static off_t file_size(const char *path)
{
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	return sb.st_size;
}

/* XOR n bytes at offset with 0x5a. */
static void damage(const char *path, off_t offset, size_t n)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	unsigned char b[256];
	assert_true(n <= sizeof(b));
	assert_int_equal(pread(fd, b, n, offset), (ssize_t)n);
	for (size_t i = 0; i < n; i++)
		b[i] ^= 0x5a;
	assert_int_equal(pwrite(fd, b, n, offset), (ssize_t)n);
	close(fd);
}

/* Records 1..4 committed, then 5 PREPARED with a 100 KiB state (several
 * 32 KiB WAL blocks) as the last write; closed. The WAL holds all of it. */
static void five_then_close(fx_t *f, char *wal, size_t len)
{
	open_store(f);
	int64_t id;
	for (int64_t want = 1; want <= 5; want++) {
		ok(sv_ckstore_next_id(f->st, "j", &id));
		assert_int_equal(id, want);
		if (id < 5)
			put_rec(f->st, "j", id, COMMITTED);
	}
	rec_parts_t p;
	rec_make(&p, "j", 5, 1, 100 * 1024);
	ok(sv_ckstore_put(f->st, &p.rec));
	rec_release(&p);
	close_store(f);
	newest_file(f->dir, ".log", wal, len);
	assert_true(file_size(wal) > 100 * 1024);
}

static void test_wal_truncated_tail(void **state)
{
	fx_t *f = *state;
	char wal[256];
	five_then_close(f, wal, sizeof(wal));
	/* kill -9 in the middle of the last write: its end never made it
	 * to the file (cut inside its last fragment) */
	assert_int_equal(truncate(wal, file_size(wal) - 5000), 0);
	open_store(f); /* silently */
	const int64_t want[] = {4, 3, 2, 1};
	assert_ids(f->st, "j", want, 4);
	assert_int_equal(latest_committed_id(f->st, "j", INT64_MAX), 4);
	sv_ckrec_t *rec;
	ok(sv_ckstore_get(f->st, "j", 4, &rec));
	assert_rec(rec, "j", 4, 2, 64);
	assert_int_equal(rec->status, COMMITTED);
	sv_ckstore_free_record(rec);
	/* the store goes on: new writes survive the next reopen */
	int64_t id;
	ok(sv_ckstore_next_id(f->st, "j", &id));
	assert_true(id > 4);
	put_rec(f->st, "j", id, COMMITTED);
	reopen(f);
	assert_int_equal(latest_committed_id(f->st, "j", INT64_MAX), id);
}

/* Memtables into an SST, with RocksDB directly (the store is closed). */
static void flush_to_sst(const char *dir)
{
	rocksdb_options_t *o = rocksdb_options_create();
	char *rerr = NULL;
	rocksdb_t *db = rocksdb_open(o, dir, &rerr);
	assert_null(rerr);
	rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(fo, 1);
	rocksdb_flush(db, fo, &rerr);
	assert_null(rerr);
	rocksdb_flushoptions_destroy(fo);
	rocksdb_close(db);
	rocksdb_options_destroy(o);
}

static void test_sst_corruption_is_loud(void **state)
{
	fx_t *f = *state;
	open_store(f);
	for (int64_t id = 1; id <= 3; id++) {
		rec_parts_t p;
		rec_make(&p, "j", id, 1, 64 * 1024);
		ok(sv_ckstore_put(f->st, &p.rec));
		rec_release(&p);
		ok(sv_ckstore_mark(f->st, "j", id, COMMITTED, -1));
	}
	close_store(f);
	flush_to_sst(f->dir);
	char sst[256];
	newest_file(f->dir, ".sst", sst, sizeof(sst));
	off_t size = file_size(sst);
	assert_true(size > 3 * 64 * 1024); /* the states are in it */
	/* data blocks come first in an SST: damage the middle of them */
	damage(sst, size / 3, 64);
	damage(sst, size / 2, 64);
	sv_ckstore_t *st = NULL;
	sv_error_t *err = sv_ckstore_open(f->dir, &st);
	if (err) { /* found at open: loud as well */
		assert_null(st);
		assert_int_equal(err->category, SV_ERR_CHECKPOINT);
		assert_non_null(strstr(err->message, f->dir));
		sv_error_destroy(err);
		return;
	}
	f->st = st;
	/* a read either fails with a checkpoint error or returns the exact
	 * bytes; at least one fails, and the newest-first walk never hands
	 * back an older checkpoint instead */
	int failed = 0;
	for (int64_t id = 1; id <= 3; id++) {
		sv_ckrec_t *rec = NULL;
		err = sv_ckstore_get(f->st, "j", id, &rec);
		if (err) {
			assert_null(rec);
			assert_int_equal(err->category, SV_ERR_CHECKPOINT);
			assert_non_null(strstr(err->message, f->dir));
			sv_error_destroy(err);
			failed++;
			continue;
		}
		assert_rec(rec, "j", id, 1, 64 * 1024);
		sv_ckstore_free_record(rec);
	}
	assert_true(failed > 0);
	sv_ckrec_t *rec = NULL;
	err = sv_ckstore_latest_committed(f->st, "j", INT64_MAX, &rec);
	if (err) {
		assert_int_equal(err->category, SV_ERR_CHECKPOINT);
		sv_error_destroy(err);
	} else {
		assert_non_null(rec);
		assert_rec(rec, "j", 3, 1, 64 * 1024);
	}
	sv_ckstore_free_record(rec);
}

/* Every write acknowledged before a SIGKILL of the writing process is
 * there after reopening (RocksDB db_crashtest's invariant), and nothing
 * that was not written appears. */
static void test_sigkill_keeps_acknowledged(void **state)
{
	fx_t *f = *state;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		sv_ckstore_t *st;
		if (sv_ckstore_open(f->dir, &st))
			_exit(2);
		for (;;) {
			int64_t id;
			if (sv_ckstore_next_id(st, "j", &id))
				_exit(3);
			rec_parts_t p;
			rec_make(&p, "j", id, 1, 4096);
			if (sv_ckstore_put(st, &p.rec) ||
			    sv_ckstore_mark(st, "j", id, COMMITTED, -1))
				_exit(4);
			rec_release(&p);
			if (write(fds[1], &id, sizeof(id)) != sizeof(id))
				_exit(5);
		}
	}
	close(fds[1]);
	int64_t acked = 0, id;
	while (acked < 40 && read(fds[0], &id, sizeof(id)) == sizeof(id))
		acked = id;
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	/* acks in the pipe that the parent had not read yet count too */
	while (read(fds[0], &id, sizeof(id)) == sizeof(id))
		acked = id;
	close(fds[0]);
	assert_true(acked >= 40);

	open_store(f);
	sv_ckrec_t *rec;
	ok(sv_ckstore_latest_committed(f->st, "j", INT64_MAX, &rec));
	assert_non_null(rec);
	/* at most one more than acknowledged: the one being written */
	assert_true(rec->id >= acked && rec->id <= acked + 1);
	assert_rec(rec, "j", rec->id, 1, 4096);
	sv_ckstore_free_record(rec);
	size_t n;
	int64_t *ids = list_ids(f->st, "j", 10000, &n);
	assert_true(n >= (size_t)acked);
	for (size_t i = 0; i < n; i++) /* no hole, no half batch */
		assert_int_equal(ids[i], ids[0] - (int64_t)i);
	assert_int_equal(ids[n - 1], 1);
	free(ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_large_state_roundtrip,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_order_large_ids, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_many_jobs_interleaved,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_edges, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wal_truncated_tail, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sst_corruption_is_loud,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_sigkill_keeps_acknowledged,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
