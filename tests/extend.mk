# tests/extend.mk - custom ops (the SDK examples in plugins/), CPU ops and
# host callbacks, foreign C calls through libffi, and the out-of-tree
# plugin workflow against a staged install (tests/test_oot_plugins.sh).
extend_test_plugins = libpopc.la $(ops_LTLIBRARIES) backends/cpu.la \
    backends/ipumodel.la optim/sgd.la

# The SDK examples built in-tree as test modules: the same sources the
# plain Makefiles in plugins/ build against an installed popc.
extend_oot_plugins = %reldir%/oot/leaky_relu.la %reldir%/oot/cube.la
check_LTLIBRARIES += $(extend_oot_plugins)
%canon_reldir%_oot_leaky_relu_la_SOURCES = plugins/leaky_relu/leaky_relu.c
%canon_reldir%_oot_leaky_relu_la_LDFLAGS = $(POPC_MODULE_FLAGS) \
    -rpath /nowhere
%canon_reldir%_oot_cube_la_SOURCES = plugins/cube/cube.c
%canon_reldir%_oot_cube_la_LDFLAGS = $(POPC_MODULE_FLAGS) -rpath /nowhere

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_custom_op %reldir%/check_cpu_op \
    %reldir%/check_ffi
TESTS += %reldir%/check_custom_op %reldir%/check_cpu_op %reldir%/check_ffi
endif

%canon_reldir%_check_custom_op_SOURCES = %reldir%/check_custom_op.c \
    %reldir%/harness/op_harness.c %reldir%/harness/op_harness.h \
    %reldir%/harness/fd_check.c %reldir%/harness/fd_check.h
%canon_reldir%_check_custom_op_CPPFLAGS = $(AM_CPPFLAGS) \
    -DTEST_OOT_DIR='"$(abs_top_builddir)/tests/oot"'
%canon_reldir%_check_custom_op_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_custom_op_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_custom_op_DEPENDENCIES = $(extend_test_plugins) \
    $(extend_oot_plugins)

%canon_reldir%_check_cpu_op_SOURCES = %reldir%/check_cpu_op.c
%canon_reldir%_check_cpu_op_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_cpu_op_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_cpu_op_DEPENDENCIES = $(extend_test_plugins)

# check_ffi compiles tests/data/ffi/userlib.c into a temporary directory
%canon_reldir%_check_ffi_SOURCES = %reldir%/check_ffi.c
%canon_reldir%_check_ffi_CPPFLAGS = $(AM_CPPFLAGS) \
    -DTEST_CC='"$(CC)"' \
    -DTEST_USERLIB_SRC='"$(abs_top_srcdir)/tests/data/ffi/userlib.c"'
%canon_reldir%_check_ffi_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_ffi_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_ffi_DEPENDENCIES = $(extend_test_plugins)

EXTRA_DIST += %reldir%/data/ffi/userlib.c

# The plugin author's path: make install DESTDIR=..., the examples built
# with cc + pkg-config, loaded through POPC_PLUGIN_PATH, trained.
TESTS += %reldir%/test_oot_plugins.sh
EXTRA_DIST += %reldir%/test_oot_plugins.sh %reldir%/oot_plugins.c
AM_TESTS_ENVIRONMENT += \
    POPC_CC='$(CC)'; export POPC_CC; \
    POPC_MAKE='$(MAKE)'; export POPC_MAKE; \
    POPC_TEST_CFLAGS='$(CFLAGS)'; export POPC_TEST_CFLAGS; \
    POPC_TEST_LDFLAGS='$(LDFLAGS)'; export POPC_TEST_LDFLAGS;

# libtool relinks the shared libraries in place (.libs/) during make
# install, so for a moment they are missing or half-written: the staged
# install waits until every other test is done with them.
# (Named through a variable so Automake keeps its own recipe for the log.)
# tests/test_doc_snippets.sh stages an install too: it goes last.
oot_plugins_log = %reldir%/test_oot_plugins.sh.log
doc_snippets_log = %reldir%/test_doc_snippets.sh.log
$(oot_plugins_log): $(filter-out $(oot_plugins_log) $(doc_snippets_log),\
    $(TEST_LOGS))
$(doc_snippets_log): $(filter-out $(doc_snippets_log),$(TEST_LOGS))
