/* clusterkit.c — the nodes of a distributed-mode test (clusterkit.h).
 *
 * A node is forked and exec'd in its own process group (so a kill -9
 * takes its children too) with PR_SET_PDEATHSIG, its stdout and stderr in
 * logs/<node>-<incarnation>.log under the rig's root; it is up once its
 * log says which port it bound and that it joined the cluster. Status is
 * read over HTTP from GET /v1/jobs/<id>. */
#define _GNU_SOURCE
#include "tests/integration/clusterkit.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "tests/integration/testkit.h"

extern char **environ;


static cluster_t *g_cl;

void cl_kill_nodes(void)
{
	if (!g_cl)
		return;
	for (int i = 0; i < g_cl->nn; i++)
		if (g_cl->n[i].pid > 0) {
			kill(g_cl->n[i].pid, SIGCONT);
			cr_kill_group(g_cl->n[i].pid);
		}
}

void cl_node_init(cluster_t *cl, int i)
{
	node_t *n = &cl->n[i];
	snprintf(n->id, sizeof(n->id), "n%d", i + 1);
	if (asprintf(&n->dir, "%s/%s", cl->c->root, n->id) < 0 ||
	    asprintf(&n->config, "%s/%s.yaml", cl->c->root, n->id) < 0)
		abort();
	FILE *f = fopen(n->config, "w");
	if (!f)
		cr_fail(cl->c, "cannot write %s", n->config);
	fprintf(f,
		"listen: 127.0.0.1:0\n"
		"data_dir: %s\n"
		"shutdown_timeout_ms: 2000\n"
		"clusters:\n"
		"  default:\n"
		"    bootstrap_servers: %s\n"
		"distributed:\n"
		"  name: %s\n"
		"  node_id: %s\n"
		"  session_timeout_ms: %d\n",
		n->dir, tk_bootstrap(), cl->name, n->id, SESSION_MS);
	fclose(f);
	cl->nn = i + 1 > cl->nn ? i + 1 : cl->nn;
}

/* Start node i (fork, exec), with env and env2 (NAME=VALUE or NULL)
 * added to the test's environment (less its STREAMVISOR_ variables). */
void cl_node_start(cluster_t *cl, int i, const char *env, const char *env2)
{
	node_t *n = &cl->n[i];
	const char *bin = getenv("STREAMVISOR_BIN");
	n->incarnation++;
	char log[sizeof(n->log)];
	snprintf(log, sizeof(log), "%s/logs/%s-%02d.log", cl->c->root, n->id,
		 n->incarnation);
	memcpy(n->log, log, sizeof(log));
	char *argv[] = {(char *)bin, "serve", "--config", n->config, NULL};
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **envp = sv_calloc(ne + 3, sizeof(char *));
	size_t k = 0;
	for (size_t e = 0; e < ne; e++)
		if (strncmp(environ[e], "STREAMVISOR_", 12))
			envp[k++] = environ[e];
	if (env)
		envp[k++] = (char *)env;
	if (env2)
		envp[k++] = (char *)env2;
	envp[k] = NULL;
	int fd = open(n->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || nul < 0)
		cr_fail(cl->c, "cannot open %s: %s", n->log, strerror(errno));
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		setpgid(0, 0);
		dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execve(bin, argv, envp);
		_exit(127);
	}
	close(fd);
	close(nul);
	free(envp);
	if (pid < 0)
		cr_fail(cl->c, "fork: %s", strerror(errno));
	setpgid(pid, pid);
	n->pid = pid;
	n->port = 0;
	n->stopped = false;
	/* the port it bound, from its log */
	int64_t deadline = sv_mono_ms() + 30000;
	while (!n->port) {
		char *s = cr_slurp(n->log, NULL);
		const char *p = s ? strstr(s, "listening on http://127.0.0.1:")
				  : NULL;
		if (p && s && strstr(s, "of streamvisor cluster"))
			n->port = atoi(p +
				       strlen("listening on "
					      "http://127.0.0.1:"));
		free(s);
		int st;
		if (!n->port && waitpid(pid, &st, WNOHANG) == pid) {
			n->pid = 0;
			cr_fail(cl->c, "node %s exited at start; log %s", n->id,
				n->log);
		}
		if (!n->port && sv_mono_ms() > deadline)
			cr_fail(cl->c, "node %s did not start within 30 s",
				n->id);
		if (!n->port)
			usleep(50000);
	}
	printf("[%s %6.1fs] node %s up on port %d (pid %d)%s%s%s%s\n",
	       cl->c->test, cr_secs(cl->c), n->id, n->port, (int)pid,
	       env ? " with " : "", env ? env : "", env2 ? " " : "",
	       env2 ? env2 : "");
	fflush(stdout);
}

/* SIGTERM: the node's graceful shutdown (final checkpoints); it must exit
 * within timeout_ms. */
void cl_node_term(cluster_t *cl, int i, int timeout_ms)
{
	node_t *n = &cl->n[i];
	int64_t t0 = sv_mono_ms(), deadline = t0 + timeout_ms;
	kill(n->pid, SIGTERM);
	int st;
	while (waitpid(n->pid, &st, WNOHANG) != n->pid) {
		if (sv_mono_ms() > deadline)
			cr_fail(cl->c,
				"node %s did not exit within %d ms of "
				"SIGTERM",
				n->id, timeout_ms);
		usleep(50000);
	}
	printf("[%s %6.1fs] node %s stopped by SIGTERM in %" PRId64
	       " ms (exit %d)\n",
	       cl->c->test, cr_secs(cl->c), n->id, sv_mono_ms() - t0,
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	n->pid = 0;
	n->port = 0;
}

void cl_node_kill(cluster_t *cl, int i)
{
	node_t *n = &cl->n[i];
	if (n->pid <= 0)
		return;
	kill(n->pid, SIGCONT);
	cr_kill_group(n->pid);
	int st;
	waitpid(n->pid, &st, 0);
	n->pid = 0;
	n->port = 0;
}

/* The job's status on node i, or NULL (unreachable, not there yet). */
json_t *cl_node_job(cluster_t *cl, int i, const char *id)
{
	node_t *n = &cl->n[i];
	if (n->pid <= 0 || n->stopped)
		return NULL;
	char path[200], *resp = NULL;
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	int st = cr_http_do(n->port, "GET", path, NULL, &resp, 3000);
	json_t *o = st == 200 && resp ? json_loads(resp, 0, NULL) : NULL;
	free(resp);
	return o;
}

/* How many partitions node i reads in the job's current attempt (-1: no
 * answer); their ids into *mask. */
int cl_node_parts(cluster_t *cl, int i, const char *id, unsigned *mask)
{
	json_t *o = cl_node_job(cl, i, id);
	if (!o)
		return -1;
	json_t *parts = json_object_get(o, "partitions");
	size_t k;
	json_t *pe;
	unsigned m = 0;
	int n = 0;
	json_array_foreach (parts, k, pe) {
		/* what other nodes read, from the status topic */
		if (json_is_true(json_object_get(pe, "remote")))
			continue;
		n++;
		m |= 1u << cr_jint(pe, "partition", 0);
		const char *node = json_string_value(
			json_object_get(pe, "node"));
		if (!node || strcmp(node, cl->n[i].id))
			cr_fail(cl->c,
				"node %s lists partition %d as read by "
				"node '%s'",
				cl->n[i].id, (int)cr_jint(pe, "partition", 0),
				node ? node : "(none)");
	}
	json_decref(o);
	if (mask)
		*mask = m;
	return n;
}

int64_t cl_node_dist(cluster_t *cl, int i, const char *id, const char *k)
{
	json_t *o = cl_node_job(cl, i, id);
	int64_t v = o ? cr_jint(json_object_get(o, "distributed"), k, -1) : -1;
	json_decref(o);
	return v;
}

/* Wait until every node in want (node index → partitions, -1: do not
 * care, -2: at least one) reads that many partitions, and together all
 * PARTS. Returns ms waited. */
int64_t cl_wait_split(cluster_t *cl, const char *id, const int *want,
		      int timeout_ms, const char *what)
{
	int64_t t0 = sv_mono_ms(), deadline = t0 + timeout_ms;
	for (;;) {
		bool ok = true;
		unsigned all = 0;
		char got[128] = "";
		size_t off = 0;
		for (int i = 0; i < cl->nn; i++) {
			unsigned m = 0;
			int n = want[i] != -1 ? cl_node_parts(cl, i, id, &m)
					      : 0;
			all |= m;
			if (want[i] != -1) {
				ok = ok &&
					(want[i] == -2 ? n >= 1 : n == want[i]);
				off += (size_t)snprintf(
					got + off, sizeof(got) - off,
					"%s%s=%d(0x%x)", off ? " " : "",
					cl->n[i].id, n, m);
			}
		}
		if (ok && all == (1u << PARTS) - 1) {
			int64_t ms = sv_mono_ms() - t0;
			printf("[%s %6.1fs] %s: %s after %" PRId64 " ms\n",
			       cl->c->test, cr_secs(cl->c), what, got, ms);
			fflush(stdout);
			return ms;
		}
		if (sv_mono_ms() > deadline)
			cr_fail(cl->c, "%s: not reached within %d ms (%s)",
				what, timeout_ms, got);
		usleep(100000);
	}
}

int cl_mutate(cluster_t *cl, int i, const char *method, const char *path,
	      const char *body, char **resp, int timeout_ms)
{
	int64_t deadline = sv_mono_ms() + timeout_ms;
	for (;;) {
		*resp = NULL;
		int st = cr_http_do(cl->n[i].port, method, path, body, resp,
				    15000);
		if ((st != 503 && st > 0) || sv_mono_ms() > deadline)
			return st;
		free(*resp);
		*resp = NULL;
		usleep(200000);
	}
}

char *cl_submit(cluster_t *cl, int i, const char *spec)
{
	char *resp = NULL;
	int st = cl_mutate(cl, i, "POST", "/v1/jobs", spec, &resp, 40000);
	json_t *o = resp ? json_loads(resp, 0, NULL) : NULL;
	const char *id = o ? json_string_value(json_object_get(o, "id")) : NULL;
	if (st != 201 || !id)
		cr_fail(cl->c, "submit to %s: %d %s", cl->n[i].id, st,
			resp ? resp : "");
	char *r = sv_strdup(id);
	json_decref(o);
	free(resp);
	return r;
}

/* Until node i has at least min records written and not yet committed
 * (an open transaction with output): then a kill or a freeze leaves
 * aborted output behind. */
/* The count must reach min and, read again at least 30 ms later, not
 * have dropped: no commit came between the two reads, so the open
 * transactions hold records written 30 ms before the second read, longer
 * than the producer's linger (5 ms): they reached the broker, and a kill
 * now leaves aborted output behind (a kill right after the first read
 * sometimes found those records still in librdkafka's queue, or just
 * committed: the negative control saw nothing aborted). */
void cl_wait_uncommitted(cluster_t *cl, int i, const char *id, int64_t min)
{
	int64_t deadline = sv_mono_ms() + 30000;
	int64_t first = -1, first_at = 0;
	for (;;) {
		int64_t n = cl_node_dist(cl, i, id, "records_out_uncommitted");
		int64_t now = sv_mono_ms();
		if (n < min || (first >= 0 && n < first)) {
			first = -1; /* below it again: committed meanwhile */
		} else if (first < 0) {
			first = n;
			first_at = now;
		} else if (now - first_at >= 30) {
			return;
		}
		if (now > deadline)
			cr_fail(cl->c,
				"node %s never had %" PRId64
				" uncommitted records for 30 ms",
				cl->n[i].id, min);
		usleep(10000);
	}
}

cluster_t *cl_new(void **state, const char *test, unsigned salt, int nodes)
{
	crash_t *c = cr_new(state, test, salt);
	char *logs;
	if (asprintf(&logs, "%s/logs", c->root) < 0)
		abort();
	mkdir(logs, 0755);
	free(logs);
	cluster_t *cl = sv_calloc(1, sizeof(*cl));
	cl->c = c;
	cl->name = tk_unique("itc");
	g_cl = cl;
	for (int i = 0; i < nodes; i++)
		cl_node_init(cl, i);
	return cl;
}

void cl_free(cluster_t *cl)
{
	cl_kill_nodes();
	for (int i = 0; i < cl->nn; i++) {
		if (cl->n[i].pid > 0)
			waitpid(cl->n[i].pid, NULL, 0);
		free(cl->n[i].dir);
		free(cl->n[i].config);
	}
	free(cl->name);
	free(cl);
	g_cl = NULL;
}

/* Wait until the group committed the input's end, then check the output
 * with both readers. Returns the read_committed tally; *unc the other. */
tally_t cl_finish(cluster_t *cl, cjob_t *j, tally_t *unc, const char *role,
		  const char *unc_role)
{
	crash_t *c = cl->c;
	cr_wait_input(c);
	int64_t ends[PARTS], got[PARTS];
	cr_input_ends(c, ends);
	int64_t deadline = sv_mono_ms() + 60000;
	while (!cr_group_at_end(c, j, ends, got)) {
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"group offsets %" PRId64 ",%" PRId64 ",%" PRId64
				",%" PRId64
				" did not reach the input's end %" PRId64
				",%" PRId64 ",%" PRId64 ",%" PRId64,
				got[0], got[1], got[2], got[3], ends[0],
				ends[1], ends[2], ends[3]);
		usleep(200000);
	}
	tally_t t = cr_check_output(c, j, true);
	cr_summary(c, j, "read_committed", &t, role);
	*unc = cr_check_output(c, j, false);
	cr_summary(c, j, "read_uncommitted", unc, unc_role);
	return t;
}

cjob_t *cl_add_job(cluster_t *cl)
{
	cjob_t *j = cr_add_job(cl->c, "eo-pass", J_PASS, S_KAFKA, true);
	/* a crashed node's open transaction holds its partitions until it
	 * times out (docs/cluster.md) */
	j->sink_extra = "\"transaction_timeout_ms\": 10000";
	return j;
}

int cl_teardown(void **state)
{
	if (g_cl)
		cl_free(g_cl);
	return cr_teardown(state);
}

void cl_test_init(void)
{
	atexit(cl_kill_nodes);
	atexit(cr_atexit_kill);
	signal(SIGPIPE, SIG_IGN);
	const char *only = getenv("SV_CLUSTER_ONLY");
	if (only && *only)
		cmocka_set_test_filter(only);
}
