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

check_PROGRAMS += %reldir%/onnx/npy_close
%canon_reldir%_onnx_npy_close_SOURCES = %reldir%/onnx/npy_close.c
%canon_reldir%_onnx_npy_close_LDADD = libpopc.la

TESTS += %reldir%/onnx/test_conformance.sh %reldir%/onnx/test_infer_cli.sh
EXTRA_DIST += %reldir%/onnx/test_conformance.sh \
    %reldir%/onnx/test_infer_cli.sh \
    %reldir%/onnx/expected-failures.txt \
    %reldir%/onnx/models/gen_models.py %reldir%/onnx/models/gen_bad.py \
    %reldir%/onnx/models/small_cnn.onnx \
    %reldir%/onnx/models/small_cnn.input.npy \
    %reldir%/onnx/models/small_cnn.output.npy \
    %reldir%/onnx/models/tiny_transformer.onnx \
    %reldir%/onnx/models/tiny_transformer.input.npy \
    %reldir%/onnx/models/tiny_transformer.output.npy \
    %reldir%/onnx/models/lstm_classifier.onnx \
    %reldir%/onnx/models/lstm_classifier.input.npy \
    %reldir%/onnx/models/lstm_classifier.output.npy \
    %reldir%/onnx/models/gru_classifier.onnx \
    %reldir%/onnx/models/gru_classifier.input.npy \
    %reldir%/onnx/models/gru_classifier.output.npy \
    %reldir%/onnx/models/unsupported_ops.onnx
