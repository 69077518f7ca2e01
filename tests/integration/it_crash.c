/* it_crash.c — exactly-once across kill -9 of the supervisor process, on the
 * real Kafka broker (issue 4, "What must be shown"; docs/testing-exactly-once.md).
 *
 * The supervisor runs as a child process ($STREAMVISOR_BIN serve, fork/exec)
 * with its own --data-dir. A producer thread writes sequence-numbered JSON
 * records {"seq", "k", "ts"} over 4 partitions at a steady rate while the
 * test kills the supervisor with SIGKILL and starts it again with the same
 * data dir, so kills land while data flows. Jobs are submitted once, in the
 * first incarnation; every later incarnation must bring them back by itself.
 * At the end one sentinel per partition (far-future event time, dropped by
 * the jobs' filter) closes every window; once every job has consumed its
 * input to the end and committed, the outputs are read back and compared
 * with an offline computation from the sequence numbers:
 *
 *   - passthrough: every seq exactly once, with its own k and ts;
 *   - window: one row per (k, 5 s tumbling window) with count, sum, min and
 *     max of seq, exactly once.
 *
 * Tests (each prints one SUMMARY line per job and reader):
 *   crash_loop      200,000 records (SV_CRASH_LONG=1: 1,000,000), at least
 *                   12 (long: 30) random SIGKILLs; exactly_once passthrough
 *                   (through a dedup on seq, whose state is restored from
 *                   incremental checkpoints) and window asserted with
 *                   read_committed; negative
 *                   controls reported: the same outputs read_uncommitted and
 *                   an at_least_once passthrough (which must lose nothing).
 *   kill_points     STREAMVISOR_KILL_AT=<point>:<n> for each of the five
 *                   protocol points, three times each with varying n.
 *   file_sink       exactly_once passthrough into a file sink, random kills
 *                   and one cycle per kill point; every visible *.jsonl file
 *                   must be complete whenever we look, and never change.
 *   crash_parallel  parallelism mode (docs/parallelism.md): the jobs of
 *                   crash_loop at parallelism 4 over keyed input
 *                   (source.partitioned_by k); every kill point once
 *                   (long: three times) and >= 5 (long: 12) random kills
 *                   over 50,000 (long: 200,000) records; the at_least_once
 *                   job must show duplicates (negative control).
 *   scale_in        parallelism 4, a kill mid-transaction, restart at 2:
 *                   read_committed output moves within 2 s; exact output.
 *   scale_in_no_abort  its negative control: without the abort of the
 *                   unused transactional ids the output stalls (>= 5 s).
 *   verifier_open_transaction  the reader's end under read_committed: a
 *                   read to the last stable offset of the moment misses an
 *                   open transaction's records; cr_read_topic waits for it.
 *   drain_slow_member  parallelism 4, member 0's checkpoints 3 s slower:
 *                   the old drain criterion ends early (output then short,
 *                   the negative control); the verifier's drain waits for
 *                   every member: exact.
 *
 * crash_loop asserts that a negative control did show a duplicate: without
 * one, no kill is known to have landed mid-transaction and the exact
 * exactly_once output proves nothing. SV_CRASH_NO_KILLS=1 runs crash_loop
 * without its kills (one incarnation throughout), which must fail that
 * assertion: the check that the check can fail.
 *
 * Environment: KAFKA_BOOTSTRAP, STREAMVISOR_BIN (set by ctest), SV_BUILD_DIR
 * (temp dirs; /tmp without it), SV_CRASH_LONG=1, SV_CRASH_NO_KILLS=1,
 * SV_CRASH_SEED=<n>,
 * SV_CRASH_ONLY=<test name pattern>, SV_CRASH_KEEP=1 (keep the temp dir with
 * the supervisor logs and data dir). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "checkpoint/store.h"
#include "core/util.h"
#include "tests/integration/testkit.h"
#include "tests/integration/crashkit.h"

extern char **environ;

/* ---- tests ---- */

/* The verifier sees what it must see (no broker needed): a duplicate, a
 * loss, a wrong value, a stray row; for windows a repeated and a wrong
 * result. The negative controls below show the same on real output. */
static void test_verifier_self_check(void **state)
{
	(void)state;
	int64_t n = 1000;
	lines_t l = {0};
	char buf[160];
	for (int64_t s = 0; s < n; s++) {
		if (s == 17)
			continue; /* missing */
		int len = fmt_record(buf, sizeof(buf), s);
		cr_lines_add(&l, buf, (size_t)len);
		if (s == 42)
			cr_lines_add(&l, buf, (size_t)len); /* duplicate */
	}
	{
		const char *wr = "{\"seq\":5,\"k\":\"k99\",\"ts\":1}";
		cr_lines_add(&l, wr, strlen(wr)); /* wrong + dup */
	}
	{
		const char *st = "{\"seq\":-1,\"k\":\"end\"}";
		cr_lines_add(&l, st, strlen(st)); /* stray */
	}
	tally_t t = cr_verify_pass("self-check", l.v, l.n, n);
	assert_int_equal(t.expected, 1000);
	assert_int_equal(t.missing, 1);
	assert_int_equal(t.dup, 2);
	assert_int_equal(t.wrong, 1);
	assert_int_equal(t.unexpected, 1);
	assert_false(cr_exact(&t));
	cr_lines_free(&l);

	/* windows: build the exact rows, then repeat one and break one */
	size_t nwin = (size_t)((n + JITTER_MS) / WIN_MS + 2);
	lines_t w = {0};
	for (size_t wi = 0; wi < nwin; wi++)
		for (int k = 0; k < N_KEYS; k++) {
			int64_t cnt = 0, tot = 0, lo = 0, hi = 0;
			for (int64_t s = 0; s < n; s++)
				if ((ts_of(s) - BASE_MS) / WIN_MS ==
					    (int64_t)wi &&
				    key_of(s) == k) {
					if (!cnt)
						lo = hi = s;
					cnt++;
					tot += s;
					lo = s < lo ? s : lo;
					hi = s > hi ? s : hi;
				}
			if (!cnt)
				continue;
			int64_t ws = BASE_MS + (int64_t)wi * WIN_MS;
			int len = snprintf(
				buf, sizeof(buf),
				"{\"k\":\"k%02d\","
				"\"window_start\":%" PRId64
				",\"window_end\":%" PRId64 ",\"n\":%" PRId64
				",\"total\":%" PRId64 ",\"lo\":%" PRId64
				",\"hi\":%" PRId64 "}",
				k, ws, ws + WIN_MS, cnt, tot, lo, hi);
			cr_lines_add(&w, buf, (size_t)len);
		}
	tally_t ok = cr_verify_window("self-check", w.v, w.n, n);
	assert_true(cr_exact(&ok));
	cr_lines_add(&w, w.v[0], strlen(w.v[0]));
	free(w.v[1]);
	w.v[1] = sv_strdup("{\"k\":\"k00\",\"window_start\":1,\"n\":1}");
	tally_t bad = cr_verify_window("self-check", w.v, w.n, n);
	assert_int_equal(bad.dup, 1);
	assert_int_equal(bad.missing, 1);
	assert_int_equal(bad.unexpected, 1);
	cr_lines_free(&w);

	/* sessions: the exact rows by another method (records of a key
	 * joined when their windows [t, t + gap) touch, pair by pair), then
	 * repeat one, drop one, break one */
	int64_t ns = 4 * SESSION_PERIOD;
	int64_t *root = sv_calloc((size_t)ns, sizeof(*root));
	for (int64_t a = 0; a < ns; a++)
		root[a] = a;
	for (int64_t a = 0; a < ns; a++)
		for (int64_t b = a + 1; b < ns; b++) {
			if (!cr_session_in(a) || !cr_session_in(b) ||
			    key_of(a) != key_of(b) ||
			    llabs(ts_of(a) - ts_of(b)) > SESSION_GAP_MS)
				continue;
			int64_t ra = a, rb = b;
			while (root[ra] != ra)
				ra = root[ra];
			while (root[rb] != rb)
				rb = root[rb];
			root[rb > ra ? rb : ra] = rb > ra ? ra : rb;
		}
	lines_t sl = {0};
	for (int64_t r = 0; r < ns; r++) {
		int64_t cnt = 0, tot = 0, lo = 0, hi = 0, first = 0, last = 0;
		for (int64_t s = 0; s < ns; s++) {
			int64_t q = s;
			while (root[q] != q)
				q = root[q];
			if (!cr_session_in(s) || q != r)
				continue;
			if (!cnt) {
				lo = hi = s;
				first = last = ts_of(s);
			}
			cnt++;
			tot += s;
			lo = s < lo ? s : lo;
			hi = s > hi ? s : hi;
			first = ts_of(s) < first ? ts_of(s) : first;
			last = ts_of(s) > last ? ts_of(s) : last;
		}
		if (!cnt)
			continue;
		int len = snprintf(buf, sizeof(buf),
				   "{\"k\":\"k%02d\",\"window_start\":%" PRId64
				   ",\"window_end\":%" PRId64 ",\"n\":%" PRId64
				   ",\"total\":%" PRId64 ",\"lo\":%" PRId64
				   ",\"hi\":%" PRId64 "}",
				   key_of(r), first, last + SESSION_GAP_MS, cnt,
				   tot, lo, hi);
		cr_lines_add(&sl, buf, (size_t)len);
	}
	free(root);
	tally_t sok = cr_verify_session("self-check", sl.v, sl.n, ns);
	assert_true(cr_exact(&sok));
	assert_true(sok.expected >= 4 * N_KEYS); /* >= a session per burst */
	cr_lines_add(&sl, sl.v[0], strlen(sl.v[0]));
	free(sl.v[1]);
	sl.v[1] = sv_strdup(sl.v[2]); /* 1 missing, 2 twice */
	char *n3 = strstr(sl.v[3], "\"n\":");
	assert_non_null(n3);
	n3[4] = n3[4] == '9' ? '8' : '9'; /* a wrong count */
	tally_t sbad = cr_verify_session("self-check", sl.v, sl.n, ns);
	assert_int_equal(sbad.dup, 2);
	assert_int_equal(sbad.missing, 1);
	assert_int_equal(sbad.wrong, 1);
	cr_lines_free(&sl);
	printf("[self_check] the verifier counts duplicates, losses, wrong "
	       "values and stray rows (pass, windows, sessions)\n");
}

static int uniform(crash_t *c, int lo, int hi)
{
	return lo + (int)(rnd(&c->rng) % (uint64_t)(hi - lo + 1));
}

/* A random kill delay: one in four 50-700 ms after the start (the
 * supervisor is still opening the store, fencing the old producer,
 * restoring), the others 0.7-4.5 s (mid-stream, between and inside
 * checkpoints). */
static int kill_delay(crash_t *c)
{
	return rnd(&c->rng) % 4 == 0 ? uniform(c, 50, 700)
				     : uniform(c, 700, 4500);
}

/* Random kills until at least `kills` happened and the producer is done
 * (each kill lands while input is still being written), capped at 4x. */
static void random_kills(crash_t *c, int kills)
{
	int cycles = 0;
	if (c->no_kills)
		return; /* finish() waits for the input */
	while ((c->kills_random < kills || !cr_producer_done(c)) &&
	       cycles < 4 * kills) {
		cr_cycle_random(c, kill_delay(c));
		cycles++;
	}
}

/* Two exactly_once jobs (passthrough, window) and an at_least_once
 * passthrough over one input; random SIGKILLs while the input is written. */
static void test_crash_loop(void **state)
{
	bool lng = env_on("SV_CRASH_LONG");
	int64_t n = lng ? 1000000 : 200000;
	int kills = lng ? 30 : 12;
	crash_t *c = cr_new(state, "crash_loop", 1);
	c->no_kills = env_on("SV_CRASH_NO_KILLS");
	cjob_t *pass = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	pass->dedup = true; /* incremental dedup state across the kills */
	cjob_t *win = cr_add_job(c, "eo-window", J_WINDOW, S_KAFKA, true);
	/* incremental session state (merges and fires as tombstones) */
	cjob_t *ses = cr_add_job(c, "eo-session", J_SESSION, S_KAFKA, true);
	cjob_t *alo = cr_add_job(c, "alo-pass", J_PASS, S_KAFKA, false);
	/* delays ~2.5 s on average plus ~0.7 s to restart: the input spans
	 * the kills */
	double rate = (double)n / (kills * 3.2);
	printf("[crash_loop] %" PRId64 " records at %.0f/s, >= %d random "
	       "SIGKILLs%s\n",
	       n, rate, kills, lng ? " (SV_CRASH_LONG)" : "");
	cr_producer_start(&c->prod, c->in_topic, n, rate);
	cr_first_incarnation(c);
	random_kills(c, kills);
	cr_finish(c);

	tally_t tp = cr_check_output(c, pass, true);
	cr_summary(c, pass, "read_committed", &tp, "asserted");
	tally_t tw = cr_check_output(c, win, true);
	cr_summary(c, win, "read_committed", &tw, "asserted");
	tally_t ts = cr_check_output(c, ses, true);
	cr_summary(c, ses, "read_committed", &ts, "asserted");
	tally_t ta = cr_check_output(c, alo, true);
	cr_summary(c, alo, "read_committed", &ta,
		   "negative control: duplicates allowed, missing asserted 0");
	tally_t tpu = cr_check_output(c, pass, false);
	cr_summary(c, pass, "read_uncommitted", &tpu,
		   "negative control: duplicates allowed");
	tally_t twu = cr_check_output(c, win, false);
	cr_summary(c, win, "read_uncommitted", &twu,
		   "negative control: duplicates allowed");
	cr_stop(c);
	cr_print_end(c);

	assert_int_equal(c->n, n);
	if (!cr_exact(&tp) || !cr_exact(&tw) || !cr_exact(&ts))
		cr_fail(c,
			"exactly_once output is not exact after %d kills (see "
			"SUMMARY lines above)",
			c->kills_random);
	if (ta.missing || ta.wrong || ta.unexpected)
		cr_fail(c,
			"at_least_once output lost or changed records (see "
			"SUMMARY lines above)");
	/* The negative controls: a kill mid-transaction leaves the aborted
	 * records visible to read_uncommitted and makes the at_least_once
	 * job replay; if no control shows a duplicate, no kill is known to
	 * have landed there and the exact output above proves nothing. */
	if (!ta.dup && !tpu.dup && !twu.dup)
		cr_fail(c,
			"no negative control showed a duplicate after %d "
			"kills%s: no kill is known to have landed "
			"mid-transaction, so the exact exactly_once output "
			"proves nothing",
			c->kills_random,
			c->no_kills ? " (SV_CRASH_NO_KILLS)" : "");
	assert_true(c->kills_random >= kills);
	c->passed = true;
}

static const char *const points[] = {
	"before_prepare", "after_prepare",        "after_send_offsets",
	"after_commit",   "after_mark_committed",
};
#define N_POINTS (sizeof(points) / sizeof(points[0]))

/* Every kill point, three times each with n = 1, 2 and 3..5, while input
 * flows, then once inside the overlapped PREPARED write; same invariant.
 * The negative control is read_uncommitted. */
static void test_kill_points(void **state)
{
	bool lng = env_on("SV_CRASH_LONG");
	crash_t *c = cr_new(state, "kill_points", 2);
	/* only exactly_once jobs: every kill point reached is one of theirs
	 * (the counter of STREAMVISOR_KILL_AT is per process) */
	cjob_t *pass = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	cjob_t *win = cr_add_job(c, "eo-window", J_WINDOW, S_KAFKA, true);
	/* written until the cycles are done (capped) */
	cr_producer_start(&c->prod, c->in_topic, lng ? 2000000 : 400000,
			  lng ? 8000 : 2500);
	cr_first_incarnation(c);
	int rounds = lng ? 5 : 3;
	for (int r = 0; r < rounds; r++)
		for (size_t p = 0; p < N_POINTS; p++) {
			char ka[64];
			int nth = r < 2 ? r + 1 : uniform(c, 3, 5);
			snprintf(ka, sizeof(ka), "%s:%d", points[p], nth);
			cr_cycle_point(c, ka);
		}
	/* the PREPARED write beside send_offsets (docs/exactly-once.md):
	 * held back 200 ms, then killed before it wrote anything, so the
	 * offsets are in the open transaction and the record does not exist
	 * (a state the serial order never left) */
	setenv("STREAMVISOR_DELAY_AT", "prepared_write:200", 1);
	cr_cycle_point(c, "prepared_write:2");
	unsetenv("STREAMVISOR_DELAY_AT");
	atomic_store(&c->prod.stop, true);
	cr_finish(c);

	tally_t tp = cr_check_output(c, pass, true);
	cr_summary(c, pass, "read_committed", &tp, "asserted");
	tally_t tw = cr_check_output(c, win, true);
	cr_summary(c, win, "read_committed", &tw, "asserted");
	tally_t tpu = cr_check_output(c, pass, false);
	cr_summary(c, pass, "read_uncommitted", &tpu,
		   "negative control: duplicates allowed");
	cr_stop(c);
	cr_print_end(c);
	assert_true(c->kills_point >= (int)(3 * N_POINTS));
	if (!cr_exact(&tp) || !cr_exact(&tw))
		cr_fail(c,
			"exactly_once output is not exact after %d kill-point "
			"kills (see SUMMARY lines above)",
			c->kills_point);
	c->passed = true;
}

/* ---- parallelism (issue 12, docs/parallelism.md) ---- */

typedef struct {
	const char *id;
	char *text;
} found_job_t;

static sv_error_t *find_job_cb(void *opaque, const char *job_id,
			       const char *data, size_t len)
{
	found_job_t *f = opaque;
	if (!strcmp(job_id, f->id))
		f->text = sv_strndup(data, len);
	return NULL;
}

/* The crash loop and every kill point at parallelism 4: an exactly_once
 * passthrough and window and an at_least_once passthrough, each job four
 * worker threads with their own transactions, over keyed input
 * (partitioned_by k). Every kill point (default once each, SV_CRASH_LONG
 * three times), then random kills, all while the input is written. The
 * at_least_once job is the negative control: it must show duplicates. */
static void test_crash_parallel(void **state)
{
	bool lng = env_on("SV_CRASH_LONG");
	int64_t n = lng ? 200000 : 50000;
	int kills = lng ? 12 : 5;
	int rounds = lng ? 3 : 1;
	cr_par = 4;
	crash_t *c = cr_new(state, "crash_parallel", 4);
	cjob_t *pass = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	/* per-task incremental checkpoints: the window's panes and this
	 * dedup's entries are restored from each task's full + deltas */
	pass->dedup = true;
	cjob_t *win = cr_add_job(c, "eo-window", J_WINDOW, S_KAFKA, true);
	cjob_t *ses = cr_add_job(c, "eo-session", J_SESSION, S_KAFKA, true);
	cjob_t *alo = cr_add_job(c, "alo-pass", J_PASS, S_KAFKA, false);
	double rate = (double)n / (kills * 3.2 + rounds * N_POINTS * 1.5);
	printf("[crash_parallel] parallelism %d, %" PRId64
	       " records at %.0f/s, >= %d random SIGKILLs + %d x %zu kill "
	       "points%s\n",
	       cr_par, n, rate, kills, rounds, N_POINTS,
	       lng ? " (SV_CRASH_LONG)" : "");
	cr_producer_start(&c->prod, c->in_topic, n, rate);
	cr_first_incarnation(c);
	/* the kill points first, so they too land while input flows; the
	 * random kills go on until the input is complete */
	for (int r = 0; r < rounds; r++)
		for (size_t p = 0; p < N_POINTS; p++) {
			char ka[64];
			int nth = r < 2 ? r + 1 : uniform(c, 3, 5);
			snprintf(ka, sizeof(ka), "%s:%d", points[p], nth);
			cr_cycle_point(c, ka);
		}
	random_kills(c, kills);
	cr_finish(c);

	tally_t tp = cr_check_output(c, pass, true);
	cr_summary(c, pass, "read_committed", &tp, "asserted");
	tally_t tw = cr_check_output(c, win, true);
	cr_summary(c, win, "read_committed", &tw, "asserted");
	tally_t ts = cr_check_output(c, ses, true);
	cr_summary(c, ses, "read_committed", &ts, "asserted");
	tally_t ta = cr_check_output(c, alo, true);
	cr_summary(c, alo, "read_committed", &ta,
		   "negative control: duplicates asserted > 0, missing 0");
	cr_stop(c);
	cr_print_end(c);
	cr_par = 1;
	assert_int_equal(c->n, n);
	assert_true(c->kills_random >= kills);
	assert_true(c->kills_point >= rounds * (int)N_POINTS);
	if (!cr_exact(&tp) || !cr_exact(&tw) || !cr_exact(&ts))
		cr_fail(c,
			"exactly_once output at parallelism 4 is not exact "
			"after %d kills (see SUMMARY lines above)",
			c->kills_random + c->kills_point);
	if (ta.missing || ta.wrong || ta.unexpected)
		cr_fail(c, "at_least_once output lost or changed records");
	/* the exact session output came through restores of full + deltas */
	int sd = cr_count_log(c, ses, "its state a delta on");
	printf("[crash_parallel] eo-session: %d task restores from deltas\n",
	       sd);
	if (sd < 1)
		cr_fail(c,
			"no session-window task was restored from a delta: "
			"the exact result does not show delta restores");
	if (!ta.dup)
		cr_fail(c,
			"the at_least_once negative control shows no "
			"duplicate: the kills did not land between commits, "
			"so the exactly_once result proves nothing");
	c->passed = true;
}

/* The drain criterion the verifier used before: every partition read to
 * its end in the status, then the job's last_checkpoint two ids further.
 * At parallelism > 1 those ids can be any member's. */
static int64_t old_drain_criterion(crash_t *c, cjob_t *j,
				   const int64_t ends[PARTS], int64_t *t_end)
{
	int64_t ck_at_end = -2, deadline = sv_mono_ms() + 60000;
	for (;;) {
		json_t *s = cr_job_get(c, j);
		if (s) {
			int at = 0;
			size_t i;
			json_t *pe;
			json_array_foreach (json_object_get(s, "partitions"), i,
					    pe) {
				int64_t p = cr_jint(pe, "partition", -1);
				if (p >= 0 && p < PARTS &&
				    cr_jint(pe, "next_offset", -1) == ends[p])
					at++;
			}
			json_decref(s);
			if (at == PARTS && ck_at_end == -2) {
				ck_at_end = j->ck;
				*t_end = sv_mono_ms();
			}
			if (ck_at_end != -2 && j->ck >= ck_at_end + 2)
				return sv_mono_ms() - *t_end;
		}
		if (sv_mono_ms() > deadline)
			cr_fail(c, "the old drain criterion was never met");
		usleep(50000);
	}
}

/* One member slower than the others (its checkpoints wait 3 s between
 * prepare and commit: STREAMVISOR_DELAY_AT=after_prepare_m0:3000), no
 * kills. The old drain criterion (the job's last_checkpoint two ids past
 * the end) is met by the other members' checkpoints while member 0's last
 * transaction is still open: read_committed output read then misses its
 * tail, as crash_parallel did under load (the negative control, asserted).
 * The verifier's criterion (every member two checkpoints of its own, and
 * the group at the end) waits for it: exact. */
static void test_drain_slow_member(void **state)
{
	cr_par = 4;
	crash_t *c = cr_new(state, "drain_slow_member", 7);
	cjob_t *pass = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	c->no_kills = true;
	setenv("STREAMVISOR_DELAY_AT", "after_prepare_m0:3000", 1);
	cr_producer_start(&c->prod, c->in_topic, 6000, 3000);
	cr_first_incarnation(c);
	unsetenv("STREAMVISOR_DELAY_AT"); /* the supervisor has its copy */
	cr_wait_input(c);
	cr_final_incarnation(c);
	int64_t ends[PARTS], t_end = 0;
	cr_put_sentinels(c, ends);
	int64_t after = old_drain_criterion(c, pass, ends, &t_end);
	int64_t lso[4], hw[4];
	bool settled = cr_output_settled(c, pass->out, 4, lso, hw, 0);
	lines_t l = {0};
	cr_read_topic_to(c, pass->out, true, 4, lso, &l);
	tally_t early = cr_verify_pass("eo-pass/old-criterion", l.v, l.n, c->n);
	cr_lines_free(&l);
	printf("[%s %6.1fs] old drain criterion met %" PRId64
	       " ms after the end was read: read_committed then showed "
	       "%zu of %" PRId64 " records (missing %zu), output %s\n",
	       c->test, cr_secs(c), after, early.got, c->n, early.missing,
	       settled ? "settled" : "held by an open transaction");
	cr_wait_drained(c, pass, ends, 120000);
	printf("[%s %6.1fs] drained and committed (every member)\n", c->test,
	       cr_secs(c));
	tally_t tp = cr_check_output(c, pass, true);
	cr_summary(c, pass, "read_committed", &tp, "asserted");
	cr_stop(c);
	cr_print_end(c);
	cr_par = 1;
	if (!early.missing)
		cr_fail(c,
			"negative control: with member 0 slow the old drain "
			"criterion did not end early, so this test cannot "
			"show the verifier's wait matters");
	if (!cr_exact(&tp))
		cr_fail(c,
			"exactly_once output at parallelism 4 with one slow "
			"member is not exact (see SUMMARY above)");
	c->passed = true;
}

/* The reader's end under read_committed: with a transaction open (its
 * records in the log), the last stable offset of the moment is short of
 * what will be committed. Reading to it (what the verifier did) misses
 * those records: the negative control, deterministic. cr_read_topic waits
 * until the LSO equals the high watermark; the open transaction commits
 * meanwhile (a helper thread), and every record is read. */
typedef struct {
	rd_kafka_t *rk;
	rd_kafka_error_t *err;
	int64_t at_ms;
} commit_later_t;

static void *commit_later(void *arg)
{
	commit_later_t *cl = arg;
	while (sv_mono_ms() < cl->at_ms)
		usleep(20000);
	cl->err = rd_kafka_commit_transaction(cl->rk, 30000);
	return NULL;
}

static void txn_produce(crash_t *c, rd_kafka_t *rk, const char *topic, int n,
			int from)
{
	for (int i = 0; i < n; i++) {
		char v[32];
		int len = snprintf(v, sizeof(v), "{\"seq\":%d}", from + i);
		if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
				      RD_KAFKA_V_PARTITION(0),
				      RD_KAFKA_V_VALUE(v, (size_t)len),
				      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				      RD_KAFKA_V_END))
			cr_fail(c, "produce to %s", topic);
	}
	if (rd_kafka_flush(rk, 30000))
		cr_fail(c, "flush to %s", topic);
}

static void test_verifier_open_transaction(void **state)
{
	crash_t *c = cr_new(state, "verifier_txn", 8);
	char *topic = tk_unique("it-crash-txn");
	tk_create_topic(topic, 1);
	char err[512], *tid = tk_unique("it-crash-txn-id");
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_conf_set(conf, "bootstrap.servers", tk_bootstrap(), err,
			  sizeof(err));
	rd_kafka_conf_set(conf, "transactional.id", tid, err, sizeof(err));
	rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err,
				      sizeof(err));
	free(tid);
	if (!rk)
		cr_fail(c, "transactional producer: %s", err);
	rd_kafka_error_t *e = rd_kafka_init_transactions(rk, 30000);
	if (!e)
		e = rd_kafka_begin_transaction(rk);
	if (e)
		cr_fail(c, "init/begin: %s", rd_kafka_error_string(e));
	txn_produce(c, rk, topic, 3, 0);
	if ((e = rd_kafka_commit_transaction(rk, 30000)) ||
	    (e = rd_kafka_begin_transaction(rk)))
		cr_fail(c, "commit/begin: %s", rd_kafka_error_string(e));
	txn_produce(c, rk, topic, 2, 3); /* in the log, not committed */

	int64_t lso[1], hw[1];
	bool settled = cr_output_settled(c, topic, 1, lso, hw, 0);
	lines_t l = {0};
	cr_read_topic_to(c, topic, true, 1, lso, &l);
	size_t early = l.n;
	cr_lines_free(&l);
	printf("[%s] open transaction: LSO %" PRId64 ", HW %" PRId64
	       "; reading to the LSO of the moment: %zu of 5 records\n",
	       c->test, lso[0], hw[0], early);

	commit_later_t cl = {rk, NULL, sv_mono_ms() + 1000};
	pthread_t th;
	if (pthread_create(&th, NULL, commit_later, &cl))
		cr_fail(c, "thread");
	cr_read_topic(c, topic, true, &l); /* waits for the commit */
	pthread_join(th, NULL);
	if (cl.err)
		cr_fail(c, "commit: %s", rd_kafka_error_string(cl.err));
	size_t got = l.n;
	cr_lines_free(&l);
	printf("[%s] cr_read_topic after the commit: %zu of 5 records\n",
	       c->test, got);
	rd_kafka_destroy(rk);
	free(topic);
	assert_false(settled);
	assert_true(lso[0] < hw[0]);
	assert_int_equal(early, 3); /* the negative control */
	assert_int_equal(got, 5);
	c->passed = true;
}

/* Rewrite the stored definition of job j with another parallelism while
 * the supervisor is down: what a restart with a new parallelism does. */
static void set_parallelism(crash_t *c, cjob_t *j, int par)
{
	char *dir;
	if (asprintf(&dir, "%s/checkpoints", c->data_dir) < 0)
		abort();
	sv_ckstore_t *st;
	sv_error_t *err = sv_ckstore_open(dir, &st);
	free(dir);
	if (err)
		cr_fail(c, "open the store: %s", err->message);
	found_job_t f = {j->id, NULL};
	err = sv_ckstore_each_job(st, find_job_cb, &f);
	if (err || !f.text)
		cr_fail(c, "job %s is not in the store", j->id);
	json_error_t jerr;
	json_t *o = json_loads(f.text, 0, &jerr);
	json_object_set_new(json_object_get(o, "spec"), "parallelism",
			    json_integer(par));
	char *text = json_dumps(o, JSON_COMPACT);
	err = sv_ckstore_put_job(st, j->id, text, strlen(text));
	if (err)
		cr_fail(c, "rewrite job %s: %s", j->id, err->message);
	free(text);
	json_decref(o);
	free(f.text);
	sv_ckstore_close(st);
}

/* The output topic's last stable offsets (read_committed end). */
static void output_lso(crash_t *c, const char *topic, int64_t lso[4])
{
	rd_kafka_t *rk = cr_client(c, RD_KAFKA_CONSUMER, NULL, "read_committed",
				   false);
	for (int p = 0; p < 4; p++) {
		int64_t lo, hi;
		if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi,
						     10000))
			hi = -1;
		lso[p] = hi;
	}
	rd_kafka_destroy(rk);
}

/* Kill mid-transaction at parallelism 4, restart at 2; the time until
 * every output partition's read_committed end moved past where it stood
 * (or stall_ms when it did not within that long). The kill is member 3's
 * (its second checkpoint, after it sent its offsets): its transaction is
 * open with records, so the restart at 2 has an unused id to abort. A
 * kill at any member's point (the count over all four) could land while
 * members 2 and 3 had nothing open: the negative control below then saw
 * the output move at once (141 ms, once under load). */
static int64_t scale_in_cycle(crash_t *c, cjob_t *j, int stall_ms)
{
	cr_cycle_point(c, "after_send_offsets_m3:2");
	set_parallelism(c, j, 2);
	int64_t before[4], now[4];
	output_lso(c, j->out, before);
	cr_start(c, NULL);
	int64_t t0 = sv_mono_ms();
	for (;;) {
		output_lso(c, j->out, now);
		bool all = true;
		for (int p = 0; p < 4; p++)
			all = all && now[p] > before[p];
		int64_t dt = sv_mono_ms() - t0;
		if (all)
			return dt;
		if (dt >= stall_ms)
			return stall_ms;
		int st;
		char d[96];
		if (cr_reap(c, 0, &st))
			cr_fail(c,
				"the supervisor exited after the scale-in: %s",
				cr_describe_exit(st, d, sizeof(d)));
		usleep(50000);
	}
}

/* Scale-in 4 -> 2 after a kill in the middle of a transaction: the ids of
 * members 2 and 3 are initialised at start, so read_committed output moves
 * within 2 s of the restart, and the output stays exact. */
static void test_scale_in(void **state)
{
	cr_par = 4;
	crash_t *c = cr_new(state, "scale_in", 5);
	cjob_t *pass = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	/* a bounded transaction timeout: the negative control waits it out */
	pass->sink_extra = "\"transaction_timeout_ms\": 15000";
	cr_producer_start(&c->prod, c->in_topic, 40000, 2500);
	cr_first_incarnation(c);
	int64_t ms = scale_in_cycle(c, pass, 15000);
	printf("[scale_in] read_committed output of every partition moved "
	       "%" PRId64 " ms after the restart at parallelism 2\n",
	       ms);
	/* the line may reach the log file a moment after the output moved
	 * (the supervisor's log is a buffered stream): wait for it */
	bool logged = false;
	for (int64_t until = sv_mono_ms() + 10000;
	     !(logged = cr_log_contains(c, "initialised the unused")) &&
	     sv_mono_ms() < until;)
		usleep(50000);
	/* the scale-in is shown; by default the rest of the input (12 s of
	 * steady running at parallelism 2) is left to the long mode */
	if (!env_on("SV_CRASH_LONG"))
		atomic_store(&c->prod.stop, true);
	cr_finish(c);
	tally_t tp = cr_check_output(c, pass, true);
	cr_summary(c, pass, "read_committed", &tp, "asserted");
	cr_stop(c);
	cr_print_end(c);
	cr_par = 1;
	if (!logged)
		cr_fail(c,
			"the restart at parallelism 2 did not initialise "
			"the unused transactional ids");
	if (ms > 2000)
		cr_fail(c,
			"read_committed output moved only %" PRId64
			" ms after the restart (expected within 2 s)",
			ms);
	if (!cr_exact(&tp))
		cr_fail(c,
			"exactly_once output is not exact after the "
			"scale-in");
	c->passed = true;
}

/* The negative control: without the abort of unused ids
 * (STREAMVISOR_TEST_NO_ABORT_UNUSED=1), the open transactions of members
 * 2 and 3 hold read_committed output until transaction.timeout.ms
 * (15 s here): no movement within 5 s. */
static void test_scale_in_no_abort(void **state)
{
	cr_par = 4;
	crash_t *c = cr_new(state, "scale_in_no_abort", 6);
	cjob_t *pass = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	/* a bounded transaction timeout: the negative control waits it out */
	pass->sink_extra = "\"transaction_timeout_ms\": 15000";
	cr_producer_start(&c->prod, c->in_topic, 40000, 2500);
	cr_first_incarnation(c);
	setenv("STREAMVISOR_TEST_NO_ABORT_UNUSED", "1", 1);
	int64_t ms = scale_in_cycle(c, pass, 5000);
	unsetenv("STREAMVISOR_TEST_NO_ABORT_UNUSED");
	printf("[scale_in_no_abort] read_committed output %s%" PRId64
	       " ms after the restart (negative control: a stall)\n",
	       ms >= 5000 ? "had not moved everywhere " : "moved ", ms);
	cr_stop(c);
	cr_par = 1;
	if (ms < 5000)
		cr_fail(c,
			"without the abort of unused ids the output moved "
			"after %" PRId64
			" ms: the scale-in test cannot fail, it proves "
			"nothing",
			ms);
	c->passed = true;
}

/* exactly_once passthrough into a file sink: random kills, then one cycle
 * per kill point; whenever we look, every visible file is complete, and a
 * visible file never changes or disappears. */
static void test_file_sink(void **state)
{
	bool lng = env_on("SV_CRASH_LONG");
	int64_t n = lng ? 300000 : 60000;
	int kills = lng ? 30 : 10;
	crash_t *c = cr_new(state, "file_sink", 3);
	cjob_t *f = cr_add_job(c, "eo-file-pass", J_PASS, S_FILE, true);
	double rate = (double)n / (kills * 3.2 + N_POINTS * 1.5);
	printf("[file_sink] %" PRId64 " records at %.0f/s, >= %d random "
	       "SIGKILLs + %zu kill points\n",
	       n, rate, kills, N_POINTS);
	cr_producer_start(&c->prod, c->in_topic, n, rate);
	cr_first_incarnation(c);
	while (c->kills_random < kills)
		cr_cycle_random(c, kill_delay(c));
	for (size_t p = 0; p < N_POINTS; p++) {
		char ka[64];
		snprintf(ka, sizeof(ka), "%s:%d", points[p], uniform(c, 1, 3));
		cr_cycle_point(c, ka);
	}
	cr_finish(c);
	tally_t t = cr_check_output(c, f, true);
	size_t changed = cr_changed_files(c);
	t.torn += c->torn_seen;
	cr_summary(c, f, "files", &t, "asserted");
	printf("[file_sink] files seen at kills: %zu, incomplete when seen: "
	       "%zu, changed or gone later: %zu\n",
	       c->nseen, c->torn_seen, changed);
	cr_stop(c);
	cr_print_end(c);
	if (!cr_exact(&t) || changed)
		cr_fail(c,
			"file sink output is not exact after %d kills (torn "
			"files seen %zu, changed %zu; see SUMMARY above)",
			c->kills_random + c->kills_point, c->torn_seen,
			changed);
	c->passed = true;
}

int main(void)
{
	atexit(cr_atexit_kill);
	signal(SIGPIPE, SIG_IGN);
	const char *only = getenv("SV_CRASH_ONLY");
	if (only && *only)
		cmocka_set_test_filter(only);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verifier_self_check),
		cmocka_unit_test_teardown(test_crash_loop, cr_teardown),
		cmocka_unit_test_teardown(test_kill_points, cr_teardown),
		cmocka_unit_test_teardown(test_file_sink, cr_teardown),
		cmocka_unit_test_teardown(test_crash_parallel, cr_teardown),
		cmocka_unit_test_teardown(test_scale_in, cr_teardown),
		cmocka_unit_test_teardown(test_scale_in_no_abort, cr_teardown),
		cmocka_unit_test_teardown(test_verifier_open_transaction,
					  cr_teardown),
		cmocka_unit_test_teardown(test_drain_slow_member, cr_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
