# core/exe.mk - exported executables (save, load, compileAndExport,
# loadExecutable, inspect), graph serialization and the executable cache.
libpopc_la_SOURCES += \
    %reldir%/executable_priv.h \
    %reldir%/exe_bytes.c \
    %reldir%/serialize.c \
    %reldir%/executable.c \
    %reldir%/exe_sections.c \
    %reldir%/exe_load.c \
    %reldir%/exe_describe.c \
    %reldir%/exe_cache.c

pkginclude_HEADERS += %reldir%/include/popc/executable.h

EXTRA_DIST += docs/executable-format.md
