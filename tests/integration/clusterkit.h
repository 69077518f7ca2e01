/* clusterkit.h — several real `streamvisor serve` processes as one
 * streamvisor cluster on loopback and the real broker, for the
 * distributed-mode tests (it_cluster*.c; docs/cluster.md, SCALE-OUT.md §8).
 *
 * A cluster_t is the crash rig (crashkit.h: input, verifier, jobs) plus up
 * to NODES_MAX nodes, each a child process with its own config (a
 * `distributed:` section with the run's own cluster name and node id
 * n<i+1>, session timeout SESSION_MS), data dir and log per incarnation.
 * Every wait is for a condition with a deadline; a failure names the node
 * and its log. */
#ifndef SV_TESTS_CLUSTERKIT_H
#define SV_TESTS_CLUSTERKIT_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/integration/crashkit.h"

#define SESSION_MS 6000
#define NODES_MAX 3

typedef struct node {
	char id[16];
	char *dir, *config;
	char log[700];
	pid_t pid;
	int port;
	int incarnation;
	bool stopped; /* SIGSTOPped */
} node_t;

typedef struct cluster {
	crash_t *c;
	char *name;
	node_t n[NODES_MAX];
	int nn;
} cluster_t;

/* A cluster of `nodes` configured (not started) nodes over a new crash
 * rig; cl_free kills what still runs and frees it. */
cluster_t *cl_new(void **state, const char *test, unsigned salt, int nodes);
void cl_free(cluster_t *cl);
/* Kill every node of the current cluster (teardown; safe twice). */
void cl_kill_nodes(void);
/* A cluster test binary's start: kill every node and child at exit,
 * ignore SIGPIPE, and run only the cases SV_CLUSTER_ONLY names (a cmocka
 * filter). */
void cl_test_init(void);
/* cmocka teardown: free the current cluster, then the rig's. */
int cl_teardown(void **state);
/* Configure node i (its config and data dir paths); cl_new does 0..n-1. */
void cl_node_init(cluster_t *cl, int i);
/* Start node i with env and env2 (NAME=VALUE or NULL) added to the test's
 * environment less its STREAMVISOR_ variables; returns once it serves. */
void cl_node_start(cluster_t *cl, int i, const char *env, const char *env2);
/* SIGTERM (the graceful shutdown); it must exit within timeout_ms. */
void cl_node_term(cluster_t *cl, int i, int timeout_ms);
/* kill -9 of node i's process group (also a SIGSTOPped one). */
void cl_node_kill(cluster_t *cl, int i);
/* GET /v1/jobs/<id> on node i, or NULL (down, frozen, no answer). */
json_t *cl_node_job(cluster_t *cl, int i, const char *id);
/* Partitions node i reads in the job (-1: no answer), ids into *mask;
 * fails when a partition of its own names another node (the "remote"
 * ones, from the status topic, are skipped). */
int cl_node_parts(cluster_t *cl, int i, const char *id, unsigned *mask);
/* The job's `distributed.<k>` counter on node i (-1: no answer). */
int64_t cl_node_dist(cluster_t *cl, int i, const char *id, const char *k);
/* Wait until node i reads want[i] partitions (-1: do not care, -2: at
 * least one) and together all PARTS; returns ms waited. */
int64_t cl_wait_split(cluster_t *cl, const char *id, const int *want,
		      int timeout_ms, const char *what);
/* A mutation to node i, again while it answers 503 (no leader yet) or
 * nothing, until timeout_ms; the last status (-1: no answer), *resp the
 * body (free). */
int cl_mutate(cluster_t *cl, int i, const char *method, const char *path,
	      const char *body, char **resp, int timeout_ms);
/* POST /v1/jobs to node i (again on 503 for up to 40 s); 201 or the test
 * fails. Returns the id (free). */
char *cl_submit(cluster_t *cl, int i, const char *spec);
/* Until node i has >= min records written in open transactions, still
 * there (no commit) at a second read >= 30 ms later. */
void cl_wait_uncommitted(cluster_t *cl, int i, const char *id, int64_t min);
/* Wait until the job's group committed the input's end, then check the
 * output read_committed (returned) and read_uncommitted (*unc). */
tally_t cl_finish(cluster_t *cl, cjob_t *j, tally_t *unc, const char *role,
		  const char *unc_role);
/* The exactly-once passthrough job into Kafka (transaction timeout 10 s). */
cjob_t *cl_add_job(cluster_t *cl);
#endif
