# core/options.mk - PopTorch's Options (table, values, PopTorch's
# loadFromFile grammar, POPC_DEFAULT_OPTIONS JSON, INI [options]) and the
# libini_config wrapper used by every INI reader.
libpopc_la_SOURCES += \
    %reldir%/config.c %reldir%/config_priv.h %reldir%/utf8.c \
    %reldir%/options.c %reldir%/options_priv.h \
    %reldir%/options_table.c %reldir%/options_list.h \
    %reldir%/options_call.c \
    %reldir%/options_file.c \
    %reldir%/options_json.c \
    %reldir%/options_ini.c
