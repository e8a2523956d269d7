/* atomic_file_priv.h - the atomic writer, for the core's own files; its
** interface is core/layer/atomic_file.h, which the layers include. */
#ifndef POPC_ATOMIC_FILE_PRIV_H
#define POPC_ATOMIC_FILE_PRIV_H

#include "core/layer/atomic_file.h"

#endif /* POPC_ATOMIC_FILE_PRIV_H */
