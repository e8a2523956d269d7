# core/extend.mk - what the executor needs of custom ops: the host
# callbacks of CPU ops and the undo of failed training runs (the ops'
# graph builders are in extend/, their INI layers in run/).
libpopc_la_SOURCES += \
    %reldir%/extend/callbacks.c %reldir%/extend/callbacks_priv.h \
    %reldir%/extend/txn.c %reldir%/extend/txn_priv.h

pkginclude_HEADERS += %reldir%/include/popc/callback.h
