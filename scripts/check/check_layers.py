#!/usr/bin/env python3
"""Checks the layering docs/design.md draws: every `#include "DIR/..."` in
src/ names a header of the including file's own layer or of a layer below it,
where the layers and what each links are read from CMakeLists.txt's
`impress_layer(NAME DEPS ... SOURCES ...)` calls (a layer's directories are
those its sources live in; src/cli, the executable, may include anything).

Prints one line per include that crosses the layering the wrong way and the
count checked; exits 1 when there is any.

Usage: check_layers.py REPO
"""
import os
import re
import sys

LAYER = re.compile(r"impress_layer\((\w+)(.*?)\)", re.S)
INCLUDE = re.compile(r'^#include "([a-z_]+)/[^"]+"', re.M)


def layers(cmake):
    """{layer: (deps, dirs)} from the impress_layer calls."""
    out = {}
    for m in LAYER.finditer(cmake):
        name, body = m.group(1), m.group(2)
        words = body.split()
        deps, dirs, mode = set(), set(), None
        for w in words:
            if w in ("DEPS", "SOURCES"):
                mode = w
            elif mode == "DEPS" and w.startswith("impress_"):
                deps.add(w[len("impress_"):])
            elif mode == "SOURCES" and w.startswith("src/"):
                dirs.add(w.split("/")[1])
        out[name] = (deps, dirs)
    return out


def closure(graph, name):
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo += graph.get(n, (set(), set()))[0]
    return seen


def main(repo):
    with open(os.path.join(repo, "CMakeLists.txt")) as f:
        graph = layers(f.read())
    layer_of = {d: name for name, (_, dirs) in graph.items() for d in dirs}
    problems, checked = [], 0
    src = os.path.join(repo, "src")
    for d in sorted(os.listdir(src)):
        if d == "cli" or not os.path.isdir(os.path.join(src, d)):
            continue
        if d not in layer_of:
            problems.append(f"src/{d}/: in no impress_layer of CMakeLists.txt")
            continue
        allowed = closure(graph, layer_of[d])
        for f in sorted(os.listdir(os.path.join(src, d))):
            path = os.path.join(src, d, f)
            with open(path) as fh:
                text = fh.read()
            for inc in INCLUDE.findall(text):
                checked += 1
                target = layer_of.get(inc)
                if target is None or target not in allowed:
                    problems.append(f"src/{d}/{f}: includes {inc}/ (layer {target}), which layer "
                                    f"{layer_of[d]} does not link (it links {', '.join(sorted(allowed))})")
    for p in problems:
        print(p)
    print(f"check_layers: {len(graph)} layers, {checked} includes: "
          f"{'ok' if not problems else f'{len(problems)} problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    sys.exit(main(sys.argv[1]))
