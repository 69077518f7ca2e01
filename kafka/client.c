/* client.c — see client.h.
 *
 * The module's context (the client's rd_kafka opaque) keeps what the
 * callbacks need after creation: the log context, the role for messages,
 * the caller's opaque and callbacks, and the values to scrub. Scrubbing
 * covers the values of secret-bearing properties (a key that names a
 * password, secret, token, key, credential or JAAS config, any length);
 * other values are not secrets and are left as librdkafka wrote them.
 * Log lines are rare, so the scrub is a plain search per value.
 *
 * A memory budget (sv_kafka_budget) turns into queue sizes that sit between
 * the caller's tuning and the profile's properties: a profile that sets a
 * queue size explicitly still wins, the fixed maxima of the tuning do not. */
#include "kafka/client.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

typedef struct kctx {
	const sv_logctx_t *log;
	char *role;
	void *opaque;
	void (*on_error)(void *opaque, rd_kafka_resp_err_t err,
			 const char *reason);
	void (*on_delivery)(void *opaque, const rd_kafka_message_t *m);
	void (*on_rebalance)(void *opaque, rd_kafka_t *rk,
			     rd_kafka_resp_err_t err,
			     rd_kafka_topic_partition_list_t *parts);
	char **secrets;
	size_t nsecrets;
} kctx_t;

sv_loglevel_t sv_kafka_log_level(int level)
{
	if (level <= 3)
		return SV_LOG_ERROR;
	if (level == 4)
		return SV_LOG_WARN;
	if (level <= 6)
		return SV_LOG_INFO;
	return SV_LOG_DEBUG;
}

static bool secret_key(const char *key)
{
	static const char *const words[] = {
		"password",
		"secret",
		"token",
		"key",
		"credential",
		"jaas",
		"oauthbearer.config",
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(words); i++)
		if (strstr(key, words[i]))
			return true;
	return false;
}

/* Replace every secret value in text by "***" into out (n bytes). The
 * whole text is scrubbed before it is cut to n, so a secret at the cut
 * never survives in part. */
static char *scrub(const kctx_t *c, const char *text, char *out, size_t n)
{
	if (!n)
		return out;
	text = text ? text : "";
	if (!c || !c->nsecrets) {
		snprintf(out, n, "%s", text);
		return out;
	}
	/* "***" may be longer than a short value: at most 3 bytes a byte */
	size_t cap = 3 * strlen(text) + 1;
	char *a = sv_malloc(cap), *b = sv_malloc(cap);
	snprintf(a, cap, "%s", text);
	for (size_t s = 0; s < c->nsecrets; s++) {
		const char *v = c->secrets[s];
		size_t vl = strlen(v), o = 0;
		const char *from = a, *p;
		while ((p = strstr(from, v)) &&
		       o + (size_t)(p - from) + 3 < cap) {
			memcpy(b + o, from, (size_t)(p - from));
			o += (size_t)(p - from);
			memcpy(b + o, "***", 3);
			o += 3;
			from = p + vl;
		}
		snprintf(b + o, cap - o, "%s", from);
		char *t = a;
		a = b;
		b = t;
	}
	snprintf(out, n, "%s", a);
	free(a);
	free(b);
	return out;
}

/* thread: librdkafka internal threads */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
		   const char *buf)
{
	const kctx_t *c = rd_kafka_opaque(rk);
	char line[1024];
	scrub(c, buf, line, sizeof(line));
	sv_log(c ? c->log : NULL, sv_kafka_log_level(level), "kafka",
	       "rdkafka %s: %s", fac, line);
}

/* thread: the one serving the client's queue */
static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	kctx_t *c = opaque;
	char line[1024];
	SV_UNUSED(rk);
	scrub(c, reason, line, sizeof(line));
	sv_log(c->log,
	       err == RD_KAFKA_RESP_ERR__FATAL ? SV_LOG_ERROR : SV_LOG_WARN,
	       "kafka", "%s: %s: %s", c->role, rd_kafka_err2name(err), line);
	if (c->on_error)
		c->on_error(c->opaque, err, line);
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	kctx_t *c = opaque;
	SV_UNUSED(rk);
	c->on_delivery(c->opaque, m);
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
			 rd_kafka_topic_partition_list_t *parts, void *opaque)
{
	kctx_t *c = opaque;
	c->on_rebalance(c->opaque, rk, err, parts);
}

static void ctx_free(kctx_t *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nsecrets; i++)
		free(c->secrets[i]);
	free(c->secrets);
	free(c->role);
	free(c);
}

static sv_error_t *set(rd_kafka_conf_t *kc, const char *cluster,
		       const char *key, const char *value)
{
	char errstr[512];
	if (rd_kafka_conf_set(kc, key, value, errstr, sizeof(errstr)) ==
	    RD_KAFKA_CONF_OK)
		return NULL;
	/* Name the key only: librdkafka's text may quote a secret value. */
	return sv_error_new(SV_ERR_CONFIG,
			    "invalid kafka client property '%s' for cluster "
			    "'%s'",
			    key, cluster);
}

/* Every client's defaults, before the caller's tuning. librdkafka backs
 * off reconnecting to a lost broker up to 10 s, so a job recovered about 9 s
 * after a broker bounce or a network cut even when the broker was back
 * within a second (docs/reliability.md); 1 s keeps a dead broker's retries
 * cheap and the recovery close to the outage. */
static const sv_kafka_prop_t module_defaults[] = {
	{"reconnect.backoff.max.ms", "1000"},
};

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void budget_put(sv_kafka_budget_t *b, const char *key, int64_t v)
{
	size_t i = b->nprops++;
	snprintf(b->values[i], sizeof(b->values[i]), "%lld", (long long)v);
	b->props[i] = (sv_kafka_prop_t){key, b->values[i]};
}

void sv_kafka_budget(rd_kafka_type_t type, int64_t budget,
		     sv_kafka_budget_t *out)
{
	memset(out, 0, sizeof(*out));
	if (budget <= 0)
		return;
	int64_t queue = budget / 3;
	int64_t kbytes = clamp64(queue / 1024, 64, 2097151);
	int64_t msgs = clamp64(queue / SV_KAFKA_MSG_OVERHEAD, 1000, 10000000);
	if (type == RD_KAFKA_CONSUMER) {
		/* librdkafka raises fetch.max.bytes to message.max.bytes
		 * (1,000,000) unless it is set; set it no lower */
		int64_t fetch = clamp64(budget / 6, 1000000, 64 << 20);
		budget_put(out, "queued.max.messages.kbytes", kbytes);
		budget_put(out, "queued.min.messages", msgs);
		budget_put(out, "fetch.max.bytes", fetch);
		budget_put(out, "fetch.message.max.bytes",
			   fetch < (1 << 20) ? fetch : 1 << 20);
		/* the queue's payload, the op of each message, a fetch in
		 * flight and the one being parsed */
		out->reserved_bytes = kbytes * 1024 +
			msgs * SV_KAFKA_MSG_OVERHEAD + 2 * fetch;
	} else {
		int64_t batch = clamp64(budget / 16, 64 << 10, 1 << 20);
		budget_put(out, "queue.buffering.max.kbytes", kbytes);
		budget_put(out, "queue.buffering.max.messages", msgs);
		budget_put(out, "batch.size", batch);
		out->reserved_bytes = kbytes * 1024 +
			msgs * SV_KAFKA_MSG_OVERHEAD + batch;
	}
}

sv_error_t *sv_kafka_client_new(const sv_kafka_client_conf_t *conf,
				rd_kafka_t **out)
{
	static const sv_cluster_t none = {.name = "(none)"};
	const sv_cluster_t *cl = conf->cluster ? conf->cluster : &none;
	const char *name = cl->name ? cl->name : "(none)";
	*out = NULL;
	if (conf->cluster && (!cl->bootstrap || !*cl->bootstrap))
		return sv_error_new(SV_ERR_BINDING,
				    "cluster '%s' has no bootstrap servers",
				    name);
	kctx_t *c = sv_calloc(1, sizeof(*c));
	c->log = conf->log;
	c->role = sv_strdup(conf->role ? conf->role : "kafka client");
	c->opaque = conf->opaque;
	c->on_error = conf->on_error;
	c->on_delivery = conf->on_delivery;
	c->on_rebalance = conf->on_rebalance;
	c->secrets = sv_calloc(cl->nprops ? cl->nprops : 1, sizeof(char *));
	for (size_t i = 0; i < cl->nprops; i++)
		if (secret_key(cl->props[i].key) && *cl->props[i].value &&
		    strspn(cl->props[i].value, "*") !=
			    strlen(cl->props[i].value))
			c->secrets[c->nsecrets++] = sv_strdup(
				cl->props[i].value);

	rd_kafka_conf_t *kc = rd_kafka_conf_new();
	sv_error_t *err = NULL;
	for (size_t i = 0; !err && i < SV_ARRAY_LEN(module_defaults); i++)
		err = set(kc, name, module_defaults[i].key,
			  module_defaults[i].value);
	for (size_t i = 0; !err && i < conf->ntuning; i++)
		err = set(kc, name, conf->tuning[i].key, conf->tuning[i].value);
	sv_kafka_budget_t budget;
	sv_kafka_budget(conf->type, conf->memory_budget, &budget);
	for (size_t i = 0; !err && i < budget.nprops; i++)
		err = set(kc, name, budget.props[i].key, budget.props[i].value);
	if (!err && conf->client_id)
		err = set(kc, name, "client.id", conf->client_id);
	for (size_t i = 0; !err && i < cl->nprops; i++)
		err = set(kc, name, cl->props[i].key, cl->props[i].value);
	if (!err && cl->bootstrap)
		err = set(kc, name, "bootstrap.servers", cl->bootstrap);
	for (size_t i = 0; !err && i < conf->nfixed; i++)
		err = set(kc, name, conf->fixed[i].key, conf->fixed[i].value);
	if (err) {
		rd_kafka_conf_destroy(kc);
		ctx_free(c);
		return err;
	}
	rd_kafka_conf_set_opaque(kc, c);
	rd_kafka_conf_set_log_cb(kc, log_cb);
	rd_kafka_conf_set_error_cb(kc, error_cb);
	if (conf->on_delivery)
		rd_kafka_conf_set_dr_msg_cb(kc, dr_cb);
	if (conf->on_rebalance)
		rd_kafka_conf_set_rebalance_cb(kc, rebalance_cb);
	char errstr[512];
	rd_kafka_t *rk = rd_kafka_new(conf->type, kc, errstr, sizeof(errstr));
	if (!rk) {
		/* rd_kafka_new takes conf only on success */
		rd_kafka_conf_destroy(kc);
		ctx_free(c);
		return sv_error_new(SV_ERR_CONFIG,
				    "cannot create a kafka %s for cluster '%s' "
				    "(check its client properties)",
				    conf->type == RD_KAFKA_CONSUMER
					    ? "consumer"
					    : "producer",
				    name);
	}
	*out = rk;
	return NULL;
}

void sv_kafka_client_destroy(rd_kafka_t *rk)
{
	if (!rk)
		return;
	kctx_t *c = rd_kafka_opaque(rk);
	rd_kafka_destroy(rk);
	ctx_free(c);
}

void *sv_kafka_client_opaque(const rd_kafka_t *rk)
{
	const kctx_t *c = rd_kafka_opaque(rk);
	return c ? c->opaque : NULL;
}

char *sv_kafka_client_scrub(const rd_kafka_t *rk, const char *text, char *out,
			    size_t n)
{
	return scrub(rk ? rd_kafka_opaque(rk) : NULL, text, out, n);
}

sv_error_t *sv_kafka_error(const rd_kafka_t *rk, const sv_logctx_t *log,
			   sv_errcat_t cat, rd_kafka_resp_err_t code,
			   const char *cause, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sv_error_t *err = sv_error_newv(cat, fmt, ap);
	va_end(ap);
	if (log && log->job_id)
		sv_error_set_job(err, log->job_id, log->attempt);
	if (code || cause) {
		char text[512];
		sv_kafka_client_scrub(rk,
				      cause ? cause : rd_kafka_err2str(code),
				      text, sizeof(text));
		sv_error_set_cause(err, code, text);
	}
	return err;
}
