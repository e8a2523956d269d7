/* synth.h - a small, learnable image dataset for the run and CLI tests.
**
** Four classes of 8x8 uint8 images: class k brightens quadrant k of the
** image over a noisy background, so a small MLP or CNN learns it in a few
** epochs. Written as Fashion-MNIST-style IDX files: train images and
** labels plain, test images gzip-compressed (both readers are exercised).
*/
#ifndef POPC_TESTS_SYNTH_H
#define POPC_TESTS_SYNTH_H

#define SYNTH_TRAIN_IMAGES "train-images-idx3-ubyte"
#define SYNTH_TRAIN_LABELS "train-labels-idx1-ubyte"
#define SYNTH_TEST_IMAGES "t10k-images-idx3-ubyte.gz"
#define SYNTH_TEST_LABELS "t10k-labels-idx1-ubyte"
#define SYNTH_CLASSES 4
#define SYNTH_SIDE 8

/* Write the four files into dir. Returns 0, or -1 with errno set. */
int synth_write(const char *dir, int n_train, int n_test, unsigned seed);

#endif /* POPC_TESTS_SYNTH_H */
