# tests/base.mk - tensors, .npy files, the plugin registry and logging.

# Test-only plugin modules (never installed; -rpath makes them shared).
base_test_plugins = \
    %reldir%/plugins/good.la %reldir%/plugins/badabi.la \
    %reldir%/plugins/failinit.la %reldir%/plugins/wrongname.la \
    %reldir%/plugins/dupop.la %reldir%/plugins/notaplugin.la \
    %reldir%/plugins/newminor.la %reldir%/plugins/nohypersize.la
check_LTLIBRARIES += $(base_test_plugins)
%canon_reldir%_plugins_newminor_la_SOURCES = %reldir%/plugins/newminor.c
%canon_reldir%_plugins_newminor_la_LDFLAGS = $(POPC_TEST_MODULE_FLAGS) -rpath /nowhere
%canon_reldir%_plugins_nohypersize_la_SOURCES = %reldir%/plugins/nohypersize.c
%canon_reldir%_plugins_nohypersize_la_LDFLAGS = $(POPC_TEST_MODULE_FLAGS) -rpath /nowhere
%canon_reldir%_plugins_good_la_SOURCES = %reldir%/plugins/good.c
%canon_reldir%_plugins_good_la_LDFLAGS = $(POPC_TEST_MODULE_FLAGS) -rpath /nowhere
%canon_reldir%_plugins_badabi_la_SOURCES = %reldir%/plugins/badabi.c
%canon_reldir%_plugins_badabi_la_LDFLAGS = $(POPC_TEST_MODULE_FLAGS) -rpath /nowhere
%canon_reldir%_plugins_failinit_la_SOURCES = %reldir%/plugins/failinit.c
%canon_reldir%_plugins_failinit_la_LDFLAGS = $(POPC_TEST_MODULE_FLAGS) \
    -rpath /nowhere
%canon_reldir%_plugins_wrongname_la_SOURCES = %reldir%/plugins/wrongname.c
%canon_reldir%_plugins_wrongname_la_LDFLAGS = $(POPC_TEST_MODULE_FLAGS) \
    -rpath /nowhere
%canon_reldir%_plugins_dupop_la_SOURCES = %reldir%/plugins/dupop.c
%canon_reldir%_plugins_dupop_la_LDFLAGS = $(POPC_TEST_MODULE_FLAGS) -rpath /nowhere
%canon_reldir%_plugins_notaplugin_la_SOURCES = %reldir%/plugins/notaplugin.c
%canon_reldir%_plugins_notaplugin_la_LDFLAGS = -module -avoid-version \
    -no-undefined -rpath /nowhere

EXTRA_DIST += %reldir%/data/npy %reldir%/ref/gen_npy_fixtures.py \
    %reldir%/ref/gen_random.py

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_tensor %reldir%/check_npy \
    %reldir%/check_log %reldir%/check_limits %reldir%/check_random
TESTS += %reldir%/check_tensor %reldir%/check_npy %reldir%/check_log \
    %reldir%/check_limits %reldir%/check_random
if ENABLE_SHARED
check_PROGRAMS += %reldir%/check_registry
TESTS += %reldir%/check_registry
else
# Static builds: the test plugins are linked into the program.
check_PROGRAMS += %reldir%/check_preload
TESTS += %reldir%/check_preload
endif
endif

%canon_reldir%_check_tensor_SOURCES = %reldir%/check_tensor.c
%canon_reldir%_check_tensor_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_tensor_LDADD = libpopc.la $(CHECK_LIBS) -lm

%canon_reldir%_check_random_SOURCES = %reldir%/check_random.c \
    %reldir%/ref/random_values.h
%canon_reldir%_check_random_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_random_LDADD = libpopc.la $(CHECK_LIBS) -lm

%canon_reldir%_check_npy_SOURCES = %reldir%/check_npy.c
%canon_reldir%_check_npy_CPPFLAGS = $(AM_CPPFLAGS) \
    -DTEST_NPY_DIR='"$(abs_top_srcdir)/tests/data/npy"'
%canon_reldir%_check_npy_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_npy_LDADD = libpopc.la $(CHECK_LIBS) -lm

%canon_reldir%_check_log_SOURCES = %reldir%/check_log.c
%canon_reldir%_check_log_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_log_LDADD = libpopc.la $(CHECK_LIBS)

%canon_reldir%_check_limits_SOURCES = %reldir%/check_limits.c
%canon_reldir%_check_limits_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_limits_LDADD = libpopc.la $(CHECK_LIBS)

%canon_reldir%_check_registry_SOURCES = %reldir%/check_registry.c
%canon_reldir%_check_registry_CPPFLAGS = $(AM_CPPFLAGS) \
    -DTEST_PLUGINS_DIR='"$(abs_top_builddir)/tests/plugins"' \
    -DTEST_BACKENDS_DIR='"$(abs_top_builddir)/backends"' \
    -DTEST_OPS_DIR='"$(abs_top_builddir)/ops"'
%canon_reldir%_check_registry_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_registry_LDADD = libpopc.la $(CHECK_LIBS)
%canon_reldir%_check_registry_DEPENDENCIES = libpopc.la $(base_test_plugins) \
    backends/cpu.la backends/ipumodel.la backends/offline.la \
    ops/math.la ops/tensor.la ops/popc.la ops/host.la ops/ffi.la

# 'force' must be in LDFLAGS, the modules in LDADD.
%canon_reldir%_check_preload_SOURCES = %reldir%/check_preload.c
%canon_reldir%_check_preload_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_preload_LDADD = libpopc.la $(LIBLTDL) $(CHECK_LIBS) \
    -dlopen %reldir%/plugins/good.la -dlopen %reldir%/plugins/badabi.la \
    -dlopen %reldir%/plugins/dupop.la
%canon_reldir%_check_preload_LDFLAGS = -dlopen force
