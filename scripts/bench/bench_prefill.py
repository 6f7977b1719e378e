#!/usr/bin/env python3
"""Prefill throughput of transformers on the same prompt impress_bench uses.

Same token ids ((i * 7919 + 13) % vocab), logits of the last token only (as
generate() asks for in prefill), the default attention (SDPA); fp32 on CPU by
default, --device cuda --dtype float16 on a GPU.
Prints one JSON line: {"tok_s": ..., "threads": ..., "seconds": [...]}.
"""
import argparse
import json
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype)).eval().to(args.device)
    v = model.config.vocab_size
    ids = torch.tensor([[(i * 7919 + 13) % v for i in range(args.tokens)]], device=args.device)
    times = []
    with torch.inference_mode():
        model(ids, logits_to_keep=1).logits.cpu()  # warm-up
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            model(ids, logits_to_keep=1).logits.float().cpu()  # ends with the logits in host memory
            times.append(time.perf_counter() - t0)
    best = min(times)
    print(json.dumps({"tok_s": args.tokens / best, "threads": torch.get_num_threads(), "seconds": times}))


if __name__ == "__main__":
    main()
