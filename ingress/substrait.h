/* substrait.h — Substrait plans as a way to submit a job (issue 11).
 *
 * A job spec may carry `plan` instead of `source`, `schema` and `pipeline`:
 * a Substrait Plan (proto3 JSON or binary) with its read-root bindings. The
 * translator turns it into those three members of the one canonical
 * JobSpec, so the rest of streamvisor never sees Substrait. The wire helpers
 * (substrait_wire.c) make hostile bytes safe before protobuf-c sees them. */
#ifndef SV_SUBSTRAIT_H
#define SV_SUBSTRAIT_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/util.h"
#include "proto/spec.pb-c.h"

/* Deepest message nesting a plan may have (real plans: 10 to 16). */
#define SV_SUBSTRAIT_MAX_DEPTH 128

/* Check that data is well-formed protobuf wire data of desc nested at most
 * max_depth messages deep (recursing only into message fields desc knows).
 * SV_ERR_SUBMISSION otherwise. *depth_out (may be NULL): deepest level. */
sv_error_t *sv_pb_check(const ProtobufCMessageDescriptor *desc,
			const uint8_t *data, size_t len, int max_depth,
			int *depth_out);
/* Encode a proto3 JSON value as wire bytes of desc (caller frees *out). */
sv_error_t *sv_pb_from_json(const ProtobufCMessageDescriptor *desc,
			    const json_t *v, int max_depth, uint8_t **out,
			    size_t *len);
/* SV_ERR_COVERAGE naming the first unknown field of the tree under m,
 * except those listed as "<full message name>:<field number>". */
sv_error_t *sv_pb_check_unknown(const ProtobufCMessage *m,
				const char *const *allowed);
/* Base64 (standard or URL-safe, padding optional). */
sv_error_t *sv_b64_decode(const char *s, uint8_t **out, size_t *len);
char *sv_b64_encode(const uint8_t *data, size_t len);

/* Translate js->plan (its binary plan and bindings) into js->source,
 * js->schema and js->pipeline, allocated in arena; fills js->plan's
 * sha256, producer and version. Uses js->mode and js->event_time. Partial
 * coverage records of what the plan uses are appended to coverage (a JSON
 * array, may be NULL). Errors: SV_ERR_SUBMISSION (400) for malformed plans
 * and envelopes, SV_ERR_BINDING for bindings, SV_ERR_COVERAGE (422, with
 * the coverage record as details) for what this build does not run. */
sv_error_t *sv_substrait_translate(Streamvisor__JobSpec *js, sv_arena_t *arena,
				   json_t *coverage);

/* Coverage rows for GET /v1/info: plan_ingress:substrait and one per
 * Substrait relation, function and type the translator knows. */
void sv_substrait_coverage_rows(json_t *rows);

#endif
