/* exe_cache.c - the executable cache (Options.enableExecutableCaching,
** POPC_CACHE_DIR) and reuse of a compiled graph at compile time.
**
** A model's compile calls the hooks at the end (popci_exe_hooks) once the
** micro-batch shapes are known and once the model is compiled. A compiled
** graph comes from popc_load (the layer's model data: the file being
** loaded)
** or from <dir>/<key>.popcexe; it replaces shape inference, verification
** and autodiff in popci_plan_new. The key (popci_compile_key) leaves out the
** weight values, so a model with other initial weights still hits: its
** weights replace the stored ones.
**
** Concurrency: the entry's lock file <dir>/<key>.lock is held with flock
** from the lookup to the write of a miss, so of several processes
** compiling the same model one compiles and the others wait and hit.
** A cache that cannot be used (directory not writable, corrupt or stale
** entry) is a warning: the model compiles as if caching were off.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "popc/log.h"
#include "popc/executable.h"
#include "popc/model.h"
#include "popc/options.h"
#include "popc/optimizer.h"
#include "popc/registry.h"
#include "popc/version.h"
#include "core/layer/alloc.h"
#include "encode/compile_key.h"
#include "exe/executable_priv.h"
#include "core/layer/graph.h"
#include "core/layer/model.h"
#include "core/layer/optimizer.h"
#include "core/layer/options.h"

struct popci_exe_cache {
    popci_compiled_hold hold;  /* the graph handed to the plan */
    int hit;                   /* pc->compiled came from the cache */
    int from_hint;             /* ... or from popc_load */
    double stored_time;        /* compile time recorded in the entry */
    uint64_t key;
    char *path;                /* the entry; NULL when caching is off */
    int lock_fd;               /* held on a miss until the entry is written */
};

/* ---- reuse of a compiled graph ------------------------------------------------- */

void popci_compiled_clear(popci_compiled_hold *cc)
{
    popc_graph_free(cc->pc.graph);
    free(cc->wrt);
    free(cc->grads);
    free(cc->arena_offset);
    memset(cc, 0, sizeof *cc);
}

static int same_view(const popc_view *a, const popc_view *b)
{
    return a->dtype == b->dtype && a->rank == b->rank &&
           memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0;
}

/* Does compiled graph c extend g (same values and nodes first) and take
** these micro-batch inputs? The reason goes to the debug log. */
/* The value of c named like value v of g, or -1. */
static int in_compiled(const popc_graph *g, int v, const popc_graph *c)
{
    return popc_graph_find_value(c, popc_graph_value_name(g, v));
}

/* c, a compiled graph from an entry whose key matched, was compiled from
** g: the key holds the graph's structure, and this checks what a
** collision or a stale entry would get wrong. The graph optimizer
** rewrites the forward nodes (opt/), so values are matched by name: the
** inputs in order with the compiled shapes, and every weight with its
** kind, trainability and shape. */
static int extends(const popc_graph *g, const popc_graph *c,
                   const popci_plan_config *pc)
{
    const char *why = NULL;

    if (popc_graph_n_inputs(c) != pc->n_inputs ||
        popc_graph_n_inputs(g) != pc->n_inputs ||
        popc_graph_n_outputs(c) != popc_graph_n_outputs(g))
        why = "input or output counts differ";
    for (int v = 0; !why && v < popc_graph_n_values(g); v++) {
        popc_value_kind k = popc_graph_value_kind(g, v);
        int cv = in_compiled(g, v, c);
        popc_view a = popc_graph_value_info(g, v), b;

        if (k != POPC_VALUE_INPUT && k != POPC_VALUE_INITIALIZER)
            continue;
        b = popc_graph_value_info(c, cv);
        if (cv < 0 || popc_graph_value_kind(c, cv) != k ||
            popc_graph_value_trainable(g, v) !=
                popc_graph_value_trainable(c, cv))
            why = "an input or a weight differs";
        else if (k == POPC_VALUE_INITIALIZER && !same_view(&a, &b))
            why = "a weight has another shape";
    }
    for (int i = 0; !why && i < pc->n_inputs; i++) {
        popc_view b = popc_graph_value_info(c, popc_graph_input(c, i));
        if (in_compiled(g, popc_graph_input(g, i), c) !=
                popc_graph_input(c, i) ||
            !same_view(&pc->inputs[i], &b))
            why = "the input shapes differ";
    }
    if (why)
        popc_log(POPC_LOG_DEBUG, "compiled graph not reused: %s", why);
    return why == NULL;
}

/* Every weight of a compiled graph is one of the model's (extends), and
** with as many of them each unfilled placeholder is replaced. */
static int count_weights(const popc_graph *g)
{
    int n = 0;

    for (int v = 0; v < popc_graph_n_values(g); v++)
        n += popc_graph_value_kind(g, v) == POPC_VALUE_INITIALIZER;
    return n;
}

/* The loss-gradient seed holds the loss scaling (plan.c find_seed). */
static void set_seed(popc_graph *c, int seed, double ls)
{
    popc_tensor *t = seed >= 0 ? popc_graph_value_tensor(c, seed) : NULL;

    if (!t || popc_tensor_numel(t) != 1)
        return;
    if (popc_tensor_dtype(t) == POPC_DTYPE_F32)
        *(float *)popc_tensor_data(t) = (float)ls;
    else if (popc_tensor_dtype(t) == POPC_DTYPE_F16)
        *(uint16_t *)popc_tensor_data(t) = popc_f32_to_f16((float)ls);
}

popc_status popci_exe_use_compiled(const popci_exe *x, const popc_model *m,
                                   popci_plan_config *pc,
                                   popci_compiled_hold *cc, int *used)
{
    const popc_graph *g = popci_model_host_graph(m);
    popci_exe_modl md;
    popci_rbuf r;
    popc_graph *c = NULL;
    int n_forward, loss, seed, nv;
    uint32_t n_wrt, n_slots;
    uint64_t arena_bytes;
    popc_status st;

    *used = 0;
    memset(cc, 0, sizeof *cc);
    if ((st = popci_exe_get_modl(x, &md)) != POPC_OK)
        return st;
    if (md.training != popci_model_training(m) ||
        !popci_exe_section(x, POPCI_SEC_CGRF, &r))
        return POPC_OK;
    n_forward = (int)popci_r_u32(&r);
    loss = (int)popci_r_i64(&r);
    seed = (int)popci_r_i64(&r);
    n_wrt = popci_r_count(&r, 16);
    cc->wrt = popci_malloc(sizeof(int) * ((size_t)n_wrt + 1));
    cc->grads = popci_malloc(sizeof(int) * ((size_t)n_wrt + 1));
    if (!cc->wrt || !cc->grads) {
        popci_compiled_clear(cc);
        return popc_set_error(POPC_ENOMEM, "compile: out of memory");
    }
    for (uint32_t i = 0; i < n_wrt; i++) {
        cc->wrt[i] = (int)popci_r_i64(&r);
        cc->grads[i] = (int)popci_r_i64(&r);
    }
    /* its weights are the model's (set below): no zero fill for them */
    r.weights_later = 1;
    if (r.bad || (st = popci_graph_read(&r, &c)) != POPC_OK) {
        popci_compiled_clear(cc);
        return r.bad ? popci_exe_bad(x, POPCI_SEC_CGRF, &r) : st;
    }
    cc->pc.graph = c;
    nv = popc_graph_n_values(c);
    n_slots = popci_r_count(&r, 8);
    if (!(cc->arena_offset = popci_malloc(sizeof(int64_t) *
                                          ((size_t)n_slots + 1)))) {
        popci_compiled_clear(cc);
        return popc_set_error(POPC_ENOMEM, "compile: out of memory");
    }
    for (uint32_t s = 0; s < n_slots; s++)
        cc->arena_offset[s] = popci_r_i64(&r);
    arena_bytes = popci_r_u64(&r);
    if (r.bad || r.pos != r.len) {
        if (!r.bad)
            popci_r_fail(&r, "unexpected bytes at the end");
        popci_compiled_clear(cc);
        return popci_exe_bad(x, POPCI_SEC_CGRF, &r);
    }
    if (n_forward > popc_graph_n_nodes(c) || !extends(g, c, pc) ||
        count_weights(c) != count_weights(g))
        goto unused;
    /* the gradients must be those of this graph's trainable weights */
    {
        uint32_t k = 0;
        for (int v = 0; v < popc_graph_n_values(g); v++)
            if (popc_graph_value_kind(g, v) == POPC_VALUE_INITIALIZER &&
                popc_graph_value_trainable(g, v)) {
                if (k >= n_wrt || cc->wrt[k] != in_compiled(g, v, c) ||
                    cc->grads[k] < -1 || cc->grads[k] >= nv)
                    goto unused;
                k++;
            }
        if (k != n_wrt || loss < -1 || loss >= nv || seed < -1 || seed >= nv ||
            (popci_model_training(m) && loss < 0))
            goto unused;
    }
    /* the model's weights, shared as a compile's plan shares them (no
    ** copy: the compiled graph only reads them) */
    for (int v = 0; v < popc_graph_n_values(g); v++)
        if (popc_graph_value_kind(g, v) == POPC_VALUE_INITIALIZER &&
            (st = popci_graph_share_initializer(
                 c, in_compiled(g, v, c), popc_graph_value_tensor(g, v))) !=
                POPC_OK) {
            popci_compiled_clear(cc);
            return st;
        }
    set_seed(c, seed, pc->loss_scaling);
    popci_graph_resolve_ops(c);
    cc->pc.n_forward = n_forward;
    cc->pc.loss = loss;
    cc->pc.seed = seed;
    cc->pc.n_wrt = (int)n_wrt;
    cc->pc.wrt = cc->wrt;
    cc->pc.grads = cc->grads;
    cc->pc.n_slots = (int)n_slots;
    cc->pc.arena_offset = cc->arena_offset;
    cc->pc.arena_bytes = (size_t)arena_bytes;
    pc->compiled = &cc->pc;
    *used = 1;
    return POPC_OK;
unused:
    popci_compiled_clear(cc);
    return POPC_OK;
}

/* ---- begin / end ----------------------------------------------------------------- */

static popc_status make_dir(const char *dir)
{
    char *d = popci_strdup(dir);
    popc_status st = POPC_OK;

    if (!d)
        return popc_set_error(POPC_ENOMEM, "executable cache: out of memory");
    for (char *p = d + 1;; p++) {
        int last = *p == '\0';
        if (*p != '/' && !last)
            continue;
        *p = '\0';
        if (mkdir(d, 0777) != 0 && errno != EEXIST) {
            st = popc_set_error(POPC_EIO, "cannot create the executable cache "
                                "directory '%s': %s", d, strerror(errno));
            break;
        }
        if (last)
            break;
        *p = '/';
    }
    free(d);
    return st;
}

void popci_exe_cache_free(popci_exe_cache *c)
{
    if (!c)
        return;
    popci_compiled_clear(&c->hold);
    if (c->lock_fd >= 0)
        close(c->lock_fd); /* releases the flock */
    free(c->path);
    free(c);
}

/* What a hit reads: the key and training flag, the plugin versions and
** the compiled graph. The model's own graph (GRPH, as large as the
** model's constants) is not needed: the model that hits has it. */
static const uint32_t hit_sections[] = {POPCI_SEC_MODL, POPCI_SEC_PLUG,
                                        POPCI_SEC_CGRF};

/* Look the entry up under its lock; a usable one fills pc->compiled. */
static void lookup(popci_exe_cache *c, popc_model *m, const char *dir,
                   popci_plan_config *pc)
{
    size_t n = strlen(dir) + 40;
    char *lock = popci_malloc(n);
    popci_exe *x = NULL;
    struct stat sb;
    int used = 0;

    if (!lock || !(c->path = popci_malloc(n))) {
        free(lock);
        return;
    }
    snprintf(c->path, n, "%s/%016llx.popcexe", dir,
             (unsigned long long)c->key);
    snprintf(lock, n, "%s/%016llx.lock", dir, (unsigned long long)c->key);
    if ((c->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0 ||
        flock(c->lock_fd, LOCK_EX) != 0)
        popc_log(POPC_LOG_WARN, "executable cache: cannot lock '%s' (%s); "
                 "compiling without waiting for other processes", lock,
                 strerror(errno));
    free(lock);
    if (stat(c->path, &sb) != 0) {
        popc_log(POPC_LOG_INFO, "executable cache miss: %s", c->path);
        return;
    }
    if (popci_exe_read_sections(c->path, hit_sections,
                                sizeof hit_sections / sizeof hit_sections[0],
                                &x) != POPC_OK ||
        popci_exe_check_plugins(x) != POPC_OK ||
        popci_exe_use_compiled(x, m, pc, &c->hold, &used) != POPC_OK) {
        popc_log(POPC_LOG_WARN, "executable cache entry is unusable, "
                 "compiling again: %s", popc_last_error());
    } else if (popci_exe_key(x) != c->key || !used) {
        popci_compiled_clear(&c->hold);
        pc->compiled = NULL;
        popc_log(POPC_LOG_WARN, "executable cache entry '%s' belongs to "
                 "another model; compiling again", c->path);
    } else {
        c->hit = 1;
        c->stored_time = popci_exe_compile_time(x);
    }
    popci_exe_free(x);
}

static popc_status cache_begin(popc_model *m, const popci_exe *hint,
                               popc_tensor *const *inputs, int n_inputs,
                               popci_plan_config *pc, popci_exe_cache **out)
{
    popci_exe_cache *c;
    const char *dir;
    popc_status st;
    int used = 0;

    *out = NULL;
    pc->compiled = NULL;
    if (!(c = popci_calloc(1, sizeof *c)))
        return popc_set_error(POPC_ENOMEM, "compile: out of memory");
    c->lock_fd = -1;
    if (hint) {
        /* popc_load: the file being loaded has the compiled graph */
        if ((st = popci_exe_use_compiled(hint, m, pc, &c->hold,
                                         &used)) != POPC_OK) {
            popci_exe_cache_free(c);
            return st;
        }
        c->from_hint = used;
        *out = c;
        return POPC_OK;
    }
    dir = popci_opt_is_none(popci_model_options(m),
                            POPCI_O_enableExecutableCaching)
              ? NULL
              : popci_opt_string(popci_model_options(m),
                                 POPCI_O_enableExecutableCaching);
    if (!dir || !*dir) {
        free(c);
        return POPC_OK;
    }
    if ((st = popci_compile_key(m, inputs, n_inputs, &c->key)) != POPC_OK) {
        popci_exe_cache_free(c);
        return st;
    }
    if (make_dir(dir) != POPC_OK) {
        popc_log(POPC_LOG_WARN, "executable caching is off for this "
                 "compile: %s", popc_last_error());
        free(c);
        return POPC_OK;
    }
    lookup(c, m, dir, pc);
    if (c->hit && c->lock_fd >= 0) {
        close(c->lock_fd);
        c->lock_fd = -1;
    }
    *out = c;
    return POPC_OK;
}

static void cache_end(popci_exe_cache *c, popc_model *m)
{
    if (!c)
        return;
    if (c->hit) {
        double saved = c->stored_time - popci_model_compile_time(m);
        popc_log(POPC_LOG_INFO, "executable cache hit: %s (saved %.0f ms)",
                 c->path, saved > 0 ? saved * 1e3 : 0.0);
    } else if (c->from_hint) {
        popc_log(POPC_LOG_DEBUG, "compiled from the loaded executable's "
                 "graph");
    } else if (c->path) {
        if (popci_exe_write(m, c->path, c->key, popci_model_compile_time(m)) != POPC_OK)
            popc_log(POPC_LOG_WARN, "executable cache: cannot write the "
                     "entry: %s", popc_last_error());
        else
            popc_log(POPC_LOG_INFO, "executable cache: wrote %s", c->path);
    }
    popci_exe_cache_free(c);
}

/* ---- the hooks of a model's compile ------------------------------------- */

/* data: the executable popc_model_load_executable is loading (borrowed),
** NULL otherwise; state: this compile's popci_exe_cache. */
static popc_status hook_plan(void **state, popc_model *m, void **data,
                             popc_tensor *const *inputs, int n,
                             popci_plan_config *pc)
{
    return cache_begin(m, *data, inputs, n, pc, (popci_exe_cache **)state);
}

static void hook_end(void *state, popc_model *m, void **data, int ok)
{
    (void)data;
    if (ok)
        cache_end(state, m);
    else
        popci_exe_cache_free(state);
}

const popci_model_hooks popci_exe_hooks = {
    .layer = "exe",
    .compile_plan = hook_plan,
    .compile_end = hook_end,
};
