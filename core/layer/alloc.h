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

void *popci_malloc(size_t n);
void *popci_calloc(size_t n, size_t size);
void *popci_realloc(void *p, size_t n);
char *popci_strdup(const char *s);
char *popci_strndup(const char *s, size_t n);

#endif /* POPC_LAYER_ALLOC_H */
