/* transitions.c — the lifecycle table (see transitions.h). Two small
 * static tables: the states each state may change to (a bit per target),
 * and per action the states it is valid in with the state it leads to.
 * Why each edge exists is said next to it. */
#include "supervisor/transitions.h"

#define TO(s) (1u << (s))

/* Recovery: when the supervisor restarts, every job that was not terminal
 * comes back pending (it continues from its last committed checkpoint),
 * except checkpointed, which stays checkpointed (resume continues it). */
#define RECOVER TO(SV_JOB_PENDING)

static const unsigned edges[SV_JOB__COUNT] = {
	/* first attempt starts, or fails to start; cancel */
	[SV_JOB_PENDING] = TO(SV_JOB_RUNNING) | TO(SV_JOB_FAILED) |
		TO(SV_JOB_CANCELLED) | RECOVER,
	/* restart (a new attempt is running again); lag over its
	 * threshold; drain; attempt failed (restart policy); bounded input
	 * ended; cancel */
	[SV_JOB_RUNNING] = TO(SV_JOB_RUNNING) | TO(SV_JOB_LAGGING) |
		TO(SV_JOB_DRAINING) | TO(SV_JOB_RESTARTING) |
		TO(SV_JOB_FAILED) | TO(SV_JOB_COMPLETED) |
		TO(SV_JOB_CANCELLED) | RECOVER,
	/* as running; back to running when the lag recovers */
	[SV_JOB_LAGGING] = TO(SV_JOB_RUNNING) | TO(SV_JOB_DRAINING) |
		TO(SV_JOB_RESTARTING) | TO(SV_JOB_FAILED) |
		TO(SV_JOB_COMPLETED) | TO(SV_JOB_CANCELLED) | RECOVER,
	/* final checkpoint committed; drain timed out (running again from
	 * the last committed checkpoint); attempt failed while draining;
	 * bounded input ended first; cancel */
	[SV_JOB_DRAINING] = TO(SV_JOB_CHECKPOINTED) | TO(SV_JOB_RUNNING) |
		TO(SV_JOB_RESTARTING) | TO(SV_JOB_FAILED) |
		TO(SV_JOB_COMPLETED) | TO(SV_JOB_CANCELLED) | RECOVER,
	/* resume or restart start an attempt (which may fail to start);
	 * cancel; recovery keeps it checkpointed */
	[SV_JOB_CHECKPOINTED] = TO(SV_JOB_RUNNING) | TO(SV_JOB_FAILED) |
		TO(SV_JOB_CANCELLED) | TO(SV_JOB_CHECKPOINTED),
	/* backoff passed: next attempt (or it fails to start); cancel */
	[SV_JOB_RESTARTING] = TO(SV_JOB_RUNNING) | TO(SV_JOB_FAILED) |
		TO(SV_JOB_CANCELLED) | RECOVER,
	/* terminal, but restart starts a new attempt (which may fail to
	 * start again) */
	[SV_JOB_FAILED] = TO(SV_JOB_RUNNING) | TO(SV_JOB_FAILED),
	[SV_JOB_CANCELLED] = 0,
	[SV_JOB_COMPLETED] = 0,
};

#define NONE (-1)
#define SAME (-2)

typedef struct action {
	const char *name;
	/* per state: the target, NONE (409) or SAME (no state change) */
	int to[SV_JOB__COUNT];
} action_t;

static const action_t actions[SV_ACTION__COUNT] = {
	[SV_ACTION_CANCEL] = {"cancel",
			      {
				      [SV_JOB_PENDING] = SV_JOB_CANCELLED,
				      [SV_JOB_RUNNING] = SV_JOB_CANCELLED,
				      [SV_JOB_LAGGING] = SV_JOB_CANCELLED,
				      [SV_JOB_DRAINING] = SV_JOB_CANCELLED,
				      [SV_JOB_CHECKPOINTED] = SV_JOB_CANCELLED,
				      [SV_JOB_RESTARTING] = SV_JOB_CANCELLED,
				      [SV_JOB_FAILED] = NONE,
				      [SV_JOB_CANCELLED] = NONE,
				      [SV_JOB_COMPLETED] = NONE,
			      }},
	[SV_ACTION_DRAIN] = {"drain",
			     {
				     [SV_JOB_PENDING] = NONE,
				     [SV_JOB_RUNNING] = SV_JOB_DRAINING,
				     [SV_JOB_LAGGING] = SV_JOB_DRAINING,
				     [SV_JOB_DRAINING] = NONE,
				     [SV_JOB_CHECKPOINTED] = NONE,
				     [SV_JOB_RESTARTING] = NONE,
				     [SV_JOB_FAILED] = NONE,
				     [SV_JOB_CANCELLED] = NONE,
				     [SV_JOB_COMPLETED] = NONE,
			     }},
	[SV_ACTION_RESUME] = {"resume",
			      {
				      [SV_JOB_PENDING] = NONE,
				      [SV_JOB_RUNNING] = NONE,
				      [SV_JOB_LAGGING] = NONE,
				      [SV_JOB_DRAINING] = NONE,
				      [SV_JOB_CHECKPOINTED] = SV_JOB_RUNNING,
				      [SV_JOB_RESTARTING] = NONE,
				      [SV_JOB_FAILED] = NONE,
				      [SV_JOB_CANCELLED] = NONE,
				      [SV_JOB_COMPLETED] = NONE,
			      }},
	/* a new attempt from a committed checkpoint: also out of failed
	 * (the operator's retry) and restarting (without the backoff); not
	 * while pending (no attempt yet) or draining (the drain decides) */
	[SV_ACTION_RESTART] = {"restart",
			       {
				       [SV_JOB_PENDING] = NONE,
				       [SV_JOB_RUNNING] = SV_JOB_RUNNING,
				       [SV_JOB_LAGGING] = SV_JOB_RUNNING,
				       [SV_JOB_DRAINING] = NONE,
				       [SV_JOB_CHECKPOINTED] = SV_JOB_RUNNING,
				       [SV_JOB_RESTARTING] = SV_JOB_RUNNING,
				       [SV_JOB_FAILED] = SV_JOB_RUNNING,
				       [SV_JOB_CANCELLED] = NONE,
				       [SV_JOB_COMPLETED] = NONE,
			       }},
	[SV_ACTION_CHECKPOINT] = {"checkpoint",
				  {
					  [SV_JOB_PENDING] = NONE,
					  [SV_JOB_RUNNING] = SAME,
					  [SV_JOB_LAGGING] = SAME,
					  [SV_JOB_DRAINING] = NONE,
					  [SV_JOB_CHECKPOINTED] = NONE,
					  [SV_JOB_RESTARTING] = NONE,
					  [SV_JOB_FAILED] = NONE,
					  [SV_JOB_CANCELLED] = NONE,
					  [SV_JOB_COMPLETED] = NONE,
				  }},
};

const char *sv_action_verb(sv_action_t a)
{
	return (unsigned)a < SV_ACTION__COUNT ? actions[a].name : "unknown";
}

bool sv_transition_allowed(sv_jobstate_t from, sv_jobstate_t to)
{
	return (unsigned)from < SV_JOB__COUNT && (unsigned)to < SV_JOB__COUNT &&
		(edges[from] & TO(to));
}

bool sv_action_allowed(sv_jobstate_t st, sv_action_t a, sv_jobstate_t *to)
{
	if ((unsigned)st >= SV_JOB__COUNT || (unsigned)a >= SV_ACTION__COUNT)
		return false;
	int t = actions[a].to[st];
	if (t == NONE)
		return false;
	if (to)
		*to = t == SAME ? st : (sv_jobstate_t)t;
	return true;
}

sv_error_t *sv_action_check(const sv_job_t *job, sv_action_t a)
{
	if (sv_action_allowed(job->state, a, NULL))
		return NULL;
	sv_error_t *err = sv_error_new(
		SV_ERR_CONFLICT, "cannot %s job '%s': it is %s",
		sv_action_verb(a), job->id, sv_jobstate_name(job->state));
	return sv_error_set_job(err, job->id, job->attempt);
}
