#!/usr/bin/env python3
"""test_doc_links.py: every link in README.md and docs/ leads somewhere, and every place the code
cites a document names a file and a section that exist.

Checked:
  1. Markdown links [text](target) in README.md, CONTRIBUTING.md and docs/**/*.md, outside code
     blocks and inline code: a relative target names an existing file or folder (from the
     document's own folder); a #fragment names a heading of the target document, as GitHub makes
     the anchor of a heading (lower case, punctuation dropped, spaces to hyphens, "-1", "-2" for
     repeats). Web links (http, https, mailto) are not followed: the machines have no internet.
  2. Citations in the code (C, CUDA, Python, shell, CMake) and in the documents' prose: every docs/ file it names exists
     and where a quoted section title follows it (docs/fast.md, "GPU slot" or
     docs/fast.md "GPU slot"), a heading of that file starts with the quoted words. A title cut by
     the end of a comment line is matched on the words before the cut.

  3. The shape of the docs: README.md at most 150 lines; each guide (docs/*.md) at most 400 lines,
     its first lines after the title a "*For:*" line and an "*Answers:*" line.

usage: test_doc_links.py REPO_ROOT   (the code's citations are docs/<file>.md, quoted title)
Prints one line per broken link (FILE:LINE: what is wrong) and exits 1 if there is any.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
CODE_DIRS = ["cli", "common", "ref", "fast", "bench", "conformance", "reproduce", "scripts",
             "python", "fuzz", "cmake", ".ci"]
CODE_EXT = (".c", ".h", ".cu", ".cuh", ".cpp", ".py", ".sh", ".cmake", ".txt")

LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^()\s]+(?:\([^()\s]*\))?[^()\s]*)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[([^\]\n]*)\]\(([^()\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CITE = re.compile(r"(docs/[A-Za-z0-9_/.-]+?\.md)(?:[\s,(]{0,3}\\?[\"\u201c]([A-Za-z0-9\u00a7-][^\"\u201d\\\n]*))?")


def markdown_docs():
    docs = []
    for name in ("README.md", "CONTRIBUTING.md"):
        if os.path.isfile(os.path.join(ROOT, name)):
            docs.append(name)
    for base, dirs, files in os.walk(os.path.join(ROOT, "docs")):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".md"):
                docs.append(os.path.relpath(os.path.join(base, f), ROOT))
    return docs


def prose_lines(path, blank_code=True):
    """(line number, text) of the lines outside fenced code blocks, inline code blanked unless
    blank_code is False"""
    out, fence = [], None
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            m = re.match(r"^\s*(```+|~~~+)", line)
            if m:
                if fence is None:
                    fence = m.group(1)[0] * 3
                elif m.group(1).startswith(fence):
                    fence = None
                continue
            if fence is None:
                if blank_code:
                    line = re.sub(r"`[^`]*`", lambda c: " " * len(c.group(0)), line)
                out.append((n, line))
    return out


def slug(text):
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed"""
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("*", "")  # emphasis; underscores stay, as GitHub keeps them
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


_headings = {}


def headings(path):
    """(set of anchors, list of heading texts) of a markdown file"""
    if path not in _headings:
        anchors, titles, seen = set(), [], {}
        for _, line in prose_lines(path, blank_code=False):
            m = HEADING.match(line)
            if not m:
                continue
            title = m.group(2)
            titles.append(re.sub(r"[`*]", "", title))
            s = slug(title)
            k = seen.get(s, 0)
            seen[s] = k + 1
            anchors.add(s if k == 0 else "%s-%d" % (s, k))
        _headings[path] = (anchors, titles)
    return _headings[path]


def check_links(doc, problems):
    here = os.path.dirname(doc)
    for n, line in prose_lines(doc):
        for m in list(LINK.finditer(line)) + list(IMAGE.finditer(line)):
            target = m.group(2)
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(here, path)) if path else doc
            if not os.path.exists(os.path.join(ROOT, dest)):
                problems.append("%s:%d: link to %s: no such file" % (doc, n, target))
                continue
            if frag:
                if not dest.endswith(".md"):
                    problems.append("%s:%d: link to %s: an anchor into a file that is not markdown"
                                    % (doc, n, target))
                elif frag not in headings(dest)[0]:
                    problems.append("%s:%d: link to %s: %s has no heading with anchor #%s"
                                    % (doc, n, target, dest, frag))


def code_files():
    for d in CODE_DIRS:
        for base, dirs, files in os.walk(os.path.join(ROOT, d)):
            dirs[:] = sorted(x for x in dirs if x not in (".venv", "__pycache__", "fixtures"))
            for f in sorted(files):
                if f.startswith("test_doc_links."):
                    continue  # the checker and its test, whose made citations break on purpose
                if f.endswith(CODE_EXT) or f == "run":
                    yield os.path.relpath(os.path.join(base, f), ROOT)
    if os.path.isfile(os.path.join(ROOT, "CMakeLists.txt")):
        yield "CMakeLists.txt"


def check_citations(src, problems, lines=None):
    if lines is None:
        try:
            with open(os.path.join(ROOT, src), encoding="utf-8") as fh:
                lines = list(enumerate(fh.read().split("\n"), 1))
        except (OSError, UnicodeDecodeError):
            return
    for n, line in lines:
        for m in CITE.finditer(line):
            doc, title = m.group(1), m.group(2)
            if "*" in doc or "$" in doc:
                continue
            if not os.path.isfile(os.path.join(ROOT, doc)):
                problems.append("%s:%d: cites %s: no such file" % (src, n, doc))
                continue
            if not title:
                continue
            words = re.sub(r"\s+", " ", title.strip().rstrip(",.;:")).lower()
            if len(words) < 3:
                continue
            titles = [re.sub(r"\s+", " ", t).lower() for t in headings(doc)[1]]
            if not any(t.startswith(words) or t.lstrip("§0123456789. ").startswith(words)
                       for t in titles):
                problems.append("%s:%d: cites %s \"%s\": no heading of %s starts so"
                                % (src, n, doc, title.strip(), doc))


README_MAX_LINES, GUIDE_MAX_LINES = 150, 400


def check_shape(doc, problems):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    n = len(lines) - (1 if lines and lines[-1] == "" else 0)
    if doc == "README.md" and n > README_MAX_LINES:
        problems.append("%s: %d lines, more than %d" % (doc, n, README_MAX_LINES))
    if os.path.dirname(doc) == "docs":
        if n > GUIDE_MAX_LINES:
            problems.append("%s: %d lines, more than a guide's %d" % (doc, n, GUIDE_MAX_LINES))
        head = [l for l in lines[1:6] if l.strip()]
        if len(head) < 2 or not head[0].startswith("*For:*") or not head[1].startswith("*Answers:*"):
            problems.append("%s: a guide opens with a *For:* line and an *Answers:* line after its title" % doc)


def main():
    problems = []
    docs = markdown_docs()
    for doc in docs:
        check_shape(doc, problems)
    for doc in docs:
        check_links(doc, problems)
        # prose that names a section the way the code does: docs/fast.md, "GPU slot"
        # (a link's own target is checked above, not again here)
        check_citations(doc, problems, [(n, re.sub(r"\]\([^)]*\)", "]()", line))
                                        for n, line in prose_lines(doc, blank_code=False)])
    files = list(code_files())
    for src in files:
        check_citations(src, problems)
    for p in problems:
        print(p)
    print("%d documents, %d code files: %d broken link(s) or citation(s)"
          % (len(docs), len(files), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
