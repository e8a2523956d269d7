/* node_source.c - popc_graph_node_source (popc/graph.h): the first frame
** of the call stack the core recorded when a node was added
** (core/graph/graph_source.c) that belongs to the user (PopTorch's
** sourceLocationExcludes), for profiles and programs.
**
** Names are looked up with dladdr() only here, when a location is asked
** for. The caller's frames are those after popc's own: frames in its
** libraries (file names starting "libpopc") or in functions named popc_*
** or popci_* are the framework, as torch/nn/modules is to PopTorch, and
** frames before them (a sanitizer's backtrace interceptor) are not the
** caller's.
*/
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "popc/graph.h"
#include "core/layer/graph.h"

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

/* A frame of popc itself: in its libraries, or in a function of its API
** or internals (a program that links popc statically). */
static int is_popc(const char *obj, const char *sym)
{
    return strncmp(base_name(obj), "libpopc", 7) == 0 ||
           (sym && (strncmp(sym, "popc_", 5) == 0 ||
                    strncmp(sym, "popci_", 6) == 0));
}

/* Whether obj or sym contains one of the comma-separated excludes. */
static int excluded(const char *obj, const char *sym, const char *excludes)
{
    char item[256];

    for (const char *p = excludes; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        if (len > 0 && len < sizeof item) {
            memcpy(item, p, len);
            item[len] = '\0';
            if (strstr(obj, item) || (sym && strstr(sym, item)))
                return 1;
        }
        p = end ? end + 1 : p + len;
    }
    return 0;
}

size_t popc_graph_node_source(const popc_graph *g, int node,
                              const char *excludes, char *buf, size_t size)
{
    void *const *frames;
    int n_frames = popci_graph_node_frames(g, node, &frames);

    if (buf && size)
        buf[0] = '\0';
    if (excludes && strcmp(excludes, "None") == 0)
        excludes = NULL;
    for (int i = 0, inside = 0; i < n_frames; i++) {
        /* a return address: the call is the instruction before it */
        uintptr_t pc = (uintptr_t)frames[i] - 1;
        Dl_info info;
        const char *obj;
        int n;

        if (!dladdr((void *)pc, &info) || !info.dli_fname)
            continue;
        obj = info.dli_fname;
        /* frames before popc's own (a sanitizer's backtrace interceptor)
        ** are not the caller's */
        if (is_popc(obj, info.dli_sname)) {
            inside = 1;
            continue;
        }
        if (!inside || excluded(obj, info.dli_sname, excludes))
            continue;
        if (info.dli_sname && info.dli_saddr)
            n = snprintf(buf, buf ? size : 0, "%s+0x%lx (%s)",
                         info.dli_sname,
                         (unsigned long)(pc - (uintptr_t)info.dli_saddr),
                         obj);
        else
            n = snprintf(buf, buf ? size : 0, "%s+0x%lx", obj,
                         (unsigned long)(pc - (uintptr_t)info.dli_fbase));
        return n > 0 ? (size_t)n : 0;
    }
    return 0;
}
