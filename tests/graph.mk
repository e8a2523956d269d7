# tests/graph.mk - graph IR, autodiff (finite differences), layer builders
# and where nodes were added (check_source)
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_graph %reldir%/check_autodiff \
    %reldir%/check_layers %reldir%/check_source
TESTS += %reldir%/check_graph %reldir%/check_autodiff %reldir%/check_layers \
    %reldir%/check_source
endif

# -export-dynamic: dladdr names the test's functions
%canon_reldir%_check_source_SOURCES = %reldir%/check_source.c \
    %reldir%/minijson.c %reldir%/minijson.h %reldir%/profile_files.c \
    %reldir%/profile_files.h
%canon_reldir%_check_source_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_source_LDFLAGS = -export-dynamic
%canon_reldir%_check_source_LDADD = libpopc.la $(CHECK_LIBS)
%canon_reldir%_check_source_DEPENDENCIES = libpopc.la $(ops_LTLIBRARIES) \
    backends/cpu.la optim/sgd.la

%canon_reldir%_check_graph_SOURCES = %reldir%/check_graph.c \
    %reldir%/graph_testops.c %reldir%/graph_testops.h
%canon_reldir%_check_graph_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_graph_LDADD = libpopc.la $(CHECK_LIBS)

# differentiates every op of the build tree's plugins that has a gradient
%canon_reldir%_check_autodiff_SOURCES = %reldir%/check_autodiff.c \
    %reldir%/graph_testops.c %reldir%/graph_testops.h \
    %reldir%/harness/fd_check.c %reldir%/harness/fd_check.h
%canon_reldir%_check_autodiff_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_autodiff_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_autodiff_DEPENDENCIES = libpopc.la $(ops_LTLIBRARIES)

%canon_reldir%_check_layers_SOURCES = %reldir%/check_layers.c
%canon_reldir%_check_layers_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_layers_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_layers_DEPENDENCIES = libpopc.la $(ops_LTLIBRARIES)

# the graph optimizer (opt/): each pass before and after, outputs against
# optimizationLevel 0 on the reference kernels
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_optimize
TESTS += %reldir%/check_optimize
endif
%canon_reldir%_check_optimize_SOURCES = %reldir%/check_optimize.c
%canon_reldir%_check_optimize_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_optimize_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_optimize_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)

# NCHWc blocked layouts (optimizationLevel 3): each blocked op against its
# NCHW form, blocks of 16 and 8, and the layout pass before and after
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_blocked
TESTS += %reldir%/check_blocked
endif
%canon_reldir%_check_blocked_SOURCES = %reldir%/check_blocked.c \
    %reldir%/minijson.c %reldir%/minijson.h %reldir%/profile_files.c \
    %reldir%/profile_files.h
%canon_reldir%_check_blocked_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_blocked_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_blocked_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)
