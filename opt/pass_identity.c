/* pass_identity.c - nodes that copy: Identity, and Dropout in an
** inference graph (its mask output unread), whose readers can read the
** input itself. A copy that is a graph output stays: the output is a
** value of its own, with its own name.
*/
#include "config.h"

#include "opt/opt_priv.h"

static int is_copy(const opt_ctx *c, int n)
{
    if (opt_is(c, n, "Identity"))
        return 1;
    /* Dropout's mask (output 1) must be unread */
    return !c->training && opt_is(c, n, "Dropout") &&
           (opt_output(c, n, 1) < 0 || c->uses[opt_output(c, n, 1)] == 0);
}

popc_status opt_drop_identities(opt_ctx *c, int *rewrites)
{
    popc_status st;

    for (int n = 0; n < c->n_nodes; n++) {
        int in, out;

        if (!is_copy(c, n))
            continue;
        in = opt_input(c, n, 0);
        out = opt_output(c, n, 0);
        if (in < 0 || out < 0 || opt_exported(c, out))
            continue;
        if ((st = popc_graph_replace_uses(c->g, out, in)) != POPC_OK)
            return st;
        c->taken[n] = 1;
        ++*rewrites;
    }
    return POPC_OK;
}
