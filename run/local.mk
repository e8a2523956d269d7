# run/local.mk - INI-configured jobs (popc/run.h): the INI reader (the one
# user of libini_config) and INI [options] sections, the run file, its model
# layers (custom and foreign included), data, training loop, weights and
# checkpoints; the top layer of libpopc, which the CLI drives.
libpopc_la_SOURCES += \
    %reldir%/run_config.c %reldir%/run_config_priv.h \
    %reldir%/run_options_ini.c \
    %reldir%/run_priv.h \
    %reldir%/run_ini.c \
    %reldir%/run_model.c \
    %reldir%/run_format.c \
    %reldir%/run_data.c \
    %reldir%/run_weights.c \
    %reldir%/run_lock.c \
    %reldir%/run_train.c \
    %reldir%/run_custom.c %reldir%/run_custom_priv.h

# libini_config is this layer's: libpopc links it for run_config.c alone
libpopc_la_CFLAGS += $(INI_CFLAGS)
libpopc_la_LIBADD += $(INI_LIBS)

pkginclude_HEADERS += %reldir%/include/popc/run.h %reldir%/include/popc/popc.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
