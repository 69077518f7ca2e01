/* coverage.h — adapter coverage in IncQL's vocabulary (RFC 033 records,
 * NOTES-incql.md §2, docs/incql.md): one builder for every record, the
 * requirements a job needs and how this build answers them, the 422 policy,
 * and the table GET /v1/info shows.
 *
 * A record is the JSON of IncQL's AdapterCoverageRecord, field for field:
 * {coverage_id, requirement: {requirement_id, target, capability, guarantee,
 * reason, evidence_refs}, adapter_name, adapter_version, semantic_profile_id,
 * state, diagnostics: [{severity, code, message, target}], evidence_refs},
 * absent optionals as null. Ids: requirement_id =
 * "{target_id}:adapter-requirement:{capability}", coverage_id =
 * "{requirement_id}:coverage:streamvisor". Every producer of coverage
 * (/v1/info, submit's 201 and 422, ingress translators, observations) goes
 * through sv_coverage_record_new(). */
#ifndef SV_COVERAGE_H
#define SV_COVERAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/driver.h"
#include "core/error.h"
#include "ingress/plan.h"
#include "ingress/spec.h"

#define SV_ADAPTER_NAME "streamvisor"

/* Vocabulary checks: IncQL's AdapterRequirementCapability values plus
 * RFC 048's (Draft) streaming names; SemanticTargetKind values. */
bool sv_coverage_capability_known(const char *capability);
bool sv_coverage_capability_is_draft(const char *capability);
bool sv_coverage_target_kind_known(const char *kind);

/* A SemanticTarget as JSON. node_id / ordinal < 0 are null. Strings are
 * copied. Returns a new reference. */
json_t *sv_target_new(const char *kind, const char *target_id,
		      const char *plan_id, const char *scope_id,
		      const char *path, const char *name, int64_t node_id,
		      int64_t ordinal);
/* The same from the job spec's message. */
json_t *sv_coverage_target_from_proto(const Streamvisor__SemanticTarget *t);

/* One coverage record. target is borrowed (copied into the record);
 * capability, guarantee (required|preferred|optional) and state
 * (covered|partially_covered|uncovered|unknown) must be IncQL vocabulary,
 * else NULL is returned. reason says why the plan needs the capability.
 * message is the adapter's explanation for a state other than covered:
 * NULL gives IncQL's own text for the state, otherwise it follows that text
 * after ": ". A covered record has no diagnostics, as IncQL's. Returns a
 * new reference. */
json_t *sv_coverage_record_new(const json_t *target, const char *capability,
			       const char *guarantee, const char *reason,
			       const char *state, const char *message);
/* Append ref to the record's requirement.evidence_refs. Returns rec. */
json_t *sv_coverage_add_evidence(json_t *rec, const char *ref);

/* The policy (RFC 033): the first record of the array whose requirement is
 * required and whose state is uncovered or unknown (borrowed), or NULL when
 * nothing refuses execution. partially_covered never refuses. */
const json_t *sv_coverage_refusal(const json_t *records);

/* What the supervisor knows that coverage depends on. */
typedef struct sv_coverage_env {
	bool dev_cluster; /* "default" is the embedded development cluster */
	bool have_store; /* a data directory: checkpoints exist */
	/* what each source and sink kind can do (core/driver.h; borrowed):
	 * exactly_once and offset tracking are asked of the descriptors */
	const sv_drivers_t *drivers;
} sv_coverage_env_t;

/* The job's IncQL plan target: the client's (plan_target or plan_id in the
 * spec), else derived as IncQL derives one for a plan without a Prism
 * cursor: "substrait:root:{root_kind}:{source_name}:{columns}" over the
 * plan's output columns (plan may be NULL when it did not build: then
 * IncQL's "plan:unavailable:execute:{now_ns}"). New reference. */
json_t *sv_coverage_plan_target(const sv_jobspec_t *spec,
				const sv_plan_t *plan);

/* Every requirement the job has (inferred as IncQL infers them, RFC 048's
 * streaming names per step, and the client's explicit ones) with this
 * build's answer, as an array of records. plan_target borrowed. */
json_t *sv_coverage_for_job(const sv_jobspec_t *spec, const sv_plan_t *plan,
			    const json_t *plan_target,
			    const sv_coverage_env_t *env);

/* Submit's check: *records (new reference, may be NULL on return when not
 * wanted) gets sv_coverage_for_job(); returns NULL when the policy accepts,
 * else SV_ERR_COVERAGE naming the refusing requirement, with every record
 * as its details. */
sv_error_t *sv_coverage_check(const sv_jobspec_t *spec, const sv_plan_t *plan,
			      const json_t *plan_target,
			      const sv_coverage_env_t *env, json_t **records);

/* A coverage error from building the plan (unknown function, aggregate):
 * gives err the details of one uncovered record on the step its field
 * names, under plan_target (borrowed). Returns err. */
sv_error_t *sv_coverage_plan_error(sv_error_t *err, const json_t *plan_target);

/* For producers that name a row "<family>:<name>" (the Substrait ingress:
 * "substrait_rel:join", "substrait_function:md5", ...; "operator:x",
 * "function:x") or by a capability: the row as an RFC 033 record through
 * sv_coverage_record_new(), its capability mapped from the family
 * (docs/incql.md, "Rows named by family"), the name kept as the target's
 * name; status "partial" reads partially_covered; reason becomes the
 * adapter's message. Target: under the /v1/info placeholder plan. NULL for
 * a name that maps to nothing. */
json_t *sv_coverage_record(const char *name, const char *status,
			   const char *reason);
/* SV_ERR_COVERAGE with message and field, whose details are the one
 * uncovered record of sv_coverage_record(name, "uncovered", reason) under
 * IncQL's unavailable plan target (the plan does not exist yet). */
sv_error_t *sv_coverage_refuse(const char *name, const char *reason,
			       const char *field, const char *message);

/* Parallelism > 1 (docs/parallelism.md): NULL, or SV_ERR_COVERAGE (422)
 * naming the first window or dedup step whose key does not include
 * source.partitioned_by (each task sees one partition). */
sv_error_t *sv_coverage_parallel_check(const sv_jobspec_t *spec);

/* GET /v1/info's coverage: {"capabilities": [records], "vocabulary": {...},
 * "notes": {capability: how streamvisor covers it}}. New reference. */
json_t *sv_coverage_info(const sv_coverage_env_t *env);

#endif
