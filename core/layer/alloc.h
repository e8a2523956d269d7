/* layer/alloc.h - libpopc's counted allocator, for the layers above the
** core (exe/, profile/, data/, run/ ...), which are part of libpopc and
** must fail with it when a test arms an allocation fault (popc/fault.h).
**
** core/layer/ holds the layer-internal interfaces: headers that the
** layers of libpopc may include but that are not installed. Nothing
** outside core/ includes a core *_priv.h (tests/test_headers.sh). Memory
** from these is released with free(). */
#ifndef POPC_LAYER_ALLOC_H
#define POPC_LAYER_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "popc/tensor.h"

void *popci_malloc(size_t n);
void *popci_calloc(size_t n, size_t size);
void *popci_realloc(void *p, size_t n);
char *popci_strdup(const char *s);
char *popci_strndup(const char *s, size_t n);

/* popc_tensor_new without the zero fill: the bytes are undefined, for a
** placeholder its caller overwrites or replaces before anything reads it
** (a cached compiled graph's weights, which come from the model). Large
** tensors then cost no page touched. */
popc_status popci_tensor_new_unfilled(popc_dtype dt, const int64_t *dims,
                                      int rank, popc_tensor **out);

#endif /* POPC_LAYER_ALLOC_H */
