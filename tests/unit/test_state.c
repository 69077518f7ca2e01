/* test_state.c — cluster/state.c's record format of the task state topic
 * (docs/cluster.md "State between nodes"): keys, manifests (one link as
 * version 1, chains as version 2) and chunks round trip; a snapshot split
 * into chunks of at most SV_STATE_CHUNK bytes comes back whole; corrupt
 * records are refused with a checkpoint error; the writer and reader on
 * an in-memory compacted log (memlog.h) give back each chain exactly,
 * after compaction too, and refuse a missing or stale delta slot. The
 * randomized test with real operators through sv_ckpt_take is in
 * test_ckpt_tasks.c; reading the topic runs against the real broker in
 * tests/integration/it_cluster_state.c. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/state.h"
#include "tests/unit/memlog.h"

static void test_keys(void **state)
{
	(void)state;
	char k[64];
	int32_t p = -1, s = -1, j = -1;
	sv_state_manifest_key(7, k, sizeof(k));
	assert_string_equal(k, "p7/manifest");
	assert_int_equal(sv_state_parse_key(k, strlen(k), &p, &s, &j), 'm');
	assert_int_equal(p, 7);
	sv_state_chunk_key(3, 0, 12, k, sizeof(k));
	assert_string_equal(k, "p3/c12");
	assert_int_equal(sv_state_parse_key(k, strlen(k), &p, &s, &j), 'c');
	assert_int_equal(p, 3);
	assert_int_equal(s, 0);
	assert_int_equal(j, 12);
	sv_state_chunk_key(4, 9, 1, k, sizeof(k));
	assert_string_equal(k, "p4/d9/c1");
	assert_int_equal(sv_state_parse_key(k, strlen(k), &p, &s, &j), 'c');
	assert_int_equal(p, 4);
	assert_int_equal(s, 9);
	assert_int_equal(j, 1);
	const char *bad[] = {
		"",         "p3",         "p3/c",         "p3/c1x",
		"p-1/c2",   "x/manifest", "p1/manifests", "p1/c-3",
		"p1/d0/c1", "p1/d2",      "p1/d2/c",      "p1/d-2/c1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(
			sv_state_parse_key(bad[i], strlen(bad[i]), &p, &s, &j),
			0);
	assert_int_equal(sv_state_parse_key(NULL, 0, &p, &s, &j), 0);
}

static void test_topic_name(void **state)
{
	(void)state;
	char t[128];
	sv_state_topic("prod", "ab12", t, sizeof(t));
	assert_string_equal(t, "_streamvisor.prod.ab12.state");
}

static void test_manifest_round_trip(void **state)
{
	(void)state;
	sv_state_manifest_t m = {
		.checkpoint = 42,
		.partition = 5,
		.next_offset = 123456789012LL,
		.nchain = 1,
		.chain = {{.checkpoint = 42,
			   .chunks = 3,
			   .bytes = 2 * SV_STATE_CHUNK + 17,
			   .fnv = 0xfedcba9876543210ULL}},
	};
	snprintf(m.tag, sizeof(m.tag), "node-1-t0:42");
	snprintf(m.chain[0].tag, sizeof(m.chain[0].tag), "node-1-t0:42");
	sv_buf_t b;
	sv_buf_init(&b);
	sv_state_encode_manifest(&m, &b);
	/* one link: the version 1 layout, as before deltas */
	assert_non_null(strstr(b.data, "\"v\":1"));
	assert_null(strstr(b.data, "chain"));
	sv_state_manifest_t back;
	assert_null(sv_state_decode_manifest(b.data, b.len, &back));
	assert_string_equal(back.tag, "node-1-t0:42");
	assert_int_equal(back.checkpoint, 42);
	assert_int_equal(back.partition, 5);
	assert_int_equal(back.next_offset, 123456789012LL);
	assert_int_equal(back.nchain, 1);
	assert_string_equal(back.chain[0].tag, "node-1-t0:42");
	assert_int_equal(back.chain[0].checkpoint, 42);
	assert_int_equal(back.chain[0].chunks, 3);
	assert_int_equal(back.chain[0].bytes, 2 * SV_STATE_CHUNK + 17);
	assert_true(back.chain[0].fnv == 0xfedcba9876543210ULL);
	sv_buf_release(&b);

	/* a chain: a full of checkpoint 40 by another node, deltas 41, 42 */
	m.nchain = 3;
	snprintf(m.chain[0].tag, sizeof(m.chain[0].tag), "node-2-t1:40");
	m.chain[0].checkpoint = 40;
	for (int i = 1; i < 3; i++) {
		snprintf(m.chain[i].tag, sizeof(m.chain[i].tag), "node-1-t0:%d",
			 40 + i);
		m.chain[i].checkpoint = 40 + i;
		m.chain[i].chunks = 1;
		m.chain[i].bytes = 100 * i;
		m.chain[i].fnv = 7u * (unsigned)i;
	}
	sv_buf_init(&b);
	sv_state_encode_manifest(&m, &b);
	assert_non_null(strstr(b.data, "\"v\":2"));
	assert_null(sv_state_decode_manifest(b.data, b.len, &back));
	assert_int_equal(back.nchain, 3);
	assert_string_equal(back.tag, "node-1-t0:42");
	assert_int_equal(back.next_offset, 123456789012LL);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(back.chain[i].tag, m.chain[i].tag);
		assert_int_equal(back.chain[i].checkpoint,
				 m.chain[i].checkpoint);
		assert_int_equal(back.chain[i].chunks, m.chain[i].chunks);
		assert_int_equal(back.chain[i].bytes, m.chain[i].bytes);
		assert_true(back.chain[i].fnv == m.chain[i].fnv);
	}
	sv_buf_release(&b);

	/* refused: not JSON, a version 2 without its chain, unknown
	 * version, chunk count off its size, a chain out of order or whose
	 * newest link is not the manifest's checkpoint */
#define LINK(t, c)                              \
	"{\"tag\":\"" t "\",\"checkpoint\":" #c \
	",\"chunks\":1,\"bytes\":1,\"fnv\":\"0\"}"
#define M2(chain)                                                  \
	"{\"v\":2,\"tag\":\"b\",\"checkpoint\":2,\"partition\":0," \
	"\"next_offset\":1,\"chain\":[" chain "]}"
	const char *bad[] = {
		"{",
		"{\"v\":2,\"tag\":\"a\",\"checkpoint\":1,\"partition\":0,"
		"\"next_offset\":1,\"chunks\":1,\"bytes\":1,\"fnv\":\"0\"}",
		"{\"v\":3,\"tag\":\"a\",\"checkpoint\":1,\"partition\":0,"
		"\"next_offset\":1,\"chunks\":1,\"bytes\":1,\"fnv\":\"0\"}",
		M2(""),
		M2(LINK("b", 2) "," LINK("a", 1)),
		M2(LINK("a", 1) "," LINK("c", 2)),
		M2(LINK("a", 1) "," LINK("b", 3)),
		"{\"v\":1,\"tag\":\"a\",\"checkpoint\":1,\"partition\":0,"
		"\"next_offset\":1,\"chunks\":2,\"bytes\":1,\"fnv\":\"0\"}",
		"{\"v\":1,\"tag\":\"a\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sv_error_t *err = sv_state_decode_manifest(
			bad[i], strlen(bad[i]), &back);
		assert_non_null(err);
		assert_int_equal(err->category, SV_ERR_CHECKPOINT);
		sv_error_destroy(err);
	}
}

/* A snapshot of 2.3 chunks split as the writer does, each chunk encoded
 * and decoded, joined again: the same bytes, the same hash. */
static void test_chunks_round_trip(void **state)
{
	(void)state;
	size_t len = 2 * SV_STATE_CHUNK + SV_STATE_CHUNK / 3;
	char *snap = malloc(len);
	for (size_t i = 0; i < len; i++)
		snap[i] = (char)(i * 2654435761u >> 13);
	int32_t nc = sv_state_nchunks(len);
	assert_int_equal(nc, 3);
	assert_int_equal(sv_state_nchunks(0), 1);
	assert_int_equal(sv_state_nchunks(SV_STATE_CHUNK), 1);
	assert_int_equal(sv_state_nchunks(SV_STATE_CHUNK + 1), 2);
	sv_buf_t joined, c;
	sv_buf_init(&joined);
	sv_buf_init(&c);
	for (int32_t j = 0; j < nc; j++) {
		size_t off = (size_t)j * SV_STATE_CHUNK;
		size_t cl = len - off < SV_STATE_CHUNK ? len - off
						       : SV_STATE_CHUNK;
		sv_buf_reset(&c);
		sv_state_encode_chunk("n2-t0:7", j, snap + off, cl, &c);
		char tag[SV_STATE_TAG_MAX];
		int32_t jj = -1;
		const char *pl;
		size_t plen;
		assert_null(sv_state_decode_chunk(
			c.data, c.len, tag, sizeof(tag), &jj, &pl, &plen));
		assert_string_equal(tag, "n2-t0:7");
		assert_int_equal(jj, j);
		assert_int_equal(plen, cl);
		sv_buf_append(&joined, pl, plen);
	}
	assert_int_equal(joined.len, len);
	assert_memory_equal(joined.data, snap, len);
	assert_true(sv_state_fnv(joined.data, joined.len) ==
		    sv_state_fnv(snap, len));
	snap[len / 2] ^= 1;
	assert_true(sv_state_fnv(joined.data, joined.len) !=
		    sv_state_fnv(snap, len));

	/* refused: no header, a tag longer than the record, too small a
	 * tag buffer */
	char tag[8];
	int32_t jj;
	const char *pl;
	size_t plen;
	sv_error_t *err = sv_state_decode_chunk("XXXX", 4, tag, sizeof(tag),
						&jj, &pl, &plen);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	const char trunc[] = {'S', 'V', 'S', 'T', 0, 50, 'a', 'b', 0, 0, 0, 0};
	err = sv_state_decode_chunk(trunc, sizeof(trunc), tag, sizeof(tag), &jj,
				    &pl, &plen);
	assert_non_null(err);
	sv_error_destroy(err);
	sv_buf_reset(&c);
	sv_state_encode_chunk("a-much-longer-tag:1", 0, "x", 1, &c);
	err = sv_state_decode_chunk(c.data, c.len, tag, sizeof(tag), &jj, &pl,
				    &plen);
	assert_non_null(err);
	sv_error_destroy(err);
	sv_buf_release(&c);
	sv_buf_release(&joined);
	free(snap);
}

/* A task record's stand-in: len bytes from seed. */
static char *blob(size_t len, unsigned seed)
{
	char *b = malloc(len ? len : 1);
	for (size_t i = 0; i < len; i++)
		b[i] = (char)((i + seed) * 2654435761u >> 11);
	return b;
}

static void put(memlog_t *l, sv_state_chain_t *cur, int32_t p, int64_t ck,
		int64_t delta_of, const char *rec, size_t len, char *tag,
		bool commit)
{
	sprintf(tag, "n1-t0:%lld", (long long)ck);
	sv_state_put_t put = {
		.partition = p,
		.tag = tag,
		.checkpoint = ck,
		.next_offset = 1000 + ck,
		.delta_of = delta_of,
		.rec = rec,
		.len = len,
		.emit = memlog_emit,
		.opaque = l,
	};
	sv_state_chain_t next;
	assert_null(sv_state_write(cur, &put, &next));
	memlog_end(l, commit);
	if (commit)
		*cur = next;
}

/* Writer and reader on an in-memory compacted log: a full of 2.2 chunks,
 * then deltas (one of two chunks, one aborted), then a smaller full; each
 * manifest reads back as exactly its chain, before and after compaction;
 * a delta slot whose newest value is lost (compaction cannot do that, a
 * bug or damage could) or stale is refused, never applied. */
static void test_write_read_chain(void **state)
{
	(void)state;
	memlog_t l = {0};
	sv_state_chain_t cur;
	sv_state_chain_unknown(&cur);
	size_t lens[] = {2 * SV_STATE_CHUNK + 99, 10, SV_STATE_CHUNK + 5, 7, 3,
			 SV_STATE_CHUNK / 2,      20};
	int64_t dof[] = {0, 1, 2, 3, 3, 0, 6};
	bool commit[] = {true, true, true, false, true, true, true};
	char *recs[7], tags[7][SV_STATE_TAG_MAX];
	for (int i = 0; i < 7; i++) {
		recs[i] = blob(lens[i], (unsigned)i);
		int64_t ck = i + 1;
		put(&l, &cur, 2, ck, dof[i], recs[i], lens[i], tags[i],
		    commit[i]);
		/* a record of another partition in between: skipped */
		memlog_emit(&l, "p3/c0", 5, "junk!", 5);
		memlog_end(&l, true);
		if (!commit[i])
			continue;
		for (int pass = 0; pass < 2; pass++) {
			if (pass)
				memlog_compact(&l);
			sv_state_snap_t snap;
			sv_state_snap_init(&snap);
			sv_error_t *err = memlog_read(&l, 2, tags[i], &snap);
			if (err)
				fail_msg("checkpoint %d: %s", i + 1,
					 err->message);
			/* the chain: back to its newest full */
			int first = i;
			while (dof[first])
				first--;
			int want[8], nw = 0;
			for (int k = first; k <= i; k++)
				if (commit[k])
					want[nw++] = k;
			assert_int_equal(snap.m.nchain, nw);
			for (int k = 0; k < nw; k++) {
				assert_int_equal(snap.link[k].len,
						 lens[want[k]]);
				assert_memory_equal(snap.link[k].data,
						    recs[want[k]],
						    lens[want[k]]);
			}
			sv_state_snap_release(&snap);
		}
	}
	/* after the second full, the first chain's delta slots are
	 * tombstoned: compacted, only slot 0, slot 1 (delta 7) and the
	 * manifest of p2 are values */
	memlog_compact(&l);
	int values = 0;
	for (size_t i = 0; i < l.n; i++)
		values += !l.r[i].gone && l.r[i].val &&
			!strncmp(l.r[i].key, "p2/", 3);
	assert_int_equal(values, 1 + 1 + 1);

	/* negative controls on the chain of checkpoint 5 (full 1, deltas
	 * 2, 3, 5): rebuild it, then lose delta 3's newest value so the
	 * stale one shows (a delta of another chain in the same slot), or
	 * drop it */
	memlog_free(&l);
	sv_state_chain_unknown(&cur);
	put(&l, &cur, 2, 1, 0, recs[0], 50, tags[0], true);
	put(&l, &cur, 2, 2, 1, recs[1], 10, tags[1], true);
	put(&l, &cur, 2, 3, 0, recs[2], 40, tags[2], true); /* new full */
	put(&l, &cur, 2, 4, 3, recs[3], 7, tags[3], true); /* slot 1 */
	for (int mode = 0; mode < 2; mode++) {
		memlog_t c = {0};
		for (size_t i = 0; i < l.n; i++) {
			memlog_emit(&c, l.r[i].key, strlen(l.r[i].key),
				    l.r[i].val, l.r[i].vlen);
			c.r[c.n - 1].committed = true;
		}
		/* slot 1 held a tombstone (the first full, the chain on
		 * the log unknown), checkpoint 2's delta, a tombstone (the
		 * full of 3), checkpoint 4's delta: mode 0 keeps only
		 * checkpoint 2's, mode 1 none */
		int seen = 0, values = 0;
		for (size_t i = 0; i < c.n; i++)
			if (!strcmp(c.r[i].key, "p2/d1/c0")) {
				seen++;
				c.r[i].gone = mode == 1 || !c.r[i].val ||
					values++ > 0;
			}
		assert_int_equal(seen, 4);
		sv_state_snap_t snap;
		sv_state_snap_init(&snap);
		sv_error_t *err = memlog_read(&c, 2, tags[3], &snap);
		assert_non_null(err);
		assert_int_equal(err->category, SV_ERR_CHECKPOINT);
		assert_non_null(strstr(err->message,
				       mode == 0
					       ? "carries the tag 'n1-t0:2'"
					       : "is not on the state topic"));
		sv_error_destroy(err);
		sv_state_snap_release(&snap);
		memlog_free(&c);
	}
	/* the writer refuses a delta on anything but the chain's newest */
	sv_state_put_t bad = {.partition = 2,
			      .tag = "n1-t0:9",
			      .checkpoint = 9,
			      .delta_of = 3,
			      .rec = "x",
			      .len = 1,
			      .emit = memlog_emit,
			      .opaque = &l};
	sv_state_chain_t next;
	sv_error_t *err = sv_state_write(&cur, &bad, &next);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	for (int i = 0; i < 7; i++)
		free(recs[i]);
	memlog_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_topic_name),
		cmocka_unit_test(test_manifest_round_trip),
		cmocka_unit_test(test_chunks_round_trip),
		cmocka_unit_test(test_write_read_chain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
