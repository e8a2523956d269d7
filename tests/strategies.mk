# tests/strategies.mk - execution strategies, recomputation and replica
# grouping (helper "strategies"), on the cpu and ipumodel backends.
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_strategies
TESTS += %reldir%/check_strategies
endif

%canon_reldir%_check_strategies_SOURCES = %reldir%/check_strategies.c
%canon_reldir%_check_strategies_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_strategies_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_strategies_DEPENDENCIES = libpopc.la \
    backends/cpu.la backends/ipumodel.la $(ops_LTLIBRARIES) optim/sgd.la
