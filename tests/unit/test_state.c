/* test_state.c — cluster/state.c's record format of the task state topic
 * (docs/cluster.md "State between nodes"): keys, manifests and chunks
 * round trip; a snapshot split into chunks of at most SV_STATE_CHUNK
 * bytes comes back whole; corrupt records are refused with a checkpoint
 * error. Reading the topic runs against the real broker in
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

static void test_keys(void **state)
{
	(void)state;
	char k[64];
	int32_t p = -1, j = -1;
	sv_state_manifest_key(7, k, sizeof(k));
	assert_string_equal(k, "p7/manifest");
	assert_int_equal(sv_state_parse_key(k, strlen(k), &p, &j), 'm');
	assert_int_equal(p, 7);
	sv_state_chunk_key(3, 12, k, sizeof(k));
	assert_string_equal(k, "p3/c12");
	assert_int_equal(sv_state_parse_key(k, strlen(k), &p, &j), 'c');
	assert_int_equal(p, 3);
	assert_int_equal(j, 12);
	const char *bad[] = {"",       "p3",         "p3/c",         "p3/c1x",
			     "p-1/c2", "x/manifest", "p1/manifests", "p1/c-3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(
			sv_state_parse_key(bad[i], strlen(bad[i]), &p, &j), 0);
	assert_int_equal(sv_state_parse_key(NULL, 0, &p, &j), 0);
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
		.chunks = 3,
		.bytes = 2 * SV_STATE_CHUNK + 17,
		.fnv = 0xfedcba9876543210ULL,
	};
	snprintf(m.tag, sizeof(m.tag), "node-1-t0:42");
	sv_buf_t b;
	sv_buf_init(&b);
	sv_state_encode_manifest(&m, &b);
	sv_state_manifest_t back;
	assert_null(sv_state_decode_manifest(b.data, b.len, &back));
	assert_string_equal(back.tag, "node-1-t0:42");
	assert_int_equal(back.checkpoint, 42);
	assert_int_equal(back.partition, 5);
	assert_int_equal(back.next_offset, 123456789012LL);
	assert_int_equal(back.chunks, 3);
	assert_int_equal(back.bytes, 2 * SV_STATE_CHUNK + 17);
	assert_true(back.fnv == 0xfedcba9876543210ULL);
	sv_buf_release(&b);

	/* refused: not JSON, unknown version, chunk count off its size */
	const char *bad[] = {
		"{",
		"{\"v\":2,\"tag\":\"a\",\"checkpoint\":1,\"partition\":0,"
		"\"next_offset\":1,\"chunks\":1,\"bytes\":1,\"fnv\":\"0\"}",
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_topic_name),
		cmocka_unit_test(test_manifest_round_trip),
		cmocka_unit_test(test_chunks_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
