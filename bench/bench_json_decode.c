/* bench_json_decode.c — picks the JSON record decoder by measurement
 * (DESIGN.md §2). Decodes the same set of ~200-byte records with a 7-field
 * schema into typed rows of a reused batch (strings copied into the batch
 * arena, batch reset every 1024 rows, as a source worker does) with:
 *
 *   (a) jansson: json_loadb (builds a tree) + json_object_get per field
 *   (b) json-c: reused json_tokener + json_object_object_get_ex per field,
 *       loaded with dlopen("libjson-c.so.5") because the bench target links
 *       only svsupervisor and rdkafka; skipped when the library is absent
 *   (c) simdjson on-demand behind bench/json_candidates/simdjson_shim.cc,
 *       built by bench/json_candidates/build.sh and loaded with dlopen from
 *       $SV_SIMDJSON_SHIM; skipped when unset or absent
 *   (d) streamvisor's schema-directed scanner (core/codec_json.c) through
 *       sv_decoder_decode, the production path
 *   (e) the same scanner as it was at commit 173b80a, before issue 18's
 *       changes (CMakeLists.txt takes it from git at configure time);
 *       skipped when the build has no copy
 *
 * Every candidate's rows are first checked cell by cell against (d), so a
 * fast but wrong candidate shows up. Then each runs for `seconds` (default
 * 1) RUNS times, the candidates interleaved; the best run of each is
 * reported as records/s and ns/record.
 *
 * Record sets: "orders" (the default; the 7-field records above) or "bids"
 * (bench/run.sh's W1 input as bench_raw_kafka load writes it: seq, key,
 * auction, bidder, price, channel, url, ts, extra; ~200 bytes, 9 fields).
 *
 * usage: bench_json_decode [seconds] [nrecords] [orders|bids]
 * Reproduce (docs/records.md):
 *   cmake -S . -B build/h-codec-release -G Ninja -DCMAKE_BUILD_TYPE=Release
 *   cmake --build build/h-codec-release --target bench_json_decode
 *   bench/json_candidates/build.sh build/h-codec-release
 *   SV_SIMDJSON_SHIM=build/h-codec-release/libsvj_simdjson.so \
 *     build/h-codec-release/bench_json_decode 1 */
#include <dlfcn.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"

#define RESET_EVERY 1024
#define RUNS 5

/* ---- the records ---- */

static const char *const regions[] = {"EU-West",   "EU-Central", "US-East",
				      "US-West-2", "AP-South",   "SA-East"};
static const char *const statuses[] = {"completed", "pending", "failed",
				       "refunded", "in_review"};

static uint64_t rng(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static sv_schema_t *make_schema(void)
{
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "id", SV_T_INT64, false);
	sv_schema_add(s, "region", SV_T_STRING, true);
	sv_schema_add(s, "amount", SV_T_FLOAT64, true);
	sv_schema_add(s, "status", SV_T_STRING, true);
	sv_schema_add(s, "ts", SV_T_TIMESTAMP, true);
	sv_schema_add(s, "bidder", SV_T_INT64, true);
	sv_schema_add(s, "url", SV_T_STRING, true);
	return s;
}

/* W1's bids: the schema of bench/lib/profile.sh and bench/run.sh */
static sv_schema_t *make_bids_schema(void)
{
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "seq", SV_T_INT64, true);
	sv_schema_add(s, "key", SV_T_INT64, true);
	sv_schema_add(s, "auction", SV_T_INT64, true);
	sv_schema_add(s, "bidder", SV_T_INT64, true);
	sv_schema_add(s, "price", SV_T_INT64, true);
	sv_schema_add(s, "channel", SV_T_STRING, true);
	sv_schema_add(s, "url", SV_T_STRING, true);
	sv_schema_add(s, "ts", SV_T_TIMESTAMP, true);
	sv_schema_add(s, "extra", SV_T_STRING, true);
	return s;
}

typedef struct rec {
	char *p;
	size_t n;
} rec_t;

static rec_t *make_records(size_t n, size_t *total)
{
	rec_t *r = sv_calloc(n, sizeof(rec_t));
	uint64_t x = 0x2545F4914F6CDD1DULL;
	*total = 0;
	for (size_t i = 0; i < n; i++) {
		char buf[512];
		uint64_t a = rng(&x), b = rng(&x);
		int len = snprintf(
			buf, sizeof(buf),
			"{\"id\":%llu,\"region\":\"%s\",\"amount\":%llu.%02llu,"
			"\"status\":\"%s\",\"ts\":%llu,\"bidder\":%llu,"
			"\"url\":\"http://shop.example.com/item/"
			"%llu?ref=campaign-%llu"
			"&session=%016llx\"}",
			(unsigned long long)(a % 100000000), regions[a % 6],
			(unsigned long long)(b % 10000),
			(unsigned long long)(b >> 40) % 100, statuses[b % 5],
			1700000000000ULL +
				(unsigned long long)(a >> 30) % 100000000,
			(unsigned long long)(b >> 20) % 1000,
			(unsigned long long)(a >> 11) % 1000000,
			(unsigned long long)(b >> 7) % 1000,
			(unsigned long long)rng(&x));
		r[i].p = sv_malloc((size_t)len); /* exact size, no NUL */
		memcpy(r[i].p, buf, (size_t)len);
		r[i].n = (size_t)len;
		*total += (size_t)len;
	}
	return r;
}

/* Records shaped like bench_raw_kafka load's (a sample from the bench
 * topic: {"seq":16,"key":16,"auction":1009,"bidder":1004,"price":107702,
 * "channel":"Google","url":"https://www.nexmark.com/_cv/nqfh/khp/item.htm?
 * query=1","ts":1796150616747,"extra":"cdefghijklmnopqrstuvwxyzAB"}). */
static rec_t *make_bids(size_t n, size_t *total)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz_";
	rec_t *r = sv_calloc(n, sizeof(rec_t));
	uint64_t x = 0x2545F4914F6CDD1DULL;
	*total = 0;
	for (size_t i = 0; i < n; i++) {
		char buf[512], path[16], channel[24], query[40];
		uint64_t a = rng(&x), b = rng(&x);
		for (int k = 0; k < 14; k++)
			path[k] = k % 5 == 4 ? '/'
					     : letters[(a >> (k * 4)) % 27];
		path[14] = 0;
		if (b % 10 < 4) {
			snprintf(channel, sizeof(channel), "%s",
				 (const char *[]){"Google", "Facebook", "Baidu",
						  "Apple"}[b % 4]);
			query[0] = 0;
		} else {
			snprintf(channel, sizeof(channel), "channel-%llu",
				 (unsigned long long)(b >> 8) % 10000);
			snprintf(query, sizeof(query), "&channel_id=%llu",
				 (unsigned long long)(b >> 16) % 2147483648ULL);
		}
		double u = (double)(a >> 11) / 9007199254740992.0;
		long long price = (long long)(pow(10.0, u * 6.0) * 100.0 + 0.5);
		int len = snprintf(
			buf, sizeof(buf),
			"{\"seq\":%zu,\"key\":%zu,\"auction\":%llu,"
			"\"bidder\":%llu,\"price\":%lld,\"channel\":\"%s\","
			"\"url\":\"https://www.nexmark.com/%s/item.htm?query=1"
			"%s\",\"ts\":%llu,\"extra\":\"%.*s\"}",
			i * 8, i * 8 % 10000, 1000 + (unsigned long long)a % 20,
			1000 + (unsigned long long)(b >> 3) % 20, price,
			channel, path, query,
			1796150616745ULL + (unsigned long long)i / 8,
			(int)(b >> 32) % 27, "cdefghijklmnopqrstuvwxyzAB");
		r[i].p = sv_malloc((size_t)len); /* exact size, no NUL */
		memcpy(r[i].p, buf, (size_t)len);
		r[i].n = (size_t)len;
		*total += (size_t)len;
	}
	return r;
}

/* ---- candidates ---- */

typedef struct cand {
	const char *name;
	void *(*open)(const sv_schema_t *schema, const char **why);
	int (*decode)(void *ctx, const char *p, size_t n, sv_batch_t *b);
	void (*close)(void *ctx);
} cand_t;

/* (d) the production scanner */
static void *ours_open(const sv_schema_t *schema, const char **why)
{
	return sv_decoder_new(SV_FMT_JSON, schema);
}
static int ours_decode(void *ctx, const char *p, size_t n, sv_batch_t *b)
{
	char reason[128];
	return sv_decoder_decode(ctx, p, n, b, NULL, reason, sizeof(reason));
}
static void ours_close(void *ctx)
{
	sv_decoder_destroy(ctx);
}

/* (e) the scanner at 173b80a, called as the decoder front calls it */
#ifdef SV_BENCH_OLD_SCANNER
void *old_codec_json_new(const sv_schema_t *schema);
void old_codec_json_destroy(void *impl);
int old_codec_json_decode(void *impl, const char *p, size_t len, sv_batch_t *b,
			  sv_rowmeta_t **meta_out, char *reason,
			  size_t reason_len);
#endif
static void *old_open(const sv_schema_t *schema, const char **why)
{
#ifdef SV_BENCH_OLD_SCANNER
	return old_codec_json_new(schema);
#else
	*why = "no copy of the old scanner in this build (not a git checkout)";
	return NULL;
#endif
}
static int old_decode(void *ctx, const char *p, size_t n, sv_batch_t *b)
{
#ifdef SV_BENCH_OLD_SCANNER
	char reason[128];
	return old_codec_json_decode(ctx, p, n, b, NULL, reason,
				     sizeof(reason));
#else
	return -1;
#endif
}
static void old_close(void *ctx)
{
#ifdef SV_BENCH_OLD_SCANNER
	old_codec_json_destroy(ctx);
#endif
}

/* (a) jansson */
typedef struct jctx {
	const sv_schema_t *schema;
} jctx_t;

static void *jansson_open(const sv_schema_t *schema, const char **why)
{
	jctx_t *c = sv_malloc(sizeof(*c));
	c->schema = schema;
	return c;
}

int sv_codec_rfc3339(const char *p, size_t n, int64_t *ms_out); /* codec.c */

static int jansson_decode(void *ctx, const char *p, size_t n, sv_batch_t *b)
{
	jctx_t *c = ctx;
	json_error_t err;
	json_t *root = json_loadb(p, n, 0, &err);
	if (!root)
		return -1;
	if (!json_is_object(root))
		goto fail;
	sv_value_t *row = sv_batch_add_row(b, NULL);
	for (size_t i = 0; i < c->schema->nfields; i++) {
		const sv_field_t *f = &c->schema->fields[i];
		json_t *v = json_object_get(root, f->name);
		if (!v || json_is_null(v))
			continue;
		switch (f->type) {
		case SV_T_INT64:
			if (!json_is_integer(v))
				goto pop;
			row[i] = sv_int(json_integer_value(v));
			break;
		case SV_T_FLOAT64:
			if (!json_is_number(v))
				goto pop;
			row[i] = sv_float(json_number_value(v));
			break;
		case SV_T_BOOL:
			if (!json_is_boolean(v))
				goto pop;
			row[i] = sv_bool(json_is_true(v));
			break;
		case SV_T_STRING: {
			if (!json_is_string(v))
				goto pop;
			size_t len = json_string_length(v);
			row[i] = sv_str(
				sv_batch_strdup(b, json_string_value(v), len),
				(uint32_t)len);
			break;
		}
		case SV_T_TIMESTAMP: {
			int64_t ms;
			if (json_is_integer(v))
				ms = json_integer_value(v);
			else if (!json_is_string(v) ||
				 sv_codec_rfc3339(json_string_value(v),
						  json_string_length(v), &ms))
				goto pop;
			row[i] = sv_ts(ms);
			break;
		}
		default:
			goto pop;
		}
	}
	if (sv_is_null(&row[0]))
		goto pop;
	json_decref(root);
	return 0;
pop:
	sv_batch_pop_row(b);
fail:
	json_decref(root);
	return -1;
}
static void jansson_close(void *ctx)
{
	free(ctx);
}

/* (b) json-c through dlopen; only the handful of calls we need. */
enum {
	JC_NULL,
	JC_BOOLEAN,
	JC_DOUBLE,
	JC_INT,
	JC_OBJECT,
	JC_ARRAY,
	JC_STRING
};
typedef struct jcctx {
	const sv_schema_t *schema;
	void *lib, *tok;
	void *(*tokener_new)(void);
	void (*tokener_free)(void *);
	void (*tokener_reset)(void *);
	void *(*parse_ex)(void *, const char *, int);
	size_t (*parse_end)(void *);
	int (*get_ex)(void *, const char *, void **);
	int (*get_type)(const void *);
	int64_t (*get_int64)(const void *);
	double (*get_double)(const void *);
	const char *(*get_string)(void *);
	int (*get_string_len)(const void *);
	int (*get_boolean)(const void *);
	int (*put)(void *);
} jcctx_t;

static void *jsonc_open(const sv_schema_t *schema, const char **why)
{
	void *lib = dlopen("libjson-c.so.5", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		*why = "libjson-c.so.5 not found (apt-get install libjson-c5)";
		return NULL;
	}
	jcctx_t *c = sv_calloc(1, sizeof(*c));
	c->schema = schema;
	c->lib = lib;
	struct {
		void *dst;
		const char *sym;
	} syms[] = {
		{&c->tokener_new, "json_tokener_new"},
		{&c->tokener_free, "json_tokener_free"},
		{&c->tokener_reset, "json_tokener_reset"},
		{&c->parse_ex, "json_tokener_parse_ex"},
		{&c->parse_end, "json_tokener_get_parse_end"},
		{&c->get_ex, "json_object_object_get_ex"},
		{&c->get_type, "json_object_get_type"},
		{&c->get_int64, "json_object_get_int64"},
		{&c->get_double, "json_object_get_double"},
		{&c->get_string, "json_object_get_string"},
		{&c->get_string_len, "json_object_get_string_len"},
		{&c->get_boolean, "json_object_get_boolean"},
		{&c->put, "json_object_put"},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(syms); i++) {
		void *fn = dlsym(lib, syms[i].sym);
		if (!fn) {
			*why = "libjson-c.so.5 lacks a needed symbol";
			dlclose(lib);
			free(c);
			return NULL;
		}
		memcpy(syms[i].dst, &fn,
		       sizeof(fn)); /* object → function ptr */
	}
	c->tok = c->tokener_new();
	return c;
}

static int jsonc_decode(void *ctx, const char *p, size_t n, sv_batch_t *b)
{
	jcctx_t *c = ctx;
	c->tokener_reset(c->tok);
	void *root = c->parse_ex(c->tok, p, (int)n);
	if (!root)
		return -1;
	if (c->parse_end(c->tok) != n || c->get_type(root) != JC_OBJECT) {
		c->put(root);
		return -1;
	}
	sv_value_t *row = sv_batch_add_row(b, NULL);
	for (size_t i = 0; i < c->schema->nfields; i++) {
		const sv_field_t *f = &c->schema->fields[i];
		void *v;
		if (!c->get_ex(root, f->name, &v) || !v)
			continue;
		int t = c->get_type(v);
		switch (f->type) {
		case SV_T_INT64:
		case SV_T_TIMESTAMP:
			if (t != JC_INT)
				goto pop;
			row[i] = f->type == SV_T_INT64 ? sv_int(c->get_int64(v))
						       : sv_ts(c->get_int64(v));
			break;
		case SV_T_FLOAT64:
			if (t != JC_INT && t != JC_DOUBLE)
				goto pop;
			row[i] = sv_float(c->get_double(v));
			break;
		case SV_T_BOOL:
			if (t != JC_BOOLEAN)
				goto pop;
			row[i] = sv_bool(c->get_boolean(v));
			break;
		case SV_T_STRING: {
			if (t != JC_STRING)
				goto pop;
			size_t len = (size_t)c->get_string_len(v);
			row[i] = sv_str(
				sv_batch_strdup(b, c->get_string(v), len),
				(uint32_t)len);
			break;
		}
		default:
			goto pop;
		}
	}
	if (sv_is_null(&row[0]))
		goto pop;
	c->put(root);
	return 0;
pop:
	sv_batch_pop_row(b);
	c->put(root);
	return -1;
}

static void jsonc_close(void *ctx)
{
	jcctx_t *c = ctx;
	c->tokener_free(c->tok);
	dlclose(c->lib);
	free(c);
}

/* (c) simdjson on-demand through the C shim */
typedef struct svj_cell {
	int type;
	int64_t i;
	double f;
	const char *s;
	size_t len;
} svj_cell_t;

typedef struct sjctx {
	const sv_schema_t *schema;
	void *lib, *h;
	svj_cell_t *cells;
	void *(*new_)(const char *const *, const int *, size_t);
	int (*decode)(void *, const char *, size_t, svj_cell_t *);
	void (*free_)(void *);
} sjctx_t;

static void *simd_open(const sv_schema_t *schema, const char **why)
{
	const char *path = getenv("SV_SIMDJSON_SHIM");
	if (!path) {
		*why = "SV_SIMDJSON_SHIM not set (build it with "
		       "bench/json_candidates/build.sh)";
		return NULL;
	}
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		*why = "cannot dlopen $SV_SIMDJSON_SHIM";
		return NULL;
	}
	sjctx_t *c = sv_calloc(1, sizeof(*c));
	c->schema = schema;
	c->lib = lib;
	void *a = dlsym(lib, "svj_simd_new"),
	     *d = dlsym(lib, "svj_simd_decode"),
	     *f = dlsym(lib, "svj_simd_free");
	if (!a || !d || !f) {
		*why = "shim lacks svj_simd_* symbols";
		dlclose(lib);
		free(c);
		return NULL;
	}
	memcpy(&c->new_, &a, sizeof(a));
	memcpy(&c->decode, &d, sizeof(d));
	memcpy(&c->free_, &f, sizeof(f));
	const char **names = sv_calloc(schema->nfields, sizeof(char *));
	int *types = sv_calloc(schema->nfields, sizeof(int));
	for (size_t i = 0; i < schema->nfields; i++) {
		names[i] = schema->fields[i].name;
		types[i] = (int)schema->fields[i].type;
	}
	c->h = c->new_(names, types, schema->nfields);
	free(names);
	free(types);
	c->cells = sv_calloc(schema->nfields, sizeof(svj_cell_t));
	return c;
}

static int simd_decode(void *ctx, const char *p, size_t n, sv_batch_t *b)
{
	sjctx_t *c = ctx;
	if (c->decode(c->h, p, n, c->cells))
		return -1;
	if (c->cells[0].type == SV_T_NULL)
		return -1;
	sv_value_t *row = sv_batch_add_row(b, NULL);
	for (size_t i = 0; i < c->schema->nfields; i++) {
		const svj_cell_t *cl = &c->cells[i];
		switch (cl->type) {
		case SV_T_BOOL:
			row[i] = sv_bool(cl->i != 0);
			break;
		case SV_T_INT64:
			row[i] = sv_int(cl->i);
			break;
		case SV_T_TIMESTAMP:
			row[i] = sv_ts(cl->i);
			break;
		case SV_T_FLOAT64:
			row[i] = sv_float(cl->f);
			break;
		case SV_T_STRING:
			row[i] = sv_str(sv_batch_strdup(b, cl->s, cl->len),
					(uint32_t)cl->len);
			break;
		default:
			break;
		}
	}
	return 0;
}

static void simd_close(void *ctx)
{
	sjctx_t *c = ctx;
	c->free_(c->h);
	free(c->cells);
	dlclose(c->lib);
	free(c);
}

static const cand_t cands[] = {
	{"(a) jansson json_loadb + get", jansson_open, jansson_decode,
	 jansson_close},
	{"(b) json-c tokener + get_ex", jsonc_open, jsonc_decode, jsonc_close},
	{"(c) simdjson on-demand (shim)", simd_open, simd_decode, simd_close},
	{"(d) streamvisor scanner", ours_open, ours_decode, ours_close},
	{"(e) scanner at 173b80a", old_open, old_decode, old_close},
};

/* ---- driver ---- */

static bool same_rows(const sv_batch_t *a, const sv_batch_t *b)
{
	if (a->nrows != b->nrows)
		return false;
	for (size_t r = 0; r < a->nrows; r++)
		for (size_t c = 0; c < a->ncols; c++)
			if (!sv_value_equal(&sv_batch_row(a, r)[c],
					    &sv_batch_row(b, r)[c]) ||
			    sv_batch_row(a, r)[c].type !=
				    sv_batch_row(b, r)[c].type)
				return false;
	return true;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	size_t nrec = argc > 2 ? (size_t)atol(argv[2]) : 4096;
	const char *set = argc > 3 ? argv[3] : "orders";
	bool bids = !strcmp(set, "bids");
	if (seconds <= 0 || nrec == 0 || (!bids && strcmp(set, "orders"))) {
		fprintf(stderr,
			"usage: %s [seconds] [nrecords] [orders|bids]\n",
			argv[0]);
		return 2;
	}
	sv_schema_t *schema = bids ? make_bids_schema() : make_schema();
	size_t total;
	rec_t *recs = bids ? make_bids(nrec, &total)
			   : make_records(nrec, &total);
	printf("records: %zu distinct, avg %.0f bytes, schema %zu fields; "
	       "best of %d interleaved runs of %.1f s\n\n",
	       nrec, (double)total / (double)nrec, schema->nfields, RUNS,
	       seconds);
	printf("example: %.*s\n\n", (int)recs[0].n, recs[0].p);

	/* reference rows from the production decoder */
	sv_batch_t ref;
	sv_batch_init(&ref, schema);
	void *oc = ours_open(schema, NULL);
	for (size_t i = 0; i < nrec; i++)
		if (ours_decode(oc, recs[i].p, recs[i].n, &ref)) {
			fprintf(stderr, "scanner rejected record %zu\n", i);
			return 1;
		}
	ours_close(oc);

	/* open every candidate and check its rows against (d) */
	void *ctx[SV_ARRAY_LEN(cands)];
	const char *why[SV_ARRAY_LEN(cands)];
	bool match[SV_ARRAY_LEN(cands)];
	double best[SV_ARRAY_LEN(cands)] = {0};
	double per_run[SV_ARRAY_LEN(cands)][RUNS] = {{0}};
	sv_batch_t b;
	sv_batch_init(&b, schema);
	for (size_t k = 0; k < SV_ARRAY_LEN(cands); k++) {
		why[k] = "unavailable";
		ctx[k] = cands[k].open(schema, &why[k]);
		if (!ctx[k])
			continue;
		sv_batch_reset(&b);
		for (size_t i = 0; i < nrec; i++)
			cands[k].decode(ctx[k], recs[i].p, recs[i].n, &b);
		match[k] = same_rows(&b, &ref);
	}
	/* runs interleave the candidates, so load from other processes on
	 * the machine hits them alike; the best run of each counts */
	for (int run = 0; run < RUNS; run++) {
		for (size_t k = 0; k < SV_ARRAY_LEN(cands); k++) {
			if (!ctx[k])
				continue;
			size_t done = 0, i = 0, failed = 0;
			int64_t t0 = sv_mono_ns(), el;
			sv_batch_reset(&b);
			do {
				for (int j = 0; j < RESET_EVERY; j++) {
					failed += cands[k].decode(
							  ctx[k], recs[i].p,
							  recs[i].n, &b) != 0;
					if (++i == nrec)
						i = 0;
				}
				done += RESET_EVERY;
				sv_batch_reset(&b);
				el = sv_mono_ns() - t0;
			} while (el < (int64_t)(seconds * 1e9));
			if (failed)
				match[k] = false;
			double rps = (double)done * 1e9 / (double)el;
			if (rps > best[k])
				best[k] = rps;
			per_run[k][run] = rps;
		}
	}
	printf("| candidate | records/s | ns/record | MB/s | rows match (d) "
	       "|\n");
	printf("|---|---:|---:|---:|---|\n");
	for (size_t k = 0; k < SV_ARRAY_LEN(cands); k++) {
		if (!ctx[k]) {
			printf("| %s | skipped | | | %s |\n", cands[k].name,
			       why[k]);
			continue;
		}
		printf("| %s | %.2fM | %.0f | %.0f | %s |\n", cands[k].name,
		       best[k] / 1e6, 1e9 / best[k],
		       best[k] * ((double)total / (double)nrec) / 1e6,
		       match[k] ? "yes" : "NO");
		cands[k].close(ctx[k]);
	}
	/* (e) against (d): the cost ratio of each run (adjacent in time),
	 * sorted; the median is the figure */
	size_t d = SV_ARRAY_LEN(cands) - 2, e = SV_ARRAY_LEN(cands) - 1;
	if (per_run[d][0] > 0 && per_run[e][0] > 0) {
		double r[RUNS];
		for (int run = 0; run < RUNS; run++)
			r[run] = per_run[d][run] / per_run[e][run];
		for (int i = 1; i < RUNS; i++)
			for (int j = i; j > 0 && r[j] < r[j - 1]; j--) {
				double t = r[j];
				r[j] = r[j - 1];
				r[j - 1] = t;
			}
		printf("\ncost per record (e)/(d): median %.3f (min %.3f, max "
		       "%.3f) over %d runs\n",
		       r[RUNS / 2], r[0], r[RUNS - 1], RUNS);
	}
	sv_batch_release(&b);
	sv_batch_release(&ref);
	for (size_t i = 0; i < nrec; i++)
		free(recs[i].p);
	free(recs);
	sv_schema_destroy(schema);
	return 0;
}
