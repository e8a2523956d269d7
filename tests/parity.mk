# tests/parity.mk - whole-model parity with PyTorch and the C examples:
# the example MLP's and CNN's gradients against tests/ref/model_grads/
# (written by tests/ref/gen_model_grads.py), and a smoke run of each
# program of examples/ (tests/test_examples.sh).
parity_test_deps = libpopc.la backends/cpu.la backends/ipumodel.la \
    ops/math.la ops/tensor.la ops/nn.la ops/loss.la ops/popc.la \
    optim/sgd.la optim/adam.la

if HAVE_CHECK
check_PROGRAMS += %reldir%/check_model_grads
TESTS += %reldir%/check_model_grads
endif

%canon_reldir%_check_model_grads_SOURCES = %reldir%/check_model_grads.c
%canon_reldir%_check_model_grads_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_model_grads_LDADD = libpopc.la $(CHECK_LIBS) -lm
%canon_reldir%_check_model_grads_DEPENDENCIES = $(parity_test_deps)

EXTRA_DIST += %reldir%/ref/gen_model_grads.py %reldir%/ref/model_grads

# needs tools/popc and examples/ (built by `all`, which check runs first)
TESTS += %reldir%/test_examples.sh
EXTRA_DIST += %reldir%/test_examples.sh
