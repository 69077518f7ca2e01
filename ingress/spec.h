/* spec.h — job specs: parse (JSON or protobuf), validate, canonicalize.
 *
 * A submitted spec becomes a Streamvisor__JobSpec message (proto/spec.proto)
 * with every default filled in. That message is the job definition: it is
 * stored, shown back, and its packed bytes are hashed (SHA-256) into the
 * plan id, so two submissions that mean the same plan get the same id. */
#ifndef SV_SPEC_H
#define SV_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/driver.h"
#include "core/error.h"
#include "proto/spec.pb-c.h"

typedef struct sv_jobspec {
	Streamvisor__JobSpec *msg; /* unpacked by protobuf-c; owned */
	uint8_t *packed; /* canonical bytes; owned */
	size_t packed_len;
	char plan_id[65]; /* hex SHA-256 of packed without the plan member */
	char *coverage_json; /* plan specs: partial coverage records of what
			      * the translation uses (JSON array); or NULL */
} sv_jobspec_t;

/* Parse a JSON job spec. Errors are SV_ERR_SUBMISSION with err->field set to
 * the path of the offending field ("source.topic", "pipeline[1].filter") and
 * a message naming it: unknown field, wrong type, missing, bad value.
 * drivers (borrowed) says which source and sink kinds exist and what each
 * takes (core/driver.h): the kind-specific fields (topic, path, start, ...)
 * are checked and defaulted from the kind's descriptor. */
sv_error_t *sv_jobspec_parse_json(const char *text, size_t len,
				  const sv_drivers_t *drivers,
				  sv_jobspec_t **out);
/* Parse a protobuf-encoded Streamvisor.JobSpec; same validation. */
sv_error_t *sv_jobspec_parse_proto(const uint8_t *data, size_t len,
				   const sv_drivers_t *drivers,
				   sv_jobspec_t **out);
void sv_jobspec_destroy(sv_jobspec_t *spec);

/* The spec as JSON in the submitted shape, defaults filled in (no secrets:
 * specs only ever name cluster profiles); a plan spec keeps its plan
 * (as substrait_base64) and bindings, so parsing this text gives the same
 * job. Caller frees. */
char *sv_jobspec_to_json(const sv_jobspec_t *spec);

/* checkpoint.full_every when the spec leaves it 0: incremental
 * checkpoints with a full state snapshot every this many checkpoints
 * (docs/checkpoints.md "Incremental checkpoints"; 1 = every one full). */
#define SV_SPEC_FULL_EVERY_DEFAULT 100

/* The translated job spec: source, schema and pipeline even for a plan
 * spec, which adds "substrait": {sha256, producer, version, registry}.
 * What dry_run answers. Caller frees. */
char *sv_jobspec_translated_json(const sv_jobspec_t *spec);

/* A plan spec's Substrait identity {sha256, producer, version, from_json,
 * registry} (RFC 032's submitted logical plan identity), or NULL. */
json_t *sv_jobspec_substrait_json(const sv_jobspec_t *spec);

static inline bool sv_jobspec_bounded(const sv_jobspec_t *spec)
{
	return spec->msg->mode[0] == 'b';
}

/* Worker threads (members) of the job: 1 unless the spec asks for more. */
static inline int sv_jobspec_parallelism(const sv_jobspec_t *spec)
{
	return spec->msg->parallelism > 1 ? spec->msg->parallelism : 1;
}

/* resources.memory_mb bounds (docs/jobspec.md): the minimum is per member */
#define SV_SPEC_MEMORY_MB_MIN 16
#define SV_SPEC_MEMORY_MB_MAX 1048576

/* The job's memory budget in bytes (resources.memory_mb), 0: none. */
static inline int64_t sv_jobspec_memory_budget(const sv_jobspec_t *spec)
{
	const Streamvisor__Resources *r = spec->msg->resources;
	return r && r->memory_mb > 0 ? r->memory_mb * 1024 * 1024 : 0;
}

/* event_time.watermark_scope is "partition": each task fires on its own
 * partition's watermark instead of the job-wide minimum. */
static inline bool sv_jobspec_wm_per_partition(const sv_jobspec_t *spec)
{
	const Streamvisor__EventTime *et = spec->msg->event_time;
	return et && et->watermark_scope && et->watermark_scope[0] == 'p';
}

/* The transaction timeout of an exactly-once Kafka sink (default 60 s). */
static inline int64_t sv_sink_txn_timeout_ms(const Streamvisor__Sink *s)
{
	return s->transaction_timeout_ms > 0 ? s->transaction_timeout_ms
					     : 60000;
}

#endif
