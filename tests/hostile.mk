# tests/hostile.mk - hostile but well-formed input for every reader:
# deep nesting, huge claims, long names, many small initializers, cycles,
# shared names, escaping external data, endless loops, gzip bombs
# (docs/security.md). Plain, small-stack and threaded runs.
check_PROGRAMS += %reldir%/hostile/hostile
%canon_reldir%_hostile_hostile_SOURCES = %reldir%/hostile/hostile.c
%canon_reldir%_hostile_hostile_CPPFLAGS = $(AM_CPPFLAGS) \
    -I$(top_srcdir)/onnx/include
%canon_reldir%_hostile_hostile_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
%canon_reldir%_hostile_hostile_LDADD = libpopc-onnx.la libpopc.la \
    $(ZLIB_LIBS)

TESTS += %reldir%/hostile/test_hostile.sh
EXTRA_DIST += %reldir%/hostile/test_hostile.sh \
    %reldir%/hostile/gen_onnx.py %reldir%/hostile/protowire.py \
    %reldir%/hostile/gen_exe.py
