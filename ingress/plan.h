/* plan.h — turn a job spec into an executable plan: the input schema, the
 * operator pipeline with every expression parsed and type-checked, and the
 * columns the worker needs (event time, sink key). Built once at submit time
 * to validate, and again for each attempt. */
#ifndef SV_PLAN_H
#define SV_PLAN_H

#include "core/error.h"
#include "core/operator.h"
#include "ingress/spec.h"

typedef struct sv_plan {
	sv_schema_t *schema; /* input schema; owned */
	sv_pipeline_t *pipeline; /* owned */
	int event_time_col; /* input column of event_time.field, or -1 */
	int sink_key_col; /* output column used as message key, or -1 */
	bool has_windows; /* any stateful operator */
	bool has_proc_windows; /* any processing-time window */
	/* Schema of the rows a window with late: side_output sends to the
	 * late sink (that window's input), or NULL. Borrowed from the
	 * pipeline. At most one window per job may side-output. */
	const sv_schema_t *late_schema;
	/* A join step's second input (docs/joins.md): its schema (owned) and
	 * event-time column, and the step's index; NULL, -1, -1 without a
	 * join. */
	sv_schema_t *right_schema;
	int right_event_time_col;
	int join_step;
} sv_plan_t;

/* Errors: SV_ERR_SUBMISSION with err->field ("pipeline[1].filter") for bad
 * expressions and columns; SV_ERR_COVERAGE for functions, aggregates or
 * delivery modes this build does not cover. */
sv_error_t *sv_plan_build(const sv_jobspec_t *spec, sv_plan_t **out);
void sv_plan_destroy(sv_plan_t *plan);

#endif
