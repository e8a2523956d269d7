# opt/local.mk - the graph optimizer: passes a model's compile runs on its
# copy of the graph (optimizationLevel), a layer just above the core that
# follows compiles through the core's hooks; and model.half() (half.c), the
# float16 copy of a graph.
libpopc_la_SOURCES += \
    %reldir%/opt_priv.h \
    %reldir%/opt_hooks.h \
    %reldir%/opt_ctx.c \
    %reldir%/optimize.c \
    %reldir%/prune.c \
    %reldir%/pass_fold.c \
    %reldir%/pass_identity.c \
    %reldir%/pass_batchnorm.c \
    %reldir%/pass_transpose.c \
    %reldir%/pass_gelu.c \
    %reldir%/pass_layernorm.c \
    %reldir%/pass_attention.c \
    %reldir%/pass_fuse.c \
    %reldir%/pass_linear.c \
    %reldir%/pass_layout.c \
    %reldir%/half.c \
    %reldir%/kernel_select.c

pkginclude_HEADERS += %reldir%/include/popc/optimize.h \
    %reldir%/include/popc/kernels.h \
    %reldir%/include/popc/precision.h

EXTRA_DIST += %reldir%/README.md
