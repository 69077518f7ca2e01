/* shutdown.c — "checkpoint all and stop" (sv_supervisor_shutdown, what
 * SIGTERM and SIGINT do; docs/reliability.md).
 *
 * On the supervisor thread: every running attempt of a supervisor with a
 * checkpoint store is asked for a final checkpoint (sv_worker_stop_checkpoint:
 * at its next batch boundary it stops reading, commits one more checkpoint
 * with its open transaction and ends), then we wait for them all until the
 * deadline. Attempts still running then are told to stop, which aborts their
 * open transaction at the next batch boundary; an attempt stuck in a client
 * call (a broker that does not answer) is given a short grace period and
 * then left behind: its transaction is settled by the next start, whose
 * producer fences it (docs/exactly-once.md). No lifecycle is applied to the
 * attempts that end (tick() is off from here on), so every job stays in
 * the store as it was — running jobs come back running and resume from
 * their last committed checkpoint, which is the final one when it made it.
 * The thread keeps the command loop for nothing else: HTTP is stopped
 * before this runs. thread: supervisor. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/log.h"
#include "core/util.h"
#include "supervisor/supervisor_int.h"

/* after the deadline: how long a told-to-stop attempt may take to end */
#define STOP_GRACE_MS 10000

static size_t running(sv_supervisor_t *sv)
{
	size_t n = 0;
	for (size_t i = 0; i < sv->njobs; i++)
		n += sv->jobs[i]->worker &&
			sv_worker_end(sv->jobs[i]->worker) == SV_WORKER_RUNNING;
	return n;
}

static void wait_until(sv_supervisor_t *sv, int64_t deadline)
{
	while (running(sv) && sv_mono_ms() < deadline) {
		struct timespec ts = {0, 20 * 1000000};
		nanosleep(&ts, NULL);
	}
}

/* One line and one observation per job: what its shutdown left. */
static void report(sv_job_t *job, int64_t ck_before)
{
	sv_logctx_t lc = {job->id, job->attempt};
	sv_worker_t *w = job->worker;
	sv_worker_end_t end = sv_worker_end(w);
	const sv_worker_stats_t *st = sv_worker_stats(w);
	int64_t ck = atomic_load(&st->last_checkpoint);
	const sv_error_t *e = sv_worker_error(w);
	const char *outcome;
	if (end == SV_WORKER_RUNNING) {
		outcome = "stuck";
		sv_log(&lc, SV_LOG_WARN, "shutdown",
		       "attempt did not end in time; left behind, the next "
		       "start fences its transaction and resumes from "
		       "checkpoint %lld",
		       (long long)ck);
	} else if (end == SV_WORKER_FAILED) {
		outcome = "failed";
		sv_log(&lc, SV_LOG_WARN, "shutdown",
		       "no final checkpoint (%s: %s); its transaction was "
		       "aborted, the next start resumes from checkpoint %lld",
		       e ? sv_errcat_name(e->category) : "?",
		       e ? e->message : "?", (long long)ck);
	} else if (ck != ck_before) {
		outcome = "checkpointed";
		sv_log(&lc, SV_LOG_INFO, "shutdown",
		       "final checkpoint %lld committed; the next start "
		       "resumes there",
		       (long long)ck);
	} else {
		outcome = "aborted";
		sv_log(&lc, SV_LOG_INFO, "shutdown",
		       "stopped without a final checkpoint; the open "
		       "transaction was aborted, the next start resumes "
		       "from checkpoint %lld",
		       (long long)ck);
	}
	sv_obslog_add(job->obs, job->attempt, "shutdown",
		      json_pack("{s:s, s:I}", "outcome", outcome,
				"checkpoint_id", (json_int_t)ck));
}

sv_error_t *sv_do_shutdown(sv_supervisor_t *sv, cmd_t *c)
{
	int64_t timeout = c->u.shutdown.timeout_ms;
	int64_t t0 = sv_mono_ms();
	pthread_mutex_lock(&sv->lock);
	sv->shutting_down = true;
	pthread_mutex_unlock(&sv->lock);
	int64_t *before = sv_calloc(sv->njobs ? sv->njobs : 1, sizeof(*before));
	size_t asked = 0;
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (!job->worker)
			continue;
		before[i] = atomic_load(
			&sv_worker_stats(job->worker)->last_checkpoint);
		if (sv->store && timeout > 0) {
			sv_worker_stop_checkpoint(job->worker);
			asked++;
		} else {
			sv_worker_stop(job->worker);
		}
	}
	sv_log(NULL, SV_LOG_INFO, "shutdown",
	       "final checkpoint of %zu running job(s), at most %lld ms", asked,
	       (long long)timeout);
	wait_until(sv, t0 + timeout);
	for (size_t i = 0; i < sv->njobs; i++)
		if (sv->jobs[i]->worker)
			sv_worker_stop(sv->jobs[i]->worker);
	wait_until(sv, sv_mono_ms() + STOP_GRACE_MS);
	size_t ok = 0, left = 0;
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (!job->worker)
			continue;
		report(job, before[i]);
		if (sv_worker_end(job->worker) == SV_WORKER_RUNNING)
			left++;
		else if (sv_worker_end(job->worker) == SV_WORKER_STOPPED &&
			 atomic_load(&sv_worker_stats(job->worker)
					      ->last_checkpoint) != before[i])
			ok++;
	}
	free(before);
	sv_log(NULL, SV_LOG_INFO, "shutdown",
	       "%zu of %zu job(s) took a final checkpoint, %zu left running, "
	       "in %lld ms",
	       ok, asked, left, (long long)(sv_mono_ms() - t0));
	char buf[24];
	snprintf(buf, sizeof(buf), "%zu", left);
	c->json = sv_strdup(buf);
	return NULL;
}
