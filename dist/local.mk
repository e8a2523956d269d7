# dist/local.mk - replicas and processes, a layer above the core that
# follows models through its hooks: replica grouping of weights, the
# process-wide communicator over a collectives plugin, the ordered
# gradient reduction across ranks, and what the ranks of a model agree on.
libpopc_la_SOURCES += \
    %reldir%/dist_priv.h %reldir%/dist_comm.c %reldir%/dist_reduce.c \
    %reldir%/dist_model.c %reldir%/dist_hooks.c %reldir%/replica_groups.c

pkginclude_HEADERS += %reldir%/include/popc/distributed.h \
    %reldir%/include/popc/strategy.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
