/* layer/options.h - typed reads of PopTorch's options, for the layers of
** libpopc (exe/, profile/, run/ ...) and the core alike.
**
** Option ids are an option's index in the table, named after it with '.'
** as '_' (POPCI_O_deviceIterations, POPCI_O_Training_gradientAccumulation),
** made from core/layer/options_list.h like the table itself. Code outside
** the option table reads options through these accessors: no name look-up,
** and the default is the table's.
*/
#ifndef POPC_LAYER_OPTIONS_H
#define POPC_LAYER_OPTIONS_H

#include <stdint.h>
#include "popc/options.h"

typedef enum popci_opt_id {
#define OPTION(ID, ...) POPCI_O_##ID,
#include "core/layer/options_list.h"
#undef OPTION
    POPCI_O_COUNT
} popci_opt_id;

/* The value of option id in o, as popc_options_get_int / _float / _bool /
** _string read it (0, 0.0, 0 or NULL when None); o must not be NULL. */
int64_t popci_opt_int(const popc_options *o, popci_opt_id id);
double popci_opt_float(const popc_options *o, popci_opt_id id);
int popci_opt_bool(const popc_options *o, popci_opt_id id);
const char *popci_opt_string(const popc_options *o, popci_opt_id id);
/* Whether the value is None / was set by the user. */
int popci_opt_is_none(const popc_options *o, popci_opt_id id);
int popci_opt_is_set(const popc_options *o, popci_opt_id id);

#endif /* POPC_LAYER_OPTIONS_H */
