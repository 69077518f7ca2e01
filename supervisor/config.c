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
#include <sys/stat.h>

#include <libfyaml.h>

#include "core/log.h"
#include "core/util.h"
#include "supervisor/config_int.h"

/* ---- the struct ---- */

void sv_svconf_init(sv_svconf_t *conf)
{
	memset(conf, 0, sizeof(*conf));
	conf->listen_host = sv_strdup("127.0.0.1");
	conf->listen_port = 8080;
	conf->data_dir = sv_strdup("./streamvisor-data");
	conf->shutdown_timeout_ms = SV_SHUTDOWN_TIMEOUT_DEFAULT_MS;
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
	for (size_t i = 0; i < conf->nclusters; i++)
		cluster_release(&conf->clusters[i]);
	free(conf->clusters);
	memset(conf, 0, sizeof(*conf));
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

/* Parse path into a document. quote_diag: whether libfyaml's message may be
 * repeated (not for the secrets file). An empty file gives a document with
 * no root. */
static sv_error_t *parse_file(const loader_t *L, bool quote_diag,
			      struct fy_document **out)
{
	*out = NULL;
	FILE *f = fopen(L->path, "r");
	if (!f) {
		int e = errno;
		return sv_error_set_cause(
			sv_error_new(SV_ERR_CONFIG, "cannot read %s '%s': %s",
				     L->what, L->path, strerror(e)),
			e, strerror(e));
	}
	/* libfyaml yields no document (and no error text) for a stream
	 * without one; tell that apart from a failure by looking for any
	 * line that is not blank, a comment or a document marker. */
	bool blank = true;
	char line[256];
	bool at_line_start = true;
	while (blank && fgets(line, sizeof(line), f)) {
		if (at_line_start) {
			const char *p = line + strspn(line, " \t\r\n");
			if (*p && *p != '#' && strncmp(p, "---", 3) != 0 &&
			    strncmp(p, "...", 3) != 0)
				blank = false;
		}
		at_line_start = strchr(line, '\n') != NULL;
	}
	fclose(f);

	struct fy_diag_cfg dcfg;
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	dcfg.output_fn = output_nothing;
	dcfg.colorize = false;
	struct fy_diag *diag = fy_diag_create(&dcfg);
	if (!diag)
		return sv_error_new(SV_ERR_CONFIG, "cannot read %s '%s'",
				    L->what, L->path);
	fy_diag_set_collect_errors(diag, true);
	struct fy_parse_cfg pcfg = {
		.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG |
			FYPCF_RESOLVE_DOCUMENT,
		.diag = diag,
	};
	struct fy_document *fyd = fy_document_build_from_file(&pcfg, L->path);
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

/* Walk the top-level mapping into tmp; creds[i] names the secrets entry of
 * tmp->clusters[i] (or NULL). */
static sv_error_t *read_root(const loader_t *L, struct fy_node *root,
			     sv_svconf_t *tmp, char ***creds, bool *has_listen)
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
	bool has_listen = false;

	sv_error_t *err = parse_file(&L, true, &doc);
	if (!err)
		err = read_root(&L, doc ? fy_document_root(doc) : NULL, &tmp,
				&creds, &has_listen);

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
#undef MOVE
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
