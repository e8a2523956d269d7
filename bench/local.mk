# bench/local.mk - see the top-level Makefile.am

# bench_train_step: time training steps of the Fashion-MNIST models on one
# backend (bench/bench_backends.sh compares cpu and ipumodel with it)
noinst_PROGRAMS += %reldir%/bench_train_step
%canon_reldir%_bench_train_step_SOURCES = %reldir%/bench_train_step.c
%canon_reldir%_bench_train_step_LDADD = libpopc.la
EXTRA_DIST += %reldir%/bench_backends.sh %reldir%/bench_train.sh %reldir%/bench_modes.sh %reldir%/README.md \
    %reldir%/torch_models.py %reldir%/bench_models.sh %reldir%/bench_memory.sh \
    %reldir%/check_regression.sh %reldir%/ratios.txt \
    %reldir%/bench_distributed.sh %reldir%/scaling_model.sh

# bench_gemm_grad: popc::GemmGradWeightBias against the Gemm, SumToShape
# and Mul it replaces
noinst_PROGRAMS += %reldir%/bench_gemm_grad
%canon_reldir%_bench_gemm_grad_SOURCES = %reldir%/bench_gemm_grad.c
%canon_reldir%_bench_gemm_grad_LDADD = libpopc.la

# bench_onnx_load: import time and peak memory of a large ONNX model
noinst_PROGRAMS += %reldir%/bench_onnx_load
%canon_reldir%_bench_onnx_load_SOURCES = %reldir%/bench_onnx_load.c
%canon_reldir%_bench_onnx_load_CPPFLAGS = $(AM_CPPFLAGS) \
    -I$(top_srcdir)/onnx/include
%canon_reldir%_bench_onnx_load_LDADD = libpopc-onnx.la libpopc.la

# bench_graph_build: add_node (with its call-stack record) and source
# look-ups per node
noinst_PROGRAMS += %reldir%/bench_graph_build
%canon_reldir%_bench_graph_build_SOURCES = %reldir%/bench_graph_build.c
%canon_reldir%_bench_graph_build_LDADD = libpopc.la

# gemm_roof: OpenBLAS sgemm GFLOP/s at the models' own GEMM shapes
noinst_PROGRAMS += %reldir%/gemm_roof
%canon_reldir%_gemm_roof_SOURCES = %reldir%/gemm_roof.c
%canon_reldir%_gemm_roof_CFLAGS = $(AM_CFLAGS) $(BLAS_CFLAGS)
%canon_reldir%_gemm_roof_LDADD = $(BLAS_LIBS)

# bench_serialized_matmul: serializedMatMul's modes against the plain
# MatMul on the host
noinst_PROGRAMS += %reldir%/bench_serialized_matmul
%canon_reldir%_bench_serialized_matmul_SOURCES = \
    %reldir%/bench_serialized_matmul.c
%canon_reldir%_bench_serialized_matmul_LDADD = libpopc.la

# bench_infer: inference latency of an ONNX model through the C API
# (bench/bench_infer.sh sets it beside ONNX Runtime)
noinst_PROGRAMS += %reldir%/bench_infer
%canon_reldir%_bench_infer_SOURCES = %reldir%/bench_infer.c
%canon_reldir%_bench_infer_CPPFLAGS = $(AM_CPPFLAGS) \
    -I$(top_srcdir)/onnx/include
%canon_reldir%_bench_infer_LDADD = libpopc-onnx.la libpopc.la
EXTRA_DIST += %reldir%/bench_infer.sh %reldir%/ort_infer.js %reldir%/ratios_ort.txt \
    %reldir%/infer_models.py

# bench_conv_dnnl: oneDNN's convolution primitive against popc's kernels
# on the convolution shapes of ResNet-18 and MobileNetV2 (bench/README.md);
# built only when configure finds oneDNN (libdnnl-dev)
EXTRA_DIST += %reldir%/bench_conv_dnnl.c %reldir%/bench_conv_dnnl.sh \
    %reldir%/conv_dnnl_2026-11-28.md
if HAVE_DNNL
noinst_PROGRAMS += %reldir%/bench_conv_dnnl
%canon_reldir%_bench_conv_dnnl_SOURCES = %reldir%/bench_conv_dnnl.c
%canon_reldir%_bench_conv_dnnl_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
%canon_reldir%_bench_conv_dnnl_LDADD = libpopc.la -ldnnl -lm
endif

# bench_wino4: Winograd F(4x4, 3x3) against F(2x2, 3x3) per image on
# ResNet-18's 3x3 convolutions, the kernels called directly, one thread
noinst_PROGRAMS += %reldir%/bench_wino4
%canon_reldir%_bench_wino4_SOURCES = %reldir%/bench_wino4.c \
    ops/nn/winograd.c ops/nn/winograd4.c ops/nn/epilogue.c
%canon_reldir%_bench_wino4_CFLAGS = $(AM_CFLAGS) $(BLAS_CFLAGS)
%canon_reldir%_bench_wino4_LDADD = ops/util/libopu.la libpopc.la $(BLAS_LIBS) -lm
