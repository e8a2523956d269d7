# tests/abi2.mk - plugins built against popc 0.3.0's frozen headers
# (tests/abi2/include, plugin ABI 2) load into this release: check_abi2.
if ENABLE_SHARED
abi2_test_plugins = %reldir%/abi2/abi2.la %reldir%/abi2/abi2_backend.la
check_LTLIBRARIES += $(abi2_test_plugins)
# only the frozen headers: never this release's core/include
ABI2_PLUGIN_CPPFLAGS = -I$(top_srcdir)/tests/abi2/include
%canon_reldir%_abi2_abi2_la_SOURCES = %reldir%/abi2/abi2.c
%canon_reldir%_abi2_abi2_la_CPPFLAGS = $(ABI2_PLUGIN_CPPFLAGS)
%canon_reldir%_abi2_abi2_la_LDFLAGS = $(POPC_TEST_MODULE_FLAGS) \
    -rpath /nowhere
%canon_reldir%_abi2_abi2_backend_la_SOURCES = %reldir%/abi2/abi2_backend.c
%canon_reldir%_abi2_abi2_backend_la_CPPFLAGS = $(ABI2_PLUGIN_CPPFLAGS)
%canon_reldir%_abi2_abi2_backend_la_LDFLAGS = $(POPC_TEST_MODULE_FLAGS) \
    -rpath /nowhere

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_abi2
TESTS += %reldir%/check_abi2
endif
%canon_reldir%_check_abi2_SOURCES = %reldir%/check_abi2.c
%canon_reldir%_check_abi2_CPPFLAGS = $(AM_CPPFLAGS) \
    -DABI2_PLUGINS_DIR='"$(abs_top_builddir)/tests/abi2"'
%canon_reldir%_check_abi2_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_abi2_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_abi2_DEPENDENCIES = libpopc.la $(abi2_test_plugins) \
    $(runtime_test_plugins)
endif
EXTRA_DIST += %reldir%/abi2/include %reldir%/abi2/README.md
