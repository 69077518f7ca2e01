/* sink.h — the sink interface. Drivers are vtables listed in one static
 * registry (sinks/registry.c); callers use only the inline wrappers.
 *
 * A sink encodes rows of its schema (core/codec.h) and delivers them. write
 * may buffer; flush returns once everything written so far is acknowledged
 * (at-least-once: offsets are committed only after flush). Transactional
 * methods (begin/commit/abort) come with exactly-once delivery. */
#ifndef SV_SINK_H
#define SV_SINK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/codec.h"
#include "core/error.h"
#include "core/record.h"

typedef struct sv_sink_conf {
	const char *kind;          /* "kafka", "memory", "null" */
	const char *job_id;
	int attempt;
	const sv_cluster_t *cluster; /* kafka: resolved profile (borrowed) */
	const char *topic;
	sv_format_t format;        /* output format (json) */
	const sv_schema_t *schema; /* borrowed; outlives the sink */
	int key_column;            /* column used as the message key, or -1 */
	bool raw;                  /* dead-letter sink: write_raw only */
} sv_sink_conf_t;

typedef struct sv_sink sv_sink_t;

typedef struct sv_sink_ops {
	const char *name;
	sv_error_t *(*open)(const sv_sink_conf_t *conf, sv_sink_t **out);
	/* Encode and enqueue every row of b. */
	sv_error_t *(*write)(sv_sink_t *snk, const sv_batch_t *b);
	/* Enqueue one raw payload (dead letters: the undecodable input as it
	 * came, with the reason as a header when the driver has headers). */
	sv_error_t *(*write_raw)(sv_sink_t *snk, const char *payload, size_t len,
				 const char *reason);
	/* Wait until everything written is acknowledged, at most timeout_ms. */
	sv_error_t *(*flush)(sv_sink_t *snk, int timeout_ms);
	void (*close)(sv_sink_t *snk);
} sv_sink_ops_t;

struct sv_sink {
	const sv_sink_ops_t *ops;
	uint64_t records_out; /* rows acknowledged (or enqueued, see driver) */
};

const sv_sink_ops_t *sv_sink_find(const char *kind);
/* Errors: SV_ERR_BINDING (unknown kind, cluster, missing topic). */
sv_error_t *sv_sink_open(const sv_sink_conf_t *conf, sv_sink_t **out);

static inline sv_error_t *sv_sink_write(sv_sink_t *snk, const sv_batch_t *b)
{
	return snk->ops->write(snk, b);
}
static inline sv_error_t *sv_sink_write_raw(sv_sink_t *snk, const char *p,
					    size_t len, const char *reason)
{
	return snk->ops->write_raw(snk, p, len, reason);
}
static inline sv_error_t *sv_sink_flush(sv_sink_t *snk, int timeout_ms)
{
	return snk->ops->flush ? snk->ops->flush(snk, timeout_ms) : NULL;
}
static inline void sv_sink_close(sv_sink_t *snk)
{
	if (snk)
		snk->ops->close(snk);
}

#endif
