/* metrics.h — a tiny writer for the Prometheus text exposition format
 * (version 0.0.4), used by GET /metrics. It only formats; the supervisor
 * decides which families and samples exist.
 *
 *   sv_buf_t labels; sv_buf_init(&labels);
 *   sv_prom_label(&labels, "job", job_id);
 *   sv_prom_family(out, "streamvisor_job_lag_records", "gauge", "...");
 *   sv_prom_sample(out, "streamvisor_job_lag_records", labels.data, 42);
 */
#ifndef SV_METRICS_H
#define SV_METRICS_H

#include "core/util.h"

/* Append the "# HELP" and "# TYPE" lines of a metric family. type is
 * "counter", "gauge", "histogram", "summary" or "untyped"; help is escaped
 * (\\ and \n). All arguments borrowed. */
void sv_prom_family(sv_buf_t *b, const char *name, const char *type,
		    const char *help);

/* Append one sample line: name{labels} value. labels is a preformatted
 * `job="x",topic="y"` string (see sv_prom_label), or NULL/"" for none.
 * Integral values print without exponent or fraction ("42"); NaN and
 * infinities print as NaN, +Inf, -Inf. All arguments borrowed. */
void sv_prom_sample(sv_buf_t *b, const char *name, const char *labels,
		    double value);

/* Append key="value" to a label list, preceded by a comma unless the list is
 * empty. The value is escaped (\\, \", \n); value NULL is written as "". */
void sv_prom_label(sv_buf_t *labels, const char *key, const char *value);

/* Append the value as exposition text (what sv_prom_sample writes). */
void sv_prom_value(sv_buf_t *b, double value);

#endif
