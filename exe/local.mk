# exe/local.mk - exported executables (save, load, compileAndExport,
# loadExecutable, inspect) and the executable cache: a layer above the
# core, which follows a model's compiles through its hooks.
libpopc_la_SOURCES += \
    %reldir%/executable_priv.h \
    %reldir%/crc32_fast.h %reldir%/crc32_fast.c \
    %reldir%/executable.c \
    %reldir%/exe_sections.c \
    %reldir%/exe_load.c \
    %reldir%/exe_describe.c \
    %reldir%/exe_cache.c

pkginclude_HEADERS += %reldir%/include/popc/executable.h

EXTRA_DIST += docs/executable-format.md

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
