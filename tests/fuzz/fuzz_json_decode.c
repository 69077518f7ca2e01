/* fuzz_json_decode.c — libFuzzer target for the JSON record decoder
 * (core/codec_json.c), the hot-path decoder every Kafka payload goes
 * through: the input is one payload, decoded against the fixed fuzz schema
 * into a batch. A payload must either add exactly one row or none (a reject
 * with a reason), and the decoded row must encode back as JSON. */
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static sv_decoder_t *dec;
	const sv_schema_t *schema = sv_fuzz_schema();
	if (!dec)
		dec = sv_decoder_new(SV_FMT_JSON, schema);
	sv_batch_t b;
	sv_batch_init(&b, schema);
	sv_rowmeta_t *meta = NULL;
	char reason[256];
	reason[0] = '\0';
	int rc = sv_decoder_decode(dec, (const char *)data, size, &b, &meta,
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
