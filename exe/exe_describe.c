/* exe_describe.c - a readable description of an executable file (`popc
** inspect`): versions, model, inputs, backend plan, plugins, optimizer,
** weights, state, run counter, options and the section table.
**
** Only the file is read: no plugin is needed, so a file can be inspected
** on a machine that cannot load it. Sections are decoded with the same
** checked readers as popc_load.
*/
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/executable.h"
#include "popc/model.h"
#include "popc/options.h"
#include "popc/optimizer.h"
#include "popc/registry.h"
#include "popc/version.h"
#include "core/layer/strbuf.h"
#include "exe/executable_priv.h"

static void bytes_text(popci_sb *sb, uint64_t b)
{
    if (b >= 10u * 1024 * 1024)
        popci_sb_printf(sb, "%.1f MiB", (double)b / (1024.0 * 1024.0));
    else if (b >= 10u * 1024)
        popci_sb_printf(sb, "%.1f KiB", (double)b / 1024.0);
    else
        popci_sb_printf(sb, "%" PRIu64 " B", b);
}

static popc_status describe_model(popci_sb *sb, const popci_exe *x)
{
    popci_exe_modl md;
    popci_exe_rngs rg;
    popc_view *v = NULL;
    const char **names = NULL;
    popci_rbuf r;
    int n;
    popc_status st;

    if ((st = popci_exe_get_modl(x, &md)) != POPC_OK ||
        (st = popci_exe_get_rngs(x, &rg)) != POPC_OK ||
        (st = popci_exe_get_inputs(x, &n, &v, &names)) != POPC_OK)
        return st;
    popci_sb_printf(sb, "model: '%s', %s, %d nodes", md.graph_name,
                    md.training ? "training" : "inference", md.n_forward);
    if (popci_exe_section(x, POPCI_SEC_CGRF, &r)) {
        popc_graph *c = NULL;
        popci_r_u32(&r);
        popci_r_i64(&r);
        popci_r_i64(&r);
        for (uint32_t k = popci_r_count(&r, 16); k > 0; k--)
            popci_r_i64(&r), popci_r_i64(&r);
        if (popci_graph_read(&r, &c) != POPC_OK) {
            free(v);
            free(names);
            return popci_exe_bad(x, POPCI_SEC_CGRF, &r);
        }
        popci_sb_printf(sb, " (compiled: %d nodes, %d values)",
                        popc_graph_n_nodes(c), popc_graph_n_values(c));
        popc_graph_free(c);
    }
    popci_sb_printf(sb, "\ninputs (combined batch):\n");
    for (int i = 0; i < n; i++) {
        popci_sb_printf(sb, "  %s: ", names[i]);
        popci_sb_view(sb, &v[i]);
        popci_sb_printf(sb, "\n");
    }
    popci_sb_printf(sb, "compile time: %.3f s", md.compile_time);
    if (md.key)
        popci_sb_printf(sb, "; executable cache key %016" PRIx64, md.key);
    if (md.flags & POPCI_EXE_NO_WEIGHTS)
        popci_sb_printf(sb, "; a cache entry: no weights or optimizer "
                        "state stored");
    popci_sb_printf(sb, "\nrandom state: %" PRIu64 " runs done, randomSeed ",
                    rg.runs);
    if (rg.seed_set)
        popci_sb_printf(sb, "%" PRId64 "\n", rg.seed);
    else
        popci_sb_printf(sb, "None\n");
    free(v);
    free(names);
    return POPC_OK;
}

static popc_status describe_backend(popci_sb *sb, const popci_exe *x)
{
    popci_exe_bknd b;
    popc_status st;

    if ((st = popci_exe_get_bknd(x, &b)) != POPC_OK)
        return st;
    popci_sb_printf(sb, "backend: %s, IPU version %d, %d IPU%s per replica "
                    "x %d replica%s, %d stage%s, %d phase%s\n", b.backend,
                    b.ipu_version, b.n_ipus, b.n_ipus == 1 ? "" : "s",
                    b.replicas, b.replicas == 1 ? "" : "s", b.n_stages,
                    b.n_stages == 1 ? "" : "s", b.n_phases,
                    b.n_phases == 1 ? "" : "s");
    popci_sb_printf(sb, "  plan: %d nodes (%d forward), %d slots, "
                    "activations ", b.n_nodes, b.n_forward, b.n_slots);
    bytes_text(sb, b.arena_bytes);
    popci_sb_printf(sb, " per frame, persistent ");
    bytes_text(sb, b.persistent_bytes);
    popci_sb_printf(sb, "\n");
    for (int i = 0; i < b.n_mem; i++) {
        popci_sb_printf(sb, "  memory on IPU%d: persistent ", i);
        bytes_text(sb, b.mem_persistent[i]);
        popci_sb_printf(sb, ", peak activations ");
        bytes_text(sb, b.mem_peak_acts[i]);
        popci_sb_printf(sb, "\n");
    }
    if (b.cycles > 0)
        popci_sb_printf(sb, "  estimated cycles per micro-batch: %.0f\n",
                        b.cycles);
    return POPC_OK;
}

static popc_status describe_plugins(popci_sb *sb, const popci_exe *x)
{
    popci_rbuf r;
    uint32_t n;

    popci_exe_section(x, POPCI_SEC_PLUG, &r);
    n = popci_r_count(&r, 10);
    popci_sb_printf(sb, "plugins (%u):\n", (unsigned)n);
    for (uint32_t i = 0; i < n && !r.bad; i++) {
        const char *name = popci_r_str(&r), *version = popci_r_str(&r);
        uint32_t uses = popci_r_u32(&r);
        popci_sb_printf(sb, "  %s %s (%s%s%s)\n", name, version,
                        uses & 1 ? "ops" : "",
                        uses & 2 ? (uses & 1 ? ", optimizer" : "optimizer")
                                 : "",
                        uses & 4 ? (uses & 3 ? ", backend" : "backend") : "");
    }
    return r.bad ? popci_exe_bad(x, POPCI_SEC_PLUG, &r) : POPC_OK;
}

/* Decoded without the plugin: names and values as stored. */
static popc_status describe_optimizer(popci_sb *sb, const popci_exe *x)
{
    popci_rbuf r;
    const char *hn[64];
    int var[64];
    uint32_t nh, ng;

    if (!popci_exe_section(x, POPCI_SEC_OPTM, &r) || !popci_r_u8(&r))
        return r.bad ? popci_exe_bad(x, POPCI_SEC_OPTM, &r) : POPC_OK;
    popci_sb_printf(sb, "optimizer: %s\n", popci_r_str(&r));
    nh = popci_r_count(&r, 6);
    if (nh > 64)
        popci_r_fail(&r, "too many hyper-parameters");
    for (uint32_t h = 0; h < nh && !r.bad; h++) {
        hn[h] = popci_r_str(&r);
        var[h] = popci_r_u8(&r) != 0;
    }
    ng = popci_r_count(&r, 4);
    for (uint32_t g = 0; g < ng && !r.bad; g++) {
        uint32_t np = popci_r_count(&r, 5);
        int any = 0;

        popci_sb_printf(sb, "  %s", g ? "group [" : "default group");
        for (uint32_t i = 0; i < np && !r.bad; i++)
            popci_sb_printf(sb, "%s%s", i ? ", " : "", popci_r_str(&r));
        popci_sb_printf(sb, "%s:", g ? "]" : "");
        for (uint32_t h = 0; h < nh && !r.bad; h++) {
            int own = popci_r_u8(&r) != 0;
            double v = popci_r_f64(&r);
            if (!own)
                continue;
            popci_sb_printf(sb, "%s %s=%g%s", any++ ? "," : "", hn[h], v,
                            var[h] ? " (variable)" : "");
        }
        popci_sb_printf(sb, "\n");
    }
    return r.bad ? popci_exe_bad(x, POPCI_SEC_OPTM, &r) : POPC_OK;
}

static popc_status describe_tensors(popci_sb *sb, const popci_exe *x,
                                    uint32_t tag, const char *what,
                                    int limit)
{
    const char **names = NULL;
    popc_tensor **ts = NULL;
    uint64_t total = 0;
    int n = 0;
    popc_status st;

    if ((st = popci_exe_get_tensors(x, tag, &n, &names, &ts)) != POPC_OK)
        return st;
    for (int i = 0; i < n; i++)
        total += popc_tensor_nbytes(ts[i]);
    popci_sb_printf(sb, "%s: %d tensors, ", what, n);
    bytes_text(sb, total);
    popci_sb_printf(sb, "\n");
    for (int i = 0; i < n && i < limit; i++) {
        popc_view v = popc_tensor_view(ts[i]);
        popci_sb_printf(sb, "  %s ", names[i]);
        popci_sb_view(sb, &v);
        popci_sb_printf(sb, "\n");
    }
    if (n > limit)
        popci_sb_printf(sb, "  ... %d more\n", n - limit);
    popci_exe_tensors_free(n, names, ts);
    return POPC_OK;
}

static popc_status describe_options(popci_sb *sb, const popci_exe *x)
{
    popci_rbuf r;
    const char *text, *line;
    int defaults = 0, set = 0;

    popci_exe_section(x, POPCI_SEC_OPTS, &r);
    text = popci_r_str(&r);
    if (r.bad)
        return popci_exe_bad(x, POPCI_SEC_OPTS, &r);
    popci_sb_printf(sb, "options set:\n");
    for (line = text; *line;) {
        size_t len = strcspn(line, "\n");
        if (line[0] == '#') {
            defaults++;
        } else {
            popci_sb_printf(sb, "  %.*s\n", (int)len, line);
            set++;
        }
        line += len + (line[len] ? 1 : 0);
    }
    if (!set)
        popci_sb_printf(sb, "  (none)\n");
    popci_sb_printf(sb, "  (%d more at their defaults)\n", defaults);
    return POPC_OK;
}

popc_status popc_executable_describe(const char *path, char **out)
{
    popci_exe *x = NULL;
    popci_sb sb = {0};
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_executable_describe: out "
                              "is NULL");
    *out = NULL;
    if ((st = popci_exe_read(path, &x)) != POPC_OK)
        return st;
    popci_sb_printf(&sb, "popc executable %s (", path);
    bytes_text(&sb, popci_exe_size(x));
    popci_sb_printf(&sb, "): format version %u, written by popc %s\n",
                    (unsigned)POPCI_EXE_FORMAT, popci_exe_popc_version(x));
    if ((st = describe_model(&sb, x)) != POPC_OK ||
        (st = describe_backend(&sb, x)) != POPC_OK ||
        (st = describe_plugins(&sb, x)) != POPC_OK ||
        (st = describe_optimizer(&sb, x)) != POPC_OK ||
        (st = describe_tensors(&sb, x, POPCI_SEC_WGHT, "weights", 32)) !=
            POPC_OK ||
        (st = describe_tensors(&sb, x, POPCI_SEC_OSTA, "optimizer state",
                               16)) != POPC_OK ||
        (st = describe_options(&sb, x)) != POPC_OK)
        goto done;
    popci_sb_printf(&sb, "sections:\n");
    for (int i = 0; i < popci_exe_n_sections(x); i++) {
        char tag[5];
        size_t len;
        uint32_t c;

        popci_exe_section_info(x, i, tag, &len, &c);
        popci_sb_printf(&sb, "  %-4s %10zu bytes  crc32 %08x\n", tag, len,
                        (unsigned)c);
    }
    if (!(*out = popci_sb_take(&sb)))
        st = popc_set_error(POPC_ENOMEM, "popc_executable_describe: out of "
                            "memory");
done:
    popci_sb_free(&sb);
    popci_exe_free(x);
    return st;
}
