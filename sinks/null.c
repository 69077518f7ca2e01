/* null.c — the "null" sink: counts what it is given and discards it. The
 * end of benchmark pipelines (bench/), where only the work upstream counts.
 *
 * records_out counts rows written plus raw payloads; it is updated
 * atomically, so several workers may share one null sink. */
#include "sinks/sink.h"

#include <stdlib.h>

extern const sv_sink_ops_t sv_sink_null_ops;

static sv_error_t *null_open(const sv_sink_conf_t *conf, sv_sink_t **out)
{
	sv_sink_t *snk = sv_calloc(1, sizeof(*snk));
	snk->ops = &sv_sink_null_ops;
	*out = snk;
	return NULL;
}

static sv_error_t *null_write(sv_sink_t *snk, const sv_batch_t *b)
{
	__atomic_fetch_add(&snk->records_out, (uint64_t)b->nrows,
			   __ATOMIC_RELAXED);
	return NULL;
}

static sv_error_t *null_write_raw(sv_sink_t *snk, const char *payload,
				  size_t len, const char *reason)
{
	__atomic_fetch_add(&snk->records_out, 1, __ATOMIC_RELAXED);
	return NULL;
}

static sv_error_t *null_flush(sv_sink_t *snk, int timeout_ms)
{
	return NULL;
}

static void null_close(sv_sink_t *snk)
{
	free(snk);
}

static const sv_driver_t null_driver = {.kind = "null", .caps = SV_DRIVER_RAW};

const sv_sink_ops_t sv_sink_null_ops = {
	.driver = &null_driver,
	.open = null_open,
	.write = null_write,
	.write_raw = null_write_raw,
	.flush = null_flush,
	.close = null_close,
};
