/* config.c — the server configuration (sv_svconf_t) and its YAML file.
 *
 * The file is read with libfyaml into a document tree and walked key by key
 * against a fixed schema (docs/config.md): an unknown key or a value of the
 * wrong shape is an SV_ERR_CONFIG error naming the file, the key path and
 * the line, so a typo never silently falls back to a default. Everything is
 * read into a scratch sv_svconf_t first and merged into the caller's only
 * when the whole file (and its secrets file) is valid.
 *
 * Cluster profiles may name an entry of a separate secrets file
 * (`credentials:`); its properties (sasl.username, sasl.password, ...) are
 * added to the profile's client properties. Secret values never appear in an
 * error message or a log line: messages about the secrets file name the
 * entry and the key only, and YAML syntax errors in it report the position
 * without libfyaml's text (which may quote the offending token). Property
 * values are wiped from memory when a profile is released. */
#define _GNU_SOURCE
#include "supervisor/supervisor.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include <libfyaml.h>

#include "core/log.h"
#include "core/util.h"
#include "supervisor/auth.h"
#include "supervisor/config_int.h"

/* ---- the struct ---- */

void sv_svconf_init(sv_svconf_t *conf)
{
	memset(conf, 0, sizeof(*conf));
	conf->listen_host = sv_strdup("127.0.0.1");
	conf->listen_port = 8080;
	conf->data_dir = sv_strdup("./streamvisor-data");
	conf->shutdown_timeout_ms = SV_SHUTDOWN_TIMEOUT_DEFAULT_MS;
	conf->limits = (sv_http_limits_t){
		.max_connections = 1024,
		.max_connections_per_client = 128,
		.idle_timeout_s = 30,
		.request_timeout_s = 30,
		.max_header_bytes = 16384,
		.max_body_bytes = 1024 * 1024,
	};
}

static void free_roots(sv_svconf_t *conf)
{
	for (size_t i = 0; i < conf->nfile_sink_roots; i++)
		free(conf->file_sink_roots[i]);
	free(conf->file_sink_roots);
	conf->file_sink_roots = NULL;
	conf->nfile_sink_roots = 0;
}

static char *dup_or_null(const char *s)
{
	return s ? sv_strdup(s) : NULL;
}

void sv_svconf_copy_security(sv_svconf_t *dst, const sv_svconf_t *src)
{
	free(dst->tokens_file);
	free(dst->tls_cert_file);
	free(dst->tls_key_file);
	free(dst->tls_client_ca_file);
	free_roots(dst);
	dst->tokens_file = dup_or_null(src->tokens_file);
	dst->tls_cert_file = dup_or_null(src->tls_cert_file);
	dst->tls_key_file = dup_or_null(src->tls_key_file);
	dst->tls_client_ca_file = dup_or_null(src->tls_client_ca_file);
	dst->nfile_sink_roots = src->nfile_sink_roots;
	dst->file_sink_roots = sv_calloc(
		src->nfile_sink_roots ? src->nfile_sink_roots : 1,
		sizeof(char *));
	for (size_t i = 0; i < src->nfile_sink_roots; i++)
		dst->file_sink_roots[i] = sv_strdup(src->file_sink_roots[i]);
	dst->file_sinks_unconfined = src->file_sinks_unconfined;
	dst->limits = src->limits;
}

bool sv_svconf_host_is_loopback(const char *host)
{
	if (!host || !*host)
		return true; /* the default, 127.0.0.1 */
	if (!strcmp(host, "localhost") || !strcmp(host, "::1") ||
	    !strcmp(host, "[::1]"))
		return true;
	struct in_addr a4;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return false; /* other names and addresses, 0.0.0.0 and :: included */
}

sv_error_t *sv_svconf_check_exposure(const sv_svconf_t *conf)
{
	if (sv_svconf_host_is_loopback(conf->listen_host))
		return NULL;
	bool tls = conf->tls_cert_file && conf->tls_key_file;
	bool auth = conf->tokens_file != NULL;
	if (tls && auth)
		return NULL;
	return sv_error_new(
		SV_ERR_CONFIG,
		"refusing to listen on '%s', which is not a loopback address, "
		"without %s%s%s: set %s%s%s in the config file "
		"(docs/security.md), or listen on 127.0.0.1",
		conf->listen_host, tls ? "" : "TLS",
		!tls && !auth ? " and " : "", auth ? "" : "authentication",
		tls ? "" : "tls.cert_file and tls.key_file",
		!tls && !auth ? " and " : "", auth ? "" : "auth.tokens_file");
}

static void free_secret(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

static void cluster_release(sv_cluster_t *c)
{
	free(c->name);
	free(c->bootstrap);
	for (size_t i = 0; i < c->nprops; i++) {
		free(c->props[i].key);
		free_secret(c->props[i].value);
	}
	free(c->props);
	memset(c, 0, sizeof(*c));
}

void sv_svconf_release(sv_svconf_t *conf)
{
	free(conf->listen_host);
	free(conf->data_dir);
	free(conf->secrets_path);
	free(conf->identity);
	free(conf->tokens_file);
	free(conf->tls_cert_file);
	free(conf->tls_key_file);
	free(conf->tls_client_ca_file);
	free_roots(conf);
	for (size_t i = 0; i < conf->nclusters; i++)
		cluster_release(&conf->clusters[i]);
	free(conf->clusters);
	sv_distconf_release(&conf->dist);
	memset(conf, 0, sizeof(*conf));
}

void sv_distconf_release(sv_distconf_t *d)
{
	free(d->name);
	free(d->node_id);
	free(d->advertised_url);
	free(d->cluster);
	memset(d, 0, sizeof(*d));
}

void sv_distconf_copy(sv_distconf_t *dst, const sv_distconf_t *src)
{
	sv_distconf_release(dst);
	dst->name = dup_or_null(src->name);
	dst->node_id = dup_or_null(src->node_id);
	dst->advertised_url = dup_or_null(src->advertised_url);
	dst->cluster = dup_or_null(src->cluster);
	dst->session_timeout_ms = src->session_timeout_ms;
	dst->max_poll_interval_ms = src->max_poll_interval_ms;
	dst->replication_factor = src->replication_factor;
	dst->state_budget_bytes_per_s = src->state_budget_bytes_per_s;
}

const sv_cluster_t *sv_svconf_cluster(const sv_svconf_t *conf, const char *name)
{
	if (!name)
		name = "default";
	for (size_t i = 0; i < conf->nclusters; i++)
		if (strcmp(conf->clusters[i].name, name) == 0)
			return &conf->clusters[i];
	return NULL;
}

/* Take c (moved) into conf, replacing a profile of the same name. */
static void put_cluster(sv_svconf_t *conf, sv_cluster_t *c)
{
	for (size_t i = 0; i < conf->nclusters; i++) {
		if (strcmp(conf->clusters[i].name, c->name) == 0) {
			cluster_release(&conf->clusters[i]);
			conf->clusters[i] = *c;
			memset(c, 0, sizeof(*c));
			return;
		}
	}
	conf->clusters = sv_realloc(conf->clusters,
				    (conf->nclusters + 1) *
					    sizeof(*conf->clusters));
	conf->clusters[conf->nclusters++] = *c;
	memset(c, 0, sizeof(*c));
}

void sv_svconf_set_cluster(sv_svconf_t *conf, const char *name,
			   const char *bootstrap, bool dev_embedded)
{
	sv_cluster_t c = {0};
	c.name = sv_strdup(name);
	c.bootstrap = sv_strdup(bootstrap ? bootstrap : "");
	c.dev_embedded = dev_embedded;
	put_cluster(conf, &c);
}

/* ---- helpers shared with main.c ---- */

sv_error_t *sv_svconf_parse_listen(const char *s, char **host, int *port)
{
	*host = NULL;
	*port = 0;
	const char *colon, *hs = s;
	size_t hl;
	if (!s || !*s)
		return sv_error_new(SV_ERR_CONFIG,
				    "listen address is empty (want host:port)");
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || rb[1] != ':')
			goto bad;
		hs = s + 1;
		hl = (size_t)(rb - hs);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			goto bad; /* no port, or a bare IPv6 address */
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || !colon[1])
		goto bad;
	char *end;
	errno = 0;
	long p = strtol(colon + 1, &end, 10);
	if (errno || *end || p < 0 || p > 65535 || colon[1] == '-' ||
	    colon[1] == '+')
		goto bad;
	*host = sv_strndup(hs, hl);
	*port = (int)p;
	return NULL;
bad:
	return sv_error_new(SV_ERR_CONFIG,
			    "invalid listen address '%s' (want host:port, "
			    "port 0-65535, IPv6 as [addr]:port)",
			    s);
}

static const struct {
	const char *key;
	const char *why;
} refused_props[] = {
	{"plugin.library.paths", "loads code"},
	{"ssl.engine.location", "loads code"},
	{"sasl.kerberos.kinit.cmd", "runs a command"},
	{"bootstrap.servers", "set by 'bootstrap_servers'"},
	{"metadata.broker.list", "set by 'bootstrap_servers'"},
	{"group.id", "set per job by the supervisor"},
	{"transactional.id", "set per job by the supervisor"},
};

const char *sv_svconf_property_refused(const char *key)
{
	for (size_t i = 0; i < SV_ARRAY_LEN(refused_props); i++)
		if (strcmp(key, refused_props[i].key) == 0)
			return refused_props[i].why;
	return NULL;
}

/* ---- reading YAML ---- */

typedef struct loader {
	const char *path; /* file being read, for messages */
	const char *what; /* "config" or "secrets file" */
} loader_t;

static int node_line(struct fy_node *n)
{
	if (!n)
		return 0;
	struct fy_token *t = fy_node_get_scalar_token(n);
	const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
	return m ? m->line + 1 : 0;
}

/* An error about the file: "<what> '<path>': <message> (line N)". at (a
 * scalar node, usually the key) gives the line; NULL for none. */
static sv_error_t *lerr(const loader_t *L, struct fy_node *at, const char *fmt,
			...) __attribute__((format(printf, 3, 4)));
static sv_error_t *lerr(const loader_t *L, struct fy_node *at, const char *fmt,
			...)
{
	va_list ap;
	va_start(ap, fmt);
	sv_error_t *err = sv_error_newv(SV_ERR_CONFIG, fmt, ap);
	va_end(ap);
	int line = node_line(at);
	if (line > 0) {
		char *m = NULL;
		if (asprintf(&m, "%s (line %d)", err->message, line) < 0)
			abort();
		free(err->message);
		err->message = m;
	}
	return sv_error_prefix(err, "%s '%s'", L->what, L->path);
}

/* The text of a scalar node, NUL-terminated and owned by the caller, or NULL
 * when n is not a scalar. */
static char *scalar_dup(struct fy_node *n)
{
	if (!n || !fy_node_is_scalar(n))
		return NULL;
	size_t len = 0;
	const char *s = fy_node_get_scalar(n, &len);
	return sv_strndup(s ? s : "", s ? len : 0);
}

/* Whether n is absent or a YAML null (`key:`, `~`, `null`). */
static bool is_null(struct fy_node *n)
{
	if (!n)
		return true;
	if (!fy_node_is_scalar(n) || fy_node_get_style(n) != FYNS_PLAIN)
		return false;
	size_t len = 0;
	const char *s = fy_node_get_scalar(n, &len);
	return len == 0 || (len == 1 && s[0] == '~') ||
		(len == 4 &&
		 (memcmp(s, "null", 4) == 0 || memcmp(s, "Null", 4) == 0 ||
		  memcmp(s, "NULL", 4) == 0));
}

/* A required non-empty string at key path kp. */
static sv_error_t *get_str(const loader_t *L, struct fy_node *key,
			   struct fy_node *v, const char *kp, char **out)
{
	if (is_null(v))
		return lerr(L, key, "'%s' must not be empty", kp);
	char *s = scalar_dup(v);
	if (!s)
		return lerr(L, key, "'%s' must be a string", kp);
	if (!*s) {
		free(s);
		return lerr(L, key, "'%s' must not be empty", kp);
	}
	*out = s;
	return NULL;
}

/* Read the mapping key k into a fresh string; keys must be scalars. */
static sv_error_t *get_key(const loader_t *L, struct fy_node *k,
			   const char *parent, char **out)
{
	char *s = scalar_dup(k);
	if (!s || !*s) {
		free(s);
		if (parent)
			return lerr(L, NULL,
				    "'%s' has a key that is not a "
				    "non-empty string",
				    parent);
		return lerr(L, NULL, "top-level key is not a non-empty string");
	}
	*out = s;
	return NULL;
}

static bool name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
		      *s == '.'))
			return false;
	return true;
}

static void output_nothing(struct fy_diag *diag, void *user, const char *buf,
			   size_t len)
{
	SV_UNUSED(diag);
	SV_UNUSED(user);
	SV_UNUSED(buf);
	SV_UNUSED(len);
}

#define CONFIG_MAX_BYTES (1024 * 1024)

/* Whether n bytes at p are UTF-8 (no overlong forms, surrogates or code
 * points above U+10FFFF) holding no control character but tab, CR and LF.
 * Sets *line to the line of the first bad byte. */
static bool yaml_text_ok(const unsigned char *p, size_t n, int *line)
{
	*line = 1;
	for (size_t i = 0; i < n;) {
		unsigned c = p[i];
		if (c == '\n')
			(*line)++;
		if (c < 0x80) {
			if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') ||
			    c == 0x7f)
				return false;
			i++;
			continue;
		}
		size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
		if (!len || c > 0xf4 || i + len > n)
			return false;
		unsigned cp = c & (0x3f >> (len - 1));
		for (size_t k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

/* The whole file (at most CONFIG_MAX_BYTES), checked by yaml_text_ok. */
static sv_error_t *read_text_file(const loader_t *L, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	FILE *f = fopen(L->path, "r");
	if (!f) {
		int e = errno;
		return sv_error_set_cause(
			sv_error_new(SV_ERR_CONFIG, "cannot read %s '%s': %s",
				     L->what, L->path, strerror(e)),
			e, strerror(e));
	}
	size_t cap = 4096, n = 0, r;
	char *buf = sv_malloc(cap + 1);
	while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n > CONFIG_MAX_BYTES)
			break;
		if (n == cap)
			buf = sv_realloc(buf, (cap *= 2) + 1);
	}
	fclose(f);
	int line = 0;
	const char *why = n > CONFIG_MAX_BYTES ? "is larger than 1 MiB"
		: !yaml_text_ok((const unsigned char *)buf, n, &line)
		? "is not UTF-8 text (a NUL, control character or invalid "
		  "UTF-8 byte)"
		: NULL;
	if (why) {
		explicit_bzero(buf, n);
		free(buf);
		if (line > 0)
			return sv_error_new(SV_ERR_CONFIG,
					    "%s '%s': invalid YAML at line %d: "
					    "%s",
					    L->what, L->path, line, why);
		return sv_error_new(SV_ERR_CONFIG, "%s '%s' %s", L->what,
				    L->path, why);
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return NULL;
}

/* Parse path into a document. quote_diag: whether libfyaml's message may be
 * repeated (not for the secrets file). An empty file gives a document with
 * no root. */
static sv_error_t *parse_file(const loader_t *L, bool quote_diag,
			      struct fy_document **out)
{
	*out = NULL;
	/* Read once, whole, and check the bytes before libfyaml sees them:
	 * YAML is UTF-8 text, and libfyaml 0.8 loops forever on some invalid
	 * input (a directive followed by a stray byte, found by
	 * tests/fuzz/fuzz_config.c). */
	char *text = NULL;
	size_t tlen = 0;
	sv_error_t *rerr = read_text_file(L, &text, &tlen);
	if (rerr)
		return rerr;
	/* libfyaml yields no document (and no error text) for a stream
	 * without one; tell that apart from a failure by looking for any
	 * line that is not blank, a comment or a document marker. */
	bool blank = true;
	for (const char *line = text; blank && line < text + tlen;) {
		const char *nl = memchr(line, '\n',
					(size_t)(text + tlen - line));
		const char *end = nl ? nl : text + tlen;
		const char *p = line;
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (p < end && *p != '#' &&
		    !(end - p >= 3 &&
		      (!strncmp(p, "---", 3) || !strncmp(p, "...", 3))))
			blank = false;
		line = nl ? nl + 1 : end;
	}

	struct fy_diag_cfg dcfg;
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	dcfg.output_fn = output_nothing;
	dcfg.colorize = false;
	struct fy_diag *diag = fy_diag_create(&dcfg);
	if (!diag) {
		free(text);
		return sv_error_new(SV_ERR_CONFIG, "cannot read %s '%s'",
				    L->what, L->path);
	}
	fy_diag_set_collect_errors(diag, true);
	struct fy_parse_cfg pcfg = {
		.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG |
			FYPCF_RESOLVE_DOCUMENT,
		.diag = diag,
	};
	/* parsed from the file (the text checked above is only a check: the
	 * document would point into it) */
	struct fy_document *fyd = tlen
		? fy_document_build_from_file(&pcfg, L->path)
		: NULL;
	sv_error_t *err = NULL;
	void *it = NULL;
	struct fy_diag_error *de = fy_diag_errors_iterate(diag, &it);
	if (!fyd && !de && blank) {
		/* empty stream: no root, every default kept */
	} else if (!fyd || de) {
		if (de && quote_diag)
			err = sv_error_new(SV_ERR_CONFIG,
					   "%s '%s': invalid YAML at line %d "
					   "column %d: %s",
					   L->what, L->path, de->line + 1,
					   de->column + 1,
					   de->msg ? de->msg : "syntax error");
		else if (de)
			err = sv_error_new(SV_ERR_CONFIG,
					   "%s '%s': invalid YAML at line %d "
					   "column %d",
					   L->what, L->path, de->line + 1,
					   de->column + 1);
		else
			err = sv_error_new(SV_ERR_CONFIG,
					   "%s '%s': invalid YAML", L->what,
					   L->path);
		if (fyd)
			fy_document_destroy(fyd);
		fyd = NULL;
	}
	fy_diag_destroy(diag);
	explicit_bzero(text, tlen); /* may be the secrets file */
	free(text);
	*out = fyd;
	return err;
}

/* Append key=value to c's properties (both taken). */
static void add_prop(sv_cluster_t *c, char *key, char *value)
{
	c->props = sv_realloc(c->props, (c->nprops + 1) * sizeof(*c->props));
	c->props[c->nprops].key = key;
	c->props[c->nprops].value = value;
	c->nprops++;
}

static const sv_kv_t *find_prop(const sv_cluster_t *c, const char *key)
{
	for (size_t i = 0; i < c->nprops; i++)
		if (strcmp(c->props[i].key, key) == 0)
			return &c->props[i];
	return NULL;
}

/* A mapping of client properties (key → scalar) at key path kp into c.
 * secret: values are never put in messages (they never are anyway; this
 * only changes the wording). */
static sv_error_t *read_props(const loader_t *L, struct fy_node *key,
			      struct fy_node *map, const char *kp,
			      sv_cluster_t *c)
{
	if (is_null(map))
		return NULL;
	if (!fy_node_is_mapping(map))
		return lerr(L, key,
			    "'%s' must be a mapping of client "
			    "properties",
			    kp);
	void *it = NULL;
	struct fy_node_pair *pair;
	while ((pair = fy_node_mapping_iterate(map, &it))) {
		struct fy_node *k = fy_node_pair_key(pair);
		struct fy_node *v = fy_node_pair_value(pair);
		char *pk = NULL;
		sv_error_t *err = get_key(L, k, kp, &pk);
		if (err)
			return err;
		const char *why = sv_svconf_property_refused(pk);
		if (why) {
			err = lerr(L, k,
				   "property '%s.%s' is not allowed "
				   "(%s)",
				   kp, pk, why);
			free(pk);
			return err;
		}
		if (find_prop(c, pk)) {
			err = lerr(L, k, "property '%s.%s' is set twice", kp,
				   pk);
			free(pk);
			return err;
		}
		char *pv = NULL;
		if (is_null(v) || !(pv = scalar_dup(v))) {
			err = lerr(L, k,
				   "property '%s.%s' must have a scalar "
				   "value",
				   kp, pk);
			free(pk);
			return err;
		}
		add_prop(c, pk, pv);
	}
	return NULL;
}

/* bootstrap_servers: a string "h:p,h:p" or a list of "h:p". */
static sv_error_t *read_bootstrap(const loader_t *L, struct fy_node *key,
				  struct fy_node *v, const char *kp, char **out)
{
	if (v && fy_node_is_sequence(v)) {
		sv_buf_t b;
		sv_buf_init(&b);
		void *it = NULL;
		struct fy_node *item;
		while ((item = fy_node_sequence_iterate(v, &it))) {
			char *s = NULL;
			sv_error_t *err = get_str(L, key, item, kp, &s);
			if (err) {
				sv_buf_release(&b);
				return err;
			}
			if (b.len)
				sv_buf_putc(&b, ',');
			sv_buf_puts(&b, s);
			free(s);
		}
		if (!b.len) {
			sv_buf_release(&b);
			return lerr(L, key, "'%s' must not be empty", kp);
		}
		*out = sv_buf_detach(&b);
		return NULL;
	}
	return get_str(L, key, v, kp, out);
}

/* One cluster profile: clusters.<name>. *credentials gets the secrets entry
 * it names, or NULL. */
static sv_error_t *read_cluster(const loader_t *L, struct fy_node *namek,
				const char *name, struct fy_node *map,
				sv_cluster_t *c, char **credentials)
{
	char kp[256];
	*credentials = NULL;
	if (!name)
		return lerr(L, namek, "cluster name must be a string");
	c->name = sv_strdup(name);
	snprintf(kp, sizeof(kp), "clusters.%.200s", name);
	if (!name_ok(name))
		return lerr(L, namek,
			    "cluster name '%s' must be letters, "
			    "digits, '-', '_' or '.'",
			    name);
	if (!map || !fy_node_is_mapping(map))
		return lerr(L, namek, "'%s' must be a mapping", kp);

	void *it = NULL;
	struct fy_node_pair *pair;
	while ((pair = fy_node_mapping_iterate(map, &it))) {
		struct fy_node *k = fy_node_pair_key(pair);
		struct fy_node *v = fy_node_pair_value(pair);
		char *key = NULL, sub[320];
		sv_error_t *err = get_key(L, k, kp, &key);
		if (err)
			return err;
		snprintf(sub, sizeof(sub), "%s.%s", kp, key);
		if (strcmp(key, "bootstrap_servers") == 0) {
			free(c->bootstrap);
			c->bootstrap = NULL;
			err = read_bootstrap(L, k, v, sub, &c->bootstrap);
		} else if (strcmp(key, "properties") == 0) {
			err = read_props(L, k, v, sub, c);
		} else if (strcmp(key, "credentials") == 0) {
			free(*credentials);
			*credentials = NULL;
			err = get_str(L, k, v, sub, credentials);
		} else {
			err = lerr(L, k, "unknown key '%s'", sub);
		}
		free(key);
		if (err)
			return err;
	}
	if (!c->bootstrap)
		return lerr(L, namek, "'%s.bootstrap_servers' is required", kp);
	return NULL;
}

/* Resolve secrets_file against the directory of the config file. */
static char *resolve_relative(const char *config_path, const char *p)
{
	if (p[0] == '/')
		return sv_strdup(p);
	char *copy = sv_strdup(config_path);
	char *r = NULL;
	if (asprintf(&r, "%s/%s", dirname(copy), p) < 0)
		abort();
	free(copy);
	return r;
}

/* Add the properties of secrets entry `credentials` to c. The secrets file
 * is read once per load (doc cached by the caller). */
static sv_error_t *apply_credentials(const loader_t *SL,
				     struct fy_document *sdoc,
				     const char *credentials, sv_cluster_t *c)
{
	struct fy_node *root = sdoc ? fy_document_root(sdoc) : NULL;
	struct fy_node *entry = NULL;
	if (root && fy_node_is_mapping(root)) {
		void *it = NULL;
		struct fy_node_pair *pair;
		while ((pair = fy_node_mapping_iterate(root, &it))) {
			char *k = scalar_dup(fy_node_pair_key(pair));
			bool match = k && strcmp(k, credentials) == 0;
			free(k);
			if (match) {
				entry = fy_node_pair_value(pair);
				break;
			}
		}
	}
	if (!entry)
		return lerr(SL, NULL, "no entry '%s' (named by cluster '%s')",
			    credentials, c->name);
	if (!fy_node_is_mapping(entry))
		return lerr(SL, NULL,
			    "entry '%s' must be a mapping of client "
			    "properties",
			    credentials);
	void *it = NULL;
	struct fy_node_pair *pair;
	while ((pair = fy_node_mapping_iterate(entry, &it))) {
		struct fy_node *k = fy_node_pair_key(pair);
		struct fy_node *v = fy_node_pair_value(pair);
		char *pk = NULL;
		sv_error_t *err = get_key(SL, k, credentials, &pk);
		if (err)
			return err;
		const char *why = sv_svconf_property_refused(pk);
		if (why)
			err = lerr(SL, k,
				   "property '%s.%s' is not allowed "
				   "(%s)",
				   credentials, pk, why);
		else if (find_prop(c, pk))
			err = lerr(SL, k,
				   "property '%s' of entry '%s' is also "
				   "set in cluster '%s' properties",
				   pk, credentials, c->name);
		else if (is_null(v) || !fy_node_is_scalar(v))
			err = lerr(SL, k,
				   "property '%s.%s' must have a scalar "
				   "value",
				   credentials, pk);
		if (err) {
			free(pk);
			return err;
		}
		add_prop(c, pk, scalar_dup(v));
	}
	return NULL;
}

static sv_error_t *read_secrets(const char *path, struct fy_document **out)
{
	loader_t SL = {path, "secrets file"};
	sv_error_t *err = parse_file(&SL, false, out);
	if (err)
		return err;
	struct fy_node *root = *out ? fy_document_root(*out) : NULL;
	if (root && !fy_node_is_mapping(root))
		return lerr(&SL, NULL,
			    "must be a mapping of entry name to "
			    "client properties");
	struct stat st;
	if (stat(path, &st) == 0 && (st.st_mode & S_IRWXO))
		sv_log(NULL, SV_LOG_WARN, "config",
		       "secrets file '%s' is accessible by other users; "
		       "chmod o-rwx it",
		       path);
	return NULL;
}

/* A file named by the config: a non-empty string, relative to the config
 * file's directory. */
static sv_error_t *get_path(const loader_t *L, struct fy_node *k,
			    struct fy_node *v, const char *kp, char **out)
{
	char *s = NULL;
	sv_error_t *err = get_str(L, k, v, kp, &s);
	if (err)
		return err;
	free(*out);
	*out = resolve_relative(L->path, s);
	free(s);
	return NULL;
}

/* A positive integer no larger than max. */
static sv_error_t *get_uint(const loader_t *L, struct fy_node *k,
			    struct fy_node *v, const char *kp, unsigned max,
			    unsigned *out)
{
	char *s = scalar_dup(v);
	char *end = NULL;
	errno = 0;
	unsigned long long n = s && *s && *s != '-' ? strtoull(s, &end, 10) : 0;
	bool ok = s && *s && end && !*end && !errno && n >= 1 && n <= max;
	free(s);
	if (!ok)
		return lerr(L, k, "'%s' must be an integer from 1 to %u", kp,
			    max);
	*out = (unsigned)n;
	return NULL;
}

/* auth:, tls: and limits: — mappings with a fixed set of keys. */
static sv_error_t *read_section(const loader_t *L, struct fy_node *sk,
				const char *section, struct fy_node *v,
				sv_svconf_t *tmp)
{
	if (!fy_node_is_mapping(v))
		return lerr(L, sk, "'%s' must be a mapping", section);
	void *it = NULL;
	struct fy_node_pair *pair;
	sv_error_t *err = NULL;
	sv_http_limits_t *lim = &tmp->limits;
	while (!err && (pair = fy_node_mapping_iterate(v, &it))) {
		struct fy_node *k = fy_node_pair_key(pair);
		struct fy_node *val = fy_node_pair_value(pair);
		char *key = NULL;
		if ((err = get_key(L, k, section, &key)))
			break;
		char kp[128];
		snprintf(kp, sizeof(kp), "%s.%s", section, key);
		if (!strcmp(kp, "auth.tokens_file"))
			err = get_path(L, k, val, kp, &tmp->tokens_file);
		else if (!strcmp(kp, "tls.cert_file"))
			err = get_path(L, k, val, kp, &tmp->tls_cert_file);
		else if (!strcmp(kp, "tls.key_file"))
			err = get_path(L, k, val, kp, &tmp->tls_key_file);
		else if (!strcmp(kp, "tls.client_ca_file"))
			err = get_path(L, k, val, kp, &tmp->tls_client_ca_file);
		else if (!strcmp(kp, "limits.max_connections"))
			err = get_uint(L, k, val, kp, 65536,
				       &lim->max_connections);
		else if (!strcmp(kp, "limits.max_connections_per_client"))
			err = get_uint(L, k, val, kp, 65536,
				       &lim->max_connections_per_client);
		else if (!strcmp(kp, "limits.idle_timeout_s"))
			err = get_uint(L, k, val, kp, 86400,
				       &lim->idle_timeout_s);
		else if (!strcmp(kp, "limits.request_timeout_s"))
			err = get_uint(L, k, val, kp, 86400,
				       &lim->request_timeout_s);
		else if (!strcmp(kp, "limits.max_header_bytes"))
			err = get_uint(L, k, val, kp, 1024 * 1024,
				       &lim->max_header_bytes);
		else if (!strcmp(kp, "limits.max_body_bytes"))
			err = get_uint(L, k, val, kp, 256 * 1024 * 1024,
				       &lim->max_body_bytes);
		else
			err = lerr(L, k, "unknown key '%s'", kp);
		free(key);
	}
	if (!err && !strcmp(section, "tls") &&
	    !tmp->tls_cert_file != !tmp->tls_key_file)
		err = lerr(L, sk, "'tls' needs both cert_file and key_file");
	if (!err && !strcmp(section, "tls") && tmp->tls_client_ca_file &&
	    !tmp->tls_cert_file)
		err = lerr(L, sk,
			   "'tls.client_ca_file' needs cert_file and key_file");
	if (!err && !strcmp(section, "limits") && lim->max_header_bytes < 1024)
		err = lerr(L, sk,
			   "'limits.max_header_bytes' must be at least "
			   "1024");
	return err;
}

/* distributed: name (required), node_id, advertised_url, cluster,
 * session_timeout_ms, max_poll_interval_ms, replication_factor,
 * state_budget_bytes_per_s (docs/cluster.md). Every error
 * names the field (distributed.<key>). */
static sv_error_t *read_distributed(const loader_t *L, struct fy_node *sk,
				    struct fy_node *v, sv_distconf_t *d)
{
	if (!fy_node_is_mapping(v))
		return lerr(L, sk, "'distributed' must be a mapping");
	sv_distconf_release(d);
	d->session_timeout_ms = 10000;
	d->max_poll_interval_ms = 300000;
	d->replication_factor = 1;
	d->state_budget_bytes_per_s = 2000000;
	void *it = NULL;
	struct fy_node_pair *pair;
	sv_error_t *err = NULL;
	while (!err && (pair = fy_node_mapping_iterate(v, &it))) {
		struct fy_node *k = fy_node_pair_key(pair);
		struct fy_node *val = fy_node_pair_value(pair);
		char *key = NULL, *str = NULL;
		if ((err = get_key(L, k, "distributed", &key)))
			break;
		char kp[128];
		snprintf(kp, sizeof(kp), "distributed.%s", key);
		char **dst = !strcmp(key, "name")        ? &d->name
			: !strcmp(key, "node_id")        ? &d->node_id
			: !strcmp(key, "advertised_url") ? &d->advertised_url
			: !strcmp(key, "cluster")        ? &d->cluster
							 : NULL;
		if (dst) {
			err = get_str(L, k, val, kp, &str);
			if (!err && dst != &d->advertised_url &&
			    (!name_ok(str) || strlen(str) > 64))
				err = lerr(L, k,
					   "'%s' must be 1 to 64 of "
					   "[A-Za-z0-9._-], not '%s'",
					   kp, str);
			if (!err && dst == &d->advertised_url &&
			    strncmp(str, "http://", 7) &&
			    strncmp(str, "https://", 8))
				err = lerr(L, k,
					   "'%s' must be an http:// or "
					   "https:// URL, not '%s'",
					   kp, str);
			if (!err) {
				free(*dst);
				*dst = str;
				str = NULL;
			}
		} else if (!strcmp(key, "session_timeout_ms")) {
			err = get_uint(L, k, val, kp, 1800000,
				       &d->session_timeout_ms);
			if (!err && d->session_timeout_ms < 6000)
				err = lerr(L, k,
					   "'%s' must be at least 6000 (the "
					   "broker's group.min.session."
					   "timeout.ms default)",
					   kp);
		} else if (!strcmp(key, "max_poll_interval_ms")) {
			err = get_uint(L, k, val, kp, 86400000,
				       &d->max_poll_interval_ms);
			if (!err && d->max_poll_interval_ms < 1000)
				err = lerr(L, k, "'%s' must be at least 1000",
					   kp);
		} else if (!strcmp(key, "replication_factor")) {
			err = get_uint(L, k, val, kp, 32767,
				       &d->replication_factor);
		} else if (!strcmp(key, "state_budget_bytes_per_s")) {
			unsigned budget = 0;
			err = get_uint(L, k, val, kp, 4000000000u, &budget);
			d->state_budget_bytes_per_s = budget;
		} else {
			err = lerr(L, k, "unknown key '%s'", kp);
		}
		if (err)
			sv_error_set_field(err, kp);
		free(str);
		free(key);
	}
	if (!err && !d->name)
		err = sv_error_set_field(
			lerr(L, sk, "'distributed.name' is required"),
			"distributed.name");
	if (!err && d->max_poll_interval_ms < d->session_timeout_ms)
		err = sv_error_set_field(
			lerr(L, sk,
			     "'distributed.max_poll_interval_ms' (%u) must be "
			     "at least 'distributed.session_timeout_ms' (%u)",
			     d->max_poll_interval_ms, d->session_timeout_ms),
			"distributed.max_poll_interval_ms");
	if (!err && !d->cluster)
		d->cluster = sv_strdup("default");
	if (err)
		sv_distconf_release(d);
	return err;
}

/* file_sink_roots: a list of absolute directory paths, each normalized
 * (no "." or ".." component, no trailing slash). */
static sv_error_t *read_roots(const loader_t *L, struct fy_node *k,
			      struct fy_node *v, sv_svconf_t *tmp,
			      bool *has_roots)
{
	if (!fy_node_is_sequence(v))
		return lerr(L, k,
			    "'file_sink_roots' must be a list of "
			    "directories");
	void *it = NULL;
	struct fy_node *e;
	while ((e = fy_node_sequence_iterate(v, &it))) {
		char *s = scalar_dup(e);
		if (!s || s[0] != '/' || strstr(s, "/./") ||
		    strstr(s, "/../") || strstr(s, "//") ||
		    (strlen(s) >= 2 && !strcmp(s + strlen(s) - 2, "/.")) ||
		    (strlen(s) >= 3 && !strcmp(s + strlen(s) - 3, "/.."))) {
			free(s);
			return lerr(L, k,
				    "'file_sink_roots' entries must be "
				    "absolute directory paths without '.' "
				    "or '..' components");
		}
		size_t n = strlen(s);
		while (n > 1 && s[n - 1] == '/')
			s[--n] = '\0';
		tmp->file_sink_roots = sv_realloc(tmp->file_sink_roots,
						  (tmp->nfile_sink_roots + 1) *
							  sizeof(char *));
		tmp->file_sink_roots[tmp->nfile_sink_roots++] = s;
	}
	*has_roots = true;
	return NULL;
}

/* ---- the tokens file (auth.h) ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static sv_error_t *read_principal(const loader_t *L, struct fy_node *nk,
				  const char *name, struct fy_node *v,
				  sv_principal_t *p)
{
	if (!fy_node_is_mapping(v))
		return lerr(L, nk,
			    "entry '%s' must be a mapping with role "
			    "and sha256",
			    name);
	bool has_role = false, has_hash = false;
	void *it = NULL;
	struct fy_node_pair *pair;
	while ((pair = fy_node_mapping_iterate(v, &it))) {
		struct fy_node *k = fy_node_pair_key(pair);
		char *key = scalar_dup(k);
		char *val = scalar_dup(fy_node_pair_value(pair));
		sv_error_t *err = NULL;
		if (key && !strcmp(key, "role")) {
			if (!sv_role_parse(val, &p->role))
				err = lerr(L, k,
					   "entry '%s': role must be viewer, "
					   "operator or admin",
					   name);
			has_role = true;
		} else if (key && !strcmp(key, "sha256")) {
			bool ok = val && strlen(val) == 64;
			for (size_t i = 0; ok && i < 32; i++) {
				int hi = hexval(val[2 * i]),
				    lo = hexval(val[2 * i + 1]);
				ok = hi >= 0 && lo >= 0;
				if (ok)
					p->sha256[i] = (uint8_t)(hi << 4 | lo);
			}
			if (!ok) /* never quote the value */
				err = lerr(L, k,
					   "entry '%s': sha256 must be 64 hex "
					   "digits (the SHA-256 of the token, "
					   "never the token)",
					   name);
			has_hash = true;
		} else {
			err = lerr(L, k, "entry '%s': unknown key '%s'", name,
				   key ? key : "");
		}
		free(key);
		if (val)
			explicit_bzero(val, strlen(val));
		free(val);
		if (err)
			return err;
	}
	if (!has_role || !has_hash)
		return lerr(L, nk, "entry '%s' needs both role and sha256",
			    name);
	return NULL;
}

sv_error_t *sv_tokens_load(const char *path, sv_tokens_t **out)
{
	*out = NULL;
	loader_t L = {path, "tokens file"};
	struct stat st;
	if (stat(path, &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)))
		return sv_error_new(SV_ERR_CONFIG,
				    "tokens file '%s' is accessible by group "
				    "or others; chmod 600 it (readable only "
				    "by the service user)",
				    path);
	struct fy_document *doc = NULL;
	sv_error_t *err = parse_file(&L, false, &doc);
	if (err)
		return err;
	struct fy_node *root = doc ? fy_document_root(doc) : NULL;
	sv_tokens_t *t = sv_calloc(1, sizeof(*t));
	if (!root || !fy_node_is_mapping(root))
		err = lerr(&L, NULL,
			   "must be a mapping of principal name to "
			   "{role, sha256}");
	void *it = NULL;
	struct fy_node_pair *pair;
	while (!err && (pair = fy_node_mapping_iterate(root, &it))) {
		struct fy_node *nk = fy_node_pair_key(pair);
		char *name = NULL;
		if ((err = get_key(&L, nk, NULL, &name)))
			break;
		if (!name_ok(name)) {
			err = lerr(&L, nk,
				   "principal name '%s' may only hold "
				   "letters, digits, '-', '_' and '.'",
				   name);
			free(name);
			break;
		}
		sv_principal_t p = {0};
		err = read_principal(&L, nk, name, fy_node_pair_value(pair),
				     &p);
		if (err) {
			free(name);
			break;
		}
		p.name = name;
		t->v = sv_realloc(t->v, (t->n + 1) * sizeof(*t->v));
		t->v[t->n++] = p;
	}
	if (!err && t->n == 0)
		err = lerr(&L, NULL, "holds no principal");
	if (doc)
		fy_document_destroy(doc);
	if (err) {
		sv_tokens_destroy(t);
		return err;
	}
	*out = t;
	return NULL;
}

/* Walk the top-level mapping into tmp; creds[i] names the secrets entry of
 * tmp->clusters[i] (or NULL). */
static sv_error_t *read_root(const loader_t *L, struct fy_node *root,
			     sv_svconf_t *tmp, char ***creds, bool *has_listen,
			     bool *has_roots)
{
	if (!root)
		return NULL; /* empty file: keep every default */
	if (!fy_node_is_mapping(root))
		return lerr(L, NULL, "top level must be a mapping");
	void *it = NULL;
	struct fy_node_pair *pair;
	while ((pair = fy_node_mapping_iterate(root, &it))) {
		struct fy_node *k = fy_node_pair_key(pair);
		struct fy_node *v = fy_node_pair_value(pair);
		char *key = NULL, *s = NULL;
		sv_error_t *err = get_key(L, k, NULL, &key);
		if (err)
			return err;
		if (strcmp(key, "listen") == 0) {
			err = get_str(L, k, v, key, &s);
			if (!err) {
				free(tmp->listen_host);
				tmp->listen_host = NULL;
				err = sv_svconf_parse_listen(s,
							     &tmp->listen_host,
							     &tmp->listen_port);
				if (err)
					sv_error_prefix(err, "%s '%s'", L->what,
							L->path);
				else
					*has_listen = true;
			}
		} else if (strcmp(key, "data_dir") == 0) {
			err = get_str(L, k, v, key, &s);
			if (!err) {
				free(tmp->data_dir);
				tmp->data_dir = s;
				s = NULL;
			}
		} else if (strcmp(key, "identity") == 0) {
			err = get_str(L, k, v, key, &s);
			if (!err) {
				free(tmp->identity);
				tmp->identity = s;
				s = NULL;
			}
		} else if (strcmp(key, "shutdown_timeout_ms") == 0) {
			err = get_str(L, k, v, key, &s);
			char *end = NULL;
			long long ms = err ? 0 : strtoll(s, &end, 10);
			if (!err &&
			    (end == s || *end || ms < 0 || ms > 86400000LL))
				err = lerr(L, k,
					   "'shutdown_timeout_ms' must be "
					   "milliseconds from 0 to 86400000, "
					   "not '%s'",
					   s);
			if (!err)
				tmp->shutdown_timeout_ms = ms;
		} else if (strcmp(key, "secrets_file") == 0) {
			err = get_str(L, k, v, key, &s);
			if (!err) {
				free(tmp->secrets_path);
				tmp->secrets_path = resolve_relative(L->path,
								     s);
			}
		} else if (strcmp(key, "auth") == 0 ||
			   strcmp(key, "tls") == 0 ||
			   strcmp(key, "limits") == 0) {
			err = read_section(L, k, key, v, tmp);
		} else if (strcmp(key, "distributed") == 0) {
			err = read_distributed(L, k, v, &tmp->dist);
		} else if (strcmp(key, "file_sink_roots") == 0) {
			err = read_roots(L, k, v, tmp, has_roots);
		} else if (strcmp(key, "clusters") == 0) {
			if (is_null(v)) {
				/* no profiles */
			} else if (!fy_node_is_mapping(v)) {
				err = lerr(L, k,
					   "'clusters' must be a mapping "
					   "of profile name to profile");
			} else {
				void *cit = NULL;
				struct fy_node_pair *cp;
				while (!err &&
				       (cp = fy_node_mapping_iterate(v,
								     &cit))) {
					struct fy_node *nk = fy_node_pair_key(
						cp);
					char *name = NULL, *cred = NULL;
					err = get_key(L, nk, "clusters", &name);
					if (err)
						break;
					sv_cluster_t c = {0};
					err = read_cluster(
						L, nk, name,
						fy_node_pair_value(cp), &c,
						&cred);
					free(name);
					if (err) {
						cluster_release(&c);
						free(cred);
						break;
					}
					*creds = sv_realloc(
						*creds,
						(tmp->nclusters + 1) *
							sizeof(**creds));
					(*creds)[tmp->nclusters] = cred;
					put_cluster(tmp, &c);
				}
			}
		} else {
			err = lerr(L, k, "unknown key '%s'", key);
		}
		free(s);
		free(key);
		if (err)
			return err;
	}
	return NULL;
}

sv_error_t *sv_svconf_load(sv_svconf_t *conf, const char *path)
{
	loader_t L = {path, "config"};
	struct fy_document *doc = NULL, *sdoc = NULL;
	sv_svconf_t tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.shutdown_timeout_ms = -1; /* not in the file */
	char **creds = NULL;
	bool has_listen = false, has_roots = false;
	tmp.limits = conf->limits;

	sv_error_t *err = parse_file(&L, true, &doc);
	if (!err)
		err = read_root(&L, doc ? fy_document_root(doc) : NULL, &tmp,
				&creds, &has_listen, &has_roots);

	/* Credentials: from this file's secrets_file, or one set before. */
	const char *spath = tmp.secrets_path ? tmp.secrets_path
					     : conf->secrets_path;
	for (size_t i = 0; !err && i < tmp.nclusters; i++) {
		if (!creds[i])
			continue;
		if (!spath) {
			err = lerr(&L, NULL,
				   "cluster '%s' names credentials "
				   "'%s' but no secrets_file is set",
				   tmp.clusters[i].name, creds[i]);
			break;
		}
		loader_t SL = {spath, "secrets file"};
		if (!sdoc)
			err = read_secrets(spath, &sdoc);
		if (!err)
			err = apply_credentials(&SL, sdoc, creds[i],
						&tmp.clusters[i]);
	}
	if (!err && tmp.secrets_path && !sdoc)
		err = read_secrets(tmp.secrets_path, &sdoc); /* validate it */

	if (!err) {
		if (has_listen) {
			free(conf->listen_host);
			conf->listen_host = tmp.listen_host;
			conf->listen_port = tmp.listen_port;
			tmp.listen_host = NULL;
		}
#define MOVE(f)                          \
	do {                             \
		if (tmp.f) {             \
			free(conf->f);   \
			conf->f = tmp.f; \
			tmp.f = NULL;    \
		}                        \
	} while (0)
		if (tmp.shutdown_timeout_ms >= 0)
			conf->shutdown_timeout_ms = tmp.shutdown_timeout_ms;
		MOVE(data_dir);
		MOVE(identity);
		MOVE(secrets_path);
		MOVE(tokens_file);
		MOVE(tls_cert_file);
		MOVE(tls_key_file);
		MOVE(tls_client_ca_file);
#undef MOVE
		if (has_roots) {
			free_roots(conf);
			conf->file_sink_roots = tmp.file_sink_roots;
			conf->nfile_sink_roots = tmp.nfile_sink_roots;
			tmp.file_sink_roots = NULL;
			tmp.nfile_sink_roots = 0;
		}
		conf->limits = tmp.limits;
		if (tmp.dist.name) {
			sv_distconf_release(&conf->dist);
			conf->dist = tmp.dist;
			memset(&tmp.dist, 0, sizeof(tmp.dist));
		}
		for (size_t i = 0; i < tmp.nclusters; i++)
			put_cluster(conf, &tmp.clusters[i]);
	}
	for (size_t i = 0; i < tmp.nclusters; i++) {
		free(creds[i]);
		if (tmp.clusters[i].name)
			cluster_release(&tmp.clusters[i]);
	}
	free(creds);
	/* clusters were moved out (names NULL) or released above */
	free(tmp.clusters);
	tmp.clusters = NULL;
	tmp.nclusters = 0;
	sv_svconf_release(&tmp);
	if (sdoc)
		fy_document_destroy(sdoc);
	if (doc)
		fy_document_destroy(doc);
	return err;
}
