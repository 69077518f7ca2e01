/* join_views.h — a join's second input in the status document and in
 * /metrics (docs/joins.md, "Status and metrics"). thread: supervisor. */
#ifndef SV_JOIN_VIEWS_H
#define SV_JOIN_VIEWS_H

#include <jansson.h>

#include "core/util.h"
#include "supervisor/supervisor_int.h"

/* The status document's "join" member: null without a join step. */
json_t *sv_join_status_json(sv_job_t *job);
/* The join families of /metrics; l is scratch for the labels. */
void sv_join_metrics(sv_supervisor_t *sv, sv_buf_t *b, sv_buf_t *l);

#endif
