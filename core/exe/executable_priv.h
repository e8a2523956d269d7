/* executable_priv.h - exported executables and the executable cache:
** byte buffers (exe_bytes.c), the graph encoding (serialize.c), the file
** container (executable.c) and the cache (exe_cache.c).
**
** Encoding: little-endian integers of fixed width, doubles as their IEEE
** bits, strings as a u32 length, the bytes and a NUL (so a reader can hand
** out pointers into the buffer). The file layout is documented in
** docs/executable-format.md.
**
** Readers never trust a count: every read is bounds-checked and the first
** failure sticks (rbuf.bad), so a parser reads on and checks once; counts
** are also capped by the bytes left before anything is allocated.
*/
#ifndef POPC_EXECUTABLE_PRIV_H
#define POPC_EXECUTABLE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "popc/executable.h"
#include "popc/graph.h"
#include "popc/model.h"
#include "core/runtime/plan_priv.h"

/* Version of the container layout; a file of another version is refused. */
#define POPCI_EXE_FORMAT 1u

/* ---- byte buffers (exe_bytes.c) ------------------------------------------ */

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
} popci_rbuf;

/* Deepest nesting of subgraph attributes a reader accepts. */
#define POPCI_MAX_SUBGRAPH_DEPTH 32

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

/* FNV-1a, 64 bits, continued from h (start with POPCI_FNV_INIT);
** exe_bytes.c. */
#define POPCI_FNV_INIT 14695981039346656037ull
uint64_t popci_fnv1a(uint64_t h, const void *p, size_t n);

/* ---- the file (executable.c) --------------------------------------------- */

typedef struct popci_exe popci_exe;

/* Read and check a file: magic, format version, every section's CRC32
** and the file's, then the popc version. Nothing is parsed before every
** check passed. POPC_EIO naming the file (and the section) for a missing,
** truncated, corrupt or foreign file; POPC_EUNSUPPORTED for another
** format or popc version ("popc version mismatch: File was created with
** version: X and this is version Y"). */
popc_status popci_exe_read(const char *path, popci_exe **out);
void popci_exe_free(popci_exe *x); /* NULL-safe */

/* Every plugin the file names is loaded with the same version; else
** POPC_EUNSUPPORTED naming the plugin and both versions (POPC_ENOTFOUND
** when it is not loaded at all). */
popc_status popci_exe_check_plugins(const popci_exe *x);

/* Write the executable of a compiled model to path (temporary file, fsync,
** rename). key and compile_time go into the file for the cache; an entry
** of the cache (key != 0) holds no weights and no optimizer state (they
** come from the model that hits it), like PopTorch's export_model=False. */
popc_status popci_exe_write(popc_model *m, const char *path, uint64_t key,
                            double compile_time);

/* The cache key stored in the file (0 when none) and the compile time of
** the model that wrote it, in seconds. */
uint64_t popci_exe_key(const popci_exe *x);
double popci_exe_compile_time(const popci_exe *x);

/* The compiled (post-autodiff) graph in x made ready for popci_plan_new
** for model m compiled with pc: pc->compiled is filled (its graph owned
** by *cc; free with popci_compiled_clear) when x matches m's graph, the
** training flag and pc's micro-batch inputs; *used is 0 otherwise (not
** an error: compile normally). m's weights replace the stored ones and
** the loss-gradient seed gets pc->loss_scaling. */
typedef struct popci_compiled_hold {
    popci_plan_compiled pc;
    int *wrt, *grads;
    int64_t *arena_offset;
} popci_compiled_hold;
popc_status popci_exe_use_compiled(const popci_exe *x, const popc_model *m,
                                   popci_plan_config *pc,
                                   popci_compiled_hold *cc, int *used);
void popci_compiled_clear(popci_compiled_hold *cc);

/* ---- sections (executable.c: access; exe_sections.c: contents) ------------ */

#define POPCI_TAG(a, b, c, d)                                                \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 |             \
     (uint32_t)(d) << 24)
#define POPCI_SEC_OPTS POPCI_TAG('O', 'P', 'T', 'S') /* options text */
#define POPCI_SEC_PLUG POPCI_TAG('P', 'L', 'U', 'G') /* plugin versions */
#define POPCI_SEC_MODL POPCI_TAG('M', 'O', 'D', 'L') /* training, key, ... */
#define POPCI_SEC_GRPH POPCI_TAG('G', 'R', 'P', 'H') /* the model's graph */
#define POPCI_SEC_CGRF POPCI_TAG('C', 'G', 'R', 'F') /* compiled graph */
#define POPCI_SEC_INPT POPCI_TAG('I', 'N', 'P', 'T') /* input signature */
#define POPCI_SEC_OPTM POPCI_TAG('O', 'P', 'T', 'M') /* optimizer */
#define POPCI_SEC_WGHT POPCI_TAG('W', 'G', 'H', 'T') /* weights, buffers */
#define POPCI_SEC_OSTA POPCI_TAG('O', 'S', 'T', 'A') /* optimizer state */
#define POPCI_SEC_RNGS POPCI_TAG('R', 'N', 'G', 'S') /* run counter, seed */
#define POPCI_SEC_BKND POPCI_TAG('B', 'K', 'N', 'D') /* backend plan */
#define POPCI_SEC_END POPCI_TAG('E', 'N', 'D', 0)

const char *popci_exe_path(const popci_exe *x);
const char *popci_exe_popc_version(const popci_exe *x);
size_t popci_exe_size(const popci_exe *x);
int popci_exe_n_sections(const popci_exe *x);
void popci_exe_section_info(const popci_exe *x, int i, char tag[5],
                            size_t *len, uint32_t *crc);
/* A reader over section tag's payload; 0 when the file has none. */
int popci_exe_section(const popci_exe *x, uint32_t tag, popci_rbuf *r);
/* POPC_EIO "executable 'f': section 'T' is malformed at byte n (why)". */
popc_status popci_exe_bad(const popci_exe *x, uint32_t tag,
                          const popci_rbuf *r);
/* Write data to path through a temporary file in the same directory,
** fsync and rename; missing parent directories are created. POPC_EIO. */
popc_status popci_exe_write_file(const char *path, const void *data,
                                    size_t size);

/* Encode section tag of compiled model m into w (exe_sections.c). */
popc_status popci_exe_encode(popc_model *m, uint32_t tag, uint64_t key,
                             double compile_time, popci_wbuf *w);

typedef struct popci_exe_modl {
    int training;
    const char *graph_name;    /* borrowed from the file */
    int n_forward;             /* nodes of the model's graph */
    double compile_time;       /* seconds the writer's compile took */
    uint64_t key;              /* executable cache key; 0: none */
    unsigned flags;            /* POPCI_EXE_* */
} popci_exe_modl;
/* The file holds no weights or optimizer state (a cache entry). */
#define POPCI_EXE_NO_WEIGHTS 1u
popc_status popci_exe_read_modl(popci_rbuf *r, popci_exe_modl *m);

typedef struct popci_exe_rngs {
    uint64_t runs;             /* runs before the save: seeds random ops */
    int seed_set;
    int64_t seed;              /* randomSeed */
} popci_exe_rngs;

/* Per-replica figures of the compiled plan. */
typedef struct popci_exe_bknd {
    const char *backend;       /* borrowed from the file */
    int n_ipus, replicas, n_stages, n_phases;
    int n_nodes, n_forward, n_slots, ipu_version;
    uint64_t arena_bytes, persistent_bytes;
    double cycles;             /* estimated cycles of one micro-batch */
    int n_mem;
    uint64_t mem_persistent[64], mem_peak_acts[64]; /* per IPU */
} popci_exe_bknd;

/* Decoders of whole sections; POPC_EIO via popci_exe_bad when malformed. */
popc_status popci_exe_get_modl(const popci_exe *x, popci_exe_modl *m);
popc_status popci_exe_get_rngs(const popci_exe *x, popci_exe_rngs *r);
popc_status popci_exe_get_bknd(const popci_exe *x, popci_exe_bknd *b);
/* The options of the file (new, unfrozen): every option the writer had
** set, applied in table order with popc_options_set. */
popc_status popci_exe_get_options(const popci_exe *x, popc_options **out);
/* The model's graph with the file's weights. */
popc_status popci_exe_get_graph(const popci_exe *x, popc_graph **out);
/* The optimizer (NULL for an inference file). Needs its plugin. */
popc_status popci_exe_get_optimizer(const popci_exe *x, popc_optimizer **out);
/* Inputs the model was compiled with: n views (combined batch, data
** NULL) and their names (borrowed from the file), malloc'd arrays. */
popc_status popci_exe_get_inputs(const popci_exe *x, int *n,
                                 popc_view **views, const char ***names);
/* Named tensors of WGHT or OSTA: arrays of n names (borrowed from the
** file) and new tensors; free with popci_exe_tensors_free. */
popc_status popci_exe_get_tensors(const popci_exe *x, uint32_t tag, int *n,
                                  const char ***names, popc_tensor ***ts);
void popci_exe_tensors_free(int n, const char **names, popc_tensor **ts);

/* ---- hooks of model.c's compile (exe_cache.c) ---------------------------- */

typedef struct popci_exe_cache popci_exe_cache;

/* What identifies a compiled model (PopTorch's cache hash): the graph
** without weight values, the input signature, the compile options, the
** optimizer's type and constants, and the versions of popc and the
** plugins the graph uses. */
popc_status popci_compile_key(const popc_model *m, popc_tensor *const *inputs,
                              int n, uint64_t *key);

/* Before planning: a compiled graph from popc_load (m->exe_hint) or from
** the executable cache (enableExecutableCaching / POPC_CACHE_DIR) goes
** into pc->compiled. A miss keeps the entry's lock until
** popci_exe_cache_end. Problems with the cache (unwritable directory,
** corrupt entry) are warnings, never errors: the model compiles as
** usual. *out may be NULL when there is nothing to do. */
popc_status popci_exe_cache_begin(popc_model *m, popc_tensor *const *inputs,
                                  int n_inputs, popci_plan_config *pc,
                                  popci_exe_cache **out);
/* After a successful compile: log a hit, or write the entry of a miss
** (warning on failure). Frees c. NULL-safe. */
void popci_exe_cache_end(popci_exe_cache *c, popc_model *m);
/* After a failed compile: release without writing. NULL-safe. */
void popci_exe_cache_free(popci_exe_cache *c);

#endif /* POPC_EXECUTABLE_PRIV_H */
