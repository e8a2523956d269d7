/* synthetic.c - enableSyntheticData: host I/O is off and every input is
** data generated on the device, for benchmarking under perfect I/O.
**
** Each replica gets one buffer per graph input, one micro-batch in size,
** generated once when the model is compiled, from randomSeed, the replica
** and the input index (PopART also streams a fixed synthetic buffer).
** syntheticDataMode picks the values of floating-point inputs:
** RandomNormal (PopTorch's: N(0, 1)), RandomUniform ([0, 1)) or Zeros.
** Integer and bool inputs are zeros, a valid class index and gather index
** for any model. Outputs are not copied to the host: they stay zero.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/tensor.h"
#include "core/alloc_priv.h"
#include "core/runtime/exec_priv.h"
#include "core/layer/rng.h"

static float draw(popci_rng *r, int mode)
{
    switch (mode) {
    case POPCI_SYNTH_NORMAL: return (float)popci_rng_normal(r);
    case POPCI_SYNTH_UNIFORM: return popci_rng_uniform(r);
    default: return 0.0f;
    }
}

static void fill(void *data, const popc_view *v, popci_rng *r, int mode)
{
    int64_t n = popc_view_numel(v);

    if (v->dtype == POPC_DTYPE_F32) {
        for (int64_t i = 0; i < n; i++)
            ((float *)data)[i] = draw(r, mode);
    } else if (v->dtype == POPC_DTYPE_F16) {
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)data)[i] = popc_f32_to_f16(draw(r, mode));
    } else if (v->dtype == POPC_DTYPE_F64) {
        for (int64_t i = 0; i < n; i++)
            ((double *)data)[i] = draw(r, mode);
    }
    /* other dtypes stay zero (calloc) */
}

popc_status popci_synthetic_init(popci_exec *e)
{
    const popci_plan *p = e->plan;
    int R = (int)e->cfg.replicas, n = p->n_inputs;

    if (!e->cfg.synthetic || n == 0)
        return POPC_OK;
    if (!(e->synth = popci_calloc((size_t)R * (size_t)n, sizeof *e->synth)))
        return popc_set_error(POPC_ENOMEM, "enableSyntheticData: out of "
                              "memory");
    for (int r = 0; r < R; r++)
        for (int i = 0; i < n; i++) {
            const popc_view *v = &p->slots[p->input_slots[i]].info;
            size_t bytes = popci_plan_slot_bytes(p, p->input_slots[i]);
            void **buf = &e->synth[r * n + i];
            popci_rng rng;

            if (!(*buf = popci_calloc(bytes + 1, 1)))
                return popc_set_error(POPC_ENOMEM, "enableSyntheticData: "
                                      "out of memory");
            popci_rng_init(&rng, e->cfg.random_seed,
                           popci_rng_combine(
                               (uint64_t)(e->cfg.replica_base + r),
                               (uint64_t)i));
            fill(*buf, v, &rng, e->cfg.synthetic_mode);
        }
    return POPC_OK;
}

void popci_synthetic_free(popci_exec *e)
{
    int count = (int)e->cfg.replicas * e->plan->n_inputs;

    for (int i = 0; e->synth && i < count; i++)
        free(e->synth[i]);
    free(e->synth);
    e->synth = NULL;
}
