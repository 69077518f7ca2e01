/* state.c — the task state topic of distributed mode (state.h): its record
 * codec, its creation, the writer of a partition's chain and the reader a
 * new owner restores from.
 *
 * The writer (sv_state_write) turns one task record into the records of
 * its slot (a full snapshot slot 0, delta i slot i), the tombstones of
 * what it supersedes and the manifest naming the whole chain, handed to
 * an emit callback: the partition owner's transactional producer (its
 * sink's write_keyed, supervisor/worker.c), so snapshots become visible
 * exactly when the checkpoint's output and offsets do. The reader is a
 * plain consumer without a group, assigned the one state partition from
 * its beginning with isolation.level=read_committed: aborted snapshots are
 * never seen, and the compacted log holds at least the newest committed
 * value of every key (the cleaner never passes the last stable offset).
 * Its core (sv_state_reader_*, no Kafka, unit-tested against an in-memory
 * compacted log) keeps the newest chunk per key and stops at the manifest
 * whose tag the committed offset names; every chunk of its chain was
 * written before it (in its transaction or an earlier committed one), so
 * a chunk missing or carrying another tag there is damage, refused at
 * once. At the log's end without the manifest it keeps polling until its
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

void sv_state_chunk_key(int32_t partition, int32_t slot, int32_t j, char *out,
			size_t n)
{
	if (slot == 0)
		snprintf(out, n, "p%d/c%d", (int)partition, (int)j);
	else
		snprintf(out, n, "p%d/d%d/c%d", (int)partition, (int)slot,
			 (int)j);
}

int sv_state_parse_key(const char *key, size_t len, int32_t *partition,
		       int32_t *slot, int32_t *j)
{
	char buf[64];
	if (!key || len == 0 || len >= sizeof(buf))
		return 0;
	memcpy(buf, key, len);
	buf[len] = 0;
	int p, s, c, used = 0;
	if (sscanf(buf, "p%d/manifest%n", &p, &used) == 1 &&
	    (size_t)used == len && p >= 0) {
		*partition = p;
		return 'm';
	}
	used = 0;
	if (sscanf(buf, "p%d/c%d%n", &p, &c, &used) == 2 &&
	    (size_t)used == len && p >= 0 && c >= 0) {
		*partition = p;
		*slot = 0;
		*j = c;
		return 'c';
	}
	used = 0;
	if (sscanf(buf, "p%d/d%d/c%d%n", &p, &s, &c, &used) == 3 &&
	    (size_t)used == len && p >= 0 && s >= 1 && c >= 0) {
		*partition = p;
		*slot = s;
		*j = c;
		return 'c';
	}
	return 0;
}

static json_t *fnv_json(uint64_t fnv)
{
	char h[24];
	snprintf(h, sizeof(h), "%016llx", (unsigned long long)fnv);
	return json_string(h);
}

void sv_state_encode_manifest(const sv_state_manifest_t *m, sv_buf_t *out)
{
	json_t *o;
	const sv_state_link_t *l0 = &m->chain[0];
	if (m->nchain == 1 && !strcmp(l0->tag, m->tag)) {
		/* one full snapshot: version 1, as before deltas */
		o = json_pack("{s:i, s:s, s:I, s:i, s:I, s:i, s:I, s:o}", "v",
			      1, "tag", m->tag, "checkpoint",
			      (json_int_t)m->checkpoint, "partition",
			      m->partition, "next_offset",
			      (json_int_t)m->next_offset, "chunks", l0->chunks,
			      "bytes", (json_int_t)l0->bytes, "fnv",
			      fnv_json(l0->fnv));
	} else {
		json_t *chain = json_array();
		for (int32_t i = 0; i < m->nchain; i++) {
			const sv_state_link_t *l = &m->chain[i];
			json_array_append_new(
				chain,
				json_pack("{s:s, s:I, s:i, s:I, s:o}", "tag",
					  l->tag, "checkpoint",
					  (json_int_t)l->checkpoint, "chunks",
					  l->chunks, "bytes",
					  (json_int_t)l->bytes, "fnv",
					  fnv_json(l->fnv)));
		}
		o = json_pack("{s:i, s:s, s:I, s:i, s:I, s:o}", "v", 2, "tag",
			      m->tag, "checkpoint", (json_int_t)m->checkpoint,
			      "partition", m->partition, "next_offset",
			      (json_int_t)m->next_offset, "chain", chain);
	}
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

/* One link of a manifest (version 1's top level, or an entry of
 * version 2's chain). */
static sv_error_t *decode_link(json_t *o, sv_state_link_t *l)
{
	const char *tag = NULL, *fnv = NULL;
	json_int_t ck = 0, bytes = 0;
	int chunks = 0;
	if (json_unpack(o, "{s:s, s:I, s:i, s:I, s:s}", "tag", &tag,
			"checkpoint", &ck, "chunks", &chunks, "bytes", &bytes,
			"fnv", &fnv))
		return corrupt("a manifest that is not the expected JSON");
	if (strlen(tag) >= sizeof(l->tag))
		return corrupt("a manifest tag that is too long");
	if (chunks < 1 || bytes < 0 ||
	    chunks != sv_state_nchunks((size_t)bytes))
		return corrupt("a manifest whose chunk count does not fit its "
			       "size");
	snprintf(l->tag, sizeof(l->tag), "%s", tag);
	l->checkpoint = ck;
	l->chunks = chunks;
	l->bytes = bytes;
	l->fnv = strtoull(fnv, NULL, 16);
	return NULL;
}

sv_error_t *sv_state_decode_manifest(const char *data, size_t len,
				     sv_state_manifest_t *m)
{
	memset(m, 0, sizeof(*m));
	json_error_t je;
	json_t *o = json_loadb(data, len, 0, &je), *chain = NULL;
	const char *tag = NULL;
	json_int_t ck = 0, next = 0;
	int v = 0, part = 0;
	if (!o ||
	    json_unpack(o, "{s:i, s:s, s:I, s:i, s:I, s?o}", "v", &v, "tag",
			&tag, "checkpoint", &ck, "partition", &part,
			"next_offset", &next, "chain", &chain)) {
		json_decref(o);
		return corrupt("a manifest that is not the expected JSON");
	}
	sv_error_t *err = NULL;
	if (v != 1 && v != 2)
		err = corrupt("a manifest of an unknown version");
	else if (strlen(tag) >= sizeof(m->tag))
		err = corrupt("a manifest tag that is too long");
	else if (v == 1) {
		m->nchain = 1;
		err = decode_link(o, &m->chain[0]);
	} else if (!json_is_array(chain) || json_array_size(chain) < 1 ||
		   json_array_size(chain) > SV_STATE_CHAIN_MAX) {
		err = corrupt("a manifest without a chain of 1 to 64 links");
	} else {
		m->nchain = (int32_t)json_array_size(chain);
		for (int32_t i = 0; !err && i < m->nchain; i++)
			err = decode_link(json_array_get(chain, (size_t)i),
					  &m->chain[i]);
		for (int32_t i = 1; !err && i < m->nchain; i++)
			if (m->chain[i].checkpoint <=
			    m->chain[i - 1].checkpoint)
				err = corrupt("a manifest whose chain is not "
					      "in checkpoint order");
	}
	if (!err) {
		snprintf(m->tag, sizeof(m->tag), "%s", tag);
		m->checkpoint = ck;
		m->partition = part;
		m->next_offset = next;
		if (v == 1) {
			snprintf(m->chain[0].tag, sizeof(m->chain[0].tag), "%s",
				 tag);
			m->chain[0].checkpoint = ck;
		}
		const sv_state_link_t *last = &m->chain[m->nchain - 1];
		if (strcmp(last->tag, m->tag) || last->checkpoint != ck)
			err = corrupt("a manifest whose newest link is not its "
				      "own checkpoint");
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

/* ---- writer ---- */

void sv_state_chain_unknown(sv_state_chain_t *c)
{
	memset(c, 0, sizeof(*c));
	for (int32_t s = 1; s < SV_STATE_CHAIN_MAX; s++)
		c->on_log[s] = 1;
}

void sv_state_chain_from(sv_state_chain_t *c, const sv_state_manifest_t *m)
{
	memset(c, 0, sizeof(*c));
	c->m = *m;
	for (int32_t s = 0; s < m->nchain; s++)
		c->on_log[s] = m->chain[s].chunks;
}

static sv_error_t *emit_key(const sv_state_put_t *put, int32_t slot, int32_t j,
			    const char *val, size_t vlen)
{
	char key[64];
	sv_state_chunk_key(put->partition, slot, j, key, sizeof(key));
	return put->emit(put->opaque, key, strlen(key), val, vlen);
}

sv_error_t *sv_state_write(const sv_state_chain_t *cur,
			   const sv_state_put_t *put, sv_state_chain_t *next)
{
	*next = *cur;
	sv_state_manifest_t *m = &next->m;
	int32_t slot = 0;
	if (put->delta_of > 0) {
		const sv_state_link_t *tail = cur->m.nchain
			? &cur->m.chain[cur->m.nchain - 1]
			: NULL;
		if (!tail || tail->checkpoint != put->delta_of ||
		    cur->m.partition != put->partition)
			return sv_error_new(
				SV_ERR_CHECKPOINT,
				"partition %d: the delta of checkpoint %lld "
				"is on checkpoint %lld, which is not the "
				"newest snapshot on the state topic (%lld)",
				put->partition, (long long)put->checkpoint,
				(long long)put->delta_of,
				tail ? (long long)tail->checkpoint : -1LL);
		if (cur->m.nchain >= SV_STATE_CHAIN_MAX)
			return sv_error_new(SV_ERR_CHECKPOINT,
					    "partition %d: a chain of more "
					    "than %d links on the state topic",
					    put->partition, SV_STATE_CHAIN_MAX);
		slot = cur->m.nchain;
	}
	int32_t nc = sv_state_nchunks(put->len);
	sv_buf_t chunk;
	sv_buf_init(&chunk);
	sv_error_t *err = NULL;
	for (int32_t j = 0; j < nc && !err; j++) {
		size_t off = (size_t)j * SV_STATE_CHUNK;
		size_t cl = put->len - off < SV_STATE_CHUNK ? put->len - off
							    : SV_STATE_CHUNK;
		sv_buf_reset(&chunk);
		sv_state_encode_chunk(put->tag, j, put->rec + off, cl, &chunk);
		err = emit_key(put, slot, j, chunk.data, chunk.len);
	}
	/* the chunks an earlier, larger link of this slot left */
	for (int32_t j = nc; j < cur->on_log[slot] && !err; j++)
		err = emit_key(put, slot, j, NULL, 0);
	next->on_log[slot] = nc;
	if (slot == 0) /* a new chain: the old one's deltas go */
		for (int32_t s = 1; s < SV_STATE_CHAIN_MAX && !err; s++) {
			for (int32_t j = 0; j < cur->on_log[s] && !err; j++)
				err = emit_key(put, s, j, NULL, 0);
			next->on_log[s] = 0;
		}
	if (!err) {
		if (slot == 0)
			m->nchain = 0;
		sv_state_link_t *l = &m->chain[m->nchain++];
		snprintf(l->tag, sizeof(l->tag), "%s", put->tag);
		l->checkpoint = put->checkpoint;
		l->chunks = nc;
		l->bytes = (int64_t)put->len;
		l->fnv = sv_state_fnv(put->rec, put->len);
		snprintf(m->tag, sizeof(m->tag), "%s", put->tag);
		m->checkpoint = put->checkpoint;
		m->partition = put->partition;
		m->next_offset = put->next_offset;
		char key[64];
		sv_buf_reset(&chunk);
		sv_state_encode_manifest(m, &chunk);
		sv_state_manifest_key(put->partition, key, sizeof(key));
		err = put->emit(put->opaque, key, strlen(key), chunk.data,
				chunk.len);
	}
	sv_buf_release(&chunk);
	if (err)
		*next = *cur;
	return err;
}

/* ---- reader ---- */

typedef struct chunk {
	char tag[SV_STATE_TAG_MAX];
	sv_buf_t data;
	bool have;
} chunk_t;

typedef struct slot {
	chunk_t *c;
	int32_t nc;
} slot_t;

struct sv_state_reader {
	int32_t partition;
	char tag[SV_STATE_TAG_MAX];
	slot_t slot[SV_STATE_CHAIN_MAX];
	sv_state_manifest_t m;
	bool have_manifest, done;
};

sv_state_reader_t *sv_state_reader_new(int32_t partition, const char *tag)
{
	sv_state_reader_t *r = sv_calloc(1, sizeof(*r));
	r->partition = partition;
	snprintf(r->tag, sizeof(r->tag), "%s", tag);
	return r;
}

void sv_state_reader_destroy(sv_state_reader_t *r)
{
	if (!r)
		return;
	for (int32_t s = 0; s < SV_STATE_CHAIN_MAX; s++) {
		for (int32_t i = 0; i < r->slot[s].nc; i++)
			sv_buf_release(&r->slot[s].c[i].data);
		free(r->slot[s].c);
	}
	free(r);
}

bool sv_state_reader_has_manifest(const sv_state_reader_t *r)
{
	return r->have_manifest;
}

static chunk_t *chunk_at(slot_t *sl, int32_t j)
{
	if (j >= sl->nc) {
		int32_t n = j + 1 > sl->nc * 2 ? j + 1 : sl->nc * 2;
		sl->c = sv_realloc(sl->c, (size_t)n * sizeof(*sl->c));
		memset(sl->c + sl->nc, 0,
		       (size_t)(n - sl->nc) * sizeof(*sl->c));
		for (int32_t i = sl->nc; i < n; i++)
			sv_buf_init(&sl->c[i].data);
		sl->nc = n;
	}
	return &sl->c[j];
}

/* Every chunk of every link of the manifest is there with its link's
 * tag, else why not. */
static sv_error_t *chain_complete(const sv_state_reader_t *r)
{
	const sv_state_manifest_t *m = &r->m;
	for (int32_t s = 0; s < m->nchain; s++) {
		const sv_state_link_t *l = &m->chain[s];
		const slot_t *sl = &r->slot[s];
		for (int32_t j = 0; j < l->chunks; j++) {
			const chunk_t *c = j < sl->nc ? &sl->c[j] : NULL;
			char key[64];
			sv_state_chunk_key(r->partition, s, j, key,
					   sizeof(key));
			if (!c || !c->have)
				return sv_error_new(
					SV_ERR_CHECKPOINT,
					"partition %d: the manifest tagged "
					"'%s' names link %d of %d (tag '%s', "
					"%d chunks), but its chunk '%s' is "
					"not on the state topic",
					r->partition, m->tag, (int)s,
					(int)m->nchain, l->tag, (int)l->chunks,
					key);
			if (strcmp(c->tag, l->tag))
				return sv_error_new(
					SV_ERR_CHECKPOINT,
					"partition %d: the manifest tagged "
					"'%s' names link %d of %d with tag "
					"'%s', but its chunk '%s' carries "
					"the tag '%s' (a stale or missing "
					"link)",
					r->partition, m->tag, (int)s,
					(int)m->nchain, l->tag, key, c->tag);
		}
	}
	return NULL;
}

sv_error_t *sv_state_reader_take(sv_state_reader_t *r, const char *key,
				 size_t klen, const char *val, size_t vlen,
				 bool *done)
{
	int32_t p = -1, s = -1, j = -1;
	int kind = sv_state_parse_key(key, klen, &p, &s, &j);
	if (r->done || !kind || p != r->partition)
		return NULL;
	if (kind == 'c') {
		if (s >= SV_STATE_CHAIN_MAX)
			return NULL;
		chunk_t *c = chunk_at(&r->slot[s], j);
		sv_buf_reset(&c->data);
		c->have = false;
		c->tag[0] = 0;
		if (!val) /* tombstone */
			return NULL;
		const char *pl;
		size_t plen;
		int32_t jj;
		sv_error_t *err = sv_state_decode_chunk(
			val, vlen, c->tag, sizeof(c->tag), &jj, &pl, &plen);
		if (err)
			return err;
		sv_buf_append(&c->data, pl, plen);
		c->have = jj == j;
		return NULL;
	}
	if (!val)
		return NULL;
	sv_state_manifest_t m;
	sv_error_t *err = sv_state_decode_manifest(val, vlen, &m);
	if (err)
		return err;
	if (strcmp(m.tag, r->tag))
		return NULL; /* an older (or a later) snapshot */
	if (m.partition != r->partition)
		return corrupt("a manifest of another partition");
	r->m = m;
	r->have_manifest = true;
	/* the chain's records all precede its manifest: complete now or
	 * never */
	if ((err = chain_complete(r)))
		return err;
	r->done = *done = true;
	return NULL;
}

void sv_state_snap_init(sv_state_snap_t *s)
{
	memset(s, 0, sizeof(*s));
	for (int32_t i = 0; i < SV_STATE_CHAIN_MAX; i++)
		sv_buf_init(&s->link[i]);
}

void sv_state_snap_release(sv_state_snap_t *s)
{
	for (int32_t i = 0; i < SV_STATE_CHAIN_MAX; i++)
		sv_buf_release(&s->link[i]);
}

sv_error_t *sv_state_reader_finish(sv_state_reader_t *r, sv_state_snap_t *out)
{
	if (!r->done)
		return sv_error_new(SV_ERR_CHECKPOINT,
				    "partition %d: no complete snapshot "
				    "tagged '%s'",
				    r->partition, r->tag);
	out->m = r->m;
	out->bytes = 0;
	for (int32_t s = 0; s < r->m.nchain; s++) {
		const sv_state_link_t *l = &r->m.chain[s];
		sv_buf_t *b = &out->link[s];
		sv_buf_reset(b);
		for (int32_t j = 0; j < l->chunks; j++)
			sv_buf_append(b, r->slot[s].c[j].data.data,
				      r->slot[s].c[j].data.len);
		out->bytes += b->len;
		if ((int64_t)b->len != l->bytes ||
		    sv_state_fnv(b->data, b->len) != l->fnv)
			return sv_error_new(
				SV_ERR_CHECKPOINT,
				"partition %d: link %d (tag '%s') of the "
				"snapshot tagged '%s' does not match its "
				"manifest (%zu bytes, manifest says %lld)",
				r->partition, (int)s, l->tag, r->m.tag, b->len,
				(long long)l->bytes);
	}
	return NULL;
}

sv_error_t *sv_state_read(const sv_state_read_t *q, sv_state_snap_t *out)
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
	sv_state_reader_t *r = sv_state_reader_new(q->partition, q->tag);
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
				at_end ? "read to the end, no such manifest"
				       : "not read to the end");
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
			err = sv_state_reader_take(r, msg->key, msg->key_len,
						   msg->payload, msg->len,
						   &done);
		}
		rd_kafka_message_destroy(msg);
	}
	if (!err)
		err = sv_state_reader_finish(r, out);
	if (err && strstr(err->message, "partition ") == err->message) {
		/* name the topic too */
		sv_error_t *e = sv_error_new(SV_ERR_CHECKPOINT,
					     "state topic '%s' %s", q->topic,
					     err->message);
		sv_error_destroy(err);
		err = e;
	}
	sv_state_reader_destroy(r);
	rd_kafka_consumer_close(rk);
	sv_kafka_client_destroy(rk);
	return err;
}
