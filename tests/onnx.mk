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

# tests/onnx/dtypes: one input and one expected output per dtype
POPC_DTYPES = float32 float64 float16 bfloat16 int8 int16 int32 int64 \
    uint8 uint16 uint32 uint64 bool
POPC_DTYPE_FILES = $(POPC_DTYPES:%=%reldir%/onnx/dtypes/in_%.npy) \
    $(POPC_DTYPES:%=%reldir%/onnx/dtypes/out_%.npy)

check_PROGRAMS += %reldir%/onnx/npy_close
%canon_reldir%_onnx_npy_close_SOURCES = %reldir%/onnx/npy_close.c
%canon_reldir%_onnx_npy_close_LDADD = libpopc.la

# kernels chosen per node at compile, through popc infer (docs/kernels.md)
TESTS += %reldir%/onnx/test_kernels_cli.sh
EXTRA_DIST += %reldir%/onnx/test_kernels_cli.sh \
    %reldir%/onnx/kernels/gen_kernel_mix.py \
    %reldir%/onnx/kernels/kernel_mix.onnx \
    %reldir%/onnx/kernels/kernel_mix.input.npy \
    %reldir%/onnx/kernels/kernel_mix.output.npy

check_PROGRAMS += %reldir%/onnx/export_roundtrip
%canon_reldir%_onnx_export_roundtrip_SOURCES = %reldir%/onnx/export_roundtrip.c
%canon_reldir%_onnx_export_roundtrip_CPPFLAGS = $(AM_CPPFLAGS) \
    -I$(top_srcdir)/onnx/include
%canon_reldir%_onnx_export_roundtrip_LDADD = libpopc-onnx.la libpopc.la -lm

TESTS += %reldir%/onnx/test_conformance.sh \
    %reldir%/onnx/test_conformance_cli.sh %reldir%/onnx/test_infer_cli.sh \
    %reldir%/onnx/test_infer_frozen.sh \
    %reldir%/onnx/test_export.sh %reldir%/onnx/test_train_run.sh \
    %reldir%/onnx/test_vision.sh %reldir%/onnx/test_seq_train.sh \
    %reldir%/onnx/test_flow.sh %reldir%/onnx/test_eval_mode.sh \
    %reldir%/onnx/test_batch2.sh
EXTRA_DIST += %reldir%/onnx/test_conformance.sh \
    %reldir%/onnx/test_conformance_cli.sh \
    %reldir%/onnx/dtypes/gen_dtypes.py %reldir%/onnx/dtypes/every_dtype.onnx \
    $(POPC_DTYPE_FILES) \
    %reldir%/onnx/test_flow.sh \
    %reldir%/onnx/flow/gen_flow.py \
    %reldir%/onnx/flow/if_shapes.c.npy \
    %reldir%/onnx/flow/if_shapes.onnx \
    %reldir%/onnx/flow/loop_classifier.logits.npy \
    %reldir%/onnx/flow/loop_classifier.onnx \
    %reldir%/onnx/flow/loop_classifier_losses.txt \
    %reldir%/onnx/flow/loop_classifier.x.npy \
    %reldir%/onnx/flow/loop_classifier.y.npy \
    %reldir%/onnx/flow/loop_early.onnx \
    %reldir%/onnx/flow/loop_early.v.npy \
    %reldir%/onnx/flow/loop_if.h0.npy \
    %reldir%/onnx/flow/loop_if.h_final.npy \
    %reldir%/onnx/flow/loop_if.m.npy \
    %reldir%/onnx/flow/loop_if.onnx \
    %reldir%/onnx/flow/loop_if.stacked.npy \
    %reldir%/onnx/flow/scan_axes.m0.npy \
    %reldir%/onnx/flow/scan_axes.mx.npy \
    %reldir%/onnx/flow/scan_axes.onnx \
    %reldir%/onnx/flow/scan_axes.s.npy \
    %reldir%/onnx/flow/scan_axes.s0.npy \
    %reldir%/onnx/flow/scan_axes.x.npy \
    %reldir%/onnx/flow/scan_axes.ys.npy \
    %reldir%/onnx/test_seq_train.sh %reldir%/onnx/seqtrain/gen_seqtrain.py \
    %reldir%/onnx/seqtrain/transformer.onnx \
    %reldir%/onnx/seqtrain/transformer_losses.txt \
    %reldir%/onnx/seqtrain/lstm.onnx %reldir%/onnx/seqtrain/lstm_losses.txt \
    %reldir%/onnx/seqtrain/gru.onnx %reldir%/onnx/seqtrain/gru_losses.txt \
    %reldir%/onnx/seqtrain/x.npy %reldir%/onnx/seqtrain/y.npy \
    %reldir%/onnx/seqtrain/gen_tokens.py %reldir%/onnx/seqtrain/tokens.onnx \
    %reldir%/onnx/seqtrain/tokens_i32.onnx \
    %reldir%/onnx/seqtrain/tokens_losses.txt \
    %reldir%/onnx/seqtrain/tokens_x.npy %reldir%/onnx/seqtrain/tokens_x32.npy \
    %reldir%/onnx/test_vision.sh %reldir%/onnx/vision/gen_vision.py \
    %reldir%/onnx/test_eval_mode.sh %reldir%/onnx/vision/gen_eval.py \
    %reldir%/onnx/test_batch2.sh %reldir%/onnx/vision/gen_batch2.py \
    %reldir%/onnx/test_infer_cli.sh %reldir%/onnx/test_export.sh \
    %reldir%/onnx/test_train_run.sh %reldir%/onnx/train/gen_train.py \
    %reldir%/onnx/train/mlp.onnx %reldir%/onnx/train/x.npy \
    %reldir%/onnx/train/x8.npy %reldir%/onnx/train/y.npy \
    %reldir%/onnx/train/ref_losses.txt %reldir%/onnx/train/ref_logits.npy \
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
    %reldir%/onnx/models/unsupported_ops.onnx \
    %reldir%/onnx/test_infer_frozen.sh \
    %reldir%/onnx/models/gen_shape_input.py \
    %reldir%/onnx/models/shape_input.onnx \
    %reldir%/onnx/models/shape_input.x.npy \
    %reldir%/onnx/models/shape_input.shape.npy \
    %reldir%/onnx/models/shape_input.shape43.npy \
    %reldir%/onnx/models/shape_input.y.npy \
    %reldir%/onnx/models/shape_input.y43.npy

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_onnx
TESTS += %reldir%/check_onnx
endif
%canon_reldir%_check_onnx_SOURCES = %reldir%/check_onnx.c
%canon_reldir%_check_onnx_CPPFLAGS = $(AM_CPPFLAGS) \
    -I$(top_srcdir)/onnx/include \
    -DTEST_PLUGINS_DIR='"$(abs_top_builddir)/tests/plugins"'
%canon_reldir%_check_onnx_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_onnx_LDADD = libpopc-onnx.la libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_onnx_DEPENDENCIES = libpopc-onnx.la libpopc.la \
    $(ops_LTLIBRARIES) $(base_test_plugins)
EXTRA_DIST += %reldir%/data/onnx/gen_fixtures.py \
    %reldir%/data/onnx/seq_split_stack.onnx \
    %reldir%/data/onnx/seq_output.onnx \
    %reldir%/data/onnx/seq_runtime_pos.onnx \
    %reldir%/data/onnx/seq_bad_pos.onnx \
    %reldir%/data/onnx/bn_dropout_train.onnx \
    %reldir%/data/onnx/bfloat16_typed.pb \
    %reldir%/data/onnx/bool_raw.pb \
    %reldir%/data/onnx/bool_typed.pb \
    %reldir%/data/onnx/double_raw.pb \
    %reldir%/data/onnx/double_typed.pb \
    %reldir%/data/onnx/external.onnx \
    %reldir%/data/onnx/external_escape.onnx \
    %reldir%/data/onnx/float16_typed.pb \
    %reldir%/data/onnx/float_raw.pb \
    %reldir%/data/onnx/float_typed.pb \
    %reldir%/data/onnx/huge_claim.pb \
    %reldir%/data/onnx/int16_raw.pb \
    %reldir%/data/onnx/int16_typed.pb \
    %reldir%/data/onnx/int32_raw.pb \
    %reldir%/data/onnx/int32_typed.pb \
    %reldir%/data/onnx/int64_raw.pb \
    %reldir%/data/onnx/int64_typed.pb \
    %reldir%/data/onnx/int8_raw.pb \
    %reldir%/data/onnx/int8_typed.pb \
    %reldir%/data/onnx/missing_input.onnx \
    %reldir%/data/onnx/pad2.onnx \
    %reldir%/data/onnx/reshape1.onnx \
    %reldir%/data/onnx/short_typed.pb \
    %reldir%/data/onnx/slice1.onnx \
    %reldir%/data/onnx/softmax11.onnx \
    %reldir%/data/onnx/symbolic.onnx \
    %reldir%/data/onnx/uint16_raw.pb \
    %reldir%/data/onnx/uint16_typed.pb \
    %reldir%/data/onnx/uint32_raw.pb \
    %reldir%/data/onnx/uint32_typed.pb \
    %reldir%/data/onnx/uint64_raw.pb \
    %reldir%/data/onnx/uint64_typed.pb \
    %reldir%/data/onnx/uint8_raw.pb \
    %reldir%/data/onnx/uint8_typed.pb \
    %reldir%/data/onnx/unsupported.onnx \
    %reldir%/data/onnx/vendor_domain.onnx \
    %reldir%/data/onnx/w.bin
