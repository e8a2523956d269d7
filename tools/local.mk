# tools/local.mk - the popc command line (one file per subcommand group).
bin_PROGRAMS += %reldir%/popc
%canon_reldir%_popc_SOURCES = \
    %reldir%/popc.c \
    %reldir%/cli.c %reldir%/cli.h \
    %reldir%/json.c \
    %reldir%/cmd_train.c \
    %reldir%/cmd_infer.c \
    %reldir%/cmd_info.c \
    %reldir%/cmd_compile.c \
    %reldir%/cmd_run.c \
    %reldir%/cmd_inspect.c
%canon_reldir%_popc_LDADD = libpopc.la
