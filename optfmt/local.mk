# optfmt/local.mk - the text forms of PopTorch's options: loadFromFile
# files (popc_options_load_file), JSON objects (popc_options_load_json and
# POPC_DEFAULT_OPTIONS), the method calls both are made of and the
# environment's options (POPC_THREADS, ...); a layer of
# libpopc right above the core, whose option table they call.
libpopc_la_SOURCES += \
    %reldir%/optfmt.h %reldir%/optfmt_priv.h \
    %reldir%/options_call.c \
    %reldir%/options_file.c \
    %reldir%/options_json.c \
    %reldir%/options_env.c \
    %reldir%/utf8.c

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
