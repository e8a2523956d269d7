# ops/extend.mk - plugins host (popc::HostOp: CPU ops calling the model's
# host callbacks) and ffi (popc::ForeignCall: C functions through libffi).
ops_LTLIBRARIES += %reldir%/host.la
%canon_reldir%_host_la_SOURCES = %reldir%/host/host.c
%canon_reldir%_host_la_LDFLAGS = $(POPC_MODULE_FLAGS)

ops_LTLIBRARIES += %reldir%/ffi.la
%canon_reldir%_ffi_la_SOURCES = %reldir%/ffi/ffi.c \
    %reldir%/ffi/sig.c %reldir%/ffi/sig.h
%canon_reldir%_ffi_la_CFLAGS = $(AM_CFLAGS) $(FFI_CFLAGS)
%canon_reldir%_ffi_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_ffi_la_LIBADD = $(FFI_LIBS) -lpthread
