/* bytes.h - the byte encoding graphs, executables and cache keys are
** built from, the interface of the encode/ layer to the layers that write
** or read it (dist/: compile keys; exe/: executables and their cache):
** byte buffers (bytes.c), the graph encoding (serialize.c) and the 64-bit
** FNV-1a hash compiles are keyed and checksummed with.
**
** Encoding: little-endian integers of fixed width, doubles as their IEEE
** bits, strings as a u32 length, the bytes and a NUL (so a reader can hand
** out pointers into the buffer). docs/executable-format.md documents the
** graph section built from it.
**
** Readers never trust a count: every read is bounds-checked and the first
** failure sticks (rbuf.bad), so a parser reads on and checks once; counts
** are also capped by the bytes left before anything is allocated.
*/
#ifndef POPC_ENCODE_BYTES_H
#define POPC_ENCODE_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "popc/graph.h"
#include "popc/tensor.h"

/* FNV-1a, 64 bits, continued from h (start with POPCI_FNV_INIT). */
#define POPCI_FNV_INIT 14695981039346656037ull
uint64_t popci_fnv1a(uint64_t h, const void *p, size_t n);
/* A 64-bit digest of n bytes at memory speed, for bulk data such as a
** model's constants (FNV-1a takes a byte per multiply). Not persisted:
** it may change between versions. */
uint64_t popci_hash_bytes(const void *p, size_t n);

/* Version of the encoding (the graph bytes and the executable container
** built from them); bytes of another version are refused. */
#define POPCI_ENCODING_FORMAT 1u

/* ---- byte buffers (bytes.c) ------------------------------------------ */

typedef struct popci_wbuf {
    unsigned char *buf;
    size_t len, cap;
    int oom;                   /* an append failed: the buffer is useless */
} popci_wbuf;

void popci_w_bytes(popci_wbuf *w, const void *p, size_t n);
void popci_w_u8(popci_wbuf *w, unsigned v);
void popci_w_u32(popci_wbuf *w, uint32_t v);
void popci_w_u64(popci_wbuf *w, uint64_t v);
void popci_w_i64(popci_wbuf *w, int64_t v);
void popci_w_f64(popci_wbuf *w, double v);
void popci_w_str(popci_wbuf *w, const char *s); /* NULL: empty string */
/* dtype, rank and dims of v. */
void popci_w_shape(popci_wbuf *w, const popc_view *v);
/* dtype, rank, dims, byte count and the bytes (data NULL: zeros). */
void popci_w_tensor(popci_wbuf *w, const popc_tensor *t);
void popci_wbuf_free(popci_wbuf *w);

typedef struct popci_rbuf {
    const unsigned char *p;
    size_t len, pos;
    int bad;                   /* a read ran past the end or was malformed */
    const char *why;           /* static: what was wrong first */
    int depth;                 /* subgraph nesting of the current read */
    int weights_later;         /* a weight stored without its bytes is an
                               ** unfilled placeholder the caller replaces
                               ** (0: zeros) */
} popci_rbuf;

const void *popci_r_bytes(popci_rbuf *r, size_t n); /* NULL when bad */
unsigned popci_r_u8(popci_rbuf *r);
uint32_t popci_r_u32(popci_rbuf *r);
uint64_t popci_r_u64(popci_rbuf *r);
int64_t popci_r_i64(popci_rbuf *r);
double popci_r_f64(popci_rbuf *r);
/* Borrowed pointer into the buffer (NUL-terminated); "" when bad. */
const char *popci_r_str(popci_rbuf *r);
/* A count of items of at least min_item bytes each; 0 and bad when more
** than the bytes left could hold. */
uint32_t popci_r_count(popci_rbuf *r, size_t min_item);
/* A shape written by popci_w_shape into v (data NULL); 0 and bad when a
** dtype, rank or dimension is out of range or the element count could
** overflow. */
int popci_r_shape(popci_rbuf *r, popc_view *v);
/* A tensor written by popci_w_tensor (new, owned by the caller). NULL
** and bad on a malformed one or out of memory (*st tells which). */
popc_tensor *popci_r_tensor(popci_rbuf *r, popc_status *st);
/* Mark r bad with a static reason; returns 0. */
int popci_r_fail(popci_rbuf *r, const char *why);

/* ---- graphs (serialize.c) ------------------------------------------------ */

/* Initializers are written with shape only; reading gives zero tensors. */
#define POPCI_SER_NO_WEIGHTS 1u
/* Tensor data is written as its 64-bit digest (popci_hash_bytes), not its
** bytes: for hashing a graph (the compile key), never for a file; such an
** encoding cannot be read back. */
#define POPCI_SER_DIGEST 2u

/* Append g: every value, node, attribute, annotation, the outputs, the
** buffer updates and the builder state (scopes, annotations, constant
** counter). POPC_ENOMEM. */
popc_status popci_graph_write(const popc_graph *g, unsigned flags,
                              popci_wbuf *w);
/* Read a graph written by popci_graph_write; ids, names and shapes are
** restored as they were (no shape inference runs). POPC_EIO with the
** reason for a malformed encoding (the caller names the file), or
** POPC_ENOMEM. */
popc_status popci_graph_read(popci_rbuf *r, popc_graph **out);

#endif /* POPC_ENCODE_BYTES_H */
