/* graph_source.c - where each node was added: the call stack recorded by
** popc_graph_add_node, and the first frame of it that belongs to the user
** (PopTorch's sourceLocationExcludes).
**
** Recording keeps return addresses only (backtrace(), no symbol look-up),
** so building a graph stays cheap; names are looked up with dladdr() when
** a location is asked for. The caller's frames are those after popc's
** own: frames in its libraries (file names starting "libpopc") or in
** functions named popc_* or popci_* are the framework, as
** torch/nn/modules is to PopTorch, and frames before them (a sanitizer's
** backtrace interceptor) are not the caller's. Without <execinfo.h>
** nothing is recorded and every location is unknown.
*/
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#ifdef HAVE_EXECINFO_H
#include <execinfo.h>
#endif

#include "popc/graph.h"
#include "core/graph/graph_priv.h"
#include "core/layer/graph.h"

void popci_source_capture(popci_annot *a)
{
#ifdef HAVE_EXECINFO_H
    a->n_frames = backtrace(a->frames, POPCI_FRAMES);
    if (a->n_frames < 0)
        a->n_frames = 0;
#else
    a->n_frames = 0;
#endif
}

#ifdef HAVE_EXECINFO_H
static void first_backtrace(void)
{
    void *frame[1];

    (void)backtrace(frame, 1);
}
#endif

void popci_source_prepare(void)
{
#ifdef HAVE_EXECINFO_H
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, first_backtrace);
#endif
}

void popci_source_copy(popc_graph *dst, int dn, const popc_graph *src,
                       int sn)
{
    popci_annot *d = &dst->nodes[dn].annot;
    const popci_annot *s = &src->nodes[sn].annot;

    memcpy(d->frames, s->frames, sizeof d->frames);
    d->n_frames = s->n_frames;
}

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
    const popci_annot *a;

    if (buf && size)
        buf[0] = '\0';
    if (!g || node < 0 || node >= g->n_nodes)
        return 0;
    if (excludes && strcmp(excludes, "None") == 0)
        excludes = NULL;
    a = &g->nodes[node].annot;
    for (int i = 0, inside = 0; i < a->n_frames; i++) {
        /* a return address: the call is the instruction before it */
        uintptr_t pc = (uintptr_t)a->frames[i] - 1;
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
