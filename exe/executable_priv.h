/* executable_priv.h - exported executables and the executable cache: the
** file container (executable.c), its sections (exe_sections.c), loading
** (exe_load.c), inspection (exe_describe.c) and the cache (exe_cache.c),
** built on the byte encoding of encode/ (encode/bytes.h). The file
** layout is documented in docs/executable-format.md.
*/
#ifndef POPC_EXECUTABLE_PRIV_H
#define POPC_EXECUTABLE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "popc/executable.h"
#include "popc/graph.h"
#include "popc/model.h"
#include "encode/bytes.h"
#include "core/layer/hooks.h"
#include "core/layer/plan.h"

/* Version of the container layout; a file of another version is refused.
** It is the encoding's (the graph section is popc_graph_serialize's). */
#define POPCI_EXE_FORMAT POPCI_ENCODING_FORMAT

/* ---- the file (executable.c) --------------------------------------------- */

typedef struct popci_exe popci_exe;

/* Read and check a file: magic, format version, every section's CRC32
** and the file's, then the popc version. Nothing is parsed before every
** check passed. POPC_EIO naming the file (and the section) for a missing,
** truncated, corrupt or foreign file; POPC_EUNSUPPORTED for another
** format or popc version ("popc version mismatch: File was created with
** version: X and this is version Y"). */
popc_status popci_exe_read(const char *path, popci_exe **out);
/* Read only sections tags[0..n) of a file, for a cache lookup: the file
** is mapped, not copied, and the magic, the format and popc versions and
** the CRC32 of each wanted section are checked; the other sections (the
** model's own graph, tens of MB for a large model) are neither read nor
** handed out, and the whole-file CRC32, which would read them, is not
** checked. A wanted section that is missing is POPC_EIO. */
popc_status popci_exe_read_sections(const char *path, const uint32_t *tags,
                                    int n, popci_exe **out);
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

/* ---- the executable cache (exe_cache.c) -------------------------------- */

typedef struct popci_exe_cache popci_exe_cache;

/* The hooks of a model's compile (core/layer/hooks.h). Before
** planning, a compiled graph from popc_load (the layer's model data) or
** from the executable cache (enableExecutableCaching / POPC_CACHE_DIR)
** goes into pc->compiled; a miss keeps the entry's lock until the compile
** ends, then writes the entry. Problems with the cache (unwritable
** directory, corrupt entry) are warnings, never errors: the model compiles
** as usual. */
extern const popci_model_hooks popci_exe_hooks;

/* Release a cache handle without writing. NULL-safe. */
void popci_exe_cache_free(popci_exe_cache *c);

#endif /* POPC_EXECUTABLE_PRIV_H */
