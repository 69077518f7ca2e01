/* fuzz_http.c — libFuzzer target for the HTTP request path: the input is the
 * raw bytes a client sends on one connection, written to a live daemon
 * (http/http.c on libmicrohttpd) in this process, in front of a real
 * supervisor with authentication on (a viewer, an operator and an admin
 * token; the seeds use them), file sinks confined to a scratch root, small
 * limits. So the fuzzer drives libmicrohttpd's request parsing, our framing
 * checks, authentication, routing, body collection and every handler down
 * to the job-spec parser, the actions and the views. Each input is sent,
 * the write side shut, and the answer read until the server closes (or 2
 * s). Jobs the inputs create are cancelled and deleted every 64 inputs so
 * a long run stays bounded. The supervisor and daemon live for the whole
 * process. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "core/log.h"
#include "core/util.h"
#include "http/http.h"
#include "supervisor/auth.h"
#include "tests/fuzz/fuzz.h"

static sv_supervisor_t *sv;
static sv_http_t *http;
static int port;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char dir[] = "/tmp/sv-fuzz-http-XXXXXX";
	if (!mkdtemp(dir))
		abort();
	sv_svconf_t conf;
	sv_svconf_init(&conf);
	free(conf.data_dir);
	if (asprintf(&conf.data_dir, "%s/data", dir) < 0 ||
	    asprintf(&conf.tokens_file, "%s/tokens.yaml", dir) < 0)
		abort();
	conf.listen_port = 0;
	conf.file_sink_roots = sv_calloc(1, sizeof(char *));
	if (asprintf(&conf.file_sink_roots[0], "%s/root", dir) < 0)
		abort();
	conf.nfile_sink_roots = 1;
	mkdir(conf.file_sink_roots[0], 0755);
	conf.limits.max_body_bytes = 16384;
	conf.limits.request_timeout_s = 5;
	FILE *f = fopen(conf.tokens_file, "w");
	if (!f)
		abort();
	fchmod(fileno(f), 0600);
	static const char *const who[][2] = {
		{"v", "viewer"}, {"o", "operator"}, {"a", "admin"}};
	for (size_t i = 0; i < 3; i++) {
		char tok[32], hex[65];
		snprintf(tok, sizeof(tok), "fuzz-%s", who[i][1]);
		sv_auth_hash_hex(tok, strlen(tok), hex);
		fprintf(f, "%s: {role: %s, sha256: %s}\n", who[i][0], who[i][1],
			hex);
	}
	fclose(f);
	sv_log_set_level(SV_LOG_ERROR);
	sv_error_t *err = sv_supervisor_new(&conf, &sv);
	if (!err)
		err = sv_http_start_conf(sv, &conf, &http);
	if (err) {
		fprintf(stderr, "fuzz_http: %s\n", err->message);
		abort();
	}
	port = sv_http_port(http);
	sv_svconf_release(&conf);
	return 0;
}

/* Cancel and forget every job the inputs made. */
static void sweep(void)
{
	char *json = NULL;
	sv_error_t *err = sv_supervisor_list(sv, &json);
	if (err) {
		sv_error_destroy(err);
		return;
	}
	json_t *o = json_loads(json, 0, NULL);
	free(json);
	size_t i;
	json_t *j;
	json_array_foreach (json_object_get(o, "jobs"), i, j) {
		const char *id = json_string_value(json_object_get(j, "id"));
		char *r = NULL;
		err = sv_supervisor_action(sv, id, SV_ACTION_CANCEL, NULL, 0,
					   &r);
		sv_error_destroy(err);
		free(r);
		r = NULL;
		err = sv_supervisor_delete(sv, id, "purge=true", &r);
		sv_error_destroy(err);
		free(r);
	}
	json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned n;
	if (!http)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size > 64 * 1024)
		return 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {2, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		size_t off = 0;
		while (off < size) {
			ssize_t w = send(fd, data + off, size - off,
					 MSG_NOSIGNAL);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		shutdown(fd, SHUT_WR);
		char buf[8192];
		while (recv(fd, buf, sizeof(buf), 0) > 0)
			;
	}
	close(fd);
	if (++n % 64 == 0)
		sweep();
	return 0;
}
