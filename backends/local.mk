# backends/local.mk - backend plugins

# cpu: the reference interpreter (the oracle for the other backends)
backends_LTLIBRARIES += %reldir%/cpu.la
%canon_reldir%_cpu_la_SOURCES = %reldir%/cpu/cpu.c %reldir%/common/fpx.h \
    %reldir%/common/services.h
%canon_reldir%_cpu_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_cpu_la_CFLAGS = $(AM_CFLAGS) $(BLAS_CFLAGS)
%canon_reldir%_cpu_la_LIBADD = $(BLAS_LIBS) -lpthread

# the IPU device model shared by ipumodel and offline (plugins must not link
# each other, so both modules compile these sources)
IPUM_COMMON_SOURCES = %reldir%/common/tilemap.c %reldir%/common/tilemap.h \
    %reldir%/common/report.c %reldir%/common/devices.c \
    %reldir%/common/multiconv.c %reldir%/common/fpx.h \
    %reldir%/common/services.h \
    %reldir%/ipumodel/cost.c

# ipumodel: threaded IPU model (worker pool, tile memory, cycle estimates)
backends_LTLIBRARIES += %reldir%/ipumodel.la
%canon_reldir%_ipumodel_la_SOURCES = %reldir%/ipumodel/ipumodel.c \
    %reldir%/ipumodel/pool.c %reldir%/ipumodel/pool.h \
    %reldir%/ipumodel/calibrate.c %reldir%/ipumodel/calibrate.h \
    $(IPUM_COMMON_SOURCES)
%canon_reldir%_ipumodel_la_CFLAGS = $(AM_CFLAGS) $(BLAS_CFLAGS)
%canon_reldir%_ipumodel_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_ipumodel_la_LIBADD = $(BLAS_LIBS) -lpthread

# offline: compile-only target for IPU version 1, 2 or 21
backends_LTLIBRARIES += %reldir%/offline.la
%canon_reldir%_offline_la_SOURCES = %reldir%/offline/offline.c \
    $(IPUM_COMMON_SOURCES)
%canon_reldir%_offline_la_LDFLAGS = $(POPC_MODULE_FLAGS)
