# optread/local.mk - what a program reads off a set of options
# (popc/options.h): whether they hold together as a compile will require
# (popc_options_validate), the output mode a model will use and one IPU's
# available memory proportion. A layer of libpopc right above the core,
# on the public option getters; the core never calls it.
libpopc_la_SOURCES += %reldir%/options_validate.c %reldir%/options_derived.c

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
