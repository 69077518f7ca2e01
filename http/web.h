/* web.h — the dashboard's static files (web/, DESIGN.md §1), embedded in the
 * binary at build time by cmake/embed_web.cmake: index.html, app.js,
 * app.css and uPlot from the npm registry (web/package-lock.json). */
#ifndef SV_WEB_H
#define SV_WEB_H

#include <stddef.h>

typedef struct sv_web_asset {
	const char *name; /* "index.html", "app.js", ... */
	const char *content_type;
	const unsigned char *data;
	size_t len;
} sv_web_asset_t;

/* NULL-name terminated (generated). */
extern const sv_web_asset_t sv_web_assets[];

/* The asset called name[0..n), or NULL. thread: any (pure) */
const sv_web_asset_t *sv_web_asset_find(const char *name, size_t n);

#endif
