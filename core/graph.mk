# core/graph.mk - the graph IR, its checks and transforms, layer builders
libpopc_la_SOURCES += \
    %reldir%/graph_priv.h \
    %reldir%/graph.c \
    %reldir%/graph_names.c \
    %reldir%/graph_annot.c \
    %reldir%/graph_source.c \
    %reldir%/graph_attr.c \
    %reldir%/graph_query.c \
    %reldir%/topo.c \
    %reldir%/infer.c \
    %reldir%/verify.c \
    %reldir%/trust.c \
    %reldir%/loss.c \
    %reldir%/eval.c \
    %reldir%/subgraph.c \
    %reldir%/subgraph_grad.c \
    %reldir%/autodiff.c \
    %reldir%/half.c \
    %reldir%/half_simd.c \
    %reldir%/half_simd.h \
    %reldir%/rng.h \
    %reldir%/rng.c

pkginclude_HEADERS += %reldir%/include/popc/random.h \
    %reldir%/include/popc/precision.h
