# core/options.mk - PopTorch's Options: the table, typed values, their
# validation and the environment; the "did you mean" every reader of names
# uses. The text forms are read above the core (optfmt/, and run/ for INI).
libpopc_la_SOURCES += \
    %reldir%/options/suggest.c %reldir%/layer/suggest.h \
    %reldir%/options/options.c %reldir%/options/options_priv.h \
    %reldir%/options/options_table.c %reldir%/layer/options_list.h \
    %reldir%/layer/options.h %reldir%/layer/options_table.h
