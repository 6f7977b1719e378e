#!/usr/bin/env python3
"""Run lm-evaluation-harness (HF backend) on the local dataset files.

Task configs are lm-eval's own templates for piqa, rte, copa and openbookqa
(see docs/data.md), pointed at the split files instead of the hub: which
tasks there are and their files come from the task table (`impress list
tasks --json`, --impress), the templates from lm-eval.
Writes OUT.json: {"tasks": {task: {"acc", "acc_norm", "n", "docs": [{"doc_id",
"ll": [per-choice log-likelihood], "pred", "gold"}]}}}.
"""
import argparse
import json
import os
import subprocess
import tempfile

TEMPLATES = {
    "piqa": dict(text='"Question: {{goal}}\\nAnswer:"', target="label", choice='"{{[sol1, sol2]}}"', norm=True),
    "rte": dict(text='"{{sentence1}}\\nQuestion: {{sentence2}} True or False?\\nAnswer:"', target="label",
                choice="['True', 'False']", norm=False),
    "copa": dict(text="!function utils.doc_to_text", target="!function utils.doc_to_target",
                 choice="!function utils.doc_to_choice", norm=False),
    "openbookqa": dict(text="question_stem", target='"{{choices.label.index(answerKey.lstrip())}}"',
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


def task_table(impress):
    """{name: row} of the multiple-choice tasks in impress's task table."""
    out = subprocess.run([impress, "list", "tasks", "--json"], check=True, capture_output=True, text=True).stdout
    rows = {t["name"]: t for t in json.loads(out)["tasks"] if t["kind"] == "multiple choice"}
    missing = sorted(set(rows) - set(TEMPLATES))
    if missing:
        raise SystemExit(f"run_lm_eval: no lm-eval template here for {', '.join(missing)} (TEMPLATES)")
    return rows


def write_tasks(task_dir, data_dir, table):
    with open(os.path.join(task_dir, "utils.py"), "w") as f:
        f.write(COPA_UTILS)
    for name, row in table.items():
        t = dict(TEMPLATES[name], train=row["shots_file"], eval=row["scored_file"], split=row["scored_split"])
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
    ap.add_argument("--impress", default="build/impress", help="the impress binary whose task table names the tasks")
    ap.add_argument("--tasks", default=None, help="comma-separated (default: every multiple-choice task)")
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
        table = task_table(args.impress)
        write_tasks(task_dir, os.path.abspath(args.data), table)
        tm = TaskManager(include_path=task_dir)
        names = [f"{t}_local" for t in (args.tasks.split(",") if args.tasks else table)]
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
