# core/extend.mk - custom ops (poptorch.custom_op), CPU ops and their host
# callbacks, foreign C calls, their INI layers (type = custom, foreign)
# and the undo of failed training runs.
libpopc_la_SOURCES += \
    %reldir%/custom_op.c \
    %reldir%/callbacks.c %reldir%/callbacks_priv.h \
    %reldir%/txn.c %reldir%/txn_priv.h \
    %reldir%/run_custom.c %reldir%/run_custom_priv.h

pkginclude_HEADERS += %reldir%/include/popc/custom.h
