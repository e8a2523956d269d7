# core/optimizer.mk - optimizer descriptions (values, groups, variable
# flags) and the runtime's use of them (state, step, clipping, replacement).
libpopc_la_SOURCES += %reldir%/optimizer/optimizer.c %reldir%/optimizer/optimizer_run.c \
    %reldir%/optimizer/optimizer_stored.c \
    %reldir%/optimizer/optimizer_priv.h %reldir%/layer/optimizer.h
