/* store.c — the checkpoint store on RocksDB (see store.h).
 *
 * Key layout (docs/checkpoints.md), all in the default column family:
 *   job/<job id>                     job definition (opaque bytes)
 *   seq/<job id>                     last checkpoint id allocated (8 bytes BE)
 *   ck/<job id>/<id, 16 hex digits>  packed CheckpointRecord, operators'
 *                                    state bytes left out
 *   cs/<job id>/<id>/<op index, 4 hex digits>  one operator's state
 *   ts/<job id>/<partition, 8 hex>/<id>  one task's snapshot at parallelism
 *                                    > 1: a packed CheckpointRecord with
 *                                    its one partition and its operators
 *                                    (their state under tv/)
 *   tv/<job id>/<partition>/<id>/<op index, 4 hex>  one operator's state
 *                                    of that task record, which then holds
 *                                    it empty (older task records hold it
 *                                    inline): the scan of a partition's
 *                                    task records (task ids, retention)
 *                                    visits only small values, as RocksDB
 *                                    7.8's iterator reads every value it
 *                                    steps on, blob or not
 *   ts/<job id>/<partition>/<id>/d   beside a task record that holds
 *                                    deltas: its delta_of (8 bytes BE),
 *                                    so retention walks a partition's
 *                                    chains without reading the records
 *   par/<job id>                     largest parallelism run (8 bytes BE)
 *   meta/marks                       commits marked so far (8 bytes BE)
 * State apart from the record: marking, listing and retention read and
 * rewrite only the small record (bench_checkpoint: marking a 91 MB state
 * used to rewrite all of it), and the state goes from the operator's
 * snapshot buffer into the write batch without another packed copy. Values
 * of 4 KiB and more live in blob files, so compaction does not rewrite
 * them.
 * Ids are fixed-width hex so byte order is id order and a job's newest
 * checkpoint is the last key under its prefix.
 *
 * Lost commits: with "tolerate corrupted tail" RocksDB cannot tell a torn
 * last record from damage in the middle of a small log whose length field
 * now runs past the end of the file: both end the log there, silently
 * (test_checkpoint_store shows it). So every mark-committed also bumps
 * meta/marks in its batch, and after the synced write the count goes to
 * the side file COMMIT-MARKS (pwrite + fdatasync of 16 bytes). At open, a
 * database that holds fewer marks than the side file has lost acknowledged
 * commits: a loud checkpoint error, never a silent roll-back. A kill -9
 * between the two writes leaves the side file behind, which is fine. */
#define _GNU_SOURCE
#include "checkpoint/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <fcntl.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "core/util.h"

/* kTolerateCorruptedTailRecords in rocksdb::WALRecoveryMode */
#define SV_CKSTORE_WRITE_BUFFER_BYTES (4 << 20)
#define WAL_TOLERATE_CORRUPTED_TAIL 0

struct sv_ckstore {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wopts;
	rocksdb_writeoptions_t *wopts_lazy; /* not synced: lazy ids, retention */
	rocksdb_readoptions_t *ropts;
	pthread_mutex_t seq_lock;
	/* Writes go only with SV_CKSTORE_RESERVE_BYTES free on the disk;
	 * after a write that failed anyway the database is not written again
	 * by this process (broken, under write_lock):
	 * RocksDB 7.8 may write its WAL once more after a WAL write error, and
	 * Debian's librocksdb, built with assertions, aborts on that
	 * (AssertFalseAndGetStatusForPrevError; RocksDB PR 12448), closing
	 * included. The next start replays the WAL as after a crash. */
	pthread_mutex_t write_lock;
	bool broken; /* under write_lock */
	char *broken_why; /* the failed write's RocksDB error */
	char *dir;
	int marks_fd; /* COMMIT-MARKS */
	uint64_t marks; /* commits marked (under seq_lock) */
};

#define MARKS_KEY "meta/marks"

static sv_error_t *db_error(sv_ckstore_t *st, char *rerr, const char *what);

static void be64(char *b, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		b[i] = (char)(v & 0xff);
}

static uint64_t unbe64(const char *b)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | (unsigned char)b[i];
	return v;
}

/* The side file: the count and its complement (a torn write is seen). */
static int write_side(sv_ckstore_t *st, uint64_t marks)
{
	char b[16];
	be64(b, marks);
	be64(b + 8, ~marks);
	if (pwrite(st->marks_fd, b, 16, 0) != 16 || fdatasync(st->marks_fd))
		return -1;
	return 0;
}

/* Compare the database's mark count with the side file's. */
static sv_error_t *check_marks(sv_ckstore_t *st)
{
	char *rerr = NULL;
	size_t vl = 0;
	char *v = rocksdb_get(st->db, st->ropts, MARKS_KEY, strlen(MARKS_KEY),
			      &vl, &rerr);
	if (rerr)
		return db_error(st, rerr, MARKS_KEY);
	st->marks = v && vl == 8 ? unbe64(v) : 0;
	rocksdb_free(v);
	char b[16];
	ssize_t n = pread(st->marks_fd, b, 16, 0);
	if (n == 16 && unbe64(b) == ~unbe64(b + 8) && unbe64(b) > st->marks)
		return sv_error_new(
			SV_ERR_CHECKPOINT,
			"checkpoint store %s: the "
			"database holds %llu committed checkpoint marks but "
			"%llu "
			"were acknowledged (COMMIT-MARKS): its log was "
			"corrupted "
			"before its end and committed checkpoints were lost; "
			"refusing to roll back silently",
			st->dir, (unsigned long long)st->marks,
			(unsigned long long)unbe64(b));
	return NULL;
}

static sv_error_t *db_error(sv_ckstore_t *st, char *rerr, const char *what)
{
	sv_error_t *err = sv_error_new(SV_ERR_CHECKPOINT,
				       "checkpoint store %s: %s: %s",
				       st ? st->dir : "", what, rerr);
	/* An I/O error (a full or read-only disk: ENOSPC, EROFS) may pass:
	 * the attempt ends, nothing is acknowledged, and the restart policy
	 * tries again with backoff. Corruption and everything else stay
	 * non-retriable: the job fails loudly. */
	if (!strncmp(rerr, "IO error", 8))
		err->retriable = true;
	rocksdb_free(rerr);
	return err;
}

static int mkdirs(const char *path)
{
	char *p = sv_strdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST) {
			free(p);
			return -1;
		}
		*s = '/';
	}
	int rc = mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
	free(p);
	return rc;
}

sv_error_t *sv_ckstore_open(const char *dir, sv_ckstore_t **out)
{
	*out = NULL;
	if (mkdirs(dir))
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "checkpoint store %s: cannot "
				    "create the directory: %s",
				    dir, strerror(errno));
	sv_ckstore_t *st = sv_calloc(1, sizeof(*st));
	st->dir = sv_strdup(dir);
	st->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(st->opts, 1);
	rocksdb_options_set_paranoid_checks(st->opts, 1);
	rocksdb_options_set_wal_recovery_mode(st->opts,
					      WAL_TOLERATE_CORRUPTED_TAIL);
	rocksdb_options_set_keep_log_file_num(st->opts, 4);
	rocksdb_options_set_enable_blob_files(st->opts, 1);
	rocksdb_options_set_min_blob_size(st->opts, 4096);
	/* RocksDB moves a large value into a blob file only when it flushes
	 * the memtable, so until then the memtable holds every checkpoint's
	 * state bytes: with the default 64 MiB write buffer (and a second,
	 * immutable one being flushed) a job whose checkpoints are MBs each
	 * kept up to 128 MiB of old checkpoints resident (W4's 8 MB table
	 * snapshots: 75 MB of memtable at the peak, heaptrack). A small
	 * buffer flushes about once per large checkpoint, in RocksDB's
	 * background thread, writing the same bytes to the same blob files
	 * (docs/performance.md "The checkpoint store's memory"). */
	rocksdb_options_set_write_buffer_size(st->opts,
					      SV_CKSTORE_WRITE_BUFFER_BYTES);
	rocksdb_options_set_max_write_buffer_number(st->opts, 2);
	st->wopts = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(st->wopts, 1);
	st->wopts_lazy = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(st->wopts_lazy, 0);
	st->ropts = rocksdb_readoptions_create();
	rocksdb_readoptions_set_verify_checksums(st->ropts, 1);
	pthread_mutex_init(&st->seq_lock, NULL);
	pthread_mutex_init(&st->write_lock, NULL);
	char *side;
	if (asprintf(&side, "%s/COMMIT-MARKS", dir) < 0)
		abort();
	st->marks_fd = open(side, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	free(side);
	if (st->marks_fd < 0) {
		sv_error_t *err = sv_error_new(
			SV_ERR_CHECKPOINT,
			"checkpoint store "
			"%s: cannot open COMMIT-MARKS: %s",
			dir, strerror(errno));
		sv_ckstore_close(st);
		return err;
	}
	char *rerr = NULL;
	st->db = rocksdb_open(st->opts, dir, &rerr);
	sv_error_t *err = rerr ? db_error(st, rerr, "cannot open")
			       : check_marks(st);
	if (err) {
		sv_ckstore_close(st);
		return err;
	}
	*out = st;
	return NULL;
}

void sv_ckstore_close(sv_ckstore_t *st)
{
	if (!st)
		return;
	if (st->db && !st->broken)
		rocksdb_close(st->db); /* broken: see struct sv_ckstore */
	rocksdb_readoptions_destroy(st->ropts);
	rocksdb_writeoptions_destroy(st->wopts);
	rocksdb_writeoptions_destroy(st->wopts_lazy);
	rocksdb_options_destroy(st->opts);
	pthread_mutex_destroy(&st->seq_lock);
	pthread_mutex_destroy(&st->write_lock);
	free(st->broken_why);
	if (st->marks_fd > 0)
		close(st->marks_fd);
	free(st->dir);
	free(st);
}

/* ---- writes ---- */

/* Free space a write must leave on the store's file system. A WAL that runs
 * out of space in the middle of a write is what the broken state above is
 * about (the process must restart to write again), so a write that would
 * leave less than this is refused up front with ENOSPC instead: the
 * checkpoint fails, nothing is acknowledged, the job backs off and resumes
 * once there is room again. */
#define SV_CKSTORE_RESERVE_BYTES (16 << 20)

static void store_write_with(sv_ckstore_t *st, rocksdb_writebatch_t *wb,
			     const rocksdb_writeoptions_t *wo, char **rerr);

/* Every write of the store (see struct sv_ckstore); *rerr as rocksdb_write
 * sets it, freed by db_error. Synced. */
static void store_write(sv_ckstore_t *st, rocksdb_writebatch_t *wb, char **rerr)
{
	store_write_with(st, wb, st->wopts, rerr);
}

/* store_write with the write options wo. */
static void store_write_with(sv_ckstore_t *st, rocksdb_writebatch_t *wb,
			     const rocksdb_writeoptions_t *wo, char **rerr)
{
	struct statvfs vfs;
	size_t need = 0;
	rocksdb_writebatch_data(wb, &need);
	need += SV_CKSTORE_RESERVE_BYTES;
	int r = -1;
	pthread_mutex_lock(&st->write_lock);
	bool broken = st->broken;
	pthread_mutex_unlock(&st->write_lock);
	if (broken)
		r = asprintf(rerr,
			     "IO error: not written: an earlier write failed "
			     "(%s); restart the supervisor once the disk takes "
			     "writes again",
			     st->broken_why);
	else if (statvfs(st->dir, &vfs) == 0 &&
		 (uint64_t)vfs.f_bavail * vfs.f_frsize < need)
		r = asprintf(rerr,
			     "IO error: No space left on device: %llu bytes "
			     "free, a write needs %zu (itself and the %d MiB "
			     "kept free)",
			     (unsigned long long)vfs.f_bavail * vfs.f_frsize,
			     need, SV_CKSTORE_RESERVE_BYTES >> 20);
	else
		r = 0;
	if (r < 0)
		abort();
	if (r)
		return;
	/* concurrent writes stay concurrent (RocksDB groups their syncs) */
	rocksdb_write(st->db, (rocksdb_writeoptions_t *)wo, wb, rerr);
	if (*rerr) {
		pthread_mutex_lock(&st->write_lock);
		if (!st->broken) {
			st->broken = true;
			st->broken_why = sv_strdup(*rerr);
		}
		pthread_mutex_unlock(&st->write_lock);
	}
}

/* ---- keys ---- */

static char *job_key(const char *job)
{
	char *k;
	if (asprintf(&k, "job/%s", job) < 0)
		abort();
	return k;
}

static char *seq_key(const char *job)
{
	char *k;
	if (asprintf(&k, "seq/%s", job) < 0)
		abort();
	return k;
}

static char *ck_prefix(const char *job)
{
	char *k;
	if (asprintf(&k, "ck/%s/", job) < 0)
		abort();
	return k;
}

static char *ck_key(const char *job, int64_t id)
{
	char *k;
	if (asprintf(&k, "ck/%s/%016llx", job, (unsigned long long)id) < 0)
		abort();
	return k;
}

static char *cs_prefix(const char *job, int64_t id)
{
	char *k;
	if (asprintf(&k, "cs/%s/%016llx/", job, (unsigned long long)id) < 0)
		abort();
	return k;
}

static char *cs_key(const char *job, int64_t id, uint32_t op)
{
	char *k;
	if (asprintf(&k, "cs/%s/%016llx/%04x", job, (unsigned long long)id,
		     op) < 0)
		abort();
	return k;
}

static char *ts_prefix(const char *job, int32_t p)
{
	char *k;
	if (asprintf(&k, "ts/%s/%08x/", job, (unsigned)p) < 0)
		abort();
	return k;
}

static char *ts_key(const char *job, int32_t p, int64_t id)
{
	char *k;
	if (asprintf(&k, "ts/%s/%08x/%016llx", job, (unsigned)p,
		     (unsigned long long)id) < 0)
		abort();
	return k;
}

static sv_error_t *put_raw_with(sv_ckstore_t *st, const char *key,
				const char *v, size_t len,
				const rocksdb_writeoptions_t *wo)
{
	char *rerr = NULL;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_writebatch_put(wb, key, strlen(key), v, len);
	store_write_with(st, wb, wo, &rerr);
	rocksdb_writebatch_destroy(wb);
	return rerr ? db_error(st, rerr, key) : NULL;
}

static sv_error_t *put_raw(sv_ckstore_t *st, const char *key, const char *v,
			   size_t len)
{
	return put_raw_with(st, key, v, len, st->wopts);
}

/* ---- jobs ---- */

sv_error_t *sv_ckstore_put_job(sv_ckstore_t *st, const char *job_id,
			       const char *data, size_t len)
{
	char *k = job_key(job_id);
	sv_error_t *err = put_raw(st, k, data, len);
	free(k);
	return err;
}

/* Delete every key starting with prefix into wb. */
static sv_error_t *delete_prefix(sv_ckstore_t *st, rocksdb_writebatch_t *wb,
				 const char *prefix)
{
	size_t plen = strlen(prefix);
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ropts);
	for (rocksdb_iter_seek(it, prefix, plen); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);
		if (kl < plen || memcmp(k, prefix, plen))
			break;
		rocksdb_writebatch_delete(wb, k, kl);
	}
	char *rerr = NULL;
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	return rerr ? db_error(st, rerr, prefix) : NULL;
}

sv_error_t *sv_ckstore_delete_job(sv_ckstore_t *st, const char *job_id,
				  bool checkpoints)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	char *jk = job_key(job_id), *sk = seq_key(job_id),
	     *cp = ck_prefix(job_id);
	rocksdb_writebatch_delete(wb, jk, strlen(jk));
	sv_error_t *err = NULL;
	if (checkpoints) {
		rocksdb_writebatch_delete(wb, sk, strlen(sk));
		err = delete_prefix(st, wb, cp);
	}
	if (!err && checkpoints) {
		char *csp;
		if (asprintf(&csp, "cs/%s/", job_id) < 0)
			abort();
		err = delete_prefix(st, wb, csp);
		free(csp);
	}
	if (!err && checkpoints) {
		char *tsp, *tvp, *pk;
		if (asprintf(&tsp, "ts/%s/", job_id) < 0 ||
		    asprintf(&tvp, "tv/%s/", job_id) < 0 ||
		    asprintf(&pk, "par/%s", job_id) < 0)
			abort();
		err = delete_prefix(st, wb, tsp);
		if (!err)
			err = delete_prefix(st, wb, tvp);
		free(tvp);
		rocksdb_writebatch_delete(wb, pk, strlen(pk));
		free(tsp);
		free(pk);
	}
	if (!err) {
		char *rerr = NULL;
		store_write(st, wb, &rerr);
		if (rerr)
			err = db_error(st, rerr, jk);
	}
	rocksdb_writebatch_destroy(wb);
	free(jk);
	free(sk);
	free(cp);
	return err;
}

sv_error_t *sv_ckstore_each_job(sv_ckstore_t *st, sv_ckstore_job_fn *fn,
				void *opaque)
{
	const char *prefix = "job/";
	size_t plen = strlen(prefix);
	sv_error_t *err = NULL;
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ropts);
	for (rocksdb_iter_seek(it, prefix, plen);
	     !err && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		if (kl < plen || memcmp(k, prefix, plen))
			break;
		const char *v = rocksdb_iter_value(it, &vl);
		char *id = sv_strndup(k + plen, kl - plen);
		err = fn(opaque, id, v, vl);
		free(id);
	}
	char *rerr = NULL;
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr && !err)
		err = db_error(st, rerr, "reading job definitions");
	else if (rerr)
		rocksdb_free(rerr);
	return err;
}

/* ---- checkpoints ---- */

static sv_error_t *next_id_with(sv_ckstore_t *st, const char *job_id,
				const rocksdb_writeoptions_t *wo, int64_t *id);

sv_error_t *sv_ckstore_next_id(sv_ckstore_t *st, const char *job_id,
			       int64_t *id)
{
	return next_id_with(st, job_id, st->wopts, id);
}

sv_error_t *sv_ckstore_next_id_lazy(sv_ckstore_t *st, const char *job_id,
				    int64_t *id)
{
	return next_id_with(st, job_id, st->wopts_lazy, id);
}

static sv_error_t *next_id_with(sv_ckstore_t *st, const char *job_id,
				const rocksdb_writeoptions_t *wo, int64_t *id)
{
	char *k = seq_key(job_id);
	pthread_mutex_lock(&st->seq_lock);
	char *rerr = NULL;
	size_t vl = 0;
	char *v = rocksdb_get(st->db, st->ropts, k, strlen(k), &vl, &rerr);
	sv_error_t *err = NULL;
	uint64_t last = 0;
	if (rerr) {
		err = db_error(st, rerr, k);
	} else if (v && vl != 8) {
		err = sv_error_new(SV_ERR_CHECKPOINT,
				   "checkpoint store %s: %s "
				   "holds %zu bytes, not 8",
				   st->dir, k, vl);
	} else if (v) {
		for (int i = 0; i < 8; i++)
			last = last << 8 | (unsigned char)v[i];
	}
	rocksdb_free(v);
	if (!err) {
		char buf[8];
		uint64_t next = last + 1;
		for (int i = 7; i >= 0; i--, next >>= 8)
			buf[i] = (char)(next & 0xff);
		err = put_raw_with(st, k, buf, 8, wo);
		*id = (int64_t)last + 1;
	}
	pthread_mutex_unlock(&st->seq_lock);
	free(k);
	return err;
}

/* The record without its operators' state bytes, packed. */
static uint8_t *pack_meta(const sv_ckrec_t *rec, size_t *len)
{
	sv_ckrec_t meta = *rec;
	size_t n = rec->n_operators;
	Streamvisor__OperatorState *ops = sv_calloc(n ? n : 1, sizeof(*ops));
	Streamvisor__OperatorState **opp = sv_calloc(n ? n : 1, sizeof(*opp));
	for (size_t i = 0; i < n; i++) {
		ops[i] = *rec->operators[i];
		ops[i].state.data = NULL;
		ops[i].state.len = 0;
		opp[i] = &ops[i];
	}
	meta.operators = opp;
	*len = streamvisor__checkpoint_record__get_packed_size(&meta);
	uint8_t *buf = sv_malloc(*len ? *len : 1);
	streamvisor__checkpoint_record__pack(&meta, buf);
	free(ops);
	free(opp);
	return buf;
}

sv_error_t *sv_ckstore_put(sv_ckstore_t *st, const sv_ckrec_t *rec)
{
	return sv_ckstore_put_dropping(st, rec, NULL, NULL);
}

sv_error_t *sv_ckstore_put_dropping(sv_ckstore_t *st, const sv_ckrec_t *rec,
				    sv_ckstore_drop_fn *drop, void *opaque)
{
	size_t len;
	uint8_t *buf = pack_meta(rec, &len);
	char *k = ck_key(rec->job_id, rec->id);
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	/* the small record first: the batch's buffer grows geometrically,
	 * so a large state appended last would make it copy that state once
	 * more into a buffer twice its size (heaptrack: 16 MB for W4's 8 MB
	 * state); appended first, a single state is copied once */
	rocksdb_writebatch_put(wb, k, strlen(k), (const char *)buf, len);
	for (size_t i = 0; i < rec->n_operators; i++) {
		const Streamvisor__OperatorState *os = rec->operators[i];
		char *sk = cs_key(rec->job_id, rec->id, os->index);
		rocksdb_writebatch_put(wb, sk, strlen(sk),
				       (const char *)os->state.data,
				       os->state.len);
		free(sk);
		if (drop) /* in the batch: the caller's copy may go */
			drop(opaque, 0, i);
	}
	char *rerr = NULL;
	store_write(st, wb, &rerr);
	rocksdb_writebatch_destroy(wb);
	sv_error_t *err = rerr ? db_error(st, rerr, k) : NULL;
	free(k);
	free(buf);
	return err;
}

/* Fill the operators' state bytes of rec from their keys. A missing state
 * key is corruption: loud. */
static sv_error_t *load_state(sv_ckstore_t *st, sv_ckrec_t *rec)
{
	for (size_t i = 0; i < rec->n_operators; i++) {
		Streamvisor__OperatorState *os = rec->operators[i];
		char *sk = cs_key(rec->job_id, rec->id, os->index);
		char *rerr = NULL;
		size_t vl = 0;
		char *v = rocksdb_get(st->db, st->ropts, sk, strlen(sk), &vl,
				      &rerr);
		sv_error_t *err = NULL;
		if (rerr)
			err = db_error(st, rerr, sk);
		else if (!v)
			err = sv_error_new(
				SV_ERR_CHECKPOINT,
				"checkpoint store %s: "
				"the state %s of checkpoint %lld is missing",
				st->dir, sk, (long long)rec->id);
		if (!err) {
			free(os->state.data); /* empty from unpack */
			os->state.data = sv_malloc(vl ? vl : 1);
			memcpy(os->state.data, v, vl);
			os->state.len = vl;
		}
		rocksdb_free(v);
		free(sk);
		if (err)
			return err;
	}
	return NULL;
}

static sv_error_t *unpack(sv_ckstore_t *st, const char *key, size_t kl,
			  const char *v, size_t vl, sv_ckrec_t **out)
{
	*out = streamvisor__checkpoint_record__unpack(NULL, vl,
						      (const uint8_t *)v);
	if (*out)
		return NULL;
	return sv_error_new(SV_ERR_CHECKPOINT,
			    "checkpoint store %s: record "
			    "%.*s is corrupt (does not unpack)",
			    st->dir, (int)kl, key);
}

/* The record stored at key k (taken: freed here) as it is stored, or
 * *out = NULL when there is none. */
static sv_error_t *get_at(sv_ckstore_t *st, char *k, sv_ckrec_t **out)
{
	*out = NULL;
	char *rerr = NULL;
	size_t vl = 0;
	char *v = rocksdb_get(st->db, st->ropts, k, strlen(k), &vl, &rerr);
	sv_error_t *err = NULL;
	if (rerr)
		err = db_error(st, rerr, k);
	else if (v)
		err = unpack(st, k, strlen(k), v, vl, out);
	rocksdb_free(v);
	free(k);
	return err;
}

/* The record without its state bytes, or *out = NULL. */
static sv_error_t *get_meta(sv_ckstore_t *st, const char *job_id, int64_t id,
			    sv_ckrec_t **out)
{
	return get_at(st, ck_key(job_id, id), out);
}

sv_error_t *sv_ckstore_get(sv_ckstore_t *st, const char *job_id, int64_t id,
			   sv_ckrec_t **out)
{
	sv_error_t *err = get_meta(st, job_id, id, out);
	if (!err && *out && (err = load_state(st, *out))) {
		sv_ckstore_free_record(*out);
		*out = NULL;
	}
	return err;
}

sv_error_t *sv_ckstore_mark(sv_ckstore_t *st, const char *job_id, int64_t id,
			    Streamvisor__CheckpointRecord__Status status,
			    int64_t duration_ms)
{
	sv_ckrec_t *rec;
	sv_error_t *err = get_meta(st, job_id, id, &rec);
	if (err)
		return err;
	if (!rec)
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "checkpoint %lld of job '%s' "
				    "is not in the store",
				    (long long)id, job_id);
	rec->status = status;
	if (duration_ms >= 0)
		rec->duration_ms = duration_ms;
	size_t len;
	uint8_t *buf = pack_meta(rec, &len);
	sv_ckstore_free_record(rec);
	char *k = ck_key(job_id, id);
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_writebatch_put(wb, k, strlen(k), (const char *)buf, len);
	bool commit = status ==
		STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED;
	pthread_mutex_lock(&st->seq_lock);
	char mb[8];
	if (commit) {
		be64(mb, st->marks + 1);
		rocksdb_writebatch_put(wb, MARKS_KEY, strlen(MARKS_KEY), mb, 8);
	}
	char *rerr = NULL;
	store_write(st, wb, &rerr);
	if (rerr) {
		err = db_error(st, rerr, k);
	} else if (commit) {
		st->marks++;
		if (write_side(st, st->marks))
			err = sv_error_new(SV_ERR_CHECKPOINT,
					   "checkpoint store %s: "
					   "cannot write COMMIT-MARKS: %s",
					   st->dir, strerror(errno));
	}
	pthread_mutex_unlock(&st->seq_lock);
	rocksdb_writebatch_destroy(wb);
	free(k);
	free(buf);
	return err;
}

/* Walk the job's records from the newest (id < before) to the oldest;
 * visit returns true to stop. */
typedef bool(visit_fn)(void *opaque, sv_ckrec_t *rec, bool *keep);

static sv_error_t *walk_back(sv_ckstore_t *st, const char *job_id,
			     int64_t before, visit_fn *visit, void *opaque)
{
	char *prefix = ck_prefix(job_id);
	size_t plen = strlen(prefix);
	char *start = before == INT64_MAX ? sv_strdup(prefix)
					  : ck_key(job_id, before);
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ropts);
	if (before == INT64_MAX) {
		/* just past the last key of the prefix: "ck/<job>0" > "ck/<job>/..." */
		start[plen - 1] = '0';
		rocksdb_iter_seek_for_prev(it, start, plen);
	} else {
		rocksdb_iter_seek_for_prev(it, start, strlen(start));
		if (rocksdb_iter_valid(it)) {
			size_t kl;
			const char *k = rocksdb_iter_key(it, &kl);
			if (kl == strlen(start) && !memcmp(k, start, kl))
				rocksdb_iter_prev(it); /* exclusive */
		}
	}
	sv_error_t *err = NULL;
	for (; rocksdb_iter_valid(it); rocksdb_iter_prev(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		if (kl < plen || memcmp(k, prefix, plen))
			break;
		const char *v = rocksdb_iter_value(it, &vl);
		sv_ckrec_t *rec;
		if ((err = unpack(st, k, kl, v, vl, &rec)))
			break;
		bool keep = false;
		bool stop = visit(opaque, rec, &keep);
		if (!keep)
			sv_ckstore_free_record(rec);
		if (stop)
			break;
	}
	char *rerr = NULL;
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr && !err)
		err = db_error(st, rerr, prefix);
	else if (rerr)
		rocksdb_free(rerr);
	free(start);
	free(prefix);
	return err;
}

typedef struct find {
	bool committed_only;
	sv_ckrec_t *found;
} find_t;

static bool visit_find(void *opaque, sv_ckrec_t *rec, bool *keep)
{
	find_t *f = opaque;
	if (f->committed_only &&
	    rec->status != STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED)
		return false;
	f->found = rec;
	*keep = true;
	return true;
}

sv_error_t *sv_ckstore_latest(sv_ckstore_t *st, const char *job_id,
			      sv_ckrec_t **out)
{
	find_t f = {false, NULL};
	sv_error_t *err = walk_back(st, job_id, INT64_MAX, visit_find, &f);
	if (!err && f.found)
		err = load_state(st, f.found);
	*out = err ? NULL : f.found;
	if (err)
		sv_ckstore_free_record(f.found);
	return err;
}

sv_error_t *sv_ckstore_latest_committed(sv_ckstore_t *st, const char *job_id,
					int64_t before, sv_ckrec_t **out)
{
	find_t f = {true, NULL};
	sv_error_t *err = walk_back(st, job_id, before, visit_find, &f);
	if (!err && f.found)
		err = load_state(st, f.found);
	*out = err ? NULL : f.found;
	if (err)
		sv_ckstore_free_record(f.found);
	return err;
}

typedef struct collect {
	size_t limit, n;
	sv_ckrec_t **recs;
} collect_t;

static bool visit_collect(void *opaque, sv_ckrec_t *rec, bool *keep)
{
	collect_t *c = opaque;
	c->recs[c->n++] = rec;
	*keep = true;
	return c->n >= c->limit;
}

sv_error_t *sv_ckstore_list(sv_ckstore_t *st, const char *job_id, size_t limit,
			    sv_ckrec_t ***recs, size_t *n)
{
	*recs = NULL;
	*n = 0;
	if (!limit)
		return NULL;
	collect_t c = {limit, 0, NULL};
	c.recs = sv_calloc(limit > 4096 ? 4096 : limit, sizeof(sv_ckrec_t *));
	if (limit > 4096)
		c.limit = limit = 4096;
	sv_error_t *err = walk_back(st, job_id, INT64_MAX, visit_collect, &c);
	if (err) {
		for (size_t i = 0; i < c.n; i++)
			sv_ckstore_free_record(c.recs[i]);
		free(c.recs);
		return err;
	}
	*recs = c.recs;
	*n = c.n;
	return NULL;
}

typedef struct retain {
	int keep;
	int committed;
	bool chain; /* the oldest record kept is a delta: keep its base */
	size_t ndel;
	int64_t *del;
	size_t cap;
} retain_t;

static bool visit_retain(void *opaque, sv_ckrec_t *rec, bool *keep)
{
	retain_t *r = opaque;
	(void)keep;
	if (r->committed >= r->keep && r->chain) {
		/* older than retention, but a kept delta builds on it */
		r->chain = rec->delta_of > 0;
	} else if (r->committed >= r->keep) {
		if (r->ndel == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 16;
			r->del = sv_realloc(r->del, r->cap * sizeof(int64_t));
		}
		r->del[r->ndel++] = rec->id;
	} else {
		r->chain = rec->delta_of > 0;
		if (rec->status ==
		    STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED)
			r->committed++;
	}
	return false;
}

sv_error_t *sv_ckstore_retain(sv_ckstore_t *st, const char *job_id, int retain)
{
	retain_t r = {retain < 1 ? 1 : retain, 0, false, 0, NULL, 0};
	sv_error_t *err = walk_back(st, job_id, INT64_MAX, visit_retain, &r);
	if (!err && r.ndel) {
		rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
		for (size_t i = 0; i < r.ndel && !err; i++) {
			char *k = ck_key(job_id, r.del[i]);
			rocksdb_writebatch_delete(wb, k, strlen(k));
			free(k);
			char *cp = cs_prefix(job_id, r.del[i]);
			err = delete_prefix(st, wb, cp);
			free(cp);
		}
		char *rerr = NULL;
		if (!err)
			store_write_with(st, wb, st->wopts_lazy, &rerr);
		rocksdb_writebatch_destroy(wb);
		if (rerr)
			err = db_error(st, rerr, "retention");
	}
	free(r.del);
	return err;
}

/* ---- per-task snapshots ---- */

/* The side key of the task record of partition p at id: its delta_of.
 * Longer than a record's key, so sv_ckstore_task_ids skips it; under ts/,
 * so deleting a job's checkpoints deletes it. */
static char *tb_key(const char *job, int32_t p, int64_t id)
{
	char *k;
	if (asprintf(&k, "ts/%s/%08x/%016llx/d", job, (unsigned)p,
		     (unsigned long long)id) < 0)
		abort();
	return k;
}

/* The key of operator op's state of partition p's task record at id, and
 * the prefix of all of that record's (sv_ckstore_retain_tasks deletes the
 * range [prefix, prefix with its last '/' as '0')). */
static char *tv_key(const char *job, int32_t p, int64_t id, uint32_t op)
{
	char *k;
	if (asprintf(&k, "tv/%s/%08x/%016llx/%04x", job, (unsigned)p,
		     (unsigned long long)id, op) < 0)
		abort();
	return k;
}

/* Delete every tv/ key of partition p's task record at id into wb. */
static void delete_task_state(rocksdb_writebatch_t *wb, const char *job,
			      int32_t p, int64_t id)
{
	char *a, *b;
	if (asprintf(&a, "tv/%s/%08x/%016llx/", job, (unsigned)p,
		     (unsigned long long)id) < 0 ||
	    asprintf(&b, "tv/%s/%08x/%016llx0", job, (unsigned)p,
		     (unsigned long long)id) < 0)
		abort();
	rocksdb_writebatch_delete_range(wb, a, strlen(a), b, strlen(b));
	free(a);
	free(b);
}

/* Fill the empty operator states of task record rec (partition p) from
 * their tv/ keys. A state with no key stays as it is: a task record
 * written before state lived apart, whose state is inline. */
static sv_error_t *load_task_state(sv_ckstore_t *st, const char *job_id,
				   int32_t p, sv_ckrec_t *rec)
{
	for (size_t i = 0; i < rec->n_operators; i++) {
		Streamvisor__OperatorState *os = rec->operators[i];
		if (os->state.len)
			continue;
		char *k = tv_key(job_id, p, rec->id, os->index);
		char *rerr = NULL;
		size_t vl = 0;
		char *v = rocksdb_get(st->db, st->ropts, k, strlen(k), &vl,
				      &rerr);
		sv_error_t *err = rerr ? db_error(st, rerr, k) : NULL;
		if (!err && v) {
			free(os->state.data);
			os->state.data = sv_malloc(vl ? vl : 1);
			memcpy(os->state.data, v, vl);
			os->state.len = vl;
		}
		rocksdb_free(v);
		free(k);
		if (err)
			return err;
	}
	return NULL;
}

/* A delta task record's side key into wb (nothing for a full one). */
static void put_task_base(rocksdb_writebatch_t *wb, const char *job,
			  const sv_ckrec_t *t)
{
	if (t->delta_of <= 0 || !t->n_offsets)
		return;
	char *k = tb_key(job, t->offsets[0]->partition, t->id);
	char v[8];
	be64(v, (uint64_t)t->delta_of);
	rocksdb_writebatch_put(wb, k, strlen(k), v, 8);
	free(k);
}

/* The delta_of of the task record of partition p at id from its side key:
 * 0 for a full record (no side key). */
static sv_error_t *task_base_of(sv_ckstore_t *st, const char *job_id, int32_t p,
				int64_t id, int64_t *base)
{
	char *k = tb_key(job_id, p, id);
	char *rerr = NULL;
	size_t vl = 0;
	char *v = rocksdb_get(st->db, st->ropts, k, strlen(k), &vl, &rerr);
	sv_error_t *err = rerr ? db_error(st, rerr, k) : NULL;
	*base = !err && v && vl == 8 ? (int64_t)unbe64(v) : 0;
	rocksdb_free(v);
	free(k);
	return err;
}

sv_error_t *sv_ckstore_put_tasks(sv_ckstore_t *st, const sv_ckrec_t *rec,
				 const sv_ckrec_t *const *tasks, size_t ntasks)
{
	return sv_ckstore_put_tasks_dropping(st, rec, tasks, ntasks, NULL,
					     NULL);
}

sv_error_t *sv_ckstore_put_tasks_dropping(
	sv_ckstore_t *st, const sv_ckrec_t *rec, const sv_ckrec_t *const *tasks,
	size_t ntasks, sv_ckstore_drop_fn *drop, void *opaque)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	for (size_t i = 0; i < ntasks; i++) {
		const sv_ckrec_t *t = tasks[i];
		int32_t p = t->n_offsets ? t->offsets[0]->partition : -1;
		char *tk = ts_key(rec->job_id, p, rec->id);
		/* the operators' state apart (tv/), the record without it */
		for (size_t j = 0; j < t->n_operators; j++) {
			const Streamvisor__OperatorState *os = t->operators[j];
			if (!os->state.len)
				continue;
			char *vk = tv_key(rec->job_id, p, rec->id, os->index);
			rocksdb_writebatch_put(wb, vk, strlen(vk),
					       (const char *)os->state.data,
					       os->state.len);
			free(vk);
			if (drop) /* in the batch: the caller's copy may go */
				drop(opaque, i, j);
		}
		size_t len;
		uint8_t *buf = pack_meta(t, &len);
		rocksdb_writebatch_put(wb, tk, strlen(tk), (const char *)buf,
				       len);
		put_task_base(wb, rec->job_id, t);
		free(buf);
		free(tk);
	}
	size_t len;
	uint8_t *buf = pack_meta(rec, &len);
	char *k = ck_key(rec->job_id, rec->id);
	rocksdb_writebatch_put(wb, k, strlen(k), (const char *)buf, len);
	char *rerr = NULL;
	store_write(st, wb, &rerr);
	rocksdb_writebatch_destroy(wb);
	sv_error_t *err = rerr ? db_error(st, rerr, k) : NULL;
	free(k);
	free(buf);
	return err;
}

sv_error_t *sv_ckstore_task_ids(sv_ckstore_t *st, const char *job_id, int32_t p,
				int64_t **ids, size_t *n)
{
	char *prefix = ts_prefix(job_id, p);
	size_t plen = strlen(prefix);
	size_t cap = 16;
	*n = 0;
	*ids = sv_malloc(cap * sizeof(**ids));
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ropts);
	for (rocksdb_iter_seek(it, prefix, plen); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);
		if (kl < plen || memcmp(k, prefix, plen))
			break;
		if (kl != plen + 16)
			continue;
		char hex[17];
		memcpy(hex, k + plen, 16);
		hex[16] = '\0';
		if (*n == cap) {
			cap *= 2;
			*ids = sv_realloc(*ids, cap * sizeof(**ids));
		}
		(*ids)[(*n)++] = (int64_t)strtoull(hex, NULL, 16);
	}
	char *rerr = NULL;
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	sv_error_t *err = rerr ? db_error(st, rerr, prefix) : NULL;
	free(prefix);
	/* ascending from the iterator: newest first */
	for (size_t i = 0; i < *n / 2; i++) {
		int64_t t = (*ids)[i];
		(*ids)[i] = (*ids)[*n - 1 - i];
		(*ids)[*n - 1 - i] = t;
	}
	return err;
}

sv_error_t *sv_ckstore_get_task(sv_ckstore_t *st, const char *job_id, int32_t p,
				int64_t id, sv_ckrec_t **out)
{
	sv_error_t *err = get_at(st, ts_key(job_id, p, id), out);
	if (!err && *out && (err = load_task_state(st, job_id, p, *out))) {
		sv_ckstore_free_record(*out);
		*out = NULL;
	}
	return err;
}

/* Whether partition p still has a task record of checkpoint id. */
static bool task_exists(sv_ckstore_t *st, const char *job_id, int32_t p,
			int64_t id)
{
	char *k = ts_key(job_id, p, id);
	char *rerr = NULL;
	size_t vl = 0;
	char *v = rocksdb_get(st->db, st->ropts, k, strlen(k), &vl, &rerr);
	bool found = v != NULL || rerr != NULL; /* on error: keep */
	rocksdb_free(v);
	rocksdb_free(rerr);
	free(k);
	return found;
}

sv_error_t *sv_ckstore_retain_tasks(sv_ckstore_t *st, const char *job_id,
				    const int32_t *parts, size_t nparts,
				    int retain)
{
	if (retain < 1)
		retain = 1;
	sv_error_t *err = NULL;
	int64_t *gone = NULL; /* checkpoint ids that lost a task record */
	size_t ngone = 0, gcap = 0;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	for (size_t i = 0; i < nparts && !err; i++) {
		int64_t *ids;
		size_t n;
		if ((err = sv_ckstore_task_ids(st, job_id, parts[i], &ids,
					       &n))) {
			free(ids);
			break;
		}
		int committed = 0;
		int64_t need = 0; /* the oldest base a kept delta needs */
		for (size_t j = 0; j < n && !err; j++) {
			if (committed >= retain && ids[j] == need) {
				/* in the chain of a kept delta: keep */
				err = task_base_of(st, job_id, parts[i], ids[j],
						   &need);
				continue;
			}
			if (committed >= retain) {
				char *tk = ts_key(job_id, parts[i], ids[j]);
				rocksdb_writebatch_delete(wb, tk, strlen(tk));
				free(tk);
				tk = tb_key(job_id, parts[i], ids[j]);
				rocksdb_writebatch_delete(wb, tk, strlen(tk));
				free(tk);
				delete_task_state(wb, job_id, parts[i], ids[j]);
				if (ngone == gcap) {
					gcap = gcap ? 2 * gcap : 16;
					gone = sv_realloc(gone,
							  gcap * sizeof(*gone));
				}
				gone[ngone++] = ids[j];
				continue;
			}
			int64_t base;
			if ((err = task_base_of(st, job_id, parts[i], ids[j],
						&base)))
				break;
			if (base > 0 && (need == 0 || base < need))
				need = base;
			sv_ckrec_t *rec;
			if ((err = get_meta(st, job_id, ids[j], &rec)))
				break;
			if (rec &&
			    rec->status ==
				    STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED)
				committed++;
			sv_ckstore_free_record(rec);
		}
		free(ids);
	}
	char *rerr = NULL;
	if (!err && ngone)
		store_write_with(st, wb, st->wopts_lazy, &rerr);
	rocksdb_writebatch_destroy(wb);
	if (rerr)
		err = db_error(st, rerr, "retention");
	/* member records none of whose partitions has a task record left */
	wb = rocksdb_writebatch_create();
	bool any = false;
	for (size_t i = 0; i < ngone && !err; i++) {
		sv_ckrec_t *rec;
		if ((err = get_meta(st, job_id, gone[i], &rec)) || !rec)
			continue;
		bool left = false;
		for (size_t j = 0; j < rec->n_offsets && !left; j++)
			left = task_exists(st, job_id,
					   rec->offsets[j]->partition, rec->id);
		sv_ckstore_free_record(rec);
		if (left)
			continue;
		char *k = ck_key(job_id, gone[i]);
		rocksdb_writebatch_delete(wb, k, strlen(k));
		free(k);
		any = true;
	}
	if (!err && any)
		store_write_with(st, wb, st->wopts_lazy, &rerr);
	rocksdb_writebatch_destroy(wb);
	if (rerr)
		err = db_error(st, rerr, "retention");
	free(gone);
	return err;
}

sv_error_t *sv_ckstore_max_parallelism(sv_ckstore_t *st, const char *job_id,
				       int now, int *before)
{
	char *k;
	if (asprintf(&k, "par/%s", job_id) < 0)
		abort();
	*before = 0;
	pthread_mutex_lock(&st->seq_lock);
	char *rerr = NULL;
	size_t vl = 0;
	char *v = rocksdb_get(st->db, st->ropts, k, strlen(k), &vl, &rerr);
	sv_error_t *err = NULL;
	if (rerr)
		err = db_error(st, rerr, k);
	else if (v && vl == 8)
		*before = (int)unbe64(v);
	rocksdb_free(v);
	if (!err && now > *before) {
		char buf[8];
		be64(buf, (uint64_t)now);
		err = put_raw(st, k, buf, 8);
	}
	pthread_mutex_unlock(&st->seq_lock);
	free(k);
	return err;
}

void sv_ckstore_free_record(sv_ckrec_t *rec)
{
	if (rec)
		streamvisor__checkpoint_record__free_unpacked(rec, NULL);
}
