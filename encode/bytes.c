/* bytes.c - the byte buffers serialized graphs and executable files are
** built from: appending little-endian integers, IEEE doubles, strings and
** tensors, and reading them back with bounds checks that never trust a
** count (see bytes.h); FNV-1a hashing for compile keys.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/layer/alloc.h"
#include "core/layer/shape.h"
#include "encode/bytes.h"

/* Largest list or string read from a file: far above any real graph,
** low enough that a corrupt count cannot ask for gigabytes. */
#define MAX_ITEMS (1u << 28)

/* ---- writing ------------------------------------------------------------- */

static int reserve(popci_wbuf *w, size_t n)
{
    size_t cap;
    unsigned char *p;

    if (w->oom)
        return 0;
    if (w->len + n <= w->cap)
        return 1;
    cap = w->cap ? w->cap : 4096;
    while (cap < w->len + n) {
        if (cap > SIZE_MAX / 2) {
            w->oom = 1;
            return 0;
        }
        cap *= 2;
    }
    if (!(p = popci_realloc(w->buf, cap))) {
        w->oom = 1;
        return 0;
    }
    w->buf = p;
    w->cap = cap;
    return 1;
}

void popci_w_bytes(popci_wbuf *w, const void *p, size_t n)
{
    if (!n || !reserve(w, n))
        return;
    if (p)
        memcpy(w->buf + w->len, p, n);
    else
        memset(w->buf + w->len, 0, n);
    w->len += n;
}

void popci_w_u8(popci_wbuf *w, unsigned v)
{
    unsigned char b = (unsigned char)v;

    popci_w_bytes(w, &b, 1);
}

void popci_w_u32(popci_wbuf *w, uint32_t v)
{
    unsigned char b[4];

    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    popci_w_bytes(w, b, 4);
}

void popci_w_u64(popci_wbuf *w, uint64_t v)
{
    unsigned char b[8];

    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    popci_w_bytes(w, b, 8);
}

void popci_w_i64(popci_wbuf *w, int64_t v)
{
    popci_w_u64(w, (uint64_t)v);
}

void popci_w_f64(popci_wbuf *w, double v)
{
    uint64_t bits;

    memcpy(&bits, &v, sizeof bits);
    popci_w_u64(w, bits);
}

void popci_w_str(popci_wbuf *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;

    popci_w_u32(w, (uint32_t)n);
    popci_w_bytes(w, s, n);
    popci_w_u8(w, 0);
}

void popci_w_shape(popci_wbuf *w, const popc_view *v)
{
    popci_w_u32(w, (uint32_t)v->dtype);
    popci_w_u32(w, (uint32_t)v->rank);
    for (int d = 0; d < v->rank; d++)
        popci_w_i64(w, v->dims[d]);
}

/* Element bytes are little-endian on every machine popc builds for; a
** big-endian host would need a swap here (configure refuses none today,
** so say it where it matters). */
void popci_w_tensor(popci_wbuf *w, const popc_tensor *t)
{
    popc_view v;

    memset(&v, 0, sizeof v);
    if (t) {
        v.dtype = popc_tensor_dtype(t);
        v.rank = popc_tensor_rank(t);
        memcpy(v.dims, popc_tensor_dims(t), sizeof(int64_t) * (size_t)v.rank);
    }
    popci_w_shape(w, &v);
    popci_w_u64(w, t ? (uint64_t)popc_tensor_nbytes(t) : 0);
    if (t)
        popci_w_bytes(w, popc_tensor_cdata(t), popc_tensor_nbytes(t));
}

void popci_wbuf_free(popci_wbuf *w)
{
    free(w->buf);
    memset(w, 0, sizeof *w);
}

/* ---- reading ------------------------------------------------------------- */

int popci_r_fail(popci_rbuf *r, const char *why)
{
    if (!r->bad) {
        r->bad = 1;
        r->why = why;
    }
    return 0;
}

const void *popci_r_bytes(popci_rbuf *r, size_t n)
{
    const void *p;

    if (r->bad)
        return NULL;
    if (n > r->len - r->pos) {
        popci_r_fail(r, "data ends early");
        return NULL;
    }
    p = r->p + r->pos;
    r->pos += n;
    return p;
}

unsigned popci_r_u8(popci_rbuf *r)
{
    const unsigned char *b = popci_r_bytes(r, 1);

    return b ? b[0] : 0;
}

uint32_t popci_r_u32(popci_rbuf *r)
{
    const unsigned char *b = popci_r_bytes(r, 4);
    uint32_t v = 0;

    for (int i = 0; b && i < 4; i++)
        v |= (uint32_t)b[i] << (8 * i);
    return v;
}

uint64_t popci_r_u64(popci_rbuf *r)
{
    const unsigned char *b = popci_r_bytes(r, 8);
    uint64_t v = 0;

    for (int i = 0; b && i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

int64_t popci_r_i64(popci_rbuf *r)
{
    return (int64_t)popci_r_u64(r);
}

double popci_r_f64(popci_rbuf *r)
{
    uint64_t bits = popci_r_u64(r);
    double v;

    memcpy(&v, &bits, sizeof v);
    return v;
}

const char *popci_r_str(popci_rbuf *r)
{
    uint32_t n = popci_r_u32(r);
    const char *s;

    if (r->bad)
        return "";
    if (n > MAX_ITEMS) {
        popci_r_fail(r, "a string length is out of range");
        return "";
    }
    if (!(s = popci_r_bytes(r, (size_t)n + 1)))
        return "";
    if (s[n] != '\0' || memchr(s, '\0', n)) {
        popci_r_fail(r, "a string is not terminated");
        return "";
    }
    return s;
}

uint32_t popci_r_count(popci_rbuf *r, size_t min_item)
{
    uint32_t n = popci_r_u32(r);

    if (r->bad)
        return 0;
    if (n > MAX_ITEMS ||
        (min_item && (size_t)n > (r->len - r->pos) / min_item)) {
        popci_r_fail(r, "a count is larger than the data that follows");
        return 0;
    }
    return n;
}

/* Element count that cannot overflow anywhere (numel x 8 bytes fits). */
static int count_ok(const popc_view *v)
{
    int64_t n = 1;

    for (int d = 0; d < v->rank; d++) {
        if (v->dims[d] != 0 && n > (INT64_MAX / 8) / v->dims[d])
            return 0;
        n *= v->dims[d];
    }
    return 1;
}

/* dtype, rank and dims; 0 and bad when out of range. */
int popci_r_shape(popci_rbuf *r, popc_view *v)
{
    uint32_t dt = popci_r_u32(r), rank = popci_r_u32(r);

    memset(v, 0, sizeof *v);
    if (r->bad)
        return 0;
    if (dt >= POPC_DTYPE_COUNT || rank > POPC_MAX_RANK)
        return popci_r_fail(r, "a dtype or rank is out of range");
    v->dtype = (popc_dtype)dt;
    v->rank = (int)rank;
    for (uint32_t d = 0; d < rank; d++)
        if ((v->dims[d] = popci_r_i64(r)) < 0)
            return popci_r_fail(r, "a dimension is negative");
    if (!r->bad && !count_ok(v))
        return popci_r_fail(r, "a shape has too many elements");
    return !r->bad;
}

popc_tensor *popci_r_tensor(popci_rbuf *r, popc_status *st)
{
    popc_view v;
    int64_t numel;
    size_t nbytes;
    uint64_t stored;
    const void *data;
    popc_tensor *t = NULL;

    *st = POPC_OK;
    if (!popci_r_shape(r, &v))
        return NULL;
    stored = popci_r_u64(r);
    if (r->bad)
        return NULL;
    if (v.dtype == POPC_DTYPE_UNDEFINED ||
        popci_shape_size("tensor", v.dtype, v.dims, v.rank, &numel,
                         &nbytes) != POPC_OK ||
        stored != (uint64_t)nbytes) {
        popci_r_fail(r, "a tensor's byte count does not match its shape");
        return NULL;
    }
    if (!(data = popci_r_bytes(r, nbytes)))
        return NULL;
    if ((*st = popc_tensor_from_data(v.dtype, v.dims, v.rank, data, &t)) !=
        POPC_OK) {
        popci_r_fail(r, "a tensor cannot be allocated");
        return NULL;
    }
    return t;
}

/* ---- hashing --------------------------------------------------------------- */

uint64_t popci_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Four independent lanes of 8-byte words, each multiplied, rotated and
** multiplied again (the shape of xxHash64's round), so that the multiplies
** of consecutive words overlap; the tail and the length are folded in at
** the end. Any changed bit of the input changes every lane's result. */
#define HASH_P1 0x9e3779b185ebca87ull
#define HASH_P2 0xc2b2ae3d27d4eb4full

static uint64_t hash_round(uint64_t lane, uint64_t word)
{
    lane += word * HASH_P2;
    lane = lane << 31 | lane >> 33;
    return lane * HASH_P1;
}

static uint64_t load_u64(const unsigned char *b)
{
    uint64_t v;

    memcpy(&v, b, sizeof v);
    return v;
}

uint64_t popci_hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t lane[4] = {HASH_P1, HASH_P2, ~HASH_P1, ~HASH_P2}, h;
    size_t i = 0;

    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++)
            lane[k] = hash_round(lane[k], load_u64(b + i + 8 * (size_t)k));
    h = (uint64_t)n * HASH_P1;
    for (int k = 0; k < 4; k++)
        h = hash_round(h ^ lane[k], lane[k]);
    for (; i + 8 <= n; i += 8)
        h = hash_round(h, load_u64(b + i));
    for (; i < n; i++)
        h = hash_round(h, b[i]);
    h ^= h >> 29;
    h *= HASH_P2;
    return h ^ (h >> 32);
}
