# optim/local.mk - optimizer plugins, one module each (file basename =
# plugin name). The step loops are written to vectorize: -ftree-vectorize
# turns that on at -O2 as well, -fno-math-errno lets sqrtf inline.
optim_LTLIBRARIES += %reldir%/sgd.la %reldir%/adam.la %reldir%/rmsprop.la \
    %reldir%/lamb.la
OPTIM_PLUGIN_CFLAGS = $(AM_CFLAGS) -ftree-vectorize -fno-math-errno

%canon_reldir%_sgd_la_SOURCES = %reldir%/sgd.c %reldir%/optim_util.h
%canon_reldir%_sgd_la_CFLAGS = $(OPTIM_PLUGIN_CFLAGS)
%canon_reldir%_sgd_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_sgd_la_LIBADD = -lm

%canon_reldir%_adam_la_SOURCES = %reldir%/adam.c %reldir%/optim_util.h
%canon_reldir%_adam_la_CFLAGS = $(OPTIM_PLUGIN_CFLAGS)
%canon_reldir%_adam_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_adam_la_LIBADD = -lm

%canon_reldir%_rmsprop_la_SOURCES = %reldir%/rmsprop.c %reldir%/optim_util.h
%canon_reldir%_rmsprop_la_CFLAGS = $(OPTIM_PLUGIN_CFLAGS)
%canon_reldir%_rmsprop_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_rmsprop_la_LIBADD = -lm

%canon_reldir%_lamb_la_SOURCES = %reldir%/lamb.c %reldir%/optim_util.h
%canon_reldir%_lamb_la_CFLAGS = $(OPTIM_PLUGIN_CFLAGS)
%canon_reldir%_lamb_la_LDFLAGS = $(POPC_MODULE_FLAGS)
%canon_reldir%_lamb_la_LIBADD = -lm
