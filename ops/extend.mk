# ops/extend.mk - plugins host (popc::HostOp: CPU ops calling the model's
# host callbacks), ffi (popc::ForeignCall: C functions through libffi) and
# flow (If, Loop, Scan: ONNX control flow running subgraph attributes).
ops_LTLIBRARIES += %reldir%/host.la
%canon_reldir%_host_la_SOURCES = %reldir%/host/host.c
%canon_reldir%_host_la_LDFLAGS = $(POPC_MODULE_FLAGS)

ops_LTLIBRARIES += %reldir%/ffi.la
%canon_reldir%_ffi_la_SOURCES = %reldir%/ffi/ffi.c \
    %reldir%/ffi/sig.c %reldir%/ffi/sig.h
%canon_reldir%_ffi_la_CFLAGS = $(AM_CFLAGS) $(FFI_CFLAGS)
%canon_reldir%_ffi_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_ffi_la_LIBADD = $(FFI_LIBS) -lpthread

# flow: ONNX control flow (If, Loop, Scan) running subgraph attributes
ops_LTLIBRARIES += %reldir%/flow.la
%canon_reldir%_flow_la_SOURCES = %reldir%/flow/flow.c %reldir%/flow/if.c \
    %reldir%/flow/loop.c %reldir%/flow/scan.c %reldir%/flow/grad.c \
    %reldir%/flow/call.c %reldir%/flow/cost.c \
    %reldir%/flow/flow_priv.h
%canon_reldir%_flow_la_LDFLAGS = $(POPC_MODULE_FLAGS)
