/* error.c — construction and naming of sv_error_t (see error.h). */
#define _GNU_SOURCE
#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static const char *const cat_names[SV_ERR__COUNT] = {
	[SV_ERR_CONFIG] = "config",
	[SV_ERR_SUBMISSION] = "submission",
	[SV_ERR_BINDING] = "binding",
	[SV_ERR_UDF_MISSING] = "udf_missing",
	[SV_ERR_COVERAGE] = "coverage",
	[SV_ERR_PLANNING] = "planning",
	[SV_ERR_RUNTIME] = "runtime",
	[SV_ERR_RETRY_EXHAUSTED] = "retry_exhausted",
	[SV_ERR_COMMIT] = "commit",
	[SV_ERR_MATERIALIZATION] = "materialization",
	[SV_ERR_CHECKPOINT] = "checkpoint",
	[SV_ERR_OFFSET] = "offset",
	[SV_ERR_WATERMARK] = "watermark",
	[SV_ERR_SINK_COMMIT] = "sink_commit",
	[SV_ERR_CONFLICT] = "conflict",
	[SV_ERR_NOT_FOUND] = "not_found",
	[SV_ERR_UNAUTHENTICATED] = "unauthenticated",
	[SV_ERR_FORBIDDEN] = "forbidden",
	[SV_ERR_REBALANCE] = "rebalance",
	[SV_ERR_UNAVAILABLE] = "unavailable",
};

const char *sv_errcat_name(sv_errcat_t cat)
{
	if ((unsigned)cat >= SV_ERR__COUNT)
		return "unknown";
	return cat_names[cat];
}

bool sv_errcat_retriable(sv_errcat_t cat)
{
	switch (cat) {
	case SV_ERR_RUNTIME:
	case SV_ERR_COMMIT:
	case SV_ERR_OFFSET:
	case SV_ERR_SINK_COMMIT:
	case SV_ERR_WATERMARK:
	case SV_ERR_REBALANCE:
	case SV_ERR_UNAVAILABLE:
	case SV_ERR_BINDING: /* a topic may appear; policy bounds the attempts */
		return true;
	default:
		return false;
	}
}

const char *sv_errcat_backend_kind(sv_errcat_t cat, const char *field)
{
	switch (cat) {
	case SV_ERR_CONFIG:
		return "runtime_init_error";
	case SV_ERR_BINDING:
		if (field &&
		    (!strncmp(field, "sink", 4) ||
		     !strncmp(field, "dead_letter", 11) ||
		     !strncmp(field, "late_sink", 9)))
			return "backend_sink_error";
		return "backend_registration_error";
	case SV_ERR_SUBMISSION:
	case SV_ERR_UDF_MISSING:
	case SV_ERR_COVERAGE:
	case SV_ERR_PLANNING:
		return "backend_planning_error";
	case SV_ERR_COMMIT:
	case SV_ERR_SINK_COMMIT:
		return "backend_sink_error";
	case SV_ERR_RUNTIME:
	case SV_ERR_RETRY_EXHAUSTED:
	case SV_ERR_MATERIALIZATION:
	case SV_ERR_CHECKPOINT:
	case SV_ERR_OFFSET:
	case SV_ERR_WATERMARK:
	case SV_ERR_REBALANCE:
		return "backend_execution_error";
	default:
		return NULL;
	}
}

int sv_errcat_http_status(sv_errcat_t cat)
{
	switch (cat) {
	case SV_ERR_SUBMISSION:
	case SV_ERR_CONFIG:
		return 400;
	case SV_ERR_BINDING:
		return 400;
	case SV_ERR_COVERAGE:
	case SV_ERR_UDF_MISSING:
		return 422;
	case SV_ERR_CONFLICT:
		return 409;
	case SV_ERR_NOT_FOUND:
		return 404;
	case SV_ERR_UNAUTHENTICATED:
		return 401;
	case SV_ERR_FORBIDDEN:
		return 403;
	case SV_ERR_UNAVAILABLE:
		return 503;
	default:
		return 500;
	}
}

sv_error_t *sv_error_newv(sv_errcat_t cat, const char *fmt, va_list ap)
{
	sv_error_t *err = sv_calloc(1, sizeof(*err));
	err->category = cat;
	if (vasprintf(&err->message, fmt, ap) < 0)
		abort();
	err->retriable = sv_errcat_retriable(cat);
	return err;
}

sv_error_t *sv_error_new(sv_errcat_t cat, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sv_error_t *err = sv_error_newv(cat, fmt, ap);
	va_end(ap);
	return err;
}

sv_error_t *sv_error_set_field(sv_error_t *err, const char *field)
{
	free(err->field);
	err->field = field ? sv_strdup(field) : NULL;
	return err;
}

sv_error_t *sv_error_set_job(sv_error_t *err, const char *job_id, int attempt)
{
	free(err->job_id);
	err->job_id = job_id ? sv_strdup(job_id) : NULL;
	err->attempt = attempt;
	return err;
}

sv_error_t *sv_error_set_cause(sv_error_t *err, int code, const char *cause)
{
	free(err->cause);
	err->cause_code = code;
	err->cause = cause ? sv_strdup(cause) : NULL;
	return err;
}

sv_error_t *sv_error_set_details(sv_error_t *err, const char *json)
{
	free(err->details_json);
	err->details_json = json ? sv_strdup(json) : NULL;
	return err;
}

sv_error_t *sv_error_prefix(sv_error_t *err, const char *fmt, ...)
{
	char *pre = NULL, *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&pre, fmt, ap) < 0)
		abort();
	va_end(ap);
	if (asprintf(&msg, "%s: %s", pre, err->message) < 0)
		abort();
	free(pre);
	free(err->message);
	err->message = msg;
	return err;
}

sv_error_t *sv_error_copy(const sv_error_t *err)
{
	if (!err)
		return NULL;
	sv_error_t *c = sv_calloc(1, sizeof(*c));
	*c = *err;
	c->message = sv_strdup(err->message);
	c->field = err->field ? sv_strdup(err->field) : NULL;
	c->job_id = err->job_id ? sv_strdup(err->job_id) : NULL;
	c->cause = err->cause ? sv_strdup(err->cause) : NULL;
	c->details_json = err->details_json ? sv_strdup(err->details_json)
					    : NULL;
	return c;
}

void sv_error_destroy(sv_error_t *err)
{
	if (!err)
		return;
	free(err->message);
	free(err->field);
	free(err->job_id);
	free(err->cause);
	free(err->details_json);
	free(err);
}
