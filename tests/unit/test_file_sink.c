/* test_file_sink.c — the file sink (sinks/file_sink.c): at-least-once
 * append files, the two-phase commit per checkpoint (no final file before
 * commit, exact content after), abort, recovery of a prepared checkpoint
 * (idempotent, also after a real SIGKILL between prepare and commit), the
 * sweep of stale staging files, and path errors. Goes through
 * sv_sink_open (registry) and the inline wrappers. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

#include "sinks/sink.h"

typedef struct fx {
	char root[64]; /* mkdtemp */
	char dir[128]; /* root/out/nested: created by the sink */
	sv_schema_t *schema;
	sv_batch_t b;
	sv_sink_t *snk;
} fx_t;

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	snprintf(f->root, sizeof(f->root), "/tmp/sv-file-sink-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->dir, sizeof(f->dir), "%s/out/nested", f->root);
	f->schema = sv_schema_new();
	sv_schema_add(f->schema, "id", SV_T_INT64, true);
	sv_schema_add(f->schema, "name", SV_T_STRING, true);
	sv_batch_init(&f->b, f->schema);
	*state = f;
	return 0;
}

static void rm_rf(const char *path)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static int teardown(void **state)
{
	fx_t *f = *state;
	sv_sink_close(f->snk);
	sv_batch_release(&f->b);
	sv_schema_destroy(f->schema);
	rm_rf(f->root);
	free(f);
	return 0;
}

static sv_error_t *open_sink(fx_t *f, const char *path, bool txn, int attempt,
			     sv_sink_t **out)
{
	sv_sink_conf_t c = {
		.kind = "file",
		.job_id = "job1",
		.attempt = attempt,
		.format = SV_FMT_JSON,
		.schema = f->schema,
		.key_column = -1,
		.transactional = txn,
		.path = path,
	};
	return sv_sink_open(&c, out);
}

static void open_ok(fx_t *f, bool txn, int attempt)
{
	sv_error_t *err = open_sink(f, f->dir, txn, attempt, &f->snk);
	if (err)
		fail_msg("open: %s", err->message);
}

/* Rows id = from..to-1, name "n<id>". */
static void rows(fx_t *f, int from, int to)
{
	sv_batch_reset(&f->b);
	for (int i = from; i < to; i++) {
		sv_value_t *row = sv_batch_add_row(&f->b, NULL);
		char tmp[16];
		int n = snprintf(tmp, sizeof(tmp), "n%d", i);
		row[0] = sv_int(i);
		row[1] = sv_str(sv_batch_strdup(&f->b, tmp, (size_t)n),
				(uint32_t)n);
	}
}

static char *want_lines(int from, int to)
{
	sv_buf_t b;
	sv_buf_init(&b);
	for (int i = from; i < to; i++)
		sv_buf_printf(&b, "{\"id\":%d,\"name\":\"n%d\"}\n", i, i);
	if (!b.data)
		return sv_strdup("");
	return sv_buf_detach(&b);
}

/* File content, or NULL when it does not exist. */
static char *slurp(const char *dir, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	sv_buf_t b;
	sv_buf_init(&b);
	char tmp[4096];
	size_t n;
	while ((n = fread(tmp, 1, sizeof(tmp), fp)) > 0)
		sv_buf_append(&b, tmp, n);
	fclose(fp);
	return b.data ? sv_buf_detach(&b) : sv_strdup("");
}

static bool exists(const char *dir, const char *name)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

/* Entries of dir (without . and ..), sorted, joined with ' '. */
static char *listing(const char *dir)
{
	DIR *d = opendir(dir);
	char *names[64];
	size_t n = 0;
	struct dirent *de;
	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    n < 64)
			names[n++] = sv_strdup(de->d_name);
	closedir(d);
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0;
		     j--) {
			char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	sv_buf_t b;
	sv_buf_init(&b);
	sv_buf_puts(&b, "");
	for (size_t i = 0; i < n; i++) {
		sv_buf_printf(&b, "%s%s", i ? " " : "", names[i]);
		free(names[i]);
	}
	return sv_buf_detach(&b);
}

static void assert_listing(const char *dir, const char *want)
{
	char *got = listing(dir);
	assert_string_equal(got, want);
	free(got);
}

static void ok(sv_error_t *err)
{
	if (err)
		fail_msg("unexpected error: %s", err->message);
}

#define FINAL5 "part-job1-ck00000000000000000005.jsonl"
#define STAGED5 "job1-ck00000000000000000005.jsonl"

static void test_two_phase_commit(void **state)
{
	fx_t *f = *state;
	char staging[160];
	sv_buf_t st;

	open_ok(f, true, 1); /* creates out/nested */
	snprintf(staging, sizeof(staging), "%s/.staging", f->dir);
	assert_true(sv_sink_transactional(f->snk));
	assert_listing(f->dir, ".staging");

	ok(sv_sink_txn_begin(f->snk));
	rows(f, 0, 3);
	ok(sv_sink_write(f->snk, &f->b));
	rows(f, 3, 5);
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_flush(f->snk, 100)); /* staging only: still invisible */
	assert_listing(f->dir, ".staging");
	assert_listing(staging, "job1-a000001-open.jsonl.tmp");

	sv_buf_init(&st);
	ok(sv_sink_txn_prepare(f->snk, 5, &st));
	assert_string_equal(st.data,
			    "{\"ck\":5,\"staged\":\".staging/" STAGED5
			    "\",\"final\":\"" FINAL5 "\"}\n");
	/* prepared: durable in staging, no final file */
	assert_listing(f->dir, ".staging");
	assert_listing(staging, STAGED5);
	char *want = want_lines(0, 5);
	char *got = slurp(staging, STAGED5);
	assert_string_equal(got, want);
	free(got);
	assert_int_equal(f->snk->records_out, 0);

	ok(sv_sink_txn_commit(f->snk));
	assert_listing(f->dir, ".staging " FINAL5);
	assert_listing(staging, "");
	got = slurp(f->dir, FINAL5);
	assert_string_equal(got, want);
	free(got);
	free(want);
	assert_int_equal(f->snk->records_out, 5);

	/* next checkpoint: its own file */
	ok(sv_sink_txn_begin(f->snk));
	rows(f, 5, 7);
	ok(sv_sink_write(f->snk, &f->b));
	sv_buf_reset(&st);
	ok(sv_sink_txn_prepare(f->snk, 6, &st));
	ok(sv_sink_txn_commit(f->snk));
	got = slurp(f->dir, "part-job1-ck00000000000000000006.jsonl");
	want = want_lines(5, 7);
	assert_string_equal(got, want);
	free(got);
	free(want);
	sv_buf_release(&st);
}

static void test_protocol_misuse(void **state)
{
	fx_t *f = *state;
	sv_buf_t st;
	sv_error_t *err;

	sv_buf_init(&st);
	open_ok(f, true, 1);
	rows(f, 0, 1);
	err = sv_sink_write(f->snk, &f->b); /* outside a transaction */
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_RUNTIME);
	sv_error_destroy(err);
	err = sv_sink_txn_commit(f->snk); /* not prepared */
	assert_non_null(err);
	sv_error_destroy(err);
	ok(sv_sink_txn_begin(f->snk));
	err = sv_sink_txn_begin(f->snk);
	assert_non_null(err);
	sv_error_destroy(err);
	err = sv_sink_txn_commit(f->snk); /* open, not prepared */
	assert_non_null(err);
	sv_error_destroy(err);
	err = sv_sink_write_raw(f->snk, "x", 1, "bad");
	assert_non_null(err);
	sv_error_destroy(err);
	sv_buf_release(&st);
}

static void test_abort(void **state)
{
	fx_t *f = *state;
	char staging[160];
	sv_buf_t st;

	sv_buf_init(&st);
	open_ok(f, true, 1);
	snprintf(staging, sizeof(staging), "%s/.staging", f->dir);
	ok(sv_sink_txn_begin(f->snk));
	rows(f, 0, 4);
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_flush(f->snk, 100));
	assert_listing(staging, "job1-a000001-open.jsonl.tmp");
	ok(sv_sink_txn_abort(f->snk));
	assert_listing(staging, "");
	assert_listing(f->dir, ".staging");
	assert_int_equal(f->snk->records_out, 0);

	/* the sink goes on after an abort: only the new rows appear */
	ok(sv_sink_txn_begin(f->snk));
	rows(f, 10, 12);
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_txn_prepare(f->snk, 5, &st));
	ok(sv_sink_txn_commit(f->snk));
	char *got = slurp(f->dir, FINAL5), *want = want_lines(10, 12);
	assert_string_equal(got, want);
	free(got);
	free(want);
	assert_int_equal(f->snk->records_out, 2);

	/* close with an open transaction deletes its staging file */
	ok(sv_sink_txn_begin(f->snk));
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_flush(f->snk, 100));
	assert_listing(staging, "job1-a000001-open.jsonl.tmp");
	sv_sink_close(f->snk);
	f->snk = NULL;
	assert_listing(staging, "");
	assert_listing(f->dir, ".staging " FINAL5);
	sv_buf_release(&st);
}

/* Prepare, no commit (the process "dies"), a new attempt recovers from
 * the state: the final file appears once; recovering again changes
 * nothing. */
static void test_recover_idempotent(void **state)
{
	fx_t *f = *state;
	char staging[160];
	sv_buf_t st;

	sv_buf_init(&st);
	open_ok(f, true, 1);
	snprintf(staging, sizeof(staging), "%s/.staging", f->dir);
	ok(sv_sink_txn_begin(f->snk));
	rows(f, 0, 3);
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_txn_prepare(f->snk, 5, &st));
	/* abort after prepare keeps the prepared file for recovery */
	ok(sv_sink_txn_abort(f->snk));
	sv_sink_close(f->snk);
	f->snk = NULL;
	assert_false(exists(f->dir, FINAL5));
	assert_true(exists(staging, STAGED5));

	open_ok(f, true, 2);
	assert_true(exists(staging, STAGED5)); /* not swept at open */
	ok(sv_sink_txn_recover(f->snk, st.data, st.len));
	assert_listing(f->dir, ".staging " FINAL5);
	assert_listing(staging, "");
	char *got = slurp(f->dir, FINAL5), *want = want_lines(0, 3);
	assert_string_equal(got, want);
	free(got);

	/* again: a no-op */
	ok(sv_sink_txn_recover(f->snk, st.data, st.len));
	assert_listing(f->dir, ".staging " FINAL5);
	got = slurp(f->dir, FINAL5);
	assert_string_equal(got, want);
	free(got);
	free(want);
	/* the new attempt continues normally */
	ok(sv_sink_txn_begin(f->snk));
	sv_buf_release(&st);
}

/* A real crash: a child process prepares checkpoint 5, hands over the
 * state and SIGKILLs itself before commit. */
static void test_recover_after_sigkill(void **state)
{
	fx_t *f = *state;
	char staging[160], buf[1024];
	int pfd[2];
	ssize_t n;
	size_t got_len = 0;

	snprintf(staging, sizeof(staging), "%s/.staging", f->dir);
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sv_sink_t *snk;
		sv_buf_t st;
		close(pfd[0]);
		sv_buf_init(&st);
		if (open_sink(f, f->dir, true, 1, &snk) ||
		    sv_sink_txn_begin(snk))
			_exit(2);
		rows(f, 0, 1000);
		if (sv_sink_write(snk, &f->b) ||
		    sv_sink_txn_prepare(snk, 5, &st))
			_exit(3);
		if (write(pfd[1], st.data, st.len) != (ssize_t)st.len)
			_exit(5);
		close(pfd[1]);
		raise(SIGKILL);
		_exit(6);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], buf + got_len, sizeof(buf) - 1 - got_len)) > 0)
		got_len += (size_t)n;
	close(pfd[0]);
	buf[got_len] = '\0';
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail_msg("child did not die by SIGKILL: status 0x%x", status);
	assert_true(got_len > 0);

	/* nothing visible under a final name */
	assert_listing(f->dir, ".staging");
	assert_listing(staging, STAGED5);

	open_ok(f, true, 2);
	assert_listing(staging, STAGED5);
	ok(sv_sink_txn_recover(f->snk, buf, got_len));
	ok(sv_sink_txn_recover(f->snk, buf, got_len));
	assert_listing(f->dir, ".staging " FINAL5);
	char *got = slurp(f->dir, FINAL5), *want = want_lines(0, 1000);
	assert_string_equal(got, want);
	free(got);
	free(want);
}

/* A crash with an open transaction leaves its staging file: garbage (it was
 * never prepared), deleted when the job's sink opens again. */
static void test_stale_open_file_removed(void **state)
{
	fx_t *f = *state;
	char staging[160], stale[256];

	open_ok(f, true, 1);
	sv_sink_close(f->snk);
	f->snk = NULL;
	snprintf(staging, sizeof(staging), "%s/.staging", f->dir);
	snprintf(stale, sizeof(stale), "%s/job1-a000007-open.jsonl.tmp",
		 staging);
	FILE *fp = fopen(stale, "w");
	assert_non_null(fp);
	fputs("{\"id\":1,\"na", fp); /* torn */
	fclose(fp);
	snprintf(stale, sizeof(stale), "%s/job2-a000001-open.jsonl.tmp",
		 staging);
	fp = fopen(stale, "w");
	assert_non_null(fp);
	fclose(fp);
	open_ok(f, true, 8);
	assert_listing(staging, "job2-a000001-open.jsonl.tmp");
	assert_listing(f->dir, ".staging");
}

static void test_recover_errors(void **state)
{
	fx_t *f = *state;
	sv_error_t *err;
	const char *missing = "{\"ck\":9,\"staged\":\".staging/job1-ck"
			      "00000000000000000009.jsonl\",\"final\":"
			      "\"part-job1-ck00000000000000000009.jsonl\"}\n";
	const char *evil = "{\"ck\":9,\"staged\":\".staging/../../x\","
			   "\"final\":\"y\"}\n";
	const char *evil2 = "{\"ck\":9,\"staged\":\"/etc/passwd\","
			    "\"final\":\"y\"}\n";

	open_ok(f, true, 1);
	err = sv_sink_txn_recover(f->snk, missing, strlen(missing));
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	err = sv_sink_txn_recover(f->snk, evil, strlen(evil));
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	err = sv_sink_txn_recover(f->snk, evil2, strlen(evil2));
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	err = sv_sink_txn_recover(f->snk, "not json", 8);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	ok(sv_sink_txn_recover(f->snk, "", 0)); /* nothing to complete */
}

/* A checkpoint without rows writes no file; its state says so and
 * recovering it is a no-op. */
static void test_empty_checkpoint(void **state)
{
	fx_t *f = *state;
	sv_buf_t st;

	sv_buf_init(&st);
	open_ok(f, true, 1);
	ok(sv_sink_txn_begin(f->snk));
	rows(f, 0, 0);
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_txn_prepare(f->snk, 3, &st));
	assert_string_equal(st.data,
			    "{\"ck\":3,\"staged\":null,\"final\":null}\n");
	ok(sv_sink_txn_commit(f->snk));
	assert_listing(f->dir, ".staging");
	ok(sv_sink_txn_recover(f->snk, st.data, st.len));
	assert_listing(f->dir, ".staging");
	sv_buf_release(&st);
}

/* Prepared files of checkpoints that can never be committed any more go
 * with the next commit; other jobs' files stay. */
static void test_sweep(void **state)
{
	fx_t *f = *state;
	char staging[160];
	sv_buf_t st;

	sv_buf_init(&st);
	open_ok(f, true, 1);
	snprintf(staging, sizeof(staging), "%s/.staging", f->dir);
	ok(sv_sink_txn_begin(f->snk));
	rows(f, 0, 2);
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_txn_prepare(f->snk, 3, &st));
	ok(sv_sink_txn_abort(f->snk)); /* prepared file kept */
	char other[256];
	snprintf(other, sizeof(other), "%s/job2-ck00000000000000000001.jsonl",
		 staging);
	FILE *fp = fopen(other, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_listing(staging,
		       "job1-ck00000000000000000003.jsonl "
		       "job2-ck00000000000000000001.jsonl");
	ok(sv_sink_txn_begin(f->snk));
	ok(sv_sink_write(f->snk, &f->b));
	sv_buf_reset(&st);
	ok(sv_sink_txn_prepare(f->snk, 4, &st));
	ok(sv_sink_txn_commit(f->snk));
	assert_listing(staging, "job2-ck00000000000000000001.jsonl");
	assert_listing(f->dir,
		       ".staging part-job1-ck00000000000000000004.jsonl");
	sv_buf_release(&st);
}

static void test_at_least_once(void **state)
{
	fx_t *f = *state;
	const char *name = "part-job1-a000003.jsonl";

	open_ok(f, false, 3);
	assert_false(sv_sink_transactional(f->snk));
	assert_listing(f->dir, ""); /* no staging dir, no file before rows */
	rows(f, 0, 2);
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_flush(f->snk, 100));
	assert_int_equal(f->snk->records_out, 2);
	rows(f, 2, 3);
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_flush(f->snk, 100));
	assert_int_equal(f->snk->records_out, 3);
	sv_sink_close(f->snk);
	f->snk = NULL;
	/* the same attempt again appends */
	open_ok(f, false, 3);
	rows(f, 3, 4);
	ok(sv_sink_write(f->snk, &f->b));
	ok(sv_sink_flush(f->snk, 100));
	char *got = slurp(f->dir, name), *want = want_lines(0, 4);
	assert_string_equal(got, want);
	free(got);
	free(want);
	assert_listing(f->dir, name);
}

static void test_bad_paths(void **state)
{
	fx_t *f = *state;
	sv_sink_t *snk = NULL;
	sv_error_t *err;
	char file[160], under[192];

	err = open_sink(f, "", true, 1, &snk);
	assert_non_null(err);
	assert_null(snk);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	assert_string_equal(err->field, "sink.path");
	sv_error_destroy(err);
	err = open_sink(f, NULL, false, 1, &snk);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	sv_error_destroy(err);

	/* a regular file where a directory must be */
	snprintf(file, sizeof(file), "%s/plain", f->root);
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(under, sizeof(under), "%s/sub", file);
	err = open_sink(f, under, true, 1, &snk);
	assert_non_null(err);
	assert_null(snk);
	assert_int_equal(err->category, SV_ERR_BINDING);
	assert_non_null(strstr(err->message, under));
	assert_int_equal(err->cause_code, ENOTDIR);
	sv_error_destroy(err);
	err = open_sink(f, file, false, 1, &snk);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_BINDING);
	sv_error_destroy(err);

	/* dead letters are refused at open */
	sv_sink_conf_t c = {
		.kind = "file", .path = f->dir, .raw = true, .key_column = -1};
	err = sv_sink_open(&c, &snk);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "dead letters"));
	sv_error_destroy(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_phase_commit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_protocol_misuse, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recover_idempotent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_recover_after_sigkill,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_open_file_removed,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_recover_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_empty_checkpoint, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_at_least_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_paths, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
