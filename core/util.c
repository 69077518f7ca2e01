/* util.c — allocation, clocks, arena and buffer helpers (see util.h).
 * Allocation failure aborts: the supervisor cannot do anything useful
 * without memory, and checking every small allocation hides real errors. */
#define _GNU_SOURCE
#include "core/util.h"

#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static void oom(void)
{
	fputs("streamvisor: out of memory\n", stderr);
	abort();
}

void *sv_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *sv_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *sv_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom();
	return q;
}

char *sv_strdup(const char *s)
{
	char *d = strdup(s);
	if (!d)
		oom();
	return d;
}

char *sv_strndup(const char *s, size_t n)
{
	char *d = sv_malloc(n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

int64_t sv_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool sv_is_leap_year(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int64_t sv_days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void sv_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

void sv_format_iso8601(int64_t ms, char *buf, size_t len)
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03dZ", (int)(ms % 1000));
}

int64_t sv_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t sv_mono_ms(void)
{
	return sv_mono_ns() / 1000000;
}

int64_t sv_mono_us(void)
{
	return sv_mono_ns() / 1000;
}

/* ---- arena ---- */

struct sv_arena_block {
	sv_arena_block_t *next;
	size_t size, used;
	char data[];
};

#define ARENA_MIN_BLOCK (64 * 1024)

void sv_arena_init(sv_arena_t *a)
{
	memset(a, 0, sizeof(*a));
}

static void free_chain(sv_arena_block_t *b)
{
	while (b) {
		sv_arena_block_t *n = b->next;
		free(b);
		b = n;
	}
}

void sv_arena_release(sv_arena_t *a)
{
	free_chain(a->head);
	free_chain(a->full);
	memset(a, 0, sizeof(*a));
}

void sv_arena_reset(sv_arena_t *a)
{
	/* Keep the largest block, free the rest: bounded memory, no churn. */
	sv_arena_block_t *keep = a->head;
	for (sv_arena_block_t *b = a->full; b; b = b->next)
		if (!keep || b->size > keep->size)
			keep = b;
	sv_arena_block_t *all[2] = {a->head, a->full};
	for (int i = 0; i < 2; i++) {
		sv_arena_block_t *b = all[i];
		while (b) {
			sv_arena_block_t *n = b->next;
			if (b != keep)
				free(b);
			b = n;
		}
	}
	if (keep) {
		keep->next = NULL;
		keep->used = 0;
	}
	a->head = keep;
	a->full = NULL;
	a->used_bytes = 0;
}

void *sv_arena_alloc(sv_arena_t *a, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	sv_arena_block_t *b = a->head;
	if (!b || b->size - b->used < n) {
		size_t size = ARENA_MIN_BLOCK;
		if (b && b->size * 2 > size)
			size = b->size * 2;
		if (size < n)
			size = n;
		sv_arena_block_t *nb = sv_malloc(sizeof(*nb) + size);
		nb->size = size;
		nb->used = 0;
		nb->next = NULL;
		if (b) {
			b->next = a->full;
			a->full = b;
		}
		a->head = b = nb;
	}
	void *p = b->data + b->used;
	b->used += n;
	a->used_bytes += n;
	return p;
}

char *sv_arena_memdup(sv_arena_t *a, const void *p, size_t n)
{
	char *d = sv_arena_alloc(a, n ? n : 1);
	if (n)
		memcpy(d, p, n);
	return d;
}

/* ---- buffer ---- */

void sv_buf_init(sv_buf_t *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
}

void sv_buf_release(sv_buf_t *b)
{
	free(b->data);
	sv_buf_init(b);
}

void sv_buf_reset(sv_buf_t *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void sv_buf_reserve(sv_buf_t *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap * 2 : 256;
	while (cap < b->len + extra + 1)
		cap *= 2;
	b->data = sv_realloc(b->data, cap);
	b->cap = cap;
}

void sv_buf_append(sv_buf_t *b, const void *p, size_t n)
{
	sv_buf_reserve(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void sv_buf_putc(sv_buf_t *b, char c)
{
	sv_buf_reserve(b, 1);
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
}

void sv_buf_puts(sv_buf_t *b, const char *s)
{
	sv_buf_append(b, s, strlen(s));
}

void sv_buf_printf(sv_buf_t *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sv_buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void sv_buf_json_str(sv_buf_t *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	sv_buf_reserve(b, n + 2);
	sv_buf_putc(b, '"');
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		sv_buf_append(b, s + start, i - start);
		start = i + 1;
		switch (c) {
		case '"':
			sv_buf_append(b, "\\\"", 2);
			break;
		case '\\':
			sv_buf_append(b, "\\\\", 2);
			break;
		case '\n':
			sv_buf_append(b, "\\n", 2);
			break;
		case '\r':
			sv_buf_append(b, "\\r", 2);
			break;
		case '\t':
			sv_buf_append(b, "\\t", 2);
			break;
		case '\b':
			sv_buf_append(b, "\\b", 2);
			break;
		case '\f':
			sv_buf_append(b, "\\f", 2);
			break;
		default: {
			char esc[6] = {'\\', 'u',         '0',
				       '0',  hex[c >> 4], hex[c & 15]};
			sv_buf_append(b, esc, 6);
		}
		}
	}
	sv_buf_append(b, s + start, n - start);
	sv_buf_putc(b, '"');
}

char *sv_buf_detach(sv_buf_t *b)
{
	char *d = b->data ? b->data : sv_strdup("");
	sv_buf_init(b);
	return d;
}

/* glibc's dynamic mmap threshold rises to the size of the largest mmapped
 * block freed: librdkafka's fetch buffers (MBs), so after the first few
 * fetches such blocks are carved out of the arenas, whose pages stay after
 * the free; and each thread that allocates may get an arena of its own.
 * A fixed threshold maps and unmaps big blocks per use. The environment
 * (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_) still wins. */
static void alloc_compact_once(void)
{
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, 2);
	if (!getenv("MALLOC_MMAP_THRESHOLD_"))
		mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}

void sv_alloc_compact(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, alloc_compact_once);
}

void sv_alloc_trim(void)
{
	malloc_trim(0);
}

/* Code pages only the start touched. The kernel maps file pages in 64 KiB
 * batches around each fault ("fault-around"), so RocksDB's static
 * initialisers alone leave about 6 MB of its 11 MB of code resident in
 * every process that loads it, though the process never runs most of it
 * again. Dropping a clean, never-written, file-backed mapping's pages
 * (MADV_DONTNEED) only unmaps them: they stay in the page cache and fault
 * back in when used. A mapping that holds a written (private) page, or is
 * writable, is left alone: dropping it would lose the write. */
static size_t release_mapping(uintptr_t lo, uintptr_t hi, bool clean,
			      size_t rss_kb)
{
	if (!clean || hi <= lo || !rss_kb)
		return 0;
	if (madvise((void *)lo, hi - lo, MADV_DONTNEED))
		return 0;
	return rss_kb * 1024;
}

size_t sv_mem_release_code(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return 0;
	char line[512];
	uintptr_t lo = 0, hi = 0;
	bool cand = false, clean = true;
	size_t rss = 0, total = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		char perms[8], path[8] = "";
		unsigned long long off;
		unsigned dmaj, dmin;
		unsigned long ino;
		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu %7s", &a, &b,
			   perms, &off, &dmaj, &dmin, &ino, path) >= 7) {
			if (cand)
				total += release_mapping(lo, hi, clean, rss);
			lo = a;
			hi = b;
			/* read-only or executable, private, of a file */
			cand = perms[1] == '-' && perms[3] == 'p' && ino != 0 &&
				path[0] == '/';
			clean = true;
			rss = 0;
			continue;
		}
		size_t kb;
		if (sscanf(line, "Rss: %zu kB", &kb) == 1)
			rss = kb;
		else if ((sscanf(line, "Private_Dirty: %zu kB", &kb) == 1 ||
			  sscanf(line, "Anonymous: %zu kB", &kb) == 1 ||
			  sscanf(line, "Swap: %zu kB", &kb) == 1) &&
			 kb)
			clean = false;
	}
	if (cand)
		total += release_mapping(lo, hi, clean, rss);
	fclose(f);
	return total;
}
