# examples/local.mk - example run files, installed under
# $(pkgdatadir)/examples.
examplesdir = $(pkgdatadir)/examples
dist_examples_DATA = \
    %reldir%/fashion-mnist-mlp.ini \
    %reldir%/fashion-mnist-cnn.ini \
    %reldir%/fashion-mnist-infer.ini

# the run file reference
popcdocdir = $(docdir)
dist_popcdoc_DATA = docs/ini-format.md
