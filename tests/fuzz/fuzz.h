/* fuzz.h — what every fuzz target shares: the libFuzzer entry points and a
 * fixed test schema. A target defines LLVMFuzzerTestOneInput (and, when it
 * needs process-wide state, LLVMFuzzerInitialize); it is linked either with
 * libFuzzer (the fuzz preset, `make fuzz`) or with replay.c, which feeds it
 * every file of its committed corpus (ctest, every preset). */
#ifndef SV_FUZZ_H
#define SV_FUZZ_H

#include <stddef.h>
#include <stdint.h>

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

#endif
