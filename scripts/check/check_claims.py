#!/usr/bin/env python3
"""Checks the numbers README.md and docs/results.md state against the result
files behind them (docs/claims.tsv).

Each row of the claims table is tab-separated:

  claim  DOC  SECTION  TEXT  SOURCE  EXPR
  param  DOC  SECTION  TEXT  -       REASON

SECTION is a heading of DOC as written (without the leading #s); TEXT is a
piece of that section as written, with `{...}` Python format fields where the
numbers stand (`{:.4f}`, `{:.1%}`, `{:.2f}x`); any run of white space in TEXT
matches any other (a line break, an indent). EXPR, evaluated with `d` bound to
SOURCE (JSON parsed, .jsonl a list of rows, anything else its text) and the
helpers below (`load(PATH)`, `result(d, TASK)`, `md_table(TEXT)`, `row(...)`,
`script_output(NAME, ARGS...)`: what scripts/*/NAME prints, for a table a script
makes from a result file; `bench_us(SRC, NAME)`: a benchmark's time from Google
Benchmark's JSON or console text; `said(TEXT, REGEX)`: the numbers a prose
source states; `run_of(RUN, SYSTEM)`), gives the value, a tuple for several fields. The
claim holds when TEXT, filled with EXPR's value, occurs in SECTION. A `param`
row names numbers that are inputs rather than measurements (a retention, a
count of questions asked for, a model's name): TEXT is literal and must occur
in the section.

A `complete DOC SECTION` row says every number of that section is accounted
for: any number in its prose or tables (code spans, code blocks and link
targets aside) that no claim or param row covers is reported.

Prints the count of claims checked; exits 1 naming each claim that fails.
Usage: check_claims.py REPO [CLAIMS]
"""
import glob
import json
import math
import os
import re
import statistics
import subprocess
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


def checkable_numbers(body):
    """(offset, text) of every number outside code, link targets and commit names."""
    masked = list(body)
    commit = r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"  # a commit's name, not a number
    for pattern in (r"```.*?```", r"`[^`]*`", r"\]\([^)\s]*\)", commit):
        for m in re.finditer(pattern, body, re.S):
            for i in range(m.start(), m.end()):
                masked[i] = " "
    masked = "".join(masked)
    return [(m.start(), m.group()) for m in NUMBER.finditer(masked)]


def render(template, value):
    """TEXT's fields filled: (the whole text, each field's own text)."""
    values = value if isinstance(value, tuple) else (value,)
    specs = FIELD.findall(template)
    if len(specs) != len(values):
        raise ValueError(f"{len(specs)} fields, {len(values)} values")
    return template.format(*values), [spec.format(v) for spec, v in zip(specs, values)]


def words(literal):
    """A regex for LITERAL in which any run of white space matches any other
    (a line break and the next line's indent included)."""
    return r"\s+".join(re.escape(part) for part in re.split(r"\s+", literal))


def find(body, template, fields):
    """Matches of TEXT (its fields filled with FIELDS' texts) in BODY; group i
    is field i."""
    pieces = FIELD.split(template)
    pattern = words(pieces[0]) + "".join(
        f"({re.escape(f)})" + words(piece) for f, piece in zip(fields, pieces[1:]))
    return list(re.finditer(pattern, body))


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

    outputs = {}

    def script_output(name, *args):  # what scripts/*/NAME (the one of that name) prints for ARGS, run from the repository
        key = (name,) + args
        if key not in outputs:
            found = glob.glob(os.path.join(repo, "scripts", "*", name))
            if len(found) != 1:
                raise KeyError(f"{len(found)} scripts named {name} under scripts/*/")
            outputs[key] = subprocess.run([sys.executable, found[0], *args], cwd=repo,
                                          capture_output=True, text=True, check=True).stdout
        return outputs[key]

    def line_starting(text, prefix):  # the one line of TEXT that starts with PREFIX
        lines = [line for line in text.splitlines() if line.startswith(prefix)]
        if len(lines) != 1:
            raise KeyError(f"{len(lines)} lines start with '{prefix}'")
        return lines[0]

    units = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}

    def bench_us(src, name):  # a Google Benchmark's real time in µs, from its JSON or console text
        if isinstance(src, dict):
            b = [x for x in src["benchmarks"] if x["name"] == name][0]
            return b["real_time"] * units[b["time_unit"]]
        m = re.search(r"(?m)^" + re.escape(name) + r"\s+([\d.]+) (ns|us|ms|s)\b", src)
        if m is None:
            raise KeyError(f"no benchmark {name}")
        return float(m.group(1)) * units[m.group(2)]

    def said(text, pattern):  # PATTERN's groups in TEXT (a prose source) as numbers; one group: a number
        m = re.search(pattern, text, re.S)
        if m is None:
            raise KeyError(f"nothing matches {pattern}")
        vals = tuple(float(g) if "." in g else int(g) for g in m.groups())
        return vals[0] if len(vals) == 1 else vals

    def run_of(d, system):  # one system's entry of a run JSON
        return [r for r in d["runs"] if r["system"] == system][0]

    return {"result": result, "md_table": md_table, "row": row, "script_output": script_output,
            "line_starting": line_starting, "bench_us": bench_us, "said": said, "run_of": run_of,
            "load": lambda p: load(repo, p), "math": math,
            "listdir": lambda p: sorted(os.listdir(os.path.join(repo, p))),
            "statistics": statistics, "re": re}


class Docs:
    """The sections of each doc, read once."""

    def __init__(self, repo):
        self.repo, self.docs = repo, {}

    def sections(self, doc):
        if doc not in self.docs:
            with open(os.path.join(self.repo, doc)) as f:
                self.docs[doc] = sections(f.read())
        return self.docs[doc]

    def section(self, doc, name, where, problems):
        """(first line, body) of DOC's section NAME; None, with the problem
        added to PROBLEMS (WHERE names the row), when DOC has no such section."""
        found = self.sections(doc).get(name)
        if found is None:
            problems.append(f"{where}: {doc} has no section '{name}'")
        return found


def check_claim(repo, env, template, source, expr, doc, start, body, where):
    """(covered offsets, None) when the claim holds, else (set(), the problem)."""
    try:
        d = load(repo, source)
    except (OSError, ValueError) as e:
        return set(), f"{where}: {source}: {e}"
    try:
        text, fields = render(template, eval(expr, dict(env, d=d)))  # noqa: S307 (the table is ours)
    except Exception as e:  # a key gone, a file changed shape
        return set(), f"{where}: {source}: {expr}: {type(e).__name__}: {e}"
    found = find(body, template, fields)
    if found:
        return {i for m in found for g in range(1, len(fields) + 1) for i in range(*m.span(g))}, None
    if template.strip() == FIELD.findall(template)[0]:  # a whole block (a table a script prints): its first line not there
        missing = next((line for line in text.splitlines() if line.strip() and line not in body), text)
        return set(), f"{doc}:{start}: lacks '{missing}' of what {source} gives ({where})"
    pieces = FIELD.split(template)
    pattern = words(pieces[0]) + "".join(r"[+-]?[\d.,]+" + words(piece) for piece in pieces[1:])
    near = re.search(pattern, body)
    said = f"'{' '.join(near.group().split())}'" if near else "nothing like it"
    line = line_of(start, body, near.start()) if near else start
    return set(), f"{doc}:{line}: says {said}; {source} gives '{' '.join(text.split())}' ({where})"


def main(repo, claims_path):
    docs, env = Docs(repo), helpers(repo)
    rel = os.path.relpath(claims_path, repo)
    problems, complete, covered = [], [], {}  # covered: (doc, section) -> offsets
    checked = params = 0
    with open(claims_path) as f:
        rows = [(n, line.rstrip("\n").split("\t")) for n, line in enumerate(f, 1)
                if line.strip() and not line.startswith("#")]
    for n, cols in rows:
        where = f"{rel}:{n}"
        if cols[0] == "complete" and len(cols) == 3:
            complete.append((where, cols[1], cols[2]))
            continue
        if cols[0] not in ("claim", "param") or len(cols) != 6:
            problems.append(f"{where}: malformed row (kind claim|param|complete, 6 columns)")
            continue
        kind, doc, name, template, source, expr = cols
        section = docs.section(doc, name, where, problems)
        if section is None:
            continue
        start, body = section
        marks = covered.setdefault((doc, name), set())
        if kind == "param":
            found = list(re.finditer(words(template), body))
            if not found:
                problems.append(f"{where}: {doc} ({name}) no longer says '{template}'")
            for m in found:
                marks.update(range(*m.span()))
            params += bool(found)
            continue
        checked += 1
        got, problem = check_claim(repo, env, template, source, expr, doc, start, body, where)
        marks.update(got)
        if problem:
            problems.append(problem)
    for where, doc, name in complete:
        section = docs.section(doc, name, where, problems)
        if section is None:
            continue
        start, body = section
        marks = covered.get((doc, name), set())
        for off, num in checkable_numbers(body):
            if not all(i in marks for i in range(off, off + len(num))):
                problems.append(f"{doc}:{line_of(start, body, off)}: '{num}' has no claim or param row ({name})")
    total = sum(len(docs.sections(doc)) for doc in ("README.md", "docs/results.md"))
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
