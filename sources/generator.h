/* generator.h — the "generator" source driver: deterministic synthetic
 * input for tests and benchmarks (docs/generators.md).
 *
 * Two generators, chosen by sv_source_conf_t.generator:
 *   "sequence"  rows whose fields are filled by name and type from the job's
 *               schema (ids, keys, event times with optional out-of-order
 *               jitter);
 *   "nexmark"   the Nexmark benchmark's Person/Auction/Bid stream (1/3/46 out
 *               of every 50 events) as one union-schema row per event.
 *
 * Both are pure functions of (seed, options, row number): row n is always
 * the same row, so seek/resume regenerates exactly what was read before.
 * Rows are spread over N logical partitions (row n → partition n % N at
 * offset n / N) so offsets, lag and checkpoints work as for Kafka. */
#ifndef SV_GENERATOR_H
#define SV_GENERATOR_H

#include <stdint.h>

#include "sources/source.h"

/* The driver (name "generator"); listed in sources/registry.c. */
extern const sv_source_ops_t sv_source_generator_ops;

/* Knobs that sv_source_conf_t has no field for yet. */
typedef struct sv_generator_options {
	int64_t base_ts_ms; /* event time of row 0 (1704067200000,
			      * 2024-01-01T00:00:00Z) */
	int32_t partitions; /* logical partitions, 1..1024 (4) */
	/* sequence */
	int64_t step_ms; /* event-time step per row, >= 0 (1) */
	int64_t jitter_ms; /* out-of-order jitter, >= 0: row n's event time
			      * is base + n*step - j, j in [0, jitter] (0) */
	int64_t keys; /* distinct keys, >= 1 (10000) */
	/* nexmark (defaults are the reference generator's) */
	int64_t first_event_rate; /* events per second of event time:
				       * inter-event delay 1e6/rate us (10000) */
	int32_t hot_auction_ratio; /* (2) */
	int32_t hot_sellers_ratio; /* (4) */
	int32_t hot_bidders_ratio; /* (4) */
	int32_t num_active_people; /* (1000) */
	int32_t num_in_flight_auctions; /* (100) */
	int32_t avg_person_bytes; /* (200) */
	int32_t avg_auction_bytes; /* (500) */
	int32_t avg_bid_bytes; /* (100) */
} sv_generator_options_t;

/* Fill opt with the defaults listed above. */
void sv_generator_options_default(sv_generator_options_t *opt);

/* Replace the options of an open generator source (opt is copied) and
 * rewind it to the start of every partition. Call it before the first
 * poll. Errors: SV_ERR_CONFIG (a value out of range, or src is not a
 * generator source). thread: the source's owner. */
sv_error_t *sv_generator_set_options(sv_source_t *src,
				     const sv_generator_options_t *opt);

#endif
