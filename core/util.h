/* util.h — allocation that never returns NULL, clocks, a bump arena and a
 * growable string buffer. Used by every module. */
#ifndef SV_UTIL_H
#define SV_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *sv_malloc(size_t n);
void *sv_calloc(size_t n, size_t size);
void *sv_realloc(void *p, size_t n);
char *sv_strdup(const char *s);
char *sv_strndup(const char *s, size_t n);

/* Wall clock in milliseconds since the epoch. thread: any */
int64_t sv_now_ms(void);
/* Proleptic Gregorian calendar (Howard Hinnant's algorithms), shared by
 * the record decoder and the expression functions. */
bool sv_is_leap_year(int64_t y);
/* Days since 1970-01-01 of y-m-d (m 1..12, d 1..31). */
int64_t sv_days_from_civil(int64_t y, int64_t m, int64_t d);
/* The date of z days since 1970-01-01. */
void sv_civil_from_days(int64_t z, int64_t *y, int *m, int *d);
/* ms since the epoch as "2026-11-30T17:33:42.914Z" (UTC); len >= 25. */
void sv_format_iso8601(int64_t ms, char *buf, size_t len);
/* Monotonic clock in milliseconds / nanoseconds. thread: any */
int64_t sv_mono_ms(void);
int64_t sv_mono_us(void);
int64_t sv_mono_ns(void);

/* Bump arena: many small allocations freed together (string bytes of a
 * batch). Blocks are kept on reset, so a reused arena stops allocating. */
typedef struct sv_arena_block sv_arena_block_t;
typedef struct sv_arena {
	sv_arena_block_t *head; /* current block */
	sv_arena_block_t *full; /* blocks already filled */
	size_t used_bytes; /* bytes handed out since last reset */
} sv_arena_t;

void sv_arena_init(sv_arena_t *a);
void sv_arena_release(sv_arena_t *a);
/* Forget every allocation, keep the memory. */
void sv_arena_reset(sv_arena_t *a);
/* n bytes, 8-byte aligned; valid until reset/release. */
void *sv_arena_alloc(sv_arena_t *a, size_t n);
/* Copy n bytes into the arena (not NUL-terminated unless n includes it). */
char *sv_arena_memdup(sv_arena_t *a, const void *p, size_t n);

/* Growable byte buffer (always NUL-terminated for convenience). */
typedef struct sv_buf {
	char *data;
	size_t len, cap;
} sv_buf_t;

void sv_buf_init(sv_buf_t *b);
void sv_buf_release(sv_buf_t *b);
void sv_buf_reset(sv_buf_t *b);
void sv_buf_reserve(sv_buf_t *b, size_t extra);
void sv_buf_append(sv_buf_t *b, const void *p, size_t n);
void sv_buf_putc(sv_buf_t *b, char c);
void sv_buf_puts(sv_buf_t *b, const char *s);
void sv_buf_printf(sv_buf_t *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Append s as a JSON string literal with quotes and escapes. */
void sv_buf_json_str(sv_buf_t *b, const char *s, size_t n);
/* Detach the data (caller frees); buffer becomes empty. */
char *sv_buf_detach(sv_buf_t *b);

/* Set glibc's allocator for a bounded footprint, once per process (the
 * first job with a memory budget asks; docs/performance.md "The
 * allocator"): at most 2 arenas, and a fixed mmap threshold of 256 KiB. */
void sv_alloc_compact(void);
/* Give the allocator's free pages back to the kernel (malloc_trim):
 * free chunks in the middle of an arena otherwise stay resident. Takes
 * each arena's lock in turn. thread: any. */
void sv_alloc_trim(void);

/* Unmap the pages of clean, read-only file mappings (the libraries' code,
 * most of it touched only by their start-up): they stay in the page cache
 * and fault back in when used. Returns the bytes that were resident. The
 * supervisor calls it once it is up (docs/performance.md "Memory"). */
size_t sv_mem_release_code(void);

#define SV_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SV_UNUSED(x) ((void)(x))

#endif
