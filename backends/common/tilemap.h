/* tilemap.h - the IPU device model shared by the ipumodel and offline
** backends: device descriptions, the mapping of a plan's tensors to tiles,
** the per-tile memory check, the cycle estimates and the JSON report.
**
** Plugins must not link each other, so these sources (backends/common/
** tilemap.c, report.c and backends/ipumodel/cost.c) are compiled into both
** modules. Every symbol is hidden (-fvisibility=hidden and the modules'
** export list), so the two copies never meet. ipum_host must be set by the
** module's init() before anything here is called.
**
** Memory model (what compile() checks):
**   - every tensor lives on the IPU of its slot (popc_plan_slot.ipu; an
**     input on the IPU of its first consumer) and is spread linearly over
**     a run of consecutive tiles by bytes: ceil(bytes / IPUM_GRAIN) tiles
**     (at most all of them), equal shares, starting where the previous
**     tensor of that IPU ended, so small tensors do not pile up on tile 0;
**   - weights and constants, gradient accumulators and optimizer state
**     hold their bytes for the whole run;
**   - activations and streamed inputs hold theirs over their live range
**     (first_use..last_use of the plan, inclusive), except while the plan
**     keeps them off chip (popc_plan.offchip_from/offchip_to, phased
**     execution): a tile needs the peak over the schedule of the live
**     bytes on it;
**   - a node's temporaries (cost.temp_bytes) are spread over the tiles the
**     node computes on, but at most available-memory-proportion x tile
**     bytes per tile: like Poplar's planner, a node that wants more is
**     serialised into that many steps (which costs cycles, see cost.c);
**     a node carrying POPC_ATTR_SERIAL_FACTOR f (serializedMatMul) reports
**     one step's temporaries and runs f times that many steps;
**   - a node computes from the first tile of its first output, except
**     convolutions (ops named Conv*): like Poplar's, they are laid out
**     from tile 0, so their temporaries pile up on the low tiles; with
**     Training.setConvolutionDithering (or a MultiConv's per-convolution
**     setting) each starts from a tile chosen by
**     a hash of its shapes, so convolutions with different parameters
**     start on different tiles;
**   - a tile overflows when persistent + peak(live + temporaries) exceeds
**     its bytes; compile fails with POPC_ECOMPILE naming the fullest tile
**     and its largest tensors.
** Replicas are identical copies on their own IPUs, so one replica is
** mapped.
*/
#ifndef POPC_BACKENDS_TILEMAP_H
#define POPC_BACKENDS_TILEMAP_H

#include <stdint.h>

#include "popc/plugin.h"

/* Tensors are spread over tiles in shares of at least this many bytes. */
#define IPUM_GRAIN 256
/* Proportion of a tile's memory temporaries may take by default. */
#define IPUM_DEFAULT_AVAILABLE 0.6

extern const popc_host *ipum_host;

typedef struct ipum_device {
    int version;               /* 1, 2 or 21 */
    const char *name;          /* "Mk1", "Mk2", "Mk2 (IPU21)" */
    int tiles;                 /* per IPU that compute and hold tensors */
    int64_t tile_bytes;
    double clock_hz;
    int n_ipus;                /* per replica (at least the plan's) */
    int replicas;
    double available;          /* default proportion for temporaries */
    int io_tiles;              /* per IPU reserved for I/O (numIOTiles) */
    int conv_dithering;        /* Training.setConvolutionDithering */
    int sync_pattern;          /* POPC_SYNC_* (syncPattern) */
    int ipu_id;                /* useIpuId: device id, -1: any */
    int first_ipu, ipus;       /* ipu_id's physical IPUs (devices.c) */
    int64_t device_iterations; /* loops host I/O overlaps across */
    int64_t grad_accum;
} ipum_device;

/* Memory categories of the report. */
enum {
    IPUM_MEM_WEIGHTS = 0,      /* weights and constants */
    IPUM_MEM_GRADS,            /* gradient accumulators */
    IPUM_MEM_STATE,            /* optimizer state */
    IPUM_MEM_ACTS,             /* activations and inputs, at the peak */
    IPUM_MEM_TEMPS,            /* temporaries, at the peak */
    IPUM_MEM_COUNT
};

typedef struct ipum_tile {
    int64_t bytes[IPUM_MEM_COUNT];
    int64_t total;
    int peak_node;             /* schedule position of the peak; -1 */
} ipum_tile;

/* Where a slot lives: tiles [first, first + n) of its IPU, modulo the
** tile count, bytes shared as evenly as possible. n == 0: no bytes. */
typedef struct ipum_slot_map {
    int ipu;
    int first, n;
    int64_t bytes;
    int live_from, live_to;    /* schedule positions, inclusive; -1: never */
    int off_from, off_to;      /* off chip after off_from until off_to; -1 */
} ipum_slot_map;

typedef struct ipum_node_map {
    int ipu;
    int first, n;              /* tiles it computes on */
    int64_t temp_per_tile;     /* after serialisation */
    int serial;                /* steps the temporaries force (>= 1) */
    int group_lead;            /* MultiConv run in parallel: the group's
                                  first node in the schedule; -1: none */
    double cycles;             /* filled by ipum_cost_fill */
    double compute, exchange, sync; /* the parts of cycles */
} ipum_node_map;

typedef struct ipum_map {
    ipum_device dev;
    const popc_plan *plan;     /* borrowed */
    int n_ipus;
    ipum_tile *tiles;          /* [ipu * dev.tiles + tile] */
    ipum_slot_map *slots;      /* per plan slot */
    ipum_node_map *nodes;      /* per plan node */
    int64_t totals[IPUM_MEM_COUNT]; /* summed over the tiles of a replica */
    int64_t off_chip[IPUM_MEM_COUNT]; /* in streaming memory, per replica
                                         (TensorLocations) */
    int64_t io_buffer_bytes;   /* on the I/O tiles of the fullest IPU:
                                  overlapped host copies in flight */
} ipum_map;

/* The plan's POPC_LOC_* bits of slot s (0 from an older core). */
static inline unsigned ipum_slot_location(const popc_plan *p, int s)
{
    return POPC_HAS_FIELD(popc_plan, p->size, slot_location) &&
                   p->slot_location
               ? p->slot_location[s]
               : 0u;
}

/* The device described by cfg. who names the backend in messages.
** POPC_ECONFIG for an unknown IPU version or negative sizes. */
popc_status ipum_device_init(const popc_backend_config *cfg, const char *who,
                             ipum_device *dev);

/* Map the plan on dev and check every tile. On POPC_ECOMPILE (a tile
** overflows) *out is NULL and the message is the out-of-memory report.
** Also POPC_ENOMEM, POPC_EBACKEND (a malformed plan). Free with
** ipum_map_free. */
popc_status ipum_map_build(const ipum_device *dev, const popc_plan *plan,
                           const char *who, ipum_map **out);
void ipum_map_free(ipum_map *m); /* NULL-safe */

/* Bytes slot s has on tile t of its IPU (0 when it is elsewhere). */
int64_t ipum_slot_bytes_on(const ipum_map *m, int s, int t);
/* The on-chip intervals [from[i], to[i]] (inclusive) of a live slot: 0, 1
** or 2 of them. */
int ipum_slot_intervals(const ipum_map *m, int s, int *from, int *to);

/* ---- devices.c ---------------------------------------------------------- */

/* useIpuId: the device list the IPU model offers is a POD16's, numbered as
** gc-info numbers it: ids 0-15 are single IPUs, 16-23 pairs, 24-27 groups
** of 4, 28-29 groups of 8 and 30 all 16. The device must have exactly the
** IPUs the model reserves (`needed`: IPUs per replica x replicas, rounded
** up to a power of 2). Sets dev->first_ipu and dev->ipus; POPC_EINVAL
** naming the id, its IPUs and the ids that fit. Nothing when ipu_id < 0. */
popc_status ipum_device_pick(ipum_device *dev, int needed, const char *who);

/* ---- cost.c ------------------------------------------------------------- */

/* Fill nodes[k].cycles from the plan's costs (see cost.c). */
void ipum_cost_fill(ipum_map *m);

/* Node k computes on n tiles: its steps and temporaries per tile. */
void ipum_node_size(ipum_map *m, int k, int n);

/* Cycles of node k as the map places it now (cost.c). */
double ipum_node_cycles(ipum_map *m, int k);

/* Plans the parallel MultiConv groups (multiconv.c): each convolution of
** a group gets its own run of tiles, and the group's cycles are those of
** its slowest member. POPC_EINVAL naming the group for settings it cannot
** honour. */
popc_status ipum_multiconv_place(ipum_map *m, const char *who);
/* Estimated cycles of one micro-batch through nodes [first, last). */
double ipum_cost_cycles(const ipum_map *m, int first, int last);
/* Planned parts of node k when up to max_parts workers are free, matrix
** ops running at gemm_rate flops per nanosecond on one core. */
int ipum_cost_parts(const ipum_map *m, int k, int max_parts,
                    double gemm_rate);

/* ---- report.c ----------------------------------------------------------- */

/* What a run did, for the report's "runtime" object. */
typedef struct ipum_run_stats {
    int threads;
    int64_t nodes_run, split_runs, parallel_calls;
} ipum_run_stats;

/* The JSON report of m (report.c, layout there: device, per-tile memory
** by category, per-op and per-stage cycles) written to the host's sink;
** stats NULL for a backend that does not run. */
popc_status ipum_report_to(const ipum_map *m, const char *backend,
                           const ipum_run_stats *stats,
                           popc_report_sink write, void *user);

#endif /* POPC_BACKENDS_TILEMAP_H */
