# tests/runtime.mk - plans, the executor and the model wrapper, on the cpu
# backend (references from tests/ref/gen_runtime.py in tests/ref/runtime/),
# and half precision (check_half, check_half_partials).
runtime_test_plugins = backends/cpu.la backends/ipumodel.la \
    $(ops_LTLIBRARIES) optim/sgd.la

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_model_infer %reldir%/check_model_train \
    %reldir%/check_model_pipeline %reldir%/check_half \
    %reldir%/check_half_partials
TESTS += %reldir%/check_model_infer %reldir%/check_model_train \
    %reldir%/check_model_pipeline %reldir%/check_half \
    %reldir%/check_half_partials
endif

%canon_reldir%_check_model_infer_SOURCES = %reldir%/check_model_infer.c
%canon_reldir%_check_model_infer_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_model_infer_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_model_infer_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)

%canon_reldir%_check_model_train_SOURCES = %reldir%/check_model_train.c
%canon_reldir%_check_model_train_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_model_train_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_model_train_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)

%canon_reldir%_check_model_pipeline_SOURCES = %reldir%/check_model_pipeline.c
%canon_reldir%_check_model_pipeline_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_model_pipeline_LDADD = libpopc.la $(CHECK_LIBS)
%canon_reldir%_check_model_pipeline_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)

%canon_reldir%_check_half_SOURCES = %reldir%/check_half.c \
    %reldir%/minijson.c %reldir%/minijson.h %reldir%/profile_files.c \
    %reldir%/profile_files.h
%canon_reldir%_check_half_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_half_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_half_DEPENDENCIES = libpopc.la $(runtime_test_plugins)

%canon_reldir%_check_half_partials_SOURCES = %reldir%/check_half_partials.c
%canon_reldir%_check_half_partials_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_half_partials_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_half_partials_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)

EXTRA_DIST += %reldir%/ref/gen_runtime.py %reldir%/ref/runtime

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_attach
TESTS += %reldir%/check_attach
endif
%canon_reldir%_check_attach_SOURCES = %reldir%/check_attach.c
%canon_reldir%_check_attach_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_attach_LDADD = libpopc.la $(CHECK_LIBS)
%canon_reldir%_check_attach_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins) backends/offline.la
