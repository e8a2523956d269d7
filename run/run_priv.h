/* run_priv.h - the parsed run file shared by run_ini.c (reading and
** validation), run_model.c (the graph), run_data.c (datasets and
** loaders), run_weights.c (weights and checkpoints) and run_train.c (the
** loops).
**
** Every value is read through popci_run_src(), which returns the config
** that decides a (section, key): the last --set override naming it, else
** the file. Messages therefore name the file and line, or the override.
*/
#ifndef POPC_RUN_PRIV_H
#define POPC_RUN_PRIV_H

#include "fileio/atomic_file.h"

#include <stdint.h>
#include "popc/run.h"
#include "run/run_config_priv.h"

typedef enum run_layer_kind {
    RUN_LINEAR,
    RUN_CONV2D,
    RUN_MAXPOOL2D,
    RUN_AVGPOOL2D,
    RUN_GLOBAL_AVGPOOL,
    RUN_BATCHNORM2D,
    RUN_LAYERNORM,
    RUN_FLATTEN,
    RUN_DROPOUT,
    RUN_SOFTMAX,
    RUN_LOG_SOFTMAX,
    RUN_ACTIVATION,
    RUN_CUSTOM,               /* run/run_custom.c */
    RUN_FOREIGN,
    RUN_LOOP                  /* poptorch.for_loop over body layers */
} run_layer_kind;

typedef struct popci_run_layer {
    char *name;               /* the section's NAME, or the bare type */
    int has_section;
    run_layer_kind kind;
    const char *type;         /* INI spelling ("conv2d") */
    const char *op;           /* RUN_ACTIVATION: ONNX op ("Relu") */
    int64_t out;              /* out_features / out_channels */
    int64_t kernel, stride, padding, dilation, groups, axis;
    int bias;
    double eps, momentum, p, alpha;
    /* placement keys (helper "strategies"): ipu, stage, phase (-1: not
    ** given), recompute (1: the layer's outputs are checkpoints), block
    ** (borrowed from the run's config; NULL: not given) */
    int ipu, stage, phase, recompute;
    const char *block;
    /* linear: serializedMatMul (serialize: 0 none, 1 input_channels, 2
    ** reducing_dim, 3 output_channels, popc_matmul_serialization) */
    int serialize, keep_precision;
    int64_t serialize_factor;
    /* loop: count iterations of the body layers, body_layers[body_first
    ** .. body_first + body_n) of the run */
    int64_t count;
    int body_first, body_n;
} popci_run_layer;

typedef struct popci_run_set {
    char *section;
    char *key;
    char *value;
    popci_config *cfg;        /* "[section]\nkey = value\n" */
} popci_run_set;

#define RUN_MAX_NORM 16

struct popc_run {
    char *path;
    char *dir;                /* directory of the file, for input paths */
    char *name;               /* basename without .ini */
    popci_config *file;
    popci_run_set *sets;
    int n_sets;
    popc_options *opts;
    popc_options *infer_opts;  /* opts with gradientAccumulation 1 */
    popc_optimizer *optimizer;

    /* [model] */
    int input_rank;
    int64_t input[POPC_MAX_RANK];
    int64_t classes;
    int loss;                 /* 0 cross_entropy, 1 nll */
    /* set_overlap_for_input/output of the model's input and output
    ** (popc_overlap_mode: 0 none) */
    int input_overlap, output_overlap;
    int remove_blocks;        /* poptorch.removeBlocks: one IPU */
    uint64_t model_seed;
    popci_run_layer *layers;
    int n_layers;
    popci_run_layer *body_layers; /* of every loop layer, in order */
    int n_body_layers;
    char *model_file;         /* [model] onnx (instead of layers) */
    char *model_output;       /* [model] output, NULL: the file's only one */
    char *labels_name;        /* [model] labels, default "labels" */
    int half;                 /* [model] half: model.half() */
    char *half_prefixes;      /* ... of these weights only; NULL: all */
    popc_run_annotation *annots; /* [nodes PREFIX] (prefixes borrowed) */
    int n_annots;

    /* [data] */
    char *train, *train_labels, *test, *test_labels;
    int format;               /* 0 auto, 1 idx, 2 npy, 3 csv */
    char *label_column;
    int64_t batch_size;
    int shuffle;
    uint64_t seed;
    int drop_last;
    int global_batches;       /* distributed_batches = global */
    popc_loader_mode mode;
    int64_t workers, buffer_size, rebatched_worker_size;
    int load_indefinitely, early_preload;
    int64_t limit, test_limit;
    int norm;                 /* 0 none, 1 values, 2 auto (train stats) */
    int n_norm;
    float mean[RUN_MAX_NORM], std[RUN_MAX_NORM];

    /* [train] */
    int64_t epochs, checkpoint_every, log_every;
    int evaluate;
    char *weights_out, *model_out, *checkpoint;
    char *export_onnx;        /* [train] export_onnx, NULL when off */

    /* [infer] */
    char *infer_weights, *predictions;
    int infer_split;          /* popc_split */
};

/* ---- run_format.c -------------------------------------------------------- */

/* The registered format of key, or NULL. */
const popc_run_model_format *popci_run_format(const char *key);
/* The ONNX format, or POPC_ECONFIG naming (section, key) and how to
** register it. */
popc_status popci_run_need_format(const popc_run *r, const char *section,
                                  const char *key,
                                  const popc_run_model_format **out);

/* ---- run_ini.c ---------------------------------------------------------- */

/* The config deciding (section, key): the last override naming it, else
** the file (which may not have it either). */
const popci_config *popci_run_src(const popc_run *r, const char *section,
                                  const char *key);
/* True when the file or an override has the key. */
int popci_run_has(const popc_run *r, const char *section, const char *key);
/* Keys of the section, in the file and in overrides, must be in allowed
** (NULL-terminated). */
popc_status popci_run_check_keys(const popc_run *r, const char *section,
                                 const char *const *allowed);
/* The path of (section, key) into *out (malloc'd), def when absent (NULL
** allowed: *out stays NULL). input: a relative path written in the file
** is made relative to the file's directory. */
popc_status popci_run_path(const popc_run *r, const char *section,
                           const char *key, int input, const char *def,
                           char **out);
/* "<file>:<line>: [section] key" for messages, into buf. */
const char *popci_run_where(const popc_run *r, const char *section,
                            const char *key, char *buf, size_t size);

/* ---- run_model.c -------------------------------------------------------- */

/* Parse and check [model] and the [layer ...] sections it lists. */
popc_status popci_run_parse_model(popc_run *r);

/* ---- run_data.c --------------------------------------------------------- */

popc_status popci_run_parse_data(popc_run *r);

/* Give ds's features the dtype of the model's data input: integer
** features (token ids) stay integers for an integer input (int32 <->
** int64 converted) and become float32 for a float32 one; float features
** for an integer input are POPC_ECONFIG naming the [data] file. */
popc_status popci_run_match_data(const popc_run *r, popc_split split,
                                 popc_dataset *ds, popc_dtype input);

/* ---- run_weights.c ------------------------------------------------------ */

/* What a checkpoint holds besides tensors. */
typedef struct popci_checkpoint {
    int64_t step;             /* steps done */
    int64_t epoch_steps;      /* steps done in the current epoch */
    double epoch_loss_sum;    /* sum of losses of those steps */
    popc_data_position pos;   /* the train loader's position */
    uint64_t fingerprint;     /* of the run settings it belongs to */
} popci_checkpoint;

popc_status popci_checkpoint_save(popc_model *m, const popci_checkpoint *c,
                                  const char *dir);
/* POPC_ENOTFOUND when dir does not exist. */
popc_status popci_checkpoint_load(popc_model *m, popci_checkpoint *c,
                                  const char *dir);


/* ---- run_lock.c ---------------------------------------------------------- */

/* Claim path for this process: an exclusive flock on "<path>.lock"
** (created if needed and left in place: removing it would let two
** processes lock different files of the same name). *fd holds the lock
** until popci_unlock_path. POPC_ESTATE naming path and `what` when
** another process holds it; a file system without locks only warns. */
popc_status popci_lock_path(const char *path, const char *what, int *fd);
void popci_unlock_path(int fd); /* -1 is a no-op */

/* ---- run_ini.c: outputs ------------------------------------------------- */

/* The model INI: [options], [model], the layers, the test data settings
** (normalisation as numbers) and [infer] weights = weights_dir. */
popc_status popci_run_write_model_ini(const popc_run *r, const char *path,
                                      const char *weights_dir,
                                      const float *mean, const float *std,
                                      int n_norm);

/* A hash of the settings that decide what training computes (model,
** data order, optimizer, options): a checkpoint of another run is
** refused. */
uint64_t popci_run_fingerprint(const popc_run *r);

#endif /* POPC_RUN_PRIV_H */
