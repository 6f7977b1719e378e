#!/usr/bin/env python3
"""Run lm-evaluation-harness (HF backend) on the local dataset files.

Task configs are lm-eval's own templates for piqa, rte, copa and openbookqa
(see docs/data.md), pointed at data/<task>/*.jsonl instead of the hub.
Writes OUT.json: {"tasks": {task: {"acc", "acc_norm", "n", "docs": [{"doc_id",
"ll": [per-choice log-likelihood], "pred", "gold"}]}}}.
"""
import argparse
import json
import os
import tempfile

TEMPLATES = {
    "piqa": dict(train="piqa/train.jsonl", eval="piqa/validation.jsonl", split="validation",
                 text='"Question: {{goal}}\\nAnswer:"', target="label", choice='"{{[sol1, sol2]}}"', norm=True),
    "rte": dict(train="rte/train.jsonl", eval="rte/validation.jsonl", split="validation",
                text='"{{sentence1}}\\nQuestion: {{sentence2}} True or False?\\nAnswer:"', target="label",
                choice="['True', 'False']", norm=False),
    "copa": dict(train="copa/train.jsonl", eval="copa/validation.jsonl", split="validation",
                 text="!function utils.doc_to_text", target="!function utils.doc_to_target",
                 choice="!function utils.doc_to_choice", norm=False),
    "openbookqa": dict(train="openbookqa/train.jsonl", eval="openbookqa/test.jsonl", split="test",
                       text="question_stem", target='"{{choices.label.index(answerKey.lstrip())}}"',
                       choice='"{{choices.text}}"', norm=True),
}

# COPA's helpers, as lm-eval's super_glue/copa/utils.py defines them.
COPA_UTILS = '''
def convert_choice(choice):
    return choice[0].lower() + choice[1:]


def doc_to_text(doc):
    connector = {"cause": "because", "effect": "therefore"}[doc["question"]]
    return doc["premise"].strip()[:-1] + f" {connector}"


def doc_to_target(doc):
    correct_choice = doc["choice1"] if doc["label"] == 0 else doc["choice2"]
    return " " + convert_choice(correct_choice)


def doc_to_choice(doc):
    return [" " + convert_choice(doc["choice1"]), " " + convert_choice(doc["choice2"])]
'''


def write_tasks(task_dir, data_dir):
    with open(os.path.join(task_dir, "utils.py"), "w") as f:
        f.write(COPA_UTILS)
    for name, t in TEMPLATES.items():
        metrics = "  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
        if t["norm"]:
            metrics += "  - metric: acc_norm\n    aggregation: mean\n    higher_is_better: true\n"
        split_key = "test_split" if t["split"] == "test" else "validation_split"
        with open(os.path.join(task_dir, f"{name}_local.yaml"), "w") as f:
            f.write(f"""task: {name}_local
dataset_path: json
dataset_kwargs:
  data_files:
    train: {os.path.join(data_dir, t['train'])}
    {t['split']}: {os.path.join(data_dir, t['eval'])}
output_type: multiple_choice
training_split: train
{split_key}: {t['split']}
doc_to_text: {t['text']}
doc_to_target: {t['target']}
doc_to_choice: {t['choice']}
metric_list:
{metrics}metadata:
  version: 1.0
""")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", default="data")
    ap.add_argument("--tasks", default="piqa,rte,copa,openbookqa")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--shots", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    try:
        import lm_eval
        from lm_eval.tasks import TaskManager
    except ImportError:
        raise SystemExit("run_lm_eval: lm_eval is not installed: pip install lm_eval==0.4.9.1")

    with tempfile.TemporaryDirectory() as task_dir:
        write_tasks(task_dir, os.path.abspath(args.data))
        tm = TaskManager(include_path=task_dir)
        names = [f"{t}_local" for t in args.tasks.split(",")]
        res = lm_eval.simple_evaluate(
            model="hf", model_args=f"pretrained={os.path.abspath(args.model)},dtype=float32",
            tasks=names, num_fewshot=args.shots, batch_size=args.batch_size, device="cpu", limit=args.limit,
            log_samples=True, task_manager=tm, random_seed=0, numpy_random_seed=1234, torch_random_seed=1234)
    out = {"model": args.model, "shots": args.shots, "lm_eval_version": lm_eval.__version__, "tasks": {}}
    for name in names:
        task = name[: -len("_local")]
        r = res["results"][name]
        docs = []
        for s in sorted(res["samples"][name], key=lambda s: s["doc_id"]):
            ll = [float(x[0]) for x in s["filtered_resps"]]
            docs.append({"doc_id": s["doc_id"], "ll": ll, "pred": max(range(len(ll)), key=ll.__getitem__),
                         "gold": s["target"] if isinstance(s["target"], int) else None})
        out["tasks"][task] = {"n": len(docs), "acc": r["acc,none"], "acc_norm": r.get("acc_norm,none"), "docs": docs}
    with open(args.out, "w") as f:
        json.dump(out, f)
    for t, r in out["tasks"].items():
        print(f"{t:12s} n={r['n']:5d} acc={r['acc']:.4f} acc_norm={r['acc_norm']}")


if __name__ == "__main__":
    main()
