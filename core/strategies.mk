# core/strategies.mk - execution strategies (helper "strategies"): Block /
# Stage / Phase annotations, stage and phase resolution, recomputation,
# tensor liveness between phases, plan figures (replica grouping of
# weights is in dist/).
libpopc_la_SOURCES += \
    %reldir%/strategies/strategy_priv.h \
    %reldir%/strategies/blocks.c \
    %reldir%/strategies/stages.c \
    %reldir%/strategies/recompute.c \
    %reldir%/strategies/offchip.c \
    %reldir%/strategies/plan_info.c

pkginclude_HEADERS += %reldir%/include/popc/blocks.h \
    %reldir%/include/popc/plan_info.h
