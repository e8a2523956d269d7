# encode/local.mk - graphs as bytes: the byte encoding (bytes.c), the
# graph (de)serializer behind popc_graph_serialize and the graph sections
# of executables (serialize.c), graphs as text (popc_graph_dump,
# graph_text.c), and the key a compile is cached and
# compared under (compile_key.c, options_hash.c). A layer of libpopc right
# above the core, which it reads through core/layer/graph_ids.h, model.h,
# optimizer.h, options_table.h and registry.h; dist/ and exe/ use it.
libpopc_la_SOURCES += \
    %reldir%/bytes.h %reldir%/bytes.c \
    %reldir%/serialize.c %reldir%/graph_text.c \
    %reldir%/compile_key.h %reldir%/compile_key.c %reldir%/options_hash.c

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
