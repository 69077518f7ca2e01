/* fuzz.h — what every fuzz target shares: the libFuzzer entry points and a
 * fixed test schema. A target defines LLVMFuzzerTestOneInput (and, when it
 * needs process-wide state, LLVMFuzzerInitialize); it is linked either with
 * libFuzzer (the fuzz preset, `make fuzz`) or with replay.c, which feeds it
 * every file of its committed corpus (ctest, every preset). */
#ifndef SV_FUZZ_H
#define SV_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include <stdlib.h>

#include "core/codec.h"
#include "core/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The schema of the decoder and expression targets: one column of each
 * type, some nullable. Built once, never freed. */
static inline const sv_schema_t *sv_fuzz_schema(void)
{
	static sv_schema_t *schema;
	if (!schema) {
		schema = sv_schema_new();
		sv_schema_add(schema, "id", SV_T_INT64, false);
		sv_schema_add(schema, "region", SV_T_STRING, true);
		sv_schema_add(schema, "amount", SV_T_FLOAT64, true);
		sv_schema_add(schema, "ok", SV_T_BOOL, true);
		sv_schema_add(schema, "ts", SV_T_TIMESTAMP, true);
	}
	return schema;
}

/* The body of both record-decoder targets: decode one payload in format
 * fmt against the fuzz schema into a batch. It must add exactly one row or
 * none (a reject with a reason), and a decoded row must encode back as
 * JSON; anything else aborts (a finding). dec is the target's decoder,
 * made once. */
static inline int sv_fuzz_decode_one(sv_format_t fmt, sv_decoder_t **dec,
				     const uint8_t *data, size_t size)
{
	const sv_schema_t *schema = sv_fuzz_schema();
	if (!*dec)
		*dec = sv_decoder_new(fmt, schema);
	sv_batch_t b;
	sv_batch_init(&b, schema);
	sv_rowmeta_t *meta = NULL;
	char reason[256];
	reason[0] = '\0';
	int rc = sv_decoder_decode(*dec, (const char *)data, size, &b, &meta,
				   reason, sizeof(reason));
	if (rc == 0) {
		if (b.nrows != 1)
			abort();
		sv_buf_t out;
		sv_buf_init(&out);
		sv_json_encode_row(schema, sv_batch_row(&b, 0), &out);
		sv_buf_release(&out);
	} else if (b.nrows != 0 || !reason[0]) {
		abort();
	}
	sv_batch_release(&b);
	return 0;
}

#endif
