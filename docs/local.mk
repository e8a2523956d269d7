# docs/local.mk - every document of docs/ is installed under $(docdir)
# (tests/test_doc_snippets.sh checks that none is left out).
popcdocdir = $(docdir)
dist_popcdoc_DATA = \
    %reldir%/architecture.md %reldir%/distributed.md \
    %reldir%/executable-format.md %reldir%/helpers.md \
    %reldir%/ini-format.md %reldir%/kernels.md %reldir%/modules.md %reldir%/onnx.md \
    %reldir%/plugins.md %reldir%/profile-example.png \
    %reldir%/optimizer.md %reldir%/security.md \
    %reldir%/semantics.md
