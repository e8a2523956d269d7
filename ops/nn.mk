# ops/nn.mk - plugins nn (matmul, conv, pooling, norms, softmax), loss and
# popc, all on the op utility library (ops/util.mk).
ops_LTLIBRARIES += %reldir%/nn.la
%canon_reldir%_nn_la_SOURCES = \
    %reldir%/nn/nn.c \
    %reldir%/nn/nn_priv.h \
    %reldir%/nn/tiles.c \
    %reldir%/nn/window.c \
    %reldir%/nn/matmul.c \
    %reldir%/nn/matmul_grad.c %reldir%/nn/matmul_grad.h \
    %reldir%/nn/matmul_serial.c \
    %reldir%/nn/matmul_serial.h \
    %reldir%/nn/conv.c \
    %reldir%/nn/conv_kernels.c \
    %reldir%/nn/conv_grad.c \
    %reldir%/nn/conv_priv.h \
    %reldir%/nn/epilogue.c \
    %reldir%/nn/epilogue.h \
    %reldir%/nn/fused.c \
    %reldir%/nn/blocked.h %reldir%/nn/blocked.c %reldir%/nn/blocked_conv.c \
    %reldir%/nn/blocked_pool.c %reldir%/nn/blocked_kern.h \
    %reldir%/nn/blocked_kern.c \
    %reldir%/nn/attention.c \
    %reldir%/nn/half_partials.c \
    %reldir%/nn/half_partials.h \
    %reldir%/nn/winograd.c \
    %reldir%/nn/winograd4.h \
    %reldir%/nn/winograd4.c \
    %reldir%/nn/winograd4_fits.c \
    %reldir%/nn/winograd4_run.c \
    %reldir%/nn/pool.c \
    %reldir%/nn/pool_max.c \
    %reldir%/nn/spatial_nd.c \
    %reldir%/nn/norm_more.c \
    %reldir%/nn/norm_more_grad.c \
    %reldir%/nn/resize.c \
    %reldir%/nn/conv_batched.c \
    %reldir%/nn/depthwise.c \
    %reldir%/nn/lstm_gemm.c \
    %reldir%/nn/lstm_gemm_priv.h \
    %reldir%/nn/recurrent.c \
    %reldir%/nn/recurrent_cell.c \
    %reldir%/nn/recurrent_grad.c \
    %reldir%/nn/recurrent_priv.h \
    %reldir%/nn/grid_sample.c \
    %reldir%/nn/norm.c \
    %reldir%/nn/softmax.c
%canon_reldir%_nn_la_CFLAGS = $(AM_CFLAGS) $(BLAS_CFLAGS)
%canon_reldir%_nn_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_nn_la_LIBADD = %reldir%/util/libopu.la $(BLAS_LIBS) -lm

ops_LTLIBRARIES += %reldir%/loss.la
%canon_reldir%_loss_la_SOURCES = \
    %reldir%/loss/loss.c \
    %reldir%/loss/loss_priv.h \
    %reldir%/loss/xent.c \
    %reldir%/loss/pointwise.c
%canon_reldir%_loss_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_loss_la_LIBADD = %reldir%/util/libopu.la -lm

ops_LTLIBRARIES += %reldir%/popc.la
%canon_reldir%_popc_la_SOURCES = \
    %reldir%/popc/popc.c %reldir%/popc/popc_priv.h %reldir%/popc/ctc_beam.c
%canon_reldir%_popc_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_popc_la_LIBADD = %reldir%/util/libopu.la -lm
