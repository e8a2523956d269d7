/* run.h - runs described by an INI file (docs/ini-format.md): options,
** data, optimizer, training settings and a layer-per-section model, and
** the training and inference loops `popc train` and `popc infer` use.
**
**   [options]            PopTorch options (popc_options_load_ini)
**   [data]               dataset files, batch size, shuffling, loader mode
**   [optimizer]          name = sgd | adam | ..., then its hyper-parameters
**   [train]              epochs, outputs, checkpoints
**   [infer]              weights to load, where predictions go
**   [model]              input shape, classes, loss, the list of layers
**   [layer NAME]         one section per layer: type = linear | conv2d | ...
**
** Loading validates every section and key: an unknown section or key, a
** missing required key or a bad value is POPC_ECONFIG with a message that
** names the file and line (or the --set override), the section and the
** key, and says what is accepted. Overrides are "section.key=value"
** strings ("data.batch_size=32", "options.deviceIterations=4",
** "layer.fc1.out_features=256") applied over the file.
**
** Relative input paths (datasets, weights to load) are relative to the
** directory of the INI file, or to the current directory when they come
** from an override; output paths (weights, model INI, checkpoints,
** predictions) are relative to the current directory.
**
** Files the run writes (weights, checkpoints, the model INI, predictions)
** are written under a temporary name and renamed into place, so a killed
** run leaves either the previous file or the new one.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_RUN_H
#define POPC_RUN_H

#include <signal.h>
#include <stdint.h>
#include "popc/status.h"
#include "popc/data.h"
#include "popc/graph.h"
#include "popc/model.h"
#include "popc/options.h"
#include "popc/optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_run popc_run; /* opaque */

typedef enum popc_split {
    POPC_SPLIT_TRAIN = 0,     /* [data] train, train_labels */
    POPC_SPLIT_TEST = 1       /* [data] test, test_labels */
} popc_split;

/* Read and validate a run file; overrides[0..n_overrides) are applied over
** it (copied). Returns POPC_OK, POPC_EINVAL (path NULL, n_overrides < 0,
** overrides NULL), POPC_ECONFIG (every configuration problem, including
** bad option values and unknown optimizer attributes), POPC_EIO (the file
** cannot be read), POPC_ENOMEM, or popc_options_new's status for a bad
** environment variable. The caller owns *out (NULL on failure) and frees
** it with popc_run_free(). Thread-safe; reads the environment (as
** popc_options_new) and looks optimizer plugins up in the global registry
** (loaded on first use). Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_run_load(const char *path,
    const char *const *overrides, int n_overrides, popc_run **out);

/* Free r and everything it owns (strings handed out by the getters and in
** results become invalid). NULL-safe. Not thread-safe on one run.
** Since 0.1.0. */
POPC_API void popc_run_free(popc_run *r);

/* The INI file path as given to popc_run_load. Borrowed: valid while r
** lives. Thread-safe. Since 0.1.0. */
POPC_API const char *popc_run_path(const popc_run *r);

/* The options of [options] and options.* overrides. Borrowed: valid while
** r lives; frozen once a model uses them. Thread-safe to call; changing
** the options is not while r is used on other threads. Since 0.1.0. */
POPC_API popc_options *popc_run_options(popc_run *r);

/* The optimizer of [optimizer]; NULL when there is no such section
** (training then uses PopTorch's default, SGD with lr 0.01). Borrowed:
** valid while r lives. Thread-safe. Since 0.1.0. */
POPC_API const popc_optimizer *popc_run_optimizer(const popc_run *r);

/* A value after overrides, as text; NULL when absent. For tools that show
** a setting; paths are not resolved. Borrowed: valid while r lives.
** Thread-safe. Since 0.1.0. */
POPC_API const char *popc_run_value(const popc_run *r, const char *section,
                                    const char *key);

/* The model as a new graph, for micro-batches of batch_size samples:
** input "x" float32 [batch_size, input...]. Inference: one output, the
** last layer's [batch_size, classes] (logits); a model file is read in
** eval mode (PyTorch's model.eval(), see read below). Training: a second
** input "labels" int32 [batch_size] and the loss as the only output. Weights
** are initialised from [model] seed. Returns POPC_OK, POPC_EINVAL
** (batch_size < 1), POPC_ECONFIG when the layers do not fit together
** (message names the layer section and the shapes) or a model file does
** not fit the run, a model file reader's error (POPC_EIO,
** POPC_EUNSUPPORTED), POPC_ENOMEM. The caller owns *out (NULL on failure)
** and frees it with popc_graph_free(). Thread-safe while r is not
** changed; loads the global registry on first use. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_run_build_graph(const popc_run *r,
    int training, int64_t batch_size, popc_graph **out);

/* The dataset of a split, checked against [model] (classes, input shape)
** and normalised as [data] says. With mean = auto, the train split's
** statistics are computed (the test split loads the train split for
** them) and kept in r. Returns POPC_OK, POPC_ENOTFOUND (the run names no
** file for the split), POPC_ECONFIG (classes, input shape or
** normalisation do not fit the data), the dataset loaders' errors
** (POPC_EIO naming the file, POPC_EINVAL, POPC_EUNSUPPORTED),
** POPC_ENOMEM. The caller owns *out (NULL on failure) and frees it with
** popc_dataset_free(). Not thread-safe on one run (it may change r).
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_run_load_dataset(popc_run *r,
    popc_split split, popc_dataset **out);

/* A loader over ds with the [data] settings (the test split is never
** shuffled or shared between processes, keeps its last batch and pads it
** to full size). Returns the statuses of popc_dataloader_new: POPC_OK,
** POPC_EINVAL, POPC_ENOMEM, POPC_EINTERNAL. The caller owns *out (NULL on
** failure) and frees it with popc_dataloader_free(); ds is borrowed and
** must outlive it. Thread-safe while r is not changed. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_run_new_loader(const popc_run *r,
    popc_split split, popc_dataset *ds, popc_dataloader **out);

/* [data] batch_size. Thread-safe. Since 0.1.0. */
POPC_API int64_t popc_run_batch_size(const popc_run *r);

/* ---- model files ------------------------------------------------------- */

/* A model given as a file instead of layer sections: [model] onnx = FILE
** (with input, classes, loss, and optionally output = the value the loss
** reads and labels = the name of the labels input), and [train]
** export_onnx = FILE. libpopc does not read ONNX itself: the ONNX layer
** registers the format (popc_onnx_register_run_format in popc/onnx.h;
** the popc command does it at start).
**   read:  the graph of the file at path without graph outputs, its one
**          data input bound to batch_size on dimension 0, initializers
**          trainable, the annotations applied by node-name prefix;
**          *output the value the loss reads: output_name, or the file's
**          only output when output_name is NULL. training is 1 for the
**          graph that trains and 0 for evaluation, inference and export,
**          which get the graph in eval mode (PyTorch's model.eval():
**          BatchNormalization on its running statistics, Dropout passing
**          its input through; since 0.3.0).
**   write: model m's graph with its current weights to path. */
/* PopTorch's annotations for the nodes of a model file whose name starts
** with prefix ("" matches every node): a [nodes PREFIX] section. Later
** entries win. */
typedef struct popc_run_annotation {
    const char *prefix;
    popc_annotations annot;
} popc_run_annotation;

typedef struct popc_run_model_format {
    const char *key; /* the [model] key: "onnx" */
    popc_status (*read)(const char *path, int64_t batch_size, int training,
                        const char *output_name,
                        const popc_run_annotation *annotations,
                        int n_annotations, popc_graph **out, int *output);
    popc_status (*write)(popc_model *m, const char *path);
} popc_run_model_format;

/* Register f (kept, not copied: static storage that stays valid). A
** second registration of the same key replaces the first. Returns
** POPC_OK, POPC_EINVAL (f NULL, an empty key, read or write NULL, more
** than 8 formats). Thread-safe: the table is process-wide, under a lock.
** Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_run_register_model_format(
    const popc_run_model_format *f);

/* ---- weights and checkpoints -------------------------------------------- */

/* A weights directory holds one NumPy file per model tensor
** ("fc1.weight.npy"; characters other than letters, digits, '.', '_' and
** '-' are written %XX). Save writes every weight and buffer of m into a
** new directory and swaps it into place. Load sets every tensor of m from
** the directory; a missing file or a shape mismatch is POPC_EIO naming
** the file (a directory written for another model). */

/* Save every weight and buffer of m (copied from the device first) into
** dir, built as "<dir>.tmp-<pid>.<n>" (n unique per call) and swapped
** into place; leftovers of dead processes next to dir are removed.
** Returns POPC_OK, POPC_EINVAL (m or dir NULL), POPC_EIO (dir is a file;
** create, write or rename fails), POPC_ENOMEM, or the error of copying
** from the device. Not thread-safe on one model; threads saving other
** models to one dir may run at once: each swaps in a complete set and
** the last swap wins. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_weights_save(popc_model *m,
    const char *dir);

/* Set every tensor of m from dir. Every file is read and checked before
** any tensor is set, so a directory that does not fit leaves m unchanged.
** Returns POPC_OK, POPC_EINVAL (m or dir NULL), POPC_EIO (dir is not a
** directory; a missing or unreadable file, another dtype or shape, naming
** the file), POPC_EUNSUPPORTED (an .npy layout popc does not read),
** POPC_ENOMEM. Not thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_weights_load(popc_model *m,
    const char *dir);
/* A checkpoint directory written by popc_run_train (weights/, optimizer/,
** state.ini): sets every weight and optimizer state tensor of the
** training model m from it; *step (may be NULL) gets the number of steps
** done when it was written. Every file is read and checked before any
** tensor is set, so a checkpoint that does not fit leaves m unchanged.
** The run fingerprint in state.ini is not checked here (popc_run_train
** does). Returns POPC_OK, POPC_EINVAL (m or dir NULL), POPC_ENOTFOUND (dir
** does not exist), POPC_EIO (state.ini unreadable or of another version,
** a missing or mismatching tensor file, naming it), POPC_ECONFIG (a
** damaged value in state.ini), POPC_ENOMEM. Not thread-safe on one model.
** Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_checkpoint_load(popc_model *m,
    const char *dir, int64_t *step);

/* ---- training and inference --------------------------------------------- */

typedef enum popc_train_event {
    POPC_TRAIN_STEP = 0,        /* a combined batch was trained */
    POPC_TRAIN_EPOCH_END = 1,   /* an epoch ended (and was evaluated) */
    POPC_TRAIN_CHECKPOINT = 2   /* a checkpoint was written */
} popc_train_event;

typedef struct popc_train_progress {
    popc_train_event event;
    int64_t epoch;              /* 0-based */
    int64_t epochs;
    int64_t step;               /* steps done in this epoch */
    int64_t steps_per_epoch;
    int64_t global_step;        /* steps done in the run */
    int64_t total_steps;
    double loss;                /* loss of the last step */
    double epoch_loss;          /* mean loss of the epoch so far */
    double samples_per_second;  /* since this process started training,
                                   over every rank of a distributed run */
    double elapsed;             /* seconds since this process started */
    double eta;                 /* seconds to the end of the run */
    double test_accuracy;       /* EPOCH_END with a test split, else -1 */
    const char *path;           /* CHECKPOINT: its directory */
} popc_train_progress;

typedef void (*popc_train_fn)(const popc_train_progress *p, void *user);

typedef struct popc_train_hooks {
    popc_train_fn progress;     /* may be NULL */
    void *user;
    /* Polled after every step; when it becomes non-zero the loop stops
    ** after the step, writes a checkpoint if checkpoints are on, and
    ** returns POPC_EINTERRUPTED. May be NULL. */
    const volatile sig_atomic_t *stop;
    int64_t checkpoint_every;   /* > 0: overrides [train] checkpoint_every */
    int resume;                 /* continue from the checkpoint */
} popc_train_hooks;

typedef struct popc_train_result {
    int64_t epochs;             /* epochs completed */
    int64_t steps;              /* steps completed (including resumed) */
    int64_t resumed_step;       /* step the run resumed from, 0 if none */
    double final_loss;          /* loss of the last step */
    double test_accuracy;       /* after the last epoch, -1 if none */
    double seconds;             /* training time in this process */
    double samples_per_second;  /* every rank of a distributed run */
    const char *weights;        /* directory written (borrowed from run) */
    const char *model_ini;      /* model INI written (borrowed) */
    const char *checkpoint;     /* checkpoint directory, NULL when off */
    /* since 0.3.0: ranks of a distributed run (1 otherwise) and the
    ** checksum of weights and optimizer state every rank agreed on */
    int ranks;
    uint64_t checksum;
    double collective_seconds;  /* this rank's time in collectives */
} popc_train_result;

/* Train as [train] says: every epoch over the train split, evaluated on
** the test split if there is one, then the weights and the model INI
** (an [infer]-ready copy of the run pointing at the weights) are written.
** Distributed (Distributed.numProcesses > 1, popc/distributed.h): every
** rank trains on its share of the data; rank 0 alone evaluates (on the
** whole test split), reports progress and writes weights, model INI,
** checkpoints and exports; at the end the ranks check that they hold
** identical weights (res->checksum). Every rank resumes from rank 0's
** checkpoint, which only a run with the same number of processes accepts.
** With checkpoints on, a checkpoint (weights, optimizer state, loader
** position and shuffle state, step) is written every checkpoint_every
** steps; resuming from it gives, on the cpu backend, bit-identical final
** weights to an uninterrupted run. Returns POPC_OK, POPC_EINTERRUPTED
** (hooks->stop), POPC_ECONFIG (no train split, samples that do not fill
** combined batches, a checkpoint of other settings, no ONNX format
** registered), POPC_ESTATE (another trainer holds the checkpoint's
** lock), POPC_EDISTRIBUTED, or the first error of data, model or files.
** The strings in *res are borrowed from r: valid while r lives. Not
** thread-safe on one run (it may change r); hooks->progress runs on the
** calling thread. A distributed run joins the process group (MPI,
** process-wide) when the model first compiles. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_run_train(popc_run *r,
    const popc_train_hooks *hooks, popc_train_result *res);

typedef struct popc_infer_result {
    int64_t samples;
    int64_t correct;            /* -1 without labels */
    double accuracy;            /* -1 without labels */
    double seconds;
    double samples_per_second;
    const char *predictions;    /* file written or NULL (borrowed) */
} popc_infer_result;

/* Classify the [infer] split (default test) with the [infer] weights,
** writing predicted classes (int32 .npy) when [infer] predictions is
** set. stop as in popc_train_hooks (may be NULL). On a rank other than 0
** of a distributed run it does nothing and returns POPC_OK. Returns
** POPC_OK, POPC_EINTERRUPTED (stop), POPC_ENOTFOUND (no file for the
** split), POPC_ECONFIG, POPC_EIO (data, weights or predictions files),
** POPC_ENOMEM, or the model's error. res->predictions is borrowed from r:
** valid while r lives. Not thread-safe on one run (it may change r).
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_run_infer(popc_run *r,
    const volatile sig_atomic_t *stop, popc_infer_result *res);

#ifdef __cplusplus
}
#endif
#endif /* POPC_RUN_H */
