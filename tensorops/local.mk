# tensorops/local.mk - tensor casts, reshapes and comparisons
# (popc_tensor_cast, popc_tensor_reshape, popc_tensor_equal,
# popc_tensor_max_abs_diff; declared in popc/tensor.h): a layer of libpopc
# right above the core, on its public tensor API and core/layer/shape.h.
# opt/, data/ and onnx/ use it; the core does not.
libpopc_la_SOURCES += \
    %reldir%/tensor_cast.c %reldir%/tensor_reshape.c \
    %reldir%/tensor_compare.c

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
