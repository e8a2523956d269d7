# tests/mutants.mk - make check-mutants: tests/mutants/run.sh breaks the
# central branch of each feature in tests/mutants/mutations.txt, one at a
# time, and fails when the test named for it still passes. Run by hand:
# it is not part of make check nor of CI (each mutation rebuilds).
EXTRA_DIST += %reldir%/mutants/run.sh %reldir%/mutants/mutations.txt

.PHONY: check-mutants
check-mutants: all
	$(SHELL) $(abs_top_srcdir)/%reldir%/mutants/run.sh -b $(abs_top_builddir)
