/* nexmark.c — the Nexmark benchmark's event model (Person, Auction, Bid) for
 * the generator source.
 *
 * Follows the rules of the reference generators (Apache Beam's
 * sdk/nexmark, nexmark-flink): the type of event n is its position within
 * the 50-event period (1 person, 3 auctions, 46 bids); person and auction
 * ids count the persons and auctions created so far (first id 1000); an
 * auction's seller and a bid's auction and bidder are "hot" with the
 * configured ratios and otherwise drawn from recent ids plus a small lead;
 * prices are log-uniform in [1, 1e6) dollars (in cents); event time is a
 * linear function of n; string fields are random with the reference's
 * lengths, and `extra` pads each event to the reference average byte size.
 *
 * Unlike the references, which share one java.util.Random between
 * attributes (nexmark-flink does not even seed it), every attribute of
 * event n draws from its own splitmix64 stream seeded by (seed, n,
 * attribute). So event n is a pure function of (seed, n): seek is O(1),
 * and the values of a field do not depend on which other fields the schema
 * asks for. docs/generators.md lists every difference. */
#include "sources/nexmark.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Attributes; also the stream ids of their random draws. */
enum {
	A_EVENT_TYPE = 0,
	A_ID,
	A_NAME,
	A_EMAIL,
	A_CREDIT_CARD,
	A_CITY,
	A_STATE,
	A_AUCTION,
	A_BIDDER,
	A_PRICE,
	A_CHANNEL,
	A_URL,
	A_DATE_TIME,
	A_SELLER,
	A_CATEGORY,
	A_INITIAL_BID,
	A_RESERVE,
	A_EXPIRES,
	A_ITEM_NAME,
	A_DESCRIPTION,
	A_EXTRA,
	A__COUNT
};

#define T_PERSON (1u << SV_NEXMARK_PERSON)
#define T_AUCTION (1u << SV_NEXMARK_AUCTION)
#define T_BID (1u << SV_NEXMARK_BID)
#define T_ALL (T_PERSON | T_AUCTION | T_BID)

/* Value kinds an attribute accepts. */
enum {
	K_INT,
	K_TIME,
	K_STR,
	K_TYPE
};

static const struct attr_def {
	const char *name;
	unsigned types; /* event types that carry it */
	int kind;
} attrs[A__COUNT] = {
	[A_EVENT_TYPE] = {"event_type", T_ALL, K_TYPE},
	[A_ID] = {"id", T_PERSON | T_AUCTION, K_INT},
	[A_NAME] = {"name", T_PERSON, K_STR},
	[A_EMAIL] = {"email", T_PERSON, K_STR},
	[A_CREDIT_CARD] = {"credit_card", T_PERSON, K_STR},
	[A_CITY] = {"city", T_PERSON, K_STR},
	[A_STATE] = {"state", T_PERSON, K_STR},
	[A_AUCTION] = {"auction", T_BID, K_INT},
	[A_BIDDER] = {"bidder", T_BID, K_INT},
	[A_PRICE] = {"price", T_BID, K_INT},
	[A_CHANNEL] = {"channel", T_BID, K_STR},
	[A_URL] = {"url", T_BID, K_STR},
	[A_DATE_TIME] = {"date_time", T_ALL, K_TIME},
	[A_SELLER] = {"seller", T_AUCTION, K_INT},
	[A_CATEGORY] = {"category", T_AUCTION, K_INT},
	[A_INITIAL_BID] = {"initial_bid", T_AUCTION, K_INT},
	[A_RESERVE] = {"reserve", T_AUCTION, K_INT},
	[A_EXPIRES] = {"expires", T_AUCTION, K_TIME},
	[A_ITEM_NAME] = {"item_name", T_AUCTION, K_STR},
	[A_DESCRIPTION] = {"description", T_AUCTION, K_STR},
	[A_EXTRA] = {"extra", T_ALL, K_STR},
};

/* The reference's value tables. */
static const char *const us_states[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
static const char *const us_cities[] = {
	"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
	"Bend",    "Redmond",     "Seattle",       "Kent",  "Cheyenne"};
static const char *const first_names[] = {"Peter", "Paul",   "Luke",  "John",
					  "Saul",  "Vicky",  "Kate",  "Julie",
					  "Sarah", "Deiter", "Walter"};
static const char *const last_names[] = {"Shultz", "Abrams",  "Spencer",
					 "White",  "Bartels", "Walton",
					 "Smith",  "Jones",   "Noris"};
static const char *const hot_channels[] = {"Google", "Facebook", "Baidu",
					   "Apple"};
static const char *const type_names[] = {"person", "auction", "bid"};

#define HOT_SELLER_RATIO 100
#define HOT_AUCTION_RATIO 100
#define HOT_BIDDER_RATIO 100
#define HOT_CHANNELS_RATIO 2
#define CHANNELS_NUMBER 10000
#define HOT_URL_MAX 64

struct sv_nexmark {
	sv_generator_options_t opt;
	uint64_t key; /* the seed, mixed */
	int col[A__COUNT]; /* schema column of each attribute, or -1 */
	bool time_as_int[A__COUNT]; /* date_time/expires declared int64 */
	bool type_as_str; /* event_type declared string */
	char hot_url[SV_ARRAY_LEN(hot_channels)][HOT_URL_MAX];
	uint32_t hot_url_len[SV_ARRAY_LEN(hot_channels)];
};

/* ---- random streams ---- */

typedef struct rng {
	uint64_t s;
} rng_t;

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t rng_next(rng_t *r)
{
	return mix64(r->s += 0x9e3779b97f4a7c15ULL);
}

/* The stream of attribute a of event n. */
static inline rng_t stream(const sv_nexmark_t *nx, int64_t n, unsigned a)
{
	rng_t r = {mix64(nx->key ^ mix64((uint64_t)n * A__COUNT + a + 1))};
	return r;
}

/* Uniform in [0, bound), bound in [1, 2^32). */
static inline int64_t rng_int(rng_t *r, uint64_t bound)
{
	return (int64_t)(((rng_next(r) >> 32) * bound) >> 32);
}

/* Uniform-ish in [0, n) for any n >= 1 (the reference's nextLong). */
static inline int64_t rng_long(rng_t *r, int64_t n)
{
	if (n < INT32_MAX)
		return rng_int(r, (uint64_t)n);
	return (int64_t)(rng_next(r) % (uint64_t)n);
}

static inline double rng_double(rng_t *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- ids and times ---- */

int sv_nexmark_event_type(int64_t n)
{
	int64_t rem = n % SV_NEXMARK_TOTAL_PROPORTION;
	if (rem < SV_NEXMARK_PERSON_PROPORTION)
		return SV_NEXMARK_PERSON;
	if (rem < SV_NEXMARK_PERSON_PROPORTION + SV_NEXMARK_AUCTION_PROPORTION)
		return SV_NEXMARK_AUCTION;
	return SV_NEXMARK_BID;
}

int64_t sv_nexmark_last_person(int64_t n)
{
	int64_t epoch = n / SV_NEXMARK_TOTAL_PROPORTION;
	int64_t off = n % SV_NEXMARK_TOTAL_PROPORTION;
	if (off >= SV_NEXMARK_PERSON_PROPORTION)
		off = SV_NEXMARK_PERSON_PROPORTION - 1;
	return epoch * SV_NEXMARK_PERSON_PROPORTION + off;
}

int64_t sv_nexmark_last_auction(int64_t n)
{
	int64_t epoch = n / SV_NEXMARK_TOTAL_PROPORTION;
	int64_t off = n % SV_NEXMARK_TOTAL_PROPORTION;
	if (off < SV_NEXMARK_PERSON_PROPORTION) {
		/* a person: the last auction is in the previous period */
		epoch--;
		off = SV_NEXMARK_AUCTION_PROPORTION - 1;
	} else if (off >= SV_NEXMARK_PERSON_PROPORTION +
			   SV_NEXMARK_AUCTION_PROPORTION) {
		off = SV_NEXMARK_AUCTION_PROPORTION - 1;
	} else {
		off -= SV_NEXMARK_PERSON_PROPORTION;
	}
	return epoch * SV_NEXMARK_AUCTION_PROPORTION + off;
}

int64_t sv_nexmark_event_time(const sv_nexmark_t *nx, int64_t n)
{
	__int128 us = (__int128)n * 1000000 / nx->opt.first_event_rate;
	return nx->opt.base_ts_ms + (int64_t)(us / 1000);
}

/* A random person among the active ones, plus a few not yet created. */
static int64_t next_person(const sv_nexmark_t *nx, int64_t n, rng_t *r)
{
	int64_t people = sv_nexmark_last_person(n) + 1;
	int64_t active = people < nx->opt.num_active_people
		? people
		: nx->opt.num_active_people;
	return people - active +
		rng_long(r, active + SV_NEXMARK_PERSON_ID_LEAD);
}

/* A random auction among those likely in flight, plus a few ahead. */
static int64_t next_auction(const sv_nexmark_t *nx, int64_t n, rng_t *r)
{
	int64_t hi = sv_nexmark_last_auction(n);
	int64_t lo = hi - nx->opt.num_in_flight_auctions;
	if (lo < 0)
		lo = 0;
	return lo + rng_long(r, hi - lo + 1 + SV_NEXMARK_AUCTION_ID_LEAD);
}

/* Cents; log-uniform over [100, 1e8). */
static int64_t next_price(rng_t *r)
{
	return (int64_t)floor(pow(10.0, rng_double(r) * 6.0) * 100.0 + 0.5);
}

/* ---- strings ---- */

/* 3..max-1 random letters, 1 in 13 replaced by pad; a ' ' pad is trimmed
 * from both ends. out holds at least max bytes. Returns the length. */
static size_t next_string(rng_t *r, int max, char pad, char *out)
{
	int len = 3 + (int)rng_int(r, (uint64_t)(max - 3));
	size_t n = 0;
	for (int i = 0; i < len; i++) {
		if (rng_int(r, 13) == 0)
			out[n++] = pad;
		else
			out[n++] = (char)('a' + rng_int(r, 26));
	}
	if (pad != ' ')
		return n;
	size_t a = 0;
	while (a < n && out[a] == ' ')
		a++;
	while (n > a && out[n - 1] == ' ')
		n--;
	memmove(out, out + a, n - a);
	return n - a;
}

/* Length of `extra` so that the event averages avg bytes. */
static size_t extra_len(rng_t *r, int current, int avg)
{
	if (current > avg)
		return 0;
	int want = avg - current;
	int delta = (int)floor(want * 0.2 + 0.5);
	int len = want - delta;
	if (delta)
		len += (int)rng_int(r, (uint64_t)(2 * delta));
	return (size_t)len;
}

/* Exactly len random lowercase letters (12 per 64-bit draw). */
static void exact_string(rng_t *r, char *out, size_t len)
{
	uint64_t x = 0;
	int left = 0;
	for (size_t i = 0; i < len; i++) {
		if (!left) {
			x = rng_next(r);
			left = 12;
		}
		out[i] = (char)('a' + x % 26);
		x /= 26;
		left--;
	}
}

/* "https://www.nexmark.com/xxx/xxx/xxx/item.htm?query=1" with 3-4 letter
 * (or '_') segments. out holds HOT_URL_MAX bytes. */
static size_t base_url(rng_t *r, char *out)
{
	static const char head[] = "https://www.nexmark.com/";
	static const char tail[] = "item.htm?query=1";
	size_t n = sizeof(head) - 1;
	memcpy(out, head, n);
	for (int i = 0; i < 3; i++) {
		n += next_string(r, 5, '_', out + n);
		out[n++] = '/';
	}
	memcpy(out + n, tail, sizeof(tail) - 1);
	return n + sizeof(tail) - 1;
}

static uint32_t reverse_bits32(uint32_t x)
{
	x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
	x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
	x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
	x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
	return (x >> 16) | (x << 16);
}

/* ---- binding ---- */

sv_error_t *sv_nexmark_new(const sv_schema_t *schema,
			   const sv_generator_options_t *opt, uint64_t seed,
			   sv_nexmark_t **out)
{
	*out = NULL;
	sv_nexmark_t *nx = sv_calloc(1, sizeof(*nx));
	nx->opt = *opt;
	nx->key = mix64(seed ^ 0x6e65786d61726bULL); /* "nexmark" */
	for (int a = 0; a < A__COUNT; a++)
		nx->col[a] = -1;
	for (size_t c = 0; c < schema->nfields; c++) {
		const sv_field_t *f = &schema->fields[c];
		int a = 0;
		while (a < A__COUNT && strcmp(attrs[a].name, f->name))
			a++;
		if (a == A__COUNT) {
			if (!f->nullable) {
				sv_nexmark_destroy(nx);
				return sv_error_set_field(
					sv_error_new(SV_ERR_CONFIG,
						     "generator 'nexmark': "
						     "field '%s' is not a "
						     "nexmark attribute and "
						     "cannot be non-nullable",
						     f->name),
					"schema");
			}
			continue;
		}
		bool ok;
		switch (attrs[a].kind) {
		case K_INT:
			ok = f->type == SV_T_INT64;
			break;
		case K_TIME:
			ok = f->type == SV_T_TIMESTAMP || f->type == SV_T_INT64;
			nx->time_as_int[a] = f->type == SV_T_INT64;
			break;
		case K_TYPE:
			ok = f->type == SV_T_INT64 || f->type == SV_T_STRING;
			nx->type_as_str = f->type == SV_T_STRING;
			break;
		default:
			ok = f->type == SV_T_STRING;
			break;
		}
		if (!ok) {
			sv_nexmark_destroy(nx);
			return sv_error_set_field(
				sv_error_new(SV_ERR_CONFIG,
					     "generator 'nexmark': field '%s' "
					     "cannot be %s",
					     f->name, sv_type_name(f->type)),
				"schema");
		}
		if (!f->nullable && attrs[a].types != T_ALL) {
			sv_nexmark_destroy(nx);
			return sv_error_set_field(
				sv_error_new(SV_ERR_CONFIG,
					     "generator 'nexmark': field '%s' "
					     "is null for some event types and "
					     "must be nullable",
					     f->name),
				"schema");
		}
		nx->col[a] = (int)c;
	}
	for (size_t i = 0; i < SV_ARRAY_LEN(hot_channels); i++) {
		rng_t r = stream(nx, -1 - (int64_t)i, A_URL);
		nx->hot_url_len[i] = (uint32_t)base_url(&r, nx->hot_url[i]);
	}
	*out = nx;
	return NULL;
}

void sv_nexmark_destroy(sv_nexmark_t *nx)
{
	free(nx);
}

/* ---- events ---- */

static inline void put_str(sv_value_t *row, int col, sv_batch_t *b,
			   const char *s, size_t n)
{
	if (col >= 0)
		row[col] = sv_str(sv_batch_strdup(b, s, n), (uint32_t)n);
}

/* A string that lives in static storage: no copy needed. */
static inline void put_static(sv_value_t *row, int col, const char *s)
{
	if (col >= 0)
		row[col] = sv_str(s, (uint32_t)strlen(s));
}

static inline void put_int(sv_value_t *row, int col, int64_t v)
{
	if (col >= 0)
		row[col] = sv_int(v);
}

static inline void put_time(const sv_nexmark_t *nx, sv_value_t *row, int a,
			    int64_t ms)
{
	int col = nx->col[a];
	if (col >= 0)
		row[col] = nx->time_as_int[a] ? sv_int(ms) : sv_ts(ms);
}

/* Pad the event to avg bytes with random letters, straight into the arena. */
static void put_extra(const sv_nexmark_t *nx, int64_t n, sv_value_t *row,
		      sv_batch_t *b, int current, int avg)
{
	int col = nx->col[A_EXTRA];
	if (col < 0)
		return;
	rng_t r = stream(nx, n, A_EXTRA);
	size_t len = extra_len(&r, current, avg);
	char *p = sv_arena_alloc(&b->arena, len ? len : 1);
	exact_string(&r, p, len);
	row[col] = sv_str(p, (uint32_t)len);
}

static void fill_person(const sv_nexmark_t *nx, int64_t n, sv_value_t *row,
			sv_batch_t *b)
{
	const int *col = nx->col;
	char name[32], email[32], cc[24];
	rng_t r;

	put_int(row, col[A_ID],
		sv_nexmark_last_person(n) + SV_NEXMARK_FIRST_PERSON_ID);

	r = stream(nx, n, A_NAME);
	const char *first = first_names[rng_int(&r, SV_ARRAY_LEN(first_names))];
	const char *last = last_names[rng_int(&r, SV_ARRAY_LEN(last_names))];
	size_t name_len = (size_t)snprintf(name, sizeof(name), "%s %s", first,
					   last);
	put_str(row, col[A_NAME], b, name, name_len);

	r = stream(nx, n, A_EMAIL);
	size_t email_len = next_string(&r, 7, ' ', email);
	email[email_len++] = '@';
	email_len += next_string(&r, 5, ' ', email + email_len);
	memcpy(email + email_len, ".com", 4);
	email_len += 4;
	put_str(row, col[A_EMAIL], b, email, email_len);

	r = stream(nx, n, A_CREDIT_CARD);
	size_t cc_len = 0;
	for (int i = 0; i < 4; i++) {
		int v = (int)rng_int(&r, 10000);
		if (i)
			cc[cc_len++] = ' ';
		for (int d = 3; d >= 0; d--) {
			cc[cc_len + (size_t)d] = (char)('0' + v % 10);
			v /= 10;
		}
		cc_len += 4;
	}
	put_str(row, col[A_CREDIT_CARD], b, cc, cc_len);

	r = stream(nx, n, A_CITY);
	const char *city = us_cities[rng_int(&r, SV_ARRAY_LEN(us_cities))];
	put_static(row, col[A_CITY], city);
	r = stream(nx, n, A_STATE);
	const char *state = us_states[rng_int(&r, SV_ARRAY_LEN(us_states))];
	put_static(row, col[A_STATE], state);

	int current = (int)(8 + name_len + email_len + cc_len + strlen(city) +
			    strlen(state));
	put_extra(nx, n, row, b, current, nx->opt.avg_person_bytes);
}

static void fill_auction(const sv_nexmark_t *nx, int64_t n, int64_t ts,
			 sv_value_t *row, sv_batch_t *b)
{
	const int *col = nx->col;
	char item[24], desc[104];
	rng_t r;

	put_int(row, col[A_ID],
		sv_nexmark_last_auction(n) + SV_NEXMARK_FIRST_AUCTION_ID);

	if (col[A_SELLER] >= 0) {
		r = stream(nx, n, A_SELLER);
		int64_t seller;
		if (rng_int(&r, (uint64_t)nx->opt.hot_sellers_ratio) > 0)
			seller = (sv_nexmark_last_person(n) /
				  HOT_SELLER_RATIO) *
				HOT_SELLER_RATIO;
		else
			seller = next_person(nx, n, &r);
		put_int(row, col[A_SELLER],
			seller + SV_NEXMARK_FIRST_PERSON_ID);
	}
	if (col[A_CATEGORY] >= 0) {
		r = stream(nx, n, A_CATEGORY);
		put_int(row, col[A_CATEGORY],
			SV_NEXMARK_FIRST_CATEGORY_ID +
				rng_int(&r, SV_NEXMARK_NUM_CATEGORIES));
	}
	r = stream(nx, n, A_INITIAL_BID);
	int64_t initial = next_price(&r);
	put_int(row, col[A_INITIAL_BID], initial);
	if (col[A_RESERVE] >= 0) {
		r = stream(nx, n, A_RESERVE);
		put_int(row, col[A_RESERVE], initial + next_price(&r));
	}
	if (col[A_EXPIRES] >= 0) {
		/* On average, an auction lasts until numInFlightAuctions more
		 * auctions have been created. */
		int64_t ahead = (int64_t)nx->opt.num_in_flight_auctions *
			SV_NEXMARK_TOTAL_PROPORTION /
			SV_NEXMARK_AUCTION_PROPORTION;
		int64_t horizon = sv_nexmark_event_time(nx, n + ahead) - ts;
		r = stream(nx, n, A_EXPIRES);
		int64_t len = 1 +
			rng_long(&r, horizon * 2 > 1 ? horizon * 2 : 1);
		put_time(nx, row, A_EXPIRES, ts + len);
	}

	r = stream(nx, n, A_ITEM_NAME);
	size_t item_len = next_string(&r, 20, ' ', item);
	put_str(row, col[A_ITEM_NAME], b, item, item_len);
	r = stream(nx, n, A_DESCRIPTION);
	size_t desc_len = next_string(&r, 100, ' ', desc);
	put_str(row, col[A_DESCRIPTION], b, desc, desc_len);

	int current = (int)(8 + item_len + desc_len + 8 + 8 + 8 + 8 + 8);
	put_extra(nx, n, row, b, current, nx->opt.avg_auction_bytes);
}

static void fill_bid(const sv_nexmark_t *nx, int64_t n, sv_value_t *row,
		     sv_batch_t *b)
{
	const int *col = nx->col;
	rng_t r;

	if (col[A_AUCTION] >= 0) {
		r = stream(nx, n, A_AUCTION);
		int64_t auction;
		if (rng_int(&r, (uint64_t)nx->opt.hot_auction_ratio) > 0)
			auction = (sv_nexmark_last_auction(n) /
				   HOT_AUCTION_RATIO) *
				HOT_AUCTION_RATIO;
		else
			auction = next_auction(nx, n, &r);
		put_int(row, col[A_AUCTION],
			auction + SV_NEXMARK_FIRST_AUCTION_ID);
	}
	if (col[A_BIDDER] >= 0) {
		r = stream(nx, n, A_BIDDER);
		int64_t bidder;
		/* the second person of the batch, so that hot bidders and hot
		 * sellers differ */
		if (rng_int(&r, (uint64_t)nx->opt.hot_bidders_ratio) > 0)
			bidder = (sv_nexmark_last_person(n) /
				  HOT_BIDDER_RATIO) *
					HOT_BIDDER_RATIO +
				1;
		else
			bidder = next_person(nx, n, &r);
		put_int(row, col[A_BIDDER],
			bidder + SV_NEXMARK_FIRST_PERSON_ID);
	}
	if (col[A_PRICE] >= 0) {
		r = stream(nx, n, A_PRICE);
		put_int(row, col[A_PRICE], next_price(&r));
	}
	if (col[A_CHANNEL] >= 0 || col[A_URL] >= 0) {
		r = stream(nx, n, A_CHANNEL);
		if (rng_int(&r, HOT_CHANNELS_RATIO) > 0) {
			size_t i = (size_t)rng_int(&r,
						   SV_ARRAY_LEN(hot_channels));
			put_static(row, col[A_CHANNEL], hot_channels[i]);
			put_str(row, col[A_URL], b, nx->hot_url[i],
				nx->hot_url_len[i]);
		} else {
			int64_t c = rng_int(&r, CHANNELS_NUMBER);
			char buf[HOT_URL_MAX + 32];
			int len = snprintf(buf, sizeof(buf), "channel-%lld",
					   (long long)c);
			put_str(row, col[A_CHANNEL], b, buf, (size_t)len);
			if (col[A_URL] >= 0) {
				/* the url is a function of the channel */
				rng_t u = stream(nx, -1 - c, A_CHANNEL);
				size_t ul = base_url(&u, buf);
				if (rng_int(&u, 10) > 0)
					ul += (size_t)snprintf(
						buf + ul, sizeof(buf) - ul,
						"&channel_id=%lld",
						(long long)llabs(
							(int32_t)reverse_bits32(
								(uint32_t)c)));
				put_str(row, col[A_URL], b, buf, ul);
			}
		}
	}
	put_extra(nx, n, row, b, 8 + 8 + 8 + 8, nx->opt.avg_bid_bytes);
}

int64_t sv_nexmark_fill(const sv_nexmark_t *nx, int64_t n, sv_value_t *row,
			sv_batch_t *b)
{
	int type = sv_nexmark_event_type(n);
	int64_t ts = sv_nexmark_event_time(nx, n);
	int col = nx->col[A_EVENT_TYPE];
	if (col >= 0)
		row[col] = nx->type_as_str
			? sv_str(type_names[type],
				 (uint32_t)strlen(type_names[type]))
			: sv_int(type);
	put_time(nx, row, A_DATE_TIME, ts);
	switch (type) {
	case SV_NEXMARK_PERSON:
		fill_person(nx, n, row, b);
		break;
	case SV_NEXMARK_AUCTION:
		fill_auction(nx, n, ts, row, b);
		break;
	default:
		fill_bid(nx, n, row, b);
		break;
	}
	return ts;
}
