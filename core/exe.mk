# core/exe.mk - exported executables (save, load, compileAndExport,
# loadExecutable, inspect), graph serialization and the executable cache.
libpopc_la_SOURCES += \
    %reldir%/exe/executable_priv.h \
    %reldir%/exe/exe_bytes.c \
    %reldir%/exe/serialize.c \
    %reldir%/exe/executable.c \
    %reldir%/exe/exe_sections.c \
    %reldir%/exe/exe_load.c \
    %reldir%/exe/exe_describe.c \
    %reldir%/exe/exe_cache.c

pkginclude_HEADERS += %reldir%/include/popc/executable.h

EXTRA_DIST += docs/executable-format.md
