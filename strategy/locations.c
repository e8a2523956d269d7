/* locations.c - Options.TensorLocations: where the device keeps each
** tensor, per class (activations, weights, optimizer state, gradient
** accumulators), as plan->pub.slot_location bits (POPC_LOC_*).
**
** PopART's rules, with its defaults:
**   useOnChipStorage(False)   the class lives in streaming memory and is
**                             loaded for each use; tensors with fewer
**                             than minElementsForOffChip elements (default
**                             2) stay on chip. Activations go off chip only
**                             under phased execution, where tensorsLiveness
**                             says when; True keeps them on chip.
**   useReplicatedTensorSharding(True)  with more than one replica, each
**                             replica holds 1/R of the tensor (tensors of
**                             at least minElementsForReplicatedTensor-
**                             Sharding elements, default 8192); results
**                             are unchanged. Not for activations.
**   useIOTilesToLoad/Store    off-chip transfers go through the I/O tiles
**                             and overlap compute; they need numIOTiles.
** None leaves the backend's default: everything on chip.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "popc/options.h"
#include "core/layer/alloc.h"
#include "core/layer/options.h"
#include "strategy/strategy_priv.h"

#define DEFAULT_MIN_OFF_CHIP 2
#define DEFAULT_MIN_SHARDING 8192

typedef struct loc_class {
    const char *name;          /* "Activation" */
    popc_slot_kind kind;
} loc_class;

static const loc_class classes[] = {{"Activation", POPC_SLOT_ACT},
                                    {"Weight", POPC_SLOT_WEIGHT},
                                    {"Optimizer", POPC_SLOT_STATE},
                                    {"Accumulator", POPC_SLOT_GRAD}};

typedef struct loc_settings {
    int on_chip, sharding, io_load, io_store; /* -1: None */
    int64_t min_off, min_sharding;
} loc_settings;

static int nullable_bool(const popc_options *o, const char *cls,
                         const char *what)
{
    char name[128];

    snprintf(name, sizeof name, "TensorLocations.set%sLocation.%s", cls,
             what);
    return popc_options_is_none(o, name) ? -1
                                          : popc_options_get_bool(o, name);
}

static int64_t nullable_int(const popc_options *o, const char *cls,
                            const char *what, int64_t def)
{
    char name[128];

    snprintf(name, sizeof name, "TensorLocations.set%sLocation.%s", cls,
             what);
    return popc_options_is_none(o, name) ? def : popc_options_get_int(o, name);
}

static loc_settings read_class(const popc_options *o, const char *cls)
{
    loc_settings s;

    s.on_chip = nullable_bool(o, cls, "useOnChipStorage");
    s.sharding = nullable_bool(o, cls, "useReplicatedTensorSharding");
    s.io_load = nullable_bool(o, cls, "useIOTilesToLoad");
    s.io_store = nullable_bool(o, cls, "useIOTilesToStore");
    s.min_off = nullable_int(o, cls, "minElementsForOffChip",
                             DEFAULT_MIN_OFF_CHIP);
    s.min_sharding = nullable_int(o, cls,
                                  "minElementsForReplicatedTensorSharding",
                                  DEFAULT_MIN_SHARDING);
    return s;
}

/* Activations: on or off chip is phased execution's liveness; the
** settings can keep them (or the small ones) on chip. */
static popc_status activations(popci_plan *p, const loc_settings *s,
                               unsigned char *loc)
{
    int phased_off = popci_strategy_phased(&p->strategy) &&
                     p->strategy.liveness != POPC_LIVENESS_ALWAYS_LIVE;

    if (s->sharding == 1)
        return popc_set_error(POPC_EINVAL, "TensorLocations."
                              "setActivationLocation: replicated tensor "
                              "sharding applies to weights, optimizer state "
                              "and accumulators, not activations");
    if (s->on_chip == 0 && !phased_off)
        return popc_set_error(POPC_EINVAL, "TensorLocations."
                              "setActivationLocation(useOnChipStorage="
                              "False): activations leave the chip only in "
                              "phased execution with a tensorsLiveness other "
                              "than AlwaysLive; set setExecutionStrategy "
                              "accordingly");
    for (int sl = 0; p->offchip_from && sl < p->pub.n_slots; sl++) {
        if (p->slots[sl].kind != POPC_SLOT_ACT || p->offchip_from[sl] < 0)
            continue;
        if (s->on_chip == 1 ||
            popc_view_numel(&p->slots[sl].info) < s->min_off) {
            p->offchip_from[sl] = p->offchip_to[sl] = -1;
            continue;
        }
        loc[sl] |= POPC_LOC_OFF_CHIP | (s->io_load == 1 ? POPC_LOC_IO_LOAD
                                                         : 0) |
                   (s->io_store == 1 ? POPC_LOC_IO_STORE : 0);
    }
    return POPC_OK;
}

static void persistent(popci_plan *p, popc_slot_kind kind,
                       const loc_settings *s, int64_t replicas,
                       unsigned char *loc)
{
    for (int sl = 0; sl < p->pub.n_slots; sl++) {
        int64_t n = popc_view_numel(&p->slots[sl].info);

        if (p->slots[sl].kind != kind)
            continue;
        if (s->on_chip == 0 && n >= s->min_off)
            loc[sl] |= POPC_LOC_OFF_CHIP |
                       (s->io_load == 1 ? POPC_LOC_IO_LOAD : 0) |
                       (s->io_store == 1 ? POPC_LOC_IO_STORE : 0);
        if (s->sharding == 1 && replicas > 1 && n >= s->min_sharding)
            loc[sl] |= POPC_LOC_SHARDED;
    }
}

popc_status popci_locations_apply(popci_plan *p, const popc_options *o,
                                  int64_t replicas)
{
    unsigned char *loc;
    int any = 0;
    popc_status st;

    if (!(loc = popci_calloc((size_t)p->pub.n_slots + 1, 1)))
        return popc_set_error(POPC_ENOMEM, "compile: out of memory (tensor "
                              "locations)");
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
        loc_settings s = read_class(o, classes[c].name);

        if ((s.io_load == 1 || s.io_store == 1) &&
            popci_opt_int(o, POPCI_O_TensorLocations_numIOTiles) == 0) {
            free(loc);
            return popc_set_error(POPC_EINVAL, "No IO tiles allocated. You "
                                  "must allocate at least 32 IO tiles using "
                                  "poptorch.Options().TensorLocations."
                                  "numIOTiles. (set%sLocation uses them)",
                                  classes[c].name);
        }
        if (classes[c].kind == POPC_SLOT_ACT) {
            if ((st = activations(p, &s, loc)) != POPC_OK) {
                free(loc);
                return st;
            }
        } else {
            persistent(p, classes[c].kind, &s, replicas, loc);
        }
    }
    if ((st = popci_host_io_mark(p, o, loc)) != POPC_OK ||
        (st = popci_offchip_refigure(p)) != POPC_OK) {
        free(loc);
        return st;
    }
    for (int sl = 0; sl < p->pub.n_slots; sl++)
        any |= loc[sl];
    if (!any) {
        free(loc);
        return POPC_OK;
    }
    free(p->slot_location);
    p->slot_location = loc;
    p->pub.slot_location = loc;
    return POPC_OK;
}
