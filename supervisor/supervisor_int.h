/* supervisor_int.h — what the files of the supervisor share: the
 * supervisor and command structs and the functions that run on the
 * supervisor thread.
 *   supervisor.c  the thread, the command queue, submit/list/status/delete
 *   lifecycle.c   attempts, applying the restart policy, transitions
 *   actions.c     cancel, drain, resume, restart, checkpoint
 *   restart.c     the restart policy, a pure function (restart.h)
 *   transitions.c the lifecycle table (transitions.h)
 *   drivers.c     the driver registries as one catalog (drivers.h)
 *   views.c       JSON views (status, observations, results), metrics, info
 *   evidence.c    IncQL evidence: coverage records, execution observations
 * thread: everything here runs on the supervisor thread unless noted. */
#ifndef SV_SUPERVISOR_INT_H
#define SV_SUPERVISOR_INT_H

#include <jansson.h>
#include <pthread.h>

#include "checkpoint/store.h"
#include "sinks/confine.h"
#include "supervisor/job.h"
#include "supervisor/restart.h"
#include "ingress/plan.h"
#include "supervisor/supervisor.h"

#define SAMPLE_MS 5000 /* watermark and lag samples */

typedef struct cmd cmd_t;
typedef sv_error_t *(cmd_fn)(sv_supervisor_t *sv, cmd_t *c);

typedef enum sv_cmd_type {
	SV_CMD_SUBMIT = 0,
	SV_CMD_DRY_RUN, /* POST /v1/jobs?dry_run=true; arguments u.submit */
	SV_CMD_LIST,
	SV_CMD_STATUS,
	SV_CMD_DELETE,
	SV_CMD_ACTION,
	SV_CMD_VIEW,
	SV_CMD_METRICS,
	SV_CMD_SHUTDOWN,
	SV_CMD__COUNT
} sv_cmd_type_t;

/* A command to the supervisor thread, after librdkafka's rd_kafka_op_t: a
 * type, typed arguments (parsed on the caller's thread), a reply. The
 * caller owns it (on its stack) and waits on sv->reply until done. A
 * command whose answer is not ready when it runs (a checkpoint taken now)
 * is parked on sv->parked and completed by the supervisor thread when the
 * worker reports, through the same condition variable: never polled. */
struct cmd {
	sv_cmd_type_t type;
	const char *id; /* job id, or NULL */
	const char *principal; /* who asked (observe.h), or NULL */
	bool replicated; /* distributed: from the job registry, so not
			  * written back to it (distributed.c) */
	const char *adopt_target; /* distributed, a submit with id: the
				   * record's target ("running" when NULL) */
	bool full; /* list: each job as GET /v1/jobs/{id} shows it */
	union {
		struct {
			const char *body;
			size_t len;
			bool protobuf;
			/* adopted from the registry: a bounded job's end
			 * offsets (borrowed), nends 0: none */
			const int64_t *ends;
			size_t nends;
		} submit;
		struct {
			bool purge;
		} del;
		struct {
			sv_action_t action;
			bool final_watermark; /* drain */
			int64_t timeout_ms; /* drain; 0: the default */
			int64_t from_checkpoint; /* restart; -1: latest */
			bool ignore_state; /* restart */
			int parallelism; /* restart; 0: unchanged */
		} act;
		struct {
			int64_t timeout_ms; /* final checkpoints' deadline */
		} shutdown;
		struct {
			sv_view_t view;
			size_t limit; /* 0: the view's default */
			uint64_t after; /* observations: after this seq */
		} view;
	} u;
	/* parked (checkpoint now): set by the handler; what completes it */
	bool park;
	uint64_t ticket;
	int attempt;
	int64_t deadline_ms;
	/* reply */
	char *json;
	sv_error_t *err;
	bool done;
	cmd_t *next;
};

struct sv_supervisor {
	sv_svconf_t conf;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* supervisor waits: commands, worker ends */
	pthread_cond_t reply; /* callers wait: their command is done */
	cmd_t *head, *tail;
	cmd_t *parked; /* supervisor thread only: waiting for a worker */
	bool stop;
	bool shutting_down; /* sv_do_shutdown ran: start nothing, apply
			     * no lifecycle to attempts that end */
	bool worker_event;
	/* supervisor thread only: when the last attempt ended (0 while one
	 * runs or once the idle footprint was given back) */
	int64_t idle_since_ms;
	/* job table: supervisor thread only */
	sv_job_t **jobs;
	size_t njobs;
	/* HTTP request counters by method and status class */
	pthread_mutex_t http_lock;
	struct http_count {
		char method[8];
		int status;
		uint64_t n;
	} http[64];
	size_t nhttp;
	int64_t started_ms;
	sv_ckstore_t *store; /* <data_dir>/checkpoints, or NULL without one */
	sv_fileroots_t file_roots; /* conf.file_sink_roots (borrowed) */
	struct sv_dist *dist; /* distributed mode's registry, or NULL */
	struct sv_status *status; /* distributed mode's status topic */
	json_t *dist_parts; /* status thread: job → partitions last read */
	json_t *dist_attempts; /* attempts/<job>/<node> → this node's failed
				* attempts (under lock; the status topic) */
	char *dist_url; /* this node's advertised URL */
	json_t *dist_restarts; /* job → the restart record applied here */
};

/* distributed.c (docs/cluster.md) */
/* What distributed mode runs; NULL standalone. */
sv_error_t *sv_dist_check_spec(const sv_supervisor_t *sv,
			       const sv_jobspec_t *spec);
/* Write the job to the registry with target "running" or "cancelled"
 * (nothing standalone). thread: supervisor */
sv_error_t *sv_dist_publish(sv_supervisor_t *sv, const char *job_id,
			    const sv_jobspec_t *spec, const char *target);
/* A distributed bounded job's end offsets into job (end_offsets): those
 * of the registry record it was adopted from (ends, nends), else, on the
 * node that accepts the submit, the source topic's end offsets now
 * (sv_dist_end_offsets). Nothing for other jobs or standalone. Errors:
 * SV_ERR_BINDING (the ends cannot be taken), SV_ERR_SUBMISSION (a record
 * of a bounded job without them). thread: supervisor */
sv_error_t *sv_dist_bound_job(sv_supervisor_t *sv, sv_job_t *job, bool adopted,
			      const int64_t *ends, size_t nends);
/* The restart policy across members (docs/cluster.md "Restart policy"):
 * after a failed attempt, d (sv_restart_decide over this node's count)
 * with the failed attempts the other nodes counted in their windows
 * added: a retry becomes EXHAUSTED once they reach max_attempts. Then
 * this node's count (d->next) goes to the status topic. Returns the
 * attempts counted elsewhere (0 standalone). thread: supervisor */
int sv_dist_restart_count(sv_supervisor_t *sv, const sv_job_t *job,
			  int max_attempts, int64_t window_ms, int64_t now,
			  sv_restart_decision_t *d);
/* A job's end offsets as JSON (an array; NULL when it has none), and
 * back from a stored job record's member (persist.c). */
json_t *sv_dist_ends_json(const sv_job_t *job);
void sv_dist_ends_load(sv_job_t *job, const json_t *a);
/* The submit's first record of job (target "running"), with a bounded
 * job's end offsets (`end_offsets`). thread: supervisor */
sv_error_t *sv_dist_publish_submit(sv_supervisor_t *sv, const sv_job_t *job);
/* The same with extra fields (borrowed, may be NULL) in the record; a
 * previous record's `end_offsets` are kept. */
sv_error_t *sv_dist_publish_ext(sv_supervisor_t *sv, const char *job_id,
				const sv_jobspec_t *spec, const char *target,
				const json_t *extra);
/* The version of the job's latest record in the registry (0: none):
 * the leader counts every write of a job's record. */
int64_t sv_dist_version(sv_supervisor_t *sv, const char *job_id);
/* The restart record `restart` (its version) of the job is applied on
 * this node (or written by it): not again. thread: any */
void sv_dist_restart_seen(sv_supervisor_t *sv, const char *job_id,
			  int64_t restart);
/* A submit of a job named like a live one: the same plan id is the same
 * job (a retried submit, distributed mode only): true. */
bool sv_dist_same_submit(const sv_supervisor_t *sv, const sv_job_t *job,
			 const sv_jobspec_t *spec);
/* Resume on the leader: every partition of the job reported its final
 * checkpoint (the status topic); an error (409) otherwise. */
sv_error_t *sv_dist_check_resume(sv_supervisor_t *sv, const sv_job_t *job);
/* Distributed mode's metrics (nothing standalone): whether this node
 * leads, its epoch, times elected, leader writes, the registry offset,
 * labelled with node. */
void sv_dist_metrics(sv_supervisor_t *sv, sv_buf_t *b);
/* Post a command to the supervisor thread and wait (supervisor.c). */
sv_error_t *sv_call(sv_supervisor_t *sv, cmd_t *c, char **json);
/* Stop the registry (before the supervisor thread stops). */
void sv_dist_release(sv_supervisor_t *sv);

/* supervisor.c */
json_t *sv_iso_json(int64_t ms); /* null for ms <= 0 */
char *sv_json_dump(json_t *o); /* compact; steals o */
sv_job_t *sv_find_job(sv_supervisor_t *sv, const char *id);
sv_error_t *sv_no_job(const char *id);
void sv_job_free(sv_job_t *job);
/* lifecycle.c: the cluster profiles of a spec's source and sinks, NULL
 * for a driver without SV_DRIVER_CLUSTER. Error: SV_ERR_BINDING naming the
 * field of an unknown profile. */
typedef struct sv_clusters {
	const sv_cluster_t *source, *sink, *dlq, *late;
	const sv_cluster_t *join; /* a join step's source, or NULL */
} sv_clusters_t;
sv_error_t *sv_resolve_clusters(sv_supervisor_t *sv,
				const Streamvisor__JobSpec *js,
				sv_clusters_t *out);

/* lifecycle.c */
void sv_transition(sv_job_t *job, sv_jobstate_t to, const char *reason);
void sv_observe_error(sv_job_t *job, const sv_error_t *err);
void sv_start_attempt(sv_supervisor_t *sv, sv_job_t *job);
void sv_on_worker_end(sv_supervisor_t *sv, sv_job_t *job);
/* The job's progress now (ended attempts plus the running one). */
void sv_job_progress(sv_job_t *job, sv_progress_t *p);
/* Records behind the end of the source, summed over partitions. */
int64_t sv_job_lag_records(sv_job_t *job);
/* Take the worker's last checkpoint into job->last_ck. */
void sv_refresh_last_checkpoint(sv_job_t *job);
void sv_watch_progress(sv_job_t *job, int64_t now);
sv_error_t *sv_conflict(sv_job_t *job, const char *action);

/* actions.c */
/* Fill c's action arguments from the action's JSON body. thread: any */
sv_error_t *sv_action_parse(cmd_t *c, const char *body, size_t len);
sv_error_t *sv_do_action(sv_supervisor_t *sv, cmd_t *c);
/* A parked checkpoint command: true once it is done (c->json or c->err
 * set). */
bool sv_ck_ready(sv_supervisor_t *sv, cmd_t *c, int64_t now);
sv_error_t *sv_do_checkpoint_list(sv_supervisor_t *sv, cmd_t *c);
void sv_check_drain(sv_supervisor_t *sv, sv_job_t *job, int64_t now);

/* shutdown.c */
sv_error_t *sv_do_shutdown(sv_supervisor_t *sv, cmd_t *c);

/* persist.c */
void sv_persist_job(sv_supervisor_t *sv, sv_job_t *job);
void sv_persist_forget(sv_supervisor_t *sv, const char *id, bool checkpoints);
sv_error_t *sv_persist_load(sv_supervisor_t *sv);

/* evidence.c: the job's IncQL evidence (plan target, coverage records,
 * RFC 032 execution observations) */
sv_error_t *sv_evidence_check(sv_supervisor_t *sv, const sv_jobspec_t *spec,
			      const sv_plan_t *plan, sv_evidence_t **out);
sv_error_t *sv_evidence_plan_error(sv_error_t *err, const sv_jobspec_t *spec);
void sv_evidence_destroy(sv_evidence_t *ev);
/* Add plan_target and coverage to a submit answer. */
void sv_evidence_answer(sv_supervisor_t *sv, sv_job_t *job, json_t *answer);
void sv_evidence_attempt_started(sv_supervisor_t *sv, sv_job_t *job);
/* Before the worker is destroyed (its counters are read); err may be NULL. */
void sv_evidence_attempt_ended(sv_supervisor_t *sv, sv_job_t *job,
			       sv_worker_end_t end, const sv_error_t *err);
sv_error_t *sv_do_execution_observations(sv_supervisor_t *sv, cmd_t *c);

/* views.c */
json_t *sv_job_json(sv_supervisor_t *sv, sv_job_t *job, bool full);
json_t *sv_plan_summary(const sv_jobspec_t *spec, const sv_plan_t *plan);
/* The value of key=<n> in a query string (n > 0), or def. */
uint64_t sv_query_uint(const char *query, const char *key, uint64_t def);
sv_error_t *sv_do_get(sv_supervisor_t *sv, cmd_t *c);
sv_error_t *sv_do_metrics(sv_supervisor_t *sv, cmd_t *c);
bool sv_dev_default(sv_supervisor_t *sv);

#endif
