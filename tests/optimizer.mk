# tests/optimizer.mk - optimizer API and torch parity. The tests compile
# core/optimizer*.c themselves: the popci_* functions they check are hidden
# in libpopc.
optim_test_plugins = optim/sgd.la optim/adam.la optim/rmsprop.la \
    optim/lamb.la
EXTRA_DIST += %reldir%/ref/gen_optim.py %reldir%/ref/optim

if HAVE_CHECK
if ENABLE_SHARED
check_PROGRAMS += %reldir%/check_optim %reldir%/check_optim_api
TESTS += %reldir%/check_optim %reldir%/check_optim_api
endif
endif

%canon_reldir%_check_optim_SOURCES = %reldir%/check_optim.c \
    core/optimizer/optimizer.c core/optimizer/optimizer_run.c core/optimizer/optimizer_priv.h core/fault.c \
    core/options/suggest.c
%canon_reldir%_check_optim_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_optim_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_optim_DEPENDENCIES = libpopc.la $(optim_test_plugins)

%canon_reldir%_check_optim_api_SOURCES = %reldir%/check_optim_api.c \
    core/optimizer/optimizer.c core/optimizer/optimizer_run.c core/optimizer/optimizer_priv.h core/fault.c \
    core/options/suggest.c
%canon_reldir%_check_optim_api_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_optim_api_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_optim_api_DEPENDENCIES = libpopc.la \
    $(optim_test_plugins)
