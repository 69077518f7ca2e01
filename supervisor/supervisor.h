/* supervisor.h — the supervisor: job table, lifecycle, and the API the HTTP
 * layer and tests call.
 *
 * One supervisor thread owns the job table and every state transition. The
 * functions below are called from any thread (HTTP handlers, tests): they post
 * a command to the supervisor thread and wait for its reply; they never touch
 * a job directly. Each returns NULL on success with *json set to a response
 * body the caller frees, or an error whose category decides the HTTP status
 * (sv_errcat_http_status). */
#ifndef SV_SUPERVISOR_H
#define SV_SUPERVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"

/* HTTP request limits (`limits:` in the config; docs/security.md). */
typedef struct sv_http_limits {
	unsigned max_connections; /* open connections in total (1024) */
	unsigned max_connections_per_client; /* per client address (128) */
	unsigned idle_timeout_s; /* a connection with no traffic (30) */
	unsigned request_timeout_s; /* headers and body of one request, and
				     * its answer to the client (30) */
	unsigned max_header_bytes; /* request line and headers (16384) */
	unsigned max_body_bytes; /* request body; 413 above (1 MiB) */
} sv_http_limits_t;

/* distributed: (docs/cluster.md). name NULL: standalone, as always. */
typedef struct sv_distconf {
	char *name; /* the streamvisor cluster: [A-Za-z0-9._-]{1,64} */
	char *node_id; /* configured, or NULL: the one kept in the data dir
			* (<data_dir>/node_id), made on first start */
	char *advertised_url; /* NULL: the address the node really bound */
	char *cluster; /* Kafka profile of the internal topics ("default") */
	unsigned session_timeout_ms; /* the job groups' (10000) */
	/* the job groups' max.poll.interval.ms, also their rebalance
	 * timeout: a member that does not poll for this long (a checkpoint
	 * stuck) leaves the group (300000) */
	unsigned max_poll_interval_ms;
	unsigned replication_factor; /* of the internal topics (1) */
	/* a job's task state written to its state topic per second of
	 * checkpoint interval may not exceed this (2000000) */
	uint64_t state_budget_bytes_per_s;
} sv_distconf_t;

/* Server configuration (supervisor/config.c reads it from YAML). */
typedef struct sv_svconf {
	char *listen_host; /* default 127.0.0.1 */
	int listen_port; /* default 8080; 0 = pick a free port */
	char *data_dir; /* default ./streamvisor-data */
	size_t nclusters;
	sv_cluster_t *clusters; /* profiles; "default" may be absent */
	char *secrets_path; /* file with credentials, or NULL */
	char *identity; /* supervisor identity; default host:port */
	/* SIGTERM/SIGINT: how long the final checkpoints of the running jobs
	 * may take before what has not committed is aborted (default
	 * SV_SHUTDOWN_TIMEOUT_DEFAULT_MS; 0: abort at once) */
	int64_t shutdown_timeout_ms;

	/* ---- security (docs/security.md) ---- */
	char *tokens_file; /* auth.tokens_file; NULL: no authentication */
	char *tls_cert_file; /* tls.cert_file (PEM); NULL: plain HTTP */
	char *tls_key_file; /* tls.key_file (PEM) */
	char *tls_client_ca_file; /* tls.client_ca_file: mTLS, or NULL */
	/* file_sink_roots: the directories file sinks (sink, dead_letter,
	 * late_sink) may write under; none: file sinks refused ... */
	char **file_sink_roots;
	size_t nfile_sink_roots;
	/* ... unless this is set (the embedded development mode of `make
	 * run`, no roots configured): any path, as before confinement */
	bool file_sinks_unconfined;
	sv_http_limits_t limits;
	sv_distconf_t dist;
} sv_svconf_t;

/* 60 s for the final checkpoints leaves 30 s of systemd's default 90 s
 * stop timeout (DefaultTimeoutStopSec) for aborting and closing. */
#define SV_SHUTDOWN_TIMEOUT_DEFAULT_MS 60000

void sv_svconf_init(sv_svconf_t *conf);
/* Copy src into dst (dst's strings are replaced). */
void sv_distconf_copy(sv_distconf_t *dst, const sv_distconf_t *src);
void sv_distconf_release(sv_distconf_t *d);
void sv_svconf_release(sv_svconf_t *conf);
/* Read a YAML config file into conf (which holds defaults already).
 * Errors: SV_ERR_CONFIG naming the key and the file. */
sv_error_t *sv_svconf_load(sv_svconf_t *conf, const char *path);
/* Refuse a configuration that would expose the API unprotected: a listen
 * address that is not loopback needs both tls (cert_file, key_file) and
 * auth (tokens_file). Errors: SV_ERR_CONFIG saying what to configure. */
sv_error_t *sv_svconf_check_exposure(const sv_svconf_t *conf);
/* Whether host (an address or name from `listen`) is a loopback address. */
bool sv_svconf_host_is_loopback(const char *host);
/* Copy src's security settings (strings and roots) into dst. */
void sv_svconf_copy_security(sv_svconf_t *dst, const sv_svconf_t *src);
/* Add or replace a profile (strings copied). */
void sv_svconf_set_cluster(sv_svconf_t *conf, const char *name,
			   const char *bootstrap, bool dev_embedded);
const sv_cluster_t *sv_svconf_cluster(const sv_svconf_t *conf,
				      const char *name);

typedef struct sv_supervisor sv_supervisor_t;

/* Start the supervisor thread. conf is copied. */
sv_error_t *sv_supervisor_new(const sv_svconf_t *conf, sv_supervisor_t **out);
/* Graceful stop ("checkpoint all and stop"): every running attempt takes a
 * final checkpoint at its next batch boundary and stops; what has not
 * committed within timeout_ms is told to abort its open transaction and
 * stop. Jobs stay as they are in the store, so the next start resumes each
 * from its last committed checkpoint (the final one when it made it).
 * Nothing is started afterwards; call sv_supervisor_destroy next. Returns
 * how many attempts were still running (stuck in a client call) after a
 * further grace period: then the caller should exit without destroy.
 * thread: any but the supervisor's */
int sv_supervisor_shutdown(sv_supervisor_t *sv, int64_t timeout_ms);
/* Distributed mode: start the job registry (cluster/dist.h) with url as
 * the node's URL unless distributed.advertised_url is set. Nothing
 * standalone. thread: main, once, after HTTP is bound */
sv_error_t *sv_supervisor_start_dist(sv_supervisor_t *sv, const char *url);
/* Distributed mode: create job job_id from spec_json (a registry record)
 * unless it exists. thread: any but the supervisor's */
sv_error_t *sv_supervisor_adopt(sv_supervisor_t *sv, const char *job_id,
				const char *spec_json);
/* The same as target says ("running", NULL; "cancelled": created
 * cancelled; "draining": created checkpointed, nothing started), with a
 * bounded job's end offsets ends[0..nends) (borrowed; NULL, 0: none).
 * thread: any but the supervisor's */
sv_error_t *sv_supervisor_adopt_as(sv_supervisor_t *sv, const char *job_id,
				   const char *spec_json, const char *target,
				   const int64_t *ends, size_t nends);
/* Distributed mode (docs/cluster.md): where a mutation received here
 * goes. LOCAL: standalone, or this node leads; FORWARD: to *url (the
 * leader's, the caller's to free; *node too); NONE: no leader now (503).
 * thread: any */
typedef enum sv_route {
	SV_ROUTE_LOCAL = 0,
	SV_ROUTE_FORWARD,
	SV_ROUTE_NONE
} sv_route_t;
sv_route_t sv_supervisor_route(sv_supervisor_t *sv, char **url, char **node);
/* Distributed mode: the job registry offset the local view is read to
 * (-1 standalone). thread: any */
int64_t sv_supervisor_jobs_offset(sv_supervisor_t *sv);
/* GET /v1/cluster: nodes, leader, registry (standalone: mode
 * "standalone", no nodes). thread: any */
sv_error_t *sv_supervisor_cluster(sv_supervisor_t *sv, char **json);
/* Distributed mode: add the cluster's view of job id (status topic) to
 * *json, a GET /v1/jobs/{id} answer (replaced). thread: any */
void sv_supervisor_cluster_job(sv_supervisor_t *sv, const char *id,
			       char **json);
/* Stop every job attempt (jobs stay as they are in the store) and join. */
void sv_supervisor_destroy(sv_supervisor_t *sv);

/* POST /v1/jobs. body is a JSON job spec (or protobuf when protobuf is set).
 * 201 body {"id","name","state","plan_id"}. thread: any */
sv_error_t *sv_supervisor_submit(sv_supervisor_t *sv, const char *body,
				 size_t len, bool protobuf, char **json);
/* POST /v1/jobs?dry_run=true: parse, translate and check the spec as a
 * submission would, start nothing. 200 body {"spec": <translated spec>,
 * "plan_id", "coverage": [<partial records>], "physical_plan",
 * "substrait": {...} for plans}. thread: any */
sv_error_t *sv_supervisor_dry_run(sv_supervisor_t *sv, const char *body,
				  size_t len, bool protobuf, char **json);
/* GET /v1/jobs. thread: any */
sv_error_t *sv_supervisor_list(sv_supervisor_t *sv, char **json);
/* GET /v1/jobs/{id}. thread: any */
sv_error_t *sv_supervisor_status(sv_supervisor_t *sv, const char *id,
				 char **json);
/* What an operator asks of a job: POST /v1/jobs/{id}/{action}. */
typedef enum sv_action {
	SV_ACTION_CANCEL = 0,
	SV_ACTION_DRAIN, /* body {"final_watermark": bool, "timeout_ms": n} */
	SV_ACTION_RESUME,
	SV_ACTION_RESTART, /* body {"from_checkpoint": id|"latest",
			    *       "ignore_state": bool} */
	SV_ACTION_CHECKPOINT, /* "checkpoints": take one now; answers once it
			       * committed, with its id */
	SV_ACTION__COUNT
} sv_action_t;

/* A job's documents beside its status: GET /v1/jobs/{id}/{view}. */
typedef enum sv_view {
	SV_VIEW_CHECKPOINTS = 0, /* ?limit=n */
	SV_VIEW_OBSERVATIONS, /* ?after=seq&limit=n */
	SV_VIEW_PREVIEW, /* ?limit=n */
	SV_VIEW_RESULT, /* ?limit=n */
	SV_VIEW_HISTORY, /* ?since=epoch_ms&limit=n (supervisor/history.h) */
	SV_VIEW_EXECUTION_OBSERVATIONS, /* RFC 032 records (docs/incql.md) */
	SV_VIEW__COUNT
} sv_view_t;

/* The path segment of an action or view ("cancel", "checkpoints", ...). */
const char *sv_action_name(sv_action_t action);
const char *sv_view_name(sv_view_t view);

/* POST /v1/jobs/{id}/{action}. body (may be NULL) is the action's JSON
 * object, parsed on the caller's thread into the typed command; errors
 * there are SV_ERR_SUBMISSION naming the field. thread: any */
sv_error_t *sv_supervisor_action(sv_supervisor_t *sv, const char *id,
				 sv_action_t action, const char *body,
				 size_t len, char **json);
/* GET /v1/jobs/{id}/{view}; query is the raw query string (may be NULL).
 * thread: any */
sv_error_t *sv_supervisor_get(sv_supervisor_t *sv, const char *id,
			      sv_view_t view, const char *query, char **json);
/* DELETE /v1/jobs/{id}: a terminal job is forgotten; query "purge=true"
 * also removes its checkpoints. thread: any */
sv_error_t *sv_supervisor_delete(sv_supervisor_t *sv, const char *id,
				 const char *query, char **json);
/* GET /v1/info as JSON. thread: any */
char *sv_supervisor_info(sv_supervisor_t *sv);
/* GET /metrics in Prometheus text format. thread: any */
char *sv_supervisor_metrics(sv_supervisor_t *sv);
/* Count one served HTTP request (for metrics). thread: any */
void sv_supervisor_count_http(sv_supervisor_t *sv, const char *method,
			      int status);

#endif
