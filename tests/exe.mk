# tests/exe.mk - graph serialization, the executables' CRC-32
# (check_crc32), exported executables (save, load,
# loadExecutable, corrupt files, offline targets), the executable cache and
# the popc compile / run / inspect commands (test_exe_cli.sh), and write
# failures part-way through every kind of file (check_write_faults).
exe_test_deps = libpopc.la backends/cpu.la backends/ipumodel.la \
    backends/offline.la $(ops_LTLIBRARIES) optim/sgd.la optim/adam.la

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_serialize %reldir%/check_executable \
    %reldir%/check_write_faults %reldir%/check_crc32
TESTS += %reldir%/check_serialize %reldir%/check_executable \
    %reldir%/check_write_faults %reldir%/check_crc32
endif

# compiles the CRC itself: popci_crc32 is hidden in libpopc
%canon_reldir%_check_crc32_SOURCES = %reldir%/check_crc32.c \
    exe/crc32_fast.c exe/crc32_fast.h
%canon_reldir%_check_crc32_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) \
    $(ZLIB_CFLAGS)
%canon_reldir%_check_crc32_LDADD = $(CHECK_LIBS) $(ZLIB_LIBS)

%canon_reldir%_check_serialize_SOURCES = %reldir%/check_serialize.c
%canon_reldir%_check_serialize_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_serialize_LDADD = libpopc.la $(CHECK_LIBS)
%canon_reldir%_check_serialize_DEPENDENCIES = libpopc.la $(ops_LTLIBRARIES)

%canon_reldir%_check_executable_SOURCES = %reldir%/check_executable.c
%canon_reldir%_check_executable_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) \
    $(ZLIB_CFLAGS)
%canon_reldir%_check_executable_LDADD = libpopc.la $(CHECK_LIBS) \
    $(ZLIB_LIBS) -lm
%canon_reldir%_check_executable_DEPENDENCIES = $(exe_test_deps)

%canon_reldir%_check_write_faults_SOURCES = %reldir%/check_write_faults.c \
    %reldir%/harness/dir_check.c %reldir%/harness/dir_check.h
%canon_reldir%_check_write_faults_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_write_faults_LDADD = libpopc.la $(CHECK_LIBS)
%canon_reldir%_check_write_faults_DEPENDENCIES = $(exe_test_deps)

TESTS += %reldir%/test_exe_cli.sh
EXTRA_DIST += %reldir%/test_exe_cli.sh
# bytes an older build wrote, and what wrote them (check_serialize)
EXTRA_DIST += %reldir%/data/graph %reldir%/ref/gen_graph_fixtures.c
