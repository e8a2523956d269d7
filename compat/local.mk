# compat/local.mk - plugins built for an older plugin ABI (2: popc 0.2 and
# 0.3) loading in this one: a layer of libpopc right above the core, which
# the plugin loader reaches through core/layer/abi_compat.h
# (popci_layer_abi_compat, defined in lib/layers.c).
libpopc_la_SOURCES += %reldir%/abi2.h %reldir%/abi2.c

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
