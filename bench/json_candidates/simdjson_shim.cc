// simdjson_shim.cc — candidate (c) of bench/bench_json_decode.c: simdjson
// on-demand behind a small C API, used only by that benchmark.
//
// Not part of the CMake build (bench targets link svsupervisor and rdkafka
// only, and we do not add simdjson to svcore): build.sh next to this file
// compiles it into a shared object that the benchmark dlopen()s. The shim
// does what the production decoder would have to do: copy the payload into
// a padded buffer (Kafka payloads have no SIMDJSON_PADDING), walk the
// object once, look each key up in the schema, read the value with the
// field's type and report cells; the benchmark copies strings into the
// batch arena like every other candidate.
#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
// Matches svj_cell_t in bench_json_decode.c. type uses sv_type_t numbers.
struct svj_cell {
	int type;
	int64_t i;
	double f;
	const char *s;
	size_t len;
};
void *svj_simd_new(const char *const *names, const int *types, size_t n);
int svj_simd_decode(void *h, const char *p, size_t len, struct svj_cell *out);
void svj_simd_free(void *h);
}

namespace
{
enum {
	T_NULL,
	T_BOOL,
	T_INT64,
	T_FLOAT64,
	T_STRING,
	T_TIMESTAMP
};

struct shim {
	simdjson::ondemand::parser parser;
	std::vector<std::string> names;
	std::vector<int> types;
	std::vector<char> buf;
	std::vector<std::string>
		strs; // unescaped strings, valid until next decode
};

int lookup(shim *s, std::string_view k)
{
	for (size_t i = 0; i < s->names.size(); i++)
		if (s->names[i] == k)
			return (int)i;
	return -1;
}
} // namespace

void *svj_simd_new(const char *const *names, const int *types, size_t n)
{
	shim *s = new shim;
	for (size_t i = 0; i < n; i++) {
		s->names.emplace_back(names[i]);
		s->types.push_back(types[i]);
	}
	s->strs.resize(n);
	return s;
}

void svj_simd_free(void *h)
{
	delete static_cast<shim *>(h);
}

int svj_simd_decode(void *h, const char *p, size_t len, struct svj_cell *out)
{
	using namespace simdjson;
	shim *s = static_cast<shim *>(h);
	size_t n = s->names.size();
	for (size_t i = 0; i < n; i++)
		out[i].type = T_NULL;
	if (s->buf.size() < len + SIMDJSON_PADDING)
		s->buf.resize(len + SIMDJSON_PADDING);
	memcpy(s->buf.data(), p, len);
	ondemand::document doc;
	if (s->parser.iterate(s->buf.data(), len, s->buf.size()).get(doc))
		return -1;
	ondemand::object obj;
	if (doc.get_object().get(obj))
		return -1;
	for (auto field : obj) {
		std::string_view key;
		if (field.unescaped_key().get(key))
			return -1;
		int idx = lookup(s, key);
		ondemand::value v;
		if (field.value().get(v))
			return -1;
		if (idx < 0)
			continue; // skipped (on-demand does not fully validate it)
		bool isnull;
		if (v.is_null().get(isnull))
			return -1;
		if (isnull)
			continue;
		svj_cell &c = out[idx];
		switch (s->types[idx]) {
		case T_BOOL:
			bool b;
			if (v.get_bool().get(b))
				return -1;
			c.type = T_BOOL;
			c.i = b;
			break;
		case T_INT64:
		case T_TIMESTAMP:
			if (v.get_int64().get(c.i))
				return -1;
			c.type = s->types[idx];
			break;
		case T_FLOAT64:
			if (v.get_double().get(c.f))
				return -1;
			c.type = T_FLOAT64;
			break;
		case T_STRING: {
			std::string_view sv;
			if (v.get_string().get(sv))
				return -1;
			c.type = T_STRING;
			c.s = sv.data(); // in the parser's string buffer
			c.len = sv.size();
			break;
		}
		default:
			return -1;
		}
	}
	// simdjson 3.0.1 (Debian 12) has no document::at_end(): trailing
	// content after the object is not detected here.
	return 0;
}
