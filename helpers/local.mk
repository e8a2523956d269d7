# helpers/local.mk - PopTorch's op helpers (popc/helpers.h), a layer above
# the core: they build graphs through the public API only.
libpopc_la_SOURCES += \
    %reldir%/helpers_priv.h %reldir%/graph_copy.c %reldir%/for_loop.c \
    %reldir%/dynamic_slice.c %reldir%/ctc.c %reldir%/remove_blocks.c \
    %reldir%/hardware.c %reldir%/module.c \
    %reldir%/serialized_matmul.c %reldir%/overlap.c \
    %reldir%/multiconv.c %reldir%/layers.c

pkginclude_HEADERS += %reldir%/include/popc/helpers.h \
    %reldir%/include/popc/module.h %reldir%/include/popc/layers.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
