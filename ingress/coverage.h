/* coverage.h — capability coverage (RFC 048 / DESIGN.md §7): what this build
 * can do, reported by GET /v1/info, and the 422 refusal of a job spec that
 * needs something it cannot. Each record has a status (covered, partial,
 * uncovered, unknown) and a reason that must stay true of the code. */
#ifndef SV_COVERAGE_H
#define SV_COVERAGE_H

#include <jansson.h>
#include <stdbool.h>

#include "core/error.h"
#include "ingress/spec.h"

/* JSON array of every capability record; dev_cluster says whether the
 * "default" profile is the embedded development cluster. Caller frees. */
char *sv_coverage_json(bool dev_cluster);

/* NULL when spec needs only covered capabilities; else a SV_ERR_COVERAGE
 * error whose details are the coverage records that refuse it. */
sv_error_t *sv_coverage_check(const sv_jobspec_t *spec);

/* One coverage record, in the shape of every row of GET /v1/info: build
 * rows through this (and sv_coverage_refuse), never by hand, so a change of
 * the record shape applies everywhere. */
json_t *sv_coverage_record(const char *capability, const char *status,
			   const char *reason);

/* A SV_ERR_COVERAGE error with message and field whose details are the one
 * uncovered record (capability, reason). */
sv_error_t *sv_coverage_refuse(const char *capability, const char *reason,
			       const char *field, const char *message);

#endif
