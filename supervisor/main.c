/* main.c — the streamvisor command. `serve` runs the supervisor and its
 * HTTP API; the other subcommands are the CLI, a client of that API
 * (DESIGN.md §5, docs/cli.md); `help` and `--version` describe it. All
 * subcommands live in one dispatch table.
 *
 * serve: build the server config (defaults, then --config FILE, then flags),
 * bind the "default" cluster profile (--bootstrap-servers, the config file,
 * or else the embedded development cluster), start the supervisor and the
 * HTTP API, optionally submit an example job, then wait for SIGINT/SIGTERM
 * and shut down in reverse order: HTTP first, then every running job takes
 * a final checkpoint within shutdown_timeout_ms (sv_supervisor_shutdown;
 * what cannot commit is aborted), then the supervisor. The signals are
 * blocked before any thread starts and collected with sigwait(), so no
 * handler runs in the middle of a library call; a second signal during the
 * shutdown exits at once (status 1; the next start recovers as after a
 * crash). Exit codes: 0 after a shutdown (also when a final checkpoint
 * could not commit: that job resumes from its previous one), 1 when
 * something fails at run time (config file, bind), 2 for bad usage.
 *
 * The CLI subcommands are in cli.c (cli.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/log.h"
#include "cluster/dist.h"
#include "core/util.h"
#include "kafka/devcluster.h"
#include "cli/cli.h"
#include "supervisor/config_int.h"
#include "http/http.h"
#include "supervisor/notify.h"
#include "supervisor/supervisor.h"

#ifndef SV_VERSION_STRING
#define SV_VERSION_STRING "0.0.0-unknown"
#endif

/* serve's exit code for bad usage (the CLI's codes are EXIT_CLI_*) */
#define EXIT_USAGE 2
#define DEV_TOPIC_PARTITIONS 4

static int cmd_serve(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

/* Subcommands: the server, then the CLI (DESIGN.md §5), one entry each,
 * talking to a running supervisor over the HTTP API. */
static const command_t commands[] = {
	{"serve", cmd_serve, NULL, 0, NULL,
	 "[--config FILE] [--listen HOST:PORT] [--data-dir DIR]\n"
	 "                    [--bootstrap-servers HOST:PORT[,...]] "
	 "[--example-job FILE]\n"
	 "                    [--file-sink-root DIR ...]",
	 "run the supervisor and its HTTP API"},
	{"submit", NULL, cli_submit, OPT_JSON | OPT_PLAN | OPT_DRY_RUN, "FILE",
	 "[--plan PLAN] [--dry-run] FILE|-",
	 "submit a JSON job spec (- reads stdin); prints the job id. With "
	 "--plan, PLAN is a Substrait plan (proto3 JSON or binary) that goes "
	 "into FILE's \"plan\" member beside its bindings; --dry-run prints "
	 "the translated spec and coverage and starts nothing"},
	{"jobs", NULL, cli_jobs, OPT_JSON, NULL, "",
	 "list jobs: id, name, mode, state, attempt"},
	{"status", NULL, cli_status, OPT_JSON, "ID", "ID",
	 "a job's status document, summarized"},
	{"wait", NULL, cli_wait, OPT_JSON | OPT_TIMEOUT, "ID",
	 "ID [--timeout-ms N]",
	 "follow a job (progress, ETA) until it ends; exits with its "
	 "outcome"},
	{"lag", NULL, cli_lag, OPT_JSON, "ID", "ID",
	 "a job's lag per source partition, totals, watermark lag"},
	{"cancel", NULL, cli_cancel, OPT_JSON, "ID", "ID",
	 "cancel a job (no final checkpoint)"},
	{"drain", NULL, cli_drain, OPT_JSON | OPT_FINAL_WM | OPT_TIMEOUT, "ID",
	 "ID [--final-watermark] [--timeout-ms N]",
	 "stop a job with a final checkpoint (ends checkpointed)"},
	{"resume", NULL, cli_resume, OPT_JSON, "ID", "ID",
	 "continue a checkpointed job"},
	{"restart", NULL, cli_restart,
	 OPT_JSON | OPT_FROM_CK | OPT_IGNORE_STATE | OPT_PARALLELISM, "ID",
	 "ID [--from-checkpoint ID|latest] [--ignore-state] [--parallelism N]",
	 "start a new attempt from a checkpoint (at parallelism N: a rescale)"},
	{"checkpoint", NULL, cli_checkpoint, OPT_JSON, "ID", "ID",
	 "take a checkpoint now; prints its id"},
	{"checkpoints", NULL, cli_checkpoints, OPT_JSON, "ID", "ID",
	 "a job's checkpoint history"},
	{"observations", NULL, cli_observations,
	 OPT_JSON | OPT_AFTER | OPT_LIMIT, "ID", "ID [--after SEQ] [-n N]",
	 "a job's observation log"},
	{"preview", NULL, cli_preview, OPT_JSON | OPT_LIMIT, "ID", "ID [-n N]",
	 "a sample of a job's recent output"},
	{"result", NULL, cli_result, OPT_JSON | OPT_LIMIT, "ID", "ID [-n N]",
	 "a bounded job's result"},
	{"delete", NULL, cli_delete, OPT_JSON | OPT_PURGE, "ID", "ID [--purge]",
	 "forget a terminal job (--purge: and its checkpoints)"},
	{"info", NULL, cli_info, OPT_JSON, NULL, "",
	 "backend, version, clusters and capability coverage"},
	{"metrics", NULL, cli_metrics, 0, NULL, "",
	 "the Prometheus metrics text"},
	{"help", cmd_help, NULL, 0, NULL, "", "show this help"},
	{"version", cmd_version, NULL, 0, NULL, "", "print the version"},
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: streamvisor <command> [options]\n"
		"       streamvisor --version\n\ncommands:\n");
	for (size_t i = 0; i < SV_ARRAY_LEN(commands); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(out, "\n");
	for (size_t i = 0; i < SV_ARRAY_LEN(commands); i++)
		if (*commands[i].usage)
			fprintf(out, "streamvisor %s %s\n", commands[i].name,
				commands[i].usage);
	fprintf(out,
		"\nserve options:\n"
		"  -c, --config FILE         server config (YAML, see "
		"docs/config.md)\n"
		"  -l, --listen HOST:PORT    HTTP API address (default "
		"127.0.0.1:8080; port 0 = any)\n"
		"  -d, --data-dir DIR        job and checkpoint storage "
		"(default ./streamvisor-data)\n"
		"  -b, --bootstrap-servers L Kafka cluster for profile "
		"\"default\" (replaces the\n"
		"                            config's profile); without one, "
		"an embedded\n"
		"                            development cluster is started\n"
		"  -e, --example-job FILE    submit this JSON job spec at "
		"start (creates its\n"
		"                            topics, and those of the other "
		"specs in its\n"
		"                            directory, on the development "
		"cluster)\n"
		"\nclient options (every command but serve, help, version):\n"
		"  -s, --server URL          the supervisor's API (default "
		"$" SERVER_ENV ",\n"
		"                            else " DEFAULT_SERVER ")\n"
		"  -j, --json                print the server's JSON as it is "
		"(for scripts)\n"
		"  -n, --limit N             rows to show (preview, result, "
		"observations)\n"
		"  --token-file FILE         send the bearer token in FILE "
		"(else $" TOKEN_ENV ",\n"
		"                            else the file $" TOKEN_FILE_ENV
		")\n"
		"  --cacert FILE             https://: trust the server "
		"certificate's CAs in\n"
		"                            FILE, not the system's (else "
		"$" CACERT_ENV ")\n"
		"  --cert FILE --key FILE    https://: client certificate "
		"and key (mTLS;\n"
		"                            else $" CERT_ENV ", $" KEY_ENV
		")\n"
		"  $" TIMEOUT_ENV "   deadline of one request "
		"(default 30000; 0 = none)\n"
		"\nclient exit codes: 0 ok, 1 usage, 2 no answer from the "
		"server (connect,\n"
		"timeout), 3 refused by the server (HTTP 4xx), 4 server error "
		"(HTTP 5xx).\n"
		"Errors are printed as \"streamvisor: <category>: "
		"<message>\". See docs/cli.md.\n");
}

static int cmd_help(int argc, char **argv)
{
	SV_UNUSED(argc);
	SV_UNUSED(argv);
	usage(stdout);
	return 0;
}

static int cmd_version(int argc, char **argv)
{
	SV_UNUSED(argc);
	SV_UNUSED(argv);
	printf("streamvisor %s\n", SV_VERSION_STRING);
	return 0;
}

/* Print err as "streamvisor: message" on stderr and free it. */
static void report(sv_error_t *err)
{
	fprintf(stderr, "streamvisor: %s\n", err->message);
	sv_error_destroy(err);
}

/* "host:port" for a URL: IPv6 addresses in brackets. */
static void url_host(char *buf, size_t n, const char *host, int port)
{
	if (strchr(host, ':'))
		snprintf(buf, n, "[%s]:%d", host, port);
	else
		snprintf(buf, n, "%s:%d", host, port);
}

/* The Kafka topics a job spec names on the default cluster: source, sink
 * and dead-letter sections with a "topic" (and no other "cluster"). Returns
 * how many were stored in topics[] (borrowed from root). */
static size_t spec_topics(json_t *root, const char **topics, size_t max)
{
	static const char *const sections[] = {"source", "sink", "dead_letter"};
	size_t n = 0;
	for (size_t i = 0; i < SV_ARRAY_LEN(sections) && n < max; i++) {
		json_t *sec = json_object_get(root, sections[i]);
		const char *topic = json_string_value(
			json_object_get(sec, "topic"));
		const char *cluster = json_string_value(
			json_object_get(sec, "cluster"));
		if (!topic || (cluster && strcmp(cluster, "default") != 0))
			continue;
		bool dup = false;
		for (size_t j = 0; j < n; j++)
			dup |= strcmp(topics[j], topic) == 0;
		if (!dup)
			topics[n++] = topic;
	}
	return n;
}

/* Read the file at path into b (initialized here). false: cannot. */
static bool read_file(const char *path, sv_buf_t *b)
{
	sv_buf_init(b);
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	char chunk[8192];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		sv_buf_append(b, chunk, n);
	fclose(f);
	return true;
}

/* Add the topics the spec in body names to names[*n] (strdup'd, no
 * duplicates, at most max). */
static void collect_spec_topics(const sv_buf_t *body, char **names, size_t *n,
				size_t max)
{
	json_error_t jerr;
	json_t *root = json_loadb(body->data ? body->data : "", body->len, 0,
				  &jerr);
	const char *topics[3];
	size_t nt = root ? spec_topics(root, topics, 3) : 0;
	for (size_t i = 0; i < nt && *n < max; i++) {
		bool dup = false;
		for (size_t j = 0; j < *n; j++)
			dup |= strcmp(names[j], topics[i]) == 0;
		if (!dup)
			names[(*n)++] = sv_strdup(topics[i]);
	}
	json_decref(root); /* a bad file is the submit's to report */
}

/* Submit the example job in path. On the development cluster first create
 * its topics and those of every other job spec (*.json) in its directory,
 * so that the other examples can be submitted as they are (README). Failures
 * are reported and leave the server running. */
static void submit_example(sv_supervisor_t *sv, sv_devcluster_t *dc,
			   const char *path, const char *base_url)
{
	sv_buf_t body;
	if (!read_file(path, &body)) {
		fprintf(stderr,
			"streamvisor: cannot read example job '%s': %s\n", path,
			strerror(errno));
		sv_buf_release(&body);
		return;
	}
	if (dc) {
		char *names[64];
		size_t nn = 0;
		collect_spec_topics(&body, names, &nn, SV_ARRAY_LEN(names));
		char *dir = sv_strdup(path), *pattern = NULL;
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		if (asprintf(&pattern, "%s/*.json", slash ? dir : ".") < 0)
			abort();
		glob_t g;
		if (glob(pattern, 0, NULL, &g) == 0) {
			for (size_t i = 0; i < g.gl_pathc; i++) {
				sv_buf_t other;
				if (read_file(g.gl_pathv[i], &other))
					collect_spec_topics(
						&other, names, &nn,
						SV_ARRAY_LEN(names));
				sv_buf_release(&other);
			}
			globfree(&g);
		}
		free(pattern);
		free(dir);
		for (size_t i = 0; i < nn; i++) {
			sv_error_t *err = sv_devcluster_create_topic(
				dc, names[i], DEV_TOPIC_PARTITIONS);
			if (err) {
				sv_log(NULL, SV_LOG_WARN, "main",
				       "topic '%s' on the development cluster: "
				       "%s",
				       names[i], err->message);
				sv_error_destroy(err);
			} else {
				sv_log(NULL, SV_LOG_INFO, "main",
				       "created topic '%s' (%d partitions) on "
				       "the development cluster",
				       names[i], DEV_TOPIC_PARTITIONS);
			}
			free(names[i]);
		}
	}

	char *resp = NULL;
	sv_error_t *err = sv_supervisor_submit(sv, body.data ? body.data : "",
					       body.len, false, &resp);
	sv_buf_release(&body);
	if (err) {
		if (err->category == SV_ERR_CONFLICT && err->field &&
		    !strcmp(err->field, "name")) {
			/* brought back from the data directory by a restart */
			printf("example job '%s' is already here (recovered "
			       "from "
			       "the data directory): %s\n",
			       path, err->message);
			sv_error_destroy(err);
			return;
		}
		fprintf(stderr,
			"streamvisor: example job '%s' rejected: ", path);
		report(err);
		return;
	}
	json_t *r = resp ? json_loads(resp, 0, NULL) : NULL;
	const char *id = json_string_value(json_object_get(r, "id"));
	const char *state = json_string_value(json_object_get(r, "state"));
	if (id) {
		printf("submitted example job '%s': id %s, state %s\n", path,
		       id, state ? state : "?");
		printf("  status:  curl -s %s/v1/jobs/%s\n", base_url, id);
		printf("  cancel:  curl -s -X POST %s/v1/jobs/%s/cancel\n",
		       base_url, id);
	} else {
		printf("submitted example job '%s': %s\n", path,
		       resp ? resp : "");
	}
	fflush(stdout);
	json_decref(r);
	free(resp);
}

/* During the shutdown: a second SIGINT/SIGTERM means "now". */
/* The libraries' code pages touched only by their start
 * (docs/performance.md "An idle supervisor");
 * STREAMVISOR_KEEP_CODE_PAGES=1 keeps them mapped. */
static void release_code_pages(void)
{
	if (getenv("STREAMVISOR_KEEP_CODE_PAGES"))
		return;
	size_t rel = sv_mem_release_code();
	sv_log(NULL, SV_LOG_DEBUG, "main",
	       "unmapped %zu KiB of start-up code pages", rel / 1024);
}

static void *second_signal(void *arg)
{
	sigset_t *sigs = arg;
	int sig = 0;
	while (sigwait(sigs, &sig) != 0)
		;
	fprintf(stderr,
		"streamvisor: second %s during shutdown: exiting now "
		"(open transactions are settled by the next start)\n",
		sig == SIGINT ? "SIGINT" : "SIGTERM");
	_exit(1);
	return NULL;
}

/* A thousand client connections need a thousand descriptors: raise the
 * soft limit to the hard one. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"listen", required_argument, NULL, 'l'},
		{"data-dir", required_argument, NULL, 'd'},
		{"bootstrap-servers", required_argument, NULL, 'b'},
		{"example-job", required_argument, NULL, 'e'},
		{"file-sink-root", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *config = NULL, *listen = NULL, *data_dir = NULL,
		   *bootstrap = NULL, *example = NULL;
	int c;
	char **roots = NULL;
	size_t nroots = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:l:d:b:e:r:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'r':
			if (optarg[0] != '/') {
				fprintf(stderr,
					"streamvisor: --file-sink-root needs "
					"an absolute directory\n");
				return EXIT_USAGE;
			}
			roots = sv_realloc(roots,
					   (nroots + 1) * sizeof(*roots));
			roots[nroots++] = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'l':
			listen = optarg;
			break;
		case 'd':
			data_dir = optarg;
			break;
		case 'b':
			bootstrap = optarg;
			break;
		case 'e':
			example = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "streamvisor: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	if ((data_dir && !*data_dir) || (bootstrap && !*bootstrap)) {
		fprintf(stderr, "streamvisor: empty option value\n");
		usage(stderr);
		return EXIT_USAGE;
	}

	sv_svconf_t conf;
	sv_svconf_init(&conf);
	sv_error_t *err = NULL;
	if (config && (err = sv_svconf_load(&conf, config))) {
		report(err);
		sv_svconf_release(&conf);
		return 1;
	}
	if (listen) {
		char *host = NULL;
		int port = 0;
		if ((err = sv_svconf_parse_listen(listen, &host, &port))) {
			report(err);
			sv_svconf_release(&conf);
			usage(stderr);
			return EXIT_USAGE;
		}
		free(conf.listen_host);
		conf.listen_host = host;
		conf.listen_port = port;
	}
	if (data_dir) {
		free(conf.data_dir);
		conf.data_dir = sv_strdup(data_dir);
	}
	if (bootstrap) /* like kcat -b: the whole "default" profile */
		sv_svconf_set_cluster(&conf, "default", bootstrap, false);
	if (nroots) { /* the command line replaces the config's roots */
		for (size_t i = 0; i < conf.nfile_sink_roots; i++)
			free(conf.file_sink_roots[i]);
		free(conf.file_sink_roots);
		conf.nfile_sink_roots = nroots;
		conf.file_sink_roots = sv_calloc(nroots, sizeof(char *));
		for (size_t i = 0; i < nroots; i++) {
			size_t n = strlen(roots[i]);
			while (n > 1 && roots[i][n - 1] == '/')
				n--;
			conf.file_sink_roots[i] = sv_strndup(roots[i], n);
		}
	}
	free(roots);
	/* distributed: the node id the data dir keeps (docs/cluster.md) */
	if (conf.dist.name) {
		char *node = NULL;
		if ((err = sv_dist_node_id(conf.data_dir, conf.dist.node_id,
					   &node))) {
			report(err);
			sv_svconf_release(&conf);
			return 1;
		}
		free(conf.dist.node_id);
		conf.dist.node_id = node;
	}
	if ((err = sv_svconf_check_exposure(&conf))) {
		report(err);
		sv_svconf_release(&conf);
		return 1;
	}
	raise_fd_limit();

	/* Before any thread exists, so every thread inherits the mask and
	 * only sigwait() below ever sees these signals. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	sv_devcluster_t *dc = NULL;
	if (!sv_svconf_cluster(&conf, "default")) {
		char *dev_bootstrap = NULL;
		if ((err = sv_devcluster_start(1, &dev_bootstrap, &dc))) {
			err = sv_error_prefix(err,
					      "cannot start the embedded "
					      "development cluster");
			report(err);
			sv_svconf_release(&conf);
			return 1;
		}
		sv_svconf_set_cluster(&conf, "default", dev_bootstrap, true);
		/* the embedded development mode (make run): file sinks may
		 * write anywhere unless roots are configured */
		if (!conf.nfile_sink_roots) {
			conf.file_sinks_unconfined = true;
			sv_log(NULL, SV_LOG_WARN, "main",
			       "development mode: file sinks are not confined "
			       "(set file_sink_roots to confine them)");
		}
		sv_log(NULL, SV_LOG_WARN, "main",
		       "no \"default\" cluster configured: using the embedded "
		       "development cluster at %s; it has no transactional "
		       "isolation (read_committed readers see aborted records) "
		       "and keeps data in memory only — for development, "
		       "never production",
		       dev_bootstrap);
		free(dev_bootstrap);
	}

	sv_supervisor_t *sv = NULL;
	sv_http_t *http = NULL;
	int rc = 0;
	if ((err = sv_supervisor_new(&conf, &sv))) {
		report(err);
		rc = 1;
		goto out;
	}
	release_code_pages(); /* before the first request can be answered */
	if ((err = sv_http_start_conf(sv, &conf, &http))) {
		report(err);
		rc = 1;
		goto out;
	}

	char hostport[300], base[320];
	url_host(hostport, sizeof(hostport), conf.listen_host,
		 sv_http_port(http));
	snprintf(base, sizeof(base), "%s://%s",
		 conf.tls_cert_file ? "https" : "http", hostport);
	printf("streamvisor listening on %s\n"
	       "  dashboard: %s/\n"
	       "  curl -s %s/healthz\n"
	       "  curl -s %s/v1/info\n"
	       "  curl -s %s/v1/jobs\n"
	       "  curl -s %s/metrics\n"
	       "  curl -s -X POST -H 'Content-Type: application/json' "
	       "--data-binary @examples/generated-orders.json %s/v1/jobs\n",
	       base, base, base, base, base, base, base);
	fflush(stdout);

	if ((err = sv_supervisor_start_dist(sv, base))) {
		report(err);
		rc = 1;
		goto out;
	}
	if (conf.dist.name)
		printf("  node '%s' of streamvisor cluster '%s'\n",
		       conf.dist.node_id, conf.dist.name);
	fflush(stdout);
	if (example)
		submit_example(sv, dc, example, base);
	release_code_pages();
	if (sv_notify("READY=1") < 0)
		sv_log(NULL, SV_LOG_WARN, "main",
		       "cannot notify the service manager: %s",
		       strerror(errno));

	int sig = 0;
	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig != SIGHUP)
			break;
		/* certificates and tokens; on error the old ones stay */
		if ((err = sv_http_reload(http))) {
			sv_log(NULL, SV_LOG_ERROR, "main", "SIGHUP: %s",
			       err->message);
			sv_error_destroy(err);
		}
	}
	sv_log(NULL, SV_LOG_INFO, "main",
	       "%s received, shutting down: final checkpoints within %lld ms",
	       sig == SIGINT ? "SIGINT" : "SIGTERM",
	       (long long)conf.shutdown_timeout_ms);
	sv_notify("STOPPING=1");
	pthread_t th2;
	if (pthread_create(&th2, NULL, second_signal, &sigs) == 0)
		pthread_detach(th2);
	sv_http_stop(http); /* no handler runs after this */
	http = NULL;
	if (sv_supervisor_shutdown(sv, conf.shutdown_timeout_ms) > 0) {
		/* an attempt is stuck in a client call: joining it could
		 * outlast any stop timeout; its work is settled by the next
		 * start as after a crash */
		sv_log(NULL, SV_LOG_WARN, "main",
		       "exiting with attempts still running");
		fflush(NULL);
		_exit(0);
	}
	sv_log(NULL, SV_LOG_INFO, "main", "shutdown complete");

out:
	sv_http_stop(http); /* no handler runs after this */
	sv_supervisor_destroy(sv); /* stops job attempts */
	sv_devcluster_stop(dc); /* clients are gone by now */
	sv_svconf_release(&conf);
	return rc;
}

int main(int argc, char **argv)
{
	/* "--server URL" may also come before the command name. */
	const char *server = NULL;
	while (argc >= 2 &&
	       (!strcmp(argv[1], "--server") || !strcmp(argv[1], "-s") ||
		!strncmp(argv[1], "--server=", 9))) {
		if (argv[1][8] == '=') {
			server = argv[1] + 9;
			argc--;
			argv++;
		} else if (argc >= 3) {
			server = argv[2];
			argc -= 2;
			argv += 2;
		} else {
			fprintf(stderr,
				"streamvisor: option '%s' needs a "
				"value\n",
				argv[1]);
			return EXIT_CLI_USAGE;
		}
	}
	if (argc < 2) {
		usage(stderr);
		return EXIT_CLI_USAGE;
	}
	const char *name = argv[1];
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
		return cmd_version(argc - 1, argv + 1);
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
		return cmd_help(argc - 1, argv + 1);
	for (size_t i = 0; i < SV_ARRAY_LEN(commands); i++) {
		const command_t *cmd = &commands[i];
		if (strcmp(cmd->name, name) != 0)
			continue;
		if (cmd->client)
			return cli_run(cmd, argc - 1, argv + 1, server);
		if (server) {
			fprintf(stderr,
				"streamvisor: --server does not apply "
				"to '%s'\n",
				name);
			return EXIT_CLI_USAGE;
		}
		return cmd->run(argc - 1, argv + 1);
	}
	fprintf(stderr, "streamvisor: unknown command '%s'\n", name);
	usage(stderr);
	return EXIT_CLI_USAGE;
}
