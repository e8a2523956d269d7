/* options_priv.h - internals of PopTorch's Options shared by the core's
** options*.c: the options object itself and the defaults the rest of the
** core takes from the table. The table and the path every change takes
** are core/layer/options_table.h (the text front-ends, optfmt/ and run/,
** parse into calls of it); typed reads are core/layer/options.h.
*/
#ifndef POPC_OPTIONS_PRIV_H
#define POPC_OPTIONS_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include "popc/options.h"
#include "core/layer/options.h"
#include "core/layer/options_table.h"

/* Canonical text of a value. */
const char *popci_options_format_val(const popci_optdef *d,
                                     const popci_optval *v, char *buf,
                                     size_t size);
/* Current value of a known option (table code only). */
const popci_optval *popci_options_val(const popc_options *o,
                                      const char *name);

struct popc_options {
    popci_optval *v;          /* popci_option_count values */
    int frozen;
};

/* The optimizer popc_model_new_training uses when given none, as
** poptorch.trainingModel(model) does: SGD at lr 0.01 (options_table.c, so
** that the defaults live in one place and the rest of the core names no
** plugin). */
extern const char *const popci_default_optimizer;
extern const double popci_default_lr;

#endif /* POPC_OPTIONS_PRIV_H */
