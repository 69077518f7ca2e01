/* bench_hot.c — three hot-path leftovers of issue 10, each beside a
 * reference in the same process, reported as a cost ratio (CPU per record,
 * per round from paired runs; median of the rounds):
 *
 *   worker    a job attempt (supervisor/worker.c on its thread: poll,
 *             pipeline, sink, the preview ring, positions) over a
 *             generator → select → null sink, against the same source,
 *             pipeline and sink driven directly on this thread (bench_core's
 *             way). The ratio is the worker's own cost per record; the
 *             preview ring is most of it.
 *   kafka_key the Kafka sink writing rows keyed by an int64 column, against
 *             the same rows keyed by a string column holding the same
 *             digits; both into the embedded development cluster (in
 *             process), each run flushed (not timed). CPU of the writing
 *             thread only (encode, key, produce call): librdkafka's own
 *             threads do the same work either way. The ratio is what
 *             rendering a numeric key costs over passing string bytes.
 *   key_text  the Kafka sink's key rendering alone: an int64 to text with
 *             sv_fmt_i64 (what ksnk_key does now) against snprintf("%lld")
 *             (what it did), over the same values; the kafka_key case's
 *             produce call costs ~300 ns a record and its noise hides the
 *             difference, this one isolates it.
 *   cast      select s = cast(id as string), f = cast(amount as string),
 *             against select s = id, f = amount (no cast), over generated
 *             batches; the ratio is the cost of the two casts.
 *   f64_text  the JSON encoder's float printer: the old one (the shortest
 *             of %.15g/%.16g/%.17g that strtod reads back, after a
 *             <= 6-decimal fast path; tests/unit/codec_ref.h) against
 *             sv_fmt_f64 (shortest digits from double-conversion), over
 *             W1's price_eur = price * 0.908 (f64_values).
 *   encode    sv_json_encode_row over W1's output rows (seq, auction,
 *             bidder, price_eur, ts), against the encoder as it was at
 *             173b80a (tests/unit/codec_ref.h: sv_buf call by call, the
 *             old float printer): the whole per-row encode cost.
 *   produce   librdkafka's own cost per produced message on the calling
 *             thread (what the Kafka sink pays per row after encoding),
 *             into the embedded development cluster, four ways:
 *             rd_kafka_producev as the sink called it (no partition, no
 *             timestamp: librdkafka reads its clocks per message, one of
 *             them gettimeofday for the CreateTime), the same with
 *             RD_KAFKA_V_TIMESTAMP read once per batch,
 *             rd_kafka_produce_batch per batch of 2048 with
 *             RD_KAFKA_PARTITION_UA (clocks and topic lock once per batch,
 *             the partitioner still per message: what the sink does now),
 *             and produce_batch into one fixed partition per batch (no
 *             partitioner at all).
 *   sink_w1   the Kafka sink as W1 uses it: W1's output rows (seq,
 *             auction, bidder, price_eur, ts; the encode case's rows) in
 *             2048-row batches, unkeyed, into the embedded development
 *             cluster, CPU of the writing thread (encode + produce), against
 *             encoding the same rows alone into a buffer; the difference is
 *             the sink's produce cost per record. Built from this file
 *             against an older tree's sink, it measures that sink the same
 *             way (the case uses the sink's public interface only).
 *
 * usage: bench_hot [--case NAME]... [--records N] [--rounds R]
 * Reproduce: bench/README.md ("bench_hot"). */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/codec.h"
#include "core/operator.h"
#include "core/util.h"
#include "ingress/spec.h"
#include "kafka/devcluster.h"
#include <librdkafka/rdkafka.h>
#include "sinks/sink.h"
#include "sources/generator.h"
#include "sources/source.h"
#include "supervisor/drivers.h"
#include "supervisor/worker.h"
#include "tests/unit/codec_ref.h"

#define BATCH 2048

typedef struct opts {
	int64_t records;
	int rounds;
	const char *only[8];
	int nonly;
} opts_t;

static void die(const char *what, sv_error_t *err)
{
	fprintf(stderr, "bench_hot: %s: %s\n", what,
		err ? err->message : "failed");
	exit(1);
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* CPU time of the calling thread only: the Kafka case leaves librdkafka's
 * own threads out (their cost does not depend on the key). */
static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct run {
	double cpu, wall;
	int64_t rows;
} run_t;

static sv_schema_t *schema_new(void)
{
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "id", SV_T_INT64, true);
	sv_schema_add(s, "key", SV_T_INT64, true);
	sv_schema_add(s, "amount", SV_T_FLOAT64, true);
	sv_schema_add(s, "ts", SV_T_TIMESTAMP, true);
	return s;
}

static sv_source_t *gen_open(const sv_schema_t *schema, int64_t count)
{
	sv_source_conf_t sc = {.kind = "generator",
			       .job_id = "bench",
			       .attempt = 1,
			       .schema = schema,
			       .generator = "sequence",
			       .count = count,
			       .format = SV_FMT_JSON};
	sv_source_t *src;
	sv_error_t *err = sv_source_open(&sc, &src);
	if (err)
		die("generator", err);
	return src;
}

/* ---- worker ---- */

static const char *const sel_names[] = {"id", "key", "net", "ts"};
static const char *const sel_exprs[] = {"id", "key", "amount * 0.9", "ts"};

typedef struct done {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
} done_t;

static void on_done(void *opaque, sv_worker_t *w)
{
	done_t *d = opaque;
	(void)w;
	pthread_mutex_lock(&d->lock);
	d->done = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

static run_t worker_run(int64_t n)
{
	char spec[1024];
	snprintf(spec, sizeof(spec),
		 "{\"name\": \"bench\", \"source\": {\"kind\": \"generator\", "
		 "\"count\": %lld}, \"schema\": [{\"name\": \"id\", \"type\": "
		 "\"int64\"}, {\"name\": \"key\", \"type\": \"int64\"}, "
		 "{\"name\": \"amount\", \"type\": \"float64\"}, {\"name\": "
		 "\"ts\", \"type\": \"timestamp_ms\"}], \"pipeline\": "
		 "[{\"select\": {\"id\": \"id\", \"key\": \"key\", \"net\": "
		 "\"amount * 0.9\", \"ts\": \"ts\"}}], \"sink\": {\"kind\": "
		 "\"null\"}}",
		 (long long)n);
	sv_jobspec_t *js;
	sv_error_t *err = sv_jobspec_parse_json(spec, strlen(spec),
						sv_registry_drivers(), &js);
	if (err)
		die("spec", err);
	done_t d = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
	sv_obslog_t *obs = sv_obslog_new("bench", 64);
	sv_worker_conf_t wc = {.job_id = "bench",
			       .attempt = 1,
			       .spec = js,
			       .obs = obs,
			       .restore_from = -1,
			       .done = on_done,
			       .opaque = &d};
	sv_worker_t *w;
	double c0 = cpu_s(), t0 = mono_s();
	if ((err = sv_worker_start(&wc, &w)))
		die("worker", err);
	pthread_mutex_lock(&d.lock);
	while (!d.done)
		pthread_cond_wait(&d.cond, &d.lock);
	pthread_mutex_unlock(&d.lock);
	run_t r = {cpu_s() - c0, mono_s() - t0,
		   (int64_t)atomic_load(&sv_worker_stats(w)->records_out)};
	if (sv_worker_end(w) != SV_WORKER_COMPLETED)
		die("worker ended", (sv_error_t *)sv_worker_error(w));
	sv_worker_destroy(w);
	sv_obslog_destroy(obs);
	sv_jobspec_destroy(js);
	return r;
}

/* The same source, select and sink on this thread. */
static run_t direct_run(int64_t n)
{
	sv_schema_t *schema = schema_new();
	sv_pipeline_t *pl = sv_pipeline_new(schema);
	sv_op_t *op;
	sv_error_t *err = sv_op_select_new(schema, 4, sel_names, sel_exprs,
					   &op);
	if (err)
		die("select", err);
	sv_pipeline_add(pl, op);
	sv_sink_conf_t kc = {.kind = "null",
			     .schema = sv_pipeline_out_schema(pl),
			     .key_column = -1};
	sv_sink_t *snk;
	if ((err = sv_sink_open(&kc, &snk)))
		die("null sink", err);
	double c0 = cpu_s(), t0 = mono_s();
	sv_source_t *src = gen_open(schema, n);
	sv_batch_t in;
	sv_batch_init(&in, schema);
	sv_op_ctx_t ctx = {0};
	int64_t rows = 0;
	bool eof = false;
	while (!eof) {
		sv_batch_reset(&in);
		if ((err = sv_source_poll(src, &in, BATCH, 0, &eof)))
			die("poll", err);
		sv_batch_t *out;
		if ((err = sv_pipeline_push(pl, &ctx, &in, &out)))
			die("push", err);
		if (out->nrows && (err = sv_sink_write(snk, out)))
			die("write", err);
		rows += (int64_t)out->nrows;
	}
	run_t r = {cpu_s() - c0, mono_s() - t0, rows};
	sv_batch_release(&in);
	sv_source_close(src);
	sv_sink_close(snk);
	sv_pipeline_destroy(pl);
	sv_schema_destroy(schema);
	return r;
}

/* ---- kafka_key ---- */

typedef struct keyed {
	sv_schema_t *schema; /* id int64, k int64, ks string (k's digits) */
	sv_batch_t b;
	sv_cluster_t cl;
	sv_devcluster_t *dc;
} keyed_t;

static void keyed_open(keyed_t *k)
{
	memset(k, 0, sizeof(*k));
	char *boot = NULL;
	sv_error_t *err = sv_devcluster_start(1, &boot, &k->dc);
	if (err)
		die("development cluster", err);
	if ((err = sv_devcluster_create_topic(k->dc, "bench-key", 4)))
		die("topic", err);
	k->cl = (sv_cluster_t){
		.name = "dev", .bootstrap = boot, .dev_embedded = true};
	k->schema = sv_schema_new();
	sv_schema_add(k->schema, "id", SV_T_INT64, true);
	sv_schema_add(k->schema, "k", SV_T_INT64, true);
	sv_schema_add(k->schema, "ks", SV_T_STRING, true);
	sv_batch_init(&k->b, k->schema);
	for (int64_t i = 0; i < BATCH; i++) {
		sv_value_t *row = sv_batch_add_row(&k->b, NULL);
		int64_t key = 1000000007LL * (i + 1) % 100000000000LL;
		char tmp[24];
		int n = snprintf(tmp, sizeof(tmp), "%lld", (long long)key);
		row[0] = (sv_value_t){.type = SV_T_INT64, .v.i = i};
		row[1] = (sv_value_t){.type = SV_T_INT64, .v.i = key};
		row[2] = (sv_value_t){
			.type = SV_T_STRING,
			.len = (uint32_t)n,
			.v.s = sv_arena_memdup(&k->b.arena, tmp, (size_t)n)};
	}
}

static void keyed_close(keyed_t *k)
{
	sv_batch_release(&k->b);
	sv_schema_destroy(k->schema);
	sv_devcluster_stop(k->dc);
	free(k->cl.bootstrap);
}

static run_t keyed_run(keyed_t *k, int key_column, int64_t n)
{
	sv_sink_conf_t kc = {.kind = "kafka",
			     .job_id = "bench",
			     .attempt = 1,
			     .cluster = &k->cl,
			     .topic = "bench-key",
			     .format = SV_FMT_JSON,
			     .schema = k->schema,
			     .key_column = key_column};
	sv_sink_t *snk;
	sv_error_t *err = sv_sink_open(&kc, &snk);
	if (err)
		die("kafka sink", err);
	double c0 = thread_cpu_s(), t0 = mono_s();
	int64_t rows = 0;
	for (; rows < n; rows += BATCH)
		if ((err = sv_sink_write(snk, &k->b)))
			die("write", err);
	run_t r = {thread_cpu_s() - c0, mono_s() - t0, rows};
	if ((err = sv_sink_flush(snk, 60000)))
		die("flush", err);
	sv_sink_close(snk);
	return r;
}

/* ---- key_text ---- */

static volatile size_t key_sink;

static run_t key_text_run(bool fast, int64_t n)
{
	char tmp[64];
	size_t total = 0;
	double c0 = cpu_s(), t0 = mono_s();
	for (int64_t i = 0; i < n; i++) {
		int64_t v = 1000000007LL * (i + 1) % 100000000000LL;
		total += fast ? sv_fmt_i64(tmp, v)
			      : (size_t)snprintf(tmp, sizeof(tmp), "%lld",
						 (long long)v);
		total += (unsigned char)tmp[0];
	}
	key_sink = total;
	return (run_t){cpu_s() - c0, mono_s() - t0, n};
}

/* ---- f64_text ---- */

#define F64_VALUES 65536

/* W1's price_eur values: price * 0.908, price in cents log-uniform over
 * [100, 1e8) as sources/nexmark.c draws it; ~18% of them have more than
 * 6 decimals (the old printer's slow path). */
static const double *f64_values(void)
{
	static double v[F64_VALUES];
	if (v[0] == 0) {
		uint64_t x = 88172645463325252ULL;
		for (int i = 0; i < F64_VALUES; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			double u = (double)(x >> 11) / 9007199254740992.0;
			int64_t price = (int64_t)floor(
				pow(10.0, u * 6.0) * 100.0 + 0.5);
			v[i] = (double)price * 0.908;
		}
	}
	return v;
}

static run_t f64_text_run(bool fast, int64_t n)
{
	const double *v = f64_values();
	char tmp[64];
	size_t total = 0;
	double c0 = cpu_s(), t0 = mono_s();
	for (int64_t i = 0; i < n; i++) {
		double f = v[i & (F64_VALUES - 1)];
		total += fast ? sv_fmt_f64(tmp, f) : ref_fmt_f64_printf(tmp, f);
		total += (unsigned char)tmp[0];
	}
	key_sink = total;
	return (run_t){cpu_s() - c0, mono_s() - t0, n};
}

/* ---- encode ---- */

static run_t encode_run(bool fast, int64_t n)
{
	const double *fv = f64_values();
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "seq", SV_T_INT64, true);
	sv_schema_add(s, "auction", SV_T_INT64, true);
	sv_schema_add(s, "bidder", SV_T_INT64, true);
	sv_schema_add(s, "price_eur", SV_T_FLOAT64, true);
	sv_schema_add(s, "ts", SV_T_TIMESTAMP, true);
	sv_buf_t out;
	sv_buf_init(&out);
	size_t total = 0;
	double c0 = cpu_s(), t0 = mono_s();
	for (int64_t i = 0; i < n; i++) {
		sv_value_t row[5] = {
			sv_int(i * 3 / 2),
			sv_int(1000 + i % 20),
			sv_int(1000 + i % 17),
			sv_float(fv[i & (F64_VALUES - 1)]),
			sv_ts(1796150616745LL + i / 8),
		};
		if (fast)
			sv_json_encode_row(s, row, &out);
		else
			ref_json_encode_row(s, row, &out);
		if (out.len > 60000) { /* as a sink's batch buffer */
			total += out.len;
			sv_buf_reset(&out);
		}
	}
	key_sink = total + out.len;
	run_t r = {cpu_s() - c0, mono_s() - t0, n};
	sv_buf_release(&out);
	sv_schema_destroy(s);
	return r;
}

/* ---- sink_w1 ---- */

/* The W1 output rows of encode_run, n of them in 2048-row batches, into
 * the Kafka sink (unkeyed), or (sink == false) encoded alone. */
static run_t sink_w1_run(bool sink, int64_t n)
{
	const double *fv = f64_values();
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "seq", SV_T_INT64, true);
	sv_schema_add(s, "auction", SV_T_INT64, true);
	sv_schema_add(s, "bidder", SV_T_INT64, true);
	sv_schema_add(s, "price_eur", SV_T_FLOAT64, true);
	sv_schema_add(s, "ts", SV_T_TIMESTAMP, true);
	sv_batch_t b;
	sv_batch_init(&b, s);
	for (int64_t i = 0; i < BATCH; i++) {
		sv_value_t *row = sv_batch_add_row(&b, NULL);
		row[0] = sv_int(i * 3 / 2);
		row[1] = sv_int(1000 + i % 20);
		row[2] = sv_int(1000 + i % 17);
		row[3] = sv_float(fv[i & (F64_VALUES - 1)]);
		row[4] = sv_ts(1796150616745LL + i / 8);
	}
	sv_devcluster_t *dc = NULL;
	sv_sink_t *snk = NULL;
	sv_cluster_t cl = {0};
	sv_error_t *err;
	if (sink) {
		char *boot = NULL;
		if ((err = sv_devcluster_start(1, &boot, &dc)))
			die("development cluster", err);
		if ((err = sv_devcluster_create_topic(dc, "bench-w1", 8)))
			die("topic", err);
		cl = (sv_cluster_t){
			.name = "dev", .bootstrap = boot, .dev_embedded = true};
		sv_sink_conf_t kc = {.kind = "kafka",
				     .job_id = "bench",
				     .attempt = 1,
				     .cluster = &cl,
				     .topic = "bench-w1",
				     .format = SV_FMT_JSON,
				     .schema = s,
				     .key_column = -1};
		if ((err = sv_sink_open(&kc, &snk)))
			die("kafka sink", err);
	}
	sv_buf_t out;
	sv_buf_init(&out);
	double c0 = thread_cpu_s(), t0 = mono_s();
	int64_t rows = 0;
	for (; rows < n; rows += BATCH) {
		if (sink) {
			if ((err = sv_sink_write(snk, &b)))
				die("write", err);
			continue;
		}
		sv_buf_reset(&out);
		for (size_t r = 0; r < b.nrows; r++)
			sv_json_encode_row(s, sv_batch_row(&b, r), &out);
		key_sink += out.len;
	}
	run_t res = {thread_cpu_s() - c0, mono_s() - t0, rows};
	if (sink) {
		if ((err = sv_sink_flush(snk, 60000)))
			die("flush", err);
		sv_sink_close(snk);
		sv_devcluster_stop(dc);
		free(cl.bootstrap);
	}
	sv_buf_release(&out);
	sv_batch_release(&b);
	sv_schema_destroy(s);
	return res;
}

/* ---- produce ---- */

typedef struct prod {
	sv_devcluster_t *dc;
	rd_kafka_t *rk;
	rd_kafka_topic_t *rkt;
	char payload[128];
	size_t len;
} prod_t;

static void noop_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op)
{
	(void)rk;
	(void)m;
	(void)op;
}

static void prod_open(prod_t *p)
{
	memset(p, 0, sizeof(*p));
	char *boot = NULL, errstr[256];
	sv_error_t *err = sv_devcluster_start(1, &boot, &p->dc);
	if (err)
		die("development cluster", err);
	if ((err = sv_devcluster_create_topic(p->dc, "bench-produce", 8)))
		die("topic", err);
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	static const char *const kv[][2] = {
		{"queue.buffering.max.messages", "2000000"},
		{"queue.buffering.max.kbytes", "1048576"},
		{"linger.ms", "5"},
	};
	rd_kafka_conf_set(conf, "bootstrap.servers", boot, errstr,
			  sizeof(errstr));
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		rd_kafka_conf_set(conf, kv[i][0], kv[i][1], errstr,
				  sizeof(errstr));
	rd_kafka_conf_set_dr_msg_cb(conf, noop_dr);
	p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!p->rk)
		die(errstr, NULL);
	p->rkt = rd_kafka_topic_new(p->rk, "bench-produce", NULL);
	free(boot);
	p->len = (size_t)snprintf(
		p->payload, sizeof(p->payload),
		"{\"seq\":1234567,\"auction\":1011,\"bidder\":1004,"
		"\"price_eur\":97793.416,\"ts\":1796150616745}");
}

static void prod_close(prod_t *p)
{
	rd_kafka_flush(p->rk, 60000);
	rd_kafka_topic_destroy(p->rkt);
	rd_kafka_destroy(p->rk);
	sv_devcluster_stop(p->dc);
}

/* how: 0 producev as the sink, 1 with a per-batch timestamp, 2 batch
 * (RD_KAFKA_PARTITION_UA: the partitioner per message, as the sink now),
 * 3 batch into one partition per batch (no partitioner) */
static run_t prod_run(prod_t *p, int how, int64_t n)
{
	rd_kafka_message_t *msgs = sv_calloc(BATCH, sizeof(*msgs));
	double c0 = thread_cpu_s(), t0 = mono_s();
	int64_t sent = 0;
	while (sent < n) {
		int64_t ts = sv_now_ms();
		if (how >= 2) {
			for (int i = 0; i < BATCH; i++) {
				msgs[i].payload = p->payload;
				msgs[i].len = p->len;
			}
			rd_kafka_produce_batch(
				p->rkt,
				how == 2 ? RD_KAFKA_PARTITION_UA
					 : (int32_t)(sent / BATCH % 8),
				RD_KAFKA_MSG_F_COPY, msgs, BATCH);
		} else {
			for (int i = 0; i < BATCH; i++) {
				if (how == 1)
					rd_kafka_producev(
						p->rk, RD_KAFKA_V_RKT(p->rkt),
						RD_KAFKA_V_MSGFLAGS(
							RD_KAFKA_MSG_F_COPY),
						RD_KAFKA_V_VALUE(p->payload,
								 p->len),
						RD_KAFKA_V_TIMESTAMP(ts),
						RD_KAFKA_V_END);
				else
					rd_kafka_producev(
						p->rk, RD_KAFKA_V_RKT(p->rkt),
						RD_KAFKA_V_MSGFLAGS(
							RD_KAFKA_MSG_F_COPY),
						RD_KAFKA_V_VALUE(p->payload,
								 p->len),
						RD_KAFKA_V_END);
			}
		}
		sent += BATCH;
		rd_kafka_poll(p->rk, 0); /* delivery reports, as the sink */
	}
	run_t r = {thread_cpu_s() - c0, mono_s() - t0, sent};
	free(msgs);
	rd_kafka_flush(p->rk, 60000); /* not timed */
	return r;
}

/* ---- cast ---- */

static run_t cast_run(bool cast, int64_t n)
{
	static const char *const names[] = {"s", "f"};
	static const char *const casts[] = {"cast(id as string)",
					    "cast(amount as string)"};
	static const char *const plain[] = {"id", "amount"};
	sv_schema_t *schema = schema_new();
	sv_source_t *src = gen_open(schema, BATCH);
	sv_batch_t in;
	sv_batch_init(&in, schema);
	bool eof = false;
	sv_error_t *err;
	while (in.nrows < BATCH && !eof)
		if ((err = sv_source_poll(src, &in, BATCH - in.nrows, 0, &eof)))
			die("poll", err);
	sv_pipeline_t *pl = sv_pipeline_new(schema);
	sv_op_t *op;
	if ((err = sv_op_select_new(schema, 2, names, cast ? casts : plain,
				    &op)))
		die("select", err);
	sv_pipeline_add(pl, op);
	sv_op_ctx_t ctx = {0};
	double c0 = cpu_s(), t0 = mono_s();
	int64_t rows = 0;
	for (; rows < n; rows += (int64_t)in.nrows) {
		sv_batch_t *out;
		if ((err = sv_pipeline_push(pl, &ctx, &in, &out)))
			die("push", err);
	}
	run_t r = {cpu_s() - c0, mono_s() - t0, rows};
	sv_pipeline_destroy(pl);
	sv_batch_release(&in);
	sv_source_close(src);
	sv_schema_destroy(schema);
	return r;
}

/* ---- driver ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static bool wanted(const opts_t *o, const char *name)
{
	if (!o->nonly)
		return true;
	for (int i = 0; i < o->nonly; i++)
		if (!strcmp(o->only[i], name))
			return true;
	return false;
}

/* Print one case: each side's best records per CPU-second and the median
 * per-round cost ratio (CPU per record, side a / side b). */
static void report(const char *name, const char *a, const char *b,
		   const run_t *ra, const run_t *rb, int rounds)
{
	double ratio[64], best_a = 0, best_b = 0;
	for (int i = 0; i < rounds; i++) {
		double pa = ra[i].rows / ra[i].cpu, pb = rb[i].rows / rb[i].cpu;
		best_a = pa > best_a ? pa : best_a;
		best_b = pb > best_b ? pb : best_b;
		ratio[i] = (ra[i].cpu / ra[i].rows) / (rb[i].cpu / rb[i].rows);
	}
	qsort(ratio, (size_t)rounds, sizeof(double), cmp_double);
	printf("%-10s %-22s %12.0f rec/CPU-s  %7.1f ns/rec\n", name, a, best_a,
	       1e9 / best_a);
	printf("%-10s %-22s %12.0f rec/CPU-s  %7.1f ns/rec\n", "", b, best_b,
	       1e9 / best_b);
	printf("%-10s cost ratio %s/%s: median %.3f (min %.3f, max %.3f) over "
	       "%d rounds\n\n",
	       "", a, b, ratio[rounds / 2], ratio[0], ratio[rounds - 1],
	       rounds);
	fflush(stdout);
}

/* rounds of run(a_arg) into a against run(!a_arg) into b, alternating
 * which of a pair runs first (the second runs warmer) */
static void alternate(run_t (*run)(bool, int64_t), bool a_arg, int64_t n,
		      int rounds, run_t *a, run_t *b)
{
	for (int i = 0; i < rounds; i++) {
		if (i % 2) {
			b[i] = run(!a_arg, n);
			a[i] = run(a_arg, n);
		} else {
			a[i] = run(a_arg, n);
			b[i] = run(!a_arg, n);
		}
	}
}

int main(int argc, char **argv)
{
	opts_t o = {.records = 4000000, .rounds = 5};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--records") && i + 1 < argc)
			o.records = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			o.rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--case") && i + 1 < argc &&
			 o.nonly < 8)
			o.only[o.nonly++] = argv[++i];
		else {
			fprintf(stderr,
				"usage: bench_hot [--case worker|kafka_key|"
				"key_text|cast|f64_text|encode|sink_w1|produce]"
				"... "
				"[--records N] "
				"[--rounds "
				"R]\n");
			return 2;
		}
	}
	if (o.rounds < 1 || o.rounds > 64 || o.records < BATCH)
		return 2;
	run_t a[64], b[64];
	if (wanted(&o, "worker")) {
		for (int i = 0; i < o.rounds; i++) {
			if (i % 2) {
				b[i] = direct_run(o.records);
				a[i] = worker_run(o.records);
			} else {
				a[i] = worker_run(o.records);
				b[i] = direct_run(o.records);
			}
			if (a[i].rows != o.records || b[i].rows != o.records)
				die("row counts differ", NULL);
		}
		report("worker", "worker", "direct", a, b, o.rounds);
	}
	if (wanted(&o, "kafka_key")) {
		keyed_t k;
		keyed_open(&k);
		int64_t n = o.records / 4; /* produce is ~20x a select */
		for (int i = 0; i < o.rounds; i++) {
			if (i % 2) {
				b[i] = keyed_run(&k, 2, n);
				a[i] = keyed_run(&k, 1, n);
			} else {
				a[i] = keyed_run(&k, 1, n);
				b[i] = keyed_run(&k, 2, n);
			}
		}
		keyed_close(&k);
		report("kafka_key", "int64 key", "string key", a, b, o.rounds);
	}
	if (wanted(&o, "key_text")) {
		for (int i = 0; i < o.rounds; i++) {
			a[i] = key_text_run(false, o.records);
			b[i] = key_text_run(true, o.records);
		}
		report("key_text", "snprintf", "sv_fmt_i64", a, b, o.rounds);
	}
	if (wanted(&o, "cast")) {
		alternate(cast_run, true, o.records, o.rounds, a, b);
		report("cast", "cast to string", "no cast", a, b, o.rounds);
	}
	if (wanted(&o, "f64_text")) {
		int64_t n = o.records / 4; /* the old printer: ~1 us a value */
		alternate(f64_text_run, false, n, o.rounds, a, b);
		report("f64_text", "%.17g search", "sv_fmt_f64", a, b,
		       o.rounds);
	}
	if (wanted(&o, "encode")) {
		int64_t n = o.records / 2;
		alternate(encode_run, false, n, o.rounds, a, b);
		report("encode", "encoder at 173b80a", "sv_json_encode_row", a,
		       b, o.rounds);
	}
	if (wanted(&o, "sink_w1")) {
		int64_t n = o.records / 4;
		alternate(sink_w1_run, true, n, o.rounds, a, b);
		report("sink_w1", "Kafka sink (W1)", "encode only", a, b,
		       o.rounds);
	}
	if (wanted(&o, "produce")) {
		prod_t p;
		prod_open(&p);
		int64_t n = o.records / 8; /* ~0.5-1 us a message */
		run_t c[64], d[64];
		for (int i = 0; i < o.rounds; i++) {
			int first = i % 4;
			for (int j = 0; j < 4; j++) {
				int how = (first + j) % 4;
				run_t r = prod_run(&p, how, n);
				if (how == 0)
					a[i] = r;
				else if (how == 1)
					b[i] = r;
				else if (how == 2)
					c[i] = r;
				else
					d[i] = r;
			}
		}
		prod_close(&p);
		report("produce", "producev (the sink)", "+ batch timestamp", a,
		       b, o.rounds);
		report("", "producev (the sink)", "produce_batch", a, c,
		       o.rounds);
		report("", "producev (the sink)", "batch, one partition", a, d,
		       o.rounds);
	}
	return 0;
}
