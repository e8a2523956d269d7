# opt/local.mk - the graph optimizer: passes a model's compile runs on its
# copy of the graph (optimizationLevel), a layer just above the core that
# follows compiles through the core's hooks.
libpopc_la_SOURCES += \
    %reldir%/opt_priv.h \
    %reldir%/opt_hooks.h \
    %reldir%/opt_ctx.c \
    %reldir%/optimize.c \
    %reldir%/pass_fold.c \
    %reldir%/pass_identity.c \
    %reldir%/pass_batchnorm.c \
    %reldir%/pass_transpose.c \
    %reldir%/pass_gelu.c \
    %reldir%/pass_layernorm.c \
    %reldir%/pass_attention.c \
    %reldir%/pass_fuse.c

pkginclude_HEADERS += %reldir%/include/popc/optimize.h

EXTRA_DIST += %reldir%/README.md
