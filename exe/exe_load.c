/* exe_load.c - the public face of executable files: save and
** compileAndExport, poptorch.load (popc_load), loadExecutable, and the
** model queries tools need to drive a loaded model.
**
** popc_load and popc_model_load_executable compile through the ordinary
** popc_model_compile with the layer's model data pointing at the file, so
** the plan is built from the file's compiled graph (exe_cache.c) and
** every check of a compile still runs (backend, memory, pipeline).
*/
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "popc/log.h"
#include "popc/executable.h"
#include "popc/model.h"
#include "popc/options.h"
#include "popc/optimizer.h"
#include "popc/registry.h"
#include "popc/version.h"
#include "core/layer/alloc.h"
#include "exe/executable_priv.h"
#include "core/layer/model.h"
#include "core/layer/optimizer.h"
#include "core/layer/options.h"

/* ---- queries ------------------------------------------------------------------ */

const popc_graph *popc_model_graph(const popc_model *m)
{
    return m ? popci_model_host_graph(m) : NULL;
}

int popc_model_training(const popc_model *m)
{
    return m ? popci_model_training(m) : 0;
}

popc_status popc_model_input_info(const popc_model *m, int i, popc_view *out)
{
    popc_status st;

    if (out)
        memset(out, 0, sizeof *out);
    if (!m || !out)
        return popc_set_error(POPC_EINVAL, "popc_model_input_info: model or "
                              "out is NULL");
    if ((st = popci_model_require_compiled(m)) != POPC_OK)
        return st;
    if (i < 0 || i >= popci_model_n_inputs(m))
        return popc_set_error(POPC_EINVAL, "popc_model_input_info: input %d "
                              "does not exist (the model has %d)", i,
                              popci_model_n_inputs(m));
    *out = popci_model_input_sig(m, i);
    out->data = NULL;
    return POPC_OK;
}

/* ---- save ----------------------------------------------------------------------- */

popc_status popc_model_save(popc_model *m, const char *path)
{
    struct stat sb;
    char *file = NULL;
    popc_status st;

    if (!m || !path || !*path)
        return popc_set_error(POPC_EINVAL, "popc_model_save: model or path "
                              "is missing");
    if ((st = popci_model_require_compiled(m)) != POPC_OK)
        return st;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        size_t n = strlen(path) + 16;
        if (!(file = popci_malloc(n)))
            return popc_set_error(POPC_ENOMEM, "popc_model_save: out of "
                                  "memory");
        snprintf(file, n, "%s/model.popc", path);
        popc_log(POPC_LOG_WARN, "popc_model_save: '%s' is a directory: "
                 "saving to '%s'", path, file);
    }
    st = popci_exe_write(m, file ? file : path, 0, popci_model_compile_time(m));
    if (st == POPC_OK)
        popc_log(POPC_LOG_INFO, "saved the executable of '%s' to %s",
                 popci_model_graph_name(m), file ? file : path);
    free(file);
    return st;
}

popc_status popc_model_compile_and_export(popc_model *m,
                                          popc_tensor *const *inputs,
                                          int n_inputs, const char *path)
{
    popc_status st;

    if (!m || !path)
        return popc_set_error(POPC_EINVAL, "popc_model_compile_and_export: "
                              "model or path is NULL");
    if ((st = popc_model_compile(m, inputs, n_inputs)) != POPC_OK)
        return st;
    return popc_model_save(m, path);
}

/* ---- load ----------------------------------------------------------------------- */

/* Zero tensors of the compiled input signature. */
static popc_status input_tensors(const popci_exe *x, int *n,
                                 popc_tensor ***out)
{
    popc_view *v = NULL;
    const char **names = NULL;
    popc_tensor **ts;
    popc_status st;

    *out = NULL;
    if ((st = popci_exe_get_inputs(x, n, &v, &names)) != POPC_OK)
        return st;
    if (!(ts = popci_calloc((size_t)*n + 1, sizeof *ts))) {
        st = popc_set_error(POPC_ENOMEM, "load: out of memory");
        goto done;
    }
    for (int i = 0; i < *n; i++)
        if ((st = popc_tensor_new(v[i].dtype, v[i].dims, v[i].rank,
                                  &ts[i])) != POPC_OK)
            break;
    if (st != POPC_OK) {
        for (int i = 0; i < *n; i++)
            popc_tensor_free(ts[i]);
        free(ts);
        goto done;
    }
    *out = ts;
done:
    free(v);
    free(names);
    return st;
}

static void free_inputs(int n, popc_tensor **ts)
{
    for (int i = 0; ts && i < n; i++)
        popc_tensor_free(ts[i]);
    free(ts);
}

/* Compile m for the file's inputs, from its compiled graph. */
static popc_status compile_from(popc_model *m, popci_exe *x)
{
    void **hint = popci_model_layer_data(m, &popci_exe_hooks);
    popc_tensor **in = NULL;
    int n = 0;
    popc_status st;

    if (!hint)
        return popc_set_error(POPC_EINTERNAL, "popc_load: the exe layer's "
                              "hooks are not in libpopc's layer table");
    if ((st = input_tensors(x, &n, &in)) != POPC_OK)
        return st;
    *hint = x;
    st = popc_model_compile(m, in, n);
    *hint = NULL;
    free_inputs(n, in);
    return st;
}

/* The optimizer state and run counter of the file. */
static popc_status import_state(popc_model *m, popci_exe *x)
{
    popci_exe_rngs rg;
    const char **names = NULL;
    popc_tensor **ts = NULL;
    int n = 0;
    popc_status st;

    if ((st = popci_exe_get_rngs(x, &rg)) != POPC_OK)
        return st;
    if (popci_model_training(m)) {
        if ((st = popci_exe_get_tensors(x, POPCI_SEC_OSTA, &n, &names,
                                        &ts)) != POPC_OK)
            return st;
        for (int i = 0; i < n && st == POPC_OK; i++)
            if ((st = popc_model_set_optimizer_state(m, names[i], ts[i])) !=
                POPC_OK)
                st = popc_set_error(st, "executable '%s': optimizer state "
                                    "'%s' cannot be restored: %s",
                                    popci_exe_path(x), names[i],
                                    popc_last_error());
        popci_exe_tensors_free(n, names, ts);
        if (st != POPC_OK)
            return st;
    }
    popci_model_set_runs(m, rg.runs);
    return POPC_OK;
}

/* PopTorch's load edits: the model is meant to run here. */
/* An executable compiled by a backend that only compiles (the offline
** target) runs on the best loaded backend that runs and models IPUs. */
static popc_status runnable_backend(popc_options *o)
{
    const char *name = popci_opt_string(o, POPCI_O_backend);
    const popc_backend_def *d, *run;
    popc_registry *reg;
    popc_status st;

    if (!name || (st = popc_registry_global(&reg)) != POPC_OK)
        return POPC_OK; /* the model reports a missing backend itself */
    d = popc_registry_find_backend(reg, name);
    if (!d || (d->caps & POPC_BACKEND_CAN_RUN))
        return POPC_OK;
    run = popc_registry_best_backend(reg, POPC_BACKEND_CAN_RUN |
                                              POPC_BACKEND_MODELS_IPUS, 0);
    if (!run)
        return popc_set_error(POPC_ENOTFOUND, "the executable was compiled "
                              "by the %s backend, which cannot run it, and "
                              "no loaded backend runs IPU models; check "
                              "POPC_PLUGIN_PATH and `popc plugins`", name);
    return popc_options_set(o, "backend", run->name);
}

static popc_status edit_options(popc_options *o, popc_options *edit)
{
    char buf[4096];
    popc_status st = POPC_OK;

    if (!popci_opt_is_none(o, POPCI_O_useOfflineIpuTarget))
        st = popc_options_set(o, "useOfflineIpuTarget", "None");
    if (st == POPC_OK && popci_opt_int(o, POPCI_O_connectionType) ==
                             POPC_CONNECTION_NEVER)
        st = popc_options_set(o, "connectionType", "Always");
    if (st == POPC_OK)
        st = runnable_backend(o);
    for (int i = 0; edit && st == POPC_OK && i < popc_options_count(); i++) {
        const char *name = popc_options_info(i)->name;
        if (!popc_options_is_set(edit, name) ||
            !popc_options_format(edit, name, buf, sizeof buf))
            continue;
        if ((st = popc_options_set(o, name, buf)) != POPC_OK)
            st = popc_set_error(st, "popc_load: edited option %s = %s: %s",
                                name, buf, popc_last_error());
    }
    return st;
}

popc_status popc_load(const char *path, popc_options *edit_opts,
                      popc_model **out)
{
    popci_exe *x = NULL;
    popc_options *o = NULL;
    popc_graph *g = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popci_exe_modl md;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_load: out is NULL");
    *out = NULL;
    if ((st = popci_exe_read(path, &x)) != POPC_OK ||
        (st = popci_exe_check_plugins(x)) != POPC_OK ||
        (st = popci_exe_get_modl(x, &md)) != POPC_OK)
        goto done;
    if (md.flags & POPCI_EXE_NO_WEIGHTS) {
        st = popc_set_error(POPC_EINVAL, "'%s' is a valid popc executable "
                            "but holds no weights (an executable cache "
                            "entry, like PopTorch's export_model=False): "
                            "create the model with popc_model_new_inference "
                            "or popc_model_new_training, then call "
                            "popc_model_load_executable(\"%s\")", path, path);
        goto done;
    }
    if ((st = popci_exe_get_options(x, &o)) != POPC_OK ||
        (st = edit_options(o, edit_opts)) != POPC_OK ||
        (st = popci_exe_get_graph(x, &g)) != POPC_OK ||
        (st = popc_graph_set_origin(g, path)) != POPC_OK ||
        (st = popci_exe_get_optimizer(x, &opt)) != POPC_OK)
        goto done;
    if (md.training)
        st = popc_model_new_training(g, o, opt, &m);
    else
        st = popc_model_new_inference(g, o, &m);
    if (st != POPC_OK || (st = compile_from(m, x)) != POPC_OK ||
        (st = import_state(m, x)) != POPC_OK)
        goto done;
    popc_log(POPC_LOG_INFO, "loaded '%s' from %s (%s, backend %s)",
             popci_model_graph_name(m), path,
             popci_model_training(m) ? "training" : "inference",
             popci_opt_string(popci_model_options(m), POPCI_O_backend));
    *out = m;
    m = NULL;
done:
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_graph_free(g);
    popc_options_free(o);
    popci_exe_free(x);
    return st;
}

/* ---- loadExecutable --------------------------------------------------------------- */

/* Same graph apart from the name and weight values: the listings from
** the second line on (the first holds the graph's name) must agree. */
static popc_status same_graph(const popci_exe *x, const popc_graph *mine,
                              const popc_graph *theirs)
{
    char *a = NULL, *b = NULL;
    const char *p, *q;
    popc_status st;

    if ((st = popc_graph_dump(mine, &a)) != POPC_OK ||
        (st = popc_graph_dump(theirs, &b)) != POPC_OK)
        goto done;
    p = strchr(a, '\n');
    q = strchr(b, '\n');
    p = p ? p + 1 : a;
    q = q ? q + 1 : b;
    while (*p || *q) {
        size_t la = strcspn(p, "\n"), lb = strcspn(q, "\n");
        if (la != lb || memcmp(p, q, la) != 0) {
            st = popc_set_error(POPC_EINVAL, "popc_model_load_executable: "
                                "'%s' was exported from another graph than "
                                "the model's '%s'; first difference:\n"
                                "  file:  %.*s\n  model: %.*s",
                                popci_exe_path(x), popc_graph_name(mine),
                                (int)lb, *q ? q : "(end of graph)", (int)la,
                                *p ? p : "(end of graph)");
            if (!*q)
                st = popc_set_error(POPC_EINVAL, "popc_model_load_executable:"
                                    " '%s' was exported from another graph "
                                    "than the model's '%s'; the model has "
                                    "more: %.*s", popci_exe_path(x),
                                    popc_graph_name(mine), (int)la, p);
            goto done;
        }
        p += la + (p[la] ? 1 : 0);
        q += lb + (q[lb] ? 1 : 0);
    }
done:
    free(a);
    free(b);
    return st;
}

popc_status popc_model_load_executable(popc_model *m, const char *path)
{
    popci_exe *x = NULL;
    popc_graph *g = NULL;
    popc_optimizer *opt = NULL;
    popci_exe_modl md;
    popc_status st;

    if (!m)
        return popc_set_error(POPC_EINVAL, "popc_model_load_executable: "
                              "model is NULL");
    if ((st = popci_exe_read(path, &x)) != POPC_OK ||
        (st = popci_exe_check_plugins(x)) != POPC_OK ||
        (st = popci_exe_get_modl(x, &md)) != POPC_OK ||
        (st = popci_exe_get_graph(x, &g)) != POPC_OK ||
        (st = same_graph(x, popci_model_host_graph(m), g)) != POPC_OK ||
        (st = popci_exe_get_optimizer(x, &opt)) != POPC_OK)
        goto done;
    if ((st = popc_model_destroy(m)) != POPC_OK)
        goto done;
    if (md.flags & POPCI_EXE_NO_WEIGHTS) {
        /* a cache entry: only the compiled graph; the model keeps its
        ** weights, state and run counter */
        st = compile_from(m, x);
        goto done;
    }
    for (int i = 0; i < popci_model_n_weights(m); i++) {
        popc_graph *mg = popci_model_host_graph(m);
        int v = popci_model_weight_value(m, i);
        int fv = popc_graph_find_value(g, popc_graph_value_name(mg, v));
        if ((st = popc_graph_set_initializer(
                 mg, v, popc_graph_value_tensor(g, fv))) != POPC_OK)
            goto done;
    }
    /* m has no executor now (destroyed above): only the host copy moves */
    popci_model_host_changed(m);
    if ((st = compile_from(m, x)) != POPC_OK)
        goto done;
    if (popci_model_training(m) && md.training && opt &&
        popci_optimizer_def(opt) !=
            popci_optimizer_def(popci_model_optimizer(m))) {
        popc_log(POPC_LOG_WARN, "popc_model_load_executable: '%s' holds %s "
                 "state but the model uses %s: the optimizer state is not "
                 "imported", path, popci_optimizer_def(opt)->name,
                 popci_optimizer_def(popci_model_optimizer(m))->name);
        popci_exe_rngs rg;
        if ((st = popci_exe_get_rngs(x, &rg)) == POPC_OK)
            popci_model_set_runs(m, rg.runs);
    } else {
        st = import_state(m, x);
    }
done:
    popc_optimizer_free(opt);
    popc_graph_free(g);
    popci_exe_free(x);
    return st;
}
