# tests/cli.mk - the popc command line (tests/test_cli.sh): exit codes,
# --set, --json, plugins, options, a small training run on a synthetic
# dataset (written by make_idx) and the SIGKILL checkpoint/resume check.
check_PROGRAMS += %reldir%/make_idx
%canon_reldir%_make_idx_SOURCES = %reldir%/make_idx.c \
    %reldir%/synth.c %reldir%/synth.h
%canon_reldir%_make_idx_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
%canon_reldir%_make_idx_LDADD = $(ZLIB_LIBS)

TESTS += %reldir%/test_cli.sh
EXTRA_DIST += %reldir%/test_cli.sh

# bad values exit 2 and list what is valid; file errors name the file
TESTS += %reldir%/test_cli_errors.sh
EXTRA_DIST += %reldir%/test_cli_errors.sh

# README.md's and docs/'s C programs compile, and the C sections run as
# written, against a staged install; every document is installed
TESTS += %reldir%/test_doc_snippets.sh
EXTRA_DIST += %reldir%/test_doc_snippets.sh

# enableProfiling's forms print where each model's profile is
TESTS += %reldir%/test_cli_profile.sh
EXTRA_DIST += %reldir%/test_cli_profile.sh

# the manual pages: groff -man -ww, every command and run-file section
TESTS += %reldir%/test_man.sh
EXTRA_DIST += %reldir%/test_man.sh

# AutoStage SameAsIpu refuses a run file whose stage ids go back
TESTS += %reldir%/test_stage_order_cli.sh
EXTRA_DIST += %reldir%/test_stage_order_cli.sh
AM_TESTS_ENVIRONMENT += \
    POPC='$(abs_top_builddir)/tools/popc'; export POPC; \
    MAKE_IDX='$(abs_top_builddir)/tests/make_idx'; export MAKE_IDX;

# distributed training over Open MPI (tests/test_distributed.sh): parity of
# N ranks with one process, the CLI, resume, and faults
check_PROGRAMS += %reldir%/dist_train
%canon_reldir%_dist_train_SOURCES = %reldir%/dist_train.c
%canon_reldir%_dist_train_LDADD = libpopc.la
EXTRA_DIST += %reldir%/test_distributed.sh %reldir%/test_distributed_batches.sh
if HAVE_MPI
TESTS += %reldir%/test_distributed.sh
# the README's promise through popc train: N ranks x R replicas == one
# process with N x R replicas, bit for bit
TESTS += %reldir%/test_distributed_batches.sh
AM_TESTS_ENVIRONMENT += \
    DIST_TRAIN='$(abs_top_builddir)/tests/dist_train'; export DIST_TRAIN; \
    MPIRUN='$(MPIRUN)'; export MPIRUN;
endif
