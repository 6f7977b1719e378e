#!/usr/bin/env python3
"""Checks the numbers README.md and docs/results.md state against the result
files behind them (docs/claims.tsv).

Each row of the claims table is tab-separated:

  claim  DOC  SECTION  TEXT  SOURCE  EXPR
  param  DOC  SECTION  TEXT  -       REASON

SECTION is a heading of DOC as written (without the leading #s); TEXT is a
piece of that section as written, with `{...}` Python format fields where the
numbers stand (`{:.4f}`, `{:.1%}`, `{:.2f}x`); EXPR, evaluated with `d` bound to
SOURCE (JSON parsed, .jsonl a list of rows, anything else its text) and the
helpers below, gives the value (a tuple for several fields). The claim holds
when TEXT, filled with EXPR's value, occurs in SECTION. A `param` row names
numbers that are inputs rather than measurements (a retention, a count of
questions asked for): TEXT is literal and must occur in the section.

A `complete DOC SECTION` row says every number of that section is accounted
for: any number in its prose or tables (code spans, code blocks and link
targets aside) that no claim or param row covers is reported.

Prints the count of claims checked; exits 1 naming each claim that fails.
Usage: check_claims.py REPO [CLAIMS]
"""
import json
import math
import os
import re
import statistics
import sys

NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?")
FIELD = re.compile(r"\{[^{}]*\}")


def load(repo, path):
    full = os.path.join(repo, path)
    with open(full) as f:
        text = f.read()
    if path.endswith(".json"):
        return json.loads(text)
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return text


def sections(text):
    """Heading (without #s) -> (first line number, body) for every heading."""
    out, name, start, body = {}, None, 0, []
    in_code = False
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"#+\s+(.*)", line)
        if m:
            if name is not None:
                out[name] = (start, "\n".join(body))
            name, start, body = m.group(1).strip(), i, []
        elif name is not None:
            body.append(line)
    if name is not None:
        out[name] = (start, "\n".join(body))
    return out


def line_of(start, body, off):
    return start + body[:off].count("\n") + 1


def flat(body):
    """A claim's text may run over a line break: it matches as a space (same offsets)."""
    return body.replace("\n", " ")


def checkable_numbers(body):
    """(offset, text) of every number outside code and link targets."""
    masked = list(body)
    for pattern in (r"```.*?```", r"`[^`\n]*`", r"\]\([^)\s]*\)"):
        for m in re.finditer(pattern, body, re.S):
            for i in range(m.start(), m.end()):
                masked[i] = " "
    masked = "".join(masked)
    return [(m.start(), m.group()) for m in NUMBER.finditer(masked)]


def render(template, value):
    values = value if isinstance(value, tuple) else (value,)
    return template.format(*values)


def covered_spans(template, rendered, at):
    """Offsets in the section of the numbers TEXT's fields rendered to."""
    pieces = FIELD.split(template)
    pattern = "(.*?)".join(re.escape(p) for p in pieces)
    m = re.fullmatch(pattern, rendered, re.S)
    return [(at + m.start(g), at + m.end(g)) for g in range(1, len(pieces))] if m else []


def helpers(repo):
    def result(d, task):  # one task's row of an eval JSON
        for r in d["results"]:
            if r["task"] == task:
                return r
        raise KeyError(f"no task {task}")

    def md_table(text, n=0):  # the n-th markdown table as a list of dicts
        tables, cur = [], []
        for line in text.splitlines() + [""]:
            if line.startswith("|"):
                cur.append([c.strip() for c in line.strip().strip("|").split("|")])
            elif cur:
                tables.append(cur)
                cur = []
        head, *rows = tables[n]
        return [dict(zip(head, r)) for r in rows if not set("".join(r)) <= set("-: ")]

    def row(rows, key, value):  # the row whose column KEY is VALUE
        for r in rows:
            if r.get(key) == value:
                return r
        raise KeyError(f"no row with {key} = {value}")

    return {"result": result, "md_table": md_table, "row": row,
            "load": lambda p: load(repo, p), "math": math,
            "statistics": statistics, "re": re}


def main(repo, claims_path):
    rows = []
    with open(claims_path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.strip() and not line.startswith("#"):
                rows.append((n, line.split("\t")))
    docs, problems, checked, params = {}, [], 0, 0
    covered = {}  # (doc, section) -> set of offsets covered
    complete = []
    env = helpers(repo)
    rel = os.path.relpath(claims_path, repo)
    for n, cols in rows:
        where = f"{rel}:{n}"
        kind = cols[0]
        if kind == "complete" and len(cols) == 3:
            complete.append((where, cols[1], cols[2]))
            continue
        if kind not in ("claim", "param") or len(cols) != 6:
            problems.append(f"{where}: malformed row (kind claim|param|complete, 6 columns)")
            continue
        _, doc, section, template, source, expr = cols
        if doc not in docs:
            with open(os.path.join(repo, doc)) as f:
                docs[doc] = sections(f.read())
        if section not in docs[doc]:
            problems.append(f"{where}: {doc} has no section '{section}'")
            continue
        start, body = docs[doc][section]
        if kind == "param":
            text = template
            if text not in flat(body):
                problems.append(f"{where}: {doc} ({section}) no longer says '{text}'")
                continue
            params += 1
            marks = covered.setdefault((doc, section), set())
            at = flat(body).find(text)
            while at >= 0:
                marks.update(range(at, at + len(text)))
                at = flat(body).find(text, at + 1)
            continue
        try:
            d = load(repo, source)
        except (OSError, ValueError) as e:
            problems.append(f"{where}: {source}: {e}")
            continue
        try:
            value = eval(expr, dict(env, d=d))  # noqa: S307 (the table is ours)
            text = render(template, value)
        except Exception as e:  # a key gone, a file changed shape
            problems.append(f"{where}: {source}: {expr}: {type(e).__name__}: {e}")
            continue
        checked += 1
        at = flat(body).find(text)
        if at < 0:
            pattern = re.escape(FIELD.sub("\0", template)).replace("\\\0", "\0")
            pattern = pattern.replace("\0", r"[+-]?[\d.,]+")
            near = re.search(pattern, flat(body))
            said = f"'{near.group()}'" if near else "nothing like it"
            line = line_of(start, body, near.start()) if near else start
            problems.append(f"{doc}:{line}: says {said}; {source} gives '{text}' ({where})")
            continue
        marks = covered.setdefault((doc, section), set())
        while at >= 0:
            for a, b in covered_spans(template, text, at):
                marks.update(range(a, b))
            at = flat(body).find(text, at + 1)
    unbacked = 0
    for where, doc, section in complete:
        if doc not in docs:
            with open(os.path.join(repo, doc)) as f:
                docs[doc] = sections(f.read())
        if section not in docs[doc]:
            problems.append(f"{where}: {doc} has no section '{section}'")
            continue
        start, body = docs[doc][section]
        marks = covered.get((doc, section), set())
        for off, num in checkable_numbers(body):
            if not all(i in marks for i in range(off, off + len(num))):
                unbacked += 1
                line = line_of(start, body, off)
                problems.append(f"{doc}:{line}: '{num}' has no claim or param row ({section})")
    for doc in ("README.md", "docs/results.md"):
        if doc not in docs:
            with open(os.path.join(repo, doc)) as f:
                docs[doc] = sections(f.read())
    total = sum(len(v) for v in docs.values())
    for p in problems:
        print(p)
    print(f"check_claims: {checked} claims checked, {params} params, "
          f"{len(complete)} of {total} sections complete, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    repo = sys.argv[1]
    sys.exit(main(repo, sys.argv[2] if len(sys.argv) == 3 else os.path.join(repo, "docs/claims.tsv")))
