/* web.c — finds the dashboard's embedded files (web.h). The table is
 * generated at build time from web/ and the pinned npm packages, so the
 * binary serves the dashboard with nothing on disk and nothing fetched at
 * run time; a name is looked up by exact match, so no path outside the
 * table can be asked for. */
#include "http/web.h"

#include <string.h>

const sv_web_asset_t *sv_web_asset_find(const char *name, size_t n)
{
	for (const sv_web_asset_t *a = sv_web_assets; a->name; a++)
		if (strlen(a->name) == n && memcmp(a->name, name, n) == 0)
			return a;
	return NULL;
}
