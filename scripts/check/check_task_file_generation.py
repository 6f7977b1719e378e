#!/usr/bin/env python3
"""Full-KV generation of `impress eval --task-file` against transformers.

Writes a task file of needle questions (scripts/repro/needle_task.py, or --task-file
to bring one), runs `impress eval --task-file F --system recomp --samples`,
then feeds transformers each line's context string (prefix + question,
tokenized as lm-eval's HF backend tokenizes a context: trailing whitespace
left out, no special tokens) and greedy-decodes as many new tokens, stopping
at the end-of-sequence token. Every line's generated token ids must be equal.
Then `impress run --task-file F --system recomp` streams the same lines as
requests: every request's output must be the text eval generated for its line.
Exit 1 on any mismatch; --json writes the comparison.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "repro"))  # needle_task
import needle_task  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--impress", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--task-file", help="a task file of generation lines (default: needles made here)")
    ap.add_argument("--haystacks", type=int, default=2)
    ap.add_argument("--keys", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=256, help="approximate haystack length in tokens")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write every line's ids and outputs here")
    args = ap.parse_args()

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.task_file
        if path is None:
            path = os.path.join(tmp, "needles.jsonl")
            with open(path, "w") as f:
                for line in needle_task.lines(tok, args.haystacks, args.keys, args.tokens, args.seed):
                    f.write(json.dumps(line) + "\n")
        samples, eval_json = os.path.join(tmp, "samples.jsonl"), os.path.join(tmp, "eval.json")
        subprocess.run([args.impress, "eval", "--model", args.model, "--task-file", path, "--system", "recomp",
                        "--samples", samples, "--json", eval_json], check=True, stdout=subprocess.DEVNULL)
        provenance = json.load(open(eval_json))["provenance"]  # the build and machine that generated
        lines = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
        got = [json.loads(l) for l in open(samples, encoding="utf-8")]
        run_json = os.path.join(tmp, "run.json")
        subprocess.run([args.impress, "run", "--model", args.model, "--task-file", path, "--system", "recomp",
                        "--requests", str(2 * len(lines)), "--warmup", "0", "--json", run_json],
                       check=True, stdout=subprocess.DEVNULL)
        requests = json.load(open(run_json))["runs"][0]["per_request"]

    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    # The model's end-of-sequence ids (generation_config's, where it names its own): impress stops there too.
    eos = model.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos]) | {model.config.eos_token_id}
    by_line = {g["line"]: g for g in got}
    rows, bad = [], 0
    with torch.inference_mode():
        for i, line in enumerate(lines, 1):
            g = by_line[i]
            ids = tok(g["context"].rstrip(), add_special_tokens=False)["input_ids"]
            n = line.get("max_new_tokens", 16)
            x = torch.tensor([ids])
            out = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=n, do_sample=False, num_beams=1,
                                 pad_token_id=model.config.eos_token_id)[0, len(ids):].tolist()
            stop = [i for i, t in enumerate(out) if t in eos]
            out = out[:stop[0]] if stop else out
            same = out == g["output_ids"]
            bad += not same
            rows.append({"line": i, "context_tokens": len(ids), "impress": g["output_ids"], "transformers": out,
                         "equal": same, "output": g["output"], "answers": line["answers"]})
            if not same:
                print(f"line {i}: impress {g['output_ids']} transformers {out}", file=sys.stderr)
    run_bad = 0
    for r in requests:  # run's first token comes from the request path (TTFT's), the rest as eval decodes
        g = by_line[r["line"]]
        if r["output"] != g["output"]:
            run_bad += 1
            print(f"run, line {r['line']}: {r['output']!r}, eval {g['output']!r}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "impress": provenance, "transformers": transformers.__version__,
                       "lines": rows, "equal": len(rows) - bad, "of": len(rows),
                       "run_requests": len(requests), "run_equal": len(requests) - run_bad}, f, indent=1)
    print(f"check_task_file_generation: {len(rows) - bad} of {len(rows)} lines' greedy tokens equal to transformers'; "
          f"{len(requests) - run_bad} of {len(requests)} run requests' outputs equal to eval's")
    return 1 if bad or run_bad or not requests else 0


if __name__ == "__main__":
    sys.exit(main())
