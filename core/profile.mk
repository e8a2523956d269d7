# core/profile.mk - cycle estimates, latencies and performance counters of
# a model, the enableProfiling files (profile.json and the self-contained
# profile.html) and the compile progress bar.
libpopc_la_SOURCES += \
    %reldir%/profile/profile_priv.h \
    %reldir%/profile/profile_stats.c \
    %reldir%/profile/profile.c \
    %reldir%/profile/profile_html.c \
    %reldir%/profile/progress.c

pkginclude_HEADERS += %reldir%/include/popc/profile.h
