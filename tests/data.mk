# tests/data.mk - datasets and the data loader.
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_data
TESTS += %reldir%/check_data
%canon_reldir%_check_data_SOURCES = %reldir%/check_data.c
%canon_reldir%_check_data_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(ZLIB_CFLAGS)
%canon_reldir%_check_data_LDADD = libpopc.la $(CHECK_LIBS) $(ZLIB_LIBS)
endif

# run INI files (needs the op, optimizer and backend plugins)
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_run_ini
TESTS += %reldir%/check_run_ini
%canon_reldir%_check_run_ini_SOURCES = %reldir%/check_run_ini.c \
    %reldir%/synth.c %reldir%/synth.h
%canon_reldir%_check_run_ini_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) \
    $(ZLIB_CFLAGS)
%canon_reldir%_check_run_ini_LDADD = libpopc.la $(CHECK_LIBS) $(ZLIB_LIBS)
%canon_reldir%_check_run_ini_DEPENDENCIES = libpopc.la \
    $(ops_LTLIBRARIES) $(optim_LTLIBRARIES) $(backends_LTLIBRARIES)
endif
