/* bench_join.c — the join operators alone (core/join.h), one thread, no
 * Kafka, beside a hand-written reference in the same process.
 *
 *   lookup-proc   Nexmark q3-like: auctions (id, seller, category, ts)
 *                 joined with the latest person (id, name, state) of the
 *                 seller, processing time; reference: an open-addressing
 *                 int64 -> person table probed per auction, output rows
 *                 written out the same way (cells and string bytes).
 *   lookup-event  the same as an event-time temporal join: the persons
 *                 table is loaded at time 0, the table's watermark moves
 *                 with the auctions', the left watermark after every
 *                 batch (advance per batch).
 *   interval      two streams with advancing event time (the state-bound
 *                 workload of tests/unit/test_join_random.c): rows/s.
 *   table ckpt    the persons table as checkpoint state: snapshot bytes
 *                 and time, restore time, against rebuilding it by pushing
 *                 the changelog through process_right again (what
 *                 re-reading the compacted topic costs at least: broker
 *                 fetch and JSON decode come on top).
 *
 * Every run checks the output row count and a checksum against the
 * reference before it is timed. Usage: bench_join [--persons N]
 * [--auctions N] [--reps R]. See bench/README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/join_int.h"

typedef struct opts {
	int64_t persons, auctions;
	int reps;
} opts_t;

static void die(const char *what, sv_error_t *err)
{
	fprintf(stderr, "bench_join: %s: %s\n", what,
		err ? err->message : "failed");
	exit(1);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The seller of auction i: skewed towards a few, like Nexmark's hot
 * sellers. */
static inline int64_t seller_of(int64_t i, int64_t persons)
{
	uint64_t h = mix64((uint64_t)i + 1);
	if (h % 4 == 0)
		return (int64_t)(h >> 8) % 100; /* hot */
	return (int64_t)((h >> 8) % (uint64_t)persons);
}

static const char *const STATES[] = {"OR", "ID", "CA", "WA", "NY", "TX"};

static void person_name(int64_t id, char *buf, size_t n)
{
	snprintf(buf, n, "person-%lld", (long long)id);
}

typedef struct sch {
	sv_schema_t *auctions, *persons;
} sch_t;

static void schemas(sch_t *s)
{
	s->auctions = sv_schema_new();
	sv_schema_add(s->auctions, "id", SV_T_INT64, false);
	sv_schema_add(s->auctions, "seller", SV_T_INT64, false);
	sv_schema_add(s->auctions, "category", SV_T_INT64, false);
	sv_schema_add(s->auctions, "ts", SV_T_TIMESTAMP, false);
	s->persons = sv_schema_new();
	sv_schema_add(s->persons, "pid", SV_T_INT64, false);
	sv_schema_add(s->persons, "name", SV_T_STRING, false);
	sv_schema_add(s->persons, "state", SV_T_STRING, false);
	sv_schema_add(s->persons, "pts", SV_T_TIMESTAMP, false);
}

static sv_op_t *lookup_op(const sch_t *s, bool proc)
{
	static const char *const lk[] = {"seller"}, *const rk[] = {"pid"};
	static const char *const names[] = {"name", "state"};
	sv_join_spec_t spec = {.type = SV_JOIN_LOOKUP,
			       .nkeys = 1,
			       .left_keys = lk,
			       .right_keys = rk,
			       .ntake = 2,
			       .take_names = names,
			       .take_cols = names,
			       .processing_time = proc};
	sv_op_t *op = NULL;
	sv_error_t *err = sv_op_join_new(s->auctions, s->persons, &spec, &op);
	if (err)
		die("lookup join", err);
	return op;
}

#define BATCH 2048

/* Push every person (time 0) through process_right. */
static void load_persons(sv_op_t *op, const sch_t *s, int64_t n)
{
	sv_batch_t b, out;
	sv_batch_init(&b, s->persons);
	sv_batch_init(&out, op->out_schema);
	sv_op_ctx_t ctx = {.watermark_ms = SV_WATERMARK_NONE,
			   .right_watermark_ms = SV_WATERMARK_NONE};
	char name[32];
	for (int64_t i = 0; i < n; i++) {
		sv_rowmeta_t *m;
		sv_value_t *r = sv_batch_add_row(&b, &m);
		m->event_ms = 0;
		person_name(i, name, sizeof(name));
		size_t len = strlen(name);
		r[0] = sv_int(i);
		r[1] = sv_str(sv_batch_strdup(&b, name, len), (uint32_t)len);
		r[2] = sv_str(STATES[i % 6], 2);
		r[3] = sv_ts(0);
		if (b.nrows == BATCH || i == n - 1) {
			sv_error_t *err = op->ops->process_right(op, &ctx, &b,
								 &out);
			if (err)
				die("persons", err);
			sv_batch_reset(&b);
		}
	}
	sv_batch_release(&b);
	sv_batch_release(&out);
}

typedef struct result {
	uint64_t rows, sum;
	double s;
} result_t;

static void digest(result_t *res, const sv_batch_t *out)
{
	for (size_t r = 0; r < out->nrows; r++) {
		const sv_value_t *v = sv_batch_row(out, r);
		res->sum += (uint64_t)v[0].v.i * 31 + v[4].len + v[5].v.s[0];
	}
	res->rows += out->nrows;
}

/* Auctions through the lookup join; the table is already loaded. */
static result_t run_lookup(sv_op_t *op, const sch_t *s, const opts_t *o,
			   bool proc)
{
	sv_batch_t b, out;
	sv_batch_init(&b, s->auctions);
	sv_batch_init(&out, op->out_schema);
	sv_op_ctx_t ctx = {.watermark_ms = SV_WATERMARK_NONE,
			   .right_watermark_ms = SV_WATERMARK_NONE};
	result_t res = {0};
	double t0 = mono_s();
	for (int64_t i = 0; i < o->auctions; i++) {
		sv_rowmeta_t *m;
		sv_value_t *r = sv_batch_add_row(&b, &m);
		m->event_ms = i + 1;
		r[0] = sv_int(i);
		r[1] = sv_int(seller_of(i, o->persons));
		r[2] = sv_int(i % 10);
		r[3] = sv_ts(i + 1);
		if (b.nrows == BATCH || i == o->auctions - 1) {
			if (!proc) {
				/* the table is complete up to now */
				ctx.right_watermark_ms = i + 1;
			}
			sv_error_t *err = op->ops->process(op, &ctx, &b, &out);
			if (err)
				die("auctions", err);
			digest(&res, &out);
			sv_batch_reset(&out);
			if (!proc) {
				ctx.watermark_ms = i;
				if ((err = op->ops->advance(op, &ctx, &out)))
					die("advance", err);
				digest(&res, &out);
				sv_batch_reset(&out);
			}
			sv_batch_reset(&b);
		}
	}
	sv_error_t *err = op->ops->finish(op, &ctx, &out);
	if (err)
		die("finish", err);
	digest(&res, &out);
	res.s = mono_s() - t0;
	sv_batch_release(&b);
	sv_batch_release(&out);
	return res;
}

/* ---- the reference: a plain table of persons by id ---- */

typedef struct rperson {
	int64_t id;
	const char *name;
	uint32_t nlen;
	const char *state;
} rperson_t;

static result_t ref_lookup(const opts_t *o)
{
	size_t cap = 1;
	while (cap < (size_t)o->persons * 2)
		cap <<= 1;
	rperson_t *tab = calloc(cap, sizeof(*tab));
	for (size_t i = 0; i < cap; i++)
		tab[i].id = -1;
	char *names = malloc((size_t)o->persons * 32);
	char *p = names;
	for (int64_t i = 0; i < o->persons; i++) {
		person_name(i, p, 32);
		size_t h = mix64((uint64_t)i) & (cap - 1);
		while (tab[h].id >= 0)
			h = (h + 1) & (cap - 1);
		tab[h] = (rperson_t){i, p, (uint32_t)strlen(p), STATES[i % 6]};
		p += 32;
	}
	/* output rows written the way the operator writes them */
	sv_value_t *out = malloc(BATCH * 6 * sizeof(sv_value_t));
	char *arena = malloc(BATCH * 32);
	result_t res = {0};
	double t0 = mono_s();
	size_t n = 0, used = 0;
	for (int64_t i = 0; i < o->auctions; i++) {
		int64_t seller = seller_of(i, o->persons);
		size_t h = mix64((uint64_t)seller) & (cap - 1);
		while (tab[h].id >= 0 && tab[h].id != seller)
			h = (h + 1) & (cap - 1);
		if (tab[h].id == seller) {
			sv_value_t *r = out + n * 6;
			r[0] = sv_int(i);
			r[1] = sv_int(seller);
			r[2] = sv_int(i % 10);
			r[3] = sv_ts(i + 1);
			memcpy(arena + used, tab[h].name, tab[h].nlen);
			r[4] = sv_str(arena + used, tab[h].nlen);
			used += tab[h].nlen;
			memcpy(arena + used, tab[h].state, 2);
			r[5] = sv_str(arena + used, 2);
			used += 2;
			n++;
		}
		if (n == BATCH || i == o->auctions - 1) {
			for (size_t k = 0; k < n; k++) {
				const sv_value_t *v = out + k * 6;
				res.sum += (uint64_t)v[0].v.i * 31 + v[4].len +
					v[5].v.s[0];
			}
			res.rows += n;
			n = used = 0;
		}
	}
	res.s = mono_s() - t0;
	free(out);
	free(arena);
	free(names);
	free(tab);
	return res;
}

/* ---- interval ---- */

/* interval ckpt: every every_ms of event time, a full snapshot and a
 * delta of the same state (each timed), then checkpointed(). */
typedef struct ivck {
	int64_t every_ms;
	double full_s[4096], delta_s[4096];
	size_t full_b[4096], delta_b[4096];
	int n;
	uint64_t rows; /* rows held at the last checkpoint */
} ivck_t;

static void ivck_take(sv_op_t *op, ivck_t *ck)
{
	if (ck->n == 4096)
		return;
	sv_buf_t b;
	sv_buf_init(&b);
	double t0 = mono_s();
	sv_error_t *err = op->ops->snapshot(op, &b);
	if (err)
		die("snapshot", err);
	ck->full_s[ck->n] = mono_s() - t0;
	ck->full_b[ck->n] = b.len;
	sv_buf_reset(&b);
	bool written = false;
	t0 = mono_s();
	if ((err = op->ops->snapshot_delta(op, &b, &written)))
		die("snapshot_delta", err);
	ck->delta_s[ck->n] = mono_s() - t0;
	ck->delta_b[ck->n] = b.len;
	sv_buf_release(&b);
	op->ops->checkpointed(op);
	sv_op_side_state_t sides[2];
	op->ops->state_sides(op, sides);
	ck->rows = sides[0].rows + sides[1].rows;
	/* the first has no base: its delta is not written */
	if (written)
		ck->n++;
}

static result_t run_interval(const sch_t *s, int64_t records, int64_t lower,
			     int64_t upper, uint64_t nkeys, ivck_t *ck)
{
	static const char *const lk[] = {"seller"}, *const rk[] = {"pid"};
	static const char *const names[] = {"name"};
	sv_join_spec_t spec = {.type = SV_JOIN_INTERVAL,
			       .nkeys = 1,
			       .left_keys = lk,
			       .right_keys = rk,
			       .ntake = 1,
			       .take_names = names,
			       .take_cols = names,
			       .lower_ms = lower,
			       .upper_ms = upper};
	sv_op_t *op = NULL;
	sv_error_t *err = sv_op_join_new(s->auctions, s->persons, &spec, &op);
	if (err)
		die("interval join", err);
	sv_batch_t b[2], out;
	sv_batch_init(&b[0], s->auctions);
	sv_batch_init(&b[1], s->persons);
	sv_batch_init(&out, op->out_schema);
	sv_op_ctx_t ctx = {.watermark_ms = SV_WATERMARK_NONE,
			   .right_watermark_ms = SV_WATERMARK_NONE};
	result_t res = {0};
	double t0 = mono_s();
	int64_t now = 0, next_ck = ck ? ck->every_ms : INT64_MAX;
	for (int64_t n = 0; n < records; now++) {
		/* 2 left rows and 1 right row per ms over nkeys keys */
		for (int sd = 0; sd < 2; sd++)
			for (int k = 0; k < 2 - sd; k++, n++) {
				sv_rowmeta_t *m;
				sv_value_t *r = sv_batch_add_row(&b[sd], &m);
				int64_t key = (int64_t)(mix64((uint64_t)n) %
							nkeys);
				m->event_ms = now;
				r[0] = sv_int(sd ? key : n);
				r[1] = sd ? sv_str("p", 1) : sv_int(key);
				r[2] = sd ? sv_str("OR", 2) : sv_int(0);
				r[3] = sv_ts(now);
			}
		if (b[0].nrows >= BATCH || n >= records) {
			for (int sd = 0; sd < 2; sd++) {
				err = sd ? op->ops->process_right(op, &ctx,
								  &b[1], &out)
					 : op->ops->process(op, &ctx, &b[0],
							    &out);
				if (err)
					die("interval", err);
				res.rows += out.nrows;
				sv_batch_reset(&out);
				sv_batch_reset(&b[sd]);
			}
			ctx.watermark_ms = ctx.right_watermark_ms = now - 1;
			if ((err = op->ops->advance(op, &ctx, &out)))
				die("advance", err);
			res.rows += out.nrows;
			sv_batch_reset(&out);
			if (now >= next_ck) {
				ivck_take(op, ck);
				next_ck += ck->every_ms;
			}
		}
	}
	res.s = mono_s() - t0;
	res.sum = (uint64_t)records;
	sv_batch_release(&b[0]);
	sv_batch_release(&b[1]);
	sv_batch_release(&out);
	sv_op_destroy(op);
	return res;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	opts_t o = {.persons = 100000, .auctions = 2000000, .reps = 5};
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--persons"))
			o.persons = atoll(argv[i + 1]);
		else if (!strcmp(argv[i], "--auctions"))
			o.auctions = atoll(argv[i + 1]);
		else if (!strcmp(argv[i], "--reps"))
			o.reps = atoi(argv[i + 1]);
		else {
			fprintf(stderr,
				"usage: bench_join [--persons N] [--auctions "
				"N] [--reps R]\n");
			return 2;
		}
	}
	if (o.persons < 100 || o.auctions < 1 || o.reps < 1 || o.reps > 50) {
		fprintf(stderr, "bench_join: bad sizes\n");
		return 2;
	}
	sch_t s;
	schemas(&s);
	printf("bench_join: %lld persons, %lld auctions, median of %d\n",
	       (long long)o.persons, (long long)o.auctions, o.reps);

	double tp[50], te[50], tr[50], ti[50];
	for (int r = 0; r < o.reps; r++) {
		result_t ref = ref_lookup(&o);
		for (int proc = 1; proc >= 0; proc--) {
			sv_op_t *op = lookup_op(&s, proc);
			load_persons(op, &s, o.persons);
			result_t got = run_lookup(op, &s, &o, proc);
			sv_op_destroy(op);
			if (got.rows != ref.rows || got.sum != ref.sum) {
				fprintf(stderr,
					"bench_join: lookup (%s) output "
					"differs: %llu rows vs %llu\n",
					proc ? "proc" : "event",
					(unsigned long long)got.rows,
					(unsigned long long)ref.rows);
				return 1;
			}
			(proc ? tp : te)[r] = got.s;
		}
		tr[r] = ref.s;
		ti[r] = run_interval(&s, o.auctions, -100, 200, 1000, NULL).s;
	}
	double mp = median(tp, o.reps), me = median(te, o.reps),
	       mr = median(tr, o.reps), mi = median(ti, o.reps);
	double n = (double)o.auctions;
	printf("lookup-proc   %8.2f M rows/s  (%.1f ns/row)  reference %.2f M "
	       "rows/s: cost %.1fx\n",
	       n / mp / 1e6, mp / n * 1e9, n / mr / 1e6, mp / mr);
	printf("lookup-event  %8.2f M rows/s  (%.1f ns/row)  cost %.1fx the "
	       "reference\n",
	       n / me / 1e6, me / n * 1e9, me / mr);
	printf("interval      %8.2f M rows/s  (%.1f ns/row; lower -100, upper "
	       "200, 1000 keys)\n",
	       n / mi / 1e6, mi / n * 1e9);

	/* the table as checkpoint state vs rebuilt from its changelog */
	double ts[50], tl[50], tb[50];
	size_t bytes = 0;
	uint64_t state_bytes = 0;
	for (int r = 0; r < o.reps; r++) {
		sv_op_t *op = lookup_op(&s, false);
		double t0 = mono_s();
		load_persons(op, &s, o.persons);
		tb[r] = mono_s() - t0;
		op->ops->state_size(op, &state_bytes, NULL);
		sv_buf_t snap;
		sv_buf_init(&snap);
		t0 = mono_s();
		sv_error_t *err = op->ops->snapshot(op, &snap);
		ts[r] = mono_s() - t0;
		if (err)
			die("snapshot", err);
		sv_op_t *op2 = lookup_op(&s, false);
		t0 = mono_s();
		if ((err = op2->ops->restore(op2, snap.data, snap.len)))
			die("restore", err);
		tl[r] = mono_s() - t0;
		bytes = snap.len;
		sv_buf_release(&snap);
		sv_op_destroy(op);
		sv_op_destroy(op2);
	}
	printf("table ckpt    %lld keys: state %.1f MB, snapshot %.1f MB in "
	       "%.1f ms, restore %.1f ms; rebuild from the changelog "
	       "(process_right, no fetch or decode) %.1f ms\n",
	       (long long)o.persons, (double)state_bytes / 1e6,
	       (double)bytes / 1e6, median(ts, o.reps) * 1e3,
	       median(tl, o.reps) * 1e3, median(tb, o.reps) * 1e3);

	/* the interval join's checkpoints in its steady state: a 60 s join
	 * interval holds 60 s of rows; a checkpoint every second of event
	 * time adds and frees about a sixtieth of them. Deltas are per key:
	 * with few keys every key changes every second */
	static const uint64_t nk[] = {1000000, 1000};
	for (size_t c = 0; c < 2; c++) {
		ivck_t *ck = sv_calloc(1, sizeof(*ck));
		ck->every_ms = 1000;
		run_interval(&s, o.auctions, -30000, 30000, nk[c], ck);
		if (ck->n < 10)
			die("interval ckpt: too few checkpoints", NULL);
		/* past the first 60 s (the state still filling) */
		int skip = ck->n > 70 ? 60 : 0, m = ck->n - skip;
		double fb[4096], db[4096];
		for (int i = 0; i < m; i++) {
			fb[i] = (double)ck->full_b[skip + i];
			db[i] = (double)ck->delta_b[skip + i];
		}
		double mfb = median(fb, m), mdb = median(db, m);
		printf("interval ckpt %llu keys, %llu rows held (lower -30000, "
		       "upper 30000, 3 rows a ms, a checkpoint a second of "
		       "event time, %d past the first %d): full %.2f MB in "
		       "%.2f ms, delta %.3f MB in %.3f ms (%.1f%% of the "
		       "full)\n",
		       (unsigned long long)nk[c], (unsigned long long)ck->rows,
		       m, skip, mfb / 1e6, median(ck->full_s + skip, m) * 1e3,
		       mdb / 1e6, median(ck->delta_s + skip, m) * 1e3,
		       100.0 * mdb / mfb);
		free(ck);
	}
	sv_schema_destroy(s.auctions);
	sv_schema_destroy(s.persons);
	return 0;
}
