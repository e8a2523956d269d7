# fileio/local.mk - writing files atomically (a temporary file, fsync,
# rename) and cleaning up what dead processes left: a layer of libpopc
# right above the core, used by every layer that writes files (data/, run/,
# exe/, profile/, onnx/). The write faults tests arm stay in the core
# (core/fault.c), reached through core/layer/fault.h.
libpopc_la_SOURCES += %reldir%/atomic_file.h %reldir%/atomic_file.c

pkginclude_HEADERS += %reldir%/include/popc/file.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
