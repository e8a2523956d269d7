# ops/util.mk - the op utility library (ops/util/, prefix opu_): built once
# as a convenience library and linked into each op plugin, whose hidden
# symbols keep every plugin's copy its own. float16 conversion, dims text
# and error wording come from the host's services (popc/services.h), so
# no plugin compiles core sources. It lives in ops/util/, not ops/, where
# the loader would take it for a plugin.
noinst_LTLIBRARIES += %reldir%/util/libopu.la
%canon_reldir%_util_libopu_la_SOURCES = \
    %reldir%/util/oputil.h \
    %reldir%/util/oputil.c \
    %reldir%/util/host.h \
    %reldir%/util/host.c \
    %reldir%/util/half.h \
    %reldir%/util/dims.c \
    %reldir%/util/errors.c \
    %reldir%/util/kernel.c \
    %reldir%/util/grad.c \
    %reldir%/util/elem.h \
    %reldir%/util/sums.h \
    %reldir%/util/sums.c
