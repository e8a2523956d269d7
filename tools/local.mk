# tools/local.mk - the popc command line (one file per subcommand group).
bin_PROGRAMS += %reldir%/popc
%canon_reldir%_popc_SOURCES = \
    %reldir%/popc.c \
    %reldir%/cli.c %reldir%/cli.h \
    %reldir%/json.c \
    %reldir%/cmd_train.c \
    %reldir%/cmd_infer.c \
    %reldir%/cmd_infer_onnx.c \
    %reldir%/cmd_info.c \
    %reldir%/cmd_compile.c \
    %reldir%/cmd_run.c \
    %reldir%/cmd_inspect.c \
    %reldir%/cmd_launch.c
%canon_reldir%_popc_LDADD = libpopc-onnx.la libpopc.la
%canon_reldir%_popc_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/onnx/include

# Static builds cannot dlopen plugins: link the in-tree ones into the
# program and let the registry find them through libtool's preload table.
if !ENABLE_SHARED
%canon_reldir%_popc_LDADD += $(LIBLTDL) \
    -dlopen ops/math.la -dlopen ops/tensor.la -dlopen ops/nn.la \
    -dlopen ops/loss.la -dlopen ops/popc.la -dlopen ops/host.la \
    -dlopen ops/ffi.la -dlopen optim/sgd.la -dlopen optim/adam.la \
    -dlopen optim/rmsprop.la -dlopen optim/lamb.la \
    -dlopen backends/cpu.la -dlopen backends/ipumodel.la \
    -dlopen backends/offline.la
if HAVE_MPI
%canon_reldir%_popc_LDADD += -dlopen collectives/mpi.la
endif
%canon_reldir%_popc_LDFLAGS = -dlopen force
%canon_reldir%_popc_CPPFLAGS += -DPOPC_PRELOAD_PLUGINS
endif
