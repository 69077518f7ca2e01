/* log.c — sv_log writes one line per call to stderr:
 *   2026-11-29T20:00:00.123Z INFO  [facility] job=<id> attempt=<n> message
 * A single fprintf per line keeps lines whole across threads. */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"

static int level_set;
static sv_loglevel_t cur_level = SV_LOG_INFO;

void sv_log_set_level(sv_loglevel_t level)
{
	cur_level = level;
	level_set = 1;
}

sv_loglevel_t sv_log_level(void)
{
	if (!level_set) {
		const char *e = getenv("STREAMVISOR_LOG_LEVEL");
		if (e) {
			if (!strcmp(e, "error"))
				cur_level = SV_LOG_ERROR;
			else if (!strcmp(e, "warn"))
				cur_level = SV_LOG_WARN;
			else if (!strcmp(e, "debug"))
				cur_level = SV_LOG_DEBUG;
			else
				cur_level = SV_LOG_INFO;
		}
		level_set = 1;
	}
	return cur_level;
}

static const char *level_name(sv_loglevel_t l)
{
	switch (l) {
	case SV_LOG_ERROR:
		return "ERROR";
	case SV_LOG_WARN:
		return "WARN ";
	case SV_LOG_INFO:
		return "INFO ";
	default:
		return "DEBUG";
	}
}

void sv_log(const sv_logctx_t *ctx, sv_loglevel_t level, const char *facility,
	    const char *fmt, ...)
{
	if (level > sv_log_level())
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	char when[40];
	sv_format_iso8601(sv_now_ms(), when, sizeof(when));
	if (ctx && ctx->job_id)
		fprintf(stderr, "%s %s [%s] job=%s attempt=%d %s\n", when,
			level_name(level), facility, ctx->job_id, ctx->attempt,
			msg);
	else
		fprintf(stderr, "%s %s [%s] %s\n", when, level_name(level),
			facility, msg);
}
