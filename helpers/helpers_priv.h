/* helpers_priv.h - what the helpers of popc/helpers.h share. They use the
** public graph API only: this layer sits on top of libpopc's core. */
#ifndef POPC_HELPERS_PRIV_H
#define POPC_HELPERS_PRIV_H

#include <stddef.h>

#include "popc/graph.h"

/* Same dtype and shape. */
int helpers_same_type(const popc_view *a, const popc_view *b);

/* Add src's nodes (and constants) to dst. src's inputs read bind_in[i];
** src's value w_src[j] (a weight of src) reads bind_w[j] - the first
** n_in + n_w entries of bind hold both, inputs first. res[i] receives
** the dst value of src's output i (n_out outputs). */
popc_status helpers_copy_nodes(popc_graph *dst, const popc_graph *src,
                               const int *bind, int n_in, const int *w_src,
                               int n_w, int *res);

/* A name for something new in g made from prefix: "<prefix>_<n>" with
** the lowest n >= first that no value or node of g uses, as a name or as
** the start of one ("<name>.weight", "<name>/trips"); first < 0 tries the
** bare prefix first. Generated names so never clash, whatever made the
** graph's other names. */
void helpers_free_name(const popc_graph *g, const char *prefix, int first,
                       char *out, size_t size);

/* A constant scalar or vector of int64 in g. */
popc_status helpers_const_i64(popc_graph *g, const char *name,
                              const int64_t *v, int n, int rank, int *id);

#endif /* POPC_HELPERS_PRIV_H */
