/* test_config.c — the server config reader (supervisor/config.c): defaults,
 * the YAML schema, error messages naming file, key and line, secrets
 * handling (values never in messages) and merge semantics. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "supervisor/config_int.h"
#include "supervisor/supervisor.h"

typedef struct fixture {
	char dir[64];
	sv_svconf_t conf;
} fixture_t;

static int setup(void **state)
{
	fixture_t *fx = sv_calloc(1, sizeof(*fx));
	strcpy(fx->dir, "/tmp/sv-test-config-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	sv_svconf_init(&fx->conf);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture_t *fx = *state;
	sv_svconf_release(&fx->conf);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		return -1;
	free(fx);
	return 0;
}

/* Write text to dir/name; returns the path (static buffer per slot). */
static const char *write_file(fixture_t *fx, const char *name, const char *text)
{
	static char paths[4][256];
	static int slot;
	char *p = paths[slot++ % 4];
	snprintf(p, 256, "%s/%s", fx->dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(p, 0600);
	return p;
}

static const char *prop(const sv_cluster_t *c, const char *key)
{
	for (size_t i = 0; i < c->nprops; i++)
		if (strcmp(c->props[i].key, key) == 0)
			return c->props[i].value;
	return NULL;
}

/* Load text as config.yaml; expect an error whose message equals want
 * (with "%s" replaced by the file path) when want is set. */
static void load_expect(fixture_t *fx, const char *text, const char *want)
{
	const char *path = write_file(fx, "config.yaml", text);
	sv_error_t *err = sv_svconf_load(&fx->conf, path);
	if (!want) {
		if (err)
			fail_msg("unexpected error: %s", err->message);
		return;
	}
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	/* want holds one "%s" standing for the path */
	const char *ph = strstr(want, "%s");
	assert_non_null(ph);
	sv_buf_t exp;
	sv_buf_init(&exp);
	sv_buf_append(&exp, want, (size_t)(ph - want));
	sv_buf_puts(&exp, path);
	sv_buf_puts(&exp, ph + 2);
	assert_string_equal(err->message, exp.data);
	sv_buf_release(&exp);
	sv_error_destroy(err);
}

static void test_defaults(void **state)
{
	fixture_t *fx = *state;
	assert_string_equal(fx->conf.listen_host, "127.0.0.1");
	assert_int_equal(fx->conf.listen_port, 8080);
	assert_string_equal(fx->conf.data_dir, "./streamvisor-data");
	assert_int_equal(fx->conf.nclusters, 0);
	assert_null(fx->conf.secrets_path);
	assert_null(fx->conf.identity);
	assert_null(sv_svconf_cluster(&fx->conf, "default"));
	assert_int_equal(fx->conf.shutdown_timeout_ms,
			 SV_SHUTDOWN_TIMEOUT_DEFAULT_MS);
	/* within systemd's default 90 s stop timeout, with room to close */
	assert_true(SV_SHUTDOWN_TIMEOUT_DEFAULT_MS <= 60000);
}

static void test_shutdown_timeout(void **state)
{
	fixture_t *fx = *state;
	load_expect(fx, "shutdown_timeout_ms: 2500\n", NULL);
	assert_int_equal(fx->conf.shutdown_timeout_ms, 2500);
	load_expect(fx, "identity: x\n", NULL); /* absent: kept */
	assert_int_equal(fx->conf.shutdown_timeout_ms, 2500);
	load_expect(fx, "shutdown_timeout_ms: 0\n", NULL);
	assert_int_equal(fx->conf.shutdown_timeout_ms, 0);
	load_expect(fx, "shutdown_timeout_ms: -1\n",
		    "config '%s': 'shutdown_timeout_ms' must be milliseconds "
		    "from 0 to 86400000, not '-1' (line 1)");
	load_expect(fx, "shutdown_timeout_ms: 5s\n",
		    "config '%s': 'shutdown_timeout_ms' must be milliseconds "
		    "from 0 to 86400000, not '5s' (line 1)");
}

static void test_full_file(void **state)
{
	fixture_t *fx = *state;
	write_file(fx, "secrets.yaml",
		   "prod-sasl:\n"
		   "  sasl.username: svc\n"
		   "  sasl.password: s3cr3t-VALUE\n");
	load_expect(fx,
		    "listen: 0.0.0.0:9090\n"
		    "data_dir: /var/lib/streamvisor\n"
		    "identity: sv-1\n"
		    "secrets_file: secrets.yaml\n"
		    "clusters:\n"
		    "  default:\n"
		    "    bootstrap_servers: 127.0.0.1:19092\n"
		    "    properties:\n"
		    "      security.protocol: sasl_plaintext\n"
		    "      linger.ms: 5\n"
		    "    credentials: prod-sasl\n"
		    "  backup:\n"
		    "    bootstrap_servers: [a:1, b:2]\n",
		    NULL);
	sv_svconf_t *c = &fx->conf;
	assert_string_equal(c->listen_host, "0.0.0.0");
	assert_int_equal(c->listen_port, 9090);
	assert_string_equal(c->data_dir, "/var/lib/streamvisor");
	assert_string_equal(c->identity, "sv-1");
	char want[300];
	snprintf(want, sizeof(want), "%s/secrets.yaml", fx->dir);
	assert_string_equal(c->secrets_path, want);
	assert_int_equal(c->nclusters, 2);

	const sv_cluster_t *d = sv_svconf_cluster(c, "default");
	assert_non_null(d);
	assert_string_equal(d->bootstrap, "127.0.0.1:19092");
	assert_false(d->dev_embedded);
	assert_int_equal(d->nprops, 4);
	assert_string_equal(prop(d, "security.protocol"), "sasl_plaintext");
	assert_string_equal(prop(d, "linger.ms"), "5");
	assert_string_equal(prop(d, "sasl.username"), "svc");
	assert_string_equal(prop(d, "sasl.password"), "s3cr3t-VALUE");

	const sv_cluster_t *b = sv_svconf_cluster(c, "backup");
	assert_non_null(b);
	assert_string_equal(b->bootstrap, "a:1,b:2");
	assert_int_equal(b->nprops, 0);
	assert_null(sv_svconf_cluster(c, "nope"));
}

static void test_empty_file_keeps_defaults(void **state)
{
	fixture_t *fx = *state;
	load_expect(fx, "# nothing here\n", NULL);
	assert_string_equal(fx->conf.listen_host, "127.0.0.1");
	assert_int_equal(fx->conf.listen_port, 8080);
	assert_string_equal(fx->conf.data_dir, "./streamvisor-data");
}

static void test_missing_file(void **state)
{
	fixture_t *fx = *state;
	char path[300];
	snprintf(path, sizeof(path), "%s/absent.yaml", fx->dir);
	sv_error_t *err = sv_svconf_load(&fx->conf, path);
	assert_non_null(err);
	char want[400];
	snprintf(want, sizeof(want),
		 "cannot read config '%s': No such file or directory", path);
	assert_string_equal(err->message, want);
	sv_error_destroy(err);
}

static void test_unknown_keys(void **state)
{
	fixture_t *fx = *state;
	load_expect(fx, "listen: 127.0.0.1:1\ndata_dir: /x\nclusterz: {}\n",
		    "config '%s': unknown key 'clusterz' (line 3)");
	load_expect(fx, "clusters:\n  default:\n    bootstrap: x:1\n",
		    "config '%s': unknown key 'clusters.default.bootstrap' "
		    "(line 3)");
}

static void test_wrong_types(void **state)
{
	fixture_t *fx = *state;
	load_expect(fx, "listen: {host: x}\n",
		    "config '%s': 'listen' must be a string (line 1)");
	load_expect(fx, "data_dir:\n",
		    "config '%s': 'data_dir' must not be empty (line 1)");
	load_expect(fx, "data_dir: [a, b]\n",
		    "config '%s': 'data_dir' must be a string (line 1)");
	load_expect(fx, "clusters: [a]\n",
		    "config '%s': 'clusters' must be a mapping of profile "
		    "name to profile (line 1)");
	load_expect(fx, "clusters:\n  default: x:1\n",
		    "config '%s': 'clusters.default' must be a mapping "
		    "(line 2)");
	load_expect(fx, "clusters:\n  default:\n    properties: {a: b}\n",
		    "config '%s': 'clusters.default.bootstrap_servers' is "
		    "required (line 2)");
	load_expect(fx,
		    "clusters:\n  default:\n    bootstrap_servers: x:1\n"
		    "    properties: [a]\n",
		    "config '%s': 'clusters.default.properties' must be a "
		    "mapping of client properties (line 4)");
	load_expect(fx,
		    "clusters:\n  default:\n    bootstrap_servers: x:1\n"
		    "    properties:\n      a.b: {c: d}\n",
		    "config '%s': property 'clusters.default.properties.a.b' "
		    "must have a scalar value (line 5)");
	load_expect(fx,
		    "clusters:\n  'bad name':\n    bootstrap_servers: x:1\n",
		    "config '%s': cluster name 'bad name' must be letters, "
		    "digits, '-', '_' or '.' (line 2)");
	load_expect(fx, "- a\n- b\n",
		    "config '%s': top level must be a mapping");
	load_expect(fx, "listen: localhost\n",
		    "config '%s': invalid listen address 'localhost' (want "
		    "host:port, port 0-65535, IPv6 as [addr]:port)");
}

static void test_invalid_yaml(void **state)
{
	fixture_t *fx = *state;
	const char *path = write_file(fx, "config.yaml",
				      "listen: 127.0.0.1:1\n  data_dir: [\n");
	sv_error_t *err = sv_svconf_load(&fx->conf, path);
	assert_non_null(err);
	char prefix[400];
	snprintf(prefix, sizeof(prefix), "config '%s': invalid YAML at line ",
		 path);
	assert_memory_equal(err->message, prefix, strlen(prefix));
	sv_error_destroy(err);

	/* Duplicate keys are an error, not last-one-wins. */
	path = write_file(fx, "config.yaml", "data_dir: /a\ndata_dir: /b\n");
	err = sv_svconf_load(&fx->conf, path);
	assert_non_null(err);
	assert_memory_equal(err->message, "config '", 8);
	sv_error_destroy(err);
	assert_string_equal(fx->conf.data_dir, "./streamvisor-data");
}

static void test_refused_properties(void **state)
{
	fixture_t *fx = *state;
	load_expect(
		fx,
		"clusters:\n  default:\n    bootstrap_servers: x:1\n"
		"    properties:\n      plugin.library.paths: /tmp/evil.so\n",
		"config '%s': property 'clusters.default.properties."
		"plugin.library.paths' is not allowed (loads code) (line 5)");
	load_expect(
		fx,
		"clusters:\n  default:\n    bootstrap_servers: x:1\n"
		"    properties:\n      sasl.kerberos.kinit.cmd: rm -rf /\n",
		"config '%s': property 'clusters.default.properties."
		"sasl.kerberos.kinit.cmd' is not allowed (runs a command) "
		"(line 5)");
	load_expect(fx,
		    "clusters:\n  default:\n    bootstrap_servers: x:1\n"
		    "    properties:\n      group.id: g\n",
		    "config '%s': property 'clusters.default.properties."
		    "group.id' is not allowed (set per job by the supervisor) "
		    "(line 5)");
	/* Files are fine in the server config (TLS, keytabs). */
	load_expect(fx,
		    "clusters:\n  default:\n    bootstrap_servers: x:1\n"
		    "    properties:\n      ssl.ca.location: /etc/ca.pem\n"
		    "      ssl.keystore.location: /etc/ks.p12\n",
		    NULL);
	assert_string_equal(prop(sv_svconf_cluster(&fx->conf, "default"),
				 "ssl.keystore.location"),
			    "/etc/ks.p12");
	assert_non_null(sv_svconf_property_refused("ssl.engine.location"));
	assert_non_null(sv_svconf_property_refused("bootstrap.servers"));
	assert_null(sv_svconf_property_refused("sasl.password"));
}

/* Every error about the secrets file names entries and keys, never values. */
static void test_secret_values_never_in_errors(void **state)
{
	fixture_t *fx = *state;
	static const char *const secrets[] = {
		/* refused key in an entry */
		"prod:\n  plugin.library.paths: TOPSECRET1\n",
		/* key also set in the profile */
		"prod:\n  security.protocol: TOPSECRET1\n",
		/* non-scalar value */
		"prod:\n  sasl.password: [TOPSECRET1]\n",
		/* syntax error right at the secret */
		"prod:\n  sasl.password: \"TOPSECRET1\n",
		/* entry not a mapping */
		"prod: TOPSECRET1\n",
		/* wrong top level */
		"- TOPSECRET1\n",
		/* no such entry */
		"other:\n  sasl.password: TOPSECRET1\n",
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(secrets); i++) {
		const char *sp = write_file(fx, "secrets.yaml", secrets[i]);
		char cfg[600];
		snprintf(cfg, sizeof(cfg),
			 "secrets_file: %s\nclusters:\n  default:\n"
			 "    bootstrap_servers: x:1\n    properties:\n"
			 "      security.protocol: sasl_ssl\n"
			 "    credentials: prod\n",
			 sp);
		const char *path = write_file(fx, "config.yaml", cfg);
		sv_error_t *err = sv_svconf_load(&fx->conf, path);
		assert_non_null(err);
		assert_int_equal(err->category, SV_ERR_CONFIG);
		/* names the secrets file... */
		assert_non_null(strstr(err->message, "secrets file '"));
		/* ...and never the value */
		assert_null(strstr(err->message, "TOPSECRET1"));
		if (err->cause)
			assert_null(strstr(err->cause, "TOPSECRET1"));
		sv_error_destroy(err);
	}
	/* The failed loads changed nothing. */
	assert_int_equal(fx->conf.nclusters, 0);
	assert_null(fx->conf.secrets_path);
}

static void test_credentials_errors(void **state)
{
	fixture_t *fx = *state;
	load_expect(fx,
		    "clusters:\n  default:\n    bootstrap_servers: x:1\n"
		    "    credentials: prod\n",
		    "config '%s': cluster 'default' names credentials 'prod' "
		    "but no secrets_file is set");
	const char *sp = write_file(fx, "s.yaml", "other: {a: b}\n");
	char cfg[400], want[600];
	snprintf(cfg, sizeof(cfg),
		 "secrets_file: %s\nclusters:\n  default:\n"
		 "    bootstrap_servers: x:1\n    credentials: prod\n",
		 sp);
	snprintf(want, sizeof(want),
		 "secrets file '%s': no entry 'prod' (named by cluster "
		 "'default')",
		 sp);
	const char *path = write_file(fx, "config.yaml", cfg);
	sv_error_t *err = sv_svconf_load(&fx->conf, path);
	assert_non_null(err);
	assert_string_equal(err->message, want);
	sv_error_destroy(err);
}

static void test_failed_load_changes_nothing(void **state)
{
	fixture_t *fx = *state;
	load_expect(fx, "listen: 10.0.0.1:1\ndata_dir: /d\nbogus: 1\n",
		    "config '%s': unknown key 'bogus' (line 3)");
	assert_string_equal(fx->conf.listen_host, "127.0.0.1");
	assert_int_equal(fx->conf.listen_port, 8080);
	assert_string_equal(fx->conf.data_dir, "./streamvisor-data");
}

static void test_merge_replaces_profiles(void **state)
{
	fixture_t *fx = *state;
	sv_svconf_set_cluster(&fx->conf, "default", "dev:1", true);
	sv_svconf_set_cluster(&fx->conf, "keep", "k:1", false);
	load_expect(fx,
		    "clusters:\n  default:\n    bootstrap_servers: x:1\n"
		    "    properties: {acks: all}\n",
		    NULL);
	assert_int_equal(fx->conf.nclusters, 2);
	const sv_cluster_t *d = sv_svconf_cluster(&fx->conf, "default");
	assert_string_equal(d->bootstrap, "x:1");
	assert_false(d->dev_embedded);
	assert_string_equal(prop(d, "acks"), "all");
	assert_string_equal(sv_svconf_cluster(&fx->conf, "keep")->bootstrap,
			    "k:1");

	/* set_cluster replaces the whole profile: no properties survive. */
	sv_svconf_set_cluster(&fx->conf, "default", "y:2", false);
	d = sv_svconf_cluster(&fx->conf, "default");
	assert_string_equal(d->bootstrap, "y:2");
	assert_int_equal(d->nprops, 0);
	assert_int_equal(fx->conf.nclusters, 2);
	assert_ptr_equal(sv_svconf_cluster(&fx->conf, NULL), d);
}

static void test_parse_listen(void **state)
{
	SV_UNUSED(state);
	static const struct {
		const char *in, *host;
		int port;
	} ok[] = {
		{"127.0.0.1:8080", "127.0.0.1", 8080},
		{"localhost:0", "localhost", 0},
		{"[::1]:65535", "::1", 65535},
		{"0.0.0.0:1", "0.0.0.0", 1},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(ok); i++) {
		char *host = NULL;
		int port = -1;
		sv_error_t *err = sv_svconf_parse_listen(ok[i].in, &host,
							 &port);
		assert_null(err);
		assert_string_equal(host, ok[i].host);
		assert_int_equal(port, ok[i].port);
		free(host);
	}
	static const char *const bad[] = {
		"",           "8080",    ":8080",   "host:",
		"host:65536", "host:-1", "host:+1", "host:80x",
		"::1:80",     "[::1]80", "[::1]",   "[]:80",
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(bad); i++) {
		char *host = NULL;
		int port = -1;
		sv_error_t *err = sv_svconf_parse_listen(bad[i], &host, &port);
		if (!err)
			fail_msg("'%s' accepted", bad[i]);
		assert_int_equal(err->category, SV_ERR_CONFIG);
		assert_null(host);
		sv_error_destroy(err);
	}
}

/* The example config in deploy/ must load as shipped. */
static void test_example_config_loads(void **state)
{
	fixture_t *fx = *state;
	char path[1024];
	const char *src = getenv("SV_SOURCE_DIR");
	if (src) {
		snprintf(path, sizeof(path), "%s/deploy/streamvisor.yaml", src);
	} else {
		snprintf(path, sizeof(path), "%s", __FILE__);
		char *t = strstr(path, "tests/unit/test_config.c");
		assert_non_null(t);
		strcpy(t, "deploy/streamvisor.yaml");
	}
	sv_error_t *err = sv_svconf_load(&fx->conf, path);
	if (err)
		fail_msg("%s", err->message);
	assert_non_null(sv_svconf_cluster(&fx->conf, "default"));
}

/* The security settings (docs/security.md): auth, tls, limits and
 * file_sink_roots, relative files resolved beside the config, and the
 * errors for half a TLS setting, bad limits and bad roots. */
static void test_security_keys(void **state)
{
	fixture_t *fx = *state;
	load_expect(fx,
		    "auth: {tokens_file: tokens.yaml}\n"
		    "tls: {cert_file: /etc/sv/c.pem, key_file: k.pem,\n"
		    "      client_ca_file: ca.pem}\n"
		    "limits: {max_connections: 10, max_connections_per_client: "
		    "2,\n  idle_timeout_s: 5, request_timeout_s: 6,\n"
		    "  max_header_bytes: 4096, max_body_bytes: 100}\n"
		    "file_sink_roots: [/srv/out/, /data]\n",
		    NULL);
	sv_svconf_t *c = &fx->conf;
	char want[300];
	snprintf(want, sizeof(want), "%s/tokens.yaml", fx->dir);
	assert_string_equal(c->tokens_file, want);
	assert_string_equal(c->tls_cert_file, "/etc/sv/c.pem");
	snprintf(want, sizeof(want), "%s/k.pem", fx->dir);
	assert_string_equal(c->tls_key_file, want);
	assert_non_null(c->tls_client_ca_file);
	assert_int_equal(c->limits.max_connections, 10);
	assert_int_equal(c->limits.max_connections_per_client, 2);
	assert_int_equal(c->limits.idle_timeout_s, 5);
	assert_int_equal(c->limits.request_timeout_s, 6);
	assert_int_equal(c->limits.max_header_bytes, 4096);
	assert_int_equal(c->limits.max_body_bytes, 100);
	assert_int_equal(c->nfile_sink_roots, 2);
	assert_string_equal(c->file_sink_roots[0], "/srv/out");
	assert_string_equal(c->file_sink_roots[1], "/data");
	/* a limit left out keeps its default */
	load_expect(fx, "limits: {max_body_bytes: 7}\n", NULL);
	assert_int_equal(c->limits.max_connections, 10);
	assert_int_equal(c->limits.max_body_bytes, 7);

	load_expect(fx, "tls: {cert_file: a.pem}\n",
		    "config '%s': 'tls' needs both cert_file and key_file "
		    "(line 1)");
	load_expect(fx, "tls: {client_ca_file: a.pem}\n",
		    "config '%s': 'tls.client_ca_file' needs cert_file and "
		    "key_file (line 1)");
	load_expect(fx, "auth: {tokens: x}\n",
		    "config '%s': unknown key 'auth.tokens' (line 1)");
	load_expect(fx, "limits: {max_connections: 0}\n",
		    "config '%s': 'limits.max_connections' must be an integer "
		    "from 1 to 65536 (line 1)");
	load_expect(fx, "limits: {idle_timeout_s: -1}\n",
		    "config '%s': 'limits.idle_timeout_s' must be an integer "
		    "from 1 to 86400 (line 1)");
	load_expect(fx, "file_sink_roots: [relative/dir]\n",
		    "config '%s': 'file_sink_roots' entries must be absolute "
		    "directory paths without '.' or '..' components (line 1)");
	load_expect(fx, "file_sink_roots: [/a/../etc]\n",
		    "config '%s': 'file_sink_roots' entries must be absolute "
		    "directory paths without '.' or '..' components (line 1)");
}

/* Bytes that are not UTF-8 text never reach libfyaml, which loops forever
 * on some (found by tests/fuzz/fuzz_config.c: a directive and a stray
 * byte). */
static void test_not_text_refused(void **state)
{
	fixture_t *fx = *state;
	load_expect(fx, "%\xd7",
		    "config '%s': invalid YAML at line 1: is not UTF-8 text (a "
		    "NUL, control character or invalid UTF-8 byte)");
	load_expect(fx, "listen: 127.0.0.1:1\ndata_dir: /a\x01b\n",
		    "config '%s': invalid YAML at line 2: is not UTF-8 text (a "
		    "NUL, control character or invalid UTF-8 byte)");
	load_expect(fx, "identity: \xc3\xa9t\xc3\xa9\n", NULL);
	assert_string_equal(fx->conf.identity, "\xc3\xa9t\xc3\xa9");
}

/* A non-loopback listen address needs TLS and auth. */
static void test_exposure(void **state)
{
	fixture_t *fx = *state;
	sv_svconf_t *c = &fx->conf;
	assert_null(sv_svconf_check_exposure(c)); /* 127.0.0.1 */
	const char *loop[] = {"127.0.0.1", "127.1.2.3", "::1", "[::1]",
			      "localhost"};
	for (size_t i = 0; i < SV_ARRAY_LEN(loop); i++)
		assert_true(sv_svconf_host_is_loopback(loop[i]));
	const char *open[] = {"0.0.0.0", "::", "10.0.0.1", "example.com",
			      "128.0.0.1"};
	for (size_t i = 0; i < SV_ARRAY_LEN(open); i++)
		assert_false(sv_svconf_host_is_loopback(open[i]));
	free(c->listen_host);
	c->listen_host = sv_strdup("0.0.0.0");
	sv_error_t *err = sv_svconf_check_exposure(c);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	assert_non_null(strstr(err->message, "without TLS and authentication"));
	sv_error_destroy(err);
	c->tokens_file = sv_strdup("/t");
	err = sv_svconf_check_exposure(c);
	assert_non_null(strstr(err->message, "without TLS: set tls.cert_file"));
	sv_error_destroy(err);
	c->tls_cert_file = sv_strdup("/c");
	c->tls_key_file = sv_strdup("/k");
	assert_null(sv_svconf_check_exposure(c));
}

/* distributed: (docs/cluster.md): defaults, every key, and errors that
 * name the field; without the section, standalone. */
static void test_distributed(void **state)
{
	fixture_t *fx = *state;
	load_expect(fx, "listen: 127.0.0.1:1\n", NULL);
	assert_null(fx->conf.dist.name); /* standalone */
	load_expect(fx, "distributed:\n  name: prod\n", NULL);
	assert_string_equal(fx->conf.dist.name, "prod");
	assert_null(fx->conf.dist.node_id);
	assert_null(fx->conf.dist.advertised_url);
	assert_string_equal(fx->conf.dist.cluster, "default");
	assert_int_equal(fx->conf.dist.session_timeout_ms, 10000);
	assert_int_equal(fx->conf.dist.max_poll_interval_ms, 300000);
	assert_int_equal(fx->conf.dist.replication_factor, 1);
	assert_int_equal(fx->conf.dist.state_budget_bytes_per_s, 2000000);
	load_expect(fx,
		    "distributed:\n  name: c1\n  node_id: node-7\n"
		    "  advertised_url: https://sv-7.example:8443\n"
		    "  cluster: kraft\n  session_timeout_ms: 6000\n"
		    "  max_poll_interval_ms: 7000\n"
		    "  replication_factor: 3\n"
		    "  state_budget_bytes_per_s: 50000000\n",
		    NULL);
	assert_int_equal(fx->conf.dist.state_budget_bytes_per_s, 50000000);
	assert_string_equal(fx->conf.dist.name, "c1");
	assert_string_equal(fx->conf.dist.node_id, "node-7");
	assert_string_equal(fx->conf.dist.advertised_url,
			    "https://sv-7.example:8443");
	assert_string_equal(fx->conf.dist.cluster, "kraft");
	assert_int_equal(fx->conf.dist.session_timeout_ms, 6000);
	assert_int_equal(fx->conf.dist.max_poll_interval_ms, 7000);
	assert_int_equal(fx->conf.dist.replication_factor, 3);

	static const struct {
		const char *text, *field, *message;
	} bad[] = {
		{"distributed: x\n", NULL,
		 "config '%s': 'distributed' must be a mapping (line 1)"},
		{"distributed:\n  node_id: a\n", "distributed.name",
		 "config '%s': 'distributed.name' is required (line 1)"},
		{"distributed:\n  name: 'a b'\n", "distributed.name",
		 "config '%s': 'distributed.name' must be 1 to 64 of "
		 "[A-Za-z0-9._-], not 'a b' (line 2)"},
		{"distributed:\n  name: a\n  node_id: n/1\n",
		 "distributed.node_id",
		 "config '%s': 'distributed.node_id' must be 1 to 64 of "
		 "[A-Za-z0-9._-], not 'n/1' (line 3)"},
		{"distributed:\n  name: a\n  advertised_url: sv:80\n",
		 "distributed.advertised_url",
		 "config '%s': 'distributed.advertised_url' must be an "
		 "http:// or https:// URL, not 'sv:80' (line 3)"},
		{"distributed:\n  name: a\n  session_timeout_ms: 100\n",
		 "distributed.session_timeout_ms",
		 "config '%s': 'distributed.session_timeout_ms' must be at "
		 "least 6000 (the broker's group.min.session.timeout.ms "
		 "default) (line 3)"},
		{"distributed:\n  name: a\n  session_timeout_ms: 20000\n"
		 "  max_poll_interval_ms: 10000\n",
		 "distributed.max_poll_interval_ms",
		 "config '%s': 'distributed.max_poll_interval_ms' (10000) "
		 "must be at least 'distributed.session_timeout_ms' (20000) "
		 "(line 1)"},
		{"distributed:\n  name: a\n  replication_factor: 0\n",
		 "distributed.replication_factor",
		 "config '%s': 'distributed.replication_factor' must be an "
		 "integer from 1 to 32767 (line 3)"},
		{"distributed:\n  name: a\n  state_budget_bytes_per_s: 0\n",
		 "distributed.state_budget_bytes_per_s",
		 "config '%s': 'distributed.state_budget_bytes_per_s' must be "
		 "an integer from 1 to 4000000000 (line 3)"},
		{"distributed:\n  name: a\n  leader: yes\n",
		 "distributed.leader",
		 "config '%s': unknown key 'distributed.leader' (line 3)"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sv_svconf_t before;
		const char *path = write_file(fx, "config.yaml", bad[i].text);
		sv_svconf_init(&before);
		sv_error_t *err = sv_svconf_load(&before, path);
		if (!err)
			fail_msg("accepted: %s", bad[i].text);
		char want[512];
		const char *ph = strstr(bad[i].message, "%s");
		snprintf(want, sizeof(want), "%.*s%s%s",
			 (int)(ph - bad[i].message), bad[i].message, path,
			 ph + 2);
		assert_string_equal(err->message, want);
		if (bad[i].field)
			assert_string_equal(err->field, bad[i].field);
		assert_null(before.dist.name); /* nothing changed */
		sv_error_destroy(err);
		sv_svconf_release(&before);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_security_keys, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exposure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_text_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shutdown_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_full_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_empty_file_keeps_defaults,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unknown_keys, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wrong_types, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_invalid_yaml, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refused_properties, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_secret_values_never_in_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credentials_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_failed_load_changes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_replaces_profiles,
						setup, teardown),
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test_setup_teardown(test_distributed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_example_config_loads,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
