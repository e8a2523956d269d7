# core/options.mk - PopTorch's Options (table, values, PopTorch's
# loadFromFile grammar, POPC_DEFAULT_OPTIONS JSON, INI [options]) and the
# libini_config wrapper used by every INI reader.
libpopc_la_SOURCES += \
    %reldir%/options/config.c %reldir%/options/config_priv.h %reldir%/options/utf8.c \
    %reldir%/options/suggest.c \
    %reldir%/options/options.c %reldir%/options/options_priv.h \
    %reldir%/options/options_table.c %reldir%/options/options_list.h \
    %reldir%/options/options_call.c \
    %reldir%/options/options_file.c \
    %reldir%/options/options_json.c \
    %reldir%/options/options_ini.c
