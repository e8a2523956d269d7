# core/graph.mk - the graph IR, its checks and transforms, layer builders,
# and its fields by id (graphs as bytes are encode/'s)
libpopc_la_SOURCES += \
    %reldir%/graph/graph_priv.h \
    %reldir%/graph/graph.c \
    %reldir%/graph/graph_names.c \
    %reldir%/graph/graph_annot.c \
    %reldir%/graph/graph_source.c \
    %reldir%/graph/graph_attr.c \
    %reldir%/graph/graph_query.c \
    %reldir%/graph/graph_edit.c \
    %reldir%/graph/graph_place.c \
    %reldir%/graph/graph_add_named.c \
    %reldir%/graph/topo.c \
    %reldir%/graph/infer.c \
    %reldir%/graph/verify.c \
    %reldir%/graph/trust.c \
    %reldir%/graph/loss.c \
    %reldir%/graph/eval.c \
    %reldir%/graph/subgraph.c \
    %reldir%/graph/subgraph_grad.c \
    %reldir%/graph/autodiff.c \
    %reldir%/graph/half_simd.c \
    %reldir%/graph/half_service.c \
    %reldir%/graph/half_simd.h \
    %reldir%/layer/rng.h \
    %reldir%/graph/rng.c \
    %reldir%/graph/graph_ids.c %reldir%/layer/graph_ids.h
