#!/usr/bin/env python3
"""Lists C++/CUDA functions longer than N lines, longest first.

  scripts/long_functions.py [--over N] [--exclude-tests] [PATH ...]

PATH is a file or a folder (default: the repository's source folders). A
function's length counts the lines from its name to its closing brace;
lambdas and local classes count in the function that holds them. The parse
is lexical (comments, strings, character literals and preprocessor lines
skipped; braces tracked by what opened them), which is enough for this
repository's style; it does not expand macros.
"""

import argparse
import os
import re
import sys

SOURCE_EXT = (".cc", ".cu", ".h", ".cuh", ".cpp", ".hpp")
DEFAULT_ROOTS = ("bench", "calibrate", "cli", "common", "engine", "hw", "kernels", "models",
                 "python", "report", "schema", "sim", "tests", "wasm")
KEYWORD_SCOPES = re.compile(r"\b(namespace|class|struct|union|enum)\b")
NOT_FUNCTION_HEAD = re.compile(r"(^|[^\w])(if|for|while|switch|catch|return|do|else)\s*[({]?\s*$")


def strip_code(text):
    """The text with comments, literals and preprocessor lines blanked
    (newlines kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        line_start = False
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            k = text.find("(", i + 2)
            delim = ")" + text[i + 2:k] + '"'
            j = text.find(delim, k)
            j = n if j < 0 else j + len(delim)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and text[i + 1:i + 2].isalnum():
                out.append(c)  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(head):
    """The name before the parameter list of a function head, or None."""
    head = re.sub(r"\s+", " ", head).strip()
    head = re.sub(r"__launch_bounds__\s*\([^)]*\)", "", head)
    if not head or "(" not in head or KEYWORD_SCOPES.match(head):
        return None
    if "=" in head.split("(", 1)[0]:
        return None  # an initializer: int x = f(...) { ... } is not a function
    if NOT_FUNCTION_HEAD.search(head):
        return None
    # The parameter list is the first top-level parenthesis after the name;
    # for a constructor with an initializer list the head continues after ':'.
    m = re.search(r"((?:[\w~]+::)*(?:operator\s*[^\s(]+|~?\w+))\s*(<[^()]*>)?\s*\(", head)
    return m.group(1) if m else None


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        code = strip_code(f.read())
    found = []
    stack = []  # (kind, name, start line)
    head, head_line = "", None
    line = 1
    for c in code:
        if c == "\n":
            line += 1
            if head.strip():
                head += " "
            continue
        inside_function = any(kind == "func" for kind, _, _ in stack)
        if c == "{":
            if inside_function:
                stack.append(("block", None, line))
            else:
                name = function_name(head)
                if name:
                    stack.append(("func", name, head_line or line))
                elif KEYWORD_SCOPES.search(head) or not head.strip():
                    stack.append(("scope", None, line))
                else:
                    stack.append(("block", None, line))  # an initializer or array
            head, head_line = "", None
        elif c == "}":
            if stack:
                kind, name, start = stack.pop()
                if kind == "func":
                    found.append((line - start + 1, name, start))
            head, head_line = "", None
        elif c == ";":
            if not inside_function:
                head, head_line = "", None
        elif not inside_function:
            if not c.isspace() and head_line is None:
                head_line = line
            head += c
    return found


def source_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "build")
            for name in sorted(files):
                if name.endswith(SOURCE_EXT):
                    yield os.path.join(root, name)


def is_test(path):
    parts = path.replace("\\", "/").split("/")
    return "tests" in parts or parts[-1].endswith("_test.cc") or "fuzz" in parts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--over", type=int, default=100, help="list functions longer than this")
    ap.add_argument("--exclude-tests", action="store_true", help="leave out tests/ and *_test.cc")
    ap.add_argument("--count", action="store_true", help="print only how many")
    args = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = args.paths or [os.path.join(repo, r) for r in DEFAULT_ROOTS
                           if os.path.isdir(os.path.join(repo, r))]
    rows = []
    for path in source_files(paths):
        if args.exclude_tests and is_test(path):
            continue
        rel = os.path.relpath(path, repo)
        for length, name, start in functions(path):
            if length > args.over:
                rows.append((length, rel, start, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    if args.count:
        print(len(rows))
        return 0
    for length, rel, start, name in rows:
        print(f"{length:5d}  {rel}:{start}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
