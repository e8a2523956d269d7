# lib/local.mk - the assembly of libpopc: the table of the layers that
# follow every model (lib/layers.c), above every layer it names.
libpopc_la_SOURCES += %reldir%/layers.c %reldir%/options_env.c
EXTRA_DIST += %reldir%/README.md
