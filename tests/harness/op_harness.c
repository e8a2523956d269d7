/* op_harness.c - see op_harness.h. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/op_harness.h"

popc_tensor *harness_f32(const int64_t *dims, int rank, const float *data)
{
    popc_tensor *t = NULL;

    if (popc_tensor_from_data(POPC_DTYPE_F32, dims, rank, data, &t) != POPC_OK)
        return NULL;
    return t;
}

popc_tensor *harness_ref(const char *name)
{
    const char *dir = getenv("POPC_TEST_REF");
    char path[4096];
    popc_tensor *t = NULL;

    snprintf(path, sizeof path, "%s/%s.npy", dir ? dir : "tests/ref", name);
    if (popc_npy_load(path, &t) != POPC_OK)
        fprintf(stderr, "harness_ref: %s\n", popc_last_error());
    return t;
}

double harness_max_diff(const popc_tensor *a, const popc_tensor *b)
{
    double d = popc_tensor_max_abs_diff(a, b);
    return d < 0 ? 1e30 : d;
}

static popc_status run_split(const popc_op_def *def, popc_kernel_ctx *kc,
                             int n_parts)
{
    popc_status st;

    kc->n_parts = n_parts;
    for (int p = 0; p < n_parts; p++) {
        kc->part = p;
        if ((st = def->forward(kc)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status harness_run_op(const char *domain, const char *op,
                           popc_tensor *const *in, int n_in,
                           const popc_attr *attrs, int n_attrs,
                           popc_tensor **out, int n_out, int training)
{
    popc_registry *reg;
    const popc_op_def *def;
    popc_view iv[16], ov[16], ov2[16];
    popc_tensor *second[16] = {0};
    popc_attrs av = POPC_ATTRS(n_attrs, attrs);
    popc_infer_ctx ic;
    popc_kernel_ctx kc;
    void *state = NULL;
    popc_status st;

    if (n_in > 16 || n_out > 16)
        return popc_set_error(POPC_EINVAL, "harness: too many tensors");
    for (int i = 0; i < n_out; i++)
        out[i] = NULL;
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    if (!(def = popc_registry_find_op(reg, domain, op, 0)))
        return popc_set_error(POPC_ENOTFOUND, "harness: op %s::%s not found",
                              domain ? domain : "ai.onnx", op);
    for (int i = 0; i < n_in; i++) {
        if (in[i])
            iv[i] = popc_tensor_view(in[i]);
        else
            memset(&iv[i], 0, sizeof iv[i]);
    }
    memset(ov, 0, sizeof ov);
    ic = (popc_infer_ctx){.size = sizeof ic, .op = def,
                          .host = popc_registry_host(), .node_name = op,
                          .n_inputs = n_in, .inputs = iv, .n_outputs = n_out,
                          .outputs = ov, .attrs = &av, .training = training};
    if ((st = def->infer(&ic)) != POPC_OK)
        return st;
    if (def->prepare && (st = def->prepare(&ic, &state)) != POPC_OK)
        return st;
    for (int i = 0; i < n_out; i++) {
        if ((st = popc_tensor_new(ov[i].dtype, ov[i].dims, ov[i].rank,
                                  &out[i])) != POPC_OK)
            goto fail;
        if ((st = popc_tensor_new(ov[i].dtype, ov[i].dims, ov[i].rank,
                                  &second[i])) != POPC_OK)
            goto fail;
        ov[i] = popc_tensor_view(out[i]);
        ov2[i] = popc_tensor_view(second[i]);
    }
    kc = (popc_kernel_ctx){.size = sizeof kc, .op = def,
                           .host = popc_registry_host(), .node_name = op,
                           .n_inputs = n_in, .inputs = iv, .n_outputs = n_out,
                           .outputs = ov, .attrs = &av, .training = training,
                           .seed = 1234, .state = state};
    if ((st = run_split(def, &kc, 1)) != POPC_OK)
        goto fail;
    if (def->flags & POPC_OP_SPLIT) {
        kc.outputs = ov2;
        if ((st = run_split(def, &kc, 3)) != POPC_OK)
            goto fail;
        for (int i = 0; i < n_out; i++)
            if (!popc_tensor_equal(out[i], second[i])) {
                st = popc_set_error(POPC_EINTERNAL, "harness: %s output %d "
                                    "differs when split in 3 parts", op, i);
                goto fail;
            }
    }
    if (def->release)
        def->release(state);
    for (int i = 0; i < n_out; i++)
        popc_tensor_free(second[i]);
    return POPC_OK;
fail:
    if (def->release)
        def->release(state);
    for (int i = 0; i < n_out; i++) {
        popc_tensor_free(out[i]);
        popc_tensor_free(second[i]);
        out[i] = NULL;
    }
    return st;
}
