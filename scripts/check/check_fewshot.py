#!/usr/bin/env python3
"""Few-shot log-likelihoods of `impress eval` against transformers.

Runs `impress eval --shots K --limit N --samples` on every task, then feeds
transformers the same context strings and choices, tokenized the way
lm-eval's HF backend does it (_encode_pair), and checks every choice's
log-likelihood within --tol. Exit 1 on any mismatch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def encode_pair(tok, context, continuation):
    n = len(context) - len(context.rstrip())
    if n > 0:
        continuation = context[-n:] + continuation
        context = context[:-n]
    whole = tok(context + continuation, add_special_tokens=False)["input_ids"]
    ctx = tok(context, add_special_tokens=False)["input_ids"]
    return ctx, whole[len(ctx):]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--impress", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", default="data")
    ap.add_argument("--shots", type=int, default=5)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--tol", type=float, default=1e-3)
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        samples = os.path.join(tmp, "samples.jsonl")
        subprocess.run([args.impress, "eval", "--model", args.model, "--task", "all", "--data", args.data,
                        "--shots", str(args.shots), "--limit", str(args.limit), "--samples", samples],
                       check=True, stdout=subprocess.DEVNULL)
        docs = [json.loads(l) for l in open(samples, encoding="utf-8")]

    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    worst, bad, checked = 0.0, 0, 0
    with torch.inference_mode():
        for d in docs:
            for i, choice in enumerate(d["choices"]):
                ctx, cont = encode_pair(tok, d["context"], " " + choice)
                ids = torch.tensor([ctx + cont])
                logp = torch.log_softmax(model(ids).logits[0, len(ctx) - 1:-1].float(), -1)
                ll = logp.gather(1, torch.tensor(cont).unsqueeze(1)).sum().item()
                diff = abs(ll - d["loglik"][i])
                worst = max(worst, diff)
                checked += 1
                if diff > args.tol:
                    bad += 1
                    print(f"MISMATCH {d['task']} doc {d['doc']} choice {i}: impress {d['loglik'][i]:.6f} "
                          f"transformers {ll:.6f}")
    tasks = sorted({d["task"] for d in docs})
    print(f"check_fewshot: {len(docs)} documents ({', '.join(tasks)}), {args.shots}-shot, {checked} choices; "
          f"max |diff| {worst:.2e} (tol {args.tol}); {checked - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
