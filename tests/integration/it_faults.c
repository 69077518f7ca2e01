/* it_faults.c — faults of the world on the real Kafka broker (issue 17;
 * docs/reliability.md): graceful shutdown, lingering transactions, a frozen
 * supervisor, a full and a read-only data dir, broker loss (kill -9, clean
 * stop, SIGSTOP) and network cuts through a proxy, many jobs at once.
 *
 * Everything runs on the crash rig of it_crash.c (crashkit.h): the
 * supervisor is the real binary in a child process, the input is
 * sequence-numbered and written by an independent producer while the faults
 * happen, and at the end every output is drained with read_committed and
 * compared with the offline computation (0 duplicates, 0 missing, 0 wrong).
 * Each test has a negative control: a reading or a run in which the same
 * checker must see the fault (duplicates, invisible output), so a checker
 * that cannot fail is caught.
 *
 * The broker tests start their own broker (deploy/kafka/kafka.sh on
 * KAFKA_PORT+10, state in $SV_BUILD_DIR/kafka-faults) advertised at a TCP
 * proxy on KAFKA_PORT+12 (tests/integration/faultproxy.py) so they can kill
 * it, freeze it and cut its connections without disturbing anyone else.
 *
 * Environment: as it_crash (KAFKA_BOOTSTRAP, STREAMVISOR_BIN, SV_BUILD_DIR,
 * SV_CRASH_SEED, SV_CRASH_KEEP); SV_FAULTS_LONG=1 for the long mode (more
 * input, more cycles, the full 10 + 10 broker bounces and 20 faults for the
 * availability figure); SV_FAULTS_ONLY=<cmocka test name pattern>. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "core/util.h"
#include "tests/integration/crashkit.h"
#include "tests/integration/testkit.h"

static bool long_mode(void)
{
	return env_on("SV_FAULTS_LONG");
}

static void sleep_ms(int ms)
{
	usleep((useconds_t)ms * 1000);
}

/* serve --config <root>/sv.yaml: the "default" profile on the current
 * broker with the client properties props (YAML flow mapping, or NULL),
 * then the top-level keys in yaml. */
static void write_config_props(crash_t *c, const char *yaml, const char *props)
{
	free(c->config);
	if (asprintf(&c->config, "%s/sv.yaml", c->root) < 0)
		abort();
	FILE *f = fopen(c->config, "w");
	if (!f ||
	    fprintf(f,
		    "clusters:\n  default:\n    bootstrap_servers: %s\n"
		    "%s%s%s%s",
		    tk_bootstrap(), props ? "    properties: " : "",
		    props ? props : "", props ? "\n" : "", yaml) < 0 ||
	    fclose(f))
		cr_fail(c, "cannot write %s", c->config);
}

static void write_config(crash_t *c, const char *yaml)
{
	write_config_props(c, yaml, NULL);
}

/* Send sig and wait for the exit; its wait status, or fail. */
static int signal_exit(crash_t *c, int sig, int timeout_ms)
{
	pid_t pid = c->pid;
	kill(pid, sig);
	int st = 0;
	if (!cr_reap(c, timeout_ms, &st))
		cr_fail(c, "supervisor pid %d did not exit within %d ms of %s",
			(int)pid, timeout_ms, strsignal(sig));
	return st;
}

/* Every job has committed a checkpoint newer than ck[i] (ck NULL: any). */
static void wait_new_checkpoints(crash_t *c, const int64_t *ck, int timeout_ms,
				 const char *what)
{
	int64_t deadline = sv_mono_ms() + timeout_ms;
	for (int i = 0; i < c->njobs; i++) {
		cjob_t *j = &c->jobs[i];
		int64_t want = ck ? ck[i] : -1;
		for (;;) {
			if (!c->port)
				c->port = cr_log_port(c);
			json_decref(cr_job_get(c, j));
			if (j->ck > want && cr_is_live_state(j->state))
				break;
			int st;
			char d[96];
			if (cr_reap(c, 0, &st))
				cr_fail(c, "%s: the supervisor exited: %s",
					what,
					cr_describe_exit(st, d, sizeof(d)));
			if (sv_mono_ms() > deadline)
				cr_fail(c,
					"%s: job %s (%s) committed no "
					"checkpoint after %" PRId64
					" within %d ms",
					what, j->label, j->state, want,
					timeout_ms);
			sleep_ms(100);
		}
	}
}

/* The number in the last line of text about job id holding `phrase`
 * followed by a number ("final checkpoint 12 committed"), or -1. */
static int64_t log_number(const char *text, const char *job_id,
			  const char *phrase)
{
	int64_t v = -1;
	char needle[80];
	snprintf(needle, sizeof(needle), "job=%s ", job_id);
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		char *line = sv_strndup(l, n);
		const char *p = strstr(line, phrase);
		if (strstr(line, needle) && p)
			v = strtoll(p + strlen(phrase), NULL, 10);
		free(line);
		l = nl ? nl + 1 : NULL;
	}
	return v;
}

static int count_lines(const char *text, const char *phrase)
{
	int n = 0;
	for (const char *p = text; p && (p = strstr(p, phrase)); p++)
		n++;
	return n;
}

/* The end without a last kill (cr_finish starts a fresh incarnation,
 * which SIGKILLs the running one): the input complete, every job drained
 * and committed by the supervisor that lived through the faults, so the
 * negative controls owe their duplicates to the faults alone. */
static void finish_live(crash_t *c)
{
	cr_wait_input(c);
	if (c->pid > 0)
		cr_wait_back(c, 60000);
	else
		cr_final_incarnation(c);
	cr_drain_all(c);
}

/* ---- 1. graceful shutdown ---- */

/* Start, let every job come back and run delay_ms with input flowing, send
 * sig; the supervisor must exit 0 within the shutdown deadline. Returns
 * the log of the incarnation (caller frees). */
static char *cycle_signal(crash_t *c, int sig, int delay_ms, int exit_ms)
{
	cr_start(c, NULL);
	cr_wait_back(c, 60000);
	int64_t at = sv_mono_ms() + delay_ms;
	while (sv_mono_ms() < at) {
		cr_poll_jobs(c);
		sleep_ms(100);
	}
	int64_t t0 = sv_mono_ms();
	char path[600];
	snprintf(path, sizeof(path), "%s", c->log_path);
	int st = signal_exit(c, sig, exit_ms);
	char d[96];
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		cr_fail(c,
			"after %s the supervisor ended with %s, expected "
			"exit status 0",
			strsignal(sig), cr_describe_exit(st, d, sizeof(d)));
	c->kills_random++;
	printf("[%s %6.1fs] %s %d: exit 0 after %" PRId64 " ms\n", c->test,
	       cr_secs(c), sig == SIGINT ? "SIGINT" : "SIGTERM",
	       c->kills_random, sv_mono_ms() - t0);
	fflush(stdout);
	return cr_slurp(path, NULL);
}

/* Every job's final checkpoint in the previous log is what the next start
 * restored, and no recovery had to fall back. */
static void check_resumed_there(crash_t *c, const char *prev, const char *now)
{
	for (int i = 0; i < c->njobs; i++) {
		cjob_t *j = &c->jobs[i];
		int64_t fin = log_number(prev, j->id, "final checkpoint ");
		int64_t got = log_number(now, j->id, "restored checkpoint ");
		if (fin < 0)
			cr_fail(c,
				"job %s: no 'final checkpoint N committed' in "
				"the log of the stopped incarnation",
				j->label);
		if (got != fin)
			cr_fail(c,
				"job %s: the final checkpoint was %" PRId64
				" but the next start restored %" PRId64,
				j->label, fin, got);
	}
}

static void graceful_jobs(crash_t *c)
{
	cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	cr_add_job(c, "eo-window", J_WINDOW, S_KAFKA, true);
	cr_add_job(c, "alo-pass", J_PASS, S_KAFKA, false);
}

/* Submit in a first incarnation and wait for a first checkpoint. */
static void first_run(crash_t *c)
{
	cr_start(c, NULL);
	cr_wait_port(c, 30000);
	cr_submit_jobs(c);
	wait_new_checkpoints(c, NULL, 60000, "first checkpoint");
}

/* SIGTERM and SIGINT, several times while input flows: exit 0 each time,
 * each job's final checkpoint is where the next start resumes, and every
 * output — the at_least_once one too, since nothing is replayed — is
 * exact. */
static void test_sigterm_restart(void **state)
{
	bool lng = long_mode();
	int cycles = lng ? 10 : 3;
	crash_t *c = cr_new(state, "sigterm", 11);
	write_config(c, "shutdown_timeout_ms: 30000\n");
	graceful_jobs(c);
	cr_producer_start(&c->prod, c->in_topic, 1000000, 2000);
	first_run(c);
	char *prev = NULL;
	{
		char path[600];
		snprintf(path, sizeof(path), "%s", c->log_path);
		int st = signal_exit(c, SIGTERM, 45000);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			cr_fail(c, "first SIGTERM: not exit 0");
		prev = cr_slurp(path, NULL);
	}
	for (int k = 0; k < cycles; k++) {
		char *log = cycle_signal(c, k % 2 ? SIGINT : SIGTERM,
					 1000 + (int)(rnd(&c->rng) % 3000),
					 45000);
		check_resumed_there(c, prev, log);
		int fin = count_lines(log, "final checkpoint ");
		if (fin < c->njobs)
			cr_fail(c,
				"only %d of %d jobs logged a final checkpoint",
				fin, c->njobs);
		free(prev);
		prev = log;
	}
	atomic_store(&c->prod.stop, true);
	cr_finish(c);
	char *now = cr_slurp(c->log_path, NULL);
	check_resumed_there(c, prev, now);
	free(now);
	free(prev);
	bool ok = true;
	for (int i = 0; i < c->njobs; i++) {
		tally_t t = cr_check_output(c, &c->jobs[i], true);
		cr_summary(c, &c->jobs[i], "read_committed", &t,
			   "asserted, at_least_once included");
		ok = ok && cr_exact(&t);
	}
	cr_stop(c);
	cr_print_end(c);
	if (!ok)
		cr_fail(c, "output not exact across %d graceful restarts",
			c->kills_random);
	c->passed = true;
}

/* Negative control of the test above: with shutdown_timeout_ms 0 there is
 * no final checkpoint, so the at_least_once job replays what it wrote
 * after its last checkpoint — the checker must count duplicates there —
 * while exactly_once stays exact (its open transaction is aborted). */
static void test_sigterm_no_final_checkpoint(void **state)
{
	crash_t *c = cr_new(state, "sigterm0", 12);
	write_config(c, "shutdown_timeout_ms: 0\n");
	cjob_t *eo = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	cjob_t *alo = cr_add_job(c, "alo-pass", J_PASS, S_KAFKA, false);
	cr_producer_start(&c->prod, c->in_topic, 1000000, 3000);
	first_run(c);
	signal_exit(c, SIGTERM, 30000);
	for (int k = 0; k < 3; k++)
		free(cycle_signal(c, SIGTERM, 1500 + (int)(rnd(&c->rng) % 1500),
				  30000));
	atomic_store(&c->prod.stop, true);
	cr_finish(c);
	tally_t te = cr_check_output(c, eo, true);
	cr_summary(c, eo, "read_committed", &te, "asserted");
	tally_t ta = cr_check_output(c, alo, true);
	cr_summary(c, alo, "read_committed", &ta,
		   "negative control: duplicates asserted > 0");
	cr_stop(c);
	cr_print_end(c);
	if (!cr_exact(&te))
		cr_fail(c,
			"exactly_once output not exact without final "
			"checkpoints");
	if (ta.missing || ta.wrong || ta.unexpected)
		cr_fail(c, "at_least_once lost records");
	if (!ta.dup)
		cr_fail(c,
			"negative control: at_least_once without final "
			"checkpoints showed no duplicate: the checker "
			"would not see a replay");
	c->passed = true;
}

/* ---- 2. lingering transactions ---- */

#define MARKER "{\"marker\":1}"

/* Markers visible to a read_committed reader of topic within timeout_ms
 * (stops as soon as want are seen). */
static int markers_visible(crash_t *c, const char *topic, int want,
			   int timeout_ms)
{
	char *group = tk_unique("it-faults-marker");
	rd_kafka_t *rk = cr_client(c, RD_KAFKA_CONSUMER, group,
				   "read_committed", false);
	free(group);
	rd_kafka_poll_set_consumer(rk);
	rd_kafka_topic_partition_list_t *parts =
		rd_kafka_topic_partition_list_new(PARTS);
	for (int p = 0; p < PARTS; p++)
		rd_kafka_topic_partition_list_add(parts, topic, p)->offset =
			RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_assign(rk, parts);
	rd_kafka_topic_partition_list_destroy(parts);
	int seen = 0;
	int64_t deadline = sv_mono_ms() + timeout_ms;
	while (seen < want && sv_mono_ms() < deadline) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
		if (!m)
			continue;
		if (!m->err && m->len == strlen(MARKER) &&
		    !memcmp(m->payload, MARKER, m->len))
			seen++;
		rd_kafka_message_destroy(m);
	}
	rd_kafka_destroy(rk);
	return seen;
}

/* One marker per output partition, written by a plain producer. */
static void write_markers(crash_t *c, const char *topic)
{
	rd_kafka_t *rk = cr_client(c, RD_KAFKA_PRODUCER, NULL, NULL, false);
	for (int p = 0; p < PARTS; p++)
		if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
				      RD_KAFKA_V_PARTITION(p),
				      RD_KAFKA_V_VALUE(MARKER, strlen(MARKER)),
				      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				      RD_KAFKA_V_END))
			cr_fail(c, "produce marker");
	if (rd_kafka_flush(rk, 30000))
		cr_fail(c, "markers not delivered");
	rd_kafka_destroy(rk);
}

/* Verify a passthrough output without the markers. */
static tally_t check_without_markers(crash_t *c, cjob_t *j, bool rc)
{
	lines_t l = {0}, keep = {0};
	cr_read_topic(c, j->out, rc, &l);
	for (size_t i = 0; i < l.n; i++)
		if (strcmp(l.v[i], MARKER))
			cr_lines_add(&keep, l.v[i], strlen(l.v[i]));
	char label[64];
	snprintf(label, sizeof(label), "%s/%s", j->label,
		 rc ? "read_committed" : "read_uncommitted");
	tally_t t = cr_verify_pass(label, keep.v, keep.n, c->n);
	cr_lines_free(&l);
	cr_lines_free(&keep);
	return t;
}

/* kill -9 with a transaction open (transaction.timeout.ms 60 s); markers
 * written behind it stay invisible to read_committed while nobody settles
 * it (the negative control: 10 s, no marker behind the open transaction
 * shows), and become visible within 10 s of the restart, whose producer
 * fences the old one and aborts its transaction first. */
static void test_lingering_transactions(void **state)
{
	int rounds = long_mode() ? 5 : 1;
	crash_t *c = cr_new(state, "lingering", 13);
	cjob_t *j = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	j->sink_extra = "\"transaction_timeout_ms\": 60000";
	cr_producer_start(&c->prod, c->in_topic, 1000000, 3000);
	first_run(c);
	double worst = 0;
	for (int r = 0; r < rounds; r++) {
		/* records flow into the open transaction: kill mid-way */
		int64_t in0 = j->in;
		while (j->in < in0 + 300)
			cr_poll_jobs(c), sleep_ms(50);
		sleep_ms(200);
		cr_sigkill(c);
		c->kills_random++;
		write_markers(c, j->out);
		/* the markers of earlier rounds are visible already */
		int want = PARTS * (r + 1);
		int seen = markers_visible(c, j->out, want, 10000) - PARTS * r;
		printf("[%s %6.1fs] kill %d: markers visible without a "
		       "restart after 10 s: %d of %d (negative control)\n",
		       c->test, cr_secs(c), r + 1, seen, PARTS);
		if (seen >= PARTS)
			cr_fail(c,
				"negative control: every marker was visible "
				"with the transaction lingering: the kill "
				"did not leave an open transaction, or the "
				"check cannot fail");
		int64_t t0 = sv_mono_ms();
		cr_start(c, NULL);
		seen = markers_visible(c, j->out, want, 10000) - PARTS * r;
		double s = (double)(sv_mono_ms() - t0) / 1000.0;
		worst = s > worst ? s : worst;
		printf("[%s %6.1fs] restart %d: %d of %d markers visible "
		       "%.1f s after the start\n",
		       c->test, cr_secs(c), r + 1, seen, PARTS, s);
		if (seen < PARTS)
			cr_fail(c,
				"after the restart only %d of %d markers "
				"were visible to read_committed within 10 "
				"s (transaction.timeout.ms 60 s)",
				seen, PARTS);
		cr_wait_back(c, 60000);
		/* with only markers, the output topic would be exact up
		 * to the remove; delete them from the count below */
	}
	atomic_store(&c->prod.stop, true);
	finish_live(c);
	tally_t t = check_without_markers(c, j, true);
	cr_summary(c, j, "read_committed", &t, "asserted");
	tally_t tu = check_without_markers(c, j, false);
	cr_summary(c, j, "read_uncommitted", &tu,
		   "negative control: duplicates asserted > 0");
	printf("[%s] FIGURE lingering: markers visible at most %.1f s after "
	       "the restart (transaction.timeout.ms 60 s, %d kills)\n",
	       c->test, worst, rounds);
	cr_stop(c);
	cr_print_end(c);
	if (!cr_exact(&t))
		cr_fail(c, "output not exact");
	if (!tu.dup)
		cr_fail(c,
			"negative control: read_uncommitted saw no "
			"duplicate: no aborted transaction held output");
	c->passed = true;
}

/* ---- 5. frozen supervisor ---- */

/* Whether a transaction holds records of topic back from read_committed
 * readers: some partition's last stable offset (rc's end) behind its high
 * watermark (ru's end). */
static bool txn_open_on(rd_kafka_t *rc, rd_kafka_t *ru, const char *topic)
{
	for (int p = 0; p < PARTS; p++) {
		int64_t lo, lso, hw;
		if (!rd_kafka_query_watermark_offsets(rc, topic, p, &lo, &lso,
						      5000) &&
		    !rd_kafka_query_watermark_offsets(ru, topic, p, &lo, &hw,
						      5000) &&
		    lso < hw)
			return true;
	}
	return false;
}

/* Keep the supervisor stopped until the coordinator has aborted the open
 * transaction of j (expired after transaction_timeout_ms, aborted at the
 * broker's next sweep, every 10 s): seen open, then gone. At most
 * FROZEN_MAX_MS, as long as the freeze always lasted before; returns how
 * long it lasted. */
#define FROZEN_MIN_MS 5000 /* the jobs' transaction_timeout_ms */
#define FROZEN_MAX_MS 18000 /* 5 s + a 10 s sweep + margin */
static int64_t freeze_until_aborted(crash_t *c, cjob_t *j)
{
	rd_kafka_t *rc = cr_client(c, RD_KAFKA_CONSUMER, NULL, "read_committed",
				   false);
	rd_kafka_t *ru = cr_client(c, RD_KAFKA_CONSUMER, NULL,
				   "read_uncommitted", false);
	int64_t t0 = sv_mono_ms(), el = 0;
	kill(c->pid, SIGSTOP);
	bool seen_open = false;
	while ((el = sv_mono_ms() - t0) < FROZEN_MAX_MS) {
		bool open = txn_open_on(rc, ru, j->out);
		seen_open = seen_open || open;
		if (seen_open && !open && el >= FROZEN_MIN_MS)
			break;
		sleep_ms(200);
	}
	kill(c->pid, SIGCONT);
	rd_kafka_destroy(rc);
	rd_kafka_destroy(ru);
	return el;
}

/* SIGSTOP past transaction.timeout.ms (5 s; the broker aborts expired
 * transactions every 10 s) until the broker aborted the open transaction
 * (its records no longer hold the last stable offset back; 18 s at most),
 * then SIGCONT: the coordinator has aborted the
 * open transaction and bumped the epoch, the producer finds itself fenced,
 * the job restarts (restarting, not failed) from its last checkpoint. */
static void test_frozen_supervisor(void **state)
{
	int rounds = long_mode() ? 4 : 1;
	crash_t *c = cr_new(state, "frozen", 15);
	cjob_t *j = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	j->sink_extra = "\"transaction_timeout_ms\": 5000";
	cjob_t *w = cr_add_job(c, "eo-window", J_WINDOW, S_KAFKA, true);
	w->sink_extra = "\"transaction_timeout_ms\": 5000";
	cr_producer_start(&c->prod, c->in_topic, 1000000, 2000);
	first_run(c);
	for (int r = 0; r < rounds; r++) {
		int64_t in0 = j->in, restarts0 = j->restarts;
		while (j->in < in0 + 300)
			cr_poll_jobs(c), sleep_ms(50);
		printf("[%s %6.1fs] SIGSTOP %d\n", c->test, cr_secs(c), r + 1);
		fflush(stdout);
		int64_t frozen = freeze_until_aborted(c, j);
		printf("[%s %6.1fs] frozen %.1f s: the open transaction %s\n",
		       c->test, cr_secs(c), (double)frozen / 1000.0,
		       frozen < FROZEN_MAX_MS ? "was aborted by the broker"
					      : "ran out the longest freeze");
		int64_t t0 = sv_mono_ms();
		bool restarted = false;
		char reason[300] = "";
		while (sv_mono_ms() - t0 < 60000) {
			json_t *s = cr_job_get(c, j);
			json_t *e = json_object_get(s, "error");
			if (j->restarts > restarts0 && !reason[0] && e)
				snprintf(reason, sizeof(reason), "%s: %s",
					 json_string_value(
						 json_object_get(e, "category"))
						 ?: "?",
					 json_string_value(
						 json_object_get(e, "message"))
						 ?: "?");
			json_decref(s);
			restarted = j->restarts > restarts0;
			if (restarted && cr_is_live_state(j->state))
				break;
			sleep_ms(100);
		}
		printf("[%s %6.1fs] SIGCONT %d: restarted=%d (%s) after "
		       "%.1f s; reason: %s\n",
		       c->test, cr_secs(c), r + 1, restarted, j->state,
		       (double)(sv_mono_ms() - t0) / 1000.0, reason);
		if (!restarted)
			cr_fail(c,
				"the job did not notice its expired "
				"transaction within 60 s of SIGCONT");
		c->kills_random++;
		int64_t ck[2] = {j->ck, w->ck};
		wait_new_checkpoints(c, ck, 60000, "after SIGCONT");
	}
	atomic_store(&c->prod.stop, true);
	finish_live(c);
	tally_t tp = cr_check_output(c, j, true);
	cr_summary(c, j, "read_committed", &tp, "asserted");
	tally_t tw = cr_check_output(c, w, true);
	cr_summary(c, w, "read_committed", &tw, "asserted");
	tally_t tu = cr_check_output(c, j, false);
	cr_summary(c, j, "read_uncommitted", &tu,
		   "negative control: duplicates asserted > 0");
	cr_stop(c);
	cr_print_end(c);
	if (!cr_exact(&tp) || !cr_exact(&tw))
		cr_fail(c, "output not exact after a frozen supervisor");
	if (!tu.dup)
		cr_fail(c,
			"negative control: read_uncommitted saw no "
			"duplicate: the frozen transaction held no output");
	c->passed = true;
}

/* ---- 6. disk faults ---- */

static char mounted[600]; /* the tmpfs under the data dir, for teardown */

static int disk_teardown(void **state)
{
	if (mounted[0]) {
		umount2(mounted, MNT_DETACH);
		mounted[0] = '\0';
	}
	return cr_teardown(state);
}

/* Fill the file system holding dir up to `leave` free bytes: returns the
 * filler's path. */
static char *fill_disk(crash_t *c, const char *dir, off_t leave)
{
	char *path;
	if (asprintf(&path, "%s/filler", dir) < 0)
		abort();
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		cr_fail(c, "open %s: %s", path, strerror(errno));
	static char buf[1 << 16];
	memset(buf, 'x', sizeof(buf));
	for (size_t chunk = sizeof(buf); chunk >= 512; chunk /= 2)
		while (write(fd, buf, chunk) == (ssize_t)chunk)
			;
	struct stat sb;
	if (fstat(fd, &sb) ||
	    ftruncate(fd, sb.st_size > leave ? sb.st_size - leave : 0))
		cr_fail(c, "truncate %s: %s", path, strerror(errno));
	close(fd);
	return path;
}

/* The job's error (category: message) from its status, or "". */
static void job_error(crash_t *c, cjob_t *j, char *out, size_t len)
{
	char path[200];
	snprintf(path, sizeof(path), "/v1/jobs/%s", j->id);
	json_t *s = cr_http_json(c, "GET", path, NULL, NULL, NULL);
	json_t *e = json_object_get(s, "error");
	snprintf(out, len, "%s%s%s",
		 json_string_value(json_object_get(e, "category")) ?: "",
		 e ? ": " : "",
		 json_string_value(json_object_get(e, "message")) ?: "");
	json_decref(s);
}

/* The data dir on a small tmpfs of its own (mounted here: the test runs as
 * root). Full (4 MiB left, under the store's 16 MiB reserve): every
 * checkpoint write fails with ENOSPC; no checkpoint may
 * commit, the jobs go restarting (never failed) with a checkpoint error
 * naming the cause, and once space returns they resume by themselves.
 * Read-only (remounted ro under a stopped supervisor, since a file system
 * with files open for writing cannot be remounted): the supervisor refuses
 * to start, naming the store and the cause; writable again, it resumes
 * exactly. Output exact throughout; negative control: read_uncommitted
 * sees the aborted transactions' records twice. */
static void test_disk_faults(void **state)
{
	int rounds = long_mode() ? 3 : 1;
	crash_t *c = cr_new(state, "disk", 16);
	if (mount("tmpfs", c->data_dir, "tmpfs", 0, "size=48m,mode=0755"))
		cr_fail(c,
			"cannot mount a tmpfs on %s: %s (this test needs "
			"root, or CAP_SYS_ADMIN, for a real full and "
			"read-only file system)",
			c->data_dir, strerror(errno));
	snprintf(mounted, sizeof(mounted), "%s", c->data_dir);
	cjob_t *p = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	cjob_t *w = cr_add_job(c, "eo-window", J_WINDOW, S_KAFKA, true);
	cr_producer_start(&c->prod, c->in_topic, 2000000, 2000);
	first_run(c);
	for (int r = 0; r < rounds; r++) {
		int64_t restarts0 = p->restarts + w->restarts;
		/* 4 MiB left: below the store's 16 MiB reserve, so every
		 * checkpoint write is refused with ENOSPC, while a write in
		 * flight when the disk fills still has room (a WAL that runs
		 * out mid-write makes Debian's RocksDB abort: see
		 * checkpoint/store.c) */
		char *filler = fill_disk(c, c->data_dir, 4 << 20);
		int64_t t_full = sv_mono_ms();
		int64_t ck_full[2] = {p->ck, w->ck};
		char err[600] = "";
		/* both jobs restarting with the cause, none failed */
		while (sv_mono_ms() - t_full < 30000) {
			cr_poll_jobs(c);
			if (p->restarts + w->restarts >= restarts0 + 2) {
				job_error(c, p, err, sizeof(err));
				if (strstr(err, "space"))
					break;
			}
			sleep_ms(200);
		}
		printf("[%s %6.1fs] disk full: restarts %" PRId64 " -> %" PRId64
		       ", error: %s\n",
		       c->test, cr_secs(c), restarts0,
		       p->restarts + w->restarts, err);
		if (strncmp(err, "checkpoint: ", 12) || !strstr(err, "space"))
			cr_fail(c,
				"with the data dir full, expected the jobs "
				"restarting with a checkpoint error naming "
				"the cause (no space), got '%s'",
				err);
		/* stay full a while: backoff, still nothing acknowledged */
		int64_t until = sv_mono_ms() + 5000;
		int64_t ck_seen[2] = {-1, -1};
		while (sv_mono_ms() < until) {
			cr_poll_jobs(c);
			sleep_ms(200);
		}
		ck_seen[0] = p->ck;
		ck_seen[1] = w->ck;
		if (ck_seen[0] > ck_full[0] + 1 || ck_seen[1] > ck_full[1] + 1)
			cr_fail(c,
				"checkpoints were acknowledged with the disk "
				"full (%" PRId64 " -> %" PRId64 ")",
				ck_full[0], ck_seen[0]);
		unlink(filler);
		free(filler);
		int64_t t0 = sv_mono_ms();
		int64_t ck[2] = {p->ck, w->ck};
		wait_new_checkpoints(c, ck, 60000, "after space returned");
		printf("[%s %6.1fs] space back: new checkpoints after %.1f s\n",
		       c->test, cr_secs(c),
		       (double)(sv_mono_ms() - t0) / 1000.0);
		c->kills_random++;
	}
	/* read-only */
	if (!WIFEXITED(signal_exit(c, SIGTERM, 60000)))
		cr_fail(c, "SIGTERM before the read-only remount");
	if (mount(NULL, c->data_dir, NULL, MS_REMOUNT | MS_RDONLY, NULL))
		cr_fail(c, "remount read-only: %s", strerror(errno));
	cr_start(c, NULL);
	int st = 0;
	if (!cr_reap(c, 30000, &st))
		cr_fail(c,
			"with a read-only data dir the supervisor did not "
			"exit within 30 s");
	char *log = cr_slurp(c->log_path, NULL);
	bool named = log && strstr(log, "checkpoint") &&
		strstr(log, "Read-only");
	printf("[%s %6.1fs] read-only data dir: supervisor exit %d, %s\n",
	       c->test, cr_secs(c), WIFEXITED(st) ? WEXITSTATUS(st) : -1,
	       named ? "the store and the cause named" : "cause not named");
	free(log);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 1 || !named)
		cr_fail(c,
			"a read-only data dir must stop the start with "
			"exit status 1 and an error naming the store "
			"and 'Read-only file system'");
	if (mount(NULL, c->data_dir, NULL, MS_REMOUNT, NULL))
		cr_fail(c, "remount read-write: %s", strerror(errno));
	c->kills_random++;
	atomic_store(&c->prod.stop, true);
	finish_live(c);
	tally_t tp = cr_check_output(c, p, true);
	cr_summary(c, p, "read_committed", &tp, "asserted");
	tally_t tw = cr_check_output(c, w, true);
	cr_summary(c, w, "read_committed", &tw, "asserted");
	tally_t tu = cr_check_output(c, p, false);
	cr_summary(c, p, "read_uncommitted", &tu,
		   "negative control: duplicates asserted > 0");
	cr_stop(c);
	cr_print_end(c);
	if (!cr_exact(&tp) || !cr_exact(&tw))
		cr_fail(c, "output not exact after disk faults");
	if (!tu.dup)
		cr_fail(c,
			"negative control: read_uncommitted saw no "
			"duplicate: no transaction was aborted");
	c->passed = true;
}

/* ---- the test's own broker, behind the fault proxy ---- */

typedef struct ownbroker {
	bool up;
	int port, proxy_port;
	char bootstrap[64];
	char env[2048]; /* KAFKA_* for kafka.sh */
	char state_dir[600], log[700];
	pid_t proxy;
	FILE *to, *from; /* the proxy's stdin and stdout */
} ownbroker_t;

static ownbroker_t B;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "it_faults: %s\n", msg);
	fail_msg("%s", msg);
}

static const char *build_dir(void)
{
	const char *b = getenv("SV_BUILD_DIR");
	return b && *b ? b : "/tmp";
}

/* deploy/kafka/kafka.sh cmd for our broker; its exit status. */
static int kafka_sh(const char *cmd)
{
	const char *src = getenv("SV_SOURCE_DIR");
	char *line;
	if (asprintf(&line, "%s %s/deploy/kafka/kafka.sh %s >>%s 2>&1", B.env,
		     src && *src ? src : ".", cmd, B.log) < 0)
		abort();
	int st = system(line);
	free(line);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static pid_t broker_pid(void)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/kafka.pid", B.state_dir);
	char *s = cr_slurp(path, NULL);
	pid_t pid = s ? (pid_t)atoi(s) : 0;
	free(s);
	return pid > 0 && kill(pid, 0) == 0 ? pid : 0;
}

static void broker_start(void)
{
	if (kafka_sh("start"))
		die("own broker on port %d did not start (see %s)", B.port,
		    B.log);
}

/* One command to the proxy; waits for its "ok". */
static void proxy_cmd(const char *cmd)
{
	if (!B.to || fprintf(B.to, "%s\n", cmd) < 0 || fflush(B.to))
		die("the fault proxy is gone");
	char line[256];
	if (!fgets(line, sizeof(line), B.from) || strncmp(line, "ok", 2))
		die("the fault proxy answered '%s' to '%s'", line, cmd);
}

static void proxy_start(void)
{
	const char *src = getenv("SV_SOURCE_DIR");
	char script[600], py[700], lp[16], tp[16];
	snprintf(script, sizeof(script), "%s/tests/integration/faultproxy.py",
		 src && *src ? src : ".");
	snprintf(py, sizeof(py), "%s/../venv/bin/python", build_dir());
	if (access(py, X_OK))
		snprintf(py, sizeof(py), "python3");
	snprintf(lp, sizeof(lp), "%d", B.proxy_port);
	snprintf(tp, sizeof(tp), "%d", B.port);
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	char *argv[] = {py, script, lp, tp, NULL};
	pid_t pid = cr_spawn(py, argv, NULL, in[0], out[1], -1, false);
	if (pid < 0)
		die("fork: %s", strerror(errno));
	close(in[0]);
	close(out[1]);
	B.proxy = pid;
	B.to = fdopen(in[1], "w");
	B.from = fdopen(out[0], "r");
	char line[256];
	if (!fgets(line, sizeof(line), B.from) || strncmp(line, "ok", 2))
		die("the fault proxy (%s %s) did not start", py, script);
}

static void own_broker_up(void)
{
	if (B.up)
		return;
	const char *kp = getenv("KAFKA_PORT");
	int base = kp && *kp ? atoi(kp) : 19092;
	B.port = base + 10;
	B.proxy_port = base + 12;
	snprintf(B.bootstrap, sizeof(B.bootstrap), "127.0.0.1:%d",
		 B.proxy_port);
	snprintf(B.state_dir, sizeof(B.state_dir), "%s/kafka-faults",
		 build_dir());
	mkdir(B.state_dir, 0755);
	snprintf(B.log, sizeof(B.log), "%s/kafka-sh.log", B.state_dir);
	char libdir[700];
	snprintf(libdir, sizeof(libdir), "%s/kafka/libs", build_dir());
	snprintf(B.env, sizeof(B.env),
		 "KAFKA_PORT=%d KAFKA_CONTROLLER_PORT=%d "
		 "KAFKA_ADVERTISED_PORT=%d KAFKA_STATE_DIR=%s",
		 B.port, B.port + 1, B.proxy_port, B.state_dir);
	if (!access(libdir, R_OK)) {
		size_t n = strlen(B.env);
		snprintf(B.env + n, sizeof(B.env) - n, " KAFKA_LIBDIR=%s",
			 libdir);
	}
	proxy_start();
	int64_t t0 = sv_mono_ms();
	broker_start();
	B.up = true;
	printf("[own broker] 127.0.0.1:%d behind the fault proxy at %s, up "
	       "in %.1f s\n",
	       B.port, B.bootstrap, (double)(sv_mono_ms() - t0) / 1000.0);
	fflush(stdout);
}

static int own_setup(void **state)
{
	(void)state;
	own_broker_up();
	tk_use_bootstrap(B.bootstrap);
	return 0;
}

static int own_teardown(void **state)
{
	cr_teardown(state);
	if (B.up) {
		proxy_cmd("pass");
		pid_t pid = broker_pid();
		if (pid)
			kill(pid, SIGCONT);
		else
			broker_start();
	}
	tk_use_bootstrap(NULL);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (!B.up)
		return 0;
	kafka_sh("stop");
	if (B.to) {
		fprintf(B.to, "quit\n");
		fclose(B.to);
	}
	if (B.from)
		fclose(B.from);
	if (B.proxy > 0) {
		kill(B.proxy, SIGKILL);
		waitpid(B.proxy, NULL, 0);
	}
	B.up = false;
	return 0;
}

static void atexit_broker(void)
{
	if (B.up)
		kafka_sh("stop");
}

/* ---- faults and recovery ---- */

typedef enum {
	F_BROKER_KILL, /* kill -9 the broker, start it again */
	F_BROKER_STOP, /* kafka.sh stop (SIGTERM, clean), start again */
	F_BROKER_FREEZE, /* SIGSTOP past the clients' request timeouts */
	F_NET_CUT, /* reset every connection, refuse new ones */
	F_NET_BLACKHOLE, /* forward nothing, close nothing */
	F_NET_LATENCY, /* 300 ms per chunk */
	F_SV_KILL, /* kill -9 the supervisor, start it again */
	F_SV_TERM, /* SIGTERM the supervisor, start it again */
	F__COUNT
} fault_t;

static const char *const fault_names[F__COUNT] = {
	"broker kill -9",     "broker clean restart", "broker SIGSTOP",
	"network cut",        "network blackhole",    "network latency 300ms",
	"supervisor kill -9", "supervisor SIGTERM",
};

/* > socket.timeout.ms and request.timeout.ms (10 s here): every request in
 * flight times out */
#define FREEZE_MS 15000
/* > the 60 s a transactional call is retried for (KSNK_TXN_RETRY_DEADLINE_MS):
 * the checkpoint in flight cannot complete, its outcome is unknown and the
 * attempt must restart (long mode only) */
#define FREEZE_LONG_MS 75000
static int freeze_ms = FREEZE_MS;
#define DOWN_MS 2000

typedef struct stats {
	double rec[256]; /* seconds from the end of a fault to healthy */
	int n;
	int count[F__COUNT];
	int restarting_seen; /* faults after which a job went restarting */
	char reasons[4][300]; /* some of the restart reasons seen */
	int nreasons;
} stats_t;

/* The client timeouts the fault durations are chosen against. */
static const char *const client_props =
	"{socket.timeout.ms: 10000, request.timeout.ms: 10000}";

static void apply_fault(crash_t *c, fault_t f)
{
	pid_t pid;
	switch (f) {
	case F_BROKER_KILL:
		pid = broker_pid();
		if (!pid)
			cr_fail(c, "own broker not running");
		kill(pid, SIGKILL);
		while (kill(pid, 0) == 0)
			sleep_ms(20);
		sleep_ms(DOWN_MS);
		broker_start();
		break;
	case F_BROKER_STOP:
		if (kafka_sh("stop"))
			cr_fail(c, "kafka.sh stop failed");
		sleep_ms(DOWN_MS);
		broker_start();
		break;
	case F_BROKER_FREEZE:
		pid = broker_pid();
		kill(pid, SIGSTOP);
		sleep_ms(freeze_ms);
		kill(pid, SIGCONT);
		break;
	case F_NET_CUT:
		proxy_cmd("cut");
		sleep_ms(DOWN_MS);
		proxy_cmd("restore");
		break;
	case F_NET_BLACKHOLE:
		proxy_cmd("blackhole");
		sleep_ms(freeze_ms);
		proxy_cmd("restore");
		break;
	case F_NET_LATENCY:
		proxy_cmd("latency 300");
		sleep_ms(5000);
		proxy_cmd("restore");
		break;
	case F_SV_KILL:
		cr_sigkill(c);
		cr_start(c, NULL);
		break;
	case F_SV_TERM:
		if (!WIFEXITED(signal_exit(c, SIGTERM, 90000)))
			cr_fail(c, "SIGTERM: the supervisor did not exit");
		cr_start(c, NULL);
		break;
	default:
		break;
	}
}

/* healthy: every job running or lagging and a checkpoint committed after
 * the fault ended */
static bool healthy(crash_t *c, const int64_t *ck0)
{
	if (!c->port)
		c->port = cr_log_port(c);
	bool ok = c->port > 0;
	for (int i = 0; i < c->njobs; i++) {
		cjob_t *j = &c->jobs[i];
		json_t *s = cr_job_get(c, j); /* fails the test on 'failed' */
		if (!s)
			ok = false;
		json_decref(s);
		ok = ok && cr_is_live_state(j->state) && j->ck > ck0[i];
	}
	return ok;
}

/* One fault; returns seconds from its end to the 5th healthy poll in a
 * row (polls 200 ms apart); fails past 60 s. Watches the jobs during the
 * fault too, to see 'restarting' and its reason. */
static double fault_and_recover(crash_t *c, fault_t f, stats_t *st)
{
	int64_t restarts0[128];
	for (int i = 0; i < c->njobs; i++)
		restarts0[i] = c->jobs[i].restarts;
	int64_t t_start = sv_mono_ms();
	apply_fault(c, f);
	int64_t t_end = sv_mono_ms();
	int64_t ck0[128];
	for (int i = 0; i < c->njobs; i++)
		ck0[i] = c->jobs[i].ck;
	int streak = 0;
	bool went_restarting = false;
	while (streak < 5) {
		if (healthy(c, ck0))
			streak++;
		else
			streak = 0;
		for (int i = 0; i < c->njobs; i++) {
			cjob_t *j = &c->jobs[i];
			if (j->restarts > restarts0[i] ||
			    !strcmp(j->state, "restarting"))
				went_restarting = true;
		}
		if (went_restarting && st->nreasons < 4 && c->port) {
			for (int i = 0; i < c->njobs && st->nreasons < 4; i++) {
				char path[200];
				snprintf(path, sizeof(path), "/v1/jobs/%s",
					 c->jobs[i].id);
				json_t *s = cr_http_json(c, "GET", path, NULL,
							 NULL, NULL);
				json_t *e = json_object_get(s, "error");
				const char *m = json_string_value(
					json_object_get(e, "message"));
				if (m && c->jobs[i].restarts > restarts0[i]) {
					snprintf(st->reasons[st->nreasons++],
						 sizeof(st->reasons[0]),
						 "%s: %s: %.200s",
						 fault_names[f],
						 json_string_value(
							 json_object_get(
								 e, "category"))
							 ?: "?",
						 m);
					restarts0[i] = c->jobs[i].restarts;
				}
				json_decref(s);
			}
		}
		if (sv_mono_ms() - t_end > 60000)
			cr_fail(c,
				"%s: the jobs were not back to running with a "
				"new checkpoint within 60 s of the fault's end",
				fault_names[f]);
		sleep_ms(200);
	}
	/* the fifth healthy poll: recovery is measured to the first one */
	double secs = (double)(sv_mono_ms() - t_end - 4 * 200) / 1000.0;
	if (secs < 0)
		secs = 0;
	st->rec[st->n++ % 256] = secs;
	st->count[f]++;
	st->restarting_seen += went_restarting;
	c->kills_random++;
	printf("[%s %6.1fs] fault %d: %s for %.1f s; %s; healthy again after "
	       "%.1f s\n",
	       c->test, cr_secs(c), st->n, fault_names[f],
	       (double)(t_end - t_start) / 1000.0,
	       went_restarting ? "a job went restarting" : "no restart", secs);
	fflush(stdout);
	return secs;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void print_stats(crash_t *c, const stats_t *st)
{
	double v[256];
	int n = st->n < 256 ? st->n : 256;
	memcpy(v, st->rec, (size_t)n * sizeof(double));
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	printf("[%s] FIGURE faults=%d", c->test, st->n);
	for (int f = 0; f < F__COUNT; f++)
		if (st->count[f])
			printf(" \"%s\"=%d", fault_names[f], st->count[f]);
	if (n)
		printf(" recovery_s p50=%.1f p99=%.1f max=%.1f", v[n / 2],
		       v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1],
		       v[n - 1]);
	printf(" restarting_after=%d\n", st->restarting_seen);
	for (int i = 0; i < st->nreasons; i++)
		printf("[%s] restart reason: %s\n", c->test, st->reasons[i]);
	fflush(stdout);
}

/* The common end: drain, read back, assert exactly_once, and require the
 * negative control (read_uncommitted or at_least_once duplicates) to see
 * duplicates. When no job restarted during the faults (the clients rode
 * them out: no transaction was aborted, nothing is there to catch), one
 * supervisor kill -9 while input flows is added first, so the checker is
 * shown to fail on this very output; the line says which. */
static void verify_all(crash_t *c, stats_t *st)
{
	if (!st->restarting_seen) {
		/* counters start again at 0 in a supervisor just started
		 * (network: after the SIGTERM): read them from this one */
		cr_wait_back(c, 60000);
		int64_t in0 = c->jobs[0].in;
		while (c->jobs[0].in < in0 + 300)
			cr_poll_jobs(c), sleep_ms(50);
		cr_sigkill(c);
		cr_start(c, NULL);
		printf("[%s %6.1fs] no job restarted during the faults: the "
		       "negative control is one supervisor kill -9 now\n",
		       c->test, cr_secs(c));
	}
	atomic_store(&c->prod.stop, true);
	finish_live(c);
	bool ok = true;
	size_t neg_dups = 0;
	for (int i = 0; i < c->njobs; i++) {
		cjob_t *j = &c->jobs[i];
		tally_t t = cr_check_output(c, j, true);
		if (j->exactly_once) {
			cr_summary(c, j, "read_committed", &t, "asserted");
			ok = ok && cr_exact(&t);
			if (j->kind == J_PASS) {
				tally_t u = cr_check_output(c, j, false);
				cr_summary(c, j, "read_uncommitted", &u,
					   "negative control");
				neg_dups += u.dup;
			}
		} else {
			cr_summary(c, j, "read_committed", &t,
				   "negative control: missing asserted 0");
			neg_dups += t.dup;
			ok = ok && !t.missing && !t.wrong && !t.unexpected;
		}
	}
	cr_stop(c);
	cr_print_end(c);
	print_stats(c, st);
	if (!ok)
		cr_fail(c, "output not exact after %d faults", st->n);
	if (!neg_dups)
		cr_fail(c,
			"negative control: neither read_uncommitted nor "
			"at_least_once saw a duplicate: the faults left "
			"nothing for the checker to catch");
}

static void own_jobs(crash_t *c)
{
	cr_add_job(c, "eo-window", J_WINDOW, S_KAFKA, true);
	cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	cr_add_job(c, "alo-pass", J_PASS, S_KAFKA, false);
	write_config_props(c, "shutdown_timeout_ms: 5000\n", client_props);
	cr_producer_start(&c->prod, c->in_topic, 2000000, 1500);
	first_run(c);
}

/* ---- 3. broker faults: the bounce loop ---- */

/* Kafka's transactions_test.py bounces the brokers hard and clean under a
 * transactional copier; here an exactly_once window job (and a passthrough,
 * and an at_least_once control) runs while the broker is killed -9,
 * stopped and started, and frozen past the request timeouts. Default:
 * 1 + 1 + 1; SV_FAULTS_LONG=1: 10 + 10 + 3. */
static void test_broker_bounces(void **state)
{
	bool lng = long_mode();
	int hard = lng ? 10 : 1, clean = lng ? 10 : 1, freeze = lng ? 3 : 1;
	crash_t *c = cr_new(state, "broker", 21);
	own_jobs(c);
	stats_t st = {0};
	for (int k = 0; k < hard + clean + freeze; k++) {
		fault_t f = k < hard + clean
			? (k % 2 ? F_BROKER_STOP : F_BROKER_KILL)
			: F_BROKER_FREEZE;
		/* the long mode's last freeze outlasts the retry deadline */
		freeze_ms = lng && k == hard + clean + freeze - 1
			? FREEZE_LONG_MS
			: FREEZE_MS;
		fault_and_recover(c, f, &st);
		freeze_ms = FREEZE_MS;
	}
	verify_all(c, &st);
	c->passed = true;
}

/* ---- 4. network cuts ---- */

static void test_network_cuts(void **state)
{
	int rounds = long_mode() ? 3 : 1;
	crash_t *c = cr_new(state, "network", 22);
	own_jobs(c);
	stats_t st = {0};
	for (int r = 0; r < rounds; r++) {
		fault_and_recover(c, F_NET_CUT, &st);
		freeze_ms = rounds > 1 && r == rounds - 1 ? FREEZE_LONG_MS
							  : FREEZE_MS;
		fault_and_recover(c, F_NET_BLACKHOLE, &st);
		freeze_ms = FREEZE_MS;
		fault_and_recover(c, F_NET_LATENCY, &st);
	}
	/* graceful shutdown that cannot commit: SIGTERM with the broker
	 * unreachable; the final checkpoints fail or time out (5 s), what is
	 * open is aborted, the process still exits 0 in bounded time, and the
	 * next start resumes from the last committed checkpoints */
	proxy_cmd("blackhole");
	int64_t t0 = sv_mono_ms();
	int est = signal_exit(c, SIGTERM, 60000);
	double took = (double)(sv_mono_ms() - t0) / 1000.0;
	char *log = cr_slurp(c->log_path, NULL);
	bool reported = log && strstr(log, "[shutdown]") &&
		strstr(log, "shutdown complete");
	bool left = log && strstr(log, "exiting with attempts still running");
	free(log);
	proxy_cmd("restore");
	char d[96];
	printf("[%s %6.1fs] SIGTERM with the broker blackholed: %s after "
	       "%.1f s (shutdown_timeout_ms 5000)%s\n",
	       c->test, cr_secs(c), cr_describe_exit(est, d, sizeof(d)), took,
	       left ? ", attempts left behind" : "");
	if (!WIFEXITED(est) || WEXITSTATUS(est) || (!reported && !left))
		cr_fail(c,
			"SIGTERM with the broker unreachable: %s, expected "
			"exit 0 after the shutdown report",
			d);
	cr_start(c, NULL);
	verify_all(c, &st);
	c->passed = true;
}

/* ---- availability (flink-jepsen style) ---- */

/* 20 mixed faults one after the other (one of each kind first, then
 * random kinds); the figure is the time from the end of the last fault to
 * 5 consecutive healthy status polls, and the recovery after each. Long
 * mode only (about 5 minutes): by default the broker and network tests
 * report the same recovery figure per fault. */
static void test_availability(void **state)
{
	if (!long_mode()) {
		printf("[availability] SV_FAULTS_LONG=1 only (20 faults, about "
		       "5 minutes): skipped\n");
		skip();
	}
	int n = 20;
	crash_t *c = cr_new(state, "availability", 23);
	own_jobs(c);
	stats_t st = {0};
	double last = 0;
	for (int k = 0; k < n; k++) {
		fault_t f = k < F__COUNT ? (fault_t)k
					 : (fault_t)(rnd(&c->rng) % F__COUNT);
		last = fault_and_recover(c, f, &st);
	}
	printf("[%s] FIGURE availability: %d mixed faults; from the end of "
	       "the last one to 5 consecutive healthy status polls: %.1f s\n",
	       c->test, n, last);
	verify_all(c, &st);
	c->passed = true;
}

/* ---- 7. many jobs ---- */

typedef struct pollers {
	crash_t *c;
	pthread_t th[64];
	int n;
	atomic_bool stop;
	pthread_mutex_t lock;
	double *lat[2]; /* ms: status, metrics */
	size_t nlat[2], cap[2];
	atomic_long errors;
} pollers_t;

static void add_lat(pollers_t *p, int which, double ms)
{
	pthread_mutex_lock(&p->lock);
	if (p->nlat[which] == p->cap[which]) {
		p->cap[which] = p->cap[which] ? 2 * p->cap[which] : 4096;
		p->lat[which] = sv_realloc(p->lat[which],
					   p->cap[which] * sizeof(double));
	}
	p->lat[which][p->nlat[which]++] = ms;
	pthread_mutex_unlock(&p->lock);
}

/* One client: status of a random job and the metrics, in turn, as fast
 * as the answers come (no cmocka here: a thread). */
static void *poller_main(void *arg)
{
	pollers_t *p = arg;
	crash_t *c = p->c;
	uint64_t rng = (uint64_t)(uintptr_t)pthread_self() | 1;
	for (int k = 0; !atomic_load(&p->stop); k++) {
		char path[200];
		int which = k % 2;
		if (which)
			snprintf(path, sizeof(path), "/metrics");
		else
			snprintf(path, sizeof(path), "/v1/jobs/%s",
				 c->jobs[rnd(&rng) % (uint64_t)c->njobs].id);
		int64_t t0 = sv_mono_ns();
		char *body = NULL;
		int st = cr_http_do(c->port, "GET", path, NULL, &body, 30000);
		double ms = (double)(sv_mono_ns() - t0) / 1e6;
		free(body);
		if (st != 200)
			atomic_fetch_add(&p->errors, 1);
		else
			add_lat(p, which, ms);
	}
	return NULL;
}

static double pct(double *v, size_t n, double q)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(double), cmp_double);
	size_t i = (size_t)(q * (double)(n - 1));
	return v[i];
}

static void proc_status(pid_t pid, const char *key, char *out, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	char *s = cr_slurp(path, NULL);
	const char *p = s ? strstr(s, key) : NULL;
	snprintf(out, len, "?");
	if (p) {
		p += strlen(key);
		while (*p == ' ' || *p == '\t')
			p++;
		size_t n = strcspn(p, "\n");
		snprintf(out, len, "%.*s", (int)n, p);
	}
	free(s);
}

/* One supervisor, 100 jobs (a third exactly_once passthrough, a third
 * exactly_once windows, a third at_least_once passthrough) over one input
 * while 50 clients poll status and metrics; every output exact, HTTP
 * latency and the supervisor's RSS reported. That is the long mode (about
 * 2.5 minutes, mostly creating and reading 100 topics); by default 21 jobs
 * and 15 clients (30 and 20 until 2026-12-01: about 20 s of `make test`'s
 * budget, spent draining and reading one job after another). Negative control: one job's
 * output read with the wrong expectation (one record fewer) must show as
 * not exact. */
static void test_many_jobs(void **state)
{
	bool lng = long_mode();
	int njobs = lng ? 100 : 21, nclients = lng ? 50 : 15;
	int64_t n = lng ? 20000 : 3000;
	crash_t *c = cr_new(state, "many", 17);
	static const char *const labels[] = {"eo-pass", "eo-window",
					     "alo-pass"};
	for (int i = 0; i < njobs; i++) {
		char *label;
		if (asprintf(&label, "%s-%03d", labels[i % 3], i) < 0)
			abort();
		cr_add_job(c, label, i % 3 == 1 ? J_WINDOW : J_PASS, S_KAFKA,
			   i % 3 != 2);
		/* the label lives as long as the test (cjob_t borrows it) */
	}
	int64_t t0 = sv_mono_ms();
	cr_producer_start(&c->prod, c->in_topic, n, 500);
	cr_start(c, NULL);
	cr_wait_port(c, 30000);
	cr_submit_jobs(c);
	printf("[%s %6.1fs] %d jobs submitted\n", c->test, cr_secs(c), njobs);
	pollers_t P = {.c = c, .n = nclients};
	pthread_mutex_init(&P.lock, NULL);
	for (int i = 0; i < P.n; i++)
		if (pthread_create(&P.th[i], NULL, poller_main, &P))
			cr_fail(c, "cannot start poller %d", i);
	wait_new_checkpoints(c, NULL, 120000, "first checkpoints");
	printf("[%s %6.1fs] every job running with a checkpoint\n", c->test,
	       cr_secs(c));
	char rss[64], hwm[64], threads[32];
	finish_live(c);
	proc_status(c->pid, "VmRSS:", rss, sizeof(rss));
	proc_status(c->pid, "VmHWM:", hwm, sizeof(hwm));
	proc_status(c->pid, "Threads:", threads, sizeof(threads));
	atomic_store(&P.stop, true);
	for (int i = 0; i < P.n; i++)
		pthread_join(P.th[i], NULL);
	double st50 = pct(P.lat[0], P.nlat[0], 0.5),
	       st99 = pct(P.lat[0], P.nlat[0], 0.99),
	       stmax = pct(P.lat[0], P.nlat[0], 1.0);
	double me50 = pct(P.lat[1], P.nlat[1], 0.5),
	       me99 = pct(P.lat[1], P.nlat[1], 0.99),
	       memax = pct(P.lat[1], P.nlat[1], 1.0);
	bool ok = true;
	int exact_jobs = 0;
	for (int i = 0; i < c->njobs; i++) {
		cjob_t *j = &c->jobs[i];
		tally_t t = cr_check_output(c, j, true);
		if (!cr_exact(&t) || i < 3)
			cr_summary(c, j, "read_committed", &t, "asserted");
		ok = ok && cr_exact(&t);
		exact_jobs += cr_exact(&t);
	}
	/* negative control: the same output checked against one record
	 * less than was written must not pass */
	lines_t l = {0};
	cr_read_topic(c, c->jobs[0].out, true, &l);
	tally_t neg = cr_verify_pass("negative-control", l.v, l.n, c->n - 1);
	cr_lines_free(&l);
	printf("[%s] negative control: %s checked for %" PRId64
	       " records: exact=%d unexpected=%zu\n",
	       c->test, c->jobs[0].label, c->n - 1, cr_exact(&neg),
	       neg.unexpected);
	printf("[%s] FIGURE many_jobs: %d jobs (%d exactly_once), %d "
	       "clients, %" PRId64 " records each, %d of %d outputs exact; "
	       "HTTP status p50=%.1f p99=%.1f max=%.1f ms (%zu requests), "
	       "metrics p50=%.1f p99=%.1f max=%.1f ms (%zu), errors=%ld; "
	       "supervisor RSS %s (peak %s), threads %s; %.1f s\n",
	       c->test, njobs, njobs - njobs / 3, nclients, c->n, exact_jobs,
	       njobs, st50, st99, stmax, P.nlat[0], me50, me99, memax,
	       P.nlat[1], atomic_load(&P.errors), rss, hwm, threads,
	       (double)(sv_mono_ms() - t0) / 1000.0);
	fflush(stdout);
	free(P.lat[0]);
	free(P.lat[1]);
	pthread_mutex_destroy(&P.lock);
	cr_stop(c);
	if (!ok)
		cr_fail(c, "%d of %d outputs not exact", njobs - exact_jobs,
			njobs);
	if (cr_exact(&neg))
		cr_fail(c, "negative control: a wrong expectation passed");
	for (int i = 0; i < c->njobs; i++)
		free((char *)c->jobs[i].label);
	c->passed = true;
}

int main(void)
{
	atexit(cr_atexit_kill);
	atexit(atexit_broker);
	signal(SIGPIPE, SIG_IGN);
	const char *only = getenv("SV_FAULTS_ONLY");
	if (only && *only)
		cmocka_set_test_filter(only);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_sigterm_restart, cr_teardown),
		cmocka_unit_test_teardown(test_sigterm_no_final_checkpoint,
					  cr_teardown),
		cmocka_unit_test_teardown(test_lingering_transactions,
					  cr_teardown),
		cmocka_unit_test_teardown(test_frozen_supervisor, cr_teardown),
		cmocka_unit_test_teardown(test_disk_faults, disk_teardown),
		cmocka_unit_test_teardown(test_many_jobs, cr_teardown),
		cmocka_unit_test_setup_teardown(test_broker_bounces, own_setup,
						own_teardown),
		cmocka_unit_test_setup_teardown(test_network_cuts, own_setup,
						own_teardown),
		cmocka_unit_test_setup_teardown(test_availability, own_setup,
						own_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
