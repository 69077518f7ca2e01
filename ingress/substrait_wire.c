/* substrait_wire.c — what protobuf-c does not do for a hostile Substrait
 * plan: a depth check on the wire format before unpacking, a proto3-JSON
 * decoder, and a walk of the unpacked tree for unknown fields.
 *
 * protobuf-c's unpack recurses once per nested message with no limit: a
 * 34 KB plan nested 5,000 deep overflows an 8 MiB stack (NOTES-substrait
 * §6.2). sv_pb_check() walks the bytes over the message descriptors first
 * and recurses only into fields the descriptor says are messages, with a
 * cap, so no unpack ever sees a plan deeper than the cap; it also refuses
 * malformed wire data (truncated varints and lengths, groups, field 0).
 *
 * protobuf-c has no JSON. sv_pb_from_json() encodes a proto3 JSON value
 * (jansson) into wire bytes by the same descriptors, and the normal unpack
 * (after the depth check) reads them: one decoding path for both forms.
 * It accepts lowerCamelCase and original field names, enums by name or
 * number, 64-bit integers as strings, bytes as base64, NaN/Infinity as
 * strings, and null as "absent"; it refuses google.protobuf.Any (its JSON
 * form needs a type registry) and unknown names. All functions here are
 * generic over descriptors; only the callers know it is Substrait. */
#include "ingress/substrait.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* ---- wire depth check ---- */

static bool read_varint(const uint8_t *p, size_t len, size_t *pos,
			uint64_t *out)
{
	uint64_t v = 0;
	for (int i = 0; i < 10; i++) {
		if (*pos >= len)
			return false;
		uint8_t b = p[(*pos)++];
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

static sv_error_t *wire_err(const char *what, int depth)
{
	return sv_error_new(SV_ERR_SUBMISSION,
			    "substrait plan is not valid protobuf: %s (at "
			    "message depth %d)",
			    what, depth);
}

static sv_error_t *walk(const ProtobufCMessageDescriptor *d, const uint8_t *p,
			size_t len, int depth, int max_depth, int *deepest)
{
	if (depth > *deepest)
		*deepest = depth;
	size_t pos = 0;
	while (pos < len) {
		uint64_t tag, v;
		if (!read_varint(p, len, &pos, &tag))
			return wire_err("truncated tag", depth);
		uint64_t fnum = tag >> 3;
		if (fnum == 0 || fnum > 536870911)
			return wire_err("field number 0 or out of range",
					depth);
		switch (tag & 7) {
		case 0:
			if (!read_varint(p, len, &pos, &v))
				return wire_err("truncated varint", depth);
			break;
		case 1:
			if (len - pos < 8)
				return wire_err("truncated fixed64", depth);
			pos += 8;
			break;
		case 5:
			if (len - pos < 4)
				return wire_err("truncated fixed32", depth);
			pos += 4;
			break;
		case 2: {
			if (!read_varint(p, len, &pos, &v) || v > len - pos)
				return wire_err("length past the end", depth);
			const ProtobufCFieldDescriptor *f = d
				? protobuf_c_message_descriptor_get_field(
					  d, (unsigned)fnum)
				: NULL;
			if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
				if (depth + 1 > max_depth)
					return sv_error_new(
						SV_ERR_SUBMISSION,
						"substrait plan is nested too "
						"deep: more than %d messages "
						"(real plans are at most about "
						"16)",
						max_depth);
				sv_error_t *err = walk(f->descriptor, p + pos,
						       (size_t)v, depth + 1,
						       max_depth, deepest);
				if (err)
					return err;
			}
			pos += (size_t)v;
			break;
		}
		default:
			return wire_err("group or invalid wire type", depth);
		}
	}
	return NULL;
}

sv_error_t *sv_pb_check(const ProtobufCMessageDescriptor *desc,
			const uint8_t *data, size_t len, int max_depth,
			int *depth_out)
{
	int deepest = 0;
	sv_error_t *err = walk(desc, data, len, 1, max_depth, &deepest);
	if (depth_out)
		*depth_out = deepest;
	return err;
}

/* ---- proto3 JSON -> wire ---- */

typedef struct jctx {
	sv_error_t *err;
	char path[512];
	int max_depth;
} jctx_t;

static bool jfail(jctx_t *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static bool jfail(jctx_t *c, const char *fmt, ...)
{
	if (c->err)
		return false;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->err = sv_error_new(SV_ERR_SUBMISSION, "substrait JSON at '%s': %s",
			      c->path[0] ? c->path : "(root)", msg);
	return false;
}

static void put_varint(sv_buf_t *b, uint64_t v)
{
	uint8_t tmp[10];
	int n = 0;
	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	sv_buf_append(b, tmp, (size_t)n);
}

static __thread bool notag; /* inside a packed repeated field */

static void put_tag(sv_buf_t *b, unsigned fnum, unsigned wt)
{
	if (!notag)
		put_varint(b, ((uint64_t)fnum << 3) | wt);
}

static void put_le(sv_buf_t *b, uint64_t v, int n)
{
	uint8_t tmp[8];
	for (int i = 0; i < n; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	sv_buf_append(b, tmp, (size_t)n);
}

/* JSON name of a proto field: lowerCamelCase of the original. */
static void camel(const char *name, char *out, size_t cap)
{
	size_t j = 0;
	bool up = false;
	for (const char *p = name; *p && j + 1 < cap; p++) {
		if (*p == '_') {
			up = true;
			continue;
		}
		out[j++] = up ? (char)toupper((unsigned char)*p) : *p;
		up = false;
	}
	out[j] = '\0';
}

static const ProtobufCFieldDescriptor *find_field(
	const ProtobufCMessageDescriptor *d, const char *key)
{
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		char cm[128];
		camel(f->name, cm, sizeof(cm));
		if (!strcmp(cm, key) || !strcmp(f->name, key))
			return f;
	}
	return NULL;
}

/* An integer from a JSON integer, an integral number or a decimal string. */
static bool json_int(jctx_t *c, const json_t *v, bool is_unsigned, int64_t *s,
		     uint64_t *u)
{
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		if (is_unsigned && x < 0)
			return jfail(c, "expected a non-negative integer");
		*s = x;
		*u = (uint64_t)x;
		return true;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d != floor(d) || fabs(d) > 9.2e18 || (is_unsigned && d < 0))
			return jfail(c, "expected an integer, got %g", d);
		*s = (int64_t)d;
		*u = (uint64_t)*s;
		return true;
	}
	if (json_is_string(v)) {
		const char *t = json_string_value(v);
		char *end = NULL;
		if (!*t || isspace((unsigned char)*t))
			return jfail(c, "expected an integer string");
		errno = 0;
		if (is_unsigned) {
			if (*t == '-')
				return jfail(c,
					     "expected a non-negative "
					     "integer");
			*u = strtoull(t, &end, 10);
			*s = (int64_t)*u;
		} else {
			*s = strtoll(t, &end, 10);
			*u = (uint64_t)*s;
		}
		if (errno || *end)
			return jfail(c, "'%s' is not a 64-bit integer", t);
		return true;
	}
	return jfail(c, "expected an integer");
}

static bool json_dbl(jctx_t *c, const json_t *v, double *out)
{
	if (json_is_number(v)) {
		*out = json_number_value(v);
		return true;
	}
	if (json_is_string(v)) {
		const char *t = json_string_value(v);
		if (!strcmp(t, "NaN"))
			*out = NAN;
		else if (!strcmp(t, "Infinity"))
			*out = INFINITY;
		else if (!strcmp(t, "-Infinity"))
			*out = -INFINITY;
		else {
			char *end = NULL;
			*out = strtod(t, &end);
			if (!*t || *end)
				return jfail(c, "'%s' is not a number", t);
		}
		return true;
	}
	return jfail(c, "expected a number");
}

/* Standard or URL-safe base64, padded or not. */
static bool b64_decode(const char *s, sv_buf_t *out)
{
	size_t n = strlen(s);
	char *t = sv_malloc(n + 4);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == '-')
			ch = '+';
		else if (ch == '_')
			ch = '/';
		if (ch == '=')
			break;
		if (!isalnum((unsigned char)ch) && ch != '+' && ch != '/') {
			free(t);
			return false;
		}
		t[m++] = ch;
	}
	if (m % 4 == 1) {
		free(t);
		return false;
	}
	size_t pad = (4 - m % 4) % 4;
	for (size_t i = 0; i < pad; i++)
		t[m++] = '=';
	t[m] = '\0';
	size_t start = out->len;
	sv_buf_reserve(out, m / 4 * 3 + 1);
	int r = m ? EVP_DecodeBlock((unsigned char *)out->data + start,
				    (const unsigned char *)t, (int)m)
		  : 0;
	free(t);
	if (r < 0)
		return false;
	out->len = start + (size_t)r - pad;
	out->data[out->len] = '\0';
	return true;
}

sv_error_t *sv_b64_decode(const char *s, uint8_t **out, size_t *len)
{
	sv_buf_t b;
	sv_buf_init(&b);
	if (!b64_decode(s, &b)) {
		sv_buf_release(&b);
		return sv_error_new(SV_ERR_SUBMISSION, "not valid base64");
	}
	*len = b.len;
	*out = (uint8_t *)sv_buf_detach(&b);
	return NULL;
}

char *sv_b64_encode(const uint8_t *data, size_t len)
{
	char *s = sv_malloc(4 * ((len + 2) / 3) + 1);
	int n = EVP_EncodeBlock((unsigned char *)s, data, (int)len);
	s[n] = '\0';
	return s;
}

static bool enc_message(jctx_t *c, const ProtobufCMessageDescriptor *d,
			const json_t *obj, sv_buf_t *out, int depth);

static bool enc_value(jctx_t *c, const ProtobufCFieldDescriptor *f,
		      const json_t *v, sv_buf_t *out, int depth)
{
	int64_t s = 0;
	uint64_t u = 0;
	double dv;
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		if (!json_int(c, v, false, &s, &u))
			return false;
		if (s < INT32_MIN || s > INT32_MAX)
			return jfail(c, "%lld is out of range for int32",
				     (long long)s);
		if (f->type == PROTOBUF_C_TYPE_INT32) {
			put_tag(out, f->id, 0);
			put_varint(out, (uint64_t)s);
		} else if (f->type == PROTOBUF_C_TYPE_SINT32) {
			put_tag(out, f->id, 0);
			uint32_t z = (uint32_t)s << 1;
			if (s < 0)
				z = ~z; /* zigzag: (s << 1) ^ (s >> 31) */
			put_varint(out, z);
		} else {
			put_tag(out, f->id, 5);
			put_le(out, (uint32_t)(int32_t)s, 4);
		}
		return true;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if (!json_int(c, v, true, &s, &u))
			return false;
		if (u > UINT32_MAX)
			return jfail(c, "%llu is out of range for uint32",
				     (unsigned long long)u);
		if (f->type == PROTOBUF_C_TYPE_UINT32) {
			put_tag(out, f->id, 0);
			put_varint(out, u);
		} else {
			put_tag(out, f->id, 5);
			put_le(out, u, 4);
		}
		return true;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		if (!json_int(c, v, false, &s, &u))
			return false;
		if (f->type == PROTOBUF_C_TYPE_INT64) {
			put_tag(out, f->id, 0);
			put_varint(out, (uint64_t)s);
		} else if (f->type == PROTOBUF_C_TYPE_SINT64) {
			put_tag(out, f->id, 0);
			uint64_t z = (uint64_t)s << 1;
			if (s < 0)
				z = ~z; /* zigzag */
			put_varint(out, z);
		} else {
			put_tag(out, f->id, 1);
			put_le(out, (uint64_t)s, 8);
		}
		return true;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if (!json_int(c, v, true, &s, &u))
			return false;
		put_tag(out, f->id, f->type == PROTOBUF_C_TYPE_UINT64 ? 0 : 1);
		if (f->type == PROTOBUF_C_TYPE_UINT64)
			put_varint(out, u);
		else
			put_le(out, u, 8);
		return true;
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			return jfail(c, "expected true or false");
		put_tag(out, f->id, 0);
		put_varint(out, json_is_true(v) ? 1 : 0);
		return true;
	case PROTOBUF_C_TYPE_FLOAT: {
		if (!json_dbl(c, v, &dv))
			return false;
		float fl = (float)dv;
		uint32_t bits;
		memcpy(&bits, &fl, 4);
		put_tag(out, f->id, 5);
		put_le(out, bits, 4);
		return true;
	}
	case PROTOBUF_C_TYPE_DOUBLE: {
		if (!json_dbl(c, v, &dv))
			return false;
		uint64_t bits;
		memcpy(&bits, &dv, 8);
		put_tag(out, f->id, 1);
		put_le(out, bits, 8);
		return true;
	}
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumDescriptor *ed = f->descriptor;
		if (json_is_string(v)) {
			const ProtobufCEnumValue *ev =
				protobuf_c_enum_descriptor_get_value_by_name(
					ed, json_string_value(v));
			if (!ev)
				return jfail(c, "unknown %s value '%s'",
					     ed->name, json_string_value(v));
			s = ev->value;
		} else if (json_is_integer(v)) {
			s = json_integer_value(v);
			if (s < INT32_MIN || s > INT32_MAX)
				return jfail(c, "enum number out of range");
		} else {
			return jfail(c, "expected an enum name");
		}
		put_tag(out, f->id, 0);
		put_varint(out, (uint64_t)s);
		return true;
	}
	case PROTOBUF_C_TYPE_STRING: {
		if (!json_is_string(v))
			return jfail(c, "expected a string");
		size_t n = json_string_length(v);
		put_tag(out, f->id, 2);
		put_varint(out, n);
		sv_buf_append(out, json_string_value(v), n);
		return true;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		if (!json_is_string(v))
			return jfail(c, "expected a base64 string");
		sv_buf_t b;
		sv_buf_init(&b);
		if (!b64_decode(json_string_value(v), &b)) {
			sv_buf_release(&b);
			return jfail(c, "not valid base64");
		}
		put_tag(out, f->id, 2);
		put_varint(out, b.len);
		if (b.len)
			sv_buf_append(out, b.data, b.len);
		sv_buf_release(&b);
		return true;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessageDescriptor *md = f->descriptor;
		if (!strcmp(md->name, "google.protobuf.Any"))
			return jfail(c,
				     "google.protobuf.Any cannot be read from "
				     "JSON (no type registry); send the plan "
				     "as substrait_base64");
		if (depth + 1 > c->max_depth)
			return jfail(c,
				     "nested too deep: more than %d messages",
				     c->max_depth);
		sv_buf_t sub;
		sv_buf_init(&sub);
		bool ok = enc_message(c, md, v, &sub, depth + 1);
		if (ok) {
			put_tag(out, f->id, 2);
			put_varint(out, sub.len);
			if (sub.len)
				sv_buf_append(out, sub.data, sub.len);
		}
		sv_buf_release(&sub);
		return ok;
	}
	}
	return jfail(c, "unsupported field type");
}

static bool enc_message(jctx_t *c, const ProtobufCMessageDescriptor *d,
			const json_t *obj, sv_buf_t *out, int depth)
{
	if (!json_is_object(obj))
		return jfail(c, "expected an object for %s", d->name);
	/* fields in number order, so equal JSON gives equal bytes */
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		char cm[128];
		camel(f->name, cm, sizeof(cm));
		const json_t *v = json_object_get(obj, cm);
		const json_t *v2 = json_object_get(obj, f->name);
		if (v && v2 && v != v2)
			return jfail(c, "field '%s' given twice", f->name);
		if (!v)
			v = v2;
		if (!v || json_is_null(v))
			continue;
		size_t n = strlen(c->path);
		snprintf(c->path + n, sizeof(c->path) - n, "%s%s", n ? "." : "",
			 cm);
		bool ok = true;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			if (!json_is_array(v)) {
				ok = jfail(c, "expected an array");
			} else if ((f->flags & PROTOBUF_C_FIELD_FLAG_PACKED) &&
				   json_array_size(v)) {
				/* packed, as protobuf-c and protoc write
				 * proto3 repeated scalars */
				sv_buf_t pk;
				sv_buf_init(&pk);
				notag = true;
				for (size_t k = 0; ok && k < json_array_size(v);
				     k++)
					ok = enc_value(c, f,
						       json_array_get(v, k),
						       &pk, depth);
				notag = false;
				if (ok) {
					put_tag(out, f->id, 2);
					put_varint(out, pk.len);
					if (pk.len)
						sv_buf_append(out, pk.data,
							      pk.len);
				}
				sv_buf_release(&pk);
			} else {
				size_t m = strlen(c->path);
				for (size_t k = 0; ok && k < json_array_size(v);
				     k++) {
					snprintf(c->path + m,
						 sizeof(c->path) - m, "[%zu]",
						 k);
					ok = enc_value(c, f,
						       json_array_get(v, k),
						       out, depth);
				}
			}
		} else {
			ok = enc_value(c, f, v, out, depth);
		}
		c->path[n] = '\0';
		if (!ok)
			return false;
	}
	const char *k;
	const json_t *v;
	json_object_foreach ((json_t *)obj, k, v) {
		if (!find_field(d, k))
			return jfail(c, "unknown field '%s' in %s", k, d->name);
	}
	return true;
}

sv_error_t *sv_pb_from_json(const ProtobufCMessageDescriptor *desc,
			    const json_t *v, int max_depth, uint8_t **out,
			    size_t *len)
{
	jctx_t c = {.max_depth = max_depth};
	sv_buf_t b;
	sv_buf_init(&b);
	if (!enc_message(&c, desc, v, &b, 1)) {
		sv_buf_release(&b);
		return c.err;
	}
	*len = b.len;
	*out = (uint8_t *)sv_buf_detach(&b);
	return NULL;
}

/* ---- unknown fields after unpack ---- */

static bool unknown_ok(const ProtobufCMessage *m, const char *const *allowed)
{
	for (unsigned i = 0; i < m->n_unknown_fields; i++) {
		bool ok = false;
		for (const char *const *a = allowed; a && *a; a++) {
			const char *colon = strchr(*a, ':');
			size_t n = (size_t)(colon - *a);
			if (strlen(m->descriptor->name) == n &&
			    !strncmp(m->descriptor->name, *a, n) &&
			    (unsigned)atoi(colon + 1) ==
				    m->unknown_fields[i].tag)
				ok = true;
		}
		if (!ok)
			return false;
	}
	return true;
}

static const ProtobufCMessage *unknown_walk(const ProtobufCMessage *m,
					    const char *const *allowed,
					    unsigned *tag)
{
	if (!unknown_ok(m, allowed)) {
		for (unsigned i = 0; i < m->n_unknown_fields; i++)
			*tag = m->unknown_fields[i].tag;
		return m;
	}
	const ProtobufCMessageDescriptor *d = m->descriptor;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		const char *base = (const char *)m;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base +
						     f->quantifier_offset);
			ProtobufCMessage *const *arr = *(
				ProtobufCMessage *const *const *)(base +
								  f->offset);
			for (size_t k = 0; k < n; k++) {
				const ProtobufCMessage *r = unknown_walk(
					arr[k], allowed, tag);
				if (r)
					return r;
			}
			continue;
		}
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			uint32_t cs = *(const uint32_t *)(base +
							  f->quantifier_offset);
			if (cs != f->id)
				continue;
		}
		const ProtobufCMessage *sub = *(
			ProtobufCMessage *const *)(base + f->offset);
		if (sub) {
			const ProtobufCMessage *r = unknown_walk(sub, allowed,
								 tag);
			if (r)
				return r;
		}
	}
	return NULL;
}

sv_error_t *sv_pb_check_unknown(const ProtobufCMessage *m,
				const char *const *allowed)
{
	unsigned tag = 0;
	const ProtobufCMessage *r = unknown_walk(m, allowed, &tag);
	if (!r)
		return NULL;
	return sv_error_new(SV_ERR_COVERAGE,
			    "substrait message %s has unknown field %u (a "
			    "newer producer's semantics this build does not "
			    "know)",
			    r->descriptor->name, tag);
}
