/* run_custom_priv.h - INI layers of type custom and foreign
** (run/run_custom.c), used by run/run_model.c.
*/
#ifndef POPC_RUN_CUSTOM_PRIV_H
#define POPC_RUN_CUSTOM_PRIV_H

#include "popc/graph.h"
#include "run/run_priv.h"

/* Check the keys and values of [section] for a custom layer (foreign 0)
** or a foreign one (foreign 1). POPC_ECONFIG naming file, line and key. */
popc_status popci_run_parse_custom(const popc_run *r, const char *section,
                                   int foreign);

/* Add the layer's node to g, fed by value x; *y is the output that feeds
** the next layer. The op's or the builder's error otherwise. */
popc_status popci_run_add_custom(const popc_run *r, popc_graph *g,
                                 const char *section, int foreign, int x,
                                 int *y);

#endif /* POPC_RUN_CUSTOM_PRIV_H */
