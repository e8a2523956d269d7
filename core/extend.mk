# core/extend.mk - custom ops (poptorch.custom_op), CPU ops and their host
# callbacks, foreign C calls and the undo of failed training runs (their
# INI layers are in run/).
libpopc_la_SOURCES += \
    %reldir%/extend/custom_op.c \
    %reldir%/extend/callbacks.c %reldir%/extend/callbacks_priv.h \
    %reldir%/extend/txn.c %reldir%/extend/txn_priv.h

pkginclude_HEADERS += %reldir%/include/popc/custom.h
