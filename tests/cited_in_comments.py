#!/usr/bin/python3
"""cited_in_comments.py - what the sources' comments cite is in the tree.

Usage: cited_in_comments.py SRCDIR

Reads the comments of the sources under SRCDIR (C and headers: /* */ and
//; shell, make, automake, autoconf and Python: # comments; Python: its
triple-quoted strings too) and the Markdown of README.md and docs/. In the
comments, every file path (a name with a directory part and a known
extension) and every *.md name must name a file of the tree; in comments and
Markdown alike, every "§N" must be a section of docs/semantics.md and every
rule id "RN.M" one of its rules. Prints each failure as FILE:LINE: what, and
a count of what was checked; exits 1 on a failure or when nothing was
checked (a check that found nothing to check proves nothing).
"""
import os
import re
import sys

SOURCE_EXT = (".c", ".h", ".sh", ".mk", ".py", ".am", ".ac")
# files without an extension that are shell scripts of the project
SCRIPTS = (".ci/run", "scripts/build", "scripts/fuzz", "scripts/install-deps",
           "scripts/main-job")
SKIP_DIRS = {".git", "autom4te.cache", "build-aux", "m4", "__pycache__"}
CITED_EXT = ("c", "h", "md", "sh", "mk", "py", "am", "ac", "in", "txt",
             "json", "ini", "npy", "onnx", "png", "supp", "js", "1", "5")
PATH_RE = re.compile(r"(?<![\w/.$%{<*-])((?:[\w.-]+/)+[\w.-]+\.(?:"
                     + "|".join(CITED_EXT) + r"))(?![\w/])")
MD_RE = re.compile(r"(?<![\w/.$%{<*-])([\w-]+\.md)\b")
SECTION_RE = re.compile(r"§\s*(\d+[a-z]?)")
# the documents the project was specified from, which are not shipped
# (and the numbered quirks of the PopTorch spec: a Q and a number)
OUTSIDE_RE = re.compile(r"\b(STYLE|ARCHITECTURE|Q\d+)\b|poptorch-semantics")
# example names in comments ("writes DIR/NAME.onnx", "dir/profile.json")
PLACEHOLDER_WORDS = re.compile(r"(?:^|[/_.])[A-Z]{3,}(?=$|[/_.])")
PLACEHOLDER_DIRS = ("dir/", "name/", "path/", "out/")
RULE_RE = re.compile(r"\bR(\d+\.\d+)\b")


def walk(src):
    """The files of the tree, relative to src; build trees (a config.status
    inside) are not part of it."""
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and
                         not os.path.exists(os.path.join(root, d,
                                                         "config.status")))
        for f in sorted(files):
            yield os.path.normpath(os.path.join(rel, f))


def placeholder(path):
    words = PLACEHOLDER_WORDS.findall(path.replace("README", "readme"))
    return bool(words) or path.startswith(PLACEHOLDER_DIRS)


def c_comments(text):
    """(line, text) of each C comment, skipping string and char literals."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            out.append((line, text[i + 2:end]))
            line += text.count("\n", i, end)
            i = end + 2
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i + 2:end]))
            i = end
        elif c in "\"'":
            i += 1
            while i < n and text[i] != c and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
            i += 1
        else:
            i += 1
    return out


def hash_comments(text, python):
    """(line, text) of each # comment (a # outside quotes that starts a word)
    and, for Python, of each triple-quoted string."""
    out = []
    if python:
        for m in re.finditer(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'', text, re.S):
            out.append((text.count("\n", 0, m.start()) + 1,
                        m.group(1) or m.group(2) or ""))
    for no, ln in enumerate(text.split("\n"), 1):
        quote = None
        for k, c in enumerate(ln):
            if quote:
                if c == quote:
                    quote = None
                elif c == "\\":
                    continue
            elif c in "\"'":
                quote = c
            elif c == "#" and (k == 0 or ln[k - 1] in " \t;("):
                out.append((no, ln[k + 1:]))
                break
    return out


def semantics_index(src):
    path = os.path.join(src, "docs", "semantics.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    sections = set(re.findall(r"^#+\s*§(\d+[a-z]?)\b", text, re.M))
    rules = set(re.findall(r"\*\*R(\d+\.\d+)\*\*", text))
    return sections, rules


def main():
    src = sys.argv[1]
    files = list(walk(src))
    present = set(files)
    basenames = {os.path.basename(f) for f in files}
    sections, rules = semantics_index(src)
    counts = {"paths": 0, "md": 0, "sections": 0, "rules": 0}
    failures = []

    def exists(path, citer):
        path = os.path.normpath(path)
        here = os.path.normpath(os.path.join(os.path.dirname(citer), path))
        for cand in (path, here, os.path.join("core", "include", path)):
            if cand in present or cand + ".in" in present:
                return True
        # a path given from inside its own part of the tree (graph/loss.c)
        return any(f.endswith("/" + path) for f in present)

    def check_refs(f, line, text):
        for m in OUTSIDE_RE.finditer(text):
            failures.append("%s:%d: cites %s, a document outside the tree; "
                            "state the rule or cite docs/" %
                            (f, line, m.group(0)))
        for m in SECTION_RE.finditer(text):
            counts["sections"] += 1
            if m.group(1) not in sections:
                failures.append("%s:%d: §%s is not a section of "
                                "docs/semantics.md (it has §%s)" %
                                (f, line, m.group(1),
                                 ", §".join(sorted(sections))))
        for m in RULE_RE.finditer(text):
            counts["rules"] += 1
            if m.group(1) not in rules:
                failures.append("%s:%d: rule R%s is not in docs/semantics.md"
                                % (f, line, m.group(1)))

    for f in files:
        python = f.endswith(".py")
        if f.startswith("tests/data/"):
            continue  # fixtures, some of them hostile on purpose
        if f.endswith(".md") and (f == "README.md" or f.startswith("docs/")):
            with open(os.path.join(src, f), encoding="utf-8") as h:
                for no, ln in enumerate(h, 1):
                    check_refs(f, no, ln)
            continue
        if not (f.endswith(SOURCE_EXT) or f in SCRIPTS or
                os.path.basename(f) == "Makefile"):
            continue
        with open(os.path.join(src, f), encoding="utf-8",
                  errors="replace") as h:
            text = h.read()
        if f.endswith((".c", ".h")):
            comments = c_comments(text)
        else:
            comments = hash_comments(text, python)
        for line, body in comments:
            for k, ln in enumerate(body.split("\n")):
                no = line + k
                check_refs(f, no, ln)
                for m in PATH_RE.finditer(ln):
                    p = m.group(1)
                    if "://" in ln[max(0, m.start() - 80):m.start() + 3] \
                            or placeholder(p):
                        continue  # part of a URL, or an example name
                    counts["paths"] += 1
                    if not exists(p, f):
                        failures.append("%s:%d: cites %s, which is not in "
                                        "the tree" % (f, no, p))
                for m in MD_RE.finditer(ln):
                    counts["md"] += 1
                    if m.group(1) not in basenames:
                        failures.append("%s:%d: cites %s, which is not in "
                                        "the tree" % (f, no, m.group(1)))

    for msg in failures:
        print("FAIL: " + msg)
    total = sum(counts.values())
    print("checked %d file paths and %d .md names in comments, %d § and %d "
          "rule citations" % (counts["paths"], counts["md"],
                              counts["sections"], counts["rules"]))
    if total == 0:
        print("FAIL: nothing was checked: is %s the source tree?" % src)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
