# plugins/local.mk - the plugin SDK's examples. They are built out of tree
# by their own Makefiles (cc + pkg-config against an installed popc, see
# docs/plugins.md), never by this build; they are installed with the
# documentation ($(docdir)/plugins/NAME) for plugin authors to copy.
# tests/test_oot_plugins.sh builds the installed copies against a staged
# install, and tests/extend.mk compiles the same sources as test modules.
leaky_reludir = $(docdir)/plugins/leaky_relu
dist_leaky_relu_DATA = \
    %reldir%/leaky_relu/Makefile %reldir%/leaky_relu/leaky_relu.c

cubedir = $(docdir)/plugins/cube
dist_cube_DATA = %reldir%/cube/Makefile %reldir%/cube/cube.c
