/* crashkit.h — the crash rig shared by the process-level exactly-once
 * tests (it_crash.c, it_faults.c; docs/testing-exactly-once.md,
 * docs/reliability.md): the supervisor as a child process with its own data
 * dir and log per incarnation, a sequence-numbered input producer, the jobs
 * (passthrough and 5 s tumbling window, Kafka or file sink), the final drain
 * (sentinels, group offsets at the end) and the verifier (read_committed or
 * read_uncommitted drain of the output against the offline computation:
 * duplicates, missing, wrong, unexpected). Every helper fails the test
 * loudly; nothing here calls cmocka from a thread other than the test's. */
#ifndef SV_CRASHKIT_H
#define SV_CRASHKIT_H

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/types.h>

#include <librdkafka/rdkafka.h>

#include "core/partition.h"

/* ---- the input: a pure function of the sequence number ---- */

#define PARTS 4
#define N_KEYS 16
#define BASE_MS 1700000000000LL /* a multiple of WIN_MS */
#define JITTER_MS 400 /* per-partition disorder < OOO_MS */
#define OOO_MS 2000
#define WIN_MS 5000
#define CK_MS 500
#define SENTINEL_TS (BASE_MS + 10000000000LL)
#define DEFAULT_SEED 20240604u
#define HTTP_TIMEOUT_MS 5000

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static inline int key_of(int64_t seq)
{
	return (int)(mix64((uint64_t)seq) % N_KEYS);
}
/* Parallel mode (it_crash's *_parallel tests): jobs run at parallelism
 * cr_par, and the input is keyed: each record carries k as its message key
 * and sits in the partition Kafka's default partitioner gives k, so
 * source.partitioned_by ["k"] holds. Otherwise record seq goes to
 * partition seq % PARTS without a key. */
extern int cr_par;
/* Repartition mode (it_repartition.c, docs/repartition.md): with cr_par >
 * 1, the input is not keyed (record seq in partition seq % PARTS) and the
 * spec declares no partitioned_by, so the window on k runs after a
 * repartition through the job's internal topic. */
extern bool cr_repart;

static inline int key_part(int k)
{
	char key[8];
	snprintf(key, sizeof(key), "k%02d", k);
	return sv_partition_of(key, strlen(key), PARTS);
}

static inline int part_of(int64_t seq)
{
	return cr_par > 1 && !cr_repart ? key_part(key_of(seq))
					: (int)(seq % PARTS);
}
/* One millisecond of event time per record plus jitter: within a partition
 * (every 4th record) event time moves forward 4 ms per record with less
 * disorder than the watermark allows, so no record is ever late. */
static inline int64_t ts_of(int64_t seq)
{
	return BASE_MS + seq +
		(int64_t)(mix64((uint64_t)seq ^ 0x5bd1e995ULL) % JITTER_MS);
}

/* J_SESSION: the job keeps the first half of every SESSION_PERIOD
 * records, so each key sees bursts ~SESSION_PERIOD / 2 ms apart, far more
 * than SESSION_GAP_MS (and JITTER_MS); within a burst a key's records are
 * ~N_KEYS ms apart, so a session is mostly one key's burst (the verifier
 * computes them exactly either way). */
#define SESSION_PERIOD 2000
#define SESSION_ON 1000
#define SESSION_GAP_MS 300
#define CR_STR_(x) #x
#define CR_STR(x) CR_STR_(x)
/* the job's filter and window, from the same numbers */
#define SESSION_FILTER "seq % " CR_STR(SESSION_PERIOD) " < " CR_STR(SESSION_ON)
#define SESSION_GAP_JSON CR_STR(SESSION_GAP_MS)
static inline bool cr_session_in(int64_t seq)
{
	return seq % SESSION_PERIOD < SESSION_ON;
}

static inline int fmt_record(char *buf, size_t len, int64_t seq)
{
	return snprintf(buf, len,
			"{\"seq\":%" PRId64 ",\"k\":\"k%02d\",\"ts\":%" PRId64
			"}",
			seq, key_of(seq), ts_of(seq));
}

static inline int64_t part_count(int64_t n, int p)
{
	if (cr_par > 1 && !cr_repart) {
		int64_t c = 0;
		for (int64_t seq = 0; seq < n; seq++)
			c += part_of(seq) == p;
		return c;
	}
	return n > p ? (n - p + PARTS - 1) / PARTS : 0;
}

static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline bool env_on(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0");
}

/* ---- the input producer (a thread; never calls cmocka) ---- */

typedef struct producer {
	pthread_t th;
	bool started;
	char *topic;
	int64_t target; /* records to write (a cap when until_stopped) */
	double rate; /* records per second */
	atomic_llong produced;
	atomic_bool stop, done;
	atomic_int failures;
	char err[640];
} producer_t;

typedef enum {
	J_PASS,
	J_WINDOW,
	J_SESSION /* session windows over bursts of input (cr_session_in) */
} jkind_t;
typedef enum {
	S_KAFKA,
	S_FILE
} skind_t;

typedef struct cjob {
	const char *label;
	jkind_t kind;
	skind_t sink;
	bool exactly_once;
	char *out; /* topic, or directory of the file sink */
	char *id;
	/* from the last status seen */
	int64_t in, out_n, ck, lag, late, restarts;
	char state[24];
	bool answered; /* status seen in the current incarnation */
	const char *sink_extra; /* more members of the sink object, or NULL */
	const char *restart; /* the restart policy object, or NULL */
	/* J_PASS: a dedup on seq before the sink (every record passes once;
	 * its state is restored from incremental checkpoints after a kill) */
	bool dedup;
} cjob_t;

typedef struct seenfile {
	char *path;
	int64_t size;
} seenfile_t;

typedef struct crash {
	const char *test;
	char *root, *data_dir, *log_dir;
	char *in_topic;
	cjob_t jobs[128];
	int njobs;
	producer_t prod;
	int64_t n; /* records written (known once the producer ends) */
	pid_t pid;
	int port;
	int incarnation;
	char log_path[600];
	uint64_t rng;
	unsigned seed;
	int kills_random, kills_point, kills_inflight;
	bool no_kills; /* SV_CRASH_NO_KILLS: one incarnation, no kill */
	int64_t t0;
	bool passed;
	seenfile_t *seen; /* file sink: files visible at some kill */
	size_t nseen, capseen;
	size_t torn_seen; /* incomplete visible files found at kills */
	char summary[65536]; /* SUMMARY lines, printed again at the end */
	char *config; /* serve --config FILE (instead of --bootstrap-servers:
		       * it defines the "default" profile), or NULL */
} crash_t;

typedef struct lines {
	char **v;
	size_t n, cap;
} lines_t;

typedef struct tally {
	size_t expected, got, dup, missing, wrong, unexpected, torn;
} tally_t;

void cr_producer_start(producer_t *p, const char *topic, int64_t target,
		       double rate);
void cr_producer_join(producer_t *p, bool stop);
/* Fork and exec file (PATH searched when it has no '/') with argv and
 * envp (NULL: this process's environment). The child's stdin, stdout and
 * stderr become fd0, fd1, fd2 (-1: inherited); it dies with the test, even
 * a test killed by ctest's timeout (PR_SET_PDEATHSIG), and with own_group
 * it leads a process group of its own, so cr_kill_group reaches whatever it
 * starts. Everything is prepared before the fork and the child calls only
 * async-signal-safe functions (the tests have threads). Returns the pid, or
 * -1 with errno when fork failed. */
pid_t cr_spawn(const char *file, char *const argv[], char *const envp[],
	       int fd0, int fd1, int fd2, bool own_group);
void cr_kill_group(pid_t pid);
void cr_atexit_kill(void);
char *cr_slurp(const char *path, size_t *len);
void cr_print_log_tail(crash_t *c, int lines);
void cr_fail(crash_t *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
double cr_secs(crash_t *c);
crash_t *cr_new(void **state, const char *test, unsigned salt);
cjob_t *cr_add_job(crash_t *c, const char *label, jkind_t kind, skind_t sink,
		   bool eo);
void cr_start(crash_t *c, const char *kill_at);
bool cr_reap(crash_t *c, int timeout_ms, int *status);
const char *cr_describe_exit(int st, char *buf, size_t len);
void cr_sigkill(crash_t *c);
void cr_stop(crash_t *c);
int cr_log_port(crash_t *c);
bool cr_log_contains(crash_t *c, const char *needle);
int cr_http_do(int port, const char *method, const char *path, const char *body,
	       char **resp, int timeout_ms);
json_t *cr_http_json(crash_t *c, const char *method, const char *path,
		     const char *body, int *status, char **raw);
int64_t cr_jint(json_t *o, const char *k, int64_t dflt);
/* A client of the current broker (tk_bootstrap), librdkafka's log at
 * errors only. With group: of that consumer group, offsets never committed
 * by itself. isolation: "read_committed", "read_uncommitted" or NULL
 * (librdkafka's default). eof: report each partition's end. Fails the test
 * when librdkafka refuses. */
rd_kafka_t *cr_client(crash_t *c, rd_kafka_type_t type, const char *group,
		      const char *isolation, bool eof);
json_t *cr_job_get(crash_t *c, cjob_t *j);
void cr_poll_jobs(crash_t *c);
void cr_wait_port(crash_t *c, int timeout_ms);
bool cr_is_live_state(const char *s);
void cr_wait_back(crash_t *c, int timeout_ms);
char *cr_job_spec(crash_t *c, cjob_t *j);
void cr_submit_jobs(crash_t *c);
void cr_lines_add(lines_t *l, const char *s, size_t n);
void cr_lines_free(lines_t *l);
void cr_scan_files(crash_t *c, const char *dir, lines_t *out, size_t *torn,
		   size_t *files,
		   void (*visit)(crash_t *, const char *, int64_t));
void cr_snapshot_files(crash_t *c);
size_t cr_changed_files(crash_t *c);
bool cr_producer_done(crash_t *c);
void cr_print_kill(crash_t *c, const char *how, int64_t uptime_ms,
		   int64_t produced0);
void cr_first_incarnation(crash_t *c);
void cr_cycle_random(crash_t *c, int delay_ms);
void cr_cycle_point(crash_t *c, const char *kill_at);
void cr_input_ends(crash_t *c, int64_t ends[PARTS]);
bool cr_group_at_end(crash_t *c, cjob_t *j, const int64_t ends[PARTS],
		     int64_t got[PARTS]);
void cr_wait_drained(crash_t *c, cjob_t *j, const int64_t ends[PARTS],
		     int timeout_ms);
/* The topic's partition count (metadata). */
int cr_topic_partitions(crash_t *c, const char *topic);
/* Every one of np partitions has its last stable offset equal to its high
 * watermark (no transaction open or still writing markers there), polled
 * for up to timeout_ms (0: one look); lso and hw hold the last values. */
bool cr_output_settled(crash_t *c, const char *topic, int np, int64_t *lso,
		       int64_t *hw, int timeout_ms);
/* Read np partitions from the beginning until each reports its end at or
 * past ends[p]. */
void cr_read_topic_to(crash_t *c, const char *topic, bool read_committed,
		      int np, const int64_t *ends, lines_t *out);
void cr_read_topic(crash_t *c, const char *topic, bool read_committed,
		   lines_t *out);
tally_t cr_verify_pass(const char *label, char **lines, size_t nl, int64_t n);
tally_t cr_verify_window(const char *label, char **lines, size_t nl, int64_t n);
/* J_SESSION's output: one row per (key, session), window_start the
 * session's first event time, window_end its last plus SESSION_GAP_MS. */
/* Lines of every incarnation's log that name job j and hold needle. */
int cr_count_log(crash_t *c, const cjob_t *j, const char *needle);
tally_t cr_verify_session(const char *label, char **lines, size_t nl,
			  int64_t n);
void cr_summary(crash_t *c, cjob_t *j, const char *reader, const tally_t *t,
		const char *role);
bool cr_exact(const tally_t *t);
tally_t cr_check_output(crash_t *c, cjob_t *j, bool read_committed);
void cr_wait_input(crash_t *c);
void cr_final_incarnation(crash_t *c);
void cr_put_sentinels(crash_t *c, int64_t ends[PARTS]);
void cr_drain_all(crash_t *c);
void cr_finish(crash_t *c);
void cr_print_recoveries(crash_t *c);
void cr_print_end(crash_t *c);
int cr_teardown(void **state);

#endif
