/* error.h — the error value passed across module boundaries.
 *
 * A function that can fail returns sv_error_t * (NULL is success). The error
 * carries a category from DESIGN.md §7 (RFC 048), a human message, the job id
 * and attempt when known, retriable/fatal flags for the restart policy, and
 * the third-party cause (librdkafka error code, RocksDB status text) kept
 * apart from our own words. The restart policy decides from category and
 * flags, never from message text. */
#ifndef SV_ERROR_H
#define SV_ERROR_H

#include <stdbool.h>
#include <stdarg.h>

typedef enum sv_errcat {
	SV_ERR_CONFIG = 0,
	SV_ERR_SUBMISSION, /* invalid job spec (HTTP 400) */
	SV_ERR_BINDING, /* source/sink binding: cluster, topic, path */
	SV_ERR_UDF_MISSING,
	SV_ERR_COVERAGE, /* capability not covered (HTTP 422) */
	SV_ERR_PLANNING,
	SV_ERR_RUNTIME, /* worker runtime failure */
	SV_ERR_RETRY_EXHAUSTED,
	SV_ERR_COMMIT, /* partial write / commit failure */
	SV_ERR_MATERIALIZATION,
	SV_ERR_CHECKPOINT,
	SV_ERR_OFFSET,
	SV_ERR_WATERMARK,
	SV_ERR_SINK_COMMIT,
	SV_ERR_CONFLICT, /* action not valid in current state, name in use (HTTP 409) */
	SV_ERR_NOT_FOUND, /* unknown job id (HTTP 404) */
	SV_ERR_UNAUTHENTICATED, /* no or invalid credentials (HTTP 401) */
	SV_ERR_FORBIDDEN, /* the principal's role may not (HTTP 403) */
	/* distributed mode: a commit refused because the member's group
	 * generation is stale (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
	 * FENCED_INSTANCE_ID): abort the transaction and carry on, never a
	 * job failure (docs/cluster.md) */
	SV_ERR_REBALANCE,
	/* distributed mode: no leader to take a mutation now, or this node
	 * stopped leading during it (HTTP 503 with Retry-After; retry) */
	SV_ERR_UNAVAILABLE,
	SV_ERR__COUNT
} sv_errcat_t;

typedef struct sv_error {
	sv_errcat_t category;
	char *message; /* our words: lower case, subject quoted */
	char *field; /* spec field the error is about, or NULL */
	int position; /* 1-based position in an expression, or 0 */
	char *job_id; /* NULL when not about a job */
	int attempt; /* 0 when not about an attempt */
	bool retriable;
	bool fatal;
	int cause_code; /* third-party code (rd_kafka_resp_err_t, ...) or 0 */
	char *cause; /* third-party message, or NULL */
	char *details_json; /* extra JSON value shown as "details" in the HTTP
			      * error (e.g. coverage records), or NULL */
} sv_error_t;

/* Create an error. The message is formatted; retriable defaults to true for
 * runtime-like categories (see sv_errcat_retriable). Returns a heap object the
 * caller owns (sv_error_destroy). Never returns NULL (aborts on OOM). */
sv_error_t *sv_error_new(sv_errcat_t cat, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
sv_error_t *sv_error_newv(sv_errcat_t cat, const char *fmt, va_list ap);

/* Set the spec field path ("pipeline[1].filter") the error is about. Returns err. */
sv_error_t *sv_error_set_field(sv_error_t *err, const char *field);
/* Set job id (copied) and attempt. Returns err. */
sv_error_t *sv_error_set_job(sv_error_t *err, const char *job_id, int attempt);
/* Record a third-party cause (copied). Returns err. */
sv_error_t *sv_error_set_cause(sv_error_t *err, int code, const char *cause);
/* Prefix the message with "prefix: ". Returns err. */
sv_error_t *sv_error_prefix(sv_error_t *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Attach a JSON value (text copied) shown as "details". Returns err. */
sv_error_t *sv_error_set_details(sv_error_t *err, const char *json);

sv_error_t *sv_error_copy(const sv_error_t *err);
void sv_error_destroy(sv_error_t *err);

/* Lower-case category name as in DESIGN.md §7 ("binding", "retry_exhausted"). */
const char *sv_errcat_name(sv_errcat_t cat);
/* Whether errors of this category are retried by the restart policy by default. */
bool sv_errcat_retriable(sv_errcat_t cat);
/* IncQL's backend error kind (BackendErrorKind / SessionErrorKind) for an
 * error of this category: backend_planning_error, backend_execution_error,
 * backend_sink_error, backend_registration_error or runtime_init_error.
 * field (may be NULL) tells a sink binding from a source binding. NULL for
 * categories that are no backend error (conflict, not_found). */
const char *sv_errcat_backend_kind(sv_errcat_t cat, const char *field);
/* The HTTP status an error of this category maps to. */
int sv_errcat_http_status(sv_errcat_t cat);

#endif
