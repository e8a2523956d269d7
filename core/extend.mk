# core/extend.mk - custom ops (poptorch.custom_op), CPU ops and their host
# callbacks, foreign C calls and the undo of failed training runs (their
# INI layers are in run/).
libpopc_la_SOURCES += \
    %reldir%/custom_op.c \
    %reldir%/callbacks.c %reldir%/callbacks_priv.h \
    %reldir%/txn.c %reldir%/txn_priv.h

pkginclude_HEADERS += %reldir%/include/popc/custom.h
