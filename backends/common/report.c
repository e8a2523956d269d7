/* report.c - the JSON memory and cycle report of a mapped plan (the
** backends' report(); the core copies it into enableProfiling's
** profile.json).
**
** Layout:
**   {"backend", "device": {...},
**    "memory": {"totals": {...}, "off_chip": {...} (streaming memory,
**               TensorLocations), "io_tiles": {"overlap_buffers",
**               "capacity"} (set_overlap_for_input/output), "ipus":
**               [{"ipu", "max_tile", "max_tile_bytes", "free_bytes",
**               "tiles": [{"tile",
**               "weights", "gradients", "state", "activations",
**               "temporaries", "total"}, ...]}, ...]},
**    "ops": [{"index", "name", "op", "ipu", "stage", "phase", "tiles",
**             "serial", "flops", "bytes", "temp_bytes", "cycles",
**             "compute", "exchange", "sync", "parallel_with" (the first op
**             of its parallel MultiConv group, -1)}, ...],
**    "outlined": [{"body", "ops": [index, ...], "calls"}, ...] (outlined
**                 bodies: one per module, however often it is called),
**    "stages": [{"stage", "ipu", "cycles"}, ...],
**    "cycles", "seconds", ("runtime": {...})}
** device.tiles_per_ipu counts the I/O tiles (device.io_tiles); memory
** lists the compute tiles (device.compute_tiles), which hold every tensor.
** Activations and temporaries of a tile are those at the tile's peak.
** Cycles are per micro-batch and per replica.
*/
#include "config.h"

#include "popc/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/tilemap.h"

static const char *const mem_names[IPUM_MEM_COUNT] = {
    "weights", "gradients", "state", "activations", "temporaries"};

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* syncPattern's values, by POPC_SYNC_*. */
static const char *const sync_names[] = {"Full", "SinglePipeline",
                                         "ReplicaAndLadder"};

static void put_device(FILE *f, const ipum_map *m, const char *backend)
{
    const ipum_device *d = &m->dev;

    fprintf(f, "{\"backend\": ");
    put_string(f, backend);
    fprintf(f, ",\n \"device\": {\"name\": ");
    put_string(f, d->name);
    fprintf(f, ", \"ipu_version\": %d, \"tiles_per_ipu\": %d, "
            "\"io_tiles\": %d, \"compute_tiles\": %d, "
            "\"bytes_per_tile\": %lld, \"clock_hz\": %.0f, "
            "\"ipus_per_replica\": %d, \"replicas\": %d, "
            "\"available_memory_proportion\": %g, \"conv_dithering\": %s, "
            "\"sync_pattern\": \"%s\"",
            d->version, d->tiles + d->io_tiles, d->io_tiles, d->tiles,
            (long long)d->tile_bytes, d->clock_hz, m->n_ipus, d->replicas,
            d->available, d->conv_dithering ? "true" : "false",
            sync_names[d->sync_pattern >= 0 && d->sync_pattern < 3
                           ? d->sync_pattern
                           : 0]);
    if (d->ipu_id >= 0)
        fprintf(f, ", \"device_id\": %d, \"physical_ipus\": [%d, %d]",
                d->ipu_id, d->first_ipu, d->first_ipu + d->ipus - 1);
    fprintf(f, "},\n");
}

static void put_memory(FILE *f, const ipum_map *m)
{
    int64_t total = 0;

    fprintf(f, " \"memory\": {\"totals\": {");
    for (int c = 0; c < IPUM_MEM_COUNT; c++) {
        fprintf(f, "\"%s\": %lld, ", mem_names[c], (long long)m->totals[c]);
        total += m->totals[c];
    }
    fprintf(f, "\"total\": %lld},\n  \"off_chip\": {", (long long)total);
    total = 0;
    for (int c = 0; c < IPUM_MEM_COUNT; c++) {
        fprintf(f, "\"%s\": %lld, ", mem_names[c],
                (long long)m->off_chip[c]);
        total += m->off_chip[c];
    }
    fprintf(f, "\"total\": %lld},\n  \"io_tiles\": {\"overlap_buffers\": "
            "%lld, \"capacity\": %lld},\n  \"ipus\": [", (long long)total,
            (long long)m->io_buffer_bytes,
            (long long)m->dev.io_tiles * (long long)m->dev.tile_bytes);
    for (int ipu = 0; ipu < m->n_ipus; ipu++) {
        const ipum_tile *tiles = m->tiles + (size_t)ipu * m->dev.tiles;
        int64_t used = 0;
        int worst = 0;

        for (int t = 0; t < m->dev.tiles; t++) {
            used += tiles[t].total;
            if (tiles[t].total > tiles[worst].total)
                worst = t;
        }
        fprintf(f, "%s\n   {\"ipu\": %d, \"max_tile\": %d, "
                "\"max_tile_bytes\": %lld, \"used_bytes\": %lld, "
                "\"free_bytes\": %lld, \"tiles\": [", ipu ? "," : "", ipu,
                worst, (long long)tiles[worst].total, (long long)used,
                (long long)(m->dev.tile_bytes * m->dev.tiles - used));
        for (int t = 0; t < m->dev.tiles; t++) {
            fprintf(f, "%s\n    {\"tile\": %d", t ? "," : "", t);
            for (int c = 0; c < IPUM_MEM_COUNT; c++)
                fprintf(f, ", \"%s\": %lld", mem_names[c],
                        (long long)tiles[t].bytes[c]);
            fprintf(f, ", \"total\": %lld}", (long long)tiles[t].total);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "]},\n");
}

/* The kernel chosen for node k at compile (popc/kernel.h):
** "provider:name", or "reference" for the op's own forward. */
static void put_kernel(FILE *f, const popc_plan *p, int k)
{
    const popc_kernel_def *kd =
        POPC_HAS_FIELD(popc_plan, p->size, node_kernel) && p->node_kernel
            ? p->node_kernel[k]
            : NULL;

    char name[256];

    snprintf(name, sizeof name, "%s%s%s", kd ? kd->provider : "reference",
             kd ? ":" : "", kd ? kd->name : "");
    fprintf(f, ", \"kernel\": ");
    put_string(f, name);
}

static void put_ops(FILE *f, const ipum_map *m)
{
    const popc_plan *p = m->plan;

    fprintf(f, " \"ops\": [");
    for (int k = 0; k < p->n_nodes; k++) {
        const popc_plan_node *pn = popc_plan_node_at(p, k);
        const ipum_node_map *nm = &m->nodes[k];

        fprintf(f, "%s\n  {\"index\": %d, \"name\": ", k ? "," : "", k);
        put_string(f, pn->name);
        fprintf(f, ", \"op\": ");
        put_string(f, pn->op ? pn->op->name : "");
        fprintf(f, ", \"domain\": ");
        put_string(f, pn->op ? pn->op->domain : "");
        put_kernel(f, p, k);
        fprintf(f, ", \"ipu\": %d, \"stage\": %d, \"phase\": %d, "
                "\"first_tile\": %d, \"tiles\": %d, \"serial\": %d, "
                "\"flops\": %.0f, "
                "\"bytes\": %.0f, \"temp_bytes\": %.0f, \"cycles\": %.1f, "
                "\"compute\": %.1f, \"exchange\": %.1f, \"sync\": %.1f, "
                "\"parallel_with\": %d}",
                pn->ipu, pn->stage, pn->phase, nm->first, nm->n, nm->serial,
                pn->cost.flops, pn->cost.bytes, pn->cost.temp_bytes,
                nm->cycles, nm->compute, nm->exchange, nm->sync,
                nm->group_lead);
    }
    fprintf(f, "],\n");
}

/* Outlined bodies (popc::Call with a __body_id, popc/module.h): each body
** once, with the ops that call it. A module called N times is one body. */
static const char *body_id(const popc_plan_node *pn)
{
    const popc_attr *a = pn->attrs ? popc_attrs_find(pn->attrs, "__body_id")
                                   : NULL;

    return a && a->type == POPC_ATTR_STRING ? a->s : NULL;
}

static void put_outlined(FILE *f, const ipum_map *m)
{
    const popc_plan *p = m->plan;
    int first = 1;

    fprintf(f, " \"outlined\": [");
    for (int k = 0; k < p->n_nodes; k++) {
        const char *id = body_id(popc_plan_node_at(p, k));
        int seen = 0, calls = 0;

        if (!id)
            continue;
        for (int j = 0; j < k && !seen; j++)
            seen = body_id(popc_plan_node_at(p, j)) &&
                   strcmp(body_id(popc_plan_node_at(p, j)), id) == 0;
        if (seen)
            continue;
        fprintf(f, "%s\n  {\"body\": ", first ? "" : ",");
        put_string(f, id);
        fprintf(f, ", \"ops\": [");
        for (int j = k; j < p->n_nodes; j++)
            if (body_id(popc_plan_node_at(p, j)) &&
                strcmp(body_id(popc_plan_node_at(p, j)), id) == 0)
                fprintf(f, "%s%d", calls++ ? ", " : "", j);
        fprintf(f, "], \"calls\": %d}", calls);
        first = 0;
    }
    fprintf(f, "],\n");
}

static void put_stages(FILE *f, const ipum_map *m)
{
    const popc_plan *p = m->plan;
    int n = 0;

    for (int k = 0; k < p->n_nodes; k++)
        if (popc_plan_node_at(p, k)->stage + 1 > n)
            n = popc_plan_node_at(p, k)->stage + 1;
    fprintf(f, " \"stages\": [");
    for (int st = 0; st < n; st++) {
        double cycles = 0.0;
        int ipu = -1;

        for (int k = 0; k < p->n_nodes; k++)
            if (popc_plan_node_at(p, k)->stage == st) {
                cycles += m->nodes[k].cycles;
                if (ipu < 0)
                    ipu = popc_plan_node_at(p, k)->ipu;
            }
        fprintf(f, "%s{\"stage\": %d, \"ipu\": %d, \"cycles\": %.1f}",
                st ? ", " : "", st, ipu, cycles);
    }
    fprintf(f, "],\n");
}

static void put_report(FILE *f, const ipum_map *m, const char *backend,
                       const ipum_run_stats *stats)
{
    double cycles = ipum_cost_cycles(m, 0, m->plan->n_nodes);

    put_device(f, m, backend);
    put_memory(f, m);
    put_ops(f, m);
    put_outlined(f, m);
    put_stages(f, m);
    fprintf(f, " \"cycles\": %.1f, \"seconds\": %.9f", cycles,
            cycles / m->dev.clock_hz);
    if (stats)
        fprintf(f, ",\n \"runtime\": {\"threads\": %d, \"nodes_run\": %lld, "
                "\"split_runs\": %lld, \"parallel_calls\": %lld}",
                stats->threads, (long long)stats->nodes_run,
                (long long)stats->split_runs,
                (long long)stats->parallel_calls);
    fprintf(f, "}\n");
}

/* A FILE whose writes go to the host's sink (fopencookie), so that the
** report's printf-style writers need no buffer of their own. */
typedef struct sink_cookie {
    popc_report_sink write;
    void *user;
    popc_status st;
} sink_cookie;

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
    sink_cookie *k = c;

    if (k->st == POPC_OK)
        k->st = k->write(k->user, buf, n);
    return k->st == POPC_OK ? (ssize_t)n : -1;
}

popc_status ipum_report_to(const ipum_map *m, const char *backend,
                           const ipum_run_stats *stats,
                           popc_report_sink write, void *user)
{
    cookie_io_functions_t io = {.write = cookie_write};
    sink_cookie k = {write, user, POPC_OK};
    FILE *f;
    int bad;

    if (!write)
        return ipum_host->set_error(POPC_EINVAL, "%s backend: report: no "
                                    "sink given", backend);
    if (!(f = fopencookie(&k, "w", io)))
        return ipum_host->set_error(POPC_ENOMEM, "%s backend: report: out "
                                    "of memory", backend);
    put_report(f, m, backend, stats);
    bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return k.st != POPC_OK ? k.st
                               : ipum_host->set_error(POPC_EIO, "%s backend: "
                                                      "report: a write "
                                                      "failed", backend);
    return k.st;
}
