/* file_sink.c — the file sink driver (sink.h, kind "file"): JSON lines
 * (sv_json_encode_row, one object per line) in files under the directory
 * conf->path, which is created (with its parents) when missing, confined to
 * the server's file_sink_roots (sinks/confine.h: resolved with openat and
 * O_NOFOLLOW from the root; every file below is opened O_NOFOLLOW too).
 * docs/sinks.md describes the layout for users.
 *
 * Layout, <job> being the job id (characters outside [A-Za-z0-9._-]
 * replaced by '_'):
 *
 *   <path>/part-<job>-a<attempt, 6 digits>.jsonl      at-least-once
 *   <path>/part-<job>-ck<checkpoint, 20 digits>.jsonl exactly-once, final
 *   <path>/.staging/<job>-a<attempt>-open.jsonl.tmp   the open transaction
 *   <path>/.staging/<job>-ck<checkpoint>.jsonl        prepared, durable
 *
 * At-least-once (not transactional): one file per attempt, opened for
 * append at the first row; flush() writes what is buffered and fsyncs the
 * file (and the directory once, after creating it). A crash may leave the
 * last line incomplete and output after the last flush repeats in the next
 * attempt's file.
 *
 * Exactly-once (conf->transactional), a two-phase commit per checkpoint:
 * rows of the open transaction go to the staging file "-open.jsonl.tmp"
 * (created at the first row: a checkpoint without rows has no file).
 * txn_prepare(n) writes the rest, fsyncs and closes it, renames it to the
 * prepared name of checkpoint n and fsyncs .staging; it appends to *state
 * one line of JSON {"ck":n,"staged":".staging/…","final":"part-…"} (both
 * null for an empty checkpoint). txn_commit renames the prepared file to its
 * final name and fsyncs the directory: a final name only ever names a
 * complete, durable file. txn_abort of an open transaction deletes its
 * staging file. txn_recover(state) completes the commit of a prepared
 * checkpoint after a crash: the staged file is renamed if it is still
 * there and the final one is not; nothing happens if the final file exists
 * (idempotent); neither existing is a checkpoint error.
 *
 * Prepared files of earlier checkpoints that were never committed (a crash
 * after prepare but before the checkpoint record was written) can never be
 * recovered once a later checkpoint commits: the commit of checkpoint m
 * deletes this job's prepared files with ids below m. Staging files of open
 * transactions left by a crash are deleted at open. One writer per job and
 * directory: two live attempts of one job in one directory are not fenced.
 *
 * Dead letters (write_raw) are refused: raw payloads are not JSON lines. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "sinks/sink.h"

#define FSNK_STAGING ".staging"
#define FSNK_WRITE_CHUNK (1u << 20) /* write(2) once this much is buffered */
#define FSNK_NAME_MAX 512

typedef enum fsnk_txn {
	FTXN_IDLE = 0, /* no transaction (or not transactional) */
	FTXN_OPEN, /* rows go to the open staging file */
	FTXN_PREPARED, /* staged file durable, waiting for commit */
} fsnk_txn_t;

typedef struct file_sink {
	sv_sink_t base;
	sv_logctx_t logctx;
	char *job_id;
	int attempt;
	char *name; /* job id made safe for file names */
	char *dir; /* conf->path */
	const sv_schema_t *schema; /* borrowed */
	bool transactional;
	int dirfd; /* the output directory */
	int stagefd; /* .staging (transactional), else -1 */

	int fd; /* current output file, or -1 */
	bool dir_dirty; /* a file was created since the last directory fsync */
	sv_buf_t buf; /* encoded rows not yet written */
	uint64_t pending; /* rows not yet flushed / committed */

	fsnk_txn_t txn;
	char open_name[FSNK_NAME_MAX]; /* in .staging */
	char staged[FSNK_NAME_MAX]; /* prepared name in .staging, or "" */
	char final[FSNK_NAME_MAX]; /* final name in dir, or "" */
	int64_t prepared_ck;
	sv_error_t *err; /* sticky I/O failure until an abort */
} file_sink_t;

extern const sv_sink_ops_t sv_sink_file_ops;
extern const sv_sink_ops_t sv_sink_file_txn_ops;

/* ---- errors and small helpers ---- */

static sv_error_t *fsnk_error(const file_sink_t *fs, sv_errcat_t cat,
			      int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static sv_error_t *fsnk_error(const file_sink_t *fs, sv_errcat_t cat,
			      int errnum, const char *fmt, ...)
{
	va_list ap;
	sv_error_t *err;

	va_start(ap, fmt);
	err = sv_error_newv(cat, fmt, ap);
	va_end(ap);
	if (fs->job_id)
		sv_error_set_job(err, fs->job_id, fs->attempt);
	if (errnum)
		sv_error_set_cause(err, errnum, strerror(errnum));
	return err;
}

/* Keep the first I/O failure: the sink is broken until an abort. */
static sv_error_t *fsnk_fail(file_sink_t *fs, sv_error_t *err)
{
	if (!fs->err)
		fs->err = sv_error_copy(err);
	return err;
}

static char *safe_name(const char *s)
{
	char *out = sv_strdup(s && *s ? s : "sink");
	for (char *p = out; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
		      *p == '-'))
			*p = '_';
	return out;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fsync_fd(int fd)
{
	return fsync(fd) ? -errno : 0;
}

static int exists_at(int dirfd, const char *name, bool *exists)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		*exists = true;
		return 0;
	}
	*exists = false;
	return errno == ENOENT ? 0 : -errno;
}

static void staged_name(const file_sink_t *fs, int64_t ck, char *out, size_t n)
{
	snprintf(out, n, "%s-ck%020lld.jsonl", fs->name, (long long)ck);
}

static void final_name(const file_sink_t *fs, int64_t ck, char *out, size_t n)
{
	snprintf(out, n, "part-%s-ck%020lld.jsonl", fs->name, (long long)ck);
}

/* ---- output file ---- */

/* Open the output file at the first row: the attempt's file (append), or
 * the open transaction's staging file (truncated: a leftover of a crash is
 * garbage, it was never prepared). */
static sv_error_t *fsnk_ensure_file(file_sink_t *fs)
{
	char name[FSNK_NAME_MAX];

	if (fs->fd >= 0)
		return NULL;
	if (fs->transactional) {
		fs->fd = openat(fs->stagefd, fs->open_name,
				O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
					O_NOFOLLOW,
				0644);
		if (fs->fd < 0)
			return fsnk_fail(
				fs,
				fsnk_error(
					fs, SV_ERR_SINK_COMMIT, errno,
					"cannot create staging file '%s/%s/%s'",
					fs->dir, FSNK_STAGING, fs->open_name));
	} else {
		snprintf(name, sizeof(name), "part-%s-a%06d.jsonl", fs->name,
			 fs->attempt);
		fs->fd = openat(fs->dirfd, name,
				O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
					O_NOFOLLOW,
				0644);
		if (fs->fd < 0)
			return fsnk_fail(
				fs,
				fsnk_error(fs, SV_ERR_SINK_COMMIT, errno,
					   "cannot open output file '%s/%s'",
					   fs->dir, name));
	}
	fs->dir_dirty = true;
	return NULL;
}

static sv_error_t *fsnk_write_out(file_sink_t *fs)
{
	int rc;

	if (fs->buf.len == 0)
		return NULL;
	if ((rc = write_all(fs->fd, fs->buf.data, fs->buf.len)))
		return fsnk_fail(
			fs,
			fsnk_error(
				fs, SV_ERR_SINK_COMMIT, -rc,
				"cannot write to the output of directory '%s'",
				fs->dir));
	sv_buf_reset(&fs->buf);
	return NULL;
}

static void fsnk_close_file(file_sink_t *fs)
{
	if (fs->fd >= 0)
		close(fs->fd);
	fs->fd = -1;
	sv_buf_reset(&fs->buf);
}

/* Delete this job's staging files of open transactions left by a crash,
 * and (after committing checkpoint `below`) its prepared files of lower
 * checkpoints that can no longer be recovered. */
static void fsnk_sweep(file_sink_t *fs, bool open_files, int64_t below)
{
	/* A descriptor of its own: a dup would share the read position. */
	int fd = openat(fs->stagefd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	size_t nlen = strlen(fs->name);
	struct dirent *de;
	int removed = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name, *rest;
		size_t len = strlen(n);
		bool rm = false;

		if (strncmp(n, fs->name, nlen) || n[nlen] != '-')
			continue;
		rest = n + nlen + 1;
		if (open_files && len > 15 &&
		    !strcmp(n + len - 15, "-open.jsonl.tmp") && rest[0] == 'a')
			rm = true;
		if (below >= 0 && !strncmp(rest, "ck", 2) &&
		    strlen(rest) == 2 + 20 + 6 &&
		    !strcmp(rest + 22, ".jsonl")) {
			char *end;
			long long ck = strtoll(rest + 2, &end, 10);
			if (end == rest + 22 && ck < below)
				rm = true;
		}
		if (rm && unlinkat(fs->stagefd, n, 0) == 0)
			removed++;
	}
	closedir(d);
	if (removed)
		sv_log(&fs->logctx, SV_LOG_INFO, "file",
		       "removed %d stale staging file(s) of job '%s' in "
		       "'%s/%s'",
		       removed, fs->name, fs->dir, FSNK_STAGING);
}

/* ---- driver ---- */

static void fsnk_close(sv_sink_t *snk);

static sv_error_t *fsnk_open(const sv_sink_conf_t *conf, sv_sink_t **out)
{
	file_sink_t *fs;
	sv_error_t *err;
	int rc;

	*out = NULL;
	fs = sv_calloc(1, sizeof(*fs));
	fs->base.ops = conf->transactional ? &sv_sink_file_txn_ops
					   : &sv_sink_file_ops;
	fs->job_id = conf->job_id ? sv_strdup(conf->job_id) : NULL;
	fs->attempt = conf->attempt;
	fs->logctx.job_id = fs->job_id;
	fs->logctx.attempt = conf->attempt;
	fs->name = safe_name(conf->job_id);
	fs->dir = sv_strdup(conf->path ? conf->path : "");
	fs->schema = conf->schema;
	fs->transactional = conf->transactional;
	fs->dirfd = fs->stagefd = fs->fd = -1;
	fs->prepared_ck = -1;
	sv_buf_init(&fs->buf);
	snprintf(fs->open_name, sizeof(fs->open_name),
		 "%s-a%06d-open.jsonl.tmp", fs->name, fs->attempt);

	if (!conf->path || !*conf->path) {
		err = sv_error_set_field(
			fsnk_error(fs, SV_ERR_CONFIG, 0,
				   "file sink needs a path (output directory)"),
			"sink.path");
		goto fail;
	}
	if (conf->raw) {
		err = fsnk_error(fs, SV_ERR_CONFIG, 0,
				 "file sink '%s' cannot take dead letters (raw "
				 "payloads); use a kafka or memory sink",
				 fs->dir);
		goto fail;
	}
	if (!fs->schema) {
		err = fsnk_error(fs, SV_ERR_CONFIG, 0,
				 "file sink '%s' needs a schema", fs->dir);
		goto fail;
	}
	if (conf->format != SV_FMT_JSON) {
		err = sv_error_set_field(
			fsnk_error(fs, SV_ERR_CONFIG, 0,
				   "file sink cannot write format '%s' (json "
				   "only)",
				   sv_format_name(conf->format)),
			"sink.format");
		goto fail;
	}
	/* confined to the roots, no symlink followed (sinks/confine.h) */
	if ((rc = sv_fileroots_open(conf->roots, fs->dir)) < 0) {
		err = sv_error_set_field(
			fsnk_error(fs,
				   rc == -EACCES || rc == -ELOOP
					   ? SV_ERR_CONFIG
					   : SV_ERR_BINDING,
				   -rc,
				   rc == -EACCES || rc == -ELOOP
					   ? "output directory '%s' is not "
					     "allowed (outside file_sink_roots "
					     "or through a symlink)"
					   : "cannot create output directory "
					     "'%s'",
				   fs->dir),
			"sink.path");
		goto fail;
	}
	fs->dirfd = rc;
	if (fs->transactional) {
		if (mkdirat(fs->dirfd, FSNK_STAGING, 0755) == 0)
			rc = fsync_fd(fs->dirfd);
		else
			rc = errno == EEXIST ? 0 : -errno;
		if (!rc &&
		    (fs->stagefd = openat(fs->dirfd, FSNK_STAGING,
					  O_RDONLY | O_DIRECTORY | O_CLOEXEC |
						  O_NOFOLLOW)) < 0)
			rc = -errno;
		if (rc) {
			err = sv_error_set_field(
				fsnk_error(fs, SV_ERR_BINDING, -rc,
					   "cannot create staging directory "
					   "'%s/%s'",
					   fs->dir, FSNK_STAGING),
				"sink.path");
			goto fail;
		}
		fsnk_sweep(fs, true, -1);
	}
	sv_log(&fs->logctx, SV_LOG_INFO, "file",
	       "writing JSON lines into '%s'%s", fs->dir,
	       fs->transactional ? " (two-phase commit per checkpoint)" : "");
	*out = &fs->base;
	return NULL;
fail:
	fsnk_close(&fs->base);
	return err;
}

static sv_error_t *fsnk_write(sv_sink_t *snk, const sv_batch_t *b)
{
	file_sink_t *fs = (file_sink_t *)snk;
	sv_error_t *err;

	if (fs->err)
		return sv_error_copy(fs->err);
	if (b->nrows == 0)
		return NULL;
	if (fs->transactional && fs->txn != FTXN_OPEN)
		return fsnk_error(fs, SV_ERR_RUNTIME, 0,
				  "write to file sink '%s' outside an open "
				  "transaction",
				  fs->dir);
	if ((err = fsnk_ensure_file(fs)))
		return err;
	for (size_t r = 0; r < b->nrows; r++) {
		sv_json_encode_row(fs->schema, sv_batch_row(b, r), &fs->buf);
		sv_buf_putc(&fs->buf, '\n');
	}
	fs->pending += b->nrows;
	if (fs->buf.len >= FSNK_WRITE_CHUNK)
		return fsnk_write_out(fs);
	return NULL;
}

static sv_error_t *fsnk_write_raw(sv_sink_t *snk, const char *payload,
				  size_t len, const char *reason)
{
	file_sink_t *fs = (file_sink_t *)snk;
	SV_UNUSED(payload);
	SV_UNUSED(len);
	SV_UNUSED(reason);
	return fsnk_error(fs, SV_ERR_RUNTIME, 0,
			  "file sink '%s' cannot take dead letters (raw "
			  "payloads)",
			  fs->dir);
}

/* At-least-once: everything written is on disk. Transactional: the rows
 * are written to the staging file (durable only at txn_prepare). */
static sv_error_t *fsnk_flush(sv_sink_t *snk, int timeout_ms)
{
	file_sink_t *fs = (file_sink_t *)snk;
	sv_error_t *err;
	int rc;

	SV_UNUSED(timeout_ms);
	if (fs->err)
		return sv_error_copy(fs->err);
	if (fs->fd < 0)
		return NULL;
	if ((err = fsnk_write_out(fs)))
		return err;
	if (fs->transactional)
		return NULL;
	if ((rc = fsync_fd(fs->fd)) ||
	    (fs->dir_dirty && (rc = fsync_fd(fs->dirfd))))
		return fsnk_fail(fs,
				 fsnk_error(fs, SV_ERR_SINK_COMMIT, -rc,
					    "cannot sync the output in '%s'",
					    fs->dir));
	fs->dir_dirty = false;
	fs->base.records_out += fs->pending;
	fs->pending = 0;
	return NULL;
}

static sv_error_t *fsnk_txn_begin(sv_sink_t *snk)
{
	file_sink_t *fs = (file_sink_t *)snk;

	if (fs->err)
		return sv_error_copy(fs->err);
	if (fs->txn != FTXN_IDLE)
		return fsnk_error(fs, SV_ERR_RUNTIME, 0,
				  "file sink '%s': a transaction is already "
				  "%s",
				  fs->dir,
				  fs->txn == FTXN_OPEN ? "open" : "prepared");
	fs->txn = FTXN_OPEN;
	fs->pending = 0;
	fs->staged[0] = fs->final[0] = '\0';
	fs->prepared_ck = -1;
	return NULL;
}

static void put_name(sv_buf_t *b, const char *prefix, const char *name)
{
	if (!*name) {
		sv_buf_puts(b, "null");
		return;
	}
	char tmp[FSNK_NAME_MAX + 16];
	int n = snprintf(tmp, sizeof(tmp), "%s%s", prefix, name);
	sv_buf_json_str(b, tmp, (size_t)n);
}

static sv_error_t *fsnk_txn_prepare(sv_sink_t *snk, int64_t checkpoint_id,
				    sv_buf_t *state)
{
	file_sink_t *fs = (file_sink_t *)snk;
	sv_error_t *err;
	int rc;

	if (fs->err)
		return sv_error_copy(fs->err);
	if (fs->txn != FTXN_OPEN)
		return fsnk_error(fs, SV_ERR_RUNTIME, 0,
				  "file sink '%s': prepare without an open "
				  "transaction",
				  fs->dir);
	if (fs->fd >= 0) {
		staged_name(fs, checkpoint_id, fs->staged, sizeof(fs->staged));
		final_name(fs, checkpoint_id, fs->final, sizeof(fs->final));
		if ((err = fsnk_write_out(fs)))
			return err;
		rc = fsync_fd(fs->fd);
		if (close(fs->fd) && !rc)
			rc = -errno;
		fs->fd = -1;
		if (!rc &&
		    renameat(fs->stagefd, fs->open_name, fs->stagefd,
			     fs->staged))
			rc = -errno;
		if (!rc)
			rc = fsync_fd(fs->stagefd);
		if (rc)
			return fsnk_fail(fs,
					 fsnk_error(fs, SV_ERR_SINK_COMMIT, -rc,
						    "cannot prepare checkpoint "
						    "%lld in '%s/%s'",
						    (long long)checkpoint_id,
						    fs->dir, FSNK_STAGING));
	}
	/* Names relative to the sink directory, one line per checkpoint. */
	sv_buf_printf(state,
		      "{\"ck\":%lld,\"staged\":", (long long)checkpoint_id);
	put_name(state, FSNK_STAGING "/", fs->staged);
	sv_buf_puts(state, ",\"final\":");
	put_name(state, "", fs->final);
	sv_buf_puts(state, "}\n");
	fs->prepared_ck = checkpoint_id;
	fs->txn = FTXN_PREPARED;
	return NULL;
}

/* Move a prepared file to its final name and make that durable. */
static int fsnk_publish(file_sink_t *fs, const char *staged, const char *final)
{
	if (renameat(fs->stagefd, staged, fs->dirfd, final))
		return -errno;
	return fsync_fd(fs->dirfd);
}

static sv_error_t *fsnk_txn_commit(sv_sink_t *snk)
{
	file_sink_t *fs = (file_sink_t *)snk;
	int rc;

	if (fs->err)
		return sv_error_copy(fs->err);
	if (fs->txn != FTXN_PREPARED)
		return fsnk_error(fs, SV_ERR_RUNTIME, 0,
				  "file sink '%s': commit of a transaction "
				  "that is not prepared",
				  fs->dir);
	if (fs->staged[0] && (rc = fsnk_publish(fs, fs->staged, fs->final)))
		return fsnk_fail(fs,
				 fsnk_error(fs, SV_ERR_SINK_COMMIT, -rc,
					    "cannot commit checkpoint %lld: "
					    "rename of '%s/%s/%s' "
					    "to '%s/%s' failed",
					    (long long)fs->prepared_ck, fs->dir,
					    FSNK_STAGING, fs->staged, fs->dir,
					    fs->final));
	fs->base.records_out += fs->pending;
	fs->pending = 0;
	fs->txn = FTXN_IDLE;
	fsnk_sweep(fs, false, fs->prepared_ck);
	return NULL;
}

/* An open transaction's staging file is deleted. A prepared one is kept:
 * a checkpoint record may already name it, and then recovery completes its
 * commit; if none does, the next commit's sweep deletes it. */
static sv_error_t *fsnk_txn_abort(sv_sink_t *snk)
{
	file_sink_t *fs = (file_sink_t *)snk;
	bool had_file = fs->fd >= 0;

	fsnk_close_file(fs);
	if (fs->txn == FTXN_OPEN && had_file &&
	    unlinkat(fs->stagefd, fs->open_name, 0) && errno != ENOENT) {
		sv_error_t *err = fsnk_error(
			fs, SV_ERR_SINK_COMMIT, errno,
			"cannot delete staging file '%s/%s/%s'", fs->dir,
			FSNK_STAGING, fs->open_name);
		fs->txn = FTXN_IDLE;
		return err;
	}
	if (fs->txn == FTXN_PREPARED && fs->staged[0])
		sv_log(&fs->logctx, SV_LOG_INFO, "file",
		       "abort after prepare: '%s/%s/%s' kept for recovery",
		       fs->dir, FSNK_STAGING, fs->staged);
	fs->txn = FTXN_IDLE;
	fs->pending = 0;
	sv_error_destroy(fs->err);
	fs->err = NULL;
	return NULL;
}

/* A state name: final names are plain names in the directory, staged ones
 * plain names in .staging (nothing else may be renamed). */
static const char *check_name(const char *s, size_t len, bool staged, char *out,
			      size_t outlen)
{
	const size_t plen = sizeof(FSNK_STAGING "/") - 1;
	if (staged) {
		if (len <= plen || memcmp(s, FSNK_STAGING "/", plen))
			return NULL;
		s += plen;
		len -= plen;
	}
	if (len == 0 || len >= outlen || s[0] == '.' || memchr(s, '/', len) ||
	    memchr(s, '\0', len))
		return NULL;
	memcpy(out, s, len);
	out[len] = '\0';
	return out;
}

static sv_error_t *fsnk_recover_one(file_sink_t *fs, const sv_value_t *row,
				    const char *line)
{
	char staged[FSNK_NAME_MAX], final[FSNK_NAME_MAX];
	long long ck = row[0].type == SV_T_INT64 ? (long long)row[0].v.i : -1;
	bool have_staged, have_final;
	int rc;

	if (row[1].type == SV_T_NULL && row[2].type == SV_T_NULL)
		return NULL; /* an empty checkpoint: no file */
	if (row[1].type != SV_T_STRING || row[2].type != SV_T_STRING ||
	    !check_name(row[1].v.s, row[1].len, true, staged, sizeof(staged)) ||
	    !check_name(row[2].v.s, row[2].len, false, final, sizeof(final)))
		return fsnk_error(fs, SV_ERR_CHECKPOINT, 0,
				  "file sink '%s': invalid sink state '%s'",
				  fs->dir, line);
	if ((rc = exists_at(fs->dirfd, final, &have_final)) ||
	    (rc = exists_at(fs->stagefd, staged, &have_staged)))
		return fsnk_error(fs, SV_ERR_CHECKPOINT, -rc,
				  "file sink '%s': cannot look up the files of "
				  "checkpoint %lld",
				  fs->dir, ck);
	if (have_final) {
		if (have_staged)
			sv_log(&fs->logctx, SV_LOG_WARN, "file",
			       "checkpoint %lld: '%s' is committed but "
			       "'%s/%s/%s' is still there; left alone",
			       ck, final, fs->dir, FSNK_STAGING, staged);
		return NULL;
	}
	if (!have_staged)
		return fsnk_error(fs, SV_ERR_CHECKPOINT, 0,
				  "file sink '%s': checkpoint %lld has neither "
				  "its staged file '%s/%s' nor its final file "
				  "'%s'",
				  fs->dir, ck, FSNK_STAGING, staged, final);
	if ((rc = fsnk_publish(fs, staged, final)))
		return fsnk_error(fs, SV_ERR_SINK_COMMIT, -rc,
				  "file sink '%s': cannot complete the commit "
				  "of checkpoint %lld (rename '%s/%s' to '%s')",
				  fs->dir, ck, FSNK_STAGING, staged, final);
	sv_log(&fs->logctx, SV_LOG_INFO, "file",
	       "checkpoint %lld: commit completed, '%s' in place", ck, final);
	return NULL;
}

/* state: the lines txn_prepare appended; each is completed in order. */
static sv_error_t *fsnk_txn_recover(sv_sink_t *snk, const char *state,
				    size_t len)
{
	file_sink_t *fs = (file_sink_t *)snk;
	sv_schema_t *schema = sv_schema_new();
	sv_decoder_t *dec;
	sv_batch_t b;
	sv_error_t *err = NULL;
	size_t off = 0;

	sv_schema_add(schema, "ck", SV_T_INT64, false);
	sv_schema_add(schema, "staged", SV_T_STRING, true);
	sv_schema_add(schema, "final", SV_T_STRING, true);
	dec = sv_decoder_new(SV_FMT_JSON, schema);
	sv_batch_init(&b, schema);
	while (!err && off < len) {
		const char *line = state + off;
		const char *nl = memchr(line, '\n', len - off);
		size_t n = nl ? (size_t)(nl - line) : len - off;
		char reason[256];
		sv_rowmeta_t *meta;
		char *copy;

		off += n + (nl ? 1 : 0);
		if (n == 0)
			continue;
		copy = sv_strndup(line, n);
		sv_batch_reset(&b);
		if (sv_decoder_decode(dec, line, n, &b, &meta, reason,
				      sizeof(reason)))
			err = fsnk_error(fs, SV_ERR_CHECKPOINT, 0,
					 "file sink '%s': invalid sink state "
					 "'%s': %s",
					 fs->dir, copy, reason);
		else
			err = fsnk_recover_one(fs, sv_batch_row(&b, 0), copy);
		free(copy);
	}
	sv_batch_release(&b);
	sv_decoder_destroy(dec);
	sv_schema_destroy(schema);
	return err;
}

static void fsnk_close(sv_sink_t *snk)
{
	file_sink_t *fs = (file_sink_t *)snk;

	if (!fs)
		return;
	if (fs->transactional && fs->txn == FTXN_OPEN)
		fsnk_txn_abort(snk);
	else if (!fs->transactional && fs->fd >= 0 && !fs->err &&
		 fs->buf.len > 0)
		sv_log(&fs->logctx, SV_LOG_WARN, "file",
		       "closing file sink '%s' with %llu unflushed rows "
		       "(dropped)",
		       fs->dir, (unsigned long long)fs->pending);
	fsnk_close_file(fs);
	if (fs->stagefd >= 0)
		close(fs->stagefd);
	if (fs->dirfd >= 0)
		close(fs->dirfd);
	sv_error_destroy(fs->err);
	sv_buf_release(&fs->buf);
	free(fs->dir);
	free(fs->name);
	free(fs->job_id);
	free(fs);
}

static const sv_driver_t file_driver = {
	.kind = "file",
	.caps = SV_DRIVER_TRANSACTIONAL | SV_DRIVER_PATH,
	.fields =
		(const sv_driver_field_t[]){
			{.name = "path",
			 .flags = SV_DRIVER_FIELD_REQUIRED,
			 .what = "the output directory"},
			{NULL},
		},
};

const sv_sink_ops_t sv_sink_file_ops = {
	.driver = &file_driver,
	.open = fsnk_open,
	.write = fsnk_write,
	.write_raw = fsnk_write_raw,
	.flush = fsnk_flush,
	.close = fsnk_close,
};

/* A sink opened with conf->transactional gets this table (open() switches
 * to it), so sv_sink_transactional() is true only for it. No txn_offsets:
 * the worker's checkpoint store holds the source positions. */
const sv_sink_ops_t sv_sink_file_txn_ops = {
	.driver = &file_driver,
	.open = fsnk_open,
	.write = fsnk_write,
	.write_raw = fsnk_write_raw,
	.flush = fsnk_flush,
	.close = fsnk_close,
	.txn_begin = fsnk_txn_begin,
	.txn_prepare = fsnk_txn_prepare,
	.txn_commit = fsnk_txn_commit,
	.txn_abort = fsnk_txn_abort,
	.txn_recover = fsnk_txn_recover,
};
