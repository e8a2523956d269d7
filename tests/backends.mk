# tests/backends.mk - the ipumodel and offline backends: parity with the cpu
# oracle over every op family and the layers.h models, the IPU model's
# memory map, threads, report and cycles, TensorLocations on the IPU model
# (check_locations), the device options useIpuId, syncPattern and
# convolution dithering (check_ipu_device), and the offline target.
backend_test_deps = libpopc.la backends/cpu.la backends/ipumodel.la \
    backends/offline.la ops/math.la ops/tensor.la ops/nn.la ops/loss.la \
    ops/popc.la optim/sgd.la

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_backend_parity %reldir%/check_ipumodel \
    %reldir%/check_offline %reldir%/check_locations \
    %reldir%/check_ipu_device
TESTS += %reldir%/check_backend_parity %reldir%/check_ipumodel \
    %reldir%/check_offline %reldir%/check_locations \
    %reldir%/check_ipu_device
endif

%canon_reldir%_check_backend_parity_SOURCES = %reldir%/check_backend_parity.c \
    %reldir%/parity_cases.c %reldir%/parity_cases.h
%canon_reldir%_check_backend_parity_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_backend_parity_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_backend_parity_DEPENDENCIES = $(backend_test_deps)

%canon_reldir%_check_ipumodel_SOURCES = %reldir%/check_ipumodel.c
%canon_reldir%_check_ipumodel_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_ipumodel_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_ipumodel_DEPENDENCIES = $(backend_test_deps)

%canon_reldir%_check_locations_SOURCES = %reldir%/check_locations.c \
    %reldir%/minijson.c %reldir%/minijson.h %reldir%/profile_model.c \
    %reldir%/profile_model.h
%canon_reldir%_check_locations_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_locations_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_locations_DEPENDENCIES = $(backend_test_deps) \
    optim/adam.la

%canon_reldir%_check_ipu_device_SOURCES = %reldir%/check_ipu_device.c \
    %reldir%/minijson.c %reldir%/minijson.h %reldir%/profile_files.c \
    %reldir%/profile_files.h %reldir%/profile_model.c \
    %reldir%/profile_model.h
%canon_reldir%_check_ipu_device_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_ipu_device_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_ipu_device_DEPENDENCIES = $(backend_test_deps)

%canon_reldir%_check_offline_SOURCES = %reldir%/check_offline.c
%canon_reldir%_check_offline_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_offline_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_offline_DEPENDENCIES = $(backend_test_deps)
