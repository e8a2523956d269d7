# tests/helpers.mk - PopTorch's op helpers (popc/helpers.h): for_loop
# against torch (tests/ref/gen_helpers.py in tests/ref/helpers/), dynamic
# slices and updates against hand-derived rows and gradients.
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_helpers
TESTS += %reldir%/check_helpers
endif
%canon_reldir%_check_helpers_SOURCES = %reldir%/check_helpers.c
%canon_reldir%_check_helpers_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_helpers_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_helpers_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)
EXTRA_DIST += %reldir%/ref/gen_helpers.py %reldir%/ref/gen_ctc.py \
    %reldir%/ref/helpers %reldir%/ref/ctc

# PopXL-style modules (popc/module.h): outlined calls, bindings, autodiff,
# an explicit training program, weight copies
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_modules
TESTS += %reldir%/check_modules
endif
%canon_reldir%_check_modules_SOURCES = %reldir%/check_modules.c \
    %reldir%/minijson.c %reldir%/minijson.h %reldir%/profile_files.c \
    %reldir%/profile_files.h
%canon_reldir%_check_modules_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_modules_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_modules_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)

# poptorch.serializedMatMul: values against the plain MatMul and a double
# product, training steps, float16 sums by hand, the IPU model's report
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_serialized_matmul
TESTS += %reldir%/check_serialized_matmul
endif
%canon_reldir%_check_serialized_matmul_SOURCES = \
    %reldir%/check_serialized_matmul.c %reldir%/minijson.c \
    %reldir%/minijson.h %reldir%/profile_files.c %reldir%/profile_files.h
%canon_reldir%_check_serialized_matmul_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_serialized_matmul_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_serialized_matmul_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)

# set_overlap_for_input/output: cycles against cost.c's rule, I/O-tile
# buffers, unchanged results, refusals
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_overlap
TESTS += %reldir%/check_overlap
endif
%canon_reldir%_check_overlap_SOURCES = %reldir%/check_overlap.c \
    %reldir%/minijson.c %reldir%/minijson.h %reldir%/profile_files.c \
    %reldir%/profile_files.h
%canon_reldir%_check_overlap_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_overlap_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_overlap_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)

# poptorch.MultiConv: values, the parallel plan's tiles and cycles, the
# per-convolution settings against whole-model options, refusals
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_multiconv
TESTS += %reldir%/check_multiconv
endif
%canon_reldir%_check_multiconv_SOURCES = %reldir%/check_multiconv.c \
    %reldir%/minijson.c %reldir%/minijson.h %reldir%/profile_files.c \
    %reldir%/profile_files.h
%canon_reldir%_check_multiconv_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_multiconv_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_multiconv_DEPENDENCIES = libpopc.la \
    $(runtime_test_plugins)
