/* bench_checkpoint.c — what checkpoints cost (issue 4): the duration of one
 * checkpoint (p50/p99) through the real protocol (supervisor/ckpt.c:
 * operator snapshots, the PREPARED record synced into RocksDB, offsets,
 * the COMMITTED mark, retention) for 10^5 and 10^6 keys of window state, and
 * the throughput overhead of checkpointing every second.
 *
 * References in the same run (ratios, not absolute times):
 *   - duration: one write of the same number of bytes to a file followed by
 *     fdatasync — the floor for making that much state durable once;
 *   - overhead: the same pipeline without checkpoints.
 *
 * Pipeline: sequence generator (key = n % K, 1 ms of event time per row)
 * → keyed tumbling window of one hour (count, sum) → null sink; the state
 * holds K keys once K rows went through.
 *
 * The changed-fraction case (--changed 0.01): K = 10^6 keys of state (a
 * window that never closes), then the input switches to a generator over
 * the first K * fraction keys, so each checkpoint interval changes exactly
 * that fraction of the state (at least K * fraction rows between two
 * checkpoints; at full speed every hot key changes within any second). It
 * runs twice: every checkpoint full (incremental off), and incremental
 * (deltas with the size-bounded full rewrite of supervisor/ckpt.c, chain
 * cap --full-every, default 100) — its p99 counts the full rewrites it
 * makes ("fulls" in the row).
 *
 * --parallelism 2: the changed-fraction case at parallelism 2 instead, the
 * way a standalone job runs it (supervisor/ckpt.c's per-task path): two
 * tasks (partitions 0 and 1), each its own window over the keys of its
 * parity, one task record per task per checkpoint; full every time, then
 * incremental per task (each task's own chain and full-rewrite rule).
 *
 * --state-topic: the parallelism-2 case as distributed mode runs it: the
 * tasks' records also go through the state topic's writer
 * (cluster/state.c sv_state_write: chunks, tombstones, manifest) into a
 * counter instead of Kafka; the row's line after the table row gives the
 * bytes (keys and values) one checkpoint writes to the state topic, p50
 * and max, and its JSON row "state_topic_bytes_p50" and "_max".
 *
 * usage: bench_checkpoint [--keys 100000,1000000] [--checkpoints 20]
 *                         [--seconds 3] [--changed 0.01] [--changed-keys
 *                         1000000] [--full-every 100] [--parallelism 2]
 *                         [--state-topic] [--json PATH]
 *                         (--changed 0: no changed-fraction case)
 * Reproduce: cmake --preset release && cmake --build --preset release
 *            --target bench_checkpoint && build/release/bench_checkpoint */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "checkpoint/store.h"
#include "cluster/state.h"
#include "core/util.h"
#include "core/window.h"
#include "sinks/sink.h"
#include "sources/generator.h"
#include "sources/source.h"
#include "supervisor/ckpt.h"

#define BATCH 2048

typedef struct rig {
	sv_schema_t *schema;
	sv_source_t *src;
	sv_source_t *hot; /* changed-fraction case: the input after the fill */
	sv_pipeline_t *pl;
	sv_sink_t *snk;
	sv_watermarks_t *wm;
	sv_batch_t in;
	/* --parallelism 2: the second task's pipeline, the per-task input
	 * batches and the tasks handed to sv_ckpt_take (pl is task 0's) */
	int par;
	sv_pipeline_t *pl2;
	sv_batch_t tin[2];
	sv_ckpt_task_t tasks[2];
	sv_op_ctx_t ctx;
	sv_opstats_t stats;
	sv_ckstore_t *store;
	sv_obslog_t *obs;
	sv_ckpt_conf_t ck;
	sv_ckpt_incr_t incr;
	char dir[64];
	/* --state-topic: each task's chain on the (counted) state topic */
	bool topic;
	sv_state_chain_t chain[2], next[2];
	int64_t topic_bytes; /* of the last checkpoint */
} rig_t;

static void die(const char *what, sv_error_t *err)
{
	fprintf(stderr, "bench_checkpoint: %s: %s\n", what,
		err ? err->message : "");
	exit(1);
}

/* hot_keys > 0: the changed-fraction case (a window that never closes, a
 * second generator over keys 0..hot_keys-1); full_every > 1: incremental. */
/* A keyed tumbling window of size_ms (count, sum) over the rig's input. */
static sv_pipeline_t *window_pipeline(rig_t *r, int64_t size_ms)
{
	sv_pipeline_t *pl = sv_pipeline_new(r->schema);
	const char *k[] = {"key"}, *an[] = {"n", "total"};
	const char *ae[] = {"count()", "sum(amount)"};
	sv_window_spec_t ws = {.type = SV_WIN_TUMBLING,
			       .size_ms = size_ms,
			       .nkeys = 1,
			       .keys = k,
			       .naggs = 2,
			       .agg_names = an,
			       .agg_exprs = ae};
	sv_op_t *op;
	sv_error_t *err = sv_op_window_new(r->schema, &ws, &op);
	if (err)
		die("window", err);
	sv_pipeline_add(pl, op);
	return pl;
}

static void rig_open(rig_t *r, long keys, long hot_keys, int full_every,
		     int par)
{
	sv_error_t *err;
	memset(r, 0, sizeof(*r));
	r->schema = sv_schema_new();
	sv_schema_add(r->schema, "id", SV_T_INT64, false);
	sv_schema_add(r->schema, "key", SV_T_INT64, false);
	sv_schema_add(r->schema, "amount", SV_T_FLOAT64, false);
	sv_schema_add(r->schema, "ts", SV_T_TIMESTAMP, false);
	sv_source_conf_t sc = {.kind = "generator",
			       .job_id = "bench",
			       .format = SV_FMT_JSON,
			       .schema = r->schema,
			       .generator = "sequence",
			       .count = -1,
			       .seed = 42};
	if ((err = sv_source_open(&sc, &r->src)))
		die("generator", err);
	sv_generator_options_t go;
	sv_generator_options_default(&go);
	go.keys = keys;
	if ((err = sv_generator_set_options(r->src, &go)))
		die("generator options", err);
	if (hot_keys > 0) {
		if ((err = sv_source_open(&sc, &r->hot)))
			die("generator", err);
		go.keys = hot_keys;
		if ((err = sv_generator_set_options(r->hot, &go)))
			die("generator options", err);
	}
	int64_t size_ms = hot_keys > 0 ? 1000000000000LL : 3600000;
	r->pl = window_pipeline(r, size_ms);
	sv_sink_conf_t kc = {.kind = "null",
			     .job_id = "bench",
			     .format = SV_FMT_JSON,
			     .schema = sv_pipeline_out_schema(r->pl),
			     .key_column = -1};
	if ((err = sv_sink_open(&kc, &r->snk)))
		die("null sink", err);
	r->wm = sv_watermarks_new(0, 0);
	sv_batch_init(&r->in, r->schema);
	r->par = par > 1 ? 2 : 1;
	if (r->par == 2) {
		r->pl2 = window_pipeline(r, size_ms);
		for (int i = 0; i < 2; i++) {
			sv_batch_init(&r->tin[i], r->schema);
			r->tasks[i] = (sv_ckpt_task_t){
				.partition = i,
				.pl = i ? r->pl2 : r->pl,
				.wm = r->wm,
			};
		}
	}
	r->ctx = (sv_op_ctx_t){.watermark_ms = SV_WATERMARK_NONE,
			       .stats = &r->stats};
	snprintf(r->dir, sizeof(r->dir), "/tmp/sv-bench-ck-XXXXXX");
	if (!mkdtemp(r->dir))
		die("mkdtemp", NULL);
	if ((err = sv_ckstore_open(r->dir, &r->store)))
		die("store", err);
	r->obs = sv_obslog_new("bench", 100);
	r->ck = (sv_ckpt_conf_t){.store = r->store,
				 .job_id = "bench",
				 .plan_id = "bench",
				 .topic = "",
				 .attempt = 1,
				 .retain = 3,
				 .obs = r->obs,
				 .restore_from = -1};
	if (full_every > 1) {
		r->incr = (sv_ckpt_incr_t){.full_every = full_every};
		r->ck.incr = &r->incr;
	}
}

/* After the fill: the input becomes the hot generator. */
static void rig_go_hot(rig_t *r)
{
	if (!r->hot)
		return;
	sv_source_close(r->src);
	r->src = r->hot;
	r->hot = NULL;
}

static void rig_close(rig_t *r)
{
	sv_ckstore_close(r->store);
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", r->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_checkpoint: cannot remove %s\n", r->dir);
	sv_obslog_destroy(r->obs);
	sv_batch_release(&r->in);
	sv_watermarks_destroy(r->wm);
	sv_sink_close(r->snk);
	sv_pipeline_destroy(r->pl);
	if (r->pl2) {
		sv_pipeline_destroy(r->pl2);
		sv_batch_release(&r->tin[0]);
		sv_batch_release(&r->tin[1]);
	}
	sv_source_close(r->src);
	if (r->hot)
		sv_source_close(r->hot);
	sv_schema_destroy(r->schema);
}

/* Parallelism 2: the rows of r->in through the task of their key's
 * parity, the output to the sink. */
static void step_tasks(rig_t *r)
{
	sv_error_t *err;
	size_t nf = r->schema->nfields;
	for (int t = 0; t < 2; t++)
		sv_batch_reset(&r->tin[t]);
	for (size_t i = 0; i < r->in.nrows; i++) {
		const sv_value_t *row = sv_batch_row(&r->in, i);
		int t = (int)(row[1].v.i & 1);
		sv_rowmeta_t *m;
		sv_value_t *to = sv_batch_add_row(&r->tin[t], &m);
		memcpy(to, row, nf * sizeof(*to)); /* no strings */
		*m = r->in.meta[i];
	}
	sv_pipeline_t *pls[2] = {r->pl, r->pl2};
	for (int t = 0; t < 2; t++) {
		sv_batch_t *out;
		if ((err = sv_pipeline_push(pls[t], &r->ctx, &r->tin[t], &out)))
			die("push", err);
		if ((err = sv_sink_write(r->snk, out)))
			die("sink", err);
		if ((err = sv_pipeline_advance(pls[t], &r->ctx, &out)))
			die("advance", err);
		if ((err = sv_sink_write(r->snk, out)))
			die("sink", err);
	}
}

/* --state-topic: what one record costs the broker (key and value). */
static sv_error_t *topic_count(void *opaque, const char *key, size_t klen,
			       const char *val, size_t vlen)
{
	(void)key;
	(void)val;
	*(int64_t *)opaque += (int64_t)(klen + vlen);
	return NULL;
}

/* --state-topic: distributed mode's hook, each task record through the
 * state topic's writer (worker.c gm_on_tasks without the sink). */
static sv_error_t *topic_on_tasks(void *opaque, int64_t id,
				  const sv_ckrec_t *const *recs, size_t n)
{
	rig_t *r = opaque;
	char tag[64];
	snprintf(tag, sizeof(tag), "bench-t0:%lld", (long long)id);
	r->topic_bytes = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = streamvisor__checkpoint_record__get_packed_size(
			recs[i]);
		char *buf = sv_malloc(len ? len : 1);
		streamvisor__checkpoint_record__pack(recs[i], (uint8_t *)buf);
		sv_state_put_t put = {.partition = (int32_t)i,
				      .tag = tag,
				      .checkpoint = id,
				      .next_offset = 0,
				      .delta_of = recs[i]->delta_of,
				      .rec = buf,
				      .len = len,
				      .emit = topic_count,
				      .opaque = &r->topic_bytes};
		sv_error_t *err = sv_state_write(&r->chain[i], &put,
						 &r->next[i]);
		free(buf);
		if (err)
			return err;
	}
	return NULL;
}

/* One checkpoint through sv_ckpt_take: the parallelism-1 record, or at
 * parallelism 2 member 0 of 2 with both tasks. */
static void rig_take(rig_t *r, sv_ckpt_info_t *info)
{
	sv_ckpt_parts_t p = {r->src, r->snk, r->pl, r->wm};
	if (r->par == 2) {
		p.tasks = r->tasks;
		p.ntasks = 2;
		p.member = 0;
		p.parallelism = 2;
	}
	if (r->par == 2 && r->topic) {
		p.grouped = true;
		p.on_tasks = topic_on_tasks;
		p.tasks_opaque = r;
		p.task_deltas_max = SV_STATE_CHAIN_MAX - 1;
	}
	sv_error_t *err = sv_ckpt_take(&r->ck, &p, r->ctx.watermark_ms, info);
	if (err)
		die("checkpoint", err);
	for (int i = 0; r->topic && i < 2; i++)
		r->chain[i] = r->next[i];
}

/* One batch through the pipeline; returns rows read. */
static size_t step(rig_t *r)
{
	bool eof;
	sv_error_t *err;
	sv_batch_reset(&r->in);
	if ((err = sv_source_poll(r->src, &r->in, BATCH, 0, &eof)))
		die("poll", err);
	int64_t mono = sv_mono_ms();
	for (size_t i = 0; i < r->in.nrows; i++) {
		sv_rowmeta_t *m = &r->in.meta[i];
		m->event_ms = sv_batch_row(&r->in, i)[3].v.i;
		sv_watermarks_observe(r->wm, m->partition, m->event_ms, mono);
	}
	if (r->par == 2) {
		r->ctx.watermark_ms = sv_watermarks_current(r->wm, mono);
		step_tasks(r);
		return r->in.nrows;
	}
	sv_batch_t *out;
	if ((err = sv_pipeline_push(r->pl, &r->ctx, &r->in, &out)))
		die("push", err);
	if ((err = sv_sink_write(r->snk, out)))
		die("sink", err);
	r->ctx.watermark_ms = sv_watermarks_current(r->wm, mono);
	if ((err = sv_pipeline_advance(r->pl, &r->ctx, &out)))
		die("advance", err);
	if ((err = sv_sink_write(r->snk, out)))
		die("sink", err);
	return r->in.nrows;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(double), cmp_d);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Rows per CPU-second over `seconds`, checkpointing every 1 s or never. */
static double throughput(rig_t *r, double seconds, bool checkpoints, int *taken)
{
	double c0 = cpu_s();
	int64_t t0 = sv_mono_ms(), next = t0 + 1000;
	uint64_t rows = 0;
	*taken = 0;
	while (sv_mono_ms() - t0 < (int64_t)(seconds * 1000)) {
		rows += step(r);
		if (checkpoints && sv_mono_ms() >= next) {
			sv_ckpt_info_t info;
			rig_take(r, &info);
			(*taken)++;
			next = sv_mono_ms() + 1000;
		}
	}
	double c = cpu_s() - c0;
	return (double)rows / (c > 0 ? c : 1e-9);
}

int main(int argc, char **argv)
{
	long keys_list[8] = {100000, 1000000};
	int nkeys = 2, nck = 20;
	double seconds = 3;
	const char *json_path = NULL;
	double changed = 0.01;
	long changed_keys = 1000000;
	int par = 1;
	int full_every = 100;
	bool topic = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--keys") && i + 1 < argc) {
			nkeys = 0;
			for (char *t = strtok(argv[++i], ","); t && nkeys < 8;
			     t = strtok(NULL, ","))
				keys_list[nkeys++] = atol(t);
		} else if (!strcmp(argv[i], "--checkpoints") && i + 1 < argc) {
			nck = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--changed") && i + 1 < argc) {
			changed = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--changed-keys") && i + 1 < argc) {
			changed_keys = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--full-every") && i + 1 < argc) {
			full_every = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--parallelism") && i + 1 < argc) {
			par = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--state-topic")) {
			topic = true;
			par = 2;
		} else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json_path = argv[++i];
		} else {
			fprintf(stderr,
				"usage: bench_checkpoint [--keys N,M] "
				"[--checkpoints N] [--seconds S] [--changed F] "
				"[--changed-keys N] [--full-every N] "
				"[--parallelism 1|2] [--state-topic] [--json "
				"PATH]\n");
			return 2;
		}
	}
	if (nck < 2)
		nck = 2;
	FILE *js = json_path ? fopen(json_path, "w") : NULL;
	if (js)
		fprintf(js, "[");
	printf("| state keys | changed per interval | checkpoints | state MB "
	       "| written MB (p50) | checkpoint p50 ms | p99 ms | max ms | "
	       "fsync'd write of the written bytes p50 ms | ratio | rows/cpu-s "
	       "no checkpoints | with 1/s | overhead |\n|---:|---:|---|---:|"
	       "---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	/* cases: the --keys list (full state changes, every checkpoint full),
	 * then the changed-fraction case full and incremental */
	int ncases = nkeys + (changed > 0 ? 2 : 0);
	for (int k = 0; k < ncases; k++) {
		bool frac = k >= nkeys;
		bool incr = frac && k == nkeys + 1;
		long keys = frac ? changed_keys : keys_list[k];
		long hot = frac ? (long)(changed_keys * changed + 0.5) : 0;
		if (frac && hot < 1)
			hot = 1;
		rig_t r;
		rig_open(&r, keys, hot, incr ? full_every : 0, frac ? par : 1);
		r.topic = frac && topic;
		for (int i = 0; i < 2; i++)
			sv_state_chain_unknown(&r.chain[i]);
		/* fill: every key twice */
		uint64_t rows = 0;
		while (rows < 2 * (uint64_t)keys)
			rows += step(&r);
		double base_ms = 0;
		if (frac) {
			/* the chain's first full snapshot, before the measure */
			sv_ckpt_info_t info;
			int64_t t0 = sv_mono_ns();
			rig_take(&r, &info);
			base_ms = (double)(sv_mono_ns() - t0) / 1e6;
			rig_go_hot(&r);
		}
		double *wb = calloc((size_t)nck, sizeof(double));
		double *d = calloc((size_t)nck, sizeof(double));
		double *ref = calloc((size_t)nck, sizeof(double));
		double *tb = calloc((size_t)nck, sizeof(double));
		int64_t bytes = 0;
		for (int i = 0; i < nck; i++) {
			uint64_t n = step(&r);
			while (frac && n < (uint64_t)hot)
				n += step(&r);
			sv_ckpt_info_t info;
			int64_t t0 = sv_mono_ns();
			rig_take(&r, &info);
			d[i] = (double)(sv_mono_ns() - t0) / 1e6;
			bytes = info.bytes;
			wb[i] = (double)bytes;
			tb[i] = (double)r.topic_bytes;
			/* reference: the same bytes, written and synced once */
			char path[96];
			snprintf(path, sizeof(path), "%s/ref.bin", r.dir);
			char *buf = calloc(1, (size_t)bytes + 1);
			t0 = sv_mono_ns();
			int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || write(fd, buf, (size_t)bytes) != bytes ||
			    fdatasync(fd))
				die("reference write", NULL);
			close(fd);
			ref[i] = (double)(sv_mono_ns() - t0) / 1e6;
			free(buf);
			unlink(path);
		}
		double p50 = pct(d, nck, 0.5), p99 = pct(d, nck, 0.99);
		double dmax = pct(d, nck, 1.0), w50 = pct(wb, nck, 0.5);
		int64_t fulls0 = r.incr.fulls;
		double r50 = pct(ref, nck, 0.5);
		/* overhead: interleaved, best of 2 each */
		double none = 0, with = 0;
		int taken = 0, t;
		for (int round = 0; round < 2; round++) {
			double a = throughput(&r, seconds, false, &t);
			double b = throughput(&r, seconds, true, &t);
			if (a > none)
				none = a;
			if (b > with) {
				with = b;
				taken = t;
			}
		}
		uint64_t sbytes = 0, skeys = 0;
		sv_pipeline_state_size(r.pl, &sbytes, &skeys);
		if (r.pl2) {
			uint64_t b2 = 0, k2 = 0;
			sv_pipeline_state_size(r.pl2, &b2, &k2);
			sbytes += b2;
			skeys += k2;
		}
		char chg[64], mode[64];
		if (frac)
			snprintf(chg, sizeof(chg), "%g (%ld keys)", changed,
				 hot);
		else
			snprintf(chg, sizeof(chg), "all");
		/* at parallelism 2 every checkpoint writes 2 task records and
		 * the base was 2 fulls */
		int rp = frac ? r.par : 1;
		if (incr)
			snprintf(mode, sizeof(mode),
				 "incremental, %lld full of %d%s",
				 (long long)(fulls0 - rp), nck * rp,
				 rp == 2 ? " task records, p2" : "");
		else
			snprintf(mode, sizeof(mode), "full%s",
				 rp == 2 ? ", p2" : "");
		printf("| %ld | %s | %s | %.1f | %.2f | %.1f | %.1f | %.1f | "
		       "%.1f | %.1fx | %.2fM | %.2fM | %.1f%% |\n",
		       keys, chg, mode, (double)sbytes / 1e6, w50 / 1e6, p50,
		       p99, dmax, r50, p50 / (r50 > 0 ? r50 : 1e-9), none / 1e6,
		       with / 1e6, 100.0 * (1.0 - with / none));
		double t50 = pct(tb, nck, 0.5), tmax = pct(tb, nck, 1.0);
		if (r.topic)
			printf("|  | state topic (%s): written per checkpoint "
			       "p50 %.3f MB, max %.3f MB |\n",
			       incr ? "incremental" : "full", t50 / 1e6,
			       tmax / 1e6);
		fflush(stdout);
		if (js) {
			fprintf(js,
				"%s{\"state_keys\":%ld,\"state_bytes\":%lld,"
				"\"checkpoint_p50_ms\":%.3f,\"checkpoint_p99_"
				"ms\":%.3f,"
				"\"reference_fsync_p50_ms\":%.3f,"
				"\"rows_per_cpu_s_no_checkpoints\":%.0f,"
				"\"rows_per_cpu_s_checkpoint_1s\":%.0f,"
				"\"checkpoints_in_overhead_run\":%d",
				k ? "," : "", keys, (long long)bytes, p50, p99,
				r50, none, with, taken);
			if (frac)
				fprintf(js,
					",\"changed_fraction\":%g,"
					"\"incremental\":%s,"
					"\"checkpoint_max_ms\":%.3f,"
					"\"written_bytes_p50\":%.0f,"
					"\"state_memory_bytes\":%llu,"
					"\"full_snapshots_measured\":%lld,"
					"\"base_full_ms\":%.3f,"
					"\"parallelism\":%d",
					changed, incr ? "true" : "false", dmax,
					w50, (unsigned long long)sbytes,
					incr ? (long long)(fulls0 - rp)
					     : (long long)nck * rp,
					base_ms, rp);
			if (r.topic)
				fprintf(js,
					",\"state_topic_bytes_p50\":%.0f,"
					"\"state_topic_bytes_max\":%.0f",
					t50, tmax);
			fprintf(js, "}");
		}
		free(wb);
		free(tb);
		free(d);
		free(ref);
		rig_close(&r);
	}
	if (js) {
		fprintf(js, "]\n");
		fclose(js);
	}
	return 0;
}
