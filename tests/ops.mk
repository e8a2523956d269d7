# tests/ops.mk - op plugin tests (run through tests/harness/op_harness)
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_op_math %reldir%/check_op_tensor
TESTS += %reldir%/check_op_math %reldir%/check_op_tensor
endif
EXTRA_DIST += %reldir%/ref/gen_ops_math.py %reldir%/ref/ops

# plugins math and tensor against tests/ref/ops (gen_ops_math.py), and
# their gradients against finite differences
%canon_reldir%_check_op_math_SOURCES = %reldir%/check_op_math.c \
    %reldir%/harness/op_harness.c %reldir%/harness/op_harness.h \
    %reldir%/harness/op_expect.c %reldir%/harness/op_expect.h \
    %reldir%/harness/fd_check.c %reldir%/harness/fd_check.h
%canon_reldir%_check_op_math_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_op_math_LDADD = libpopc.la $(CHECK_LIBS) -lm
# the finite-difference checks also need popc::IdentityLoss (ops/popc.la)
%canon_reldir%_check_op_math_DEPENDENCIES = libpopc.la $(ops_LTLIBRARIES)

%canon_reldir%_check_op_tensor_SOURCES = %reldir%/check_op_tensor.c \
    %reldir%/harness/op_harness.c %reldir%/harness/op_harness.h \
    %reldir%/harness/op_expect.c %reldir%/harness/op_expect.h \
    %reldir%/harness/fd_check.c %reldir%/harness/fd_check.h
%canon_reldir%_check_op_tensor_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_op_tensor_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_op_tensor_DEPENDENCIES = libpopc.la $(ops_LTLIBRARIES)

# plugins nn, loss and popc against tests/ref/nn (gen_ops_nn.py); gradients
# go through the graph (autodiff) and need math/tensor ops too
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_op_nn %reldir%/check_op_loss \
    %reldir%/check_op_popc %reldir%/check_op_recurrent \
    %reldir%/check_op_onnx_grads
TESTS += %reldir%/check_op_nn %reldir%/check_op_loss %reldir%/check_op_popc \
    %reldir%/check_op_recurrent %reldir%/check_op_onnx_grads
endif
# Gemm's and a 3-D Linear's fused weight and bias gradients against
# hand-derived values, the unfused nodes and torch (tests/ref/linear_grads,
# written by tests/ref/gen_linear_grads.py)
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_gemm_grad
TESTS += %reldir%/check_gemm_grad
endif
%canon_reldir%_check_gemm_grad_SOURCES = %reldir%/check_gemm_grad.c \
    $(NN_TEST_SOURCES)
%canon_reldir%_check_gemm_grad_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_gemm_grad_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_gemm_grad_DEPENDENCIES = $(NN_TEST_DEPS) \
    backends/ipumodel.la optim/sgd.la
EXTRA_DIST += %reldir%/ref/gen_linear_grads.py %reldir%/ref/linear_grads
# the same through the popc command: a torch transformer's profile
TESTS += %reldir%/test_gemm_grad_cli.sh
EXTRA_DIST += %reldir%/test_gemm_grad_cli.sh
# kernels chosen per node at compile against their ops' references
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_kernels
TESTS += %reldir%/check_kernels
endif
%canon_reldir%_check_kernels_SOURCES = %reldir%/check_kernels.c
%canon_reldir%_check_kernels_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_kernels_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_kernels_DEPENDENCIES = libpopc.la ops/nn.la \
    $(backends_LTLIBRARIES)
NN_TEST_SOURCES = %reldir%/harness/op_harness.c %reldir%/harness/op_harness.h \
    %reldir%/harness/attrs.h \
    %reldir%/harness/ref_check.c %reldir%/harness/ref_check.h \
    %reldir%/harness/fd_check.c %reldir%/harness/fd_check.h
NN_TEST_DEPS = libpopc.la ops/nn.la ops/loss.la ops/popc.la ops/math.la \
    ops/tensor.la
%canon_reldir%_check_op_nn_SOURCES = %reldir%/check_op_nn.c $(NN_TEST_SOURCES)
%canon_reldir%_check_op_nn_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_op_nn_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_op_nn_DEPENDENCIES = $(NN_TEST_DEPS)
%canon_reldir%_check_op_recurrent_SOURCES = %reldir%/check_op_recurrent.c \
    $(NN_TEST_SOURCES)
%canon_reldir%_check_op_recurrent_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_op_recurrent_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_op_recurrent_DEPENDENCIES = $(NN_TEST_DEPS)
%canon_reldir%_check_op_onnx_grads_SOURCES = \
    %reldir%/check_op_onnx_grads.c $(NN_TEST_SOURCES)
%canon_reldir%_check_op_onnx_grads_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_op_onnx_grads_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_op_onnx_grads_DEPENDENCIES = $(NN_TEST_DEPS)
%canon_reldir%_check_op_loss_SOURCES = %reldir%/check_op_loss.c \
    $(NN_TEST_SOURCES)
%canon_reldir%_check_op_loss_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_op_loss_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_op_loss_DEPENDENCIES = $(NN_TEST_DEPS)
%canon_reldir%_check_op_popc_SOURCES = %reldir%/check_op_popc.c \
    $(NN_TEST_SOURCES)
%canon_reldir%_check_op_popc_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_op_popc_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_op_popc_DEPENDENCIES = $(NN_TEST_DEPS)
EXTRA_DIST += %reldir%/ref/gen_ops_nn.py %reldir%/ref/nn

# the host services plugins find by name (popc/services.h), and the op
# plugins' init() on a host that lacks one
if HAVE_CHECK
if ENABLE_SHARED
check_PROGRAMS += %reldir%/check_services
TESTS += %reldir%/check_services
endif
endif
%canon_reldir%_check_services_SOURCES = %reldir%/check_services.c
%canon_reldir%_check_services_CPPFLAGS = $(AM_CPPFLAGS) \
    -DTEST_OPS_DIR='"$(abs_top_builddir)/ops"' \
    -DTEST_OOT_DIR='"$(abs_top_builddir)/tests/oot"'
%canon_reldir%_check_services_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_services_LDADD = libpopc.la $(LIBLTDL) $(CHECK_LIBS) -lm
%canon_reldir%_check_services_DEPENDENCIES = libpopc.la ops/math.la \
    ops/tensor.la ops/nn.la ops/loss.la ops/popc.la tests/oot/leaky_relu.la

# op plugins compile no core source and share one op utility library
TESTS += %reldir%/test_op_sources.sh
EXTRA_DIST += %reldir%/test_op_sources.sh

# Winograd F(4x4, 3x3) (ops/nn/winograd4*.c) through Conv, FusedConv and
# the gradient ops against direct sums in double; its shape predicate is
# compiled in to check that the shapes take it
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_winograd4
TESTS += %reldir%/check_winograd4
endif
%canon_reldir%_check_winograd4_SOURCES = %reldir%/check_winograd4.c \
    ops/nn/winograd4_fits.c $(NN_TEST_SOURCES)
%canon_reldir%_check_winograd4_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_winograd4_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_winograd4_DEPENDENCIES = $(NN_TEST_DEPS)

# a small net trained with F(4x4) convolutions against torch's losses
# (tests/ref/gen_wino4_train.py wrote tests/ref/nn/wino4_train_losses.npy)
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_wino4_train
TESTS += %reldir%/check_wino4_train
endif
%canon_reldir%_check_wino4_train_SOURCES = %reldir%/check_wino4_train.c \
    ops/nn/winograd4_fits.c $(NN_TEST_SOURCES)
%canon_reldir%_check_wino4_train_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_wino4_train_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_wino4_train_DEPENDENCIES = $(NN_TEST_DEPS) \
    backends/cpu.la backends/ipumodel.la optim/sgd.la
EXTRA_DIST += %reldir%/ref/gen_wino4_train.py
