# core/base.mk - the counted allocator and fault switches, tensors, the plugin registry and loader.
libpopc_la_SOURCES += \
    %reldir%/fault.c %reldir%/alloc_priv.h %reldir%/layer/alloc.h \
    %reldir%/tensor.c %reldir%/tensor_priv.h %reldir%/layer/shape.h \
    %reldir%/mkdir.c %reldir%/layer/mkdir.h \
    %reldir%/layer/model_state.h \
    %reldir%/registry.c %reldir%/loader.c %reldir%/registry_priv.h %reldir%/layer/registry.h
