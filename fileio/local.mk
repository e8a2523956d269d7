# fileio/local.mk - writing files atomically (a temporary file, fsync,
# rename) and cleaning up what dead processes left: a layer of libpopc
# right above the core, used by every layer that writes files (data/, run/,
# exe/, profile/, onnx/), and the write and fsync faults tests arm
# (write_fault.c; the allocation faults are the core's, core/fault.c).
libpopc_la_SOURCES += %reldir%/atomic_file.h %reldir%/atomic_file.c \
    %reldir%/write_fault.h %reldir%/write_fault.c

pkginclude_HEADERS += %reldir%/include/popc/file.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
