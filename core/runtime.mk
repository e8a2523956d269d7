# core/runtime.mk - compiling a graph into a plan, the executor (PopTorch's
# batching, accumulation, replication and output modes) and the model
# wrapper.
libpopc_la_SOURCES += \
    %reldir%/plan.c %reldir%/plan_priv.h \
    %reldir%/exec_priv.h %reldir%/executor.c %reldir%/batching.c \
    %reldir%/synthetic.c \
    %reldir%/train_step.c \
    %reldir%/model.c %reldir%/locations.c %reldir%/host_io.c %reldir%/anchors.c %reldir%/anchors_priv.h %reldir%/ipu_count.c %reldir%/model_log.c %reldir%/model_weights.c %reldir%/model_priv.h \
    %reldir%/attach.c
