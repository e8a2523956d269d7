/* run_format.c - ONNX models in INI runs: the "onnx" model format that
** popc_onnx_register_run_format registers with libpopc (popc/run.h).
**
** A run feeds one data input and adds its own loss: the model's one
** graph input (an initializer listed among the inputs does not count;
** float32, or int32/int64 for token ids) gets the run's batch size on
** dimension 0 (a symbolic or a matching
** dimension; other dimensions must be fixed in the file), and the value
** the loss reads is the output the run names, or the model's only output.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/onnx.h"
#include "popc/run.h"
#include "onnx/onnx_priv.h"

/* Names of the graph's outputs, "a, b" (for messages). */
static void list_outputs(const Onnx__GraphProto *gp, char *buf, size_t size)
{
    size_t off = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < gp->n_output && off + 1 < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s'%s'",
                                i ? ", " : "",
                                gp->output[i]->name ? gp->output[i]->name
                                                    : "");
}

/* The data input's name and dims (dimension 0 set to batch_size). */
static popc_status data_input(const char *path, const Onnx__GraphProto *gp,
                              int64_t batch_size, const char **name,
                              popc_view *shape)
{
    const Onnx__ValueInfoProto *in = NULL;
    const Onnx__TensorShapeProto *sp;
    int n = 0;

    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i]->name &&
            !popco_is_initializer(gp, gp->input[i]->name)) {
            in = gp->input[i];
            n++;
        }
    if (n != 1)
        return popc_set_error(POPC_EINVAL, "%s: the model has %d data "
                              "inputs; a run feeds exactly one", path, n);
    *name = in->name;
    if (!in->type || !in->type->tensor_type || !in->type->tensor_type->shape)
        return popc_set_error(POPC_EINVAL, "%s: input '%s' has no shape in "
                              "the file; export it with one", path,
                              in->name);
    sp = in->type->tensor_type->shape;
    if (sp->n_dim < 1 || sp->n_dim > POPC_MAX_RANK)
        return popc_set_error(POPC_EINVAL, "%s: input '%s' has rank %zu; the "
                              "run needs a batch dimension first", path,
                              in->name, sp->n_dim);
    memset(shape, 0, sizeof *shape);
    /* token ids stay integers ([data] keeps int32/int64 features); any
    ** other input is fed float32 */
    shape->dtype = popco_dtype_from_onnx(in->type->tensor_type->elem_type);
    if (shape->dtype != POPC_DTYPE_I32 && shape->dtype != POPC_DTYPE_I64)
        shape->dtype = POPC_DTYPE_F32;
    shape->rank = (int)sp->n_dim;
    for (size_t d = 0; d < sp->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
        int fixed = dim->value_case ==
                    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;

        if (d == 0 && fixed && dim->dim_value != batch_size)
            return popc_set_error(POPC_EINVAL,
                                  "%s: input '%s' was exported with batch "
                                  "size %lld but the run's is %lld; export "
                                  "with dynamic_axes={'%s': {0: 'batch'}} "
                                  "or set [data] batch_size = %lld",
                                  path, in->name, (long long)dim->dim_value,
                                  (long long)batch_size, in->name,
                                  (long long)dim->dim_value);
        if (d > 0 && (!fixed || dim->dim_value < 1))
            return popc_set_error(POPC_EINVAL, "%s: input '%s' has no fixed "
                                  "size on dimension %zu; a run fixes only "
                                  "the batch dimension", path, in->name, d);
        shape->dims[d] = d == 0 ? batch_size : dim->dim_value;
    }
    return POPC_OK;
}

/* The output the loss reads: output_name, or the only one. */
static popc_status pick_output(const char *path, const Onnx__GraphProto *gp,
                               const char *output_name, const char **out)
{
    char names[512];

    list_outputs(gp, names, sizeof names);
    if (!output_name) {
        if (gp->n_output != 1)
            return popc_set_error(POPC_EINVAL, "%s: the model has %zu "
                                  "outputs (%s); name the one the loss reads "
                                  "with [model] output", path, gp->n_output,
                                  names);
        *out = gp->output[0]->name;
        return POPC_OK;
    }
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name &&
            strcmp(gp->output[i]->name, output_name) == 0) {
            *out = gp->output[i]->name;
            return POPC_OK;
        }
    return popc_set_error(POPC_EINVAL, "%s: no output '%s'; the model's "
                          "outputs are %s", path, output_name, names);
}

static popc_status read_for_run(const char *path, int64_t batch_size,
                                int training, const char *output_name,
                                const popc_run_annotation *annotations,
                                int n_annotations, popc_graph **out,
                                int *output)
{
    popco_map map;
    Onnx__ModelProto *mp = NULL;
    popco_raw_ref *refs = NULL;
    popc_onnx_import_options o;
    const char *input = NULL, *picked = NULL;
    char *input_copy = NULL, *picked_copy = NULL;
    popc_onnx_annotation *annot = NULL;
    popc_view shape;
    popc_status st;

    *out = NULL;
    if ((st = popco_map_file(path, &map)) != POPC_OK)
        return st;
    if ((st = popco_unpack_model_lean(map.data ? map.data : "", map.size,
                                      path, &mp, &refs)) == POPC_OK &&
        (st = data_input(path, mp->graph, batch_size, &input, &shape)) ==
            POPC_OK &&
        (st = pick_output(path, mp->graph, output_name, &picked)) == POPC_OK &&
        (!(input_copy = strdup(input)) || !(picked_copy = strdup(picked))))
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
    if (mp) {
        popco_lean_forget(mp, refs);
        onnx__model_proto__free_unpacked(mp, NULL);
    }
    popco_unmap(&map);
    /* the same two members; the run's type keeps libpopc ONNX-free */
    if (st == POPC_OK && n_annotations > 0) {
        if (!(annot = calloc((size_t)n_annotations, sizeof *annot)))
            st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
        for (int i = 0; annot && i < n_annotations; i++) {
            annot[i].prefix = annotations[i].prefix;
            annot[i].annot = annotations[i].annot;
        }
    }
    if (st == POPC_OK) {
        const char *names[1] = {input_copy};

        popc_onnx_import_options_init(&o);
        o.trainable = 1;
        o.n_shapes = 1;
        o.shape_names = names;
        o.shapes = &shape;
        o.no_outputs = 1;
        o.eval_mode = !training;
        o.n_annotations = n_annotations;
        o.annotations = annot;
        if ((st = popc_onnx_import_file(path, &o, out)) == POPC_OK &&
            (*output = popc_graph_find_value(*out, picked_copy)) < 0) {
            st = popc_set_error(POPC_EINVAL, "%s: output '%s' is not a "
                                "value of the imported graph", path,
                                picked_copy);
            popc_graph_free(*out);
            *out = NULL;
        }
    }
    free(input_copy);
    free(picked_copy);
    free(annot);
    return st;
}

static popc_status write_for_run(popc_model *m, const char *path)
{
    return popc_onnx_export_model(m, path);
}

static const popc_run_model_format onnx_format = {
    .key = "onnx",
    .read = read_for_run,
    .write = write_for_run,
};

popc_status popc_onnx_register_run_format(void)
{
    return popc_run_register_model_format(&onnx_format);
}
