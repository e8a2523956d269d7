/* executable.h - exported executables
** (PopTorch's compileAndExport, save, poptorch.load, loadExecutable and
** executable caching).
**
** An executable file ("POPCEXE", docs/executable-format.md) holds what is
** needed to recreate and run a compiled model: the options, the versions
** of the plugins it uses, the graph and its compiled (differentiated)
** form, the input shapes and dtypes it was compiled for (the combined
** batch), the training flag, the optimizer with its state, the weights,
** the run counter seeding random ops, and the backend's plan summary.
** Every section carries a CRC32 and the file a whole-file CRC32; a file is
** checked completely before any of it is used. Files are written to a
** temporary name, synced and renamed into place.
**
** The executable cache: with Options.enableExecutableCaching(dir) (or
** POPC_CACHE_DIR) a compile looks for <dir>/<key>.popcexe first, where key
** hashes the graph (without weight values), the input shapes and dtypes,
** the options that affect compilation, the optimizer's type and constant
** values and the plugin versions; a hit skips shape inference,
** verification and autodiff. Processes compiling the same key at once
** wait on <dir>/<key>.lock, so one compiles and the others hit.
**
** Graphs as bytes (popc_graph_serialize) are the core's, in popc/graph.h.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_EXECUTABLE_H
#define POPC_EXECUTABLE_H

#include <stddef.h>
#include "popc/status.h"
#include "popc/tensor.h"
#include "popc/graph.h"
#include "popc/options.h"
#include "popc/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* popc_model_compile then popc_model_save. Works for a compile-only model
** (backend offline / connectionType Never). POPC_OK, POPC_EINVAL (m or
** path NULL), or an error of the compile or of popc_model_save. Not
** thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_compile_and_export(
    popc_model *m, popc_tensor *const *inputs, int n_inputs,
    const char *path);

/* Write the compiled model to path. A training model's weights and
** optimizer state are first copied from the device. Missing parent
** directories are created; when path is a directory, <path>/model.popc is
** written (with a warning). The file is replaced atomically (popc/file.h).
** POPC_OK, POPC_EINVAL (m or path missing), POPC_ESTATE "Model has not
** been compiled or has been destroyed.", POPC_EIO naming the file,
** POPC_ENOMEM. Not thread-safe on one model; distinct models may save at
** once (for one path, the last rename wins). Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_save(popc_model *m,
    const char *path);

/* Recreate a model from a file (poptorch.load): its options with
** connectionType Never made Always and the offline backend made ipumodel,
** then every option the user set in edit_opts (may be NULL; borrowed)
** applied on top, e.g. backend = cpu; its graph, optimizer and state,
** weights and run counter; compiled for the stored input shapes. Errors:
** POPC_EIO (missing, truncated or corrupt file, naming the section),
** POPC_EUNSUPPORTED (another format or popc version: "popc version
** mismatch: File was created with version: X and this is version Y", or
** a plugin of another version, naming it and both versions),
** POPC_ENOTFOUND (a plugin it needs is not loaded, or no loaded backend
** can run it), POPC_EINVAL (out NULL, no path, or a cache entry, which
** holds no weights: use popc_model_load_executable), POPC_ENOMEM, the
** error of an edited option, or the error of the compile. *out is a new
** model owned by the caller, who frees it with popc_model_free. The file
** and edit_opts are only read: threads may load at once. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_load(const char *path,
    popc_options *edit_opts, popc_model **out);

/* Import an executable into a model built from the same graph
** (loadExecutable): the model is recompiled for the file's input shapes
** and takes its weights, optimizer state (both training models, same
** optimizer type) and run counter. POPC_EINVAL when the file's graph
** differs from the model's (the message names the first difference),
** plus the errors of popc_load; POPC_OK on success. A file without
** weights (a cache entry) brings only the compiled graph. Once the graphs
** match, m is destroyed (popc_model_destroy) before the import: after a
** later failure it is left uncompiled. Not thread-safe on one model.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_load_executable(
    popc_model *m, const char *path);

/* A readable description of a file (sections, versions, options, plugins,
** inputs, graph, optimizer, weights, backend plan) into a malloc'd string
** the caller owns and frees with free(). The file's sections and CRCs are
** checked as by popc_load, not its plugins. POPC_OK, POPC_EINVAL (out
** NULL, no path), POPC_EIO (missing, truncated or corrupt file),
** POPC_EUNSUPPORTED (another format or popc version), POPC_ENOMEM.
** Thread-safe. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_executable_describe(
    const char *path, char **out);

/* ---- queries of a model ------------------------------------------------ */

/* The model's graph (borrowed: valid while m lives; weights may lag the
** device until popc_model_copy_weights_to_host). NULL for NULL. Reading
** it is not thread-safe while another thread uses m. Since 0.1.0. */
POPC_API const popc_graph *popc_model_graph(const popc_model *m);
/* 1 for a training model, 0 for an inference model or NULL. Thread-safe:
** fixed when m is created. Since 0.1.0. */
POPC_API int popc_model_training(const popc_model *m);
/* Dtype and shape (the combined batch) input i was compiled for; data
** NULL. POPC_OK, POPC_EINVAL (m or out NULL, a bad index), POPC_ESTATE
** when not compiled. Not thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_input_info(
    const popc_model *m, int i, popc_view *out);

#ifdef __cplusplus
}
#endif
#endif /* POPC_EXECUTABLE_H */
