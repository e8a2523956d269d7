/* backend_option.c - popc_backend_config.option_int: a backend reads the
** PopTorch options it models by PopTorch's name, so that a new option
** never needs a new member of popc_backend_config.
*/
#include "config.h"

#include "core/backend_option.h"
#include "core/options/options_priv.h"

static popc_status option_int(const popc_backend_config *cfg,
                              const char *name, int64_t *value)
{
    const popc_options *o = cfg ? cfg->impl : NULL;
    int id = name ? popci_options_index(name) : -1;
    popc_option_type type;

    if (!o || !value)
        return popc_set_error(POPC_EINVAL, "option_int: cfg and value must "
                              "not be NULL");
    if (id < 0)
        return popc_set_error(POPC_ENOTFOUND, "option_int: '%s' is not a "
                              "PopTorch option", name ? name : "(null)");
    type = popci_option_table[id].info.type;
    if (type != POPC_OPT_BOOL && type != POPC_OPT_INT &&
        type != POPC_OPT_ENUM)
        return popc_set_error(POPC_ENOTFOUND, "option_int: option '%s' is "
                              "not an integer, bool or enum option", name);
    /* None (useIpuId's default) reads as -1: no device id, no value */
    *value = popci_opt_is_none(o, (popci_opt_id)id)
                 ? -1
                 : popci_opt_int(o, (popci_opt_id)id);
    return POPC_OK;
}

void popci_backend_config_options(popc_backend_config *cfg,
                                  const popc_options *o)
{
    cfg->option_int = option_int;
    cfg->impl = o;
}
