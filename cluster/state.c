/* state.c — the task state topic of distributed mode (state.h): its record
 * codec, its creation, and the reader a new owner restores from.
 *
 * The writer is the partition owner's transactional producer (its sink's
 * write_keyed, supervisor/worker.c), so snapshots become visible exactly
 * when the checkpoint's output and offsets do. The reader here is a plain
 * consumer without a group, assigned the one state partition from its
 * beginning with isolation.level=read_committed: aborted snapshots are
 * never seen, and the compacted log holds at least the newest committed
 * value of every key (the cleaner never passes the last stable offset).
 * It keeps the newest chunk per index and stops at the manifest whose tag
 * the committed offset names once every chunk of it is there; chunks are
 * written before their manifest in the same transaction, so they come
 * first. At the log's end without the manifest it keeps polling until its
 * deadline: the transaction's markers can land a moment after the offsets
 * became stable. */
#define _GNU_SOURCE
#include "cluster/state.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "core/log.h"
#include "kafka/admin.h"
#include "kafka/client.h"

#define STATE_TIMEOUT_MS 10000
#define STATE_MAGIC "SVST"

void sv_state_topic(const char *cluster, const char *job, char *out, size_t n)
{
	snprintf(out, n, "_streamvisor.%s.%s.state", cluster, job);
}

/* ---- codec ---- */

uint64_t sv_state_fnv(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

int32_t sv_state_nchunks(size_t len)
{
	return len ? (int32_t)((len + SV_STATE_CHUNK - 1) / SV_STATE_CHUNK) : 1;
}

void sv_state_manifest_key(int32_t partition, char *out, size_t n)
{
	snprintf(out, n, "p%d/manifest", (int)partition);
}

void sv_state_chunk_key(int32_t partition, int32_t j, char *out, size_t n)
{
	snprintf(out, n, "p%d/c%d", (int)partition, (int)j);
}

int sv_state_parse_key(const char *key, size_t len, int32_t *partition,
		       int32_t *j)
{
	char buf[64];
	if (!key || len == 0 || len >= sizeof(buf))
		return 0;
	memcpy(buf, key, len);
	buf[len] = 0;
	int p, c, used = 0;
	if (sscanf(buf, "p%d/manifest%n", &p, &used) == 1 &&
	    (size_t)used == len && p >= 0) {
		*partition = p;
		return 'm';
	}
	used = 0;
	if (sscanf(buf, "p%d/c%d%n", &p, &c, &used) == 2 &&
	    (size_t)used == len && p >= 0 && c >= 0) {
		*partition = p;
		*j = c;
		return 'c';
	}
	return 0;
}

void sv_state_encode_manifest(const sv_state_manifest_t *m, sv_buf_t *out)
{
	char fnv[24];
	snprintf(fnv, sizeof(fnv), "%016llx", (unsigned long long)m->fnv);
	json_t *o = json_pack(
		"{s:i, s:s, s:I, s:i, s:I, s:i, s:I, s:s}", "v", 1, "tag",
		m->tag, "checkpoint", (json_int_t)m->checkpoint, "partition",
		m->partition, "next_offset", (json_int_t)m->next_offset,
		"chunks", m->chunks, "bytes", (json_int_t)m->bytes, "fnv", fnv);
	char *s = json_dumps(o, JSON_COMPACT);
	sv_buf_puts(out, s);
	free(s);
	json_decref(o);
}

static sv_error_t *corrupt(const char *what)
{
	return sv_error_new(SV_ERR_CHECKPOINT,
			    "state topic record is corrupt: %s", what);
}

sv_error_t *sv_state_decode_manifest(const char *data, size_t len,
				     sv_state_manifest_t *m)
{
	memset(m, 0, sizeof(*m));
	json_error_t je;
	json_t *o = json_loadb(data, len, 0, &je);
	const char *tag = NULL, *fnv = NULL;
	json_int_t ck = 0, next = 0, bytes = 0;
	int v = 0, part = 0, chunks = 0;
	if (!o ||
	    json_unpack(o, "{s:i, s:s, s:I, s:i, s:I, s:i, s:I, s:s}", "v", &v,
			"tag", &tag, "checkpoint", &ck, "partition", &part,
			"next_offset", &next, "chunks", &chunks, "bytes",
			&bytes, "fnv", &fnv)) {
		json_decref(o);
		return corrupt("a manifest that is not the expected JSON");
	}
	sv_error_t *err = NULL;
	if (v != 1)
		err = corrupt("a manifest of an unknown version");
	else if (strlen(tag) >= sizeof(m->tag))
		err = corrupt("a manifest tag that is too long");
	else if (chunks < 1 || bytes < 0 ||
		 chunks != sv_state_nchunks((size_t)bytes))
		err = corrupt("a manifest whose chunk count does not fit its "
			      "size");
	if (!err) {
		snprintf(m->tag, sizeof(m->tag), "%s", tag);
		m->checkpoint = ck;
		m->partition = part;
		m->next_offset = next;
		m->chunks = chunks;
		m->bytes = bytes;
		m->fnv = strtoull(fnv, NULL, 16);
	}
	json_decref(o);
	return err;
}

void sv_state_encode_chunk(const char *tag, int32_t j, const char *payload,
			   size_t len, sv_buf_t *out)
{
	size_t tl = strlen(tag);
	unsigned char h[6];
	sv_buf_append(out, STATE_MAGIC, 4);
	h[0] = (unsigned char)(tl >> 8);
	h[1] = (unsigned char)tl;
	sv_buf_append(out, h, 2);
	sv_buf_append(out, tag, tl);
	uint32_t u = (uint32_t)j;
	unsigned char ib[4] = {(unsigned char)(u >> 24),
			       (unsigned char)(u >> 16),
			       (unsigned char)(u >> 8), (unsigned char)u};
	sv_buf_append(out, ib, 4);
	sv_buf_append(out, payload, len);
}

sv_error_t *sv_state_decode_chunk(const char *data, size_t len, char *tag,
				  size_t tagcap, int32_t *j,
				  const char **payload, size_t *plen)
{
	const unsigned char *p = (const unsigned char *)data;
	if (len < 10 || memcmp(data, STATE_MAGIC, 4))
		return corrupt("a chunk without its header");
	size_t tl = ((size_t)p[4] << 8) | p[5];
	if (len < 10 + tl || tl >= tagcap)
		return corrupt("a chunk whose tag does not fit");
	memcpy(tag, data + 6, tl);
	tag[tl] = 0;
	const unsigned char *ib = p + 6 + tl;
	*j = (int32_t)(((uint32_t)ib[0] << 24) | ((uint32_t)ib[1] << 16) |
		       ((uint32_t)ib[2] << 8) | ib[3]);
	*payload = data + 10 + tl;
	*plen = len - 10 - tl;
	if (*j < 0 || *plen > SV_STATE_CHUNK)
		return corrupt("a chunk index or size out of range");
	return NULL;
}

/* ---- topic ---- */

static sv_logctx_t state_log = {NULL, 0};

sv_error_t *sv_state_topic_ensure(const sv_cluster_t *kafka, const char *topic,
				  int partitions, int replication_factor)
{
	/* an existing topic must cover the source's partitions */
	sv_kafka_topic_spec_t spec = {
		.partitions = partitions,
		.replication_factor = replication_factor,
		.compact = true,
		.at_least = true,
	};
	return sv_kafka_topic_ensure_spec(kafka, topic, &spec, NULL);
}

/* ---- reader ---- */

typedef struct chunk {
	char tag[SV_STATE_TAG_MAX];
	sv_buf_t data;
	bool have;
} chunk_t;

typedef struct reader {
	chunk_t *c;
	int32_t nc;
	sv_state_manifest_t m;
	bool have_manifest;
} reader_t;

static chunk_t *chunk_at(reader_t *r, int32_t j)
{
	if (j >= r->nc) {
		int32_t n = j + 1 > r->nc * 2 ? j + 1 : r->nc * 2;
		r->c = sv_realloc(r->c, (size_t)n * sizeof(*r->c));
		memset(r->c + r->nc, 0, (size_t)(n - r->nc) * sizeof(*r->c));
		for (int32_t i = r->nc; i < n; i++)
			sv_buf_init(&r->c[i].data);
		r->nc = n;
	}
	return &r->c[j];
}

/* One record of the state partition into the reader; whether the wanted
 * manifest and all its chunks are in. */
static sv_error_t *take(reader_t *r, const sv_state_read_t *q,
			const rd_kafka_message_t *msg, bool *done)
{
	int32_t p = -1, j = -1;
	int kind = sv_state_parse_key(msg->key, msg->key_len, &p, &j);
	if (!kind || p != q->partition)
		return NULL;
	if (kind == 'c') {
		chunk_t *c = chunk_at(r, j);
		sv_buf_reset(&c->data);
		c->have = false;
		if (!msg->payload) /* tombstone */
			return NULL;
		const char *pl;
		size_t plen;
		int32_t jj;
		sv_error_t *err = sv_state_decode_chunk(msg->payload, msg->len,
							c->tag, sizeof(c->tag),
							&jj, &pl, &plen);
		if (err)
			return err;
		sv_buf_append(&c->data, pl, plen);
		c->have = jj == j;
		return NULL;
	}
	if (!msg->payload)
		return NULL;
	sv_state_manifest_t m;
	sv_error_t *err = sv_state_decode_manifest(msg->payload, msg->len, &m);
	if (err)
		return err;
	if (strcmp(m.tag, q->tag))
		return NULL; /* an older (or a later) snapshot */
	r->m = m;
	r->have_manifest = true;
	for (int32_t i = 0; i < m.chunks; i++)
		if (i >= r->nc || !r->c[i].have || strcmp(r->c[i].tag, m.tag))
			return NULL;
	*done = true;
	return NULL;
}

sv_error_t *sv_state_read(const sv_state_read_t *q, sv_buf_t *out,
			  sv_state_manifest_t *m)
{
	rd_kafka_t *rk = NULL;
	char group[300];
	snprintf(group, sizeof(group), "%s-reader", q->client_id);
	const sv_kafka_prop_t fixed[] = {
		{"group.id", group}, /* never joined: manual assign */
		{"enable.auto.commit", "false"},
		{"isolation.level", "read_committed"},
		{"enable.partition.eof", "true"},
		{"fetch.message.max.bytes", "1048576"},
		/* the end of the partition is an empty fetch: answer it at
		 * once rather than after the broker's 500 ms wait */
		{"fetch.wait.max.ms", "10"},
	};
	sv_kafka_client_conf_t cc = {
		.type = RD_KAFKA_CONSUMER,
		.cluster = q->kafka,
		.client_id = q->client_id,
		.role = "state topic reader",
		.log = &state_log,
		.fixed = fixed,
		.nfixed = SV_ARRAY_LEN(fixed),
	};
	sv_error_t *err = sv_kafka_client_new(&cc, &rk);
	if (err)
		return err;
	/* the partition's leader known before the assign: otherwise
	 * librdkafka retries its first offset query only after 500 ms */
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, q->topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	if (!rd_kafka_metadata(rk, 0, rkt, &md, STATE_TIMEOUT_MS) && md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_topic_partition_list_t *list =
		rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(list, q->topic, q->partition)
		->offset = RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_resp_err_t e = rd_kafka_assign(rk, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (e) {
		err = sv_kafka_error(rk, &state_log, SV_ERR_BINDING, e, NULL,
				     "cannot read state topic '%s' partition "
				     "%d",
				     q->topic, q->partition);
		rd_kafka_consumer_close(rk);
		sv_kafka_client_destroy(rk);
		return err;
	}
	reader_t r = {0};
	bool done = false, at_end = false;
	int64_t deadline = sv_mono_ms() + q->timeout_ms;
	int64_t next_tick = sv_mono_ms() + 500;
	while (!done && !err) {
		int64_t now = sv_mono_ms();
		if (now >= next_tick) {
			if (q->tick)
				q->tick(q->opaque);
			next_tick = now + 500;
		}
		if (now > deadline) {
			err = sv_error_new(
				SV_ERR_CHECKPOINT,
				"state topic '%s' partition %d: no complete "
				"snapshot tagged '%s' within %d ms (%s): the "
				"committed offsets name state that cannot be "
				"read",
				q->topic, q->partition, q->tag, q->timeout_ms,
				r.have_manifest  ? "its manifest came, a chunk "
						   "is missing"
					: at_end ? "read to the end, no "
						   "such manifest"
						 : "not read to the "
						   "end");
			break;
		}
		rd_kafka_message_t *msg = rd_kafka_consumer_poll(rk, 200);
		if (!msg)
			continue;
		if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			at_end = true;
		} else if (msg->err) {
			if (msg->err != RD_KAFKA_RESP_ERR__TRANSPORT &&
			    msg->err != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
				err = sv_kafka_error(
					rk, &state_log, SV_ERR_BINDING,
					msg->err, NULL,
					"cannot read state topic '%s' "
					"partition %d",
					q->topic, q->partition);
		} else {
			err = take(&r, q, msg, &done);
		}
		rd_kafka_message_destroy(msg);
	}
	if (!err) {
		*m = r.m;
		sv_buf_reset(out);
		for (int32_t i = 0; i < r.m.chunks; i++)
			sv_buf_append(out, r.c[i].data.data, r.c[i].data.len);
		if ((int64_t)out->len != r.m.bytes ||
		    sv_state_fnv(out->data, out->len) != r.m.fnv)
			err = sv_error_new(SV_ERR_CHECKPOINT,
					   "state topic '%s' partition %d: the "
					   "snapshot tagged '%s' does not "
					   "match its manifest (%zu bytes, "
					   "manifest says %lld)",
					   q->topic, q->partition, q->tag,
					   out->len, (long long)r.m.bytes);
	}
	for (int32_t i = 0; i < r.nc; i++)
		sv_buf_release(&r.c[i].data);
	free(r.c);
	rd_kafka_consumer_close(rk);
	sv_kafka_client_destroy(rk);
	return err;
}
