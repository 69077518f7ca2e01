/* generator.c — the "generator" source driver: deterministic synthetic rows
 * for tests and benchmarks (sequence, nexmark; docs/generators.md).
 *
 * Row n (n = 0, 1, 2, ...) belongs to logical partition n % N at offset
 * n / N, and its contents are a pure function of (seed, options, n). The
 * driver only tracks, per partition, the next offset to emit; seek sets
 * those offsets and the rows are regenerated, so a resumed source yields
 * exactly the rows a fresh one would from that position. Rows are emitted in
 * increasing n; in the usual case (positions are a prefix of the row order,
 * as when they come from positions()) that is a plain counter, otherwise
 * each row picks the partition whose next row number is smallest.
 *
 * rate_per_s is the token bucket of sources/ratelimit.h: poll sleeps at
 * most timeout_ms for the first token and never emits more rows than the
 * bucket holds.
 *
 * The sequence generator fills each schema field by type and name (decided
 * once at open, so the per-row work is a switch per cell and no allocation
 * beyond the batch arena). */
#define _GNU_SOURCE
#include "sources/generator.h"
#include "sources/ratelimit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sources/nexmark.h"

#define MAX_PARTITIONS 1024

/* Sequence generator: what each column holds. */
enum seq_kind {
	S_SEQ, /* int64 "id" / "seq": n */
	S_PART, /* int64 "partition": n % N */
	S_KEY, /* other int64: n % keys */
	S_TIME, /* timestamp_ms: event time */
	S_FLOAT, /* float64: (n % 1000) / 10.0 */
	S_STRING, /* string: "k" + (n % keys) */
	S_BOOL, /* bool: n % 2 == 0 */
};

typedef struct sv_gen {
	sv_source_t base;
	const sv_schema_t *schema;
	bool nexmark;
	uint64_t seed;
	int64_t count; /* rows in all, or -1 */
	sv_generator_options_t opt;
	uint8_t *kinds; /* sequence: per column */
	sv_nexmark_t *nx;

	/* position */
	int32_t nparts;
	sv_partpos_t *pos; /* next_offset kept current; end_offset fixed */
	bool in_order; /* pos is a prefix of the row order: next_row
			     * is the next row to emit */
	int64_t next_row;

	sv_ratelimit_t rl; /* source.rate_per_s */
} sv_gen_t;

void sv_generator_options_default(sv_generator_options_t *opt)
{
	memset(opt, 0, sizeof(*opt));
	opt->base_ts_ms = 1704067200000LL;
	opt->partitions = 4;
	opt->step_ms = 1;
	opt->jitter_ms = 0;
	opt->keys = 10000;
	opt->first_event_rate = 10000;
	opt->hot_auction_ratio = 2;
	opt->hot_sellers_ratio = 4;
	opt->hot_bidders_ratio = 4;
	opt->num_active_people = 1000;
	opt->num_in_flight_auctions = 100;
	opt->avg_person_bytes = 200;
	opt->avg_auction_bytes = 500;
	opt->avg_bid_bytes = 100;
}

static sv_error_t *check_options(const sv_generator_options_t *o)
{
	const char *bad = NULL;
	if (o->partitions < 1 || o->partitions > MAX_PARTITIONS)
		bad = "partitions";
	else if (o->step_ms < 0)
		bad = "step_ms";
	else if (o->jitter_ms < 0)
		bad = "jitter_ms";
	else if (o->keys < 1)
		bad = "keys";
	else if (o->first_event_rate < 1)
		bad = "first_event_rate";
	else if (o->hot_auction_ratio < 1)
		bad = "hot_auction_ratio";
	else if (o->hot_sellers_ratio < 1)
		bad = "hot_sellers_ratio";
	else if (o->hot_bidders_ratio < 1)
		bad = "hot_bidders_ratio";
	else if (o->num_active_people < 1)
		bad = "num_active_people";
	else if (o->num_in_flight_auctions < 1)
		bad = "num_in_flight_auctions";
	else if (o->avg_person_bytes < 0 || o->avg_auction_bytes < 0 ||
		 o->avg_bid_bytes < 0)
		bad = "avg_*_bytes";
	if (bad)
		return sv_error_new(SV_ERR_CONFIG,
				    "generator option '%s' is out of range",
				    bad);
	return NULL;
}

/* ---- positions ---- */

/* Rows of partition p among rows [0, n). */
static inline int64_t part_rows(int64_t n, int32_t N, int32_t p)
{
	return n <= p ? 0 : (n - p + N - 1) / N;
}

static void rewind_all(sv_gen_t *g)
{
	for (int32_t p = 0; p < g->nparts; p++) {
		g->pos[p].partition = p;
		g->pos[p].next_offset = 0;
		g->pos[p].end_offset = g->count >= 0
			? part_rows(g->count, g->nparts, p)
			: -1;
	}
	g->in_order = true;
	g->next_row = 0;
}

/* Bring pos[].next_offset up to date from next_row (in-order case). */
static void sync_positions(sv_gen_t *g)
{
	if (!g->in_order)
		return;
	for (int32_t p = 0; p < g->nparts; p++)
		g->pos[p].next_offset = part_rows(g->next_row, g->nparts, p);
}

/* Whether pos[] is exactly the first S rows for some S; sets next_row. */
static bool positions_in_order(sv_gen_t *g)
{
	int64_t total = 0;
	for (int32_t p = 0; p < g->nparts; p++)
		total += g->pos[p].next_offset;
	for (int32_t p = 0; p < g->nparts; p++)
		if (g->pos[p].next_offset != part_rows(total, g->nparts, p))
			return false;
	g->next_row = total;
	return true;
}

/* The next row to emit, or -1 when every partition is at its end. */
static int64_t next_row_out_of_order(const sv_gen_t *g, int32_t *part)
{
	int64_t best = -1;
	for (int32_t p = 0; p < g->nparts; p++) {
		const sv_partpos_t *pp = &g->pos[p];
		if (pp->end_offset >= 0 && pp->next_offset >= pp->end_offset)
			continue;
		int64_t row = pp->next_offset * g->nparts + p;
		if (best < 0 || row < best) {
			best = row;
			*part = p;
		}
	}
	return best;
}

static bool finished(sv_gen_t *g)
{
	if (g->count < 0)
		return false;
	if (g->in_order)
		return g->next_row >= g->count;
	int32_t p;
	return next_row_out_of_order(g, &p) < 0;
}

/* ---- rows ---- */

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* "k" + decimal v into the batch arena. */
static inline sv_value_t key_string(sv_batch_t *b, int64_t v)
{
	char tmp[24];
	int n = 0;
	uint64_t u = (uint64_t)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	char *p = sv_arena_alloc(&b->arena, (size_t)n + 1);
	p[0] = 'k';
	for (int i = 0; i < n; i++)
		p[1 + i] = tmp[n - 1 - i];
	return sv_str(p, (uint32_t)n + 1);
}

static inline int64_t seq_event_time(const sv_gen_t *g, int64_t n)
{
	int64_t t = g->opt.base_ts_ms + n * g->opt.step_ms;
	if (g->opt.jitter_ms > 0)
		t -= (int64_t)(mix64(g->seed ^ mix64((uint64_t)n + 1)) %
			       (uint64_t)(g->opt.jitter_ms + 1));
	return t;
}

static inline void emit_row(sv_gen_t *g, sv_batch_t *b, int64_t n, int32_t part)
{
	sv_rowmeta_t *m;
	sv_value_t *row = sv_batch_add_row(b, &m);
	int64_t t;
	if (g->nexmark) {
		t = sv_nexmark_fill(g->nx, n, row, b);
	} else {
		t = seq_event_time(g, n);
		size_t ncols = b->ncols;
		for (size_t c = 0; c < ncols; c++) {
			switch (g->kinds[c]) {
			case S_SEQ:
				row[c] = sv_int(n);
				break;
			case S_PART:
				row[c] = sv_int(part);
				break;
			case S_KEY:
				row[c] = sv_int(n % g->opt.keys);
				break;
			case S_TIME:
				row[c] = sv_ts(t);
				break;
			case S_FLOAT:
				row[c] = sv_float((double)(n % 1000) / 10.0);
				break;
			case S_STRING:
				row[c] = key_string(b, n % g->opt.keys);
				break;
			default:
				row[c] = sv_bool(n % 2 == 0);
				break;
			}
		}
	}
	m->partition = part;
	m->offset = n / g->nparts;
	m->source_ts_ms = t;
	m->event_ms = t;
}

/* ---- driver ---- */

static void gen_close(sv_source_t *src)
{
	sv_gen_t *g = (sv_gen_t *)src;
	if (!g)
		return;
	sv_nexmark_destroy(g->nx);
	free(g->kinds);
	free(g->pos);
	free(g);
}

/* (Re)build everything that depends on the options. */
static sv_error_t *configure(sv_gen_t *g, const sv_generator_options_t *opt)
{
	sv_error_t *err = check_options(opt);
	if (err)
		return err;
	g->opt = *opt;
	sv_nexmark_destroy(g->nx);
	g->nx = NULL;
	if (g->nexmark) {
		err = sv_nexmark_new(g->schema, opt, g->seed, &g->nx);
		if (err)
			return err;
	}
	g->nparts = opt->partitions;
	free(g->pos);
	g->pos = sv_calloc((size_t)g->nparts, sizeof(sv_partpos_t));
	rewind_all(g);
	return NULL;
}

static sv_error_t *gen_open(const sv_source_conf_t *conf, sv_source_t **out)
{
	*out = NULL;
	const char *kind = conf->generator ? conf->generator : "sequence";
	bool nexmark = !strcmp(kind, "nexmark");
	if (!nexmark && strcmp(kind, "sequence"))
		return sv_error_set_field(
			sv_error_new(SV_ERR_CONFIG,
				     "unknown generator '%s' (expected "
				     "sequence or nexmark)",
				     kind),
			"source.generator");
	if (!conf->schema)
		return sv_error_new(SV_ERR_CONFIG,
				    "generator '%s' needs a schema", kind);
	if (conf->bounded && conf->count < 0)
		return sv_error_set_field(
			sv_error_new(
				SV_ERR_CONFIG,
				"generator '%s': a bounded job needs a count",
				kind),
			"source.count");
	if (conf->rate_per_s < 0 || conf->rate_per_s > 1000000000LL)
		return sv_error_set_field(
			sv_error_new(SV_ERR_CONFIG,
				     "generator '%s': rate_per_s out of range",
				     kind),
			"source.rate_per_s");

	sv_gen_t *g = sv_calloc(1, sizeof(*g));
	g->base.ops = &sv_source_generator_ops;
	g->schema = conf->schema;
	g->nexmark = nexmark;
	g->seed = conf->seed;
	g->count = conf->count < 0 ? -1 : conf->count;
	sv_ratelimit_init(&g->rl, conf->rate_per_s);

	if (!nexmark) {
		const sv_schema_t *s = conf->schema;
		g->kinds = sv_calloc(s->nfields ? s->nfields : 1, 1);
		for (size_t c = 0; c < s->nfields; c++) {
			const sv_field_t *f = &s->fields[c];
			uint8_t k;
			switch (f->type) {
			case SV_T_INT64:
				if (!strcmp(f->name, "id") ||
				    !strcmp(f->name, "seq"))
					k = S_SEQ;
				else if (!strcmp(f->name, "partition"))
					k = S_PART;
				else
					k = S_KEY;
				break;
			case SV_T_TIMESTAMP:
				k = S_TIME;
				break;
			case SV_T_FLOAT64:
				k = S_FLOAT;
				break;
			case SV_T_STRING:
				k = S_STRING;
				break;
			default:
				k = S_BOOL;
				break;
			}
			g->kinds[c] = k;
		}
	}

	sv_generator_options_t opt;
	sv_generator_options_default(&opt);
	sv_error_t *err = configure(g, &opt);
	if (err) {
		gen_close(&g->base);
		return sv_error_set_job(err, conf->job_id, conf->attempt);
	}
	*out = &g->base;
	return NULL;
}

sv_error_t *sv_generator_set_options(sv_source_t *src,
				     const sv_generator_options_t *opt)
{
	if (!src || src->ops != &sv_source_generator_ops)
		return sv_error_new(SV_ERR_CONFIG, "not a generator source");
	return configure((sv_gen_t *)src, opt);
}

static sv_error_t *gen_poll(sv_source_t *src, sv_batch_t *b, size_t max_rows,
			    int timeout_ms, bool *eof)
{
	sv_gen_t *g = (sv_gen_t *)src;
	*eof = false;
	if (finished(g)) {
		*eof = true;
		return NULL;
	}
	size_t want = sv_ratelimit_allow(&g->rl, max_rows, timeout_ms);
	size_t done = 0;
	if (g->in_order) {
		int64_t n = g->next_row;
		int64_t end = n + (int64_t)want;
		if (g->count >= 0 && end > g->count)
			end = g->count;
		int32_t N = g->nparts;
		int32_t part = (int32_t)(n % N);
		for (; n < end; n++) {
			emit_row(g, b, n, part);
			if (++part == N)
				part = 0;
		}
		done = (size_t)(n - g->next_row);
		g->next_row = n;
	} else {
		while (done < want) {
			int32_t p;
			int64_t n = next_row_out_of_order(g, &p);
			if (n < 0)
				break;
			emit_row(g, b, n, p);
			g->pos[p].next_offset++;
			done++;
		}
	}
	sv_ratelimit_take(&g->rl, done);
	*eof = finished(g);
	return NULL;
}

static sv_error_t *gen_seek(sv_source_t *src, const sv_partpos_t *pos, size_t n)
{
	sv_gen_t *g = (sv_gen_t *)src;
	for (size_t i = 0; i < n; i++)
		if (pos[i].partition < 0 || pos[i].partition >= g->nparts ||
		    pos[i].next_offset < 0)
			return sv_error_new(SV_ERR_OFFSET,
					    "generator: cannot seek partition "
					    "%d to offset %lld",
					    pos[i].partition,
					    (long long)pos[i].next_offset);
	sync_positions(g);
	for (size_t i = 0; i < n; i++) {
		sv_partpos_t *pp = &g->pos[pos[i].partition];
		pp->next_offset = pos[i].next_offset;
		if (pp->end_offset >= 0 && pp->next_offset > pp->end_offset)
			pp->next_offset = pp->end_offset;
	}
	g->in_order = positions_in_order(g);
	return NULL;
}

static size_t gen_positions(sv_source_t *src, const sv_partpos_t **pos)
{
	sv_gen_t *g = (sv_gen_t *)src;
	sync_positions(g);
	*pos = g->pos;
	return (size_t)g->nparts;
}

static const char *const generators[] = {"sequence", "nexmark", NULL};
static const sv_driver_t generator_driver = {
	.kind = "generator",
	.caps = SV_DRIVER_BOUNDED,
	.fields =
		(const sv_driver_field_t[]){
			{.name = "generator",
			 .def = "sequence",
			 .values = generators},
			{.name = "count",
			 .flags = SV_DRIVER_FIELD_BOUNDED,
			 .what = "the number of rows a bounded job ends after"},
			{.name = "rate_per_s"},
			{.name = "seed"},
			{NULL},
		},
};

const sv_source_ops_t sv_source_generator_ops = {
	.driver = &generator_driver,
	.open = gen_open,
	.poll = gen_poll,
	.seek = gen_seek,
	.positions = gen_positions,
	.commit = NULL,
	.close = gen_close,
};
