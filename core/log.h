/* log.h — one logging entry point. Every line carries the job id and attempt
 * when there is a job. Third-party logs (librdkafka, RocksDB) are routed here
 * by their wrapping modules. Secrets never reach a log line: callers log
 * profile names, never client properties. */
#ifndef SV_LOG_H
#define SV_LOG_H

typedef enum sv_loglevel {
	SV_LOG_ERROR = 3,
	SV_LOG_WARN = 4,
	SV_LOG_INFO = 6,
	SV_LOG_DEBUG = 7,
} sv_loglevel_t;

/* Job context of a log line; NULL for supervisor-wide lines. */
typedef struct sv_logctx {
	const char *job_id;
	int attempt;
} sv_logctx_t;

/* thread: any */
void sv_log(const sv_logctx_t *ctx, sv_loglevel_t level, const char *facility,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Lines above this level are dropped. Default INFO; env STREAMVISOR_LOG_LEVEL
 * (error|warn|info|debug) overrides at first use. */
void sv_log_set_level(sv_loglevel_t level);
sv_loglevel_t sv_log_level(void);

#endif
