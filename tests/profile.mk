# tests/profile.mk - cycle counts, latencies, performance counters, the
# compilation time and progress bar, and the enableProfiling files: their
# JSON (tests/minijson.c reads it) and the page drawn in headless Chromium
# (tests/test_profile_html.sh, skipped without /usr/bin/chromium).
profile_test_deps = libpopc.la backends/cpu.la backends/ipumodel.la \
    backends/offline.la ops/math.la ops/tensor.la ops/nn.la ops/loss.la \
    ops/popc.la optim/sgd.la

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_profile
TESTS += %reldir%/check_profile
endif

%canon_reldir%_check_profile_SOURCES = %reldir%/check_profile.c \
    %reldir%/minijson.c %reldir%/minijson.h \
    %reldir%/profile_files.c %reldir%/profile_files.h \
    %reldir%/profile_model.c %reldir%/profile_model.h
%canon_reldir%_check_profile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_profile_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_profile_DEPENDENCIES = $(profile_test_deps)

check_PROGRAMS += %reldir%/make_profile
%canon_reldir%_make_profile_SOURCES = %reldir%/make_profile.c \
    %reldir%/profile_model.c %reldir%/profile_model.h
%canon_reldir%_make_profile_LDADD = libpopc.la
%canon_reldir%_make_profile_DEPENDENCIES = $(profile_test_deps)

TESTS += %reldir%/test_profile_html.sh
EXTRA_DIST += %reldir%/test_profile_html.sh
CLEANFILES += %reldir%/profile-html.png
AM_TESTS_ENVIRONMENT += \
    MAKE_PROFILE='$(abs_top_builddir)/tests/make_profile'; \
    export MAKE_PROFILE;
