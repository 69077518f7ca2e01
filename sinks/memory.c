/* memory.c — the "memory" sink (see memory.h): JSON lines kept in memory.
 *
 * Rows and raw payloads live in two rings of slots. A slot owns its own
 * buffer and keeps it when the ring wraps, so a bounded sink (preview)
 * stops allocating once it is full; an unbounded ring doubles as it grows.
 * write encodes the whole batch before taking the lock, so the lock covers
 * only the copies into the ring. */
#include "sinks/memory.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
	char *data; /* NUL-terminated */
	size_t len, cap;
	char *reason; /* raw payloads only; may be NULL */
} slot_t;

typedef struct ring {
	slot_t *slots;
	size_t cap; /* slots allocated */
	size_t head; /* index of the oldest */
	size_t n; /* slots in use */
} ring_t;

typedef struct sv_memsink {
	sv_sink_t base;
	const sv_schema_t *schema;
	pthread_mutex_t lock;
	size_t max; /* 0: unbounded */
	ring_t rows, raw;
	size_t dropped;
} sv_memsink_t;

static sv_memsink_t *memsink(sv_sink_t *snk)
{
	return (sv_memsink_t *)snk;
}

static slot_t *ring_at(ring_t *r, size_t i)
{
	return &r->slots[(r->head + i) % r->cap];
}

static void slot_release(slot_t *s)
{
	free(s->data);
	free(s->reason);
	memset(s, 0, sizeof(*s));
}

/* Drop the oldest slot (memory freed). */
static void ring_drop_oldest(ring_t *r)
{
	slot_release(&r->slots[r->head]);
	r->head = (r->head + 1) % r->cap;
	r->n--;
}

/* The slot to overwrite with a new entry; *dropped is set when the oldest
 * entry made room for it. */
static slot_t *ring_push(ring_t *r, size_t max, bool *dropped)
{
	*dropped = false;
	if (max && r->n >= max) {
		while (r->n > max) /* max was lowered meanwhile */
			ring_drop_oldest(r);
		/* Move the oldest entry's buffer to the newest position. */
		slot_t old = r->slots[r->head];
		memset(&r->slots[r->head], 0, sizeof(slot_t));
		r->head = (r->head + 1) % r->cap;
		free(old.reason);
		old.reason = NULL;
		slot_t *s = ring_at(r, r->n - 1);
		*s = old;
		*dropped = true;
		return s;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		if (max && cap > max)
			cap = max;
		slot_t *slots = sv_calloc(cap, sizeof(slot_t));
		for (size_t i = 0; i < r->n; i++)
			slots[i] = *ring_at(r, i);
		free(r->slots);
		r->slots = slots;
		r->cap = cap;
		r->head = 0;
	}
	slot_t *s = ring_at(r, r->n);
	r->n++;
	return s;
}

static void slot_set(slot_t *s, const char *p, size_t len)
{
	if (!s->data || s->cap < len + 1) {
		free(s->data);
		s->cap = len + 1 > 64 ? len + 1 : 64;
		s->data = sv_malloc(s->cap);
	}
	if (len)
		memcpy(s->data, p, len);
	s->data[len] = '\0';
	s->len = len;
}

static void ring_release(ring_t *r)
{
	for (size_t i = 0; i < r->cap; i++)
		slot_release(&r->slots[i]);
	free(r->slots);
	memset(r, 0, sizeof(*r));
}

static sv_error_t *mem_open(const sv_sink_conf_t *conf, sv_sink_t **out)
{
	*out = NULL;
	if (!conf->schema && !conf->raw)
		return sv_error_new(SV_ERR_BINDING,
				    "memory sink needs a schema");
	sv_memsink_t *m = sv_calloc(1, sizeof(*m));
	m->base.ops = &sv_sink_memory_ops;
	m->schema = conf->schema;
	pthread_mutex_init(&m->lock, NULL);
	*out = &m->base;
	return NULL;
}

static sv_error_t *mem_write(sv_sink_t *snk, const sv_batch_t *b)
{
	sv_memsink_t *m = memsink(snk);
	if (!b->nrows)
		return NULL;
	if (!m->schema)
		return sv_error_new(SV_ERR_SINK_COMMIT,
				    "memory sink opened for raw payloads only");
	const sv_schema_t *schema = b->schema ? b->schema : m->schema;
	sv_buf_t buf;
	sv_buf_init(&buf);
	size_t *ends = sv_malloc(b->nrows * sizeof(size_t));
	for (size_t r = 0; r < b->nrows; r++) {
		sv_json_encode_row(schema, sv_batch_row(b, r), &buf);
		ends[r] = buf.len;
	}
	pthread_mutex_lock(&m->lock);
	size_t start = 0;
	for (size_t r = 0; r < b->nrows; r++) {
		bool dropped;
		slot_t *s = ring_push(&m->rows, m->max, &dropped);
		slot_set(s, buf.data + start, ends[r] - start);
		m->dropped += dropped;
		start = ends[r];
	}
	m->base.records_out += b->nrows;
	pthread_mutex_unlock(&m->lock);
	free(ends);
	sv_buf_release(&buf);
	return NULL;
}

static sv_error_t *mem_write_raw(sv_sink_t *snk, const char *payload,
				 size_t len, const char *reason)
{
	sv_memsink_t *m = memsink(snk);
	pthread_mutex_lock(&m->lock);
	bool dropped;
	slot_t *s = ring_push(&m->raw, m->max, &dropped);
	slot_set(s, payload, len);
	s->reason = reason ? sv_strdup(reason) : NULL;
	m->base.records_out++;
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static sv_error_t *mem_flush(sv_sink_t *snk, int timeout_ms)
{
	/* everything written is already held */
	return NULL;
}

static void mem_close(sv_sink_t *snk)
{
	sv_memsink_t *m = memsink(snk);
	if (!m)
		return;
	ring_release(&m->rows);
	ring_release(&m->raw);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void sv_sink_memory_set_max(sv_sink_t *snk, size_t max)
{
	sv_memsink_t *m = memsink(snk);
	pthread_mutex_lock(&m->lock);
	m->max = max;
	if (max) {
		while (m->rows.n > max) {
			ring_drop_oldest(&m->rows);
			m->dropped++;
		}
		while (m->raw.n > max)
			ring_drop_oldest(&m->raw);
	}
	pthread_mutex_unlock(&m->lock);
}

size_t sv_sink_memory_count(sv_sink_t *snk)
{
	sv_memsink_t *m = memsink(snk);
	pthread_mutex_lock(&m->lock);
	size_t n = m->rows.n;
	pthread_mutex_unlock(&m->lock);
	return n;
}

size_t sv_sink_memory_raw_count(sv_sink_t *snk)
{
	sv_memsink_t *m = memsink(snk);
	pthread_mutex_lock(&m->lock);
	size_t n = m->raw.n;
	pthread_mutex_unlock(&m->lock);
	return n;
}

size_t sv_sink_memory_dropped(sv_sink_t *snk)
{
	sv_memsink_t *m = memsink(snk);
	pthread_mutex_lock(&m->lock);
	size_t n = m->dropped;
	pthread_mutex_unlock(&m->lock);
	return n;
}

char *sv_sink_memory_lines(sv_sink_t *snk, size_t limit)
{
	sv_memsink_t *m = memsink(snk);
	sv_buf_t out;
	sv_buf_init(&out);
	pthread_mutex_lock(&m->lock);
	size_t n = m->rows.n;
	if (limit && limit < n)
		n = limit;
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += ring_at(&m->rows, i)->len + 1;
	sv_buf_reserve(&out, total + 1);
	for (size_t i = 0; i < n; i++) {
		const slot_t *s = ring_at(&m->rows, i);
		if (i)
			sv_buf_putc(&out, '\n');
		sv_buf_append(&out, s->data, s->len);
	}
	pthread_mutex_unlock(&m->lock);
	if (!out.len) {
		sv_buf_release(&out);
		return sv_strdup("");
	}
	return sv_buf_detach(&out);
}

void sv_sink_memory_each(sv_sink_t *snk,
			 void (*cb)(const char *line, size_t len, void *opaque),
			 void *opaque)
{
	sv_memsink_t *m = memsink(snk);
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->rows.n; i++) {
		const slot_t *s = ring_at(&m->rows, i);
		cb(s->data, s->len, opaque);
	}
	pthread_mutex_unlock(&m->lock);
}

void sv_sink_memory_raw_each(sv_sink_t *snk,
			     void (*cb)(const char *payload, size_t len,
					const char *reason, void *opaque),
			     void *opaque)
{
	sv_memsink_t *m = memsink(snk);
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->raw.n; i++) {
		const slot_t *s = ring_at(&m->raw, i);
		cb(s->data, s->len, s->reason, opaque);
	}
	pthread_mutex_unlock(&m->lock);
}

void sv_sink_memory_clear(sv_sink_t *snk)
{
	sv_memsink_t *m = memsink(snk);
	pthread_mutex_lock(&m->lock);
	ring_release(&m->rows);
	ring_release(&m->raw);
	pthread_mutex_unlock(&m->lock);
}

static const sv_driver_t memory_driver = {.kind = "memory",
					  .caps = SV_DRIVER_RAW};

const sv_sink_ops_t sv_sink_memory_ops = {
	.driver = &memory_driver,
	.open = mem_open,
	.write = mem_write,
	.write_raw = mem_write_raw,
	.flush = mem_flush,
	.close = mem_close,
};
