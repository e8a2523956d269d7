/* cost.c - the IPU model's cycle estimates (shared with the offline
** backend) and how many parts a node is split into on the host.
**
** Every node is one bulk-synchronous step on the tiles tilemap.c gave it
** (its first output's tiles, as many as its output bytes, temporaries or
** flops need): the tiles exchange their operands, compute, then sync.
**
**   compute   flops / (tiles x rate). Rates, flops per cycle per tile:
**             MatMul, Gemm and Conv* run on the AMP units: float32 16
**             (Mk1) or 32 (Mk2, IPU21); float16 four times that. Every
**             other op runs on the vector units: float32 8, float16 16.
**             An op model.half() marks (POPC_ATTR_FLOAT16) counts as
**             float16.
**   exchange  (cost.bytes / tiles) / W bytes per cycle per tile, W = 4 on
**             Mk1 (8 TB/s all-to-all) and 24 on Mk2 (47.5 TB/s).
**   sync      150 cycles per step. A node whose temporaries exceed the
**             available-memory proportion is serialised into s steps
**             (tilemap.c): s syncs, and its operands are exchanged s
**             times.
**   IPU links an operand produced on another IPU crosses a link at 48
**             bytes per cycle (64 GB/s) plus 1000 cycles of inter-IPU
**             sync.
**   host      host ops (CPU callbacks), streamed inputs and the graph's
**             outputs move at 12 bytes per cycle (16 GB/s PCIe) plus 3000
**             cycles of latency per transfer (every micro-batch: outputMode
**             All's traffic, an upper bound for the others). A streamed
**             input is paid by its first reader, an output by its writer,
**             except under syncPattern Full on several IPUs: every IPU
**             synchronises on every host transfer, so each IPU's first
**             node waits for all inputs (a pipeline stage's phase pays
**             the inputs of stage 0 too). SinglePipeline and
**             ReplicaAndLadder let each IPU talk to the host alone.
**   overlap   set_overlap_for_input/output: the copy for the next
**             micro-batch runs through the I/O tiles during this one's
**             work. Of a chain of L micro-batches (L = gradient
**             accumulation for OverlapAccumulationLoop, times device
**             iterations for OverlapDeviceIterationLoop) the first copy
**             waits; the others cost only what exceeds the work. Each
**             then moves from the I/O tiles at W bytes per cycle per I/O
**             tile plus a sync. Their buffers must fit the I/O tiles
**             (tilemap.c).
**   streaming memory (TensorLocations) an off-chip weight, optimizer state
**             or accumulator is loaded for each node that reads it, an
**             off-chip activation is stored after its last use in a phase
**             and loaded for its next reader: 15 bytes per cycle (20 GB/s)
**             plus 1000 cycles per transfer. Through the I/O tiles
**             (useIOTilesToLoad/Store) a transfer overlaps the node's own
**             work: only what exceeds it is added.
**   MultiConv the convolutions of a group planned in parallel run at once
**             on their own tiles (multiconv.c): the group costs its slowest
**             member.
**   sharding  a replica-sharded input is gathered from the other replicas
**             over the IPU links first: (R-1)/R of it at 48 bytes per
**             cycle plus an inter-IPU sync.
** The numbers are public figures divided by tiles and clock; they rank
** models and scale with the work, they do not predict a real IPU to the
** cycle.
**
** Splitting on the host (ipumodel): a node is cut into parts of about
** PART_NS nanoseconds of one core's work, estimated from the same cost
** (matrix ops at the host's measured sgemm rate, calibrate.c; others at 2
** elements/ns), so small nodes run whole and do not pay for a barrier.
*/
#include "config.h"

#include <string.h>

#include "backends/common/tilemap.h"
#include "popc/options.h"

#define SYNC_CYCLES 150.0
#define IPU_SYNC_CYCLES 1000.0
#define LINK_BYTES 48.0
#define HOST_BYTES 12.0
#define HOST_LATENCY 3000.0
#define PART_NS 8000.0
#define STREAM_BYTES 15.0
#define STREAM_LATENCY 1000.0

static int is_matrix(const popc_op_def *op)
{
    const char *n = op && op->name ? op->name : "";

    /* the graph optimizer's popc::FusedConv and popc::FusedMatMul, and
    ** popc::BlockedConv (NCHWc) */
    if (strncmp(n, "Fused", 5) == 0)
        n += 5;
    else if (strncmp(n, "Blocked", 7) == 0)
        n += 7;
    return strncmp(n, "MatMul", 6) == 0 || strncmp(n, "Gemm", 4) == 0 ||
           strncmp(n, "Conv", 4) == 0;
}

static double rate(const ipum_device *d, const popc_plan *p,
                   const popc_plan_node *pn)
{
    /* model.half() runs some float16 operations in float32 between casts
    ** and marks them (POPC_KERNEL_HALF_PARTIALS): an IPU runs them in
    ** float16 */
    int half = (pn->n_outputs > 0 &&
                popc_plan_slot_at(p, pn->outputs[0])->info.dtype ==
                    POPC_DTYPE_F16) ||
               popc_attr_int(pn->attrs, POPC_ATTR_FLOAT16, 0);

    if (is_matrix(pn->op))
        return (d->version == 1 ? 16.0 : 32.0) * (half ? 4.0 : 1.0);
    return half ? 16.0 : 8.0;
}

/* Cycles a transfer of `bytes` to or from streaming memory adds to a node
** doing `work` cycles: all of it, or through the I/O tiles what exceeds
** the work it overlaps. */
static double stream(double bytes, int io_tiles, double work)
{
    double t = bytes / STREAM_BYTES + STREAM_LATENCY;

    if (!io_tiles)
        return t;
    return t > work ? t - work : 0.0;
}

/* TensorLocations' transfers of node k (see the header). */
static double locations(const ipum_map *m, int k, double work)
{
    const popc_plan *p = m->plan;
    const popc_plan_node *pn = popc_plan_node_at(p, k);
    double extra = 0.0, R = m->dev.replicas;

    for (int j = 0; j < pn->n_inputs + pn->n_outputs; j++) {
        int s = j < pn->n_inputs ? pn->inputs[j]
                                 : pn->outputs[j - pn->n_inputs];
        unsigned loc;
        const ipum_slot_map *sm;

        if (s < 0 || !(loc = ipum_slot_location(p, s)))
            continue;
        sm = &m->slots[s];
        if (popc_plan_slot_at(p, s)->kind == POPC_SLOT_ACT) {
            if (j < pn->n_inputs && sm->off_to == k)
                extra += stream((double)sm->bytes, loc & POPC_LOC_IO_LOAD,
                                work);
            if (sm->off_from == k)
                extra += stream((double)sm->bytes,
                                loc & POPC_LOC_IO_STORE, work);
            continue;
        }
        if (j >= pn->n_inputs)
            continue;
        if (loc & POPC_LOC_OFF_CHIP)
            extra += stream((double)sm->bytes, loc & POPC_LOC_IO_LOAD, work);
        if ((loc & POPC_LOC_SHARDED) && R > 1)
            extra += (double)sm->bytes * (R - 1) / LINK_BYTES +
                     IPU_SYNC_CYCLES;
    }
    return extra;
}

double ipum_node_cycles(ipum_map *m, int k)
{
    const popc_plan *p = m->plan;
    const popc_plan_node *pn = popc_plan_node_at(p, k);
    ipum_node_map *nm = &m->nodes[k];
    double tiles = nm->n > 0 ? nm->n : 1;
    double exch_rate = m->dev.version == 1 ? 4.0 : 24.0;
    double flops = pn->cost.flops > 0.0 ? pn->cost.flops : 0.0;
    double bytes = pn->cost.bytes > 0.0 ? pn->cost.bytes : 0.0;
    double link = 0.0;

    nm->compute = flops / (tiles * rate(&m->dev, p, pn));
    nm->exchange = bytes / tiles / exch_rate * nm->serial;
    nm->sync = SYNC_CYCLES * nm->serial;
    for (int j = 0; j < pn->n_inputs; j++) {
        int s = pn->inputs[j];
        if (s < 0 || popc_plan_slot_at(p, s)->kind == POPC_SLOT_INPUT ||
            m->slots[s].ipu == pn->ipu)
            continue;
        link += (double)m->slots[s].bytes;
    }
    if (link > 0.0)
        nm->exchange += link / LINK_BYTES + IPU_SYNC_CYCLES;
    if (pn->op && (pn->op->flags & POPC_OP_HOST))
        nm->exchange += bytes / HOST_BYTES + HOST_LATENCY;
    nm->exchange += locations(m, k, nm->compute + nm->exchange);
    return nm->compute + nm->exchange + nm->sync;
}

void ipum_cost_fill(ipum_map *m)
{
    for (int k = 0; k < m->plan->n_nodes; k++)
        m->nodes[k].cycles = ipum_node_cycles(m, k);
}

/* Whether node k is the first of its IPU in the schedule. */
static int ipu_starts(const ipum_map *m, int k)
{
    for (int j = 0; j < k; j++)
        if (popc_plan_node_at(m->plan, j)->ipu ==
            popc_plan_node_at(m->plan, k)->ipu)
            return 0;
    return 1;
}

/* Host bytes of nodes [first, last): bytes[d][c], d 0 for inputs and 1
** for outputs, c by how they travel: 0 waits for the host, 1 overlaps the
** accumulation loop, 2 device iterations too. Inputs count where they are
** first read (every input when `all_inputs`), outputs where written. */
static void host_bytes(const ipum_map *m, int first, int last,
                       int all_inputs, double bytes[2][3])
{
    const popc_plan *p = m->plan;

    memset(bytes, 0, 2 * sizeof bytes[0]);
    for (int s = 0; s < p->n_slots; s++) {
        unsigned loc = ipum_slot_location(p, s);
        int at = m->slots[s].live_from;
        int in = popc_plan_slot_at(p, s)->kind == POPC_SLOT_INPUT;

        if (!in && !(loc & POPC_LOC_HOST_OUTPUT))
            continue;
        if (at < 0 || (!(in && all_inputs) && (at < first || at >= last)))
            continue;
        bytes[!in][(loc & POPC_LOC_OVERLAP_ITER)    ? 2
                   : (loc & POPC_LOC_OVERLAP_ACCUM) ? 1
                                                    : 0] +=
            (double)m->slots[s].bytes;
    }
}

/* Cycles a host copy of `bytes` waiting for the host costs. */
static double waited(double bytes)
{
    return bytes > 0.0 ? bytes / HOST_BYTES + HOST_LATENCY : 0.0;
}

/* Cycles an overlapped host copy of `bytes` adds to `compute` cycles of
** work per micro-batch when `loop` micro-batches share one preload chain:
** the first copy of the chain waits for the host, the others hide behind
** the previous micro-batch's work; each is then copied between the I/O
** tiles and the compute tiles. */
static double overlapped(const ipum_map *m, double bytes, double loop,
                         double compute)
{
    double t = waited(bytes);
    double w = m->dev.version == 1 ? 4.0 : 24.0;
    double io = m->dev.io_tiles > 0 ? m->dev.io_tiles : 1;
    double hidden = t > compute ? t - compute : 0.0;

    if (bytes <= 0.0)
        return 0.0;
    return t / loop + (1.0 - 1.0 / loop) * hidden + bytes / (w * io) +
           SYNC_CYCLES;
}

/* What node k adds to the cycles of nodes [first, last): its own, or for
** a MultiConv run in parallel its group's slowest member, counted at the
** group's first node (multiconv.c). */
static double step_cycles(const ipum_map *m, int k, int first, int last)
{
    int lead = m->nodes[k].group_lead;
    double slowest = 0.0;

    if (lead < 0 || lead < first)
        return m->nodes[k].cycles;
    if (lead != k)
        return 0.0;
    for (int j = k; j < last; j++)
        if (m->nodes[j].group_lead == lead && m->nodes[j].cycles > slowest)
            slowest = m->nodes[j].cycles;
    return slowest;
}

double ipum_cost_cycles(const ipum_map *m, int first, int last)
{
    const popc_plan *p = m->plan;
    double cycles = 0.0, compute, bytes[2][3];
    double accum = (double)m->dev.grad_accum;
    double iters = accum * (double)m->dev.device_iterations;
    int all_inputs = 0;

    if (first < 0)
        first = 0;
    if (last > p->n_nodes)
        last = p->n_nodes;
    for (int k = first; k < last; k++)
        cycles += step_cycles(m, k, first, last);
    if (m->dev.sync_pattern == POPC_SYNC_FULL && m->n_ipus > 1) {
        /* every IPU waits for every transfer, before its first node */
        for (int k = first; k < last && !all_inputs; k++)
            all_inputs = ipu_starts(m, k);
    }
    host_bytes(m, first, last, all_inputs, bytes);
    compute = cycles;
    for (int d = 0; d < 2; d++)
        cycles += waited(bytes[d][0]) +
                  overlapped(m, bytes[d][1], accum, compute) +
                  overlapped(m, bytes[d][2], iters, compute);
    return cycles;
}

int ipum_cost_parts(const ipum_map *m, int k, int max_parts,
                    double gemm_rate)
{
    const popc_plan_node *pn = popc_plan_node_at(m->plan, k);
    double flops = pn->cost.flops > 0.0 ? pn->cost.flops : 0.0;
    double bytes = pn->cost.bytes > 0.0 ? pn->cost.bytes : 0.0;
    double ns = is_matrix(pn->op) ? flops / gemm_rate
                                  : (flops + bytes / 4.0) / 2.0;
    double parts = ns / PART_NS;

    if (!pn->op || !(pn->op->flags & POPC_OP_SPLIT) || parts < 2.0 ||
        max_parts < 2)
        return 1;
    return parts >= max_parts ? max_parts : (int)parts;
}
