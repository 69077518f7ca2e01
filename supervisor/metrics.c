/* metrics.c — Prometheus text exposition writer (see metrics.h).
 *
 * Formatting rules from the exposition format spec: HELP text escapes
 * backslash and newline; label values also escape the double quote; values
 * are Go-style floats, where NaN, +Inf and -Inf are spelled out. Counters
 * and gauges we export are mostly integers, printed exactly (no exponent)
 * while they fit a double's 53-bit mantissa. */
#include "supervisor/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_escaped(sv_buf_t *b, const char *s, int quote)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '\\':
			sv_buf_puts(b, "\\\\");
			break;
		case '\n':
			sv_buf_puts(b, "\\n");
			break;
		case '"':
			if (quote) {
				sv_buf_puts(b, "\\\"");
				break;
			}
			/* fallthrough */
		default:
			sv_buf_putc(b, *s);
		}
	}
}

void sv_prom_family(sv_buf_t *b, const char *name, const char *type,
		    const char *help)
{
	sv_buf_printf(b, "# HELP %s ", name);
	put_escaped(b, help, 0);
	sv_buf_printf(b, "\n# TYPE %s %s\n", name, type ? type : "untyped");
}

void sv_prom_value(sv_buf_t *b, double value)
{
	if (isnan(value)) {
		sv_buf_puts(b, "NaN");
	} else if (isinf(value)) {
		sv_buf_puts(b, value > 0 ? "+Inf" : "-Inf");
	} else if (value == 0) {
		sv_buf_puts(b, "0"); /* also -0 */
	} else if (value == floor(value) && fabs(value) <= 9007199254740992.0) {
		sv_buf_printf(b, "%.0f", value);
	} else {
		/* Shortest of %.15g..%.17g that reads back as the same double. */
		char tmp[40];
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(tmp, sizeof(tmp), "%.*g", prec, value);
			if (strtod(tmp, NULL) == value)
				break;
		}
		sv_buf_puts(b, tmp);
	}
}

void sv_prom_sample(sv_buf_t *b, const char *name, const char *labels,
		    double value)
{
	sv_buf_puts(b, name);
	if (labels && *labels) {
		sv_buf_putc(b, '{');
		sv_buf_puts(b, labels);
		sv_buf_putc(b, '}');
	}
	sv_buf_putc(b, ' ');
	sv_prom_value(b, value);
	sv_buf_putc(b, '\n');
}

void sv_prom_label(sv_buf_t *labels, const char *key, const char *value)
{
	if (labels->len)
		sv_buf_putc(labels, ',');
	sv_buf_puts(labels, key);
	sv_buf_puts(labels, "=\"");
	put_escaped(labels, value ? value : "", 1);
	sv_buf_putc(labels, '"');
}
