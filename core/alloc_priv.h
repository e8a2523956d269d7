/* alloc_priv.h - the fault switches behind libpopc's counted allocator
** (core/layer/alloc.h); popci_alloc (host_priv.h) is the aligned,
** zero-filled variant plugins get. */
#ifndef POPC_ALLOC_PRIV_H
#define POPC_ALLOC_PRIV_H

#include "core/layer/alloc.h"

/* 1 when the allocation being made must fail (an armed fault). */
int popci_alloc_should_fail(void);

#endif /* POPC_ALLOC_PRIV_H */
