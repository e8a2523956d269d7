# onnx/ - the ONNX layer: libpopc-onnx reads and writes ONNX models with
# protobuf-c. It sits above libpopc (public API only); libpopc itself does
# not depend on protobuf-c.
lib_LTLIBRARIES += libpopc-onnx.la
libpopc_onnx_la_SOURCES = \
    %reldir%/onnx_priv.h \
    %reldir%/proto.c \
    %reldir%/lean.c \
    %reldir%/wire.c \
    %reldir%/run_format.c \
    %reldir%/tensor.c \
    %reldir%/history.c \
    %reldir%/upgrade.c \
    %reldir%/import.c \
    %reldir%/compile_time.c \
    %reldir%/subgraph.c \
    %reldir%/import_attrs.c \
    %reldir%/fold.c \
    %reldir%/sequence.c \
    %reldir%/export.c
nodist_libpopc_onnx_la_SOURCES = onnx/onnx.pb-c.c onnx/onnx.pb-c.h
libpopc_onnx_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/onnx/include \
    -I$(top_builddir)/onnx
libpopc_onnx_la_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
libpopc_onnx_la_LIBADD = libpopc.la $(PROTOBUF_C_LIBS)
libpopc_onnx_la_LDFLAGS = -version-info $(POPC_LT_VERSION) -no-undefined

pkginclude_HEADERS += %reldir%/include/popc/onnx.h
EXTRA_DIST += %reldir%/README.md %reldir%/gen_history.py

# The reader is generated from onnx.proto at build time; the copy gets a
# fixed name so the generated #include lines do not depend on the path.
BUILT_SOURCES += onnx/onnx.pb-c.c onnx/onnx.pb-c.h
CLEANFILES += onnx/onnx.pb-c.c onnx/onnx.pb-c.h onnx/onnx.proto
onnx/onnx.pb-c.h: onnx/onnx.pb-c.c
onnx/onnx.pb-c.c: $(ONNX_PROTO)
	$(AM_V_GEN)$(MKDIR_P) onnx && cp $(ONNX_PROTO) onnx/onnx.proto && \
	  chmod u+w onnx/onnx.proto && \
	  cd onnx && $(PROTOC_C) --c_out=. onnx.proto
