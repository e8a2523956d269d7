# core/runtime.mk - compiling a graph into a plan, the executor (PopTorch's
# batching, accumulation, replication and output modes) and the model
# wrapper, with the hooks the layers above the core follow it by.
libpopc_la_SOURCES += \
    %reldir%/runtime/plan.c %reldir%/runtime/plan_priv.h \
    %reldir%/runtime/arena.c \
    %reldir%/runtime/exec_priv.h %reldir%/runtime/executor.c %reldir%/runtime/exec_view.c %reldir%/runtime/exec_report.c %reldir%/runtime/batching.c \
    %reldir%/runtime/synthetic.c \
    %reldir%/runtime/train_step.c \
    %reldir%/runtime/model.c %reldir%/runtime/model_view.c %reldir%/runtime/model_config.c %reldir%/runtime/model_config_priv.h %reldir%/runtime/anchors.c %reldir%/runtime/anchors_priv.h %reldir%/runtime/ipu_count.c %reldir%/runtime/model_log.c %reldir%/runtime/model_weights.c %reldir%/runtime/model_priv.h %reldir%/runtime/model_state_priv.h \
    %reldir%/runtime/attach.c \
    %reldir%/runtime/hooks.c %reldir%/runtime/hooks_priv.h %reldir%/layer/hooks.h \
    %reldir%/layer/plan.h %reldir%/layer/dist.h %reldir%/layer/exec.h %reldir%/layer/exec_report.h %reldir%/layer/model.h %reldir%/layer/graph.h %reldir%/layer/strbuf.h \
    %reldir%/layer/strategy.h \
    %reldir%/runtime/trace.c

# the ABI of collectives plugins, which the distribution layer (dist/) drives
pkginclude_HEADERS += %reldir%/include/popc/collectives.h
