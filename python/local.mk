# python/ - the Python package popc (popc.poptorch: PopTorch's Python API
# over libpopc through ctypes; docs/python.md). Installed under pythondir.
EXTRA_DIST += %reldir%/popc/_paths.py.in
# its chapter, and the Fashion-MNIST example written against it
dist_popcdoc_DATA += docs/python.md
dist_examples_DATA += examples/fashion_mnist.py

if HAVE_PYTHON
popcpydir = $(pythondir)/popc
popcpy_PYTHON = %reldir%/popc/__init__.py %reldir%/popc/_lib.py
nodist_popcpy_PYTHON = %reldir%/popc/_paths.py
poptorchpydir = $(pythondir)/popc/poptorch
poptorchpy_PYTHON = %reldir%/popc/poptorch/__init__.py \
    %reldir%/popc/poptorch/_blocks.py %reldir%/popc/poptorch/_dataloader.py \
    %reldir%/popc/poptorch/_errors.py %reldir%/popc/poptorch/_executor.py \
    %reldir%/popc/poptorch/_marks.py %reldir%/popc/poptorch/_ops.py \
    %reldir%/popc/poptorch/_options.py %reldir%/popc/poptorch/_sync.py \
    %reldir%/popc/poptorch/enums.py %reldir%/popc/poptorch/optim.py \
    %reldir%/popc/poptorch/profiling.py

# where make install puts libpopc, for the installed package to load
%reldir%/popc/_paths.py: $(srcdir)/%reldir%/popc/_paths.py.in Makefile
	$(AM_V_GEN)$(MKDIR_P) $(@D) && \
	sed -e 's|POPC_LIBDIR|$(libdir)|' -e 's|POPC_SOVERSION|$(POPC_SOVERSION)|' \
	    $(srcdir)/%reldir%/popc/_paths.py.in >$@.tmp && mv $@.tmp $@
CLEANFILES += %reldir%/popc/_paths.py
endif
