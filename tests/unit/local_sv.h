/* local_sv.h — an in-process supervisor for unit tests that need no broker:
 * a temporary data dir, generator sources and local sinks only. Helpers
 * wait for a condition with a deadline, never for a fixed time. */
#ifndef SV_TEST_LOCAL_SV_H
#define SV_TEST_LOCAL_SV_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include (nftw, mkdtemp)"
#endif
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "supervisor/supervisor.h"

typedef struct local_sv {
	char dir[64];
	sv_supervisor_t *sv;
} local_sv_t;

static int local_sv_rm(const char *p, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* A supervisor with a data dir under /tmp; NULL on failure. */
static inline local_sv_t *local_sv_start(void)
{
	local_sv_t *l = sv_calloc(1, sizeof(*l));
	snprintf(l->dir, sizeof(l->dir), "/tmp/sv-unit-XXXXXX");
	if (!mkdtemp(l->dir)) {
		free(l);
		return NULL;
	}
	sv_svconf_t conf;
	sv_svconf_init(&conf);
	free(conf.data_dir);
	conf.data_dir = sv_strdup(l->dir);
	sv_error_t *err = sv_supervisor_new(&conf, &l->sv);
	sv_svconf_release(&conf);
	if (err) {
		fprintf(stderr, "supervisor: %s\n", err->message);
		sv_error_destroy(err);
		free(l);
		return NULL;
	}
	return l;
}

static inline void local_sv_stop(local_sv_t *l)
{
	if (!l)
		return;
	sv_supervisor_destroy(l->sv);
	nftw(l->dir, local_sv_rm, 16, FTW_DEPTH | FTW_PHYS);
	free(l);
}

/* Submit a JSON spec; the job id (caller frees) or NULL with *err. */
static inline char *local_sv_submit(local_sv_t *l, const char *spec,
				    sv_error_t **err)
{
	char *json = NULL;
	*err = sv_supervisor_submit(l->sv, spec, strlen(spec), false, &json);
	if (*err)
		return NULL;
	json_t *o = json_loads(json, 0, NULL);
	free(json);
	char *id = sv_strdup(json_string_value(json_object_get(o, "id")));
	json_decref(o);
	return id;
}

/* The job's status document (caller decrefs), or NULL. */
static inline json_t *local_sv_status(local_sv_t *l, const char *id)
{
	char *json = NULL;
	sv_error_t *err = sv_supervisor_status(l->sv, id, &json);
	if (err) {
		sv_error_destroy(err);
		return NULL;
	}
	json_t *o = json_loads(json, 0, NULL);
	free(json);
	return o;
}

static inline bool local_sv_state_is(local_sv_t *l, const char *id,
				     const char *state)
{
	json_t *o = local_sv_status(l, id);
	bool is = o &&
		!strcmp(json_string_value(json_object_get(o, "state")), state);
	json_decref(o);
	return is;
}

/* Wait until the job is in state, at most timeout_ms. */
static inline bool local_sv_wait_state(local_sv_t *l, const char *id,
				       const char *state, int timeout_ms)
{
	int64_t deadline = sv_now_ms() + timeout_ms;
	for (;;) {
		if (local_sv_state_is(l, id, state))
			return true;
		if (sv_now_ms() > deadline)
			return false;
		struct timespec ts = {0, 10 * 1000000};
		nanosleep(&ts, NULL);
	}
}

#endif
