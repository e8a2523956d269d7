# tests/python.mk - popc.poptorch, PopTorch's Python API (python/): each
# tests/python/test_*.py runs under tests/python/run.sh with Debian's
# python3, torch and numpy, against the build tree's libpopc.
TEST_EXTENSIONS = .py
PY_LOG_COMPILER = $(SHELL) $(srcdir)/%reldir%/python/run.sh
AM_TESTS_ENVIRONMENT += POPC_PYTHON='$(PYTHON)'; export POPC_PYTHON;
POPC_PYTHON_TESTS = %reldir%/python/test_tutorial.py \
    %reldir%/python/test_training.py %reldir%/python/test_options.py \
    %reldir%/python/test_optim.py %reldir%/python/test_lifecycle.py \
    %reldir%/python/test_blocks.py %reldir%/python/test_helpers.py \
    %reldir%/python/test_dataloader.py %reldir%/python/test_example.py
TESTS += $(POPC_PYTHON_TESTS)
EXTRA_DIST += $(POPC_PYTHON_TESTS) %reldir%/python/run.sh \
    %reldir%/python/common.py %reldir%/python/installed.py
# the custom-op test loads the cube example plugin
%reldir%/python/test_helpers.log: $(extend_oot_plugins)
