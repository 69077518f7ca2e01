/* nexmark.h — the Nexmark event model used by the generator source
 * (sources/generator.c) and its tests. Not a driver on its own.
 *
 * Event number n (0, 1, 2, ...) fully determines event n: its type by
 * position within the 50-event period (0 person, 1..3 auction, 4..49 bid),
 * its ids by counting, its event time by n, and its random attributes by a
 * random stream seeded from (seed, n, attribute). See docs/generators.md. */
#ifndef SV_NEXMARK_H
#define SV_NEXMARK_H

#include <stdint.h>

#include "core/error.h"
#include "core/record.h"
#include "sources/generator.h"

#define SV_NEXMARK_PERSON 0
#define SV_NEXMARK_AUCTION 1
#define SV_NEXMARK_BID 2

#define SV_NEXMARK_PERSON_PROPORTION 1
#define SV_NEXMARK_AUCTION_PROPORTION 3
#define SV_NEXMARK_BID_PROPORTION 46
#define SV_NEXMARK_TOTAL_PROPORTION 50

#define SV_NEXMARK_FIRST_PERSON_ID 1000
#define SV_NEXMARK_FIRST_AUCTION_ID 1000
#define SV_NEXMARK_FIRST_CATEGORY_ID 10
#define SV_NEXMARK_NUM_CATEGORIES 5
#define SV_NEXMARK_PERSON_ID_LEAD 10
#define SV_NEXMARK_AUCTION_ID_LEAD 10

typedef struct sv_nexmark sv_nexmark_t;

/* Bind the model to schema (borrowed; must outlive the object): each field
 * whose name is a Nexmark attribute is filled, others stay null. Errors
 * (SV_ERR_CONFIG): an attribute field of an unsupported type, or a field
 * that is not nullable but would be null for some event type. opt is
 * copied. */
sv_error_t *sv_nexmark_new(const sv_schema_t *schema,
			   const sv_generator_options_t *opt, uint64_t seed,
			   sv_nexmark_t **out);
void sv_nexmark_destroy(sv_nexmark_t *nx);

/* Fill row (the cells of the last row of b, all null on entry) with event
 * n; strings go into b's arena. Returns the event time (date_time). */
int64_t sv_nexmark_fill(const sv_nexmark_t *nx, int64_t n, sv_value_t *row,
			sv_batch_t *b);

/* SV_NEXMARK_PERSON / _AUCTION / _BID for event number n. */
int sv_nexmark_event_type(int64_t n);
/* Event time of event n: base + floor(floor(n * 1e6 / rate) / 1000) ms. */
int64_t sv_nexmark_event_time(const sv_nexmark_t *nx, int64_t n);
/* Base-0 id of the last person / auction created at or before event n
 * (the id of event n itself when it creates one); -1 when none yet. */
int64_t sv_nexmark_last_person(int64_t n);
int64_t sv_nexmark_last_auction(int64_t n);

#endif
