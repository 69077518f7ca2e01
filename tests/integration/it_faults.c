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

/* serve --config <root>/sv.yaml holding yaml. */
static void write_config(crash_t *c, const char *yaml)
{
	free(c->config);
	if (asprintf(&c->config, "%s/sv.yaml", c->root) < 0)
		abort();
	FILE *f = fopen(c->config, "w");
	if (!f || fputs(yaml, f) < 0 || fclose(f))
		cr_fail(c, "cannot write %s", c->config);
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

/* Poll every job until it is running or lagging, at most timeout_ms. */
__attribute__((unused)) static void wait_all_live(crash_t *c, int timeout_ms,
						  const char *what)
{
	int64_t deadline = sv_mono_ms() + timeout_ms;
	for (int i = 0; i < c->njobs; i++) {
		cjob_t *j = &c->jobs[i];
		for (;;) {
			json_decref(cr_job_get(c, j));
			if (cr_is_live_state(j->state))
				break;
			if (sv_mono_ms() > deadline)
				cr_fail(c, "%s: job %s is '%s' after %d ms",
					what, j->label, j->state, timeout_ms);
			sleep_ms(100);
		}
	}
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
	char err[512];
	char *group = tk_unique("it-faults-marker");
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_conf_set(conf, "bootstrap.servers", tk_bootstrap(), err,
			  sizeof(err));
	rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
	rd_kafka_conf_set(conf, "enable.auto.commit", "false", err,
			  sizeof(err));
	rd_kafka_conf_set(conf, "isolation.level", "read_committed", err,
			  sizeof(err));
	rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
	free(group);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err,
				      sizeof(err));
	if (!rk)
		cr_fail(c, "consumer: %s", err);
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
	char err[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_conf_set(conf, "bootstrap.servers", tk_bootstrap(), err,
			  sizeof(err));
	rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err,
				      sizeof(err));
	if (!rk)
		cr_fail(c, "producer: %s", err);
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
	int rounds = long_mode() ? 5 : 2;
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
		int seen = markers_visible(c, j->out, PARTS, 10000);
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
		seen = markers_visible(c, j->out, PARTS, 10000);
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
	cr_finish(c);
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

/* SIGSTOP past transaction.timeout.ms (5 s; the broker aborts expired
 * transactions every 10 s), then SIGCONT: the coordinator has aborted the
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
		kill(c->pid, SIGSTOP);
		printf("[%s %6.1fs] SIGSTOP %d\n", c->test, cr_secs(c), r + 1);
		fflush(stdout);
		sleep_ms(18000); /* the fault lasts this long, by design */
		kill(c->pid, SIGCONT);
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
	cr_finish(c);
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

int main(void)
{
	atexit(cr_atexit_kill);
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
