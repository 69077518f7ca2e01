/* bench_raw_kafka.c — the Kafka side of bench/run.sh: the input loader, the
 * raw librdkafka contender (the physical limit for Kafka -> Kafka on this
 * machine), and the output checkers (record counts, end-to-end latency,
 * time until output flows again after a kill).
 *
 * Subcommands (every one prints one JSON object on stdout at the end):
 *
 *   load     produce --count bid records to --topic, round-robin over its
 *            partitions. Each record is one Nexmark bid from streamvisor's
 *            own "nexmark" generator (sources/generator.c: auction, bidder,
 *            price, channel, url with the reference's hot-auction skew;
 *            persons and auctions of the event stream are skipped) plus
 *            seq (0, 1, ...), key = seq % --keys, and ts, padded with
 *            "extra" to --bytes bytes of JSON. --key-by key|auction:
 *            that column is the message key and the record goes where
 *            Kafka's default partitioner puts it (murmur2), for parallel
 *            streamvisor runs that declare source.partitioned_by. ts is the bid's Nexmark
 *            event time (10 events per ms, starting at the wall clock of
 *            the start of the load), or with --live the wall clock at
 *            produce time
 *            (for latency runs); --rate throttles to records/s and
 *            --seconds bounds a live load in time.
 *   load-q3  the input of W4 (Nexmark q3-like lookup join): --persons
 *            person rows to --table (keyed by pid, in the partition
 *            Kafka's default partitioner gives the key), then one
 *            sentinel person per partition (a negative pid that no
 *            auction names, "pts" 10 years ahead: the table's event-time
 *            watermark passes every auction once every partition of the
 *            table has been read), then --count auction rows to --topic
 *            keyed by seller (same partitioner: the two topics are
 *            co-partitioned). A quarter of the auctions go to 100 hot
 *            sellers, the rest uniformly over the persons. Auction ts:
 *            10 per ms from the wall clock of the load; every person's
 *            pts is 1 s before the first auction.
 *   copy     the contender: consume --in from the beginning to the end
 *            offsets taken at start and produce every record unchanged
 *            (same partition, key and value) to --out. Default
 *            at-least-once: every second the producer is flushed, then the
 *            consumed positions are committed. --txn: one transaction per
 *            second (send_offsets_to_transaction + commit_transaction),
 *            read_committed input. The consumer's fetcher is woken after
 *            a full prefetch queue as the Kafka source does (fetch_wake;
 *            --no-wake leaves it out). Reports records, seconds and the
 *            process's own CPU (getrusage) and peak RSS; phase timings
 *            (end offsets read, first and last record, committed) on
 *            stderr.
 *   topics   create the comma-separated --topic list (--partitions 8);
 *   delete   delete the comma-separated --topic list (the latency runs'
 *            topics after each run: at 400,000 records/s a run writes
 *            ~4 GB, and a full run's twelve would fill the disk);
 *            --compact: with cleanup.policy=compact (a table topic).
 *   count    read --topic with read_committed to its end: the number of
 *            records (the smoke check of every contender's output).
 *            --join-check (W4's output): also the records whose "name"
 *            is not their "seller"'s person name (q3_name), reported as
 *            "wrong".
 *   latency  read --topic from its end with read_committed for --seconds;
 *            for every record, latency = consume time - the record's
 *            --field (ts for per-record output, window_end for window
 *            results), both epoch ms. Records of the first --warmup
 *            seconds are left out. With --kill-file: once that file holds
 *            an epoch ms K (written by run.sh when it kill -9s the
 *            contender), recovery = consume time of the first record whose
 *            --field is > K, minus K.
 *
 * Common options: --bootstrap HOST:PORT (127.0.0.1:19492). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/partition.h"
#include "core/util.h"

#include <librdkafka/rdkafka.h>

#include "core/record.h"
#include "sources/generator.h"
#include "sources/source.h"

#define MAXPART 64

typedef struct opts {
	const char *cmd;
	const char *bootstrap;
	const char *topic, *in, *out;
	const char *group;
	const char *field;
	const char *kill_file;
	int64_t count;
	int64_t rate;
	int64_t keys;
	const char *key_by; /* load: "key" or "auction" keys the records */
	int bytes;
	int partitions;
	double seconds;
	double warmup;
	bool live;
	bool txn;
	bool no_wake; /* copy: without fetch_wake (to measure the stall) */
	bool compact;
	bool join_check;
	int64_t persons;
	const char *table;
	uint64_t seed;
} opts_t;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
#include <stdarg.h>
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench_raw_kafka: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

/* Every subcommand prints its result before it closes its clients
 * (result_out). Once the result is out, a teardown that does not finish
 * ends the process after TEARDOWN_S: seen once, rd_kafka_destroy of the
 * latency checker waiting for a broker thread that never left, which hung
 * bench/run.sh's wait on it with the result still in stdout's buffer. */
#define TEARDOWN_S 20
static void on_teardown_alarm(int s)
{
	(void)s;
	static const char msg[] = "bench_raw_kafka: client teardown did not "
				  "finish; exiting (the result is out)\n";
	ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)w;
	_exit(0);
}

static void result_out(void)
{
	fflush(stdout);
	signal(SIGALRM, on_teardown_alarm);
	alarm(TEARDOWN_S);
}

static void conf_set(rd_kafka_conf_t *c, const char *k, const char *v)
{
	char err[512];
	if (rd_kafka_conf_set(c, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK)
		fail("config %s=%s: %s", k, v, err);
}

static rd_kafka_t *new_client(rd_kafka_type_t type, rd_kafka_conf_t *c)
{
	char err[512];
	rd_kafka_t *rk = rd_kafka_new(type, c, err, sizeof(err));
	if (!rk)
		fail("rd_kafka_new: %s", err);
	return rk;
}

static int topic_partitions(rd_kafka_t *rk, const char *topic)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
	rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 10000);
	if (e)
		fail("metadata of '%s': %s", topic, rd_kafka_err2str(e));
	int n = md->topic_cnt == 1 && !md->topics[0].err
		? md->topics[0].partition_cnt
		: 0;
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(t);
	if (n <= 0 || n > MAXPART)
		fail("topic '%s' has %d partitions", topic, n);
	return n;
}

static double peak_rss_mb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024.0;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* ==== load ==== */

static int64_t dr_failed;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *o)
{
	(void)rk;
	(void)o;
	if (m->err && dr_failed++ < 5)
		fprintf(stderr, "delivery failed: %s\n",
			rd_kafka_err2str(m->err));
}

enum {
	NX_TYPE,
	NX_TIME,
	NX_AUCTION,
	NX_BIDDER,
	NX_PRICE,
	NX_CHANNEL,
	NX_URL
};

static void json_str(char **p, const sv_value_t *v)
{
	*(*p)++ = '"';
	if (!sv_is_null(v)) {
		for (uint32_t i = 0; i < v->len; i++) {
			char ch = v->v.s[i];
			if (ch == '"' || ch == '\\' || (unsigned char)ch < 0x20)
				ch = '_';
			*(*p)++ = ch;
		}
	}
	*(*p)++ = '"';
}

static int cmd_load(const opts_t *o)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	conf_set(c, "bootstrap.servers", o->bootstrap);
	conf_set(c, "linger.ms", "20");
	conf_set(c, "batch.size", "1048576");
	conf_set(c, "batch.num.messages", "10000");
	conf_set(c, "queue.buffering.max.kbytes", "1048576");
	conf_set(c, "compression.type", "none");
	rd_kafka_conf_set_dr_msg_cb(c, dr_cb);
	rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c);
	int nparts = topic_partitions(rk, o->topic);
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, o->topic, NULL);

	sv_schema_t *schema = sv_schema_new();
	sv_schema_add(schema, "event_type", SV_T_INT64, true);
	sv_schema_add(schema, "date_time", SV_T_INT64, true);
	sv_schema_add(schema, "auction", SV_T_INT64, true);
	sv_schema_add(schema, "bidder", SV_T_INT64, true);
	sv_schema_add(schema, "price", SV_T_INT64, true);
	sv_schema_add(schema, "channel", SV_T_STRING, true);
	sv_schema_add(schema, "url", SV_T_STRING, true);
	sv_source_conf_t sc = {
		.kind = "generator",
		.job_id = "bench-load",
		.format = SV_FMT_JSON,
		.schema = schema,
		.generator = "nexmark",
		.count = -1,
		.seed = o->seed,
	};
	sv_source_t *src;
	sv_error_t *err;
	if ((err = sv_source_open(&sc, &src)))
		fail("open nexmark generator: %s", err->message);
	sv_generator_options_t go;
	sv_generator_options_default(&go);
	go.partitions = 1;
	/* Event time starts now, not at the generator's 2024 default: sinks
	 * that stamp output records with their event time (Flink's KafkaSink
	 * does) would otherwise write records that the broker's 7-day
	 * time-based retention deletes at its next check. */
	go.base_ts_ms = now_ms();
	if ((err = sv_generator_set_options(src, &go)))
		fail("generator options: %s", err->message);

	sv_batch_t b;
	sv_batch_init(&b, schema);
	static const char pad[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345678"
		"9";
	char buf[1024];
	int64_t seq = 0, bytes = 0;
	double t0 = mono_s();
	int64_t count = o->count > 0 ? o->count : INT64_MAX;
	while (seq < count) {
		if (o->seconds > 0 && mono_s() - t0 >= o->seconds)
			break;
		bool eof;
		sv_batch_reset(&b);
		if ((err = sv_source_poll(src, &b, 1024, 0, &eof)))
			fail("generator: %s", err->message);
		for (size_t r = 0; r < b.nrows && seq < count; r++) {
			const sv_value_t *v = sv_batch_row(&b, r);
			if (v[NX_TYPE].v.i != 2)
				continue; /* bids only */
			if (o->rate > 0) {
				/* pace: record seq is due at t0 + seq / rate */
				double due = t0 + (double)seq / (double)o->rate;
				double now = mono_s();
				if (due > now)
					usleep((useconds_t)((due - now) * 1e6));
				if (o->seconds > 0 &&
				    mono_s() - t0 >= o->seconds)
					goto done;
			}
			int64_t ts = o->live ? now_ms() : v[NX_TIME].v.i;
			char *p = buf;
			p += sprintf(p,
				     "{\"seq\":%" PRId64 ",\"key\":%" PRId64
				     ",\"auction\":%" PRId64
				     ",\"bidder\":%" PRId64
				     ",\"price\":%" PRId64 ",\"channel\":",
				     seq, seq % o->keys, v[NX_AUCTION].v.i,
				     v[NX_BIDDER].v.i, v[NX_PRICE].v.i);
			json_str(&p, &v[NX_CHANNEL]);
			p += sprintf(p, ",\"url\":");
			json_str(&p, &v[NX_URL]);
			p += sprintf(p, ",\"ts\":%" PRId64 ",\"extra\":\"", ts);
			int room = o->bytes - (int)(p - buf) - 2;
			if (room < 0)
				room = 0;
			if (room > (int)sizeof(pad) - 1)
				room = (int)sizeof(pad) - 1;
			memcpy(p, pad + (seq % 7),
			       (size_t)room > sizeof(pad) - 8 ? sizeof(pad) - 8
							      : (size_t)room);
			p += (size_t)room > sizeof(pad) - 8 ? sizeof(pad) - 8
							    : (size_t)room;
			*p++ = '"';
			*p++ = '}';
			size_t len = (size_t)(p - buf);
			int32_t part = (int32_t)(seq % nparts);
			/* --key-by: the column as the message key, in the
			 * partition Kafka's default partitioner gives it
			 * (what source.partitioned_by declares) */
			char kbuf[32] = "";
			size_t klen = 0;
			if (o->key_by) {
				int64_t kv = !strcmp(o->key_by, "auction")
					? v[NX_AUCTION].v.i
					: seq % o->keys;
				klen = (size_t)snprintf(kbuf, sizeof(kbuf),
							"%" PRId64, kv);
				part = sv_partition_of(kbuf, klen, nparts);
			}
			while (rd_kafka_produce(rkt, part, RD_KAFKA_MSG_F_COPY,
						buf, len, klen ? kbuf : NULL,
						klen, NULL) == -1) {
				if (rd_kafka_last_error() !=
				    RD_KAFKA_RESP_ERR__QUEUE_FULL)
					fail("produce: %s",
					     rd_kafka_err2str(
						     rd_kafka_last_error()));
				rd_kafka_poll(rk, 50);
			}
			rd_kafka_poll(rk, 0);
			seq++;
			bytes += (int64_t)len;
		}
	}
done:
	rd_kafka_flush(rk, 120000);
	double secs = mono_s() - t0;
	if (dr_failed)
		fail("%" PRId64 " records failed delivery", dr_failed);
	printf("{\"records\":%" PRId64 ",\"bytes\":%" PRId64
	       ",\"avg_bytes\":%.1f,\"seconds\":%.3f,\"partitions\":%d}\n",
	       seq, bytes, seq ? (double)bytes / seq : 0.0, secs, nparts);
	sv_batch_release(&b);
	result_out();
	sv_source_close(src);
	sv_schema_destroy(schema);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
	return 0;
}

/* ==== load-q3 (W4's persons table and auctions stream) ==== */

static uint64_t q3_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static const char *const q3_first[] = {"Peter", "Paul",   "Luke",  "John",
				       "Saul",  "Vicky",  "Kate",  "Julie",
				       "Sarah", "Deiter", "Walter"};
static const char *const q3_last[] = {"Shultz", "Abrams",  "Spencer",
				      "White",  "Bartels", "Walton",
				      "Smith",  "Jones",   "Noris"};
static const char *const q3_city[] = {
	"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
	"Bend",    "Redmond",     "Seattle",       "Kent",  "Cheyenne"};
static const char *const q3_state[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
#define Q3_N(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))
#define Q3_PID0 1000

/* The name of person pid (what --join-check expects beside its seller). */
static int q3_name(int64_t pid, char *buf, size_t len)
{
	int64_t u = pid < 0 ? -pid : pid;
	return snprintf(buf, len, "%s %s %" PRId64,
			q3_first[u % Q3_N(q3_first)],
			q3_last[(u / 7) % Q3_N(q3_last)], pid);
}

static void q3_produce(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t part,
		       const char *key, size_t klen, const char *v, size_t len)
{
	while (rd_kafka_produce(rkt, part, RD_KAFKA_MSG_F_COPY, (void *)v, len,
				key, klen, NULL) == -1) {
		if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			fail("produce: %s",
			     rd_kafka_err2str(rd_kafka_last_error()));
		rd_kafka_poll(rk, 50);
	}
	rd_kafka_poll(rk, 0);
}

static int cmd_load_q3(const opts_t *o)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	conf_set(c, "bootstrap.servers", o->bootstrap);
	conf_set(c, "linger.ms", "20");
	conf_set(c, "batch.size", "1048576");
	conf_set(c, "batch.num.messages", "10000");
	conf_set(c, "queue.buffering.max.kbytes", "1048576");
	conf_set(c, "compression.type", "none");
	rd_kafka_conf_set_dr_msg_cb(c, dr_cb);
	rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c);
	int tparts = topic_partitions(rk, o->table);
	int aparts = topic_partitions(rk, o->topic);
	rd_kafka_topic_t *tt = rd_kafka_topic_new(rk, o->table, NULL);
	rd_kafka_topic_t *at = rd_kafka_topic_new(rk, o->topic, NULL);
	int64_t t0 = now_ms();
	int64_t pts = t0 - 1000;
	int64_t np = o->persons > 0 ? o->persons : 100000;
	char buf[1024], key[32], name[96];
	int64_t pbytes = 0, abytes = 0;
	double s0 = mono_s();
	for (int64_t i = 0; i < np; i++) {
		int64_t pid = Q3_PID0 + i;
		size_t klen = (size_t)snprintf(key, sizeof(key), "%" PRId64,
					       pid);
		q3_name(pid, name, sizeof(name));
		int len = snprintf(buf, sizeof(buf),
				   "{\"pid\":%" PRId64 ",\"name\":\"%s\","
				   "\"email\":\"p%" PRId64 "@example.com\","
				   "\"city\":\"%s\",\"state\":\"%s\","
				   "\"pts\":%" PRId64 "}",
				   pid, name, pid, q3_city[pid % Q3_N(q3_city)],
				   q3_state[pid % Q3_N(q3_state)], pts);
		q3_produce(rk, tt, sv_partition_of(key, klen, tparts), key,
			   klen, buf, (size_t)len);
		pbytes += len;
	}
	/* one sentinel per table partition: its pts moves the table's
	 * watermark past every auction */
	int64_t far = t0 + 10LL * 365 * 86400 * 1000;
	for (int32_t p = 0; p < tparts; p++) {
		int64_t pid = -1;
		size_t klen = 0;
		for (;; pid--) {
			klen = (size_t)snprintf(key, sizeof(key), "%" PRId64,
						pid);
			if (sv_partition_of(key, klen, tparts) == p)
				break;
		}
		q3_name(pid, name, sizeof(name));
		int len = snprintf(buf, sizeof(buf),
				   "{\"pid\":%" PRId64 ",\"name\":\"%s\","
				   "\"email\":\"sentinel@example.com\","
				   "\"city\":\"none\",\"state\":\"--\","
				   "\"pts\":%" PRId64 "}",
				   pid, name, far);
		q3_produce(rk, tt, p, key, klen, buf, (size_t)len);
	}
	rd_kafka_flush(rk, 120000);
	double psecs = mono_s() - s0;
	uint64_t rs = o->seed;
	static const char pad[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345678"
		"9";
	s0 = mono_s();
	for (int64_t i = 0; i < o->count; i++) {
		uint64_t r = q3_next(&rs);
		int64_t seller = (r & 3) == 0
			? Q3_PID0 +
				(int64_t)((r >> 2) % 100) *
					(np / 100 > 0 ? np / 100 : 1)
			: Q3_PID0 + (int64_t)((r >> 8) % (uint64_t)np);
		if (seller >= Q3_PID0 + np)
			seller = Q3_PID0 + np - 1;
		int64_t ts = t0 + i / 10;
		size_t klen = (size_t)snprintf(key, sizeof(key), "%" PRId64,
					       seller);
		int len = snprintf(
			buf, sizeof(buf),
			"{\"id\":%" PRId64 ",\"item_name\":\"item-%" PRId64
			"\",\"description\":\"%.*s\",\"initial_bid\":%" PRId64
			",\"reserve\":%" PRId64 ",\"ts\":%" PRId64
			",\"expires\":%" PRId64 ",\"seller\":%" PRId64
			",\"category\":%" PRId64 "}",
			i, i, 60 + (int)(i % 7), pad + (i % 13),
			(int64_t)((r >> 20) % 1000) + 1,
			(int64_t)((r >> 30) % 2000) + 1000, ts, ts + 10000,
			seller, (int64_t)(10 + (r >> 40) % 5));
		q3_produce(rk, at, sv_partition_of(key, klen, aparts), key,
			   klen, buf, (size_t)len);
		abytes += len;
	}
	rd_kafka_flush(rk, 120000);
	double asecs = mono_s() - s0;
	if (dr_failed)
		fail("%" PRId64 " records failed delivery", dr_failed);
	printf("{\"persons\":%" PRId64
	       ",\"sentinels\":%d,\"persons_bytes\":%" PRId64
	       ",\"persons_seconds\":%.3f,\"records\":%" PRId64
	       ",\"bytes\":%" PRId64 ",\"avg_bytes\":%.1f,\"seconds\":%.3f"
	       ",\"partitions\":%d}\n",
	       np, tparts, pbytes, psecs, o->count, abytes,
	       o->count ? (double)abytes / o->count : 0.0, asecs, aparts);
	result_out();
	rd_kafka_topic_destroy(tt);
	rd_kafka_topic_destroy(at);
	rd_kafka_destroy(rk);
	return 0;
}

/* ==== copy (the raw contender) ==== */

/* A consumer of every partition of topic, from the beginning (or the end).
 * With lo/hi: each partition's low and high watermark, asked before the
 * assignment (asked after it, librdkafka took 1.5-2.5 s for them on the
 * bench broker). */
static rd_kafka_t *consumer_assign_all(const opts_t *o, const char *topic,
				       const char *group, bool from_end,
				       int *nparts_out,
				       rd_kafka_topic_partition_list_t **tp,
				       int64_t *lo, int64_t *hi)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	conf_set(c, "bootstrap.servers", o->bootstrap);
	conf_set(c, "group.id", group);
	conf_set(c, "enable.auto.commit", "false");
	conf_set(c, "enable.auto.offset.store", "false");
	conf_set(c, "isolation.level", "read_committed");
	conf_set(c, "enable.partition.eof", "true");
	conf_set(c, "queued.min.messages", "200000");
	conf_set(c, "fetch.max.bytes", "52428800");
	conf_set(c, "max.partition.fetch.bytes", "4194304");
	rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, c);
	int n = topic_partitions(rk, topic);
	*tp = rd_kafka_topic_partition_list_new(n);
	for (int p = 0; p < n; p++)
		rd_kafka_topic_partition_list_add(*tp, topic, p)->offset =
			from_end ? RD_KAFKA_OFFSET_END
				 : RD_KAFKA_OFFSET_BEGINNING;
	for (int p = 0; lo && p < n; p++) {
		rd_kafka_resp_err_t qe = rd_kafka_query_watermark_offsets(
			rk, topic, p, &lo[p], &hi[p], 10000);
		if (qe)
			fail("watermarks: %s", rd_kafka_err2str(qe));
	}
	rd_kafka_poll_set_consumer(rk);
	rd_kafka_resp_err_t e = rd_kafka_assign(rk, *tp);
	if (e)
		fail("assign: %s", rd_kafka_err2str(e));
	*nparts_out = n;
	return rk;
}

/* librdkafka 2.0's fetcher stops at a full prefetch queue
 * (queued.min.messages, queued.max.messages.kbytes) and looks again only
 * when its broker thread wakes, up to 1 s later (docs/performance.md "A
 * small prefetch queue"). The reference gets the same wake-up as the Kafka
 * source (sources/kafka_source.c ksrc_wake_fetcher), so that neither side
 * is paced by the stall: once the queue reached 3/4 of a threshold and
 * then drained below half, one ListOffsets request to the first
 * partition's leader wakes that broker's thread. */
typedef struct fetch_wake {
	rd_kafka_queue_t *q;
	uint64_t max_msgs, max_bytes;
	uint64_t msgs, bytes; /* consumed so far, for the average size */
	bool full;
	int64_t wakes;
} fetch_wake_t;

static void fetch_wake(fetch_wake_t *w, rd_kafka_t *rk, const char *topic)
{
	uint64_t q = rd_kafka_queue_length(w->q);
	uint64_t bytes = q * (w->msgs ? w->bytes / w->msgs : 0);
	if (q * 4 >= w->max_msgs * 3 || bytes * 4 >= w->max_bytes * 3) {
		w->full = true;
		return;
	}
	if (!w->full || q * 2 >= w->max_msgs || bytes * 2 >= w->max_bytes)
		return;
	w->full = false;
	w->wakes++;
	int64_t lo, hi;
	rd_kafka_query_watermark_offsets(rk, topic, 0, &lo, &hi, 200);
}

static int cmd_copy(const opts_t *o)
{
	double t0 = mono_s(), c0 = cpu_s();
	char group[256];
	snprintf(group, sizeof(group), "%s", o->group ? o->group : "bench-raw");
	int nparts;
	rd_kafka_topic_partition_list_t *tp;
	int64_t end[MAXPART], next[MAXPART];
	rd_kafka_t *cons = consumer_assign_all(o, o->in, group, false, &nparts,
					       &tp, next, end);

	rd_kafka_conf_t *pc = rd_kafka_conf_new();
	conf_set(pc, "bootstrap.servers", o->bootstrap);
	conf_set(pc, "linger.ms", "5");
	conf_set(pc, "batch.size", "1048576");
	conf_set(pc, "batch.num.messages", "10000");
	conf_set(pc, "queue.buffering.max.kbytes", "1048576");
	if (o->txn) {
		char tid[300];
		snprintf(tid, sizeof(tid), "%s-txn", group);
		conf_set(pc, "transactional.id", tid);
	}
	rd_kafka_conf_set_dr_msg_cb(pc, dr_cb);
	rd_kafka_t *prod = new_client(RD_KAFKA_PRODUCER, pc);
	rd_kafka_topic_t *out = rd_kafka_topic_new(prod, o->out, NULL);
	fprintf(stderr, "copy: %.3f s: consumer assigned, end offsets read\n",
		mono_s() - t0);
	rd_kafka_error_t *te;
	if (o->txn) {
		if ((te = rd_kafka_init_transactions(prod, 30000)))
			fail("init_transactions: %s",
			     rd_kafka_error_string(te));
		if ((te = rd_kafka_begin_transaction(prod)))
			fail("begin: %s", rd_kafka_error_string(te));
	}

	int64_t records = 0, commits = 0;
	double last_commit = mono_s();
	/* the thresholds of consumer_assign_all and librdkafka 2.0's default
	 * queued.max.messages.kbytes */
	fetch_wake_t fw = {.q = rd_kafka_queue_get_consumer(cons),
			   .max_msgs = 200000,
			   .max_bytes = 65536 * 1024};
	bool first = true;
	fprintf(stderr, "copy: %.3f s: producer ready\n", mono_s() - t0);
	rd_kafka_consumer_group_metadata_t *cgmd =
		rd_kafka_consumer_group_metadata(cons);

	/* commit: everything produced so far is durable (or in the
	 * transaction), then the positions go with it. */
#define COMMIT_POSITIONS()                                                   \
	do {                                                                 \
		rd_kafka_topic_partition_list_t *offs =                      \
			rd_kafka_topic_partition_list_new(nparts);           \
		for (int p = 0; p < nparts; p++)                             \
			rd_kafka_topic_partition_list_add(offs, o->in, p)    \
				->offset = next[p];                          \
		if (o->txn) {                                                \
			if ((te = rd_kafka_send_offsets_to_transaction(      \
				     prod, offs, cgmd, 30000)))              \
				fail("send_offsets: %s",                     \
				     rd_kafka_error_string(te));             \
			if ((te = rd_kafka_commit_transaction(prod, 60000))) \
				fail("commit_transaction: %s",               \
				     rd_kafka_error_string(te));             \
		} else {                                                     \
			if (rd_kafka_flush(prod, 60000))                     \
				fail("flush timed out");                     \
			rd_kafka_resp_err_t ce = rd_kafka_commit(cons, offs, \
								 0);         \
			if (ce)                                              \
				fail("commit: %s", rd_kafka_err2str(ce));    \
		}                                                            \
		rd_kafka_topic_partition_list_destroy(offs);                 \
		commits++;                                                   \
		last_commit = mono_s();                                      \
	} while (0)

	for (;;) {
		bool done = true;
		for (int p = 0; p < nparts; p++)
			if (next[p] < end[p])
				done = false;
		if (done)
			break;
		rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, 100);
		if (m) {
			if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
				/* control records at the end advance the
				 * position without a message */
				int p = m->partition;
				if (m->offset > next[p])
					next[p] = m->offset;
			} else if (m->err) {
				fail("consume: %s", rd_kafka_message_errstr(m));
			} else {
				if (first) {
					fprintf(stderr,
						"copy: %.3f s: first record\n",
						mono_s() - t0);
					first = false;
				}
				while (rd_kafka_produce(out, m->partition,
							RD_KAFKA_MSG_F_COPY,
							m->payload, m->len,
							m->key, m->key_len,
							NULL) == -1) {
					if (rd_kafka_last_error() !=
					    RD_KAFKA_RESP_ERR__QUEUE_FULL)
						fail("produce: %s",
						     rd_kafka_err2str(
							     rd_kafka_last_error()));
					rd_kafka_poll(prod, 20);
				}
				next[m->partition] = m->offset + 1;
				records++;
				fw.msgs++;
				fw.bytes += m->len;
			}
			rd_kafka_message_destroy(m);
		}
		if (!o->no_wake && (records & 255) == 0)
			fetch_wake(&fw, cons, o->in);
		rd_kafka_poll(prod, 0);
		if (mono_s() - last_commit >= 1.0) {
			COMMIT_POSITIONS();
			if (o->txn && (te = rd_kafka_begin_transaction(prod)))
				fail("begin: %s", rd_kafka_error_string(te));
		}
	}
	fprintf(stderr,
		"copy: %.3f s: last record (fetcher woken %" PRId64 " times)\n",
		mono_s() - t0, fw.wakes);
	rd_kafka_queue_destroy(fw.q);
	COMMIT_POSITIONS();
	fprintf(stderr, "copy: %.3f s: committed\n", mono_s() - t0);
	if (rd_kafka_flush(prod, 60000))
		fail("final flush timed out");
	double secs = mono_s() - t0, cpu = cpu_s() - c0;
	if (dr_failed)
		fail("%" PRId64 " records failed delivery", dr_failed);
	printf("{\"records\":%" PRId64 ",\"seconds\":%.3f,\"cpu_s\":%.3f,"
	       "\"peak_rss_mb\":%.1f,\"commits\":%" PRId64
	       ",\"fetcher_wakes\":%" PRId64 "}\n",
	       records, secs, cpu, peak_rss_mb(), commits, fw.wakes);
	result_out();
	rd_kafka_consumer_group_metadata_destroy(cgmd);
	rd_kafka_topic_destroy(out);
	rd_kafka_destroy(prod);
	rd_kafka_consumer_close(cons);
	rd_kafka_topic_partition_list_destroy(tp);
	rd_kafka_destroy(cons);
	return 0;
}

/* ==== count ==== */

static int64_t json_field_i64(const char *p, size_t len, const char *field);

/* A W4 output record: its "name" is its "seller"'s (q3_name). */
static bool join_ok(const char *p, size_t len)
{
	int64_t seller = json_field_i64(p, len, "seller");
	const char *f = memmem(p, len, "\"name\":\"", 8);
	if (seller < 0 || !f)
		return false;
	f += 8;
	const char *e = memchr(f, '"', (size_t)(p + len - f));
	char want[96];
	int n = q3_name(seller, want, sizeof(want));
	return e && e - f == n && !memcmp(f, want, (size_t)n);
}

static int cmd_count(const opts_t *o)
{
	int nparts;
	rd_kafka_topic_partition_list_t *tp;
	char group[64];
	snprintf(group, sizeof(group), "bench-count-%d", (int)getpid());
	rd_kafka_t *cons = consumer_assign_all(o, o->topic, group, false,
					       &nparts, &tp, NULL, NULL);
	bool eof[MAXPART] = {0};
	int neof = 0;
	int64_t records = 0, bytes = 0, wrong = 0;
	double t0 = mono_s();
	while (neof < nparts) {
		if (mono_s() - t0 > (o->seconds > 0 ? o->seconds : 300))
			fail("count: no end of '%s' after %.0f s", o->topic,
			     mono_s() - t0);
		rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, 200);
		if (!m)
			continue;
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			if (!eof[m->partition]) {
				eof[m->partition] = true;
				neof++;
			}
		} else if (m->err) {
			fail("consume: %s", rd_kafka_message_errstr(m));
		} else {
			if (eof[m->partition]) {
				eof[m->partition] = false;
				neof--;
			}
			records++;
			bytes += (int64_t)m->len;
			if (o->join_check && !join_ok(m->payload, m->len))
				wrong++;
		}
		rd_kafka_message_destroy(m);
	}
	printf("{\"topic\":\"%s\",\"records\":%" PRId64 ",\"bytes\":%" PRId64,
	       o->topic, records, bytes);
	if (o->join_check)
		printf(",\"wrong\":%" PRId64, wrong);
	printf("}\n");
	result_out();
	rd_kafka_consumer_close(cons);
	rd_kafka_topic_partition_list_destroy(tp);
	rd_kafka_destroy(cons);
	return 0;
}

/* ==== topics ==== */

/* Create every topic of the comma-separated --topic list with --partitions
 * partitions (replication 1); an existing topic is fine. */
/* Every topic of an admin result succeeded, or failed with ok (the topic
 * already exists / is already gone); what: "create" or "delete". */
static void check_topic_results(const rd_kafka_topic_result_t **tr, size_t cnt,
				const char *what, rd_kafka_resp_err_t ok)
{
	for (size_t i = 0; i < cnt; i++) {
		rd_kafka_resp_err_t e = rd_kafka_topic_result_error(tr[i]);
		if (e && e != ok)
			fail("%s topic '%s': %s", what,
			     rd_kafka_topic_result_name(tr[i]),
			     rd_kafka_err2str(e));
	}
}

static int cmd_delete(const opts_t *o)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	conf_set(c, "bootstrap.servers", o->bootstrap);
	rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c);
	char *list = strdup(o->topic), *save = NULL;
	rd_kafka_DeleteTopic_t *dt[64];
	size_t n = 0;
	for (char *t = strtok_r(list, ",", &save); t && n < 64;
	     t = strtok_r(NULL, ",", &save))
		dt[n++] = rd_kafka_DeleteTopic_new(t);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_DeleteTopics(rk, dt, n, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	if (!ev)
		fail("delete topics: no answer");
	size_t cnt;
	const rd_kafka_topic_result_t **tr = rd_kafka_DeleteTopics_result_topics(
		rd_kafka_event_DeleteTopics_result(ev), &cnt);
	check_topic_results(tr, cnt, "delete",
			    RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
	rd_kafka_event_destroy(ev);
	rd_kafka_DeleteTopic_destroy_array(dt, n);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	free(list);
	return 0;
}

static int cmd_topics(const opts_t *o)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	conf_set(c, "bootstrap.servers", o->bootstrap);
	rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, c);
	char *list = strdup(o->topic), *save = NULL;
	rd_kafka_NewTopic_t *nt[64];
	const char *names[64];
	size_t n = 0;
	char err[256];
	for (char *t = strtok_r(list, ",", &save); t && n < 64;
	     t = strtok_r(NULL, ",", &save)) {
		nt[n] = rd_kafka_NewTopic_new(t, o->partitions, 1, err,
					      sizeof(err));
		if (!nt[n])
			fail("topic '%s': %s", t, err);
		if (o->compact &&
		    rd_kafka_NewTopic_set_config(nt[n], "cleanup.policy",
						 "compact"))
			fail("topic '%s': cleanup.policy", t);
		names[n] = t;
		n++;
	}
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, nt, n, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	if (!ev)
		fail("create topics: no answer");
	size_t cnt;
	const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(
		rd_kafka_event_CreateTopics_result(ev), &cnt);
	check_topic_results(tr, cnt, "create",
			    RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
	rd_kafka_event_destroy(ev);
	/* wait until every topic has leaders in the metadata */
	for (size_t i = 0; i < n; i++) {
		const char *t = names[i];
		for (int k = 0;; k++) {
			const struct rd_kafka_metadata *md;
			rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, t, NULL);
			bool ok = false;
			if (!rd_kafka_metadata(rk, 0, rkt, &md, 5000)) {
				ok = md->topic_cnt == 1 && !md->topics[0].err &&
					md->topics[0].partition_cnt ==
						o->partitions;
				for (int p = 0;
				     ok && p < md->topics[0].partition_cnt; p++)
					if (md->topics[0].partitions[p].leader <
					    0)
						ok = false;
				rd_kafka_metadata_destroy(md);
			}
			rd_kafka_topic_destroy(rkt);
			if (ok)
				break;
			if (k > 300)
				fail("topic '%s' has no leaders", t);
			usleep(100000);
		}
	}
	printf("{\"created\":%zu}\n", n);
	for (size_t i = 0; i < n; i++)
		rd_kafka_NewTopic_destroy(nt[i]);
	rd_kafka_queue_destroy(q);
	free(list);
	rd_kafka_destroy(rk);
	return 0;
}

/* ==== latency ==== */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The integer after "<field>": in a flat JSON object; -1 when absent. */
static int64_t json_field_i64(const char *p, size_t len, const char *field)
{
	char pat[64];
	int n = snprintf(pat, sizeof(pat), "\"%s\":", field);
	const char *e = p + len;
	const char *f = memmem(p, len, pat, (size_t)n);
	if (!f)
		return -1;
	f += n;
	while (f < e && *f == ' ')
		f++;
	int64_t v = 0;
	bool any = false;
	while (f < e && *f >= '0' && *f <= '9') {
		v = v * 10 + (*f++ - '0');
		any = true;
	}
	return any ? v : -1;
}

static volatile sig_atomic_t stop_flag;
static void on_term(int s)
{
	(void)s;
	stop_flag = 1;
}

static int cmd_latency(const opts_t *o)
{
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	int nparts;
	rd_kafka_topic_partition_list_t *tp;
	char group[64];
	snprintf(group, sizeof(group), "bench-lat-%d", (int)getpid());
	rd_kafka_t *cons = consumer_assign_all(o, o->topic, group, true,
					       &nparts, &tp, NULL, NULL);
	size_t cap = 1 << 20, n = 0;
	int64_t *lat = malloc(cap * sizeof(*lat));
	int64_t records = 0, missing = 0, kill_ms = -1, recovery_ms = -1;
	double t0 = mono_s();
	double kill_check = 0;
	/* Print a ready line on stderr once assigned, so run.sh can start the
	 * load only when this consumer will see it. */
	rd_kafka_consumer_poll(cons, 500);
	fprintf(stderr, "latency: ready on '%s'\n", o->topic);
	while (!stop_flag && mono_s() - t0 < o->seconds) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, 100);
		int64_t now = now_ms();
		if (o->kill_file && kill_ms < 0 &&
		    mono_s() - kill_check > 0.05) {
			kill_check = mono_s();
			FILE *f = fopen(o->kill_file, "r");
			if (f) {
				if (fscanf(f, "%" SCNd64, &kill_ms) != 1)
					kill_ms = -1;
				fclose(f);
			}
		}
		if (!m)
			continue;
		if (!m->err) {
			records++;
			int64_t v = json_field_i64(m->payload, m->len,
						   o->field);
			if (v < 0) {
				missing++;
			} else {
				if (mono_s() - t0 >= o->warmup && kill_ms < 0) {
					if (n == cap) {
						cap *= 2;
						lat = sv_realloc(
							lat,
							cap * sizeof(*lat));
					}
					lat[n++] = now - v;
				}
				if (kill_ms >= 0 && recovery_ms < 0 &&
				    v > kill_ms)
					recovery_ms = now - kill_ms;
			}
		}
		rd_kafka_message_destroy(m);
	}
	qsort(lat, n, sizeof(*lat), cmp_i64);
	printf("{\"records\":%" PRId64
	       ",\"measured\":%zu,\"missing_field\":%" PRId64,
	       records, n, missing);
	if (n)
		printf(",\"latency_p50_ms\":%" PRId64
		       ",\"latency_p99_ms\":%" PRId64
		       ",\"latency_max_ms\":%" PRId64,
		       lat[n / 2], lat[(size_t)((double)(n - 1) * 0.99)],
		       lat[n - 1]);
	if (kill_ms >= 0 && recovery_ms >= 0)
		printf(",\"kill_ms\":%" PRId64 ",\"recovery_s\":%.3f", kill_ms,
		       recovery_ms / 1000.0);
	else if (kill_ms >= 0) /* no output after the kill within --seconds */
		printf(",\"kill_ms\":%" PRId64 ",\"recovery_s\":null", kill_ms);
	printf("}\n");
	result_out();
	free(lat);
	rd_kafka_consumer_close(cons);
	rd_kafka_topic_partition_list_destroy(tp);
	rd_kafka_destroy(cons);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_raw_kafka load|copy|count|latency [--bootstrap "
		"B]\n"
		"  load    --topic T --count N [--rate R --seconds S --live]"
		" [--bytes 200 --keys 10000 --seed 42 --key-by key|auction]\n"
		"  load-q3 --table PERSONS --topic AUCTIONS --count N"
		" [--persons 100000 --seed 42]\n"
		"  copy    --in T --out T2 [--txn] [--group G] [--no-wake]\n"
		"  count   --topic T [--seconds TIMEOUT] [--join-check]\n"
		"  topics  --topic T1,T2,... [--partitions 8] [--compact]\n"
		"  delete  --topic T1,T2,...\n"
		"  latency --topic T --field F --seconds S [--warmup S]"
		" [--kill-file PATH]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	opts_t o = {.bootstrap = "127.0.0.1:19492",
		    .keys = 10000,
		    .bytes = 200,
		    .partitions = 8,
		    .seed = 42,
		    .field = "ts",
		    .warmup = 2};
	if (argc < 2)
		usage();
	o.cmd = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v && (i++, 1))
		if (ARG("--bootstrap"))
			o.bootstrap = v;
		else if (ARG("--topic"))
			o.topic = v;
		else if (ARG("--in"))
			o.in = v;
		else if (ARG("--out"))
			o.out = v;
		else if (ARG("--group"))
			o.group = v;
		else if (ARG("--field"))
			o.field = v;
		else if (ARG("--kill-file"))
			o.kill_file = v;
		else if (ARG("--count"))
			o.count = strtoll(v, NULL, 10);
		else if (ARG("--rate"))
			o.rate = strtoll(v, NULL, 10);
		else if (ARG("--keys"))
			o.keys = strtoll(v, NULL, 10);
		else if (ARG("--key-by"))
			o.key_by = v;
		else if (ARG("--bytes"))
			o.bytes = atoi(v);
		else if (ARG("--partitions"))
			o.partitions = atoi(v);
		else if (ARG("--seed"))
			o.seed = strtoull(v, NULL, 10);
		else if (ARG("--seconds"))
			o.seconds = atof(v);
		else if (ARG("--warmup"))
			o.warmup = atof(v);
		else if (strcmp(a, "--live") == 0)
			o.live = true;
		else if (strcmp(a, "--txn") == 0)
			o.txn = true;
		else if (strcmp(a, "--no-wake") == 0)
			o.no_wake = true;
		else if (strcmp(a, "--compact") == 0)
			o.compact = true;
		else if (strcmp(a, "--join-check") == 0)
			o.join_check = true;
		else if (ARG("--persons"))
			o.persons = strtoll(v, NULL, 10);
		else if (ARG("--table"))
			o.table = v;
		else
			usage();
#undef ARG
	}
	if (!strcmp(o.cmd, "load") && o.topic)
		return cmd_load(&o);
	if (!strcmp(o.cmd, "load-q3") && o.topic && o.table && o.count > 0)
		return cmd_load_q3(&o);
	if (!strcmp(o.cmd, "copy") && o.in && o.out)
		return cmd_copy(&o);
	if (!strcmp(o.cmd, "topics") && o.topic)
		return cmd_topics(&o);
	if (!strcmp(o.cmd, "delete") && o.topic)
		return cmd_delete(&o);
	if (!strcmp(o.cmd, "count") && o.topic)
		return cmd_count(&o);
	if (!strcmp(o.cmd, "latency") && o.topic && o.seconds > 0)
		return cmd_latency(&o);
	usage();
}
