/* testkit.h — helpers for integration tests against the real Kafka broker
 * (KAFKA_BOOTSTRAP, started by the ctest fixture) and the HTTP API of an
 * in-process supervisor. Every helper fails the test loudly (cmocka fail)
 * when the broker cannot be reached: tests never skip silently. */
#ifndef SV_TESTKIT_H
#define SV_TESTKIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "supervisor/supervisor.h"

/* The broker address from KAFKA_BOOTSTRAP; fails when unset or unreachable. */
const char *tk_bootstrap(void);
/* Point every helper at another broker (a test's own, e.g. behind a
 * proxy), without the reachability check; NULL: back to KAFKA_BOOTSTRAP. */
void tk_use_bootstrap(const char *bootstrap);
/* A topic name unique to this process and call: "<prefix>-<pid>-<n>". */
char *tk_unique(const char *prefix);
/* Create a topic and wait until it has leaders. */
void tk_create_topic(const char *topic, int partitions);
/* Produce n payloads (round-robin over partitions, key NULL); waits for
 * delivery of all. */
void tk_produce(const char *topic, const char *const *payloads, size_t n);
/* Produce n payloads with message keys: into partitions[i] when
 * partitions is not NULL, else where Kafka's default partitioner
 * (murmur2_random, as the Java client) puts the key. Waits for delivery. */
void tk_produce_keyed(const char *topic, const char *const *payloads,
		      const char *const *keys, const int32_t *partitions,
		      size_t n);
/* Read the topic from the beginning with isolation.level (read_committed
 * or read_uncommitted) until expect messages arrived (then one more idle
 * second to catch extras) or timeout_ms passed. Returns the payloads
 * (NUL-terminated copies); caller frees with tk_free_lines. */
size_t tk_consume(const char *topic, size_t expect, int timeout_ms,
		  bool read_committed, char ***out);
void tk_free_lines(char **lines, size_t n);

/* An in-process supervisor and HTTP server whose "default" cluster is the
 * test broker. */
typedef struct tk_service {
	sv_supervisor_t *sv;
	sv_http_t *http;
	int port;
} tk_service_t;

void tk_service_start(tk_service_t *svc);
void tk_service_stop(tk_service_t *svc);

/* One HTTP request to 127.0.0.1:port; returns the status, *body the
 * response body (caller frees; may be NULL to ignore). */
int tk_http(int port, const char *method, const char *path, const char *body,
	    char **resp);
/* Same, parsing the response as JSON (fails the test on invalid JSON). */
json_t *tk_http_json(int port, const char *method, const char *path,
		     const char *body, int *status);
/* POST /v1/jobs; fails the test unless 201. Returns the job id (free). */
char *tk_submit(int port, const char *spec);
/* Poll GET /v1/jobs/{id} until its state is `state` or timeout; returns the
 * last status document (caller decrefs). Fails the test on timeout. */
json_t *tk_wait_state(int port, const char *id, const char *state,
		      int timeout_ms);
/* Poll until pred(status) is true; returns last status or fails. */
json_t *tk_wait_status(int port, const char *id,
		       bool (*pred)(json_t *status, void *arg), void *arg,
		       int timeout_ms, const char *what);

#endif
