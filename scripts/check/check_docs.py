#!/usr/bin/env python3
"""Checks that the docs can be followed: every relative markdown link in
README.md and docs/*.md names a file or folder that exists, every command in
README's quick start is a make target or an `impress` subcommand, and
README stays short enough to read in five minutes (at most 12,288 bytes);
and, where the repository has results/, that results/README.md links every
folder under it and that no code (.cc, .h, .patch) sits there (studies/ holds it).

Usage: check_docs.py REPO IMPRESS_BINARY
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
README_MAX = 12288


def links(path):
    with open(path) as f:
        text = f.read()
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        yield target.split("#", 1)[0]


def quick_start(readme):
    with open(readme) as f:
        text = f.read()
    m = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        return []
    cmds = []
    for block in re.findall(r"```\n(.*?)```", m.group(1), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                cmds.append(line.split())
    return cmds


def results_index(repo):
    """results/README.md links every folder under results/; results/ holds no code (a .sh there
    is the record of the command that made a result)."""
    root = os.path.join(repo, "results")
    if not os.path.isdir(root):
        return []
    index = os.path.join(root, "README.md")
    listed = set(t.rstrip("/") for t in links(index)) if os.path.exists(index) else set()
    problems = []
    for here, dirs, names in os.walk(root):
        dirs.sort()
        for d in dirs:
            rel = os.path.relpath(os.path.join(here, d), root)
            if rel not in listed:
                problems.append(f"results/README.md: folder results/{rel}/ is not listed")
        for n in sorted(names):
            if n.endswith((".cc", ".h", ".patch", ".py")):  # a .sh is a record of the command that made a result
                rel = os.path.relpath(os.path.join(here, n), repo)
                problems.append(f"{rel}: code under results/ (tools live in scripts/, code that was not merged "
                                "in studies/)")
    return problems


def main(repo, impress):
    problems = []
    files = [os.path.join(repo, "README.md")]
    docs = os.path.join(repo, "docs")
    files += [os.path.join(docs, f) for f in sorted(os.listdir(docs)) if f.endswith(".md")]
    files += [os.path.join(repo, d, "README.md") for d in ("results", "studies")
              if os.path.exists(os.path.join(repo, d, "README.md"))]
    problems += results_index(repo)
    for path in files:
        for target in links(path):
            if not os.path.exists(os.path.join(os.path.dirname(path), target)):
                problems.append(f"{os.path.relpath(path, repo)}: link to {target}: no such file")
    with open(os.path.join(repo, "Makefile")) as f:
        targets = set(re.findall(r"^([a-z][a-z0-9_-]*):", f.read(), re.M))
    helptext = subprocess.run([impress, "--help"], capture_output=True, text=True).stdout
    subcommands = set(re.findall(r"^\s{2,}([a-z]+)\s", helptext, re.M))
    cmds = quick_start(os.path.join(repo, "README.md"))
    if not cmds:
        problems.append("README.md: no commands in a '## Quick start' section")
    for words in cmds:
        if words[0] == "make":
            if len(words) < 2 or words[1] not in targets:
                problems.append(f"README.md quick start: '{' '.join(words[:2])}' is not a make target")
        elif os.path.basename(words[0]) == "impress":
            if len(words) < 2 or words[1] not in subcommands:
                problems.append(f"README.md quick start: 'impress {words[1:2]}' is not a subcommand")
        else:
            problems.append(f"README.md quick start: '{words[0]}' is neither make nor impress")
    size = os.path.getsize(os.path.join(repo, "README.md"))
    if size > README_MAX:
        problems.append(f"README.md: {size} bytes, more than {README_MAX}")
    for p in problems:
        print(p)
    n_links = sum(1 for p in files for _ in links(p))
    print(f"check_docs: {len(files)} files, {n_links} links, {len(cmds)} quick-start commands, "
          f"README {size} bytes: {'ok' if not problems else f'{len(problems)} problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    sys.exit(main(sys.argv[1], sys.argv[2]))
