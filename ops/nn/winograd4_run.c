/* winograd4_run.c - the entries of Winograd F(4x4, 3x3) (winograd4.c)
** for Conv's forward, ConvGradInput and ConvGradWeight, split over the
** kernel's parts the way F(2x2)'s are (conv.c, conv_grad.c): units
** (group, image), and for ConvGradWeight (group, image chunk). Units
** depend on the shape only, so split and whole runs agree bitwise.
*/
#include "config.h"

#include <string.h>

#include "ops/nn/winograd4.h"
#include "ops/util/oputil.h"
#include "ops/util/sums.h"

/* x [N, G * xc, xp] to y [N, G * yc, yp] with geometry g and Conv's
** weights wt (transposed: ConvGradInput's form); bias: M values or
** NULL. Units (group, image); the group's weights are transformed once
** per part. */
static popc_status run(const popc_kernel_ctx *kc, const conv_p *p,
                       const nn_wino4 *g, int transposed, const float *x,
                       int64_t xc, int64_t xp, const float *wt,
                       const float *bias, float *y, int64_t yc, int64_t yp)
{
    int64_t lo, hi, cur = -1;
    float *s;
    popc_status st;

    opu_range(p->N * p->G, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    if (!(s = nn_conv_scratch(kc, nn_wino4_scratch(g), &st)) && st)
        return st;
    for (int64_t u = lo; u < hi; u++) {
        int64_t gr = u / p->N, n = u % p->N;

        if (gr != cur) {
            nn_wino4_weights(g, wt + gr * p->Mg * p->Kc, transposed, s);
            cur = gr;
        }
        nn_wino4_image_part(g, x + (n * p->G + gr) * xc * xp,
                            bias ? bias + gr * yc : NULL,
                            y + (n * p->G + gr) * yc * yp, s, 0,
                            nn_wino4_blocks(g), 0, g->M, p->epi);
    }
    kc->host->free(s);
    return POPC_OK;
}

popc_status nn_wino4_forward(const popc_kernel_ctx *kc, const conv_p *p,
                             const float *x, const float *wt,
                             const float *bias, float *y)
{
    nn_wino4 g;

    nn_wino4_plan(p->Cg, p->Mg, p->w.H, p->w.W, p->w.OH, p->w.OW, p->w.pt,
                  p->w.pl, &g);
    return run(kc, p, &g, 0, x, p->Cg, p->HW, wt, bias, y, p->Mg, p->P);
}

popc_status nn_wino4_grad_input(const popc_kernel_ctx *kc, const conv_p *p,
                                const float *dy, const float *wt, float *dx)
{
    nn_wino4 g;

    /* dX is dY convolved with the turned kernels, padded 2 - pads */
    nn_wino4_plan(p->Mg, p->Cg, p->w.OH, p->w.OW, p->w.H, p->w.W,
                  2 - p->w.pt, 2 - p->w.pl, &g);
    return run(kc, p, &g, 1, dy, p->Mg, p->P, wt, NULL, dx, p->Cg, p->HW);
}

/* Units (group, chunk): each sums a whole group's dW over the chunk's
** images into partial sum c, and dB's rows from the same reads of dY. */
popc_status nn_wino4_grad_weight(const popc_kernel_ctx *kc, const conv_p *p,
                                 const float *x, const float *dy, float *dw,
                                 float *db)
{
    nn_wino4 g;
    int64_t lo, hi;
    double *acc;
    float *s;
    popc_status st;

    if (p->S <= 0)
        return kc->host->set_error(POPC_EINVAL,
                                   "ConvGradWeight '%s': the Winograd F(4x4) "
                                   "path needs image_chunks > 0",
                                   kc->node_name);
    nn_wino4_plan(p->Cg, p->Mg, p->w.H, p->w.W, p->w.OH, p->w.OW, p->w.pt,
                  p->w.pl, &g);
    opu_range(p->G * p->S, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    /* dB sums (8 doubles per row, as 16 floats) first */
    if (!(acc = nn_conv_scratch(kc, 16 * p->Mg + nn_wino4_grad_scratch(&g),
                                &st)) &&
        st)
        return st;
    s = (float *)acc + 16 * p->Mg;
    for (int64_t u = lo; u < hi; u++) {
        int64_t gr = u / p->S, c = u % p->S;
        int64_t n0 = p->N * c / p->S, n1 = p->N * (c + 1) / p->S;

        nn_wino4_grad_begin(&g, s);
        memset(acc, 0, sizeof *acc * (size_t)(8 * p->Mg));
        for (int64_t n = n0; n < n1; n++)
            nn_wino4_grad_image(&g, x + (n * p->G + gr) * p->Cg * p->HW,
                                dy + (n * p->G + gr) * p->Mg * p->P, s,
                                db ? acc : NULL);
        nn_wino4_grad_finish(&g, s, dw + (c * p->G + gr) * p->Mg * p->Kc);
        for (int64_t m = 0; db && m < p->Mg; m++)
            db[c * p->M + gr * p->Mg + m] = (float)opu_sum8_total(acc + 8 * m);
    }
    kc->host->free(acc);
    return POPC_OK;
}
