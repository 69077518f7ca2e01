/* bench_core.c — the execution core alone, single-threaded: the generator
 * source, filter and select, keyed tumbling and sliding windows, a null
 * sink, driven the way supervisor/worker.c drives them (poll a batch, note
 * each row's event time in the per-partition watermarks, push the batch
 * through the pipeline, advance the pipeline when the combined watermark
 * moved, finish at the end). No Kafka, no checkpoints, no threads.
 *
 * Stages (same input everywhere: the "sequence" generator over the schema
 * id int64, key int64 (id % keys), amount float64 ((id % 1000) / 10),
 * ts timestamp_ms (one ms per row), 4 partitions):
 *   1 gen       generator → null sink
 *   2 filter    + filter "amount >= 25.0 && id % 7 != 0" (keeps ~64%)
 *               + select key, ts, net = amount * 0.9
 *   3 tumbling  + tumbling window (--tumble-ms, 60 s) by key:
 *               n = count(), total = sum(net)
 *   4 sliding   + sliding window 10 s, slide 2 s, same key and aggregates
 *
 * Every stage runs side by side with a reference in the same process: a
 * hand-written C loop that generates the same rows into packed structs and
 * applies the same predicate, projection and aggregation (an open-addressing
 * table per open window, keyed by the int64 key; a record of a sliding
 * window is added to each of its size/slide windows), firing windows on the
 * same watermark rule (end - 1 <= max event time - 1). It is the floor:
 * what a loop specialised for this one query costs. The figure to look at is
 * the cost ratio streamvisor / reference, taken per round from the paired
 * runs (machines are noisy; ratios of neighbouring runs are not).
 *
 * Before timing, every stage runs both ways over the same rows with an
 * order-independent digest of the output (rows, integer sums, a hash sum,
 * the float sum to 1e-9); a mismatch aborts, so a fast but wrong side shows
 * up. Window counts must add up to the filtered rows (x size/slide for the
 * sliding window), so an empty output cannot pass either.
 *
 * Timing: each run stops after --records rows or --seconds of wall time,
 * whichever comes first (checked per batch); runs are interleaved (every
 * stage, both sides, per round, the side that goes first alternating) for
 * --rounds rounds; best and median are reported. CPU is getrusage user+sys,
 * so "per core" is records per CPU-second. Time inside the generator is
 * measured per batch on both sides, to also give the cost without it.
 *
 * usage: bench_core [--records N] [--seconds S] [--rounds R] [--batch B]
 *                   [--keys K] [--tumble-ms MS] [--json PATH]
 * Reproduce: bench/README.md. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/operator.h"
#include "core/watermark.h"
#include "core/window.h"
#include "sinks/sink.h"
#include "sources/generator.h"
#include "sources/source.h"

#define NSTAGES 4
#define MAX_ROUNDS 50
#define SLIDE_SIZE_MS 10000
#define SLIDE_MS 2000
#define FILTER_EXPR "amount >= 25.0 && id % 7 != 0"
#define NET_EXPR "amount * 0.9"
#define CHECK_RECORDS 400000

enum {
	ST_GEN = 0,
	ST_FILTER,
	ST_TUMBLE,
	ST_SLIDE
};

static const char *const stage_names[NSTAGES] = {"gen", "filter+select",
						 "tumbling", "sliding"};
static const char *const stage_desc[NSTAGES] = {
	"generator → null", "generator → filter → select → null",
	"… → tumbling window count/sum by key → null",
	"… → sliding window (10 s / 2 s) count/sum by key → null"};

typedef struct opts {
	int64_t records;
	double seconds;
	int rounds;
	size_t batch;
	int64_t keys;
	int64_t tumble_ms;
	const char *json;
	unsigned stages; /* bit per stage to run */
} opts_t;

/* Order-independent summary of a stage's output. */
typedef struct digest {
	uint64_t rows;
	int64_t isum; /* gen: sum id; filter: sum key; windows: sum n */
	double fsum; /* filter: sum net; windows: sum total */
	uint64_t hsum; /* sum of a hash of each row's integer cells */
} digest_t;

typedef struct run {
	uint64_t records;
	uint64_t out_rows;
	double wall_s;
	double cpu_s;
	double gen_s; /* wall time inside the generator */
} run_t;

static void die(const char *what, sv_error_t *err)
{
	fprintf(stderr, "bench_core: %s: %s\n", what,
		err ? err->message : "failed");
	exit(1);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t hash3(int64_t a, int64_t b, int64_t c)
{
	return mix64((uint64_t)a ^ mix64((uint64_t)b ^ mix64((uint64_t)c)));
}

static inline void digest_gen(digest_t *d, int64_t id, int64_t key, int64_t ts)
{
	d->rows++;
	d->isum += id;
	d->hsum += hash3(id, key, ts);
}

static inline void digest_sel(digest_t *d, int64_t key, int64_t ts, double net)
{
	d->rows++;
	d->isum += key;
	d->fsum += net;
	d->hsum += hash3(key, ts, 0);
}

static inline void digest_win(digest_t *d, int64_t key, int64_t start,
			      int64_t end, int64_t n, double total)
{
	d->rows++;
	d->isum += n;
	d->fsum += total;
	d->hsum += hash3(key, start, end) ^ mix64((uint64_t)n);
}

/* ==== streamvisor ==== */

typedef struct sv_side {
	sv_schema_t *schema;
	sv_source_t *src;
	sv_pipeline_t *pl;
	sv_sink_t *snk;
	sv_watermarks_t *wm;
	bool windowed;
	int stage;
	digest_t *dg; /* NULL when timing */
} sv_side_t;

static sv_schema_t *make_schema(void)
{
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "id", SV_T_INT64, false);
	sv_schema_add(s, "key", SV_T_INT64, false);
	sv_schema_add(s, "amount", SV_T_FLOAT64, false);
	sv_schema_add(s, "ts", SV_T_TIMESTAMP, false);
	return s;
}

static void sv_side_open(sv_side_t *sd, int stage, const opts_t *o)
{
	sv_error_t *err;
	memset(sd, 0, sizeof(*sd));
	sd->stage = stage;
	sd->schema = make_schema();
	sv_source_conf_t sc = {
		.kind = "generator",
		.job_id = "bench",
		.format = SV_FMT_JSON,
		.schema = sd->schema,
		.generator = "sequence",
		.count = -1,
		.rate_per_s = 0,
		.seed = 42,
	};
	if ((err = sv_source_open(&sc, &sd->src)))
		die("open generator", err);
	sv_generator_options_t go;
	sv_generator_options_default(&go);
	go.keys = o->keys;
	if ((err = sv_generator_set_options(sd->src, &go)))
		die("generator options", err);

	sd->pl = sv_pipeline_new(sd->schema);
	if (stage >= ST_FILTER) {
		sv_op_t *op;
		if ((err = sv_op_filter_new(sd->schema, FILTER_EXPR, &op)))
			die("filter", err);
		sv_pipeline_add(sd->pl, op);
		const char *names[] = {"key", "ts", "net"};
		const char *exprs[] = {"key", "ts", NET_EXPR};
		if ((err = sv_op_select_new(sv_pipeline_out_schema(sd->pl), 3,
					    names, exprs, &op)))
			die("select", err);
		sv_pipeline_add(sd->pl, op);
	}
	if (stage >= ST_TUMBLE) {
		const char *keys[] = {"key"};
		const char *agg_names[] = {"n", "total"};
		const char *agg_exprs[] = {"count()", "sum(net)"};
		sv_window_spec_t ws = {
			.type = stage == ST_TUMBLE ? SV_WIN_TUMBLING
						   : SV_WIN_SLIDING,
			.size_ms = stage == ST_TUMBLE ? o->tumble_ms
						      : SLIDE_SIZE_MS,
			.slide_ms = stage == ST_TUMBLE ? 0 : SLIDE_MS,
			.nkeys = 1,
			.keys = keys,
			.naggs = 2,
			.agg_names = agg_names,
			.agg_exprs = agg_exprs,
		};
		sv_op_t *op;
		if ((err = sv_op_window_new(sv_pipeline_out_schema(sd->pl), &ws,
					    &op)))
			die("window", err);
		sv_pipeline_add(sd->pl, op);
		sd->windowed = true;
		sd->wm = sv_watermarks_new(0, 0);
		const sv_partpos_t *pos;
		size_t npos = sv_source_positions(sd->src, &pos);
		for (size_t i = 0; i < npos; i++)
			sv_watermarks_add_partition(sd->wm, pos[i].partition,
						    sv_mono_ms());
	}
	sv_sink_conf_t kc = {
		.kind = "null",
		.job_id = "bench",
		.format = SV_FMT_JSON,
		.schema = sv_pipeline_out_schema(sd->pl),
		.key_column = -1,
	};
	if ((err = sv_sink_open(&kc, &sd->snk)))
		die("open null sink", err);
}

static void sv_side_close(sv_side_t *sd)
{
	sv_sink_close(sd->snk);
	sv_pipeline_destroy(sd->pl);
	sv_watermarks_destroy(sd->wm);
	sv_source_close(sd->src);
	sv_schema_destroy(sd->schema);
}

static void sv_digest_batch(const sv_side_t *sd, const sv_batch_t *b)
{
	for (size_t r = 0; r < b->nrows; r++) {
		const sv_value_t *v = sv_batch_row(b, r);
		if (sd->stage == ST_GEN)
			digest_gen(sd->dg, v[0].v.i, v[1].v.i, v[3].v.i);
		else if (sd->stage == ST_FILTER)
			digest_sel(sd->dg, v[0].v.i, v[1].v.i, v[2].v.f);
		else
			digest_win(sd->dg, v[0].v.i, v[1].v.i, v[2].v.i,
				   v[3].v.i, v[4].v.f);
	}
}

static uint64_t sv_emit(sv_side_t *sd, const sv_batch_t *b)
{
	sv_error_t *err = sv_sink_write(sd->snk, b);
	if (err)
		die("null sink", err);
	if (sd->dg)
		sv_digest_batch(sd, b);
	return b->nrows;
}

static run_t sv_run(int stage, const opts_t *o, int64_t max_records,
		    double max_s, digest_t *dg)
{
	sv_side_t sd;
	sv_side_open(&sd, stage, o);
	sd.dg = dg;
	sv_opstats_t stats = {0};
	sv_op_ctx_t ctx = {.watermark_ms = SV_WATERMARK_NONE, .stats = &stats};
	sv_batch_t in;
	sv_batch_init(&in, sd.schema);
	sv_error_t *err;
	run_t rr = {0};

	double c0 = cpu_s(), t0 = mono_s(), t = t0;
	while ((int64_t)rr.records < max_records && t - t0 < max_s) {
		bool eof;
		sv_batch_reset(&in);
		if ((err = sv_source_poll(sd.src, &in, o->batch, 0, &eof)))
			die("poll", err);
		double tg = mono_s();
		rr.gen_s += tg - t;
		int64_t mono = sv_mono_ms();
		ctx.now_ms = sv_now_ms();
		if (sd.windowed)
			for (size_t r = 0; r < in.nrows; r++)
				sv_watermarks_observe(
					sd.wm, in.meta[r].partition,
					in.meta[r].event_ms, mono);
		sv_batch_t *out;
		if ((err = sv_pipeline_push(sd.pl, &ctx, &in, &out)))
			die("push", err);
		rr.out_rows += sv_emit(&sd, out);
		if (sd.windowed) {
			int64_t wm = sv_watermarks_current(sd.wm, mono);
			if (wm != ctx.watermark_ms) {
				ctx.watermark_ms = wm;
				if ((err = sv_pipeline_advance(sd.pl, &ctx,
							       &out)))
					die("advance", err);
				rr.out_rows += sv_emit(&sd, out);
			}
		}
		rr.records += in.nrows;
		t = mono_s();
	}
	if (sd.windowed) {
		sv_batch_t *out;
		if ((err = sv_pipeline_finish(sd.pl, &ctx, &out)))
			die("finish", err);
		rr.out_rows += sv_emit(&sd, out);
	}
	rr.wall_s = mono_s() - t0;
	rr.cpu_s = cpu_s() - c0;
	if (stats.records_late)
		fprintf(stderr,
			"bench_core: %llu late records (none expected)\n",
			(unsigned long long)stats.records_late);
	sv_batch_release(&in);
	sv_side_close(&sd);
	return rr;
}

/* ==== reference: a plain C loop specialised for this query ==== */

typedef struct gen_row {
	int64_t id, key;
	double amount;
	int64_t ts;
} gen_row_t;

typedef struct sel_row {
	int64_t key, ts;
	double net;
} sel_row_t;

typedef struct win_row {
	int64_t key, start, end, n;
	double total;
} win_row_t;

typedef struct agg {
	int64_t n;
	double sum;
} agg_t;

/* One open window: open addressing on the key, plus the list of used slots
 * so firing touches only what is there. */
typedef struct rwin {
	int64_t start;
	bool open;
	size_t cap, count; /* cap: power of two */
	int64_t *keys;
	agg_t *aggs;
	uint8_t *used;
	uint32_t *slots; /* used slots, in insertion order */
} rwin_t;

typedef struct ref_side {
	int stage;
	int64_t keys;
	int64_t size, slide;
	rwin_t *wins;
	size_t nwins;
	int64_t fired_to; /* windows with end - 1 <= this are out */
	gen_row_t *gen;
	sel_row_t *sel;
	win_row_t *out;
	size_t outcap;
	digest_t *dg;
	uint64_t late;
} ref_side_t;

/* The sink of the reference: consumes the rows so no work is optimised
 * away. */
static volatile uint64_t ref_sunk;
__attribute__((noinline)) static void ref_sink(const void *rows, size_t n)
{
	__asm__ volatile("" : : "r"(rows) : "memory");
	ref_sunk += n;
}

static void rwin_init(rwin_t *w, size_t cap)
{
	memset(w, 0, sizeof(*w));
	w->cap = cap;
	w->keys = sv_malloc(cap * sizeof(int64_t));
	w->aggs = sv_malloc(cap * sizeof(agg_t));
	w->used = sv_calloc(cap, 1);
	w->slots = sv_malloc(cap * sizeof(uint32_t));
}

static void rwin_release(rwin_t *w)
{
	free(w->keys);
	free(w->aggs);
	free(w->used);
	free(w->slots);
}

static void rwin_grow(rwin_t *w)
{
	rwin_t bigger;
	rwin_init(&bigger, w->cap * 2);
	bigger.start = w->start;
	bigger.open = w->open;
	size_t mask = bigger.cap - 1;
	for (size_t i = 0; i < w->count; i++) {
		uint32_t s = w->slots[i];
		size_t j = (size_t)mix64((uint64_t)w->keys[s]) & mask;
		while (bigger.used[j])
			j = (j + 1) & mask;
		bigger.used[j] = 1;
		bigger.keys[j] = w->keys[s];
		bigger.aggs[j] = w->aggs[s];
		bigger.slots[bigger.count++] = (uint32_t)j;
	}
	rwin_release(w);
	*w = bigger;
}

static inline void rwin_add(rwin_t *w, int64_t key, double v)
{
	size_t mask = w->cap - 1;
	size_t j = (size_t)mix64((uint64_t)key) & mask;
	while (w->used[j]) {
		if (w->keys[j] == key) {
			w->aggs[j].n++;
			w->aggs[j].sum += v;
			return;
		}
		j = (j + 1) & mask;
	}
	w->used[j] = 1;
	w->keys[j] = key;
	w->aggs[j].n = 1;
	w->aggs[j].sum = v;
	w->slots[w->count++] = (uint32_t)j;
	if (w->count * 2 > w->cap)
		rwin_grow(w);
}

static void ref_open(ref_side_t *rs, int stage, const opts_t *o)
{
	memset(rs, 0, sizeof(*rs));
	rs->stage = stage;
	rs->keys = o->keys;
	rs->gen = sv_malloc(o->batch * sizeof(gen_row_t));
	rs->sel = sv_malloc(o->batch * sizeof(sel_row_t));
	rs->fired_to = INT64_MIN;
	if (stage < ST_TUMBLE)
		return;
	rs->size = stage == ST_TUMBLE ? o->tumble_ms : SLIDE_SIZE_MS;
	rs->slide = stage == ST_TUMBLE ? o->tumble_ms : SLIDE_MS;
	rs->nwins = (size_t)(rs->size / rs->slide) + 2;
	rs->wins = sv_calloc(rs->nwins, sizeof(rwin_t));
	size_t cap = 1024;
	while (cap < (size_t)o->keys * 2 && cap < (1u << 24))
		cap *= 2;
	for (size_t i = 0; i < rs->nwins; i++)
		rwin_init(&rs->wins[i], cap);
	rs->outcap = 4096;
	rs->out = sv_malloc(rs->outcap * sizeof(win_row_t));
}

static void ref_close(ref_side_t *rs)
{
	for (size_t i = 0; i < rs->nwins; i++)
		rwin_release(&rs->wins[i]);
	free(rs->wins);
	free(rs->gen);
	free(rs->sel);
	free(rs->out);
}

static inline int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The window starting at start: found among the open ones or opened. */
static inline rwin_t *ref_window(ref_side_t *rs, int64_t start)
{
	rwin_t *free_w = NULL;
	for (size_t i = 0; i < rs->nwins; i++) {
		rwin_t *w = &rs->wins[i];
		if (w->open && w->start == start)
			return w;
		if (!w->open && !free_w)
			free_w = w;
	}
	if (!free_w) {
		fprintf(stderr, "bench_core: reference ran out of windows\n");
		exit(1);
	}
	free_w->open = true;
	free_w->start = start;
	return free_w;
}

/* Emit and clear every open window with end - 1 <= wm, oldest first. */
static uint64_t ref_fire(ref_side_t *rs, int64_t wm)
{
	uint64_t emitted = 0;
	for (;;) {
		rwin_t *w = NULL;
		for (size_t i = 0; i < rs->nwins; i++) {
			rwin_t *x = &rs->wins[i];
			if (x->open && x->start + rs->size - 1 <= wm &&
			    (!w || x->start < w->start))
				w = x;
		}
		if (!w)
			break;
		if (w->count > rs->outcap) {
			rs->outcap = w->count;
			rs->out = sv_realloc(rs->out,
					     rs->outcap * sizeof(win_row_t));
		}
		int64_t end = w->start + rs->size;
		for (size_t i = 0; i < w->count; i++) {
			uint32_t s = w->slots[i];
			rs->out[i] = (win_row_t){w->keys[s], w->start, end,
						 w->aggs[s].n, w->aggs[s].sum};
			w->used[s] = 0;
		}
		ref_sink(rs->out, w->count);
		if (rs->dg)
			for (size_t i = 0; i < w->count; i++)
				digest_win(rs->dg, rs->out[i].key,
					   rs->out[i].start, rs->out[i].end,
					   rs->out[i].n, rs->out[i].total);
		emitted += w->count;
		w->count = 0;
		w->open = false;
	}
	if (wm > rs->fired_to)
		rs->fired_to = wm;
	return emitted;
}

/* Rows [n0, n0 + n) exactly as the sequence generator makes them. */
static void ref_generate(gen_row_t *g, int64_t n0, size_t n, int64_t keys)
{
	const int64_t base = 1704067200000LL;
	for (size_t i = 0; i < n; i++) {
		int64_t id = n0 + (int64_t)i;
		g[i].id = id;
		g[i].key = id % keys;
		g[i].amount = (double)(id % 1000) / 10.0;
		g[i].ts = base + id;
	}
}

static run_t ref_run(int stage, const opts_t *o, int64_t max_records,
		     double max_s, digest_t *dg)
{
	ref_side_t rs;
	ref_open(&rs, stage, o);
	rs.dg = dg;
	run_t rr = {0};
	int64_t next = 0, max_ts = INT64_MIN;
	size_t B = o->batch;

	double c0 = cpu_s(), t0 = mono_s(), t = t0;
	while ((int64_t)rr.records < max_records && t - t0 < max_s) {
		ref_generate(rs.gen, next, B, rs.keys);
		next += (int64_t)B;
		double tg = mono_s();
		rr.gen_s += tg - t;
		if (stage == ST_GEN) {
			ref_sink(rs.gen, B);
			if (dg)
				for (size_t i = 0; i < B; i++)
					digest_gen(dg, rs.gen[i].id,
						   rs.gen[i].key, rs.gen[i].ts);
			rr.out_rows += B;
		} else {
			size_t m = 0;
			for (size_t i = 0; i < B; i++) {
				const gen_row_t *g = &rs.gen[i];
				if (!(g->amount >= 25.0 && g->id % 7 != 0))
					continue;
				rs.sel[m++] = (sel_row_t){g->key, g->ts,
							  g->amount * 0.9};
			}
			if (stage == ST_FILTER) {
				ref_sink(rs.sel, m);
				if (dg)
					for (size_t i = 0; i < m; i++)
						digest_sel(dg, rs.sel[i].key,
							   rs.sel[i].ts,
							   rs.sel[i].net);
				rr.out_rows += m;
			} else {
				for (size_t i = 0; i < m; i++) {
					const sel_row_t *s = &rs.sel[i];
					int64_t last = floor_div(s->ts,
								 rs.slide) *
						rs.slide;
					if (last + rs.size - 1 <= rs.fired_to) {
						rs.late++;
						continue;
					}
					for (int64_t ws = last;
					     ws > s->ts - rs.size;
					     ws -= rs.slide) {
						if (ws + rs.size - 1 <=
						    rs.fired_to)
							break;
						rwin_add(ref_window(&rs, ws),
							 s->key, s->net);
					}
				}
				/* the last row has the largest event time */
				if (B && rs.gen[B - 1].ts > max_ts)
					max_ts = rs.gen[B - 1].ts;
				rr.out_rows += ref_fire(&rs, max_ts - 1);
			}
		}
		rr.records += B;
		t = mono_s();
	}
	if (stage >= ST_TUMBLE)
		rr.out_rows += ref_fire(&rs, INT64_MAX);
	rr.wall_s = mono_s() - t0;
	rr.cpu_s = cpu_s() - c0;
	if (rs.late)
		fprintf(stderr, "bench_core: reference: %llu late records\n",
			(unsigned long long)rs.late);
	ref_close(&rs);
	return rr;
}

/* ==== check, rounds, report ==== */

static bool digest_same(const digest_t *a, const digest_t *b)
{
	double tol = 1e-9 * fmax(1.0, fmax(fabs(a->fsum), fabs(b->fsum)));
	return a->rows == b->rows && a->isum == b->isum && a->hsum == b->hsum &&
		fabs(a->fsum - b->fsum) <= tol;
}

static void check_stages(const opts_t *o)
{
	int64_t n = o->records < CHECK_RECORDS ? o->records : CHECK_RECORDS;
	uint64_t filtered = 0;
	for (int st = 0; st < NSTAGES; st++) {
		if (!(o->stages & 1u << st) &&
		    !(st == ST_FILTER && (o->stages >> ST_TUMBLE)))
			continue;
		digest_t a = {0}, b = {0};
		run_t rs = sv_run(st, o, n, INFINITY, &a);
		run_t rr = ref_run(st, o, n, INFINITY, &b);
		bool ok = rs.records == rr.records && digest_same(&a, &b) &&
			a.rows > 0;
		if (st == ST_FILTER)
			filtered = b.rows;
		if (st == ST_TUMBLE)
			ok = ok && (uint64_t)b.isum == filtered;
		if (st == ST_SLIDE)
			ok = ok &&
				(uint64_t)b.isum ==
					filtered * (SLIDE_SIZE_MS / SLIDE_MS);
		fprintf(stderr,
			"check %-13s %llu records: %llu rows out, sums %lld / "
			"%.6f — %s\n",
			stage_names[st], (unsigned long long)rs.records,
			(unsigned long long)a.rows, (long long)a.isum, a.fsum,
			ok ? "same as reference" : "MISMATCH");
		if (!ok) {
			fprintf(stderr,
				"  streamvisor: rows %llu isum %lld fsum %.9f "
				"hsum %016llx\n  reference:   rows %llu isum "
				"%lld "
				"fsum %.9f hsum %016llx\n",
				(unsigned long long)a.rows, (long long)a.isum,
				a.fsum, (unsigned long long)a.hsum,
				(unsigned long long)b.rows, (long long)b.isum,
				b.fsum, (unsigned long long)b.hsum);
			exit(1);
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double tmp[MAX_ROUNDS];
	memcpy(tmp, v, (size_t)n * sizeof(double));
	qsort(tmp, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static double best_max(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static double best_min(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/* Per-stage figures over the rounds. */
typedef struct summary {
	double sv_rate[MAX_ROUNDS], ref_rate[MAX_ROUNDS]; /* rec / wall s */
	double sv_core[MAX_ROUNDS], ref_core[MAX_ROUNDS]; /* rec / cpu s */
	double sv_cpum[MAX_ROUNDS], ref_cpum[MAX_ROUNDS]; /* cpu s / M rec */
	double ratio[MAX_ROUNDS]; /* sv / ref cost per record (cpu) */
	double sv_nogen[MAX_ROUNDS], ref_nogen[MAX_ROUNDS]; /* ns/rec */
	double ratio_nogen[MAX_ROUNDS];
	double out_per_rec;
	run_t sv_runs[MAX_ROUNDS], ref_runs[MAX_ROUNDS];
} summary_t;

static void record(summary_t *s, int r, const run_t *a, const run_t *b)
{
	s->sv_runs[r] = *a;
	s->ref_runs[r] = *b;
	s->sv_rate[r] = (double)a->records / a->wall_s;
	s->ref_rate[r] = (double)b->records / b->wall_s;
	s->sv_core[r] = (double)a->records / a->cpu_s;
	s->ref_core[r] = (double)b->records / b->cpu_s;
	s->sv_cpum[r] = a->cpu_s / ((double)a->records / 1e6);
	s->ref_cpum[r] = b->cpu_s / ((double)b->records / 1e6);
	s->ratio[r] = s->sv_cpum[r] / s->ref_cpum[r];
	s->sv_nogen[r] = (a->wall_s - a->gen_s) * 1e9 / (double)a->records;
	s->ref_nogen[r] = (b->wall_s - b->gen_s) * 1e9 / (double)b->records;
	s->ratio_nogen[r] = s->ref_nogen[r] > 0
		? s->sv_nogen[r] / s->ref_nogen[r]
		: 0;
	s->out_per_rec = (double)a->out_rows / (double)a->records;
}

static void machine(char *cpu, size_t n)
{
	snprintf(cpu, n, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10)) {
			char *p = strchr(line, ':');
			if (p) {
				p += 1 + strspn(p + 1, " \t");
				p[strcspn(p, "\n")] = 0;
				snprintf(cpu, n, "%s", p);
			}
			break;
		}
	}
	fclose(f);
}

static void write_json(const char *path, const opts_t *o, const summary_t *s,
		       const char *cpu, const char *date)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "{\n  \"bench\": \"bench_core\",\n  \"date\": \"%s\",\n",
		date);
	fprintf(f, "  \"cpu\": \"%s\",\n  \"online_cpus\": %ld,\n", cpu,
		sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f,
		"  \"records\": %lld,\n  \"seconds\": %g,\n  \"rounds\": %d,\n"
		"  \"batch\": %zu,\n  \"keys\": %lld,\n  \"tumble_ms\": %lld,\n"
		"  \"slide_size_ms\": %d,\n  \"slide_ms\": %d,\n",
		(long long)o->records, o->seconds, o->rounds, o->batch,
		(long long)o->keys, (long long)o->tumble_ms, SLIDE_SIZE_MS,
		SLIDE_MS);
	fprintf(f, "  \"stages\": [\n");
	bool first = true;
	for (int st = 0; st < NSTAGES; st++) {
		const summary_t *x = &s[st];
		if (!(o->stages & 1u << st))
			continue;
		fprintf(f,
			"%s    {\"name\": \"%s\", \"out_rows_per_record\": "
			"%.4f,\n"
			"     \"median\": {\"sv_records_per_s\": %.0f, "
			"\"ref_records_per_s\": %.0f, "
			"\"sv_records_per_cpu_s\": %.0f, "
			"\"ref_records_per_cpu_s\": %.0f, "
			"\"ratio_cpu\": %.3f, \"ratio_excl_generator\": "
			"%.3f},\n"
			"     \"runs\": [",
			first ? "" : ",\n", stage_names[st], x->out_per_rec,
			median(x->sv_rate, o->rounds),
			median(x->ref_rate, o->rounds),
			median(x->sv_core, o->rounds),
			median(x->ref_core, o->rounds),
			median(x->ratio, o->rounds),
			median(x->ratio_nogen, o->rounds));
		for (int r = 0; r < o->rounds; r++) {
			const run_t *a = &x->sv_runs[r], *b = &x->ref_runs[r];
			fprintf(f,
				"%s\n       {\"round\": %d, "
				"\"sv\": {\"records\": %llu, \"wall_s\": %.6f, "
				"\"cpu_s\": %.6f, \"gen_s\": %.6f, "
				"\"out_rows\": %llu}, "
				"\"ref\": {\"records\": %llu, \"wall_s\": "
				"%.6f, "
				"\"cpu_s\": %.6f, \"gen_s\": %.6f, "
				"\"out_rows\": %llu}}",
				r ? "," : "", r + 1,
				(unsigned long long)a->records, a->wall_s,
				a->cpu_s, a->gen_s,
				(unsigned long long)a->out_rows,
				(unsigned long long)b->records, b->wall_s,
				b->cpu_s, b->gen_s,
				(unsigned long long)b->out_rows);
		}
		fprintf(f, "]}");
		first = false;
	}
	fprintf(f, "\n  ]\n}\n");
	fclose(f);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_core [--records N] [--seconds S] [--rounds R] "
		"[--batch B]\n"
		"                  [--keys K] [--tumble-ms MS] [--json PATH]\n"
		"                  [--stage gen|filter+select|tumbling|sliding]"
		"...\n"
		"  each run stops after N records (default 100000000) or S "
		"seconds (0.5),\n"
		"  whichever comes first; R rounds (5); B rows per batch "
		"(2048, as the worker);\n"
		"  K distinct keys (10000); tumbling window MS (60000); "
		"--stage (repeatable)\n"
		"  runs only the stages named (for profiling)\n");
	exit(2);
}

static void parse_args(int argc, char **argv, opts_t *o)
{
	*o = (opts_t){.records = 100000000,
		      .seconds = 0.5,
		      .rounds = 5,
		      .batch = 2048,
		      .keys = 10000,
		      .tumble_ms = 60000,
		      .stages = (1u << NSTAGES) - 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help") || i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		char *end;
		if (!strcmp(a, "--records"))
			o->records = strtoll(v, &end, 10);
		else if (!strcmp(a, "--seconds"))
			o->seconds = strtod(v, &end);
		else if (!strcmp(a, "--rounds"))
			o->rounds = (int)strtol(v, &end, 10);
		else if (!strcmp(a, "--batch"))
			o->batch = (size_t)strtoull(v, &end, 10);
		else if (!strcmp(a, "--keys"))
			o->keys = strtoll(v, &end, 10);
		else if (!strcmp(a, "--tumble-ms"))
			o->tumble_ms = strtoll(v, &end, 10);
		else if (!strcmp(a, "--stage")) {
			int st = -1;
			for (int k = 0; k < NSTAGES; k++)
				if (!strcmp(v, stage_names[k]))
					st = k;
			if (st < 0)
				usage();
			o->stages = (o->stages == (1u << NSTAGES) - 1
					     ? 0
					     : o->stages) |
				1u << st;
			end = (char *)v + strlen(v);
		} else if (!strcmp(a, "--json")) {
			o->json = v;
			end = (char *)v + strlen(v);
		} else
			usage();
		if (*end)
			usage();
	}
	if (o->records < 1 || o->seconds <= 0 || o->rounds < 1 ||
	    o->rounds > MAX_ROUNDS || o->batch < 1 || o->batch > 1000000 ||
	    o->keys < 1 || o->tumble_ms < 1)
		usage();
}

int main(int argc, char **argv)
{
	opts_t o;
	parse_args(argc, argv, &o);

	char cpu[256], date[32];
	machine(cpu, sizeof(cpu));
	time_t now = time(NULL);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));

	check_stages(&o);

	static summary_t sum[NSTAGES];
	for (int r = 0; r < o.rounds; r++) {
		for (int st = 0; st < NSTAGES; st++) {
			if (!(o.stages & 1u << st))
				continue;
			run_t a, b;
			if (r % 2 == 0) {
				a = sv_run(st, &o, o.records, o.seconds, NULL);
				b = ref_run(st, &o, o.records, o.seconds, NULL);
			} else {
				b = ref_run(st, &o, o.records, o.seconds, NULL);
				a = sv_run(st, &o, o.records, o.seconds, NULL);
			}
			record(&sum[st], r, &a, &b);
		}
		fprintf(stderr, "round %d/%d done\n", r + 1, o.rounds);
	}

	printf("## bench_core — %s, %ld online CPUs, %s\n\n", cpu,
	       sysconf(_SC_NPROCESSORS_ONLN), date);
	printf("single thread; %d rounds, each run ≤ %lld records or ≤ %.2f s; "
	       "batch %zu; %lld keys; tumbling %lld ms; sliding %d/%d ms\n\n",
	       o.rounds, (long long)o.records, o.seconds, o.batch,
	       (long long)o.keys, (long long)o.tumble_ms, SLIDE_SIZE_MS,
	       SLIDE_MS);
	printf("| stage | streamvisor Mrec/s best / median | per core "
	       "(Mrec per CPU-s, median) | CPU s per Mrec | reference Mrec/s "
	       "best / median | ref CPU s per Mrec | cost ratio sv/ref "
	       "(median, "
	       "min–max) | excl. generator: sv / ref ns per rec, ratio |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	for (int st = 0; st < NSTAGES; st++) {
		const summary_t *x = &sum[st];
		int n = o.rounds;
		if (!(o.stages & 1u << st))
			continue;
		char nogen[64];
		if (st == ST_GEN)
			snprintf(nogen, sizeof(nogen), "—");
		else
			snprintf(nogen, sizeof(nogen), "%.1f / %.1f, %.2f×",
				 median(x->sv_nogen, n),
				 median(x->ref_nogen, n),
				 median(x->ratio_nogen, n));
		printf("| %s | %.2f / %.2f | %.2f | %.3f | %.2f / %.2f | %.3f "
		       "| "
		       "%.2f× (%.2f–%.2f) | %s |\n",
		       stage_names[st], best_max(x->sv_rate, n) / 1e6,
		       median(x->sv_rate, n) / 1e6, median(x->sv_core, n) / 1e6,
		       median(x->sv_cpum, n), best_max(x->ref_rate, n) / 1e6,
		       median(x->ref_rate, n) / 1e6, median(x->ref_cpum, n),
		       median(x->ratio, n), best_min(x->ratio, n),
		       best_max(x->ratio, n), nogen);
	}
	printf("\n");
	for (int st = 0; st < NSTAGES; st++)
		if (o.stages & 1u << st)
			printf("- %s: %s, %.2f rows out per record\n",
			       stage_names[st], stage_desc[st],
			       sum[st].out_per_rec);
	if (o.json)
		write_json(o.json, &o, sum, cpu, date);
	return 0;
}
