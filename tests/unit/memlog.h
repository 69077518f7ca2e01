/* memlog.h — an in-memory compacted Kafka log for the state topic's unit
 * tests (test_state, test_ckpt_tasks): records appended in order as a
 * transaction that commits or aborts (read_committed never sees an
 * aborted one), and compaction as Kafka's cleaner does it on committed
 * data: the newest value of each key survives in its log position, older
 * ones go (tombstones are kept, as within delete.retention.ms). Reading
 * feeds the surviving committed records in offset order to a state topic
 * reader. Header-only: the tests' one copy. */
#ifndef SV_TESTS_MEMLOG_H
#define SV_TESTS_MEMLOG_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/state.h"
#include "core/util.h"

typedef struct memrec {
	char key[64];
	char *val; /* NULL: tombstone */
	size_t vlen;
	bool committed, gone;
} memrec_t;

typedef struct memlog {
	memrec_t *r;
	size_t n, cap;
	size_t txn; /* first record of the open transaction */
} memlog_t;

static inline void memlog_free(memlog_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->r[i].val);
	free(l->r);
	memset(l, 0, sizeof(*l));
}

/* sv_state_emit_fn: one record into the open transaction. */
static inline sv_error_t *memlog_emit(void *opaque, const char *key,
				      size_t klen, const char *val, size_t vlen)
{
	memlog_t *l = opaque;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->r = sv_realloc(l->r, l->cap * sizeof(*l->r));
	}
	memrec_t *r = &l->r[l->n++];
	memset(r, 0, sizeof(*r));
	memcpy(r->key, key, klen < 63 ? klen : 63);
	if (val) {
		r->val = sv_malloc(vlen ? vlen : 1);
		memcpy(r->val, val, vlen);
		r->vlen = vlen;
	}
	return NULL;
}

/* The open transaction ends: committed or aborted. */
static inline void memlog_end(memlog_t *l, bool commit)
{
	for (size_t i = l->txn; i < l->n; i++) {
		l->r[i].committed = commit;
		l->r[i].gone = !commit;
	}
	l->txn = l->n;
}

/* The cleaner: of committed records, only each key's newest remains. */
static inline void memlog_compact(memlog_t *l)
{
	for (size_t i = 0; i < l->n; i++) {
		if (l->r[i].gone || !l->r[i].committed)
			continue;
		for (size_t k = i + 1; k < l->n; k++)
			if (!l->r[k].gone && l->r[k].committed &&
			    !strcmp(l->r[k].key, l->r[i].key)) {
				l->r[i].gone = true;
				break;
			}
	}
}

/* Read partition p's chain tagged tag as a new owner does; NULL or the
 * reader's error. */
static inline sv_error_t *memlog_read(const memlog_t *l, int32_t p,
				      const char *tag, sv_state_snap_t *out)
{
	sv_state_reader_t *rd = sv_state_reader_new(p, tag);
	bool done = false;
	sv_error_t *err = NULL;
	for (size_t i = 0; i < l->n && !done && !err; i++) {
		const memrec_t *r = &l->r[i];
		if (r->gone || !r->committed)
			continue;
		err = sv_state_reader_take(rd, r->key, strlen(r->key), r->val,
					   r->vlen, &done);
	}
	if (!err)
		err = sv_state_reader_finish(rd, out);
	sv_state_reader_destroy(rd);
	return err;
}

#endif
