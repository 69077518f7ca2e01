/* observe.c — the observation ring (see observe.h). Entries are kept as
 * jansson objects; a page copies references under the lock. */
#include "supervisor/observe.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/util.h"

struct sv_obslog {
	pthread_mutex_t lock;
	char *job_id;
	json_t **ring;
	size_t cap;
	uint64_t next_seq; /* seq of the next entry; entries next_seq-n.. kept */
	size_t n;
};

sv_obslog_t *sv_obslog_new(const char *job_id, size_t cap)
{
	sv_obslog_t *log = sv_calloc(1, sizeof(*log));
	pthread_mutex_init(&log->lock, NULL);
	log->job_id = sv_strdup(job_id);
	log->cap = cap ? cap : SV_OBSLOG_DEFAULT_CAP;
	log->ring = sv_calloc(log->cap, sizeof(json_t *));
	log->next_seq = 1;
	return log;
}

void sv_obslog_destroy(sv_obslog_t *log)
{
	if (!log)
		return;
	for (size_t i = 0; i < log->cap; i++)
		json_decref(log->ring[i]);
	free(log->ring);
	free(log->job_id);
	pthread_mutex_destroy(&log->lock);
	free(log);
}

static json_t *iso_now(int64_t ms)
{
	char buf[40];
	sv_format_iso8601(ms, buf, sizeof(buf));
	return json_string(buf);
}

static _Thread_local const char *acting_principal;
/* distributed mode: this process's node id, in every observation */
static char obs_node[72];

void sv_obs_set_node(const char *node)
{
	snprintf(obs_node, sizeof(obs_node), "%s", node ? node : "");
}

void sv_obs_set_principal(const char *name)
{
	acting_principal = name;
}

const char *sv_obs_principal(void)
{
	return acting_principal;
}

uint64_t sv_obslog_add(sv_obslog_t *log, int attempt, const char *kind,
		       json_t *fields)
{
	int64_t now = sv_now_ms();
	json_t *o = json_object();
	pthread_mutex_lock(&log->lock);
	uint64_t seq = log->next_seq++;
	json_object_set_new(o, "seq", json_integer((json_int_t)seq));
	json_object_set_new(o, "time", iso_now(now));
	json_object_set_new(o, "time_ms", json_integer(now));
	json_object_set_new(o, "job_id", json_string(log->job_id));
	json_object_set_new(o, "attempt", json_integer(attempt));
	json_object_set_new(o, "kind", json_string(kind));
	if (fields) {
		json_object_update(o, fields);
		json_decref(fields);
	}
	if (acting_principal)
		json_object_set_new(o, "principal",
				    json_string(acting_principal));
	if (obs_node[0] && !json_object_get(o, "node"))
		json_object_set_new(o, "node", json_string(obs_node));
	size_t slot = (size_t)(seq % log->cap);
	json_decref(log->ring[slot]);
	log->ring[slot] = o;
	if (log->n < log->cap)
		log->n++;
	pthread_mutex_unlock(&log->lock);
	return seq;
}

json_t *sv_obslog_page(sv_obslog_t *log, uint64_t after, size_t limit)
{
	json_t *a = json_array();
	pthread_mutex_lock(&log->lock);
	uint64_t first = log->next_seq - log->n; /* oldest kept */
	uint64_t from = after + 1 > first ? after + 1 : first;
	uint64_t last = after;
	for (uint64_t s = from; s < log->next_seq && json_array_size(a) < limit;
	     s++) {
		json_array_append(a, log->ring[s % log->cap]);
		last = s;
	}
	json_t *page = json_pack("{s:o, s:I, s:I, s:I}", "observations", a,
				 "next_after", (json_int_t)last, "first_seq",
				 (json_int_t)first, "dropped",
				 (json_int_t)(first - 1));
	pthread_mutex_unlock(&log->lock);
	return page;
}
