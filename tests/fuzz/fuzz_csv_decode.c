/* fuzz_csv_decode.c — libFuzzer target for the CSV record decoder
 * (core/codec_csv.c), the hot-path decoder every Kafka payload goes
 * through: the input is one payload, decoded against the fixed fuzz schema
 * into a batch (sv_fuzz_decode_one in fuzz.h says what must hold). */
#include "core/codec.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static sv_decoder_t *dec;
	return sv_fuzz_decode_one(SV_FMT_CSV, &dec, data, size);
}
