# random/local.mk - popc/random.h, the public face of the core's seeded
# generator (core/layer/rng.h) for code that builds graphs: a layer of
# libpopc right above the core; helpers/ initialises weights with it, the
# core never calls it.
libpopc_la_SOURCES += %reldir%/rng.c

pkginclude_HEADERS += %reldir%/include/popc/random.h

# the layer's guide (docs/architecture.md links to it)
EXTRA_DIST += %reldir%/README.md
