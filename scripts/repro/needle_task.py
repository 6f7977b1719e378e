#!/usr/bin/env python3
"""RULER's needle task as a task file, written by lm-evaluation-harness's own
generator (lm_eval.tasks.ruler.prepare_niah, pinned in scripts/setup/requirements.txt).

Each haystack is one sample of lm-eval's `generate_samples` with the repeat
haystack ("The grass is green. The sky is blue. ..."), K keys (adjective-noun
words) and 7-digit values, sized by lm-eval to --tokens with room for
--max-new generated tokens: RULER's niah_multikey_1 shape with K keys. The
sample's text up to its question is the context; every key gets one line in
RULER's single-key wording and answer prefix ("\\nWhat is the special magic
number for KEY mentioned in the provided text? The special magic number for
KEY mentioned in the provided text is"), the line of lm-eval's own queried key
equal to its sample's input and gen_prefix as lm-eval joins them (checked
here). Answers: the key's value, scored as RULER scores (it occurs in the output).

  needle_task.py --model DIR --haystacks H --keys K --tokens T [--seed S] [--max-new N] > F.jsonl
"""
import argparse
import contextlib
import io
import json
import random
import re
import sys

# RULER's niah template (lm_eval/tasks/ruler/niah_utils.py's TEMPLATE).
TEMPLATE = ("Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
            "I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic "
            "{type_needle_v} for {query} mentioned in the provided text?")
NEEDLE = re.compile(r"One of the special magic numbers for (.+?) is: (\d+)\.")


def question(key):
    """RULER's single-key question and, after lm-eval's " " delimiter, its answer prefix."""
    return (f"\nWhat is the special magic number for {key} mentioned in the provided text? "
            f"The special magic number for {key} mentioned in the provided text is")


def lines(tok, haystacks, keys, tokens, seed, max_new=16):
    """The task file's lines: `haystacks` samples of lm-eval's generator, one line per key."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        from lm_eval.tasks.ruler import prepare_niah  # its import tries to fetch nltk data: offline, it says so
    random.seed(seed)  # lm-eval's generator draws keys, values and positions from `random`
    samples = prepare_niah.generate_samples(
        prepare_niah.get_haystack(type_haystack="repeat"), TOKENIZER=tok, max_seq_length=tokens,
        type_haystack="repeat", type_needle_k="words", type_needle_v="numbers", template=TEMPLATE,
        num_samples=haystacks, tokens_to_generate=max_new, num_needle_k=keys, random_seed=seed)
    out = []
    for s in samples:
        at = s["input"].rindex("\nWhat is the special magic number for ")
        context, asked = s["input"][:at], s["input"][at:]
        found = NEEDLE.findall(context)
        if len(found) != keys or len({k for k, _ in found}) != keys:
            raise SystemExit(f"needle_task: sample {s['index']} holds {len(found)} needles, not {keys} distinct keys")
        query = next(k for k, v in found if v == s["outputs"][0])
        if question(query) != asked + " " + s["gen_prefix"]:
            raise SystemExit(f"needle_task: lm-eval asked {asked + ' ' + s['gen_prefix']!r}, not {question(query)!r}")
        for key, value in found:
            out.append({"context": context, "question": question(key), "answers": [value], "max_new_tokens": max_new})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="tokenizer directory (Hugging Face format)")
    ap.add_argument("--haystacks", type=int, default=8)
    ap.add_argument("--keys", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=2048, help="lm-eval's max_seq_length: prompt plus --max-new")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-new", type=int, default=16, help="tokens generated per question (RULER: 128)")
    args = ap.parse_args()
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(args.model)
    for line in lines(tok, args.haystacks, args.keys, args.tokens, args.seed, args.max_new):
        sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
