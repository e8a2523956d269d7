/* custom.h - third-party ops (poptorch.custom_op), CPU ops (poptorch.CPU)
** and foreign C functions bound through libffi.
**
** Custom ops come from op plugins (see popc/plugin.h and docs/plugins.md):
** a plugin registers (domain, name, version) and popc_custom_op adds a node
** of that op with PopTorch's attribute rules. CPU ops run a function of the
** application on the host in the middle of a compiled graph: the graph
** holds only the ID (op popc::HostOp, plugin ops/host), and the function is
** registered with the model that runs it (popc/callback.h, the core's
** part, which this header includes). Foreign ops (popc::ForeignCall,
** plugin ops/ffi) call a C function of any shared library, bound by name
** and a signature string when the model is compiled.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_CUSTOM_H
#define POPC_CUSTOM_H

#include <stdint.h>
#include "popc/status.h"
#include "popc/types.h"
#include "popc/graph.h"
#include "popc/model.h"
#include "popc/callback.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- custom ops --------------------------------------------------------- */

/* The value of a custom op attribute, as PopTorch takes it from Python: a
** float, an int, a string, or a list of them (LIST: items[0..n), each a
** FLOAT, an INT or a STRING, all of one type). The typed arrays FLOATS,
** INTS and STRINGS are the same lists spelled the C way (floats, ints or
** strings [0..n)). Only the members of `type` are read. */
typedef enum popc_custom_type {
    POPC_CUSTOM_FLOAT = 1,    /* f */
    POPC_CUSTOM_INT,          /* i */
    POPC_CUSTOM_STRING,       /* s */
    POPC_CUSTOM_LIST,         /* items, n */
    POPC_CUSTOM_FLOATS,       /* floats, n */
    POPC_CUSTOM_INTS,         /* ints, n */
    POPC_CUSTOM_STRINGS       /* strings, n */
} popc_custom_type;

typedef struct popc_custom_value {
    popc_custom_type type;
    double f;
    int64_t i;
    const char *s;
    int n;
    const struct popc_custom_value *items;
    const double *floats;
    const int64_t *ints;
    const char *const *strings;
} popc_custom_value;

typedef struct popc_custom_attr {
    const char *key;
    popc_custom_value value;
} popc_custom_attr;

static inline popc_custom_attr popc_custom_attr_float(const char *key,
                                                      double f)
{
    popc_custom_attr a = {key, {POPC_CUSTOM_FLOAT, f, 0, NULL, 0, NULL, NULL,
                                NULL, NULL}};
    return a;
}

static inline popc_custom_attr popc_custom_attr_int(const char *key,
                                                    int64_t i)
{
    popc_custom_attr a = {key, {POPC_CUSTOM_INT, 0.0, i, NULL, 0, NULL, NULL,
                                NULL, NULL}};
    return a;
}

static inline popc_custom_attr popc_custom_attr_string(const char *key,
                                                       const char *s)
{
    popc_custom_attr a = {key, {POPC_CUSTOM_STRING, 0.0, 0, s, 0, NULL, NULL,
                                NULL, NULL}};
    return a;
}

/* poptorch.custom_op: add a node of the op (domain, name) registered by a
** loaded plugin for domain_version (the best definition whose version is
** <= domain_version). Attributes are validated and copied with PopTorch's
** rules and messages:
**   NULL key             "All attribute keys must be strings."
**   bad type, nested or empty list
**                        "Attribute values must be floats, ints, strings or
**                        a list/tuple of float, ints of strings."
**   mixed list           "The types in a list/tuple attribute must all be
**                        the same."
**   non-ASCII key or string "<s> contains non-ASCII characters."
**   float outside float32 "-1.79769e+308 is too low for a Popart float
**                        attribute." ("... too high ..." above)
** Floats are rounded to float32 and ints kept as int64, as PopART stores
** them. The outputs' dtypes and shapes come from the op's infer();
** example_outputs (n_outputs views, data ignored; may be NULL) say how many
** outputs the node has and, when the inputs' shapes are known, are checked
** against what the op infers (an example with dtype UNDEFINED is not
** checked). Output value ids go to outputs[0..n_outputs). The node is
** named "<scope>/<name>_<n>".
** Returns POPC_OK; POPC_EINVAL (bad argument, attribute or example
** mismatch); POPC_ENOTFOUND when no loaded plugin registers the op for
** that version (the message names domain, op and version, the versions
** that are loaded, and POPC_PLUGIN_PATH as the fix); POPC_ESTATE (after
** popc_block_end); the op's infer() error; POPC_ENOMEM. The graph is
** unchanged on failure. Not thread-safe on one graph; loads the global
** registry on first use (thread-safe). Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_custom_op(popc_graph *g,
    const int *inputs, int n_inputs, const char *name, const char *domain,
    int domain_version, const popc_view *example_outputs, int n_outputs,
    const popc_custom_attr *attrs, int n_attrs, int *outputs);

/* ---- CPU ops ------------------------------------------------------------ */

/* poptorch.CPU: add a node (op popc::HostOp, plugin ops/host) that calls
** the callback registered under id with the model running the graph.
** output_infos[0..n_out) give the outputs' dtypes and shapes (data
** ignored). An output whose dim 0 equals input 0's dim 0 follows the
** micro-batch size the model is compiled with. The node is named after id
** (made unique). CPU ops are only supported in inference graphs:
** compiling a training model that contains one fails naming the node.
** Returns POPC_OK, POPC_EINVAL (g NULL; NULL, empty or non-printable id;
** bad inputs or output info; what the op's infer() refuses),
** POPC_ENOTFOUND (no op plays POPC_ROLE_HOST_CALL: ops/host not loaded),
** POPC_ESTATE (after popc_block_end), POPC_ENOMEM. The graph is
** unchanged on failure. Not thread-safe on one graph; loads the global
** registry on first use (thread-safe). Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_cpu_op(popc_graph *g,
    const char *id, const int *inputs, int n, const popc_view *output_infos,
    int n_out, int *outputs);

/* ---- foreign C functions ------------------------------------------------ */

/* Add a node (op popc::ForeignCall, plugin ops/ffi) calling `symbol` of the
** shared library `library` through libffi. library is an absolute path or
** a bare soname ("libm.so.6") found by the dynamic linker's system search;
** relative paths ("./libx.so", "lib/x.so") are refused. The signature
** (grammar in docs/plugins.md) says how graph values map to arguments:
**   "void(in f32*, out f32*, i64 n)"   one call on whole buffers
**   "f32(in f32)"                      one call per element (erff)
**   "i32(in f32*, out f32*, i64 n, err)" non-zero return = failure, and
**                                      err passes a reporter the function
**                                      may call with a message
** output_shapes[0..n_outputs) give one rule per output: "same_as:K" (the
** shape of input K) or explicit dims "4, 5"; NULL means "same_as:0" for
** every output. n_outputs must be the number of outputs the signature
** has. The library and symbol are bound and the call interface is built
** when the model is compiled, so a missing library or symbol, or a
** signature that does not fit the inputs, fails the compile naming
** library, symbol and the mismatch. Not differentiable.
** Returns POPC_OK, POPC_EINVAL (NULL or empty argument, bad library path,
** signature or shape rule, with the position; the signature is checked
** here once the inputs' shapes are known), POPC_ENOTFOUND (no op plays
** POPC_ROLE_FOREIGN_CALL: ops/ffi not loaded), POPC_ESTATE (after
** popc_block_end), POPC_ENOMEM. The graph is unchanged on failure. Not
** thread-safe on one graph; loads the global registry on first use
** (thread-safe). Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_foreign_op(popc_graph *g,
    const char *library, const char *symbol, const char *signature,
    const int *inputs, int n_inputs, const char *const *output_shapes,
    int n_outputs, int *outputs);

#ifdef __cplusplus
}
#endif
#endif /* POPC_CUSTOM_H */
