#!/usr/bin/env python3
"""Fails when the docs or a comment names a file the repository does not have.

Two kinds of reference are checked (issue 42, point 7), in every Markdown file and in every
source, proto, CMake and shell file (where they live in comments):

  1. a repository path, backticked or not: `catalog/catalog_drop.cc`, `tests/node/`, `docs/operations.md`.
     A path counts when its first part is a top-level entry of the repository (a program's path,
     `bench/send_bench`, counts when its .cc exists; a path may be relative to the file
     that names it, as a README's or a CMakeLists.txt's are); a bare file name
     with a source extension (`record_store_apply.cc`) must exist somewhere in the tree (or next to
     the file that names it). A `:line` or `::Symbol` suffix is ignored, and
     so is anything with a placeholder in it (`*`, `<`, `{`, `NN`, `...`).
  2. a design-note reference `NNNN-slug` (e.g. 0008-front-doors.md): docs/design/ must hold a
     note with that number and that slug.

  scripts/lint_docs.py              # the repository this script lives in
  scripts/lint_docs.py --root DIR   # another tree (tests/scripts/lint_docs_test.sh plants one)

A line that holds "lint_docs: planted" is skipped. Prints one line per broken reference (file:line: what) and exits 1 if there is any.
"""
import argparse
import os
import re
import sys

SKIP_DIRS = {".git", "build", "build-asan", "third_party", "node_modules"}
TEXT_EXTS = (".md", ".h", ".cc", ".proto", ".sh", ".py", ".txt", ".cmake", ".yaml", ".yml")
# Bare names of these kinds are sources; `ready.json` or `SPEC.md` name files outside the tree.
SOURCE_EXTS = ("h", "cc", "proto", "sh", "py", "cmake", "gp")
BACKTICKED = re.compile(r"`([^`\s]+)`")
NOTE_REF = re.compile(r"(?<![\w.-])(00\d\d)-([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
BARE_FILE = re.compile(r"^[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*\.(%s)$" % "|".join(SOURCE_EXTS))
# An unquoted path in prose or a comment: a top-level directory, then a file with an extension.
PLAIN_PATH = re.compile(r"(?<![\w./`-])((?:%s)/[\w./-]*\w\.(?:h|cc|proto|md|sh|py|txt|gp))(?![\w/])")
# A line holding this (the lint's own test plants broken references) is not checked.
IGNORE = "lint_docs: planted"
PLACEHOLDER = re.compile(r"[*<>{}$]|\.\.\.|NN|XX")


def walk(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            yield os.path.relpath(os.path.join(dirpath, name), root)


def design_notes(root):
    """{number: slug} of docs/design/NNNN-slug.md."""
    notes = {}
    design = os.path.join(root, "docs", "design")
    if os.path.isdir(design):
        for name in os.listdir(design):
            m = re.match(r"^(\d{4})-(.+)\.md$", name)
            if m:
                notes[m.group(1)] = m.group(2)
    return notes


def strip_suffix(token):
    token = token.split("::", 1)[0]
    token = re.sub(r":\d+(-\d+)?$", "", token)
    token = token.split("#", 1)[0]
    return token.rstrip(".,;:)")


class Linter:
    def __init__(self, root):
        self.root = root
        self.files = list(walk(root))
        self.top = {p.split(os.sep, 1)[0] for p in self.files}
        self.top |= {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))}
        self.top -= SKIP_DIRS
        self.basenames = {os.path.basename(p) for p in self.files}
        self.notes = design_notes(root)
        self.errors = []

    def exists(self, rel):
        return os.path.exists(os.path.join(self.root, rel))

    def check_path(self, where, token, component_dir):
        token = strip_suffix(token)
        if not token or PLACEHOLDER.search(token) or token.startswith(("../", "/", "http")):
            return
        if "/" in token:
            first = token.split("/", 1)[0]
            if component_dir and self.exists(os.path.join(component_dir, token)):
                return
            # `bench/record_bench` names the program built from bench/record_bench.cc.
            if first not in self.top or self.exists(token) or self.exists(token + ".cc"):
                return
            self.errors.append("%s: `%s` does not exist" % (where, token))
            return
        if not BARE_FILE.match(token):
            return
        if component_dir and self.exists(os.path.join(component_dir, token)):
            return
        if token in self.basenames:
            return
        self.errors.append("%s: `%s` names no file in the repository" % (where, token))

    def check_note(self, where, number, slug):
        have = self.notes.get(number)
        if have is None:
            self.errors.append("%s: design note %s does not exist" % (where, number))
        elif not (have == slug or have.startswith(slug + "-")):
            self.errors.append("%s: %s-%s names note %s, which is %s-%s.md"
                               % (where, number, slug, number, number, have))

    def lint_file(self, rel):
        if not rel.endswith(TEXT_EXTS) and os.path.basename(rel) not in ("CMakeLists.txt", "run"):
            return
        try:
            with open(os.path.join(self.root, rel), encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (UnicodeDecodeError, OSError):
            return
        component_dir = os.path.dirname(rel)  # a README's or CMakeLists' paths are relative
        plain = re.compile(PLAIN_PATH.pattern % "|".join(sorted(map(re.escape, self.top))))
        for n, line in enumerate(lines, 1):
            if IGNORE in line:
                continue
            where = "%s:%d" % (rel, n)
            for token in dict.fromkeys(BACKTICKED.findall(line) + plain.findall(line)):
                self.check_path(where, token, component_dir)
            for number, slug in NOTE_REF.findall(line):
                self.check_note(where, number, slug)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--root", default=os.path.dirname(here))
    args = parser.parse_args()
    linter = Linter(os.path.abspath(args.root))
    for rel in linter.files:
        linter.lint_file(rel)
    for e in linter.errors:
        print("lint_docs: " + e)
    if linter.errors:
        print("lint_docs: %d broken reference(s)" % len(linter.errors))
        return 1
    print("lint_docs: ok (%d files)" % len(linter.files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
