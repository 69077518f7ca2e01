/* crashkit.c — the crash rig (see crashkit.h): factored out of it_crash.c
 * so every process-level fault test drives the supervisor, writes its input
 * and verifies its output the same way. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "core/util.h"
#include "tests/integration/testkit.h"
#include "tests/integration/crashkit.h"

extern char **environ;


static void producer_dr(rd_kafka_t *rk, const rd_kafka_message_t *m,
			void *opaque)
{
	(void)rk;
	producer_t *p = opaque;
	if (m->err && atomic_fetch_add(&p->failures, 1) == 0)
		snprintf(p->err, sizeof(p->err), "delivery failed: %s",
			 rd_kafka_err2str(m->err));
}

static void *producer_main(void *arg)
{
	producer_t *p = arg;
	char err[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_conf_set(conf, "bootstrap.servers", tk_bootstrap(), err,
			  sizeof(err));
	rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof(err));
	rd_kafka_conf_set(conf, "acks", "all", err, sizeof(err));
	rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err));
	rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
	rd_kafka_conf_set_opaque(conf, p);
	rd_kafka_conf_set_dr_msg_cb(conf, producer_dr);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err,
				      sizeof(err));
	if (!rk) {
		snprintf(p->err, sizeof(p->err), "producer: %s", err);
		atomic_fetch_add(&p->failures, 1);
		atomic_store(&p->done, true);
		return NULL;
	}
	int64_t t0 = sv_mono_ms(), seq = 0;
	char buf[160];
	while (seq < p->target && !atomic_load(&p->stop)) {
		int64_t allowed = (int64_t)((double)(sv_mono_ms() - t0) *
					    p->rate / 1000.0) +
			1;
		if (allowed > p->target)
			allowed = p->target;
		while (seq < allowed && !atomic_load(&p->stop)) {
			int n = fmt_record(buf, sizeof(buf), seq);
			char key[8];
			snprintf(key, sizeof(key), "k%02d", key_of(seq));
			rd_kafka_resp_err_t r = rd_kafka_producev(
				rk, RD_KAFKA_V_TOPIC(p->topic),
				RD_KAFKA_V_PARTITION(part_of(seq)),
				RD_KAFKA_V_KEY(key,
					       cr_par > 1 ? strlen(key) : 0),
				RD_KAFKA_V_VALUE(buf, (size_t)n),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_END);
			if (r == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
				rd_kafka_poll(rk, 10);
				continue;
			}
			if (r) {
				snprintf(p->err, sizeof(p->err), "produce: %s",
					 rd_kafka_err2str(r));
				atomic_fetch_add(&p->failures, 1);
				goto out;
			}
			atomic_store(&p->produced, ++seq);
		}
		rd_kafka_poll(rk, 0);
		usleep(5000);
	}
out:
	rd_kafka_flush(rk, 60000);
	if (rd_kafka_outq_len(rk) > 0 && atomic_fetch_add(&p->failures, 1) == 0)
		snprintf(p->err, sizeof(p->err),
			 "flush timed out with %d "
			 "records undelivered",
			 rd_kafka_outq_len(rk));
	rd_kafka_destroy(rk);
	atomic_store(&p->done, true);
	return NULL;
}

void cr_producer_start(producer_t *p, const char *topic, int64_t target,
		       double rate)
{
	p->topic = sv_strdup(topic);
	p->target = target;
	p->rate = rate;
	if (pthread_create(&p->th, NULL, producer_main, p))
		fail_msg("cannot start the producer thread");
	p->started = true;
}

/* Stop (if still running) and join; bounded by the flush timeout. */
void cr_producer_join(producer_t *p, bool stop)
{
	if (!p->started)
		return;
	if (stop)
		atomic_store(&p->stop, true);
	pthread_join(p->th, NULL);
	p->started = false;
}

/* ---- jobs and the crash context ---- */


static crash_t *g_live; /* for the atexit safety net */

pid_t cr_spawn(const char *file, char *const argv[], char *const envp[],
	       int fd0, int fd1, int fd2, bool own_group)
{
	fflush(NULL); /* nothing buffered is written twice */
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) /* the test died before prctl */
			_exit(126);
		if (own_group)
			setpgid(0, 0);
		if (fd0 >= 0)
			dup2(fd0, 0);
		if (fd1 >= 0)
			dup2(fd1, 1);
		if (fd2 >= 0)
			dup2(fd2, 2);
		execvpe(file, argv, envp ? envp : environ);
		_exit(127);
	}
	if (pid > 0 && own_group)
		setpgid(pid, pid); /* either side may win the race */
	return pid;
}

void cr_kill_group(pid_t pid)
{
	if (pid > 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
}

void cr_atexit_kill(void)
{
	if (g_live && g_live->pid > 0)
		cr_kill_group(g_live->pid);
}

char *cr_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	sv_buf_t b;
	sv_buf_init(&b);
	char buf[65536];
	size_t r;
	while ((r = fread(buf, 1, sizeof(buf), f)) > 0)
		sv_buf_append(&b, buf, r);
	fclose(f);
	if (len)
		*len = b.len;
	if (!b.data)
		return sv_strdup("");
	return sv_buf_detach(&b);
}

void cr_print_log_tail(crash_t *c, int lines)
{
	if (!c->log_path[0])
		return;
	size_t len;
	char *s = cr_slurp(c->log_path, &len);
	if (!s)
		return;
	const char *p = s + len;
	int n = 0;
	while (p > s && n <= lines)
		if (*--p == '\n')
			n++;
	fprintf(stderr,
		"---- last lines of %s ----\n%s\n---- end of log ----\n",
		c->log_path, p);
	free(s);
}

/* Fail the test, showing the end of the current supervisor log first. */
void cr_fail(crash_t *c, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "it_crash[%s]: FAIL: %s\n", c->test, msg);
	cr_print_log_tail(c, 40);
	fail_msg("%s", msg);
}

double cr_secs(crash_t *c)
{
	return (double)(sv_mono_ms() - c->t0) / 1000.0;
}

static int rm_entry(const char *p, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

crash_t *cr_new(void **state, const char *test, unsigned salt)
{
	const char *bin = getenv("STREAMVISOR_BIN");
	if (!bin || !*bin || access(bin, X_OK))
		fail_msg("STREAMVISOR_BIN is not set or not executable ('%s'): "
			 "run through ctest, or point it at the built "
			 "streamvisor",
			 bin ? bin : "");
	tk_bootstrap(); /* fails loudly without a broker */
	crash_t *c = sv_calloc(1, sizeof(*c));
	*state = c;
	g_live = c;
	c->test = test;
	c->t0 = sv_mono_ms();
	const char *s = getenv("SV_CRASH_SEED");
	c->seed = s && *s ? (unsigned)strtoul(s, NULL, 0) : DEFAULT_SEED;
	c->rng = mix64(c->seed ^ salt) | 1;
	const char *base = getenv("SV_BUILD_DIR");
	if (!base || !*base)
		base = "/tmp";
	if (asprintf(&c->root, "%s/it-crash-%s-XXXXXX", base, test) < 0 ||
	    !mkdtemp(c->root))
		fail_msg("cannot create a temp dir under %s: %s", base,
			 strerror(errno));
	if (asprintf(&c->data_dir, "%s/data", c->root) < 0 ||
	    asprintf(&c->log_dir, "%s/logs", c->root) < 0)
		abort();
	mkdir(c->data_dir, 0755);
	mkdir(c->log_dir, 0755);
	c->in_topic = tk_unique("it-crash-in");
	tk_create_topic(c->in_topic, PARTS);
	printf("[%s] seed=%u root=%s input=%s\n", test, c->seed, c->root,
	       c->in_topic);
	fflush(stdout);
	return c;
}

cjob_t *cr_add_job(crash_t *c, const char *label, jkind_t kind, skind_t sink,
		   bool eo)
{
	cjob_t *j = &c->jobs[c->njobs++];
	j->label = label;
	j->kind = kind;
	j->sink = sink;
	j->exactly_once = eo;
	j->ck = -1;
	if (sink == S_KAFKA) {
		j->out = tk_unique("it-crash-out");
		tk_create_topic(j->out, kind == J_PASS ? 4 : 2);
	} else if (asprintf(&j->out, "%s/out-%s", c->root, label) < 0) {
		abort();
	}
	return j;
}

/* ---- the supervisor process ---- */


void cr_start(crash_t *c, const char *kill_at)
{
	const char *bin = getenv("STREAMVISOR_BIN");
	if (c->pid > 0) /* never two supervisors on one data dir */
		cr_sigkill(c);
	c->incarnation++;
	snprintf(c->log_path, sizeof(c->log_path), "%s/sv-%02d%s%s.log",
		 c->log_dir, c->incarnation, kill_at ? "-" : "",
		 kill_at ? kill_at : "");
	for (char *p = strrchr(c->log_path, '/'); p && *p; p++)
		if (*p == ':')
			*p = '_';
	/* everything the child needs is prepared before fork: the child only
	 * calls async-signal-safe functions (the test has threads) */
	char *argv[] = {
		(char *)bin,
		"serve",
		"--listen",
		"127.0.0.1:0",
		"--data-dir",
		c->data_dir,
		"--bootstrap-servers",
		(char *)tk_bootstrap(),
		"--file-sink-root", /* the file-sink job writes under it */
		c->root,
		NULL};
	if (c->config) { /* holds the "default" profile itself */
		argv[6] = "--config";
		argv[7] = c->config;
	}
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **envp = sv_calloc(ne + 2, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; i < ne; i++)
		if (strncmp(environ[i], "STREAMVISOR_KILL_AT=", 20))
			envp[k++] = environ[i];
	char *ka = NULL;
	if (kill_at) {
		if (asprintf(&ka, "STREAMVISOR_KILL_AT=%s", kill_at) < 0)
			abort();
		envp[k++] = ka;
	}
	envp[k] = NULL;
	int fd = open(c->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		      0644);
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || nul < 0)
		cr_fail(c, "cannot open %s: %s", c->log_path, strerror(errno));
	pid_t pid = cr_spawn(bin, argv, envp, nul, fd, fd, true);
	int fork_errno = errno;
	close(fd);
	close(nul);
	free(envp);
	free(ka);
	if (pid < 0)
		cr_fail(c, "fork: %s", strerror(fork_errno));
	c->pid = pid;
	c->port = 0;
	for (int i = 0; i < c->njobs; i++)
		c->jobs[i].answered = false;
}

/* Reap the supervisor if it has exited within timeout_ms. */
bool cr_reap(crash_t *c, int timeout_ms, int *status)
{
	if (c->pid <= 0)
		return false;
	int64_t deadline = sv_mono_ms() + timeout_ms;
	for (;;) {
		int st;
		pid_t r = waitpid(c->pid, &st, WNOHANG);
		if (r == c->pid) {
			kill(-c->pid, SIGKILL); /* anything left in its group */
			c->pid = 0;
			c->port = 0;
			if (status)
				*status = st;
			return true;
		}
		if (r < 0 && errno != EINTR)
			cr_fail(c, "waitpid: %s", strerror(errno));
		if (sv_mono_ms() >= deadline)
			return false;
		usleep(10000);
	}
}

const char *cr_describe_exit(int st, char *buf, size_t len)
{
	if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(st));
	else
		snprintf(buf, len, "wait status 0x%x", st);
	return buf;
}

void cr_sigkill(crash_t *c)
{
	pid_t pid = c->pid;
	cr_kill_group(pid);
	if (!cr_reap(c, 15000, NULL))
		cr_fail(c, "supervisor pid %d survived SIGKILL for 15 s",
			(int)pid);
}

/* SIGTERM, then SIGKILL after 20 s. */
void cr_stop(crash_t *c)
{
	if (c->pid <= 0)
		return;
	kill(c->pid, SIGTERM);
	if (!cr_reap(c, 20000, NULL)) {
		fprintf(stderr,
			"it_crash: supervisor did not stop within 20 s "
			"of SIGTERM; SIGKILL\n");
		cr_sigkill(c);
	}
}

/* The port from the "listening on http://127.0.0.1:PORT" line; 0 if not
 * printed yet. */
int cr_log_port(crash_t *c)
{
	char *s = cr_slurp(c->log_path, NULL);
	int port = 0;
	const char *p = s ? strstr(s, "listening on http://127.0.0.1:") : NULL;
	if (p)
		port = atoi(p + strlen("listening on http://127.0.0.1:"));
	free(s);
	return port;
}

bool cr_log_contains(crash_t *c, const char *needle)
{
	char *s = cr_slurp(c->log_path, NULL);
	bool r = s && strstr(s, needle);
	free(s);
	return r;
}

/* ---- HTTP that never fails the test by itself (the server may be dead) ---- */

int cr_http_do(int port, const char *method, const char *path, const char *body,
	       char **resp, int timeout_ms)
{
	if (resp)
		*resp = NULL;
	if (port <= 0)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	sv_buf_t req, in;
	sv_buf_init(&req);
	sv_buf_init(&in);
	size_t blen = body ? strlen(body) : 0;
	sv_buf_printf(&req,
		      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		      "Connection: close\r\nContent-Type: application/json\r\n"
		      "Content-Length: %zu\r\n\r\n",
		      method, path, blen);
	if (body)
		sv_buf_append(&req, body, blen);
	int status = -1;
	int64_t deadline = sv_mono_ms() + timeout_ms;
	size_t off = 0;
	while (off < req.len) {
		ssize_t w = send(fd, req.data + off, req.len - off,
				 MSG_NOSIGNAL);
		if (w <= 0)
			goto out;
		off += (size_t)w;
	}
	char buf[65536];
	ssize_t r;
	while ((r = recv(fd, buf, sizeof(buf), 0)) > 0) {
		sv_buf_append(&in, buf, (size_t)r);
		if (sv_mono_ms() > deadline)
			goto out;
	}
	if (r < 0 || !in.data)
		goto out;
	sv_buf_putc(&in, '\0');
	if (sscanf(in.data, "HTTP/1.%*d %d", &status) != 1) {
		status = -1;
		goto out;
	}
	char *hdr_end = strstr(in.data, "\r\n\r\n");
	const char *b = hdr_end ? hdr_end + 4 : "";
	sv_buf_t outb;
	sv_buf_init(&outb);
	char *te = strcasestr(in.data, "transfer-encoding: chunked");
	if (te && (!hdr_end || te < hdr_end)) {
		const char *p = b;
		for (;;) {
			unsigned long sz = strtoul(p, NULL, 16);
			const char *nl = strstr(p, "\r\n");
			if (!sz || !nl)
				break;
			sv_buf_append(&outb, nl + 2, sz);
			p = nl + 2 + sz + 2;
		}
		sv_buf_putc(&outb, '\0');
	} else {
		sv_buf_puts(&outb, b);
		sv_buf_putc(&outb, '\0');
	}
	if (resp)
		*resp = sv_buf_detach(&outb);
	else
		sv_buf_release(&outb);
out:
	close(fd);
	sv_buf_release(&req);
	sv_buf_release(&in);
	return status;
}

/* NULL when the server does not answer or the body is not JSON. */
json_t *cr_http_json(crash_t *c, const char *method, const char *path,
		     const char *body, int *status, char **raw)
{
	char *resp = NULL;
	int st = cr_http_do(c->port, method, path, body, &resp,
			    HTTP_TIMEOUT_MS);
	if (status)
		*status = st;
	if (st < 0) {
		free(resp);
		return NULL;
	}
	json_error_t jerr;
	json_t *j = resp ? json_loads(resp, 0, &jerr) : NULL;
	if (raw)
		*raw = resp;
	else
		free(resp);
	return j;
}

rd_kafka_t *cr_client(crash_t *c, rd_kafka_type_t type, const char *group,
		      const char *isolation, bool eof)
{
	char err[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_conf_set(conf, "bootstrap.servers", tk_bootstrap(), err,
			  sizeof(err));
	rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
	if (group) {
		rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
		rd_kafka_conf_set(conf, "enable.auto.commit", "false", err,
				  sizeof(err));
	}
	if (isolation)
		rd_kafka_conf_set(conf, "isolation.level", isolation, err,
				  sizeof(err));
	if (eof)
		rd_kafka_conf_set(conf, "enable.partition.eof", "true", err,
				  sizeof(err));
	rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof(err));
	if (!rk)
		cr_fail(c, "kafka client: %s", err);
	return rk;
}

int64_t cr_jint(json_t *o, const char *k, int64_t dflt)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/* GET the job's status and remember its counters. NULL when the server
 * does not answer (it may have been killed) or does not know the job yet.
 * A job in state "failed" fails the test. */
json_t *cr_job_get(crash_t *c, cjob_t *j)
{
	if (!c->port || !j->id)
		return NULL;
	char path[256];
	snprintf(path, sizeof(path), "/v1/jobs/%s", j->id);
	int st;
	json_t *s = cr_http_json(c, "GET", path, NULL, &st, NULL);
	if (!s || st != 200) {
		json_decref(s);
		return NULL;
	}
	j->answered = true;
	snprintf(j->state, sizeof(j->state), "%s",
		 json_string_value(json_object_get(s, "state")) ?: "?");
	j->in = cr_jint(s, "records_in", j->in);
	j->out_n = cr_jint(s, "records_out", j->out_n);
	j->late = cr_jint(s, "records_late", j->late);
	j->restarts = cr_jint(s, "restarts", j->restarts);
	json_t *ck = json_object_get(s, "last_checkpoint");
	j->ck = json_is_object(ck) ? cr_jint(ck, "id", -1) : -1;
	j->lag = cr_jint(json_object_get(s, "lag"), "records", -1);
	if (!strcmp(j->state, "failed")) {
		char *d = json_dumps(s, JSON_COMPACT);
		cr_fail(c, "job %s (%s) is failed in incarnation %d: %s",
			j->label, j->id, c->incarnation, d);
	}
	return s;
}

void cr_poll_jobs(crash_t *c)
{
	if (!c->port)
		c->port = cr_log_port(c);
	for (int i = 0; i < c->njobs; i++)
		json_decref(cr_job_get(c, &c->jobs[i]));
}

void cr_wait_port(crash_t *c, int timeout_ms)
{
	int64_t deadline = sv_mono_ms() + timeout_ms;
	while (!(c->port = cr_log_port(c))) {
		int st;
		char d[96];
		if (cr_reap(c, 0, &st))
			cr_fail(c,
				"the supervisor exited during startup "
				"(incarnation %d): %s",
				c->incarnation,
				cr_describe_exit(st, d, sizeof(d)));
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"the supervisor printed no listen address "
				"within %d ms",
				timeout_ms);
		usleep(20000);
	}
}

bool cr_is_live_state(const char *s)
{
	return !strcmp(s, "running") || !strcmp(s, "lagging");
}

/* After a restart: every job must come back by itself, with its id. */
void cr_wait_back(crash_t *c, int timeout_ms)
{
	cr_wait_port(c, timeout_ms);
	int64_t deadline = sv_mono_ms() + timeout_ms;
	for (int i = 0; i < c->njobs; i++) {
		cjob_t *j = &c->jobs[i];
		for (;;) {
			json_t *s = cr_job_get(c, j);
			json_decref(s);
			if (s && cr_is_live_state(j->state))
				break;
			int st;
			char d[96];
			if (cr_reap(c, 0, &st))
				cr_fail(c,
					"the supervisor exited while jobs came "
					"back: %s",
					cr_describe_exit(st, d, sizeof(d)));
			if (sv_mono_ms() > deadline)
				cr_fail(c,
					"job %s (%s) did not come back running "
					"within %d ms after restart %d (last "
					"state "
					"'%s', %s)",
					j->label, j->id, timeout_ms,
					c->incarnation, j->state,
					j->answered ? "answered"
						    : "never answered / 404");
			usleep(100000);
		}
	}
}

/* ---- job specs ---- */

static const char *window_step =
	"{\"window\": {\"type\": \"tumbling\", \"size_ms\": 5000,"
	" \"key\": [\"k\"], \"aggregates\": {\"n\": \"count()\","
	" \"total\": \"sum(seq)\", \"lo\": \"min(seq)\", \"hi\": "
	"\"max(seq)\"}}}";

/* seq is unique: nothing is dropped, and a replay after a restore passes
 * only if the restored state holds exactly the checkpoint's keys */
static const char *session_step =
	"{\"window\": {\"type\": \"session\", \"gap_ms\": " SESSION_GAP_JSON ","
	" \"key\": [\"k\"], \"aggregates\": {\"n\": \"count()\","
	" \"total\": \"sum(seq)\", \"lo\": \"min(seq)\", \"hi\": "
	"\"max(seq)\"}}}";

static const char *dedup_step =
	"{\"dedup\": {\"key\": [\"seq\"], \"within_ms\": 5000}}";

char *cr_job_spec(crash_t *c, cjob_t *j)
{
	char *sink, *s;
	const char *extra = j->sink_extra ? j->sink_extra : "";
	if (j->sink == S_KAFKA) {
		if (asprintf(&sink,
			     "{\"kind\": \"kafka\", \"topic\": \"%s\"%s%s}",
			     j->out, *extra ? ", " : "", extra) < 0)
			abort();
	} else if (asprintf(&sink, "{\"kind\": \"file\", \"path\": \"%s\"%s%s}",
			    j->out, *extra ? ", " : "", extra) < 0) {
		abort();
	}
	if (asprintf(&s,
		     "{\"name\": \"%s-%s\", \"parallelism\": %d,"
		     " \"source\": {\"kind\": \"kafka\", \"topic\": \"%s\"%s},"
		     " \"schema\": [{\"name\": \"seq\", \"type\": \"int64\"},"
		     "   {\"name\": \"k\", \"type\": \"string\"},"
		     "   {\"name\": \"ts\", \"type\": \"int64\"}],"
		     " \"event_time\": {\"field\": \"ts\","
		     "   \"max_out_of_orderness_ms\": %d},"
		     " \"pipeline\": [{\"filter\": \"%s\"}%s%s],"
		     " \"sink\": %s,"
		     " \"delivery\": \"%s\","
		     " \"checkpoint\": {\"interval_ms\": %d, \"retain\": 3},"
		     " \"restart\": %s}",
		     c->test, j->label, cr_par, c->in_topic,
		     cr_par > 1 && !cr_repart ? ", \"partitioned_by\": [\"k\"]"
					      : "",
		     OOO_MS, j->kind == J_SESSION ? SESSION_FILTER : "seq >= 0",
		     j->kind != J_PASS || j->dedup ? ", " : "",
		     j->kind == J_WINDOW            ? window_step
			     : j->kind == J_SESSION ? session_step
			     : j->dedup             ? dedup_step
						    : "",
		     sink, j->exactly_once ? "exactly_once" : "at_least_once",
		     CK_MS,
		     j->restart ? j->restart
				: "{\"max_attempts\": 1000, "
				  "\"initial_backoff_ms\": 100, "
				  "\"max_backoff_ms\": 2000}") < 0)
		abort();
	free(sink);
	return s;
}

void cr_submit_jobs(crash_t *c)
{
	for (int i = 0; i < c->njobs; i++) {
		cjob_t *j = &c->jobs[i];
		char *spec = cr_job_spec(c, j), *raw = NULL;
		int st;
		json_t *r = cr_http_json(c, "POST", "/v1/jobs", spec, &st,
					 &raw);
		const char *id = json_string_value(json_object_get(r, "id"));
		if (st != 201 || !id)
			cr_fail(c,
				"submit %s: HTTP %d: %s\n(an exactly_once job "
				"or a file sink is refused until checkpoints "
				"and "
				"exactly-once land: see issue 4)\nspec: %s",
				j->label, st, raw ? raw : "(no answer)", spec);
		j->id = sv_strdup(id);
		printf("[%s] submitted %s as %s (%s, %s sink %s)\n", c->test,
		       j->label, j->id,
		       j->exactly_once ? "exactly_once" : "at_least_once",
		       j->sink == S_KAFKA ? "kafka" : "file", j->out);
		fflush(stdout);
		json_decref(r);
		free(raw);
		free(spec);
	}
}

/* ---- file sink: what is visible ---- */


void cr_lines_add(lines_t *l, const char *s, size_t n)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->v = sv_realloc(l->v, l->cap * sizeof(char *));
	}
	l->v[l->n++] = sv_strndup(s, n);
}

void cr_lines_free(lines_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

/* Every non-hidden *.jsonl file under dir (recursively, skipping hidden
 * directories such as .staging). Lines go to out (may be NULL); a file that
 * does not end in a newline or holds a line that is not a JSON object is
 * counted in *torn and named on stderr. visit(path, size) is called per
 * file when given. */
void cr_scan_files(crash_t *c, const char *dir, lines_t *out, size_t *torn,
		   size_t *files,
		   void (*visit)(crash_t *, const char *, int64_t))
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			abort();
		struct stat sb;
		if (!stat(p, &sb) && S_ISDIR(sb.st_mode)) {
			cr_scan_files(c, p, out, torn, files, visit);
		} else if (!stat(p, &sb) && S_ISREG(sb.st_mode) &&
			   ends_with(e->d_name, ".jsonl")) {
			size_t len;
			char *s = cr_slurp(p, &len);
			if (s) {
				(*files)++;
				bool bad = len > 0 && s[len - 1] != '\n';
				const char *q = s, *end = s + len;
				while (q < end) {
					const char *nl = memchr(
						q, '\n', (size_t)(end - q));
					size_t n = nl ? (size_t)(nl - q)
						      : (size_t)(end - q);
					if (n) {
						json_error_t jerr;
						json_t *o = json_loadb(q, n, 0,
								       &jerr);
						if (!json_is_object(o))
							bad = true;
						json_decref(o);
						if (out)
							cr_lines_add(out, q, n);
					}
					q += n + 1;
				}
				if (bad) {
					(*torn)++;
					fprintf(stderr,
						"it_crash: visible file %s is "
						"incomplete or holds a "
						"non-JSON line "
						"(%zu bytes)\n",
						p, len);
				}
				if (visit)
					visit(c, p, (int64_t)len);
				free(s);
			}
		}
		free(p);
	}
	closedir(d);
}

static void remember_file(crash_t *c, const char *path, int64_t size)
{
	for (size_t i = 0; i < c->nseen; i++)
		if (!strcmp(c->seen[i].path, path)) {
			if (c->seen[i].size != size)
				fprintf(stderr,
					"it_crash: visible file %s changed "
					"size %" PRId64 " -> %" PRId64 "\n",
					path, c->seen[i].size, size);
			return;
		}
	if (c->nseen == c->capseen) {
		c->capseen = c->capseen ? c->capseen * 2 : 64;
		c->seen = sv_realloc(c->seen, c->capseen * sizeof(seenfile_t));
	}
	c->seen[c->nseen].path = sv_strdup(path);
	c->seen[c->nseen++].size = size;
}

/* At a kill: every visible file of every file sink must be complete. */
void cr_snapshot_files(crash_t *c)
{
	for (int i = 0; i < c->njobs; i++) {
		if (c->jobs[i].sink != S_FILE)
			continue;
		size_t files = 0;
		cr_scan_files(c, c->jobs[i].out, NULL, &c->torn_seen, &files,
			      remember_file);
	}
}

/* Files seen at a kill that are gone or changed by the end. */
size_t cr_changed_files(crash_t *c)
{
	size_t bad = 0;
	for (size_t i = 0; i < c->nseen; i++) {
		struct stat sb;
		if (stat(c->seen[i].path, &sb) ||
		    sb.st_size != c->seen[i].size) {
			if (bad < 10)
				fprintf(stderr,
					"it_crash: file %s (%" PRId64
					" bytes when seen) is now %s\n",
					c->seen[i].path, c->seen[i].size,
					stat(c->seen[i].path, &sb)
						? "gone"
						: "a different size");
			bad++;
		}
	}
	return bad;
}

/* ---- the crash loop ---- */

bool cr_producer_done(crash_t *c)
{
	return atomic_load(&c->prod.done);
}

void cr_print_kill(crash_t *c, const char *how, int64_t uptime_ms,
		   int64_t produced0)
{
	int64_t produced = atomic_load(&c->prod.produced);
	bool inflight = produced > produced0;
	char jobs[512] = "";
	size_t o = 0;
	for (int i = 0; i < c->njobs && o < sizeof(jobs); i++) {
		cjob_t *j = &c->jobs[i];
		if (j->lag > 0)
			inflight = true;
		o += (size_t)snprintf(
			jobs + o, sizeof(jobs) - o,
			" | %s %s in=%" PRId64 " lag=%" PRId64 " ck=%" PRId64,
			j->label, j->answered ? j->state : "(no answer)", j->in,
			j->lag, j->ck);
	}
	if (inflight)
		c->kills_inflight++;
	printf("[%s %6.1fs] kill %d (%s, %" PRId64 " ms after start): "
	       "produced=%" PRId64 " (+%" PRId64 ")%s\n",
	       c->test, cr_secs(c), c->kills_random + c->kills_point, how,
	       uptime_ms, produced, produced - produced0, jobs);
	fflush(stdout);
}

/* First incarnation: submit the jobs, wait until each has committed a
 * first checkpoint, kill. */
void cr_first_incarnation(crash_t *c)
{
	cr_start(c, NULL);
	int64_t start = sv_mono_ms();
	int64_t produced0 = atomic_load(&c->prod.produced);
	cr_wait_port(c, 30000);
	cr_submit_jobs(c);
	int64_t deadline = sv_mono_ms() + 60000;
	for (;;) {
		cr_poll_jobs(c);
		bool all = true;
		for (int i = 0; i < c->njobs; i++)
			all = all && c->jobs[i].ck >= 0;
		if (all)
			break;
		int st;
		char d[96];
		if (cr_reap(c, 0, &st))
			cr_fail(c,
				"the supervisor exited before the first "
				"checkpoint: %s",
				cr_describe_exit(st, d, sizeof(d)));
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"not every job committed a first checkpoint "
				"within 60 s (interval %d ms): last_checkpoint "
				"stays null",
				CK_MS);
		usleep(100000);
	}
	if (c->no_kills) {
		printf("[%s] SV_CRASH_NO_KILLS: every job checkpointed, no "
		       "kill\n",
		       c->test);
		return;
	}
	cr_snapshot_files(c);
	cr_sigkill(c);
	c->kills_random++;
	cr_print_kill(c, "after first checkpoint", sv_mono_ms() - start,
		      produced0);
}

/* Start, let it run delay_ms, SIGKILL. */
void cr_cycle_random(crash_t *c, int delay_ms)
{
	cr_start(c, NULL);
	int64_t start = sv_mono_ms(), at = start + delay_ms;
	int64_t produced0 = atomic_load(&c->prod.produced);
	while (sv_mono_ms() < at) {
		int st;
		char d[96];
		if (cr_reap(c, 0, &st))
			cr_fail(c,
				"the supervisor exited by itself during a "
				"random cycle: %s",
				cr_describe_exit(st, d, sizeof(d)));
		cr_poll_jobs(c);
		int64_t left = at - sv_mono_ms();
		if (left > 0)
			usleep((useconds_t)(left < 100 ? left : 100) * 1000);
	}
	cr_snapshot_files(c);
	cr_sigkill(c);
	c->kills_random++;
	cr_print_kill(c, "random", sv_mono_ms() - start, produced0);
}

/* Start with STREAMVISOR_KILL_AT=kill_at and wait for the self-kill. */
void cr_cycle_point(crash_t *c, const char *kill_at)
{
	cr_start(c, kill_at);
	int64_t start = sv_mono_ms(), deadline = start + 60000;
	int64_t produced0 = atomic_load(&c->prod.produced);
	char point[64];
	snprintf(point, sizeof(point), "%s", kill_at);
	if (strchr(point, ':'))
		*strchr(point, ':') = '\0';
	for (;;) {
		int st;
		char d[96];
		if (cr_reap(c, 0, &st)) {
			if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
				cr_fail(c,
					"with STREAMVISOR_KILL_AT=%s the "
					"supervisor ended with %s, expected "
					"SIGKILL at the kill point",
					kill_at,
					cr_describe_exit(st, d, sizeof(d)));
			char needle[96];
			snprintf(needle, sizeof(needle), "kill point %s",
				 point);
			if (!cr_log_contains(c, needle))
				printf("[%s] note: SIGKILL with "
				       "STREAMVISOR_KILL_AT"
				       "=%s but the log does not mention "
				       "'%s'\n",
				       c->test, kill_at, needle);
			break;
		}
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"STREAMVISOR_KILL_AT=%s: the supervisor did "
				"not "
				"kill itself within 60 s (kill point never "
				"reached: are checkpoints running every %d "
				"ms?)",
				kill_at, CK_MS);
		cr_poll_jobs(c);
		usleep(50000);
	}
	cr_snapshot_files(c);
	c->kills_point++;
	char how[96];
	snprintf(how, sizeof(how), "kill point %s", kill_at);
	cr_print_kill(c, how, sv_mono_ms() - start, produced0);
}

/* ---- the end: sentinels, drain, read back ---- */

void cr_input_ends(crash_t *c, int64_t ends[PARTS])
{
	rd_kafka_t *rk = cr_client(c, RD_KAFKA_PRODUCER, NULL, NULL, false);
	for (int p = 0; p < PARTS; p++) {
		int64_t lo, hi;
		rd_kafka_resp_err_t r = rd_kafka_query_watermark_offsets(
			rk, c->in_topic, p, &lo, &hi, 10000);
		if (r)
			cr_fail(c, "watermarks of %s/%d: %s", c->in_topic, p,
				rd_kafka_err2str(r));
		ends[p] = hi;
	}
	rd_kafka_destroy(rk);
}

/* The job's committed group offsets (group streamvisor-<id>, read with
 * require_stable through read_committed) equal ends. */
bool cr_group_at_end(crash_t *c, cjob_t *j, const int64_t ends[PARTS],
		     int64_t got[PARTS])
{
	char group[200];
	snprintf(group, sizeof(group), "streamvisor-%s", j->id);
	rd_kafka_t *rk = cr_client(c, RD_KAFKA_CONSUMER, group,
				   "read_committed", false);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(
		PARTS);
	for (int p = 0; p < PARTS; p++)
		rd_kafka_topic_partition_list_add(l, c->in_topic, p);
	bool at = !rd_kafka_committed(rk, l, 5000);
	for (int p = 0; p < PARTS; p++) {
		got[p] = l->elems[p].err ? -1 : l->elems[p].offset;
		at = at && got[p] == ends[p];
	}
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_destroy(rk);
	return at;
}

#define CR_MAX_MEMBERS 64

/* Each member's checkpoint.last_id from the status (-1: none yet) into
 * ids; the number of members. Without a members array (an older status
 * document): the job's last_checkpoint, as one member. */
static int member_ck_ids(json_t *s, const cjob_t *j,
			 int64_t ids[CR_MAX_MEMBERS])
{
	json_t *ms = json_object_get(s, "members");
	if (!json_is_array(ms) || !json_array_size(ms)) {
		ids[0] = j->ck;
		return 1;
	}
	int n = 0;
	size_t i;
	json_t *me;
	json_array_foreach (ms, i, me) {
		if (n == CR_MAX_MEMBERS)
			break;
		ids[n++] = cr_jint(json_object_get(me, "checkpoint"), "last_id",
				   -1);
	}
	return n;
}

/* Wait until the job has read its input to ends and committed that.
 *
 * Neither the status' positions nor its last_checkpoint say so by
 * themselves: partitions[].next_offset is where each member has READ to,
 * and at parallelism > 1 last_checkpoint is the newest checkpoint of ANY
 * member (ids come from one sequence), so "two checkpoints after the
 * end" can be two checkpoints of the other members while one member's
 * last transaction is still open; the reader then stops at the last
 * stable offset that transaction holds and reports committed tail
 * records as missing (the likely cause of crash_parallel's missing=222
 * at the tail under load, docs/testing-exactly-once.md). So: once the
 * status shows
 * every partition read to its end (T), EVERY member must complete two
 * more checkpoints, seen as two increases of its own checkpoint.last_id
 * (the second began after T, so it commits everything the member read
 * or fired by then, also windows that fire on the other members'
 * watermarks); and for Kafka sinks the group's committed offsets
 * (require_stable) must be at ends as well. */
void cr_wait_drained(crash_t *c, cjob_t *j, const int64_t ends[PARTS],
		     int timeout_ms)
{
	int64_t deadline = sv_mono_ms() + timeout_ms, next_group = 0;
	int64_t got[PARTS] = {-1, -1, -1, -1};
	int64_t base[CR_MAX_MEMBERS], first[CR_MAX_MEMBERS];
	int nm = -1; /* members at T; -1: the end not seen yet */
	bool group_ok = j->sink != S_KAFKA;
	json_t *last = NULL;
	for (;;) {
		bool members_done = false;
		json_t *s = cr_job_get(c, j);
		if (s) {
			json_decref(last);
			last = s;
			json_t *parts = json_object_get(s, "partitions");
			int at = 0;
			size_t i;
			json_t *pe;
			json_array_foreach (parts, i, pe) {
				int64_t p = cr_jint(pe, "partition", -1);
				if (p >= 0 && p < PARTS &&
				    cr_jint(pe, "next_offset", -1) == ends[p])
					at++;
			}
			int64_t ids[CR_MAX_MEMBERS];
			int n = member_ck_ids(s, j, ids);
			if (nm >= 0 && n != nm)
				nm = -1; /* another layout: from the end again */
			if (at == PARTS && nm < 0) {
				nm = n;
				for (int k = 0; k < n; k++) {
					base[k] = ids[k];
					first[k] = INT64_MIN;
				}
			}
			if (nm >= 0) {
				members_done = true;
				for (int k = 0; k < nm; k++) {
					if (first[k] == INT64_MIN &&
					    ids[k] > base[k])
						first[k] = ids[k];
					members_done = members_done &&
						first[k] != INT64_MIN &&
						ids[k] > first[k];
				}
			}
		}
		if (members_done && !group_ok && sv_mono_ms() >= next_group) {
			group_ok = cr_group_at_end(c, j, ends, got);
			next_group = sv_mono_ms() + 1000;
		}
		if (members_done && group_ok)
			break;
		int st;
		char d[96];
		if (cr_reap(c, 0, &st))
			cr_fail(c, "the supervisor died during the final drain: %s",
				cr_describe_exit(st, d, sizeof(d)));
		if (sv_mono_ms() > deadline) {
			char *dump = last ? json_dumps(last, JSON_COMPACT)
					  : NULL;
			cr_fail(c,
				"job %s (%s) did not consume its input to the "
				"end "
				"(%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
				") and "
				"commit within %d ms (every member two "
				"checkpoints after the end: %s); group offsets "
				"%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
				"; last status %s",
				j->label, j->id, ends[0], ends[1], ends[2],
				ends[3], timeout_ms,
				members_done     ? "yes"
					: nm < 0 ? "end not read"
						 : "no",
				got[0], got[1], got[2], got[3],
				dump ? dump : "(none)");
		}
		usleep(200000);
	}
	json_decref(last);
}

int cr_topic_partitions(crash_t *c, const char *topic)
{
	rd_kafka_t *rk = cr_client(c, RD_KAFKA_PRODUCER, NULL, NULL, false);
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md;
	if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) || md->topic_cnt != 1 ||
	    md->topics[0].err)
		cr_fail(c, "no metadata for topic '%s'", topic);
	int np = md->topics[0].partition_cnt;
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
	return np;
}

/* The end a reader of each of np partitions sees now: ListOffsets with
 * the client's isolation level, so the high watermark for
 * read_uncommitted and the last stable offset for read_committed. */
static void topic_ends(crash_t *c, rd_kafka_t *rk, const char *topic, int np,
		       int64_t *end)
{
	for (int p = 0; p < np; p++) {
		int64_t lo;
		rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
			rk, topic, p, &lo, &end[p], 10000);
		if (e)
			cr_fail(c, "watermarks of %s/%d: %s", topic, p,
				rd_kafka_err2str(e));
	}
}

bool cr_output_settled(crash_t *c, const char *topic, int np, int64_t *lso,
		       int64_t *hw, int timeout_ms)
{
	rd_kafka_t *rc = cr_client(c, RD_KAFKA_CONSUMER, NULL, "read_committed",
				   false);
	rd_kafka_t *ru = cr_client(c, RD_KAFKA_CONSUMER, NULL,
				   "read_uncommitted", false);
	int64_t deadline = sv_mono_ms() + timeout_ms;
	bool settled;
	for (;;) {
		/* the high watermark first: an LSO taken after it that equals
		 * it held nothing back at that moment */
		topic_ends(c, ru, topic, np, hw);
		topic_ends(c, rc, topic, np, lso);
		settled = true;
		for (int p = 0; p < np; p++)
			settled = settled && lso[p] == hw[p];
		if (settled || sv_mono_ms() >= deadline)
			break;
		usleep(100000);
	}
	rd_kafka_destroy(rc);
	rd_kafka_destroy(ru);
	return settled;
}

void cr_read_topic_to(crash_t *c, const char *topic, bool read_committed,
		      int np, const int64_t *ends, lines_t *out)
{
	char *group = tk_unique("it-crash-reader");
	rd_kafka_t *rk = cr_client(
		c, RD_KAFKA_CONSUMER, group,
		read_committed ? "read_committed" : "read_uncommitted", true);
	free(group);
	rd_kafka_poll_set_consumer(rk);
	bool *done = sv_calloc((size_t)np, sizeof(bool));
	rd_kafka_topic_partition_list_t *parts =
		rd_kafka_topic_partition_list_new(np);
	for (int p = 0; p < np; p++)
		rd_kafka_topic_partition_list_add(parts, topic, p)->offset =
			RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_assign(rk, parts);
	rd_kafka_topic_partition_list_destroy(parts);
	int ndone = 0;
	int64_t deadline = sv_mono_ms() + 120000;
	int64_t *eof_at = sv_calloc((size_t)np, sizeof(int64_t));
	while (ndone < np) {
		if (sv_mono_ms() > deadline) {
			char pos[256] = "";
			size_t o = 0;
			for (int p = 0; p < np && o < sizeof(pos); p++)
				o += (size_t)snprintf(pos + o, sizeof(pos) - o,
						      " p%d: eof at %" PRId64
						      " of %" PRId64,
						      p, eof_at[p], ends[p]);
			cr_fail(c,
				"reading %s (%s) did not reach the end within "
				"120 s:%s",
				topic,
				read_committed ? "read_committed"
					       : "read_uncommitted",
				pos);
		}
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
		if (!m)
			continue;
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			int p = m->partition;
			if (p >= 0 && p < np) {
				eof_at[p] = m->offset;
				if (!done[p] && m->offset >= ends[p]) {
					done[p] = true;
					ndone++;
				}
			}
		} else if (!m->err) {
			cr_lines_add(out, m->payload ? m->payload : "", m->len);
		} else {
			fprintf(stderr, "it_crash: reading %s: %s\n", topic,
				rd_kafka_message_errstr(m));
		}
		rd_kafka_message_destroy(m);
	}
	free(eof_at);
	free(done);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
}

/* Read every partition of topic from the beginning to its end.
 * read_uncommitted: the high watermark taken now. read_committed: a
 * reader ends at the last stable offset, which an open transaction holds
 * back, or one whose commit is decided but whose markers are not all
 * written yet (with Kafka 4's group coordinator the group's offsets and
 * the output partitions get their markers separately, so offsets seen
 * committed do not mean the output is visible yet). Reading to the LSO of
 * the moment would report such records as missing, silently. So first
 * wait until every partition's LSO equals its high watermark (nothing
 * open) and read to that; an output still held after 20 s fails loudly,
 * naming the partitions. */
void cr_read_topic(crash_t *c, const char *topic, bool read_committed,
		   lines_t *out)
{
	int np = cr_topic_partitions(c, topic);
	int64_t *hw = sv_calloc((size_t)np, sizeof(int64_t));
	int64_t *lso = sv_calloc((size_t)np, sizeof(int64_t));
	if (!read_committed) {
		rd_kafka_t *ru = cr_client(c, RD_KAFKA_CONSUMER, NULL,
					   "read_uncommitted", false);
		topic_ends(c, ru, topic, np, hw);
		rd_kafka_destroy(ru);
	} else if (!cr_output_settled(c, topic, np, lso, hw, 0)) {
		char first[256] = "";
		size_t o = 0;
		for (int p = 0; p < np && o < sizeof(first); p++)
			if (lso[p] != hw[p])
				o += (size_t)snprintf(
					first + o, sizeof(first) - o,
					" p%d: LSO %" PRId64 " < HW %" PRId64,
					p, lso[p], hw[p]);
		int64_t t0 = sv_mono_ms();
		bool ok = cr_output_settled(c, topic, np, lso, hw, 20000);
		printf("[%s %6.1fs] %s: read_committed end held back at "
		       "first (%s ), %s after %" PRId64 " ms\n",
		       c->test, cr_secs(c), topic, first,
		       ok ? "released" : "STILL HELD", sv_mono_ms() - t0);
		fflush(stdout);
		if (!ok) {
			char now[256] = "";
			o = 0;
			for (int p = 0; p < np && o < sizeof(now); p++)
				if (lso[p] != hw[p])
					o += (size_t)snprintf(
						now + o, sizeof(now) - o,
						" p%d: LSO %" PRId64
						" < HW %" PRId64,
						p, lso[p], hw[p]);
			cr_fail(c,
				"the output %s is held by an open transaction "
				"20 s after every job drained and committed:%s",
				topic, now);
		}
	}
	cr_read_topic_to(c, topic, read_committed, np, hw, out);
	free(lso);
	free(hw);
}

/* ---- verification against the offline computation ---- */


static void note_list(const char *what, const char *label, int64_t *v, size_t n,
		      size_t total)
{
	if (!total)
		return;
	printf("    %s %s (%zu):", label, what, total);
	for (size_t i = 0; i < n; i++)
		printf(" %" PRId64, v[i]);
	printf("%s\n", total > n ? " ..." : "");
}

static void note_strs(const char *what, const char *label, char v[][40],
		      size_t n, size_t total)
{
	if (!total)
		return;
	printf("    %s %s (%zu):", label, what, total);
	for (size_t i = 0; i < n; i++)
		printf(" %s", v[i]);
	printf("%s\n", total > n ? " ..." : "");
}

/* Passthrough: every seq in [0, n) exactly once, with its own k and ts. */
tally_t cr_verify_pass(const char *label, char **lines, size_t nl, int64_t n)
{
	tally_t t = {.expected = (size_t)n, .got = nl};
	uint16_t *cnt = sv_calloc((size_t)n + 1, sizeof(uint16_t));
	int64_t ex_wrong[8], ex_dup[8], ex_miss[8];
	size_t nw = 0, nd = 0, nm = 0;
	for (size_t i = 0; i < nl; i++) {
		json_error_t jerr;
		json_t *o = json_loads(lines[i], 0, &jerr);
		json_t *sv = json_object_get(o, "seq");
		if (!json_is_integer(sv) || json_integer_value(sv) < 0 ||
		    json_integer_value(sv) >= n) {
			if (t.unexpected++ < 3)
				printf("    %s unexpected row: %.200s\n", label,
				       lines[i]);
			json_decref(o);
			continue;
		}
		int64_t seq = json_integer_value(sv);
		char k[16];
		snprintf(k, sizeof(k), "k%02d", key_of(seq));
		const char *ok = json_string_value(json_object_get(o, "k"));
		if (!ok || strcmp(ok, k) ||
		    cr_jint(o, "ts", -1) != ts_of(seq)) {
			if (nw < 8)
				ex_wrong[nw++] = seq;
			t.wrong++;
		}
		if (cnt[seq] < UINT16_MAX)
			cnt[seq]++;
		json_decref(o);
	}
	for (int64_t s = 0; s < n; s++) {
		if (cnt[s] == 0) {
			t.missing++;
			if (nm < 8)
				ex_miss[nm++] = s;
		} else if (cnt[s] > 1) {
			t.dup += cnt[s] - 1u;
			if (nd < 8)
				ex_dup[nd++] = s;
		}
	}
	note_list("duplicated seq", label, ex_dup, nd, t.dup);
	note_list("missing seq", label, ex_miss, nm, t.missing);
	note_list("seq with wrong k/ts", label, ex_wrong, nw, t.wrong);
	free(cnt);
	return t;
}

/* Window: one row per (k, window) with n, total, lo, hi of seq. */
/* One expected result row of a window or session job: the key's number,
 * window_start and window_end, the aggregates; seen counts the output rows
 * that matched it. Sorted by (key, start). */
typedef struct wexp {
	int key;
	int64_t start, end, n, total, lo, hi;
	size_t seen;
} wexp_t;

static int wexp_cmp(const void *a, const void *b)
{
	const wexp_t *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

static void wexp_add(wexp_t *e, int64_t seq)
{
	if (!e->n)
		e->lo = e->hi = seq;
	e->n++;
	e->total += seq;
	if (seq < e->lo)
		e->lo = seq;
	if (seq > e->hi)
		e->hi = seq;
}

/* The output rows against the expected ones (e, ne, sorted): a row whose
 * key and window_start no expected row has is unexpected, a second row
 * of one is a duplicate, other values are wrong, an expected row never
 * seen is missing. what names the rows in the notes ("window"). */
static tally_t verify_rows(const char *label, const char *what, char **lines,
			   size_t nl, wexp_t *e, size_t ne)
{
	tally_t t = {.got = nl, .expected = ne};
	char ex_dup[8][40], ex_miss[8][40], ex_wrong[8][40];
	size_t nd = 0, nm = 0, nw = 0;
	for (size_t i = 0; i < nl; i++) {
		json_error_t jerr;
		json_t *o = json_loads(lines[i], 0, &jerr);
		const char *k = json_string_value(json_object_get(o, "k"));
		wexp_t want = {.key = -1,
			       .start = cr_jint(o, "window_start", -1)};
		if (!k || sscanf(k, "k%d", &want.key) != 1)
			want.key = -1;
		wexp_t *x = want.key < 0
			? NULL
			: bsearch(&want, e, ne, sizeof(*e), wexp_cmp);
		if (!x) {
			if (t.unexpected++ < 3)
				printf("    %s unexpected row: %.200s\n", label,
				       lines[i]);
			json_decref(o);
			continue;
		}
		if (x->seen++ && nd < 8)
			snprintf(ex_dup[nd++], 40, "k%02d@%" PRId64, x->key,
				 x->start);
		if (cr_jint(o, "window_end", -1) != x->end ||
		    cr_jint(o, "n", -1) != x->n ||
		    cr_jint(o, "total", -1) != x->total ||
		    cr_jint(o, "lo", -1) != x->lo ||
		    cr_jint(o, "hi", -1) != x->hi) {
			t.wrong++;
			if (nw < 8)
				snprintf(ex_wrong[nw++], 40, "k%02d@%" PRId64,
					 x->key, x->start);
			if (t.wrong <= 3)
				printf("    %s wrong row: %.200s (expected "
				       "end=%" PRId64 " n=%" PRId64
				       " total=%" PRId64 " lo=%" PRId64
				       " hi=%" PRId64 ")\n",
				       label, lines[i], x->end, x->n, x->total,
				       x->lo, x->hi);
		}
		json_decref(o);
	}
	for (size_t i = 0; i < ne; i++) {
		if (!e[i].seen) {
			t.missing++;
			if (nm < 8)
				snprintf(ex_miss[nm++], 40, "k%02d@%" PRId64,
					 e[i].key, e[i].start);
		} else {
			t.dup += e[i].seen - 1;
		}
	}
	char note[64];
	snprintf(note, sizeof(note), "duplicated %s (key@start)", what);
	note_strs(note, label, ex_dup, nd, t.dup);
	snprintf(note, sizeof(note), "missing %s (key@start)", what);
	note_strs(note, label, ex_miss, nm, t.missing);
	snprintf(note, sizeof(note), "wrong %s (key@start)", what);
	note_strs(note, label, ex_wrong, nw, t.wrong);
	return t;
}

tally_t cr_verify_window(const char *label, char **lines, size_t nl, int64_t n)
{
	/* by key, then window: the order wexp_cmp sorts */
	size_t nwin = (size_t)((n + JITTER_MS) / WIN_MS + 2);
	wexp_t *w = sv_calloc(nwin * N_KEYS, sizeof(wexp_t));
	for (int64_t s = 0; s < n; s++)
		wexp_add(&w[(size_t)key_of(s) * nwin +
			    (size_t)((ts_of(s) - BASE_MS) / WIN_MS)],
			 s);
	size_t ne = 0;
	for (size_t i = 0; i < nwin * N_KEYS; i++) {
		if (!w[i].n)
			continue;
		w[ne] = w[i];
		w[ne].key = (int)(i / nwin);
		w[ne].start = BASE_MS + (int64_t)(i % nwin) * WIN_MS;
		w[ne].end = w[ne].start + WIN_MS;
		ne++;
	}
	tally_t t = verify_rows(label, "window", lines, nl, w, ne);
	free(w);
	return t;
}

typedef struct kts {
	int key;
	int64_t ts, seq;
} kts_t;

static int kts_cmp(const void *a, const void *b)
{
	const kts_t *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

tally_t cr_verify_session(const char *label, char **lines, size_t nl, int64_t n)
{
	/* the expected sessions: each key's records by event time, a new
	 * session where the next record lies beyond last + gap (windows that
	 * touch merge, docs/windows.md) */
	kts_t *r = sv_calloc((size_t)n + 1, sizeof(*r));
	size_t nr = 0;
	for (int64_t s = 0; s < n; s++)
		if (cr_session_in(s))
			r[nr++] = (kts_t){key_of(s), ts_of(s), s};
	qsort(r, nr, sizeof(*r), kts_cmp);
	wexp_t *e = sv_calloc(nr + 1, sizeof(*e));
	size_t ne = 0;
	for (size_t i = 0; i < nr; i++) {
		wexp_t *cur = ne ? &e[ne - 1] : NULL;
		/* cur->end is the last event time + gap */
		if (!cur || cur->key != r[i].key || r[i].ts > cur->end) {
			cur = &e[ne++];
			cur->key = r[i].key;
			cur->start = r[i].ts;
		}
		cur->end = r[i].ts + SESSION_GAP_MS;
		wexp_add(cur, r[i].seq);
	}
	free(r);
	tally_t t = verify_rows(label, "session", lines, nl, e, ne);
	free(e);
	return t;
}

void cr_summary(crash_t *c, cjob_t *j, const char *reader, const tally_t *t,
		const char *role)
{
	char line[512];
	int n = snprintf(
		line, sizeof(line),
		"SUMMARY test=%s job=%s delivery=%s sink=%s reader=%s "
		"expected=%zu got=%zu duplicates=%zu missing=%zu wrong=%zu "
		"unexpected=%zu%s%s (%s)\n",
		c->test, j->label,
		j->exactly_once ? "exactly_once" : "at_least_once",
		j->sink == S_KAFKA ? "kafka" : "file", reader, t->expected,
		t->got, t->dup, t->missing, t->wrong, t->unexpected,
		j->sink == S_FILE ? " torn=" : "",
		j->sink == S_FILE ? (t->torn ? "yes" : "0") : "", role);
	fputs(line, stdout);
	fflush(stdout);
	size_t used = strlen(c->summary);
	if (n > 0 && used + (size_t)n < sizeof(c->summary))
		memcpy(c->summary + used, line, (size_t)n + 1);
}

bool cr_exact(const tally_t *t)
{
	return !t->dup && !t->missing && !t->wrong && !t->unexpected &&
		!t->torn && t->got == t->expected;
}

/* Read one job's output with one reader and verify. */
tally_t cr_check_output(crash_t *c, cjob_t *j, bool read_committed)
{
	lines_t l = {0};
	size_t torn = 0, files = 0;
	const char *reader;
	if (j->sink == S_KAFKA) {
		cr_read_topic(c, j->out, read_committed, &l);
		reader = read_committed ? "read_committed" : "read_uncommitted";
	} else {
		cr_scan_files(c, j->out, &l, &torn, &files, NULL);
		reader = "files";
	}
	char label[128];
	snprintf(label, sizeof(label), "%s/%s", j->label, reader);
	tally_t t = j->kind == J_PASS ? cr_verify_pass(label, l.v, l.n, c->n)
		: j->kind == J_SESSION
		? cr_verify_session(label, l.v, l.n, c->n)
		: cr_verify_window(label, l.v, l.n, c->n);
	t.torn = torn;
	cr_lines_free(&l);
	return t;
}

/* Wait until the producer has written the whole input. */
void cr_wait_input(crash_t *c)
{
	int64_t deadline = sv_mono_ms() + 300000;
	while (!cr_producer_done(c)) {
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"the input producer did not finish within 300 "
				"s");
		usleep(100000);
	}
	cr_producer_join(&c->prod, false);
	if (atomic_load(&c->prod.failures))
		cr_fail(c, "the input producer failed: %s", c->prod.err);
	c->n = atomic_load(&c->prod.produced);
	printf("[%s %6.1fs] input complete: %" PRId64 " records\n", c->test,
	       cr_secs(c), c->n);
	fflush(stdout);
}

/* A last incarnation without kills: every job comes back with its id,
 * none twice, none new. */
void cr_final_incarnation(crash_t *c)
{
	if (c->pid <= 0) /* SV_CRASH_NO_KILLS: the first one still runs */
		cr_start(c, NULL);
	cr_wait_back(c, 60000);
	int st;
	json_t *list = cr_http_json(c, "GET", "/v1/jobs", NULL, &st, NULL);
	json_t *arr = json_object_get(list, "jobs");
	if (st != 200 || !json_is_array(arr))
		cr_fail(c, "GET /v1/jobs: HTTP %d", st);
	size_t idx;
	json_t *je;
	int known = 0;
	json_array_foreach (arr, idx, je) {
		const char *id = json_string_value(json_object_get(je, "id"));
		for (int i = 0; i < c->njobs; i++)
			known += id && !strcmp(id, c->jobs[i].id);
	}
	if (json_array_size(arr) != (size_t)c->njobs || known != c->njobs) {
		char *d = json_dumps(list, JSON_COMPACT);
		cr_fail(c,
			"after %d restarts GET /v1/jobs lists %zu jobs (%d of "
			"ours), expected exactly our %d: %.2000s",
			c->incarnation - 1, json_array_size(arr), known,
			c->njobs, d);
	}
	json_decref(list);
	printf("[%s %6.1fs] final incarnation %d: every job back\n", c->test,
	       cr_secs(c), c->incarnation);
	fflush(stdout);
}

/* One sentinel per partition (keyed in parallel mode); ends = the input's
 * end offsets after them, checked against what the producer wrote. */
void cr_put_sentinels(crash_t *c, int64_t ends[PARTS])
{
	char *sentinels[PARTS], *keys[PARTS];
	int32_t sparts[PARTS];
	for (int p = 0; p < PARTS; p++) {
		/* keyed mode: a key of the partition, as partitioned_by
		 * requires of every record */
		char key[32] = "end";
		for (int i = 0; cr_par > 1; i++) {
			snprintf(key, sizeof(key), "end-%d", i);
			if (sv_partition_of(key, strlen(key), PARTS) == p)
				break;
		}
		keys[p] = sv_strdup(key);
		sparts[p] = p;
		if (asprintf(&sentinels[p],
			     "{\"seq\":-1,\"k\":\"%s\",\"ts\":%lld}", key,
			     (long long)SENTINEL_TS) < 0)
			abort();
	}
	if (cr_par > 1)
		tk_produce_keyed(c->in_topic, (const char *const *)sentinels,
				 (const char *const *)keys, sparts, PARTS);
	else
		tk_produce(c->in_topic, (const char *const *)sentinels, PARTS);
	for (int p = 0; p < PARTS; p++) {
		free(sentinels[p]);
		free(keys[p]);
	}
	cr_input_ends(c, ends);
	for (int p = 0; p < PARTS; p++)
		if (ends[p] != part_count(c->n, p) + 1)
			cr_fail(c,
				"input partition %d holds %" PRId64 " records, "
				"expected %" PRId64
				" + 1 sentinel: the test's own "
				"producer lost or duplicated input",
				p, ends[p], part_count(c->n, p));
}

/* Sentinels, then wait until every job has drained and committed. */
void cr_drain_all(crash_t *c)
{
	int64_t ends[PARTS];
	cr_put_sentinels(c, ends);
	int drain_ms = 120000 + (int)(c->n / 10);
	for (int i = 0; i < c->njobs; i++)
		cr_wait_drained(c, &c->jobs[i], ends, drain_ms);
	printf("[%s %6.1fs] every job drained and committed\n", c->test,
	       cr_secs(c));
	fflush(stdout);
}

void cr_finish(crash_t *c)
{
	cr_wait_input(c);
	cr_final_incarnation(c);
	cr_drain_all(c);
}

/* Call fn for every line of every incarnation's log. */
static void each_log_line(crash_t *c, void (*fn)(void *opaque, char *line),
			  void *opaque)
{
	DIR *d = opendir(c->log_dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[1200];
		snprintf(path, sizeof(path), "%s/%s", c->log_dir, e->d_name);
		char *s = cr_slurp(path, NULL);
		for (char *l = s; l && *l;) {
			char *nl = strchr(l, '\n');
			if (nl)
				*nl = '\0';
			fn(opaque, l);
			l = nl ? nl + 1 : NULL;
		}
		free(s);
	}
	if (d)
		closedir(d);
}

/* The job a log line names (its "job=<id>"), or -1. */
static int line_job(const crash_t *c, const char *l)
{
	const char *jid = strstr(l, "job=");
	for (int i = 0; jid && i < c->njobs; i++)
		if (c->jobs[i].id &&
		    !strncmp(jid + 4, c->jobs[i].id, strlen(c->jobs[i].id)))
			return i;
	return -1;
}

typedef struct recoveries {
	crash_t *c;
	struct {
		int job;
		char what[96];
		int n;
	} tab[48];
	int nt;
} recoveries_t;

static void count_recovery(void *opaque, char *l)
{
	recoveries_t *rv = opaque;
	char *r = strstr(l, "restored checkpoint");
	char *op = r ? strchr(r, '(') : NULL;
	char *cp = op ? strrchr(op, ')') : NULL;
	int job = op && cp ? line_job(rv->c, l) : -1;
	if (job < 0)
		return;
	char what[96];
	snprintf(what, sizeof(what), "%.*s", (int)(cp - op - 1), op + 1);
	int i;
	for (i = 0; i < rv->nt; i++)
		if (rv->tab[i].job == job && !strcmp(rv->tab[i].what, what))
			break;
	if (i == rv->nt && rv->nt < 48) {
		rv->tab[rv->nt].job = job;
		snprintf(rv->tab[rv->nt].what, sizeof(rv->tab[rv->nt].what),
			 "%s", what);
		rv->tab[rv->nt++].n = 0;
	}
	if (i < rv->nt)
		rv->tab[i].n++;
}

/* Recovery decisions the supervisor logged ("restored checkpoint N
 * (<decision>)", one per job and attempt), counted per job and decision
 * from every incarnation's log: which recovery paths the kills exercised.
 * Best effort (log text), reported, never asserted. */
void cr_print_recoveries(crash_t *c)
{
	recoveries_t *rv = sv_calloc(1, sizeof(*rv));
	rv->c = c;
	each_log_line(c, count_recovery, rv);
	for (int j = 0; j < c->njobs; j++) {
		printf("[%s] RECOVERY %s:", c->test, c->jobs[j].label);
		int any = 0;
		for (int i = 0; i < rv->nt; i++)
			if (rv->tab[i].job == j)
				printf("%s %d x \"%s\"", any++ ? "," : "",
				       rv->tab[i].n, rv->tab[i].what);
		printf("%s\n", any ? "" : " (none logged)");
	}
	free(rv);
}

typedef struct needle_count {
	crash_t *c;
	int job;
	const char *needle;
	int n;
} needle_count_t;

static void count_needle(void *opaque, char *l)
{
	needle_count_t *nc = opaque;
	if (strstr(l, nc->needle) && line_job(nc->c, l) == nc->job)
		nc->n++;
}

int cr_count_log(crash_t *c, const cjob_t *j, const char *needle)
{
	needle_count_t nc = {c, (int)(j - c->jobs), needle, 0};
	if (j->id)
		each_log_line(c, count_needle, &nc);
	return nc.n;
}

void cr_print_end(crash_t *c)
{
	cr_print_recoveries(c);
	printf("[%s] KILLS random=%d kill_points=%d with_data_in_flight=%d "
	       "incarnations=%d seed=%u\n",
	       c->test, c->kills_random, c->kills_point, c->kills_inflight,
	       c->incarnation, c->seed);
	for (int i = 0; i < c->njobs; i++) {
		cjob_t *j = &c->jobs[i];
		printf("[%s] JOB %s id=%s state=%s (last attempt:) "
		       "records_in=%" PRId64 " records_out=%" PRId64
		       " records_late=%" PRId64 " restarts=%" PRId64
		       " last_checkpoint=%" PRId64 "\n",
		       c->test, j->label, j->id, j->state, j->in, j->out_n,
		       j->late, j->restarts, j->ck);
	}
	printf("[%s] ---- summary ----\n%s[%s] TIME %.1f s\n", c->test,
	       c->summary, c->test, cr_secs(c));
	fflush(stdout);
}

int cr_par = 1;
bool cr_repart;

int cr_teardown(void **state)
{
	cr_par = 1;
	cr_repart = false;
	crash_t *c = *state;
	if (!c)
		return 0;
	cr_producer_join(&c->prod, true);
	if (c->pid > 0) {
		cr_kill_group(c->pid);
		cr_reap(c, 15000, NULL);
	}
	if (c->passed || !env_on("SV_CRASH_KEEP"))
		nftw(c->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (!c->passed)
		fprintf(stderr, "it_crash[%s]: failed; %s\n", c->test,
			env_on("SV_CRASH_KEEP")
				? "logs and data kept in the temp dir"
				: "set SV_CRASH_KEEP=1 to keep the logs and "
				  "data dir");
	if (!c->passed && env_on("SV_CRASH_KEEP"))
		fprintf(stderr, "it_crash[%s]: kept %s\n", c->test, c->root);
	for (int i = 0; i < c->njobs; i++) {
		free(c->jobs[i].out);
		free(c->jobs[i].id);
	}
	for (size_t i = 0; i < c->nseen; i++)
		free(c->seen[i].path);
	free(c->seen);
	free(c->prod.topic);
	free(c->in_topic);
	free(c->root);
	free(c->data_dir);
	free(c->log_dir);
	free(c->config);
	free(c);
	g_live = NULL;
	*state = NULL;
	return 0;
}
