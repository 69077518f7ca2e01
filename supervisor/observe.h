/* observe.h — a job's observation log (RFC 048 observations; DESIGN.md §5):
 * what happened to the job, newest last, bounded (the oldest are dropped),
 * each with a sequence number, timestamp, job id, attempt and a kind.
 * Read in pages: GET /v1/jobs/{id}/observations?after=<seq>&limit=<n>.
 *
 * Kinds (docs/observability.md): job_submitted, state_transition,
 * attempt_started, source_bound, restart_scheduled, restart_requested,
 * error, checkpoint_started, checkpoint_completed, checkpoint_failed,
 * checkpoint_restored, sink_commit, watermark_sample, lag_sample, drain,
 * action_requested (who asked for a job action: the audit trail).
 *
 * thread: any (a mutex inside); workers add checkpoint observations. */
#ifndef SV_OBSERVE_H
#define SV_OBSERVE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sv_obslog sv_obslog_t;

#define SV_OBSLOG_DEFAULT_CAP 1000

sv_obslog_t *sv_obslog_new(const char *job_id, size_t cap);
void sv_obslog_destroy(sv_obslog_t *log);

/* Append an observation of `kind` with fields (an object, stolen; may be
 * NULL). Returns its sequence number (from 1). */
uint64_t sv_obslog_add(sv_obslog_t *log, int attempt, const char *kind,
		       json_t *fields);

/* The principal (API caller) on whose behalf this thread acts, or NULL.
 * Set by the HTTP layer around a request and by the supervisor thread
 * around the command it runs; every observation added meanwhile carries
 * it as "principal" (the audit trail). name is borrowed until cleared.
 * thread: the calling thread only (thread-local) */
void sv_obs_set_principal(const char *name);
/* Distributed mode: every observation of this process carries "node":
 * node (copied; NULL or "": none). thread: main, before jobs start */
void sv_obs_set_node(const char *node);
const char *sv_obs_principal(void);

/* Observations with seq > after, oldest first, at most limit; as
 * {"observations": [...], "next_after": seq of the last returned (or
 * `after`), "first_seq": oldest kept, "dropped": count dropped}. */
json_t *sv_obslog_page(sv_obslog_t *log, uint64_t after, size_t limit);

#endif
