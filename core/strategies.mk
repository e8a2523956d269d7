# core/strategies.mk - execution strategies (helper "strategies"): Block /
# Stage / Phase annotations, stage and phase resolution, recomputation,
# tensor liveness between phases, replica grouping of weights, plan figures.
libpopc_la_SOURCES += \
    %reldir%/strategies/strategy_priv.h \
    %reldir%/strategies/blocks.c \
    %reldir%/strategies/stages.c \
    %reldir%/strategies/recompute.c \
    %reldir%/strategies/offchip.c \
    %reldir%/strategies/replica_groups.c \
    %reldir%/strategies/plan_info.c

pkginclude_HEADERS += %reldir%/include/popc/blocks.h \
    %reldir%/include/popc/strategy.h
