/* transitions.h — the lifecycle table (DESIGN.md §3): which state changes
 * a job may make, and what each operator action does in each state.
 *
 * sv_transition() (supervisor/lifecycle.c) refuses a change the table does
 * not allow, and every action (supervisor/actions.c) asks the table before
 * it looks at anything else, so the table below is the lifecycle the code
 * runs. It is data, tested without a worker or a broker
 * (tests/unit/test_transitions.c). */
#ifndef SV_TRANSITIONS_H
#define SV_TRANSITIONS_H

#include <stdbool.h>

#include "core/error.h"
#include "supervisor/job.h"
#include "supervisor/supervisor.h"

/* "cancel", "drain", "resume", "restart", "checkpoint": the verb of the
 * 409 message ("cannot drain job 'x': it is checkpointed"); the path
 * segment is sv_action_name's. */
const char *sv_action_verb(sv_action_t a);

/* Whether a job in state `from` may change to `to` (to == from included:
 * a new attempt of a running job is running -> running). */
bool sv_transition_allowed(sv_jobstate_t from, sv_jobstate_t to);

/* Whether action a is valid in state st; when it is and to is not NULL,
 * *to is the state it leads to (checkpoint: st itself). Beyond the state,
 * an action may still be refused by what the job is doing (drain and
 * checkpoint need a live attempt). */
bool sv_action_allowed(sv_jobstate_t st, sv_action_t a, sv_jobstate_t *to);

/* NULL when action a is valid in the job's state, else the 409
 * (SV_ERR_CONFLICT) naming both: "cannot resume job 'x': it is running".
 * thread: supervisor. */
sv_error_t *sv_action_check(const sv_job_t *job, sv_action_t a);

#endif
