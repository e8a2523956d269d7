/* optfmt_priv.h - PopTorch's method-call form, shared by the front-ends
** of this layer.
**
** loadFromFile lines (options_file.c) and POPC_DEFAULT_OPTIONS entries
** (options_json.c) are PopTorch method calls
** ("outputMode(poptorch.OutputMode.EveryN, 2)"): both parse into popci_val
** trees and call popci_options_call (options_call.c), which maps them onto
** the core's option table (core/layer/options_table.h).
*/
#ifndef POPC_OPTFMT_PRIV_H
#define POPC_OPTFMT_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include "popc/options.h"
#include "core/layer/options_table.h"
#include "optfmt/optfmt.h"

typedef enum popci_vkind {
    POPCI_V_NONE = 0, POPCI_V_BOOL, POPCI_V_INT, POPCI_V_FLOAT, POPCI_V_STR,
    POPCI_V_NAME,             /* dotted identifier: poptorch.OutputMode.Sum */
    POPCI_V_CALL,             /* s(items...) then .next(...) */
    POPCI_V_LIST,             /* [items] or (items) */
    POPCI_V_DICT              /* {items[2k]: items[2k+1]} */
} popci_vkind;

typedef struct popci_val {
    popci_vkind kind;
    int64_t i;
    double f;
    char *s;                  /* STR text; NAME and CALL name */
    char *kw;                 /* keyword of an argument ("period=2"), or NULL */
    struct popci_val *items;
    int n;
    struct popci_val *next;   /* CALL: chained method call */
} popci_val;

void popci_val_clear(popci_val *v);  /* frees the contents, NULL-safe */
/* "an integer (3)", "a string ('x')", ... for messages. */
const char *popci_val_describe(const popci_val *v, char *buf, size_t size);

/* Apply PopTorch's method name(args...) to o, with PopTorch's argument
** rules (outputMode(mode, period), Distributed.configureProcessId(id, n),
** setExecutionStrategy(poptorch.ShardedExecution()), ...). The message is
** the bare reason; callers add the place. Sets *kind to the Python
** exception class PopTorch would raise ("ValueError", "TypeError",
** "AttributeError", ...) when kind is not NULL. *prefix is the category
** the call returns (for chained calls: "Training." after
** Training.gradientAccumulation(2)). */
popc_status popci_options_call(popc_options *o, const char *prefix,
                               const char *name, const popci_val *args,
                               int n, const char **kind,
                               const char **next_prefix);

/* Parse a JSON object of "dotted.name": value and apply each entry as
** PopTorch's method call (a list value is splatted as positional
** arguments). what names the source in messages ("POPC_DEFAULT_OPTIONS").
** o changes only when every entry applies. */
popc_status popci_options_apply_json(popc_options *o, const char *what,
                                     const char *json);

#endif /* POPC_OPTFMT_PRIV_H */
