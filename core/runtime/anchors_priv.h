/* anchors_priv.h - anchorTensor: graph values returned after each run
** beside the outputs, by a short name (PopTorch's Options.anchorTensor and
** getAnchoredTensor).
**
** The option's value is a comma-separated list of SHORT=LONG[@MODE], LONG
** naming a value of the model's graph and MODE one of Final, All, Sum or
** EveryN:N; without @MODE an anchor takes the model's output mode and
** period (R1.7). Each PopTorch-syntax call anchorTensor(short, long,
** mode, period) adds one entry.
*/
#ifndef POPC_ANCHORS_PRIV_H
#define POPC_ANCHORS_PRIV_H

#include <stdint.h>

#include "popc/options.h"
#include "popc/tensor.h"

typedef struct popci_anchors {
    int n;
    char **short_names;        /* owned */
    char **long_names;         /* owned */
    popc_output_mode *mode;    /* resolved: never DEFAULT */
    int64_t *period;           /* EveryN's N, else 1 */
    popc_tensor **values;      /* the last run's; NULL before one */
} popci_anchors;

/* Checks the option's syntax (the option's set hook). */
popc_status popci_anchors_check(const char *text);

/* Parses the option; modes left out take (mode, period). di checks an
** EveryN period as PopART does (0: not checked). *out is NULL when the option is None. */
popc_status popci_anchors_parse(const char *text, popc_output_mode mode,
                                int64_t period, int64_t di,
                                popci_anchors **out);
void popci_anchors_free(popci_anchors *a); /* NULL-safe */

#endif /* POPC_ANCHORS_PRIV_H */
