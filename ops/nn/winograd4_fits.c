/* winograd4_fits.c - the shapes Winograd F(4x4, 3x3) (winograd4.c)
** takes: 3x3, stride-1, undilated 2-D windows where it measured faster
** than F(2x2, 3x3) and im2col. The choice depends on the shape and the
** model's kind only, so split and whole runs take the same path.
*/
#include "config.h"

#include "ops/nn/winograd4.h"

/* Where F(4x4) pays, measured with bench/bench_wino4 (CPU time per image
** against F(2x2, 3x3), one thread, ResNet-18's shapes, 4 and 16 images
** per weight transform; bench/README.md): 1.2-1.4x faster forward (and
** ConvGradInput) and 1.0-1.3x for the weight gradient on output planes
** of 16x16 and more with 32 to 256 channels; slower on 14x14 and smaller
** planes (a partial last tile wastes up to 30% of the products, and the
** 36 GEMMs get too thin) and even at 16 channels. It needs
** NN_CONV_UNITS (image, group) units, as F(2x2) in training: an
** inference at batch 1 split by tile blocks made ResNet-18 at 224x224
** 0.87x as fast (each part transforms 36 M C weights for one image), so
** F(2x2)'s split keeps that case.
** The forward of a training model keeps F(2x2): F(4x4)'s rounding error
** is about 10x F(2x2)'s (winograd4.c), and a trained ResNet-18's losses
** follow torch's to 1e-4 only without it (tests/onnx/test_vision.sh:
** 4 SGD steps drifted by 7e-3 with it, by 4e-7 with F(4x4) only in the
** gradients, which feed the weights rather than BatchNorm's statistics
** and max pooling's choices). */
#define WINO4_MIN_PLANE 16     /* output rows and columns */
#define WINO4_MIN_CHANNELS 32  /* channels in and out */
/* Most channels: the weight transform is 36 M C floats per part. */
#define WINO4_MAX_CHANNELS 256

int nn_wino4_fits(const conv_p *p, int64_t cin, int64_t cout,
                  nn_wino4_use use)
{
    const nn_window *w = &p->w;

    return w->sp == 2 && w->kh == 3 && w->kw == 3 && w->sh == 1 &&
           w->sw == 1 && w->dh == 1 && w->dw == 1 &&
           w->OH >= WINO4_MIN_PLANE && w->OW >= WINO4_MIN_PLANE &&
           cin >= WINO4_MIN_CHANNELS && cout >= WINO4_MIN_CHANNELS &&
           cin <= WINO4_MAX_CHANNELS && cout <= WINO4_MAX_CHANNELS &&
           p->N * p->G >= NN_CONV_UNITS &&
           (use != NN_WINO4_FORWARD || p->inference) &&
           (use != NN_WINO4_GRAD_INPUT || (w->pt <= 2 && w->pl <= 2));
}
