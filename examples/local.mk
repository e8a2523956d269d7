# examples/local.mk - example run files, installed under
# $(pkgdatadir)/examples.
examplesdir = $(pkgdatadir)/examples
dist_examples_DATA = \
    %reldir%/fashion-mnist-mlp.ini \
    %reldir%/fashion-mnist-cnn.ini \
    %reldir%/fashion-mnist-infer.ini

# C programs using the public API only (they include no config.h, so the
# installed copies build as they are against an installed popc):
# train_mlp trains the MLP of fashion-mnist-mlp.ini, infer_cnn classifies
# with the weights popc train writes for fashion-mnist-cnn.ini and shows
# the output modes, modules_mlp trains an MLP of outlined modules with an
# explicit program. tests/test_examples.sh runs them.
noinst_PROGRAMS += %reldir%/train_mlp %reldir%/infer_cnn %reldir%/modules_mlp
dist_examples_DATA += %reldir%/train_mlp.c %reldir%/infer_cnn.c \
    %reldir%/modules_mlp.c
%canon_reldir%_train_mlp_SOURCES = %reldir%/train_mlp.c
%canon_reldir%_train_mlp_LDADD = libpopc.la
%canon_reldir%_infer_cnn_SOURCES = %reldir%/infer_cnn.c
%canon_reldir%_infer_cnn_LDADD = libpopc.la -lm
# modules_mlp: the PopXL tutorial's flow with popc/module.h (docs/modules.md)
%canon_reldir%_modules_mlp_SOURCES = %reldir%/modules_mlp.c
%canon_reldir%_modules_mlp_LDADD = libpopc.la -lm
