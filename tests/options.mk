# tests/options.mk - options (check_options), the INI wrapper
# (check_config) and a reader for every supported option
# (test_option_readers.sh). check_config calls run/'s internal popci_config_*
# functions, which libpopc hides: it compiles run/run_config.c itself.
EXTRA_DIST += \
    %reldir%/data/options/README \
    %reldir%/data/options/config_dupkey.ini \
    %reldir%/data/options/config_dupsec.ini \
    %reldir%/data/options/config_good.ini \
    %reldir%/data/options/config_noeq.ini \
    %reldir%/data/options/config_orphan.ini \
    %reldir%/data/options/options_alias_twice.ini \
    %reldir%/data/options/options_assign.txt \
    %reldir%/data/options/options_attr.txt \
    %reldir%/data/options/options_bad_value.ini \
    %reldir%/data/options/options_comment.ini \
    %reldir%/data/options/options_dupkey.ini \
    %reldir%/data/options/options_everyn.txt \
    %reldir%/data/options/options_good.ini \
    %reldir%/data/options/options_good.txt \
    %reldir%/data/options/options_location.txt \
    %reldir%/data/options/options_noeq.ini \
    %reldir%/data/options/options_phased.txt \
    %reldir%/data/options/options_reduction.txt \
    %reldir%/data/options/options_syntax.txt \
    %reldir%/data/options/options_utf8.txt \
    %reldir%/data/options/options_trace.txt \
    %reldir%/data/options/options_type.txt \
    %reldir%/data/options/options_unknown.ini \
    %reldir%/data/options/options_excludes.txt
TESTS += %reldir%/test_option_readers.sh %reldir%/test_headers.sh \
    %reldir%/test_core_names.sh %reldir%/test_doc_links.sh \
    %reldir%/test_header_docs.sh
EXTRA_DIST += %reldir%/test_option_readers.sh %reldir%/test_headers.sh \
    %reldir%/test_core_names.sh %reldir%/test_doc_links.sh \
    %reldir%/test_header_docs.sh
EXTRA_DIST += %reldir%/cited_in_comments.py
if HAVE_CHECK
check_PROGRAMS += %reldir%/check_options %reldir%/check_config
TESTS += %reldir%/check_options %reldir%/check_config
%canon_reldir%_check_options_SOURCES = %reldir%/check_options.c
%canon_reldir%_check_options_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_options_LDADD = libpopc.la $(CHECK_LIBS)
%canon_reldir%_check_config_SOURCES = %reldir%/check_config.c \
    run/run_config.c run/run_config_priv.h optfmt/utf8.c core/fault.c \
    core/options/suggest.c
%canon_reldir%_check_config_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) \
    $(INI_CFLAGS)
%canon_reldir%_check_config_LDADD = libpopc.la $(CHECK_LIBS) $(INI_LIBS)
endif
