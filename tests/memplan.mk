# tests/memplan.mk - the memory planner: in-place execution, arena
# placement (core/runtime/arena.c) and weight gradients serving as their
# accumulators.
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_memplan
TESTS += %reldir%/check_memplan
endif

%canon_reldir%_check_memplan_SOURCES = %reldir%/check_memplan.c
%canon_reldir%_check_memplan_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_memplan_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_memplan_DEPENDENCIES = libpopc.la \
    backends/cpu.la $(ops_LTLIBRARIES) optim/sgd.la

# the same through popc train (POPC and MAKE_IDX come from tests/cli.mk)
TESTS += %reldir%/test_memplan_cli.sh
EXTRA_DIST += %reldir%/test_memplan_cli.sh
