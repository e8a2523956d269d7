# tests/onnx.mk - the ONNX layer: the backend conformance suite (Debian's
# libonnx-testdata) on cpu and ipumodel against an expected-failures list.
noinst_PROGRAMS += %reldir%/onnx/conformance
%canon_reldir%_onnx_conformance_SOURCES = %reldir%/onnx/conformance.c
nodist_%canon_reldir%_onnx_conformance_SOURCES = onnx/onnx.pb-c.c
%canon_reldir%_onnx_conformance_CPPFLAGS = $(AM_CPPFLAGS) \
    -I$(top_srcdir)/onnx/include -I$(top_builddir)/onnx
%canon_reldir%_onnx_conformance_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
%canon_reldir%_onnx_conformance_LDADD = libpopc-onnx.la libpopc.la \
    $(PROTOBUF_C_LIBS) -lm

TESTS += %reldir%/onnx/test_conformance.sh
EXTRA_DIST += %reldir%/onnx/test_conformance.sh \
    %reldir%/onnx/expected-failures.txt
