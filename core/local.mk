# libpopc: one fragment per area appends its sources (see *.mk here).
lib_LTLIBRARIES += libpopc.la
libpopc_la_SOURCES = \
    %reldir%/error.c \
    %reldir%/version.c \
    %reldir%/host.c %reldir%/host_services.c %reldir%/host_priv.h \
    %reldir%/op_errors.c %reldir%/op_errors.h \
    %reldir%/kernel_call.c %reldir%/backend_option.c \
    %reldir%/backend_option.h \
    %reldir%/layer/abi_compat.h \
    %reldir%/log.c %reldir%/log_priv.h \
    %reldir%/limits.c
libpopc_la_CFLAGS  = $(AM_CFLAGS) $(ZLIB_CFLAGS)
libpopc_la_LIBADD  = $(LIBLTDL) $(ZLIB_LIBS) -lm
libpopc_la_LDFLAGS = -version-info $(POPC_LT_VERSION) -no-undefined

pkginclude_HEADERS += \
    %reldir%/include/popc/version.h \
    %reldir%/include/popc/status.h \
    %reldir%/include/popc/fault.h \
    %reldir%/include/popc/limits.h \
    %reldir%/include/popc/types.h \
    %reldir%/include/popc/tensor.h \
    %reldir%/include/popc/log.h \
    %reldir%/include/popc/plugin.h \
    %reldir%/include/popc/kernel.h \
    %reldir%/include/popc/services.h \
    %reldir%/include/popc/attrs.h \
    %reldir%/include/popc/registry.h \
    %reldir%/include/popc/graph.h \
    %reldir%/include/popc/options.h \
    %reldir%/include/popc/optimizer.h \
    %reldir%/include/popc/model.h

include %reldir%/base.mk
include %reldir%/graph.mk
include %reldir%/options.mk
include %reldir%/optimizer.mk
include %reldir%/runtime.mk
include %reldir%/extend.mk

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
