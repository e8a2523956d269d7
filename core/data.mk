# core/data.mk - datasets, the data loader and INI-configured runs.
libpopc_la_SOURCES += \
    %reldir%/data_priv.h \
    %reldir%/dataset.c \
    %reldir%/dataset_idx.c \
    %reldir%/dataset_csv.c \
    %reldir%/data_sampler.c \
    %reldir%/dataloader.c \
    %reldir%/dataloader_async.c

pkginclude_HEADERS += \
    %reldir%/include/popc/data.h

# INI-configured runs
libpopc_la_SOURCES += \
    %reldir%/run_priv.h \
    %reldir%/run_ini.c \
    %reldir%/run_model.c \
    %reldir%/run_format.c \
    %reldir%/run_data.c \
    %reldir%/run_weights.c \
    %reldir%/run_train.c

pkginclude_HEADERS += \
    %reldir%/include/popc/run.h
