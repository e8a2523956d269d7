# extend/local.mk - graph builders for plugin ops, a layer above the core:
# poptorch.custom_op, CPU ops (popc::HostOp) and foreign C calls
# (popc::ForeignCall), declared in popc/custom.h. The callbacks of CPU ops
# and the undo of failed runs stay in the core's executor (core/extend/).
libpopc_la_SOURCES += %reldir%/custom_op.c

pkginclude_HEADERS += %reldir%/include/popc/custom.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
