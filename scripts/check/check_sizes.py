#!/usr/bin/env python3
"""Checks that src/ stays readable: no file over 450 lines (src/model/tokenizer.cc,
the tokenizer.json interpreter, excepted) and no function body over 60 lines.

A function is a top-level (or namespace-level) brace block whose opening line
or the lines of its declaration before it (since the last `;`, `{` or `}`)
hold a parenthesis and that is not a struct, class, enum or initializer; its
length runs from its declaration's first line to its closing brace.
Lambdas and member functions defined inside a class count with their enclosing
block. Prints each offender and the counts; exits 1 when there is any.

Usage: check_sizes.py REPO
"""
import glob
import os
import re
import sys

MAX_FILE, MAX_FUNCTION = 450, 60
FILE_EXCEPTIONS = {"src/model/tokenizer.cc"}


def strip(line):
    line = re.sub(r"//.*", "", line)
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return re.sub(r"'(\\.|[^'\\])*'", "''", line)


def functions(lines):
    """(first line index, length) of each namespace-level brace block that is a function."""
    depth, start, head, head_at = 0, None, "", 0
    for i, raw in enumerate(lines):
        s = strip(raw)
        if re.match(r"^\s*namespace\b.*\{", s) or re.match(r"^\}\s*//\s*namespace", raw):
            continue
        opens, closes = s.count("{"), s.count("}")
        if depth == 0 and opens > 0:
            plain = not re.match(r"^\s*(struct|class|enum|union)\b", s) and not re.search(r"=\s*\{", s)
            start = (head_at if head else i) if plain and "(" in head + s else None
        depth += opens - closes
        if depth == 0:
            if start is not None:
                yield start, i - start + 1
            start = None
            text = s.strip()
            # A declaration's lines since the last statement or block, however many a signature takes.
            if text and not text.endswith((";", "}", "{")):
                head_at = head_at if head else i
                head += " " + s
            else:
                head = ""


def main(repo):
    problems, n_files, n_functions = [], 0, 0
    for path in sorted(glob.glob(os.path.join(repo, "src", "*", "*.cc")) + glob.glob(os.path.join(repo, "src", "*", "*.h"))):
        rel = os.path.relpath(path, repo)
        with open(path) as f:
            lines = f.read().split("\n")
        n_files += 1
        if len(lines) - 1 > MAX_FILE and rel not in FILE_EXCEPTIONS:
            problems.append(f"{rel}: {len(lines) - 1} lines, more than {MAX_FILE}")
        for start, length in functions(lines):
            n_functions += 1
            if length > MAX_FUNCTION:
                problems.append(f"{rel}:{start + 1}: a function of {length} lines, more than {MAX_FUNCTION}: "
                                f"{lines[start].strip()[:60]}")
    for p in problems:
        print(p)
    print(f"check_sizes: {n_files} files, {n_functions} functions: {'ok' if not problems else f'{len(problems)} problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    sys.exit(main(sys.argv[1]))
