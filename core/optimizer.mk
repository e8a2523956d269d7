# core/optimizer.mk - optimizer descriptions (values, groups, variable
# flags) and the runtime's use of them (state, step, clipping, replacement).
libpopc_la_SOURCES += %reldir%/optimizer.c %reldir%/optimizer_run.c \
    %reldir%/optimizer_priv.h
