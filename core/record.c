/* record.c — schema bookkeeping, value comparison and hashing, and the
 * reusable row batch (see record.h). */
#include "core/record.h"

#include <math.h>
#include <string.h>
#include <stdlib.h>

static const char *const type_names[SV_T__COUNT] = {
	[SV_T_NULL] = "null",     [SV_T_BOOL] = "bool",
	[SV_T_INT64] = "int64",   [SV_T_FLOAT64] = "float64",
	[SV_T_STRING] = "string", [SV_T_TIMESTAMP] = "timestamp_ms",
};

const char *sv_type_name(sv_type_t t)
{
	return (unsigned)t < SV_T__COUNT ? type_names[t] : "unknown";
}

bool sv_type_parse(const char *name, sv_type_t *out)
{
	for (int t = SV_T_BOOL; t < SV_T__COUNT; t++) {
		if (!strcmp(name, type_names[t])) {
			*out = (sv_type_t)t;
			return true;
		}
	}
	return false;
}

static bool is_num(uint8_t t)
{
	return t == SV_T_INT64 || t == SV_T_FLOAT64 || t == SV_T_TIMESTAMP;
}

bool sv_value_equal(const sv_value_t *a, const sv_value_t *b)
{
	if (a->type != b->type) {
		if (is_num(a->type) && is_num(b->type))
			return sv_value_cmp(a, b) == 0;
		return false;
	}
	switch (a->type) {
	case SV_T_NULL:
		return true;
	case SV_T_BOOL:
		return a->v.b == b->v.b;
	case SV_T_INT64:
	case SV_T_TIMESTAMP:
		return a->v.i == b->v.i;
	case SV_T_FLOAT64:
		return a->v.f == b->v.f;
	case SV_T_STRING:
		return a->len == b->len &&
			(!a->len || !memcmp(a->v.s, b->v.s, a->len));
	default:
		return false;
	}
}

static int rank(uint8_t t)
{
	switch (t) {
	case SV_T_NULL:
		return 0;
	case SV_T_BOOL:
		return 1;
	case SV_T_STRING:
		return 3;
	default:
		return 2;
	}
}

int sv_value_cmp(const sv_value_t *a, const sv_value_t *b)
{
	int ra = rank(a->type), rb = rank(b->type);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	switch (ra) {
	case 0:
		return 0;
	case 1:
		return (int)a->v.b - (int)b->v.b;
	case 3: {
		uint32_t n = a->len < b->len ? a->len : b->len;
		int c = n ? memcmp(a->v.s, b->v.s, n) : 0;
		if (c)
			return c < 0 ? -1 : 1;
		return a->len < b->len ? -1 : a->len > b->len;
	}
	default:
		if (a->type != SV_T_FLOAT64 && b->type != SV_T_FLOAT64)
			return a->v.i < b->v.i ? -1 : a->v.i > b->v.i;
		double x = a->type == SV_T_FLOAT64 ? a->v.f : (double)a->v.i;
		double y = b->type == SV_T_FLOAT64 ? b->v.f : (double)b->v.i;
		return x < y ? -1 : x > y;
	}
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

uint64_t sv_value_hash(const sv_value_t *v, uint64_t seed)
{
	uint64_t h = seed ^ 0x9e3779b97f4a7c15ULL;
	switch (v->type) {
	case SV_T_NULL:
		return mix(h + 1);
	case SV_T_BOOL:
		return mix(h + 2 + v->v.b);
	case SV_T_INT64:
	case SV_T_TIMESTAMP:
		return mix(h ^ (uint64_t)v->v.i);
	case SV_T_FLOAT64: {
		/* equal to an int64 of the same value → same hash */
		double f = v->v.f;
		if (f == floor(f) && fabs(f) < 9.2e18)
			return mix(h ^ (uint64_t)(int64_t)f);
		uint64_t bits;
		memcpy(&bits, &f, sizeof(bits));
		return mix(h ^ bits);
	}
	case SV_T_STRING: {
		/* FNV-1a over bytes, then mixed */
		uint64_t x = 0xcbf29ce484222325ULL ^ h;
		for (uint32_t i = 0; i < v->len; i++) {
			x ^= (unsigned char)v->v.s[i];
			x *= 0x100000001b3ULL;
		}
		return mix(x);
	}
	default:
		return h;
	}
}

sv_schema_t *sv_schema_new(void)
{
	return sv_calloc(1, sizeof(sv_schema_t));
}

void sv_schema_destroy(sv_schema_t *schema)
{
	if (!schema)
		return;
	for (size_t i = 0; i < schema->nfields; i++)
		free(schema->fields[i].name);
	free(schema->fields);
	free(schema);
}

sv_schema_t *sv_schema_copy(const sv_schema_t *schema)
{
	sv_schema_t *c = sv_schema_new();
	for (size_t i = 0; i < schema->nfields; i++)
		sv_schema_add(c, schema->fields[i].name, schema->fields[i].type,
			      schema->fields[i].nullable);
	return c;
}

int sv_schema_add(sv_schema_t *schema, const char *name, sv_type_t type,
		  bool nullable)
{
	if (sv_schema_find(schema, name) >= 0)
		return -1;
	schema->fields = sv_realloc(schema->fields,
				    (schema->nfields + 1) * sizeof(sv_field_t));
	sv_field_t *f = &schema->fields[schema->nfields];
	f->name = sv_strdup(name);
	f->type = type;
	f->nullable = nullable;
	return (int)schema->nfields++;
}

int sv_schema_findn(const sv_schema_t *schema, const char *name, size_t len)
{
	for (size_t i = 0; i < schema->nfields; i++)
		if (strlen(schema->fields[i].name) == len &&
		    !memcmp(schema->fields[i].name, name, len))
			return (int)i;
	return -1;
}

int sv_schema_find(const sv_schema_t *schema, const char *name)
{
	return sv_schema_findn(schema, name, strlen(name));
}

/* ---- batch ---- */

void sv_batch_init(sv_batch_t *b, const sv_schema_t *schema)
{
	memset(b, 0, sizeof(*b));
	b->schema = schema;
	b->ncols = schema ? schema->nfields : 0;
	sv_arena_init(&b->arena);
}

void sv_batch_release(sv_batch_t *b)
{
	free(b->vals);
	free(b->meta);
	free(b->rejects);
	sv_arena_release(&b->arena);
	memset(b, 0, sizeof(*b));
}

void sv_batch_reset(sv_batch_t *b)
{
	b->nrows = 0;
	b->nrejects = 0;
	sv_arena_reset(&b->arena);
}

sv_value_t *sv_batch_add_row(sv_batch_t *b, sv_rowmeta_t **meta)
{
	if (b->nrows == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		b->vals = sv_realloc(b->vals,
				     cap * (b->ncols ? b->ncols : 1) *
					     sizeof(sv_value_t));
		b->meta = sv_realloc(b->meta, cap * sizeof(sv_rowmeta_t));
		b->cap = cap;
	}
	size_t r = b->nrows++;
	sv_value_t *row = b->vals + r * b->ncols;
	memset(row, 0, b->ncols * sizeof(sv_value_t));
	sv_rowmeta_t *m = &b->meta[r];
	m->partition = -1;
	m->flags = 0;
	m->offset = -1;
	m->source_ts_ms = -1;
	m->event_ms = INT64_MIN;
	if (meta)
		*meta = m;
	return row;
}

void sv_batch_pop_row(sv_batch_t *b)
{
	if (b->nrows)
		b->nrows--;
}

void sv_batch_compact(sv_batch_t *b, const uint8_t *keep)
{
	size_t w = 0;
	for (size_t r = 0; r < b->nrows; r++) {
		if (!keep[r])
			continue;
		if (w != r) {
			memcpy(b->vals + w * b->ncols, b->vals + r * b->ncols,
			       b->ncols * sizeof(sv_value_t));
			b->meta[w] = b->meta[r];
		}
		w++;
	}
	b->nrows = w;
}

const char *sv_batch_strdup(sv_batch_t *b, const char *p, size_t n)
{
	return sv_arena_memdup(&b->arena, p, n);
}

void sv_batch_reject(sv_batch_t *b, int32_t partition, int64_t offset,
		     const char *payload, size_t len, const char *reason)
{
	if (b->nrejects == b->rejcap) {
		b->rejcap = b->rejcap ? b->rejcap * 2 : 16;
		b->rejects = sv_realloc(b->rejects,
					b->rejcap * sizeof(sv_reject_t));
	}
	sv_reject_t *rj = &b->rejects[b->nrejects++];
	rj->partition = partition;
	rj->offset = offset;
	rj->payload = sv_arena_memdup(&b->arena, payload, len);
	rj->len = len;
	size_t rl = strlen(reason);
	char *r = sv_arena_alloc(&b->arena, rl + 1);
	memcpy(r, reason, rl + 1);
	rj->reason = r;
}

void sv_batch_copy_row(sv_batch_t *dst, const sv_batch_t *src, size_t r)
{
	sv_rowmeta_t *m;
	sv_value_t *out = sv_batch_add_row(dst, &m);
	const sv_value_t *in = sv_batch_row(src, r);
	*m = src->meta[r];
	for (size_t c = 0; c < dst->ncols && c < src->ncols; c++) {
		out[c] = in[c];
		if (in[c].type == SV_T_STRING)
			out[c].v.s = sv_arena_memdup(&dst->arena, in[c].v.s,
						     in[c].len);
	}
}
