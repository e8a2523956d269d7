/* layer/mkdir.h - creating a directory and its parents, for the core's own
** files (logDir, core/runtime/model_log.c) and the layers that write files
** (fileio/atomic_file.h includes it for them).
*/
#ifndef POPC_LAYER_MKDIR_H
#define POPC_LAYER_MKDIR_H

#include "popc/status.h"

/* mkdir -p: dir and its missing parents. POPC_EIO naming `what` (the
** option or command the directory is for) and the part that failed. */
popc_status popci_mkdir_p(const char *dir, const char *what);

#endif /* POPC_LAYER_MKDIR_H */
