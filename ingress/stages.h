/* stages.h — the repartition planner (docs/repartition.md): at parallelism
 * > 1, a job whose first keyed step (window, dedup) is keyed on a column
 * that does not follow source.partitioned_by is split there into stage 0
 * (the source and the steps before it, writing to an internal topic keyed
 * by the step's key) and stage 1 (that topic, co-partitioned by the key,
 * and the rest of the pipeline to the job's sink). */
#ifndef SV_STAGES_H
#define SV_STAGES_H

#include <stddef.h>

#include "core/error.h"
#include "ingress/spec.h"

/* The format name of repartition topics in derived specs. */
#define SV_STAGES_FORMAT "sv-row"

/* The index of the step the job is split at, or -1 when it runs in one
 * stage (parallelism 1, or every keyed step follows partitioned_by).
 * *key (borrowed from js) is the step's one key column, NULL when the step
 * cannot be repartitioned by this build (the coverage check says why). */
int sv_stages_split_at(const Streamvisor__JobSpec *js, const char **key);

/* Why a job split at step `at` cannot run (more than one repartition, a
 * multi-column key, a plan spec, a join, the event-time
 * column dropped before the split), as a message into msg (size len);
 * false when it can. */
bool sv_stages_refused(const sv_jobspec_t *spec, int at, char *msg, size_t len);

/* The internal topic of job_id: "_streamvisor.<job id>.rp0". Caller
 * frees. */
char *sv_stages_topic(const char *job_id);

/* The two stage specs of a split job (spec and job_id borrowed; *s0 and
 * *s1 owned by the caller, sv_jobspec_destroy). Their plan id is spec's.
 * Errors: SV_ERR_COVERAGE (sv_stages_refused), or the stage-0 plan's. */
sv_error_t *sv_stages_derive(const sv_jobspec_t *spec, const char *job_id,
			     sv_jobspec_t **s0, sv_jobspec_t **s1);

#endif
