# fuzz/ - libFuzzer harnesses for every reader a user can feed (.npy, IDX,
# CSV, INI run files, options files, executables, weights directories,
# checkpoints, ONNX models and tensors). `make check` replays the committed corpora and regressions
# through plain builds of the harnesses (fuzz/test_replay.sh); with
# `./configure CC=clang --enable-fuzz` `make fuzz` builds the fuzzers and
# scripts/fuzz runs them.
FUZZ_NAMES = npy idx csv ini options exe weights checkpoint onnx
fuzz_common = %reldir%/fuzz_util.c %reldir%/fuzz_util.h
fuzz_model = %reldir%/fuzz_model.c %reldir%/fuzz_model.h
fuzz_onnx_libs = libpopc-onnx.la libpopc.la
fuzz_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/onnx/include

check_PROGRAMS += %reldir%/replay_npy %reldir%/replay_idx \
    %reldir%/replay_csv %reldir%/replay_ini %reldir%/replay_options \
    %reldir%/replay_exe %reldir%/replay_weights %reldir%/replay_checkpoint \
    %reldir%/replay_onnx
%canon_reldir%_replay_npy_SOURCES = %reldir%/fuzz_npy.c %reldir%/replay.c $(fuzz_common)
%canon_reldir%_replay_npy_LDADD = libpopc.la
%canon_reldir%_replay_idx_SOURCES = %reldir%/fuzz_idx.c %reldir%/replay.c $(fuzz_common)
%canon_reldir%_replay_idx_LDADD = libpopc.la
%canon_reldir%_replay_csv_SOURCES = %reldir%/fuzz_csv.c %reldir%/replay.c $(fuzz_common)
%canon_reldir%_replay_csv_LDADD = libpopc.la
%canon_reldir%_replay_ini_SOURCES = %reldir%/fuzz_ini.c %reldir%/replay.c $(fuzz_common)
%canon_reldir%_replay_ini_LDADD = libpopc.la
%canon_reldir%_replay_options_SOURCES = %reldir%/fuzz_options.c %reldir%/replay.c $(fuzz_common)
%canon_reldir%_replay_options_LDADD = libpopc.la
%canon_reldir%_replay_exe_SOURCES = %reldir%/fuzz_exe.c %reldir%/replay.c $(fuzz_common)
%canon_reldir%_replay_exe_LDADD = libpopc.la
%canon_reldir%_replay_weights_SOURCES = %reldir%/fuzz_weights.c %reldir%/replay.c $(fuzz_common) $(fuzz_model)
%canon_reldir%_replay_weights_LDADD = libpopc.la
%canon_reldir%_replay_checkpoint_SOURCES = %reldir%/fuzz_checkpoint.c %reldir%/replay.c $(fuzz_common) $(fuzz_model)
%canon_reldir%_replay_checkpoint_LDADD = libpopc.la
%canon_reldir%_replay_onnx_SOURCES = %reldir%/fuzz_onnx.c %reldir%/replay.c $(fuzz_common)
%canon_reldir%_replay_onnx_CPPFLAGS = $(fuzz_cppflags)
%canon_reldir%_replay_onnx_LDADD = $(fuzz_onnx_libs)

TESTS += %reldir%/test_replay.sh
EXTRA_DIST += %reldir%/test_replay.sh %reldir%/corpus %reldir%/regressions \
    %reldir%/README.md %reldir%/make_folder_seeds.py %reldir%/onnx.dict \
    %reldir%/gen_onnx_dict.py

# The fuzzers themselves: libFuzzer's main, built on request only.
EXTRA_PROGRAMS = %reldir%/fuzz_npy %reldir%/fuzz_idx %reldir%/fuzz_csv \
    %reldir%/fuzz_ini %reldir%/fuzz_options %reldir%/fuzz_exe \
    %reldir%/fuzz_weights %reldir%/fuzz_checkpoint %reldir%/fuzz_onnx
fuzz_ldflags = -fsanitize=fuzzer
%canon_reldir%_fuzz_npy_SOURCES = %reldir%/fuzz_npy.c $(fuzz_common)
%canon_reldir%_fuzz_npy_LDADD = libpopc.la
%canon_reldir%_fuzz_npy_LDFLAGS = $(fuzz_ldflags)
%canon_reldir%_fuzz_idx_SOURCES = %reldir%/fuzz_idx.c $(fuzz_common)
%canon_reldir%_fuzz_idx_LDADD = libpopc.la
%canon_reldir%_fuzz_idx_LDFLAGS = $(fuzz_ldflags)
%canon_reldir%_fuzz_csv_SOURCES = %reldir%/fuzz_csv.c $(fuzz_common)
%canon_reldir%_fuzz_csv_LDADD = libpopc.la
%canon_reldir%_fuzz_csv_LDFLAGS = $(fuzz_ldflags)
%canon_reldir%_fuzz_ini_SOURCES = %reldir%/fuzz_ini.c $(fuzz_common)
%canon_reldir%_fuzz_ini_LDADD = libpopc.la
%canon_reldir%_fuzz_ini_LDFLAGS = $(fuzz_ldflags)
%canon_reldir%_fuzz_options_SOURCES = %reldir%/fuzz_options.c $(fuzz_common)
%canon_reldir%_fuzz_options_LDADD = libpopc.la
%canon_reldir%_fuzz_options_LDFLAGS = $(fuzz_ldflags)
%canon_reldir%_fuzz_exe_SOURCES = %reldir%/fuzz_exe.c $(fuzz_common)
%canon_reldir%_fuzz_exe_LDADD = libpopc.la
%canon_reldir%_fuzz_exe_LDFLAGS = $(fuzz_ldflags)
%canon_reldir%_fuzz_weights_SOURCES = %reldir%/fuzz_weights.c $(fuzz_common) $(fuzz_model)
%canon_reldir%_fuzz_weights_LDADD = libpopc.la
%canon_reldir%_fuzz_weights_LDFLAGS = $(fuzz_ldflags)
%canon_reldir%_fuzz_checkpoint_SOURCES = %reldir%/fuzz_checkpoint.c $(fuzz_common) $(fuzz_model)
%canon_reldir%_fuzz_checkpoint_LDADD = libpopc.la
%canon_reldir%_fuzz_checkpoint_LDFLAGS = $(fuzz_ldflags)
%canon_reldir%_fuzz_onnx_SOURCES = %reldir%/fuzz_onnx.c $(fuzz_common)
%canon_reldir%_fuzz_onnx_CPPFLAGS = $(fuzz_cppflags)
%canon_reldir%_fuzz_onnx_LDADD = $(fuzz_onnx_libs)
%canon_reldir%_fuzz_onnx_LDFLAGS = $(fuzz_ldflags)

if ENABLE_FUZZ
fuzz: $(EXTRA_PROGRAMS)
else
fuzz:
	@echo "make fuzz: configure with CC=clang --enable-fuzz first (scripts/fuzz does it in build-fuzz/)"; exit 1
endif
.PHONY: fuzz
