# data/local.mk - NumPy .npy files (popc_npy_*, declared in popc/tensor.h),
# datasets (IDX, NumPy, CSV), samplers and the data loader (popc/data.h):
# PopTorch's DataLoader and AsynchronousDataAccessor, a layer of libpopc
# above the core.
libpopc_la_SOURCES += \
    %reldir%/data_priv.h \
    %reldir%/npy.c \
    %reldir%/dataset.c \
    %reldir%/dataset_idx.c \
    %reldir%/dataset_csv.c \
    %reldir%/data_sampler.c \
    %reldir%/dataloader.c \
    %reldir%/dataloader_async.c

pkginclude_HEADERS += %reldir%/include/popc/data.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
