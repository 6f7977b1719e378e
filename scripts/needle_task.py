#!/usr/bin/env python3
"""A task file of needle questions in RULER's single-needle form (its repeat
haystack, "One of the special magic numbers for <key> is: <7 digits>." needles
and its answer prefix), K keys per haystack, one generation line per key,
answers the key's number. A stand-in written here until lm-evaluation-harness's
own generator is pinned (issue: RULER through lm-eval).

  needle_task.py --model DIR --haystacks H --keys K --tokens T [--seed S] > F.jsonl
"""
import argparse
import json
import random
import sys

HAYSTACK = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
INTRO = "Special magic numbers are hidden in the text below. Remember them: questions about them follow.\n"
ADJECTIVES = ["quiet", "brave", "curious", "gentle", "hollow", "vivid", "ancient", "fierce", "silent", "lucky",
              "crimson", "frozen", "golden", "humble", "nimble", "rusty"]
NOUNS = ["river", "lantern", "falcon", "meadow", "anchor", "violin", "harbor", "pebble", "orchard", "comet",
         "tunnel", "compass", "glacier", "ribbon", "saddle", "thimble"]


def lines(tok, haystacks, keys, tokens, seed):
    """The task file's lines: `keys` needles at even depths in each haystack of about `tokens` tokens."""
    rng = random.Random(seed)
    per = len(tok(HAYSTACK, add_special_tokens=False)["input_ids"])
    reps = max(1, tokens // per)
    out = []
    for _ in range(haystacks):
        pairs = rng.sample([(a, n) for a in ADJECTIVES for n in NOUNS], keys)
        names = [f"{a}-{n}" for a, n in pairs]
        values = [str(rng.randint(1000000, 9999999)) for _ in names]
        chunks = [HAYSTACK] * reps
        for i, (name, value) in enumerate(zip(names, values)):
            at = (i + 1) * reps // (keys + 1)
            chunks.insert(at + i, f"One of the special magic numbers for {name} is: {value}. ")
        context = INTRO + "".join(chunks)
        for name, value in zip(names, values):
            question = (f"\nWhat is the special magic number for {name} mentioned in the provided text? "
                        f"The special magic number for {name} mentioned in the provided text is")
            out.append({"context": context, "question": question, "answers": [value], "max_new_tokens": 12})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="tokenizer directory (Hugging Face format)")
    ap.add_argument("--haystacks", type=int, default=8)
    ap.add_argument("--keys", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(args.model)
    for line in lines(tok, args.haystacks, args.keys, args.tokens, args.seed):
        sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
