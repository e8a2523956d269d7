/* layer/strbuf.h - the core's growable string, for the layers that
** describe graphs and runs in text (exe/'s popc inspect, profile/'s
** reports): printf into it, take the buffer. An allocation failure is
** remembered (oom) and makes popci_sb_take return NULL. Zero-initialise
** a popci_sb to start. */
#ifndef POPC_LAYER_STRBUF_H
#define POPC_LAYER_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "popc/status.h"
#include "popc/tensor.h"

typedef struct popci_sb {
    char *buf;
    size_t len, cap;
    int oom;
} popci_sb;

void popci_sb_printf(popci_sb *sb, const char *fmt, ...) POPC_PRINTF(2, 3);
void popci_sb_vprintf(popci_sb *sb, const char *fmt, va_list ap);
/* "float32[2, 3]" */
void popci_sb_view(popci_sb *sb, const popc_view *v);
/* Takes the buffer (caller frees); NULL after an allocation failure. */
char *popci_sb_take(popci_sb *sb);
void popci_sb_free(popci_sb *sb);

#endif /* POPC_LAYER_STRBUF_H */
