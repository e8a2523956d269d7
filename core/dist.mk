# core/dist.mk - distributed training: the process-wide communicator over
# a collectives plugin, the ordered gradient reduction across ranks, and
# what the ranks of a model agree on.
libpopc_la_SOURCES += \
    %reldir%/dist/dist_priv.h %reldir%/dist/dist_comm.c %reldir%/dist/dist_reduce.c \
    %reldir%/dist/dist_model.c

pkginclude_HEADERS += \
    %reldir%/include/popc/collectives.h \
    %reldir%/include/popc/distributed.h
