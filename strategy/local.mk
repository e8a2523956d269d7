# strategy/local.mk - PopTorch's execution strategies, a layer of libpopc
# right above the core, which the planner reaches through
# core/layer/strategy.h (popci_layer_strategy, defined in lib/layers.c):
# Block / Stage / Phase annotations, stage and phase resolution,
# recomputation, tensor liveness between phases, TensorLocations and host
# I/O, plan figures (replica grouping of weights is in dist/).
libpopc_la_SOURCES += \
    %reldir%/strategy_priv.h \
    %reldir%/port.c \
    %reldir%/blocks.c \
    %reldir%/stages.c \
    %reldir%/recompute.c \
    %reldir%/offchip.c \
    %reldir%/locations.c \
    %reldir%/host_io.c \
    %reldir%/plan_info.c

pkginclude_HEADERS += %reldir%/include/popc/blocks.h \
    %reldir%/include/popc/plan_info.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
