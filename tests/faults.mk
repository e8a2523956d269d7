# tests/faults.mk - injected faults: every allocation of a whole scenario
# failed in turn (check_alloc_faults), training killed at random moments
# then resumed (test_soak.sh), and processes sharing output names, a
# checkpoint or an executable cache (test_concurrency.sh).
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_alloc_faults
TESTS += %reldir%/check_alloc_faults
endif

%canon_reldir%_check_alloc_faults_SOURCES = %reldir%/check_alloc_faults.c
%canon_reldir%_check_alloc_faults_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_alloc_faults_LDADD = libpopc.la $(CHECK_LIBS)
%canon_reldir%_check_alloc_faults_DEPENDENCIES = $(exe_test_deps)

TESTS += %reldir%/test_soak.sh %reldir%/test_concurrency.sh
EXTRA_DIST += %reldir%/test_soak.sh %reldir%/test_concurrency.sh \
    %reldir%/tsan.supp

# Several models in several threads of one process (also run under
# ThreadSanitizer by .ci/run).
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_threads
TESTS += %reldir%/check_threads
endif
%canon_reldir%_check_threads_SOURCES = %reldir%/check_threads.c \
    %reldir%/harness/dir_check.c %reldir%/harness/dir_check.h
%canon_reldir%_check_threads_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_threads_LDADD = libpopc.la $(CHECK_LIBS) -lpthread
%canon_reldir%_check_threads_DEPENDENCIES = $(exe_test_deps)
