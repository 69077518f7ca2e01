/* fuzz_checkpoint.c — libFuzzer target for the checkpoint record decoder:
 * what recovery reads back from RocksDB. The input is unpacked as a
 * Streamvisor__CheckpointRecord (checkpoint/store.c does exactly this), and
 * each operator state in it is handed to the restore of the matching
 * operator of a fixed plan with a window and a dedup (core/window.c,
 * core/dedup.c), as supervisor/ckpt.c does; the raw input is also restored
 * into each operator directly, so state decoding is fuzzed even when the
 * outer record does not unpack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/drivers.h"
#include "core/operator.h"
#include "ingress/plan.h"
#include "ingress/spec.h"
#include "proto/checkpoint.pb-c.h"
#include "tests/fuzz/fuzz.h"

static const char spec_json[] =
	"{\"name\": \"fuzz\", \"source\": {\"kind\": \"generator\","
	" \"generator\": \"sequence\"},"
	" \"schema\": [{\"name\": \"seq\", \"type\": \"int64\"},"
	"  {\"name\": \"k\", \"type\": \"string\"},"
	"  {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
	" \"event_time\": {\"field\": \"ts\"},"
	" \"pipeline\": [{\"dedup\": {\"key\": [\"k\"], \"within_ms\": 1000}},"
	"  {\"window\": {\"type\": \"tumbling\", \"size_ms\": 1000,"
	"   \"key\": [\"k\"], \"aggregates\": {\"n\": \"count()\","
	"   \"s\": \"sum(seq)\", \"lo\": \"min(k)\", \"a\": \"avg(seq)\"}}}],"
	" \"sink\": {\"kind\": \"null\"}}";

static sv_plan_t *plan;
static sv_jobspec_t *spec; /* the plan may borrow from it; kept */

/* SV_FUZZ_WRITE_SEEDS=DIR: push a few rows through the plan, snapshot its
 * operators and write real checkpoint records (and the bare states) into
 * DIR: how tests/fuzz/corpus/checkpoint/ was made. */
static void write_seeds(const char *dir)
{
	sv_batch_t in;
	sv_batch_init(&in, plan->schema);
	static const char *keys[] = {"a", "b", "a", "c\xc3\xa9"};
	for (int r = 0; r < 4; r++) {
		sv_rowmeta_t *meta;
		sv_value_t *row = sv_batch_add_row(&in, &meta);
		row[0] = sv_int(r);
		row[1].type = SV_T_STRING;
		row[1].v.s = keys[r];
		row[1].len = (uint32_t)strlen(keys[r]);
		row[2].type = SV_T_TIMESTAMP;
		row[2].v.i = 1000 + 300 * r;
		meta->event_ms = row[2].v.i;
	}
	sv_opstats_t stats = {0};
	sv_op_ctx_t ctx = {.watermark_ms = SV_WATERMARK_NONE,
			   .now_ms = 5000,
			   .stats = &stats};
	sv_batch_t *out = NULL;
	sv_error_t *err = sv_pipeline_push(plan->pipeline, &ctx, &in, &out);
	if (err)
		abort();
	Streamvisor__CheckpointRecord rec = STREAMVISOR__CHECKPOINT_RECORD__INIT;
	Streamvisor__OperatorState os[4], *osp[4];
	Streamvisor__PartitionOffset po = STREAMVISOR__PARTITION_OFFSET__INIT,
				     *pop = &po;
	po.topic = "orders";
	po.partition = 3;
	po.next_offset = 42;
	po.watermark_ms = 900;
	sv_buf_t bufs[4];
	size_t n = 0;
	for (size_t i = 0; i < sv_pipeline_len(plan->pipeline) && n < 4; i++) {
		sv_op_t *op = sv_pipeline_op(plan->pipeline, i);
		if (!op->ops->snapshot)
			continue;
		sv_buf_init(&bufs[n]);
		if ((err = op->ops->snapshot(op, &bufs[n])))
			abort();
		streamvisor__operator_state__init(&os[n]);
		os[n].index = (uint32_t)i;
		os[n].kind = (char *)op->ops->name;
		os[n].state.data = (uint8_t *)bufs[n].data;
		os[n].state.len = bufs[n].len;
		osp[n] = &os[n];
		char path[512];
		snprintf(path, sizeof(path), "%s/state-%s", dir, op->ops->name);
		FILE *f = fopen(path, "wb");
		if (f) {
			fwrite(bufs[n].data, 1, bufs[n].len, f);
			fclose(f);
		}
		n++;
	}
	rec.id = 7;
	rec.job_id = "j-fuzz";
	rec.attempt = 2;
	rec.plan_id = "00";
	rec.n_offsets = 1;
	rec.offsets = &pop;
	rec.watermark_ms = 900;
	rec.n_operators = n;
	rec.operators = osp;
	rec.status = STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED;
	size_t len = streamvisor__checkpoint_record__get_packed_size(&rec);
	uint8_t *packed = malloc(len);
	streamvisor__checkpoint_record__pack(&rec, packed);
	char path[512];
	snprintf(path, sizeof(path), "%s/record-window-dedup", dir);
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(packed, 1, len, f);
		fclose(f);
	}
	free(packed);
	for (size_t i = 0; i < n; i++)
		sv_buf_release(&bufs[i]);
	sv_batch_release(&in);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	sv_error_t *err = sv_jobspec_parse_json(spec_json, strlen(spec_json),
						sv_registry_drivers(), &spec);
	if (!err)
		err = sv_plan_build(spec, &plan);
	if (err)
		abort(); /* the fixed spec must build */
	const char *seeds = getenv("SV_FUZZ_WRITE_SEEDS");
	if (seeds)
		write_seeds(seeds);
	return 0;
}

static void restore_all(const char *data, size_t len)
{
	for (size_t i = 0; i < sv_pipeline_len(plan->pipeline); i++) {
		sv_op_t *op = sv_pipeline_op(plan->pipeline, i);
		if (!op->ops->restore)
			continue;
		sv_error_t *err = op->ops->restore(op, data, len);
		if (err)
			sv_error_destroy(err);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!plan)
		LLVMFuzzerInitialize(NULL, NULL);
	Streamvisor__CheckpointRecord *rec =
		streamvisor__checkpoint_record__unpack(NULL, size, data);
	if (rec) {
		for (size_t i = 0; i < rec->n_operators; i++) {
			const Streamvisor__OperatorState *os = rec->operators[i];
			if (os->index >= sv_pipeline_len(plan->pipeline))
				continue;
			sv_op_t *op = sv_pipeline_op(plan->pipeline, os->index);
			if (!op->ops->restore || !os->kind ||
			    strcmp(op->ops->name, os->kind))
				continue;
			sv_error_t *err = op->ops->restore(
				op, (const char *)os->state.data,
				os->state.len);
			if (err)
				sv_error_destroy(err);
		}
		streamvisor__checkpoint_record__free_unpacked(rec, NULL);
	}
	restore_all((const char *)data, size);
	return 0;
}
