# profile/local.mk - cycle estimates, latencies and performance counters of
# a model, the enableProfiling files (profile.json and the self-contained
# profile.html) and the compile progress bar: a layer above the core,
# which follows a model's compiles and runs through its hooks.
libpopc_la_SOURCES += \
    %reldir%/profile_priv.h \
    %reldir%/profile_stats.c \
    %reldir%/profile.c \
    %reldir%/profile_html.c \
    %reldir%/progress.c \
    %reldir%/profile_hooks.c \
    %reldir%/node_source.c

pkginclude_HEADERS += %reldir%/include/popc/profile.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
