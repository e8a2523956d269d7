# core/strategies.mk - execution strategies (helper "strategies"): Block /
# Stage / Phase annotations, stage and phase resolution, recomputation,
# tensor liveness between phases, replica grouping of weights, plan figures.
libpopc_la_SOURCES += \
    %reldir%/strategy_priv.h \
    %reldir%/blocks.c \
    %reldir%/stages.c \
    %reldir%/recompute.c \
    %reldir%/offchip.c \
    %reldir%/replica_groups.c \
    %reldir%/plan_info.c

pkginclude_HEADERS += %reldir%/include/popc/blocks.h \
    %reldir%/include/popc/strategy.h
