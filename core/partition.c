/* partition.c — Kafka's default partitioning of a key (see partition.h).
 * murmur2 is written from the description of Kafka's Utils.murmur2: 32-bit
 * MurmurHash2 with seed 0x9747b28c over little-endian 4-byte words, then the
 * tail bytes, then the final avalanche. tests/unit/test_partition.c checks
 * it against librdkafka's own murmur2 partitioner. */
#include "core/partition.h"

#include "core/codec.h"

#include <stdio.h>
#include <stdlib.h>

uint32_t sv_murmur2(const void *data, size_t len)
{
	const unsigned char *p = data;
	const uint32_t m = 0x5bd1e995u;
	uint32_t h = 0x9747b28cu ^ (uint32_t)len;
	size_t words = len / 4;
	for (size_t i = 0; i < words; i++, p += 4) {
		uint32_t k = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
			(uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		k *= m;
		k ^= k >> 24;
		k *= m;
		h *= m;
		h ^= k;
	}
	switch (len & 3) {
	case 3:
		h ^= (uint32_t)p[2] << 16;
		/* fall through */
	case 2:
		h ^= (uint32_t)p[1] << 8;
		/* fall through */
	case 1:
		h ^= (uint32_t)p[0];
		h *= m;
		break;
	default:
		break;
	}
	h ^= h >> 13;
	h *= m;
	h ^= h >> 15;
	return h;
}

/* Shortest %g form that reads back to the same double. */
static int fmt_double(char *out, size_t n, double d)
{
	int len = 0;
	for (int prec = 15; prec <= 17; prec++) {
		len = snprintf(out, n, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	return len;
}

const char *sv_key_text(const sv_value_t *v, char *tmp, size_t tmplen,
			size_t *len)
{
	int n;
	*len = 0;
	switch ((sv_type_t)v->type) {
	case SV_T_STRING:
		*len = v->len;
		return v->v.s;
	case SV_T_INT64:
	case SV_T_TIMESTAMP:
		/* per record: no snprintf (bench/README.md, bench_hot) */
		n = tmplen >= SV_FMT_I64_MAX ? (int)sv_fmt_i64(tmp, v->v.i) : 0;
		break;
	case SV_T_FLOAT64:
		n = fmt_double(tmp, tmplen, v->v.f);
		break;
	case SV_T_BOOL:
		*len = v->v.b ? 4 : 5;
		return v->v.b ? "true" : "false";
	default:
		return NULL;
	}
	*len = n > 0 ? (size_t)n : 0;
	return tmp;
}
