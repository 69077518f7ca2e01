/* driver.c — lookups over driver descriptors and catalogs (see driver.h).
 * A catalog is two index functions, so this file knows no driver: the
 * registries in sources/ and sinks/ are behind them. */
#include "core/driver.h"

#include <stdio.h>
#include <string.h>

const sv_driver_field_t *sv_driver_field(const sv_driver_t *drv,
					 const char *name)
{
	if (!drv || !drv->fields)
		return NULL;
	for (const sv_driver_field_t *f = drv->fields; f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

static const sv_driver_t *at(const sv_drivers_t *cat, sv_driver_role_t role,
			     size_t i)
{
	return role == SV_DRIVER_SOURCE ? cat->source(i) : cat->sink(i);
}

const sv_driver_t *sv_drivers_find(const sv_drivers_t *cat,
				   sv_driver_role_t role, const char *kind)
{
	if (!cat || !kind)
		return NULL;
	const sv_driver_t *d;
	for (size_t i = 0; (d = at(cat, role, i)); i++)
		if (!strcmp(d->kind, kind))
			return d;
	return NULL;
}

char *sv_drivers_list(const sv_drivers_t *cat, sv_driver_role_t role,
		      unsigned caps, const char *field, char *buf, size_t len)
{
	const sv_driver_t *d;
	size_t n = 0, k = 0, o = 0;
	if (!len)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; cat && (d = at(cat, role, i)); i++)
		if (sv_driver_has(d, caps) &&
		    (!field || sv_driver_field(d, field)))
			n++;
	for (size_t i = 0; cat && (d = at(cat, role, i)); i++) {
		if (!sv_driver_has(d, caps) ||
		    (field && !sv_driver_field(d, field)))
			continue;
		const char *sep = k == 0 ? "" : k + 1 == n ? " or " : ", ";
		int w = snprintf(buf + o, len - o, "%s%s", sep, d->kind);
		if (w < 0 || (size_t)w >= len - o)
			break;
		o += (size_t)w;
		k++;
	}
	return buf;
}
