/* graph_source.c - where each node was added: the call stack recorded by
** popc_graph_add_node, kept with the node's annotations.
**
** Recording keeps return addresses only (backtrace(), no symbol look-up),
** so building a graph stays cheap; profile/node_source.c turns them into
** a location when one is asked for (popc_graph_node_source). Without
** <execinfo.h> nothing is recorded and every location is unknown.
*/
#include "config.h"

#include <pthread.h>
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

int popci_graph_node_frames(const popc_graph *g, int node,
                            void *const **frames)
{
    if (!g || node < 0 || node >= g->n_nodes) {
        *frames = NULL;
        return 0;
    }
    *frames = g->nodes[node].annot.frames;
    return g->nodes[node].annot.n_frames;
}
