/* compile_key.h - the key of a compile (compile_key.c), for the layers
** that compare or file compiles under it: dist/ (every rank compiles the
** same model) and exe/ (the executable cache).
*/
#ifndef POPC_ENCODE_COMPILE_KEY_H
#define POPC_ENCODE_COMPILE_KEY_H

#include <stdint.h>

#include "popc/model.h"

/* What identifies a compiled model (PopTorch's cache hash): the graph
** without weight values, the input signature, the compile options, the
** optimizer's type and constants, and the versions of popc and the
** plugins the graph uses. The executable cache files entries under it;
** the ranks of a distributed run compare it. */
popc_status popci_compile_key(const popc_model *m, popc_tensor *const *inputs,
                              int n, uint64_t *key);

#endif /* POPC_ENCODE_COMPILE_KEY_H */
