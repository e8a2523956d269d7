/* tilemap.c - device descriptions and the mapping of a plan's tensors to
** tiles, with the per-tile memory check (the model is described in
** tilemap.h).
**
** The peak of a tile is found with one sweep over the schedule: slots are
** added to the live bytes of their tiles when they come on chip (live, or
** back from streaming memory) and removed after their last use on chip. A
** tile's peak can only rise where something was added or where a node
** puts temporaries, so only those tiles are looked at per step.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/tilemap.h"

/* Work below this many flops per tile is not spread further. */
#define FLOP_GRAIN 2048.0
/* PopTorch uses at most 64 IPUs per process. */
#define MAX_IPUS 64
/* Tensors named in an out-of-memory message. */
#define MAX_NAMED 3

const popc_host *ipum_host;

/* ---- devices ------------------------------------------------------------ */

popc_status ipum_device_init(const popc_backend_config *cfg, const char *who,
                             ipum_device *dev)
{
    uint32_t size = cfg ? cfg->size : 0;
    int version = 0, tiles = 0, n_ipus = 0, replicas = 0, io = 0;
    int dither = 0, sync = 0, ipu_id = -1;
    int64_t bytes = 0, iters = 1, accum = 1;
    double avail = 0.0;

    memset(dev, 0, sizeof *dev);
    if (POPC_HAS_FIELD(popc_backend_config, size, ipu_version))
        version = cfg->ipu_version;
    if (POPC_HAS_FIELD(popc_backend_config, size, n_ipus))
        n_ipus = cfg->n_ipus;
    if (POPC_HAS_FIELD(popc_backend_config, size, replicas))
        replicas = cfg->replicas;
    if (POPC_HAS_FIELD(popc_backend_config, size, tiles_per_ipu))
        tiles = cfg->tiles_per_ipu;
    if (POPC_HAS_FIELD(popc_backend_config, size, bytes_per_tile))
        bytes = cfg->bytes_per_tile;
    if (POPC_HAS_FIELD(popc_backend_config, size, available_memory))
        avail = cfg->available_memory;
    if (POPC_HAS_FIELD(popc_backend_config, size, io_tiles))
        io = cfg->io_tiles;
    if (POPC_HAS_FIELD(popc_backend_config, size, gradient_accumulation)) {
        iters = cfg->device_iterations;
        accum = cfg->gradient_accumulation;
    }
    if (POPC_HAS_FIELD(popc_backend_config, size, impl) && cfg->option_int) {
        /* a host that cannot answer these names is broken: fail */
        static const char *const names[] = {
            "Training.setConvolutionDithering", "syncPattern", "useIpuId"};
        int64_t v[3];
        popc_status st;

        for (int i = 0; i < 3; i++)
            if ((st = cfg->option_int(cfg, names[i], &v[i])) != POPC_OK)
                return st;
        dither = v[0] != 0;
        sync = (int)v[1];
        ipu_id = (int)v[2];
    }
    switch (version == 0 ? 2 : version) {
    case 1:
        *dev = (ipum_device){.version = 1, .name = "Mk1", .tiles = 1216,
                             .tile_bytes = 256 * 1024, .clock_hz = 1.6e9};
        break;
    case 2:
        *dev = (ipum_device){.version = 2, .name = "Mk2", .tiles = 1472,
                             .tile_bytes = 624 * 1024, .clock_hz = 1.33e9};
        break;
    case 21:
        *dev = (ipum_device){.version = 21, .name = "Mk2 (IPU21)",
                             .tiles = 1472, .tile_bytes = 624 * 1024,
                             .clock_hz = 1.33e9};
        break;
    default:
        return ipum_host->set_error(POPC_ECONFIG, "%s backend: ipuVersion %d "
                                    "is not an IPU version; use 1 (Mk1), 2 "
                                    "(Mk2) or 21 (Mk2 with FP8)", who,
                                    version);
    }
    if (tiles < 0 || bytes < 0)
        return ipum_host->set_error(POPC_ECONFIG, "%s backend: the device "
                                    "needs a positive tile count and tile "
                                    "size (got %d tiles of %lld bytes; 0 "
                                    "keeps the %s default)", who, tiles,
                                    (long long)bytes, dev->name);
    if (avail < 0.0 || avail > 1.0)
        return ipum_host->set_error(POPC_ECONFIG, "%s backend: available "
                                    "memory proportion %g is outside (0, "
                                    "1]", who, avail);
    if (tiles > 0)
        dev->tiles = tiles;
    if (io < 0 || io >= dev->tiles)
        return ipum_host->set_error(POPC_ECONFIG, "%s backend: "
                                    "TensorLocations.numIOTiles %d leaves no "
                                    "compute tiles on a %s IPU of %d tiles; "
                                    "use fewer I/O tiles", who, io,
                                    dev->name, dev->tiles);
    /* I/O tiles only buffer host transfers: tensors and compute go to the
    ** others. */
    dev->io_tiles = io;
    dev->tiles -= io;
    if (bytes > 0)
        dev->tile_bytes = bytes;
    dev->n_ipus = n_ipus > 0 ? n_ipus : 1;
    dev->replicas = replicas > 0 ? replicas : 1;
    dev->available = avail > 0.0 ? avail : IPUM_DEFAULT_AVAILABLE;
    dev->conv_dithering = dither;
    dev->sync_pattern = sync;
    dev->ipu_id = ipu_id;
    dev->device_iterations = iters > 0 ? iters : 1;
    dev->grad_accum = accum > 0 ? accum : 1;
    return POPC_OK;
}

/* ---- shares ------------------------------------------------------------- */

/* Position of tile t in a run of n tiles starting at first; -1 outside. */
static int64_t run_index(int tiles, int first, int n, int t)
{
    int64_t i = ((int64_t)t - first + tiles) % tiles;
    return i < n ? i : -1;
}

/* Share i of `bytes` split over n tiles. */
static int64_t share(int64_t bytes, int n, int64_t i)
{
    return bytes * (i + 1) / n - bytes * i / n;
}

int64_t ipum_slot_bytes_on(const ipum_map *m, int s, int t)
{
    const ipum_slot_map *sm = &m->slots[s];
    int64_t i;

    if (sm->n == 0)
        return 0;
    i = run_index(m->dev.tiles, sm->first, sm->n, t);
    return i < 0 ? 0 : share(sm->bytes, sm->n, i);
}

int ipum_slot_intervals(const ipum_map *m, int s, int *from, int *to)
{
    const ipum_slot_map *sm = &m->slots[s];
    int n = 0;

    if (sm->live_from < 0 || sm->live_to < sm->live_from)
        return 0;
    if (sm->off_from < sm->live_from || sm->off_from >= sm->live_to ||
        sm->off_to <= sm->off_from) {
        from[0] = sm->live_from;
        to[0] = sm->live_to;
        return 1;
    }
    from[n] = sm->live_from;
    to[n++] = sm->off_from;
    if (sm->off_to <= sm->live_to && sm->off_to < m->plan->n_nodes) {
        from[n] = sm->off_to;
        to[n++] = sm->live_to;
    }
    return n;
}

static int tiles_for(const ipum_device *d, double bytes)
{
    double n = bytes / IPUM_GRAIN;

    if (bytes <= 0.0)
        return 0;
    if (n >= d->tiles)
        return d->tiles;
    return n <= 1.0 ? 1 : (int)(n + 0.999999);
}

static int is_persistent(popc_slot_kind k)
{
    return k == POPC_SLOT_WEIGHT || k == POPC_SLOT_CONST ||
           k == POPC_SLOT_GRAD || k == POPC_SLOT_STATE;
}

static int category(popc_slot_kind k)
{
    switch (k) {
    case POPC_SLOT_WEIGHT:
    case POPC_SLOT_CONST: return IPUM_MEM_WEIGHTS;
    case POPC_SLOT_GRAD: return IPUM_MEM_GRADS;
    case POPC_SLOT_STATE: return IPUM_MEM_STATE;
    default: return IPUM_MEM_ACTS;
    }
}

/* ---- mapping ------------------------------------------------------------ */

void ipum_map_free(ipum_map *m)
{
    if (!m)
        return;
    ipum_host->free(m->tiles);
    ipum_host->free(m->slots);
    ipum_host->free(m->nodes);
    ipum_host->free(m);
}

static popc_status bad_plan(const char *who, const char *what,
                            const char *name, int ipu)
{
    return ipum_host->set_error(POPC_EBACKEND, "%s backend: %s '%s' is on "
                                "IPU %d; IPUs 0 to %d exist", who, what,
                                name ? name : "(unnamed)", ipu, MAX_IPUS - 1);
}

/* Live ranges, IPUs of inputs and the IPU count. */
static popc_status place_ranges(ipum_map *m, const char *who)
{
    const popc_plan *p = m->plan;
    int n_ipus = m->dev.n_ipus > p->n_ipus ? m->dev.n_ipus : p->n_ipus;
    int offchip = POPC_HAS_FIELD(popc_plan, p->size, offchip_to) &&
                  p->offchip_from && p->offchip_to;

    for (int s = 0; s < p->n_slots; s++) {
        const popc_plan_slot *sl = popc_plan_slot_at(p, s);
        ipum_slot_map *sm = &m->slots[s];

        sm->ipu = sl->ipu;
        sm->live_from = sl->kind == POPC_SLOT_ACT ? sl->first_use : -1;
        sm->live_to = sl->kind == POPC_SLOT_ACT ? sl->last_use : -1;
        sm->off_from = offchip ? p->offchip_from[s] : -1;
        sm->off_to = offchip ? p->offchip_to[s] : -1;
    }
    /* An input is streamed to the IPU that first reads it and held until
    ** its last reader. */
    for (int k = 0; k < p->n_nodes; k++) {
        const popc_plan_node *pn = popc_plan_node_at(p, k);

        if (pn->ipu < 0 || pn->ipu >= MAX_IPUS)
            return bad_plan(who, "node", pn->name, pn->ipu);
        if (pn->ipu >= n_ipus)
            n_ipus = pn->ipu + 1;
        for (int j = 0; j < pn->n_inputs + pn->n_outputs; j++) {
            int s = j < pn->n_inputs ? pn->inputs[j]
                                     : pn->outputs[j - pn->n_inputs];
            if (s < -1 || s >= p->n_slots || (s < 0 && j >= pn->n_inputs))
                return ipum_host->set_error(POPC_EBACKEND, "%s backend: "
                                            "node '%s' refers to slot %d "
                                            "of %d", who, pn->name ?
                                                pn->name : "(unnamed)",
                                            s, p->n_slots);
        }
        for (int j = 0; j < pn->n_inputs; j++) {
            int s = pn->inputs[j];
            ipum_slot_map *sm;

            if (s < 0 || popc_plan_slot_at(p, s)->kind != POPC_SLOT_INPUT)
                continue;
            sm = &m->slots[s];
            if (sm->live_from < 0) {
                sm->live_from = k;
                sm->ipu = pn->ipu;
            }
            sm->live_to = k;
        }
    }
    for (int s = 0; s < p->n_slots; s++) {
        int ipu = m->slots[s].ipu;
        if (ipu < 0 || ipu >= MAX_IPUS)
            return bad_plan(who, "tensor", popc_plan_slot_at(p, s)->name, ipu);
        if (ipu >= n_ipus)
            n_ipus = ipu + 1;
    }
    m->n_ipus = n_ipus;
    return POPC_OK;
}

/* Consecutive runs of tiles per IPU, persistent tensors first. */
static void place_slots(ipum_map *m, int *cursor)
{
    const popc_plan *p = m->plan;
    int T = m->dev.tiles;

    for (int pass = 0; pass < 2; pass++)
        for (int s = 0; s < p->n_slots; s++) {
            const popc_plan_slot *sl = popc_plan_slot_at(p, s);
            ipum_slot_map *sm = &m->slots[s];
            int live = sm->live_from >= 0;
            unsigned loc;

            if (pass == 0 ? !is_persistent(sl->kind)
                          : is_persistent(sl->kind) || !live)
                continue;
            sm->bytes = (int64_t)popc_view_nbytes(&sl->info);
            if (POPC_HAS_FIELD(popc_plan, p->size, store_dtype) &&
                p->store_dtype)
                sm->bytes = popc_view_numel(&sl->info) *
                            (int64_t)popc_dtype_size(p->store_dtype[s]);
            loc = ipum_slot_location(p, s);
            if (loc & POPC_LOC_SHARDED) /* this replica's share */
                sm->bytes = (sm->bytes + m->dev.replicas - 1) /
                            m->dev.replicas;
            if (pass == 0 && (loc & POPC_LOC_OFF_CHIP)) {
                /* streaming memory; loaded as its readers' temporaries */
                m->off_chip[category(sl->kind)] += sm->bytes;
                sm->n = 0;
                continue;
            }
            sm->n = tiles_for(&m->dev, (double)sm->bytes);
            sm->first = cursor[sm->ipu];
            cursor[sm->ipu] = (int)((cursor[sm->ipu] + sm->n) % T);
        }
}

/* Conv, and the graph optimizer's popc::FusedConv and popc::BlockedConv */
static int is_conv(const popc_op_def *op)
{
    return op && op->name && (strncmp(op->name, "Conv", 4) == 0 ||
                              strcmp(op->name, "FusedConv") == 0 ||
                              strcmp(op->name, "BlockedConv") == 0);
}

/* FNV-1a of a convolution's operand and result shapes: its parameters as
** far as the layout is concerned. */
static uint64_t conv_hash(const popc_plan *p, const popc_plan_node *pn)
{
    uint64_t h = 1469598103934665603ull;

    for (int j = 0; j < pn->n_inputs + pn->n_outputs; j++) {
        int s = j < pn->n_inputs ? pn->inputs[j]
                                 : pn->outputs[j - pn->n_inputs];
        const popc_view *v;

        if (s < 0)
            continue;
        v = &popc_plan_slot_at(p, s)->info;
        for (int d = 0; d < v->rank; d++) {
            h ^= (uint64_t)v->dims[d] + (uint64_t)j * 0x10000ull;
            h *= 1099511628211ull;
        }
        h ^= (uint64_t)v->rank;
        h *= 1099511628211ull;
    }
    return h;
}

/* Node k's temporaries in bytes: its own, plus off-chip weights loaded
** for it. */
static double node_temp(const ipum_map *m, int k)
{
    const popc_plan *p = m->plan;
    const popc_plan_node *pn = popc_plan_node_at(p, k);
    double temp = pn->cost.temp_bytes > 0.0 ? pn->cost.temp_bytes : 0.0;

    for (int j = 0; j < pn->n_inputs; j++) {
        int s = pn->inputs[j];
        if (s >= 0 && is_persistent(popc_plan_slot_at(p, s)->kind) &&
            (ipum_slot_location(p, s) & POPC_LOC_OFF_CHIP))
            temp += (double)m->slots[s].bytes;
    }
    return temp;
}

void ipum_node_size(ipum_map *m, int k, int n)
{
    const popc_plan_node *pn = popc_plan_node_at(m->plan, k);
    ipum_node_map *nm = &m->nodes[k];
    double avail = pn->available_memory > 0.0 ? pn->available_memory
                                              : m->dev.available;
    double cap = avail * (double)m->dev.tile_bytes, per;
    int64_t steps;

    nm->n = n < 1 ? 1 : n;
    if (cap < IPUM_GRAIN)
        cap = IPUM_GRAIN;
    per = node_temp(m, k) / nm->n;
    nm->serial = per > cap ? (int)(per / cap + 0.999999) : 1;
    nm->temp_per_tile = (int64_t)(per / nm->serial + 0.999999);
    /* an op serialized by its attributes (serializedMatMul) counts one
    ** step's temporaries: each of its steps is split as needed */
    steps = popc_attr_int(pn->attrs, POPC_ATTR_SERIAL_FACTOR, 1);
    if (steps > 1)
        nm->serial = steps * nm->serial > INT32_MAX
                         ? INT32_MAX
                         : (int)(steps * nm->serial);
}

/* Tiles a node computes on and its temporaries per tile. */
static void place_nodes(ipum_map *m)
{
    const popc_plan *p = m->plan;
    const ipum_device *d = &m->dev;

    for (int k = 0; k < p->n_nodes; k++) {
        const popc_plan_node *pn = popc_plan_node_at(p, k);
        ipum_node_map *nm = &m->nodes[k];
        double out = 0.0, temp = node_temp(m, k), by_flops;
        int n;

        nm->ipu = pn->ipu;
        nm->first = 0;
        nm->group_lead = -1;
        for (int j = 0; j < pn->n_outputs; j++) {
            int s = pn->outputs[j];
            out += (double)m->slots[s].bytes;
            if (j == 0)
                nm->first = m->slots[s].first;
        }
        if (is_conv(pn->op))
            nm->first = popc_attr_int(pn->attrs, POPC_ATTR_CONV_DITHERING,
                                      d->conv_dithering)
                            ? (int)(conv_hash(p, pn) % (uint64_t)d->tiles)
                            : 0;
        by_flops = pn->cost.flops / FLOP_GRAIN;
        n = tiles_for(d, out > temp ? out : temp);
        if (by_flops > n)
            n = by_flops >= d->tiles ? d->tiles : (int)by_flops + 1;
        ipum_node_size(m, k, n);
    }
}

static int64_t node_temp_on(const ipum_map *m, int k, int ipu, int t)
{
    const ipum_node_map *nm = &m->nodes[k];

    if (nm->ipu != ipu || run_index(m->dev.tiles, nm->first, nm->n, t) < 0)
        return 0;
    return nm->temp_per_tile;
}

/* Buckets of on-chip intervals by the position where they start and end;
** interval e is the (e / n_slots)-th of slot e % n_slots. */
typedef struct sweep {
    int64_t *live;             /* [ipu * T + t] live activation bytes */
    int64_t *peak;             /* peak of live + temporaries */
    int *from_head, *to_head;  /* per position: first interval */
    int *from_next, *to_next;  /* next interval in the bucket */
} sweep;

static void add_slot(ipum_map *m, sweep *w, int s, int sign)
{
    const ipum_slot_map *sm = &m->slots[s];
    int T = m->dev.tiles;

    for (int i = 0; i < sm->n; i++) {
        int t = (sm->first + i) % T;
        w->live[sm->ipu * T + t] += sign * share(sm->bytes, sm->n, i);
    }
}

static void check_tile(ipum_map *m, sweep *w, int k, int ipu, int t)
{
    int at = ipu * m->dev.tiles + t;
    int64_t temp = node_temp_on(m, k, ipu, t);

    if (w->live[at] + temp > w->peak[at] || m->tiles[at].peak_node < 0) {
        w->peak[at] = w->live[at] + temp;
        m->tiles[at].bytes[IPUM_MEM_ACTS] = w->live[at];
        m->tiles[at].bytes[IPUM_MEM_TEMPS] = temp;
        m->tiles[at].peak_node = k;
    }
}

static void check_run(ipum_map *m, sweep *w, int k, int ipu, int first,
                      int n)
{
    for (int i = 0; i < n; i++)
        check_tile(m, w, k, ipu, (first + i) % m->dev.tiles);
}

static void run_sweep(ipum_map *m, sweep *w)
{
    const popc_plan *p = m->plan;
    int ns = p->n_slots;

    for (int s = ns - 1; s >= 0; s--) {
        int from[2], to[2], n = ipum_slot_intervals(m, s, from, to);

        for (int i = 0; i < n && m->slots[s].n > 0; i++) {
            int e = i * ns + s;
            if (from[i] >= p->n_nodes)
                continue;
            w->from_next[e] = w->from_head[from[i]];
            w->from_head[from[i]] = e;
            if (to[i] < p->n_nodes) {
                w->to_next[e] = w->to_head[to[i]];
                w->to_head[to[i]] = e;
            }
        }
    }
    for (int k = 0; k < p->n_nodes; k++) {
        const ipum_node_map *nm = &m->nodes[k];

        for (int e = w->from_head[k]; e >= 0; e = w->from_next[e])
            add_slot(m, w, e % ns, 1);
        for (int e = w->from_head[k]; e >= 0; e = w->from_next[e])
            check_run(m, w, k, m->slots[e % ns].ipu, m->slots[e % ns].first,
                      m->slots[e % ns].n);
        check_run(m, w, k, nm->ipu, nm->first, nm->n);
        for (int e = w->to_head[k]; e >= 0; e = w->to_next[e])
            add_slot(m, w, e % ns, -1);
    }
}

static popc_status measure(ipum_map *m)
{
    const popc_plan *p = m->plan;
    size_t nt = (size_t)m->n_ipus * (size_t)m->dev.tiles;
    size_t ns = 2 * (size_t)p->n_slots + 1, nk = (size_t)p->n_nodes + 1;
    sweep w = {0};
    popc_status st = POPC_OK;

    w.live = popc_host_calloc(ipum_host, nt, sizeof *w.live);
    w.peak = popc_host_calloc(ipum_host, nt, sizeof *w.peak);
    w.from_head = popc_host_calloc(ipum_host, nk, sizeof(int));
    w.to_head = popc_host_calloc(ipum_host, nk, sizeof(int));
    w.from_next = popc_host_calloc(ipum_host, ns, sizeof(int));
    w.to_next = popc_host_calloc(ipum_host, ns, sizeof(int));
    if (!w.live || !w.peak || !w.from_head || !w.to_head || !w.from_next ||
        !w.to_next) {
        st = ipum_host->set_error(POPC_ENOMEM, "compile: out of memory "
                                  "while mapping tensors to tiles");
        goto done;
    }
    memset(w.from_head, 0xff, nk * sizeof(int));
    memset(w.to_head, 0xff, nk * sizeof(int));
    for (size_t i = 0; i < nt; i++)
        m->tiles[i].peak_node = -1;
    for (int s = 0; s < p->n_slots; s++) {
        const ipum_slot_map *sm = &m->slots[s];
        int c = category(popc_plan_slot_at(p, s)->kind);

        if (!is_persistent(popc_plan_slot_at(p, s)->kind))
            continue;
        for (int i = 0; i < sm->n; i++) {
            int t = (sm->first + i) % m->dev.tiles;
            m->tiles[sm->ipu * m->dev.tiles + t].bytes[c] +=
                share(sm->bytes, sm->n, i);
        }
    }
    run_sweep(m, &w);
    for (size_t i = 0; i < nt; i++) {
        ipum_tile *t = &m->tiles[i];
        t->total = 0;
        for (int c = 0; c < IPUM_MEM_COUNT; c++) {
            t->total += t->bytes[c];
            m->totals[c] += t->bytes[c];
        }
    }
done:
    ipum_host->free(w.live);
    ipum_host->free(w.peak);
    ipum_host->free(w.from_head);
    ipum_host->free(w.to_head);
    ipum_host->free(w.from_next);
    ipum_host->free(w.to_next);
    return st;
}

/* ---- the out-of-memory report ------------------------------------------- */

typedef struct named {
    const char *what;          /* slot name, or node name for temporaries */
    int temp;
    int64_t bytes;
} named;

static void keep_largest(named *top, int *n, named x)
{
    int i;

    if (x.bytes <= 0)
        return;
    if (*n == MAX_NAMED && top[MAX_NAMED - 1].bytes >= x.bytes)
        return;
    if (*n < MAX_NAMED)
        (*n)++;
    for (i = *n - 1; i > 0 && top[i - 1].bytes < x.bytes; i--)
        top[i] = top[i - 1];
    top[i] = x;
}

static popc_status oom_error(const ipum_map *m, int ipu, int t,
                             const char *who)
{
    const popc_plan *p = m->plan;
    const ipum_tile *tile = &m->tiles[ipu * m->dev.tiles + t];
    named top[MAX_NAMED];
    char list[768];
    size_t len = 0;
    int n = 0, k = tile->peak_node;

    for (int s = 0; s < p->n_slots; s++) {
        const ipum_slot_map *sm = &m->slots[s];
        int from[2], to[2], spans = ipum_slot_intervals(m, s, from, to);
        int live = is_persistent(popc_plan_slot_at(p, s)->kind);

        for (int i = 0; i < spans && k >= 0; i++)
            live |= from[i] <= k && k <= to[i];
        if (sm->ipu == ipu && live)
            keep_largest(top, &n, (named){popc_plan_slot_at(p, s)->name, 0,
                                          ipum_slot_bytes_on(m, s, t)});
    }
    if (k >= 0)
        keep_largest(top, &n, (named){popc_plan_node_at(p, k)->name, 1,
                                      node_temp_on(m, k, ipu, t)});
    list[0] = '\0';
    for (int i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len,
                                "%s%s%s%s (%lld bytes)", i ? ", " : "",
                                top[i].temp ? "temporaries of '" : "",
                                top[i].what ? top[i].what : "(unnamed)",
                                top[i].temp ? "'" : "",
                                (long long)top[i].bytes);
    return ipum_host->set_error(
        POPC_ECOMPILE, "out of memory on IPU %d tile %d: needed %lld bytes, "
        "available %lld; largest tensors on this tile: %s; reduce the batch "
        "size, use more IPUs (pipelining), or recomputation (%s backend: "
        "%s, %d tiles x %lld bytes per IPU)", ipu, t,
        (long long)tile->total, (long long)m->dev.tile_bytes, list, who,
        m->dev.name, m->dev.tiles, (long long)m->dev.tile_bytes);
}

/* Overlapped host copies wait on the I/O tiles of their IPU: one buffer
** each for the next micro-batch, two across device iterations (the next
** iteration's too), as PopTorch's OverlapMode describes. */
static popc_status check_io_tiles(ipum_map *m, const char *who)
{
    const popc_plan *p = m->plan;
    int64_t need[MAX_IPUS] = {0};
    int64_t cap = (int64_t)m->dev.io_tiles * m->dev.tile_bytes;
    const char *largest[MAX_IPUS] = {NULL};
    int64_t largest_bytes[MAX_IPUS] = {0};

    for (int s = 0; s < p->n_slots; s++) {
        unsigned loc = ipum_slot_location(p, s);
        int ipu = m->slots[s].ipu;
        int64_t b;

        if (!(loc & POPC_LOC_OVERLAP_ACCUM) || ipu < 0 || ipu >= MAX_IPUS)
            continue;
        b = m->slots[s].bytes * ((loc & POPC_LOC_OVERLAP_ITER) ? 2 : 1);
        need[ipu] += b;
        if (b > largest_bytes[ipu]) {
            largest_bytes[ipu] = b;
            largest[ipu] = popc_plan_slot_at(p, s)->name;
        }
    }
    for (int i = 0; i < MAX_IPUS; i++) {
        if (need[i] > m->io_buffer_bytes)
            m->io_buffer_bytes = need[i];
        if (need[i] > cap)
            return ipum_host->set_error(
                POPC_ECOMPILE, "overlapped host I/O needs %lld bytes of "
                "buffers on the I/O tiles of IPU %d (largest: '%s', %lld "
                "bytes), but TensorLocations.numIOTiles = %d holds %lld; "
                "raise numIOTiles or overlap fewer tensors (%s backend)",
                (long long)need[i], i, largest[i] ? largest[i] : "?",
                (long long)largest_bytes[i], m->dev.io_tiles,
                (long long)cap, who);
    }
    return POPC_OK;
}

static popc_status check_fit(const ipum_map *m, const char *who)
{
    int worst = -1;
    size_t nt = (size_t)m->n_ipus * (size_t)m->dev.tiles;

    for (size_t i = 0; i < nt; i++)
        if (m->tiles[i].total > m->dev.tile_bytes &&
            (worst < 0 || m->tiles[i].total > m->tiles[worst].total))
            worst = (int)i;
    if (worst < 0)
        return POPC_OK;
    return oom_error(m, worst / m->dev.tiles, worst % m->dev.tiles, who);
}

popc_status ipum_map_build(const ipum_device *dev, const popc_plan *plan,
                           const char *who, ipum_map **out)
{
    ipum_map *m;
    int cursor[MAX_IPUS] = {0};
    popc_status st;

    *out = NULL;
    if (!(m = popc_host_calloc(ipum_host, 1, sizeof *m)))
        return ipum_host->set_error(POPC_ENOMEM, "compile: out of memory");
    m->dev = *dev;
    m->plan = plan;
    m->slots = popc_host_calloc(ipum_host, (size_t)plan->n_slots + 1,
                                sizeof *m->slots);
    m->nodes = popc_host_calloc(ipum_host, (size_t)plan->n_nodes + 1,
                                sizeof *m->nodes);
    if (!m->slots || !m->nodes) {
        st = ipum_host->set_error(POPC_ENOMEM, "compile: out of memory");
        goto fail;
    }
    if ((st = place_ranges(m, who)) != POPC_OK)
        goto fail;
    {
        int needed = 1;

        while (needed < m->n_ipus * dev->replicas)
            needed *= 2;
        if ((st = ipum_device_pick(&m->dev, needed, who)) != POPC_OK)
            goto fail;
    }
    m->tiles = popc_host_calloc(ipum_host,
                                (size_t)m->n_ipus * (size_t)dev->tiles,
                                sizeof *m->tiles);
    if (!m->tiles) {
        st = ipum_host->set_error(POPC_ENOMEM, "compile: out of memory "
                                  "for the tile map of %d IPUs", m->n_ipus);
        goto fail;
    }
    place_slots(m, cursor);
    place_nodes(m);
    if ((st = ipum_multiconv_place(m, who)) != POPC_OK ||
        (st = measure(m)) != POPC_OK || (st = check_fit(m, who)) != POPC_OK ||
        (st = check_io_tiles(m, who)) != POPC_OK)
        goto fail;
    ipum_cost_fill(m);
    *out = m;
    return POPC_OK;
fail:
    ipum_map_free(m);
    return st;
}
