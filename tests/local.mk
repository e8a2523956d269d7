# tests: one fragment per area
AM_TESTS_ENVIRONMENT = POPC_PLUGIN_PATH='$(abs_top_builddir)/ops:$(abs_top_builddir)/optim:$(abs_top_builddir)/backends:$(abs_top_builddir)/collectives'; export POPC_PLUGIN_PATH; \
    POPC_TEST_DATA='$(abs_top_srcdir)/tests/data'; export POPC_TEST_DATA; \
    POPC_TEST_REF='$(abs_top_srcdir)/tests/ref'; export POPC_TEST_REF; \
    POPC_BUILDDIR='$(abs_top_builddir)'; export POPC_BUILDDIR; \
    POPC_SRCDIR='$(abs_top_srcdir)'; export POPC_SRCDIR;
include %reldir%/base.mk
include %reldir%/graph.mk
include %reldir%/ops.mk
include %reldir%/options.mk
include %reldir%/optimizer.mk
include %reldir%/runtime.mk
include %reldir%/abi2.mk
include %reldir%/helpers.mk
include %reldir%/data.mk
include %reldir%/cli.mk
include %reldir%/backends.mk
include %reldir%/extend.mk
include %reldir%/exe.mk
include %reldir%/profile.mk
include %reldir%/strategies.mk
include %reldir%/memplan.mk
include %reldir%/parity.mk
include %reldir%/onnx.mk
include %reldir%/hostile.mk
include %reldir%/faults.mk
include %reldir%/python.mk
include %reldir%/mutants.mk

# helpers the shell tests source, and the C tests' shared assertions
EXTRA_DIST += %reldir%/testlib.sh %reldir%/valgrind_main_job.sh \
    %reldir%/release_tarball.sh \
    %reldir%/harness/assert.h
