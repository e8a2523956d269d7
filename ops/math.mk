# ops/math.mk - plugins math (elementwise, activations) and tensor (shape
# ops, reductions), both on the op utility library (ops/util.mk).
ops_LTLIBRARIES += %reldir%/math.la
%canon_reldir%_math_la_SOURCES = \
    %reldir%/math/math.c \
    %reldir%/math/mathops.h \
    %reldir%/math/ew.c \
    %reldir%/math/arith.c \
    %reldir%/math/act.c \
    %reldir%/math/misc.c \
    %reldir%/math/minmax.c \
    %reldir%/math/wide.c \
    %reldir%/math/wide_grad.c \
    %reldir%/math/quant.c \
    %reldir%/math/train_ops.c
%canon_reldir%_math_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_math_la_LIBADD = %reldir%/util/libopu.la -lm

ops_LTLIBRARIES += %reldir%/tensor.la
%canon_reldir%_tensor_la_SOURCES = \
    %reldir%/tensor/tensor.c \
    %reldir%/tensor/tensorops.h \
    %reldir%/tensor/shape.c \
    %reldir%/tensor/move.c \
    %reldir%/tensor/slice.c \
    %reldir%/tensor/reduce.c \
    %reldir%/tensor/reduce_wide.c \
    %reldir%/tensor/grads.c \
    %reldir%/tensor/linalg_grad.c \
    %reldir%/tensor/generate.c \
    %reldir%/tensor/index.c \
    %reldir%/tensor/arrange.c \
    %reldir%/tensor/linalg.c
%canon_reldir%_tensor_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_tensor_la_LIBADD = %reldir%/util/libopu.la -lm
