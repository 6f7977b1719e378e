#!/usr/bin/env bash
# The retrieval task is one producer of task files: `eval --task retrieval
# --write-task-file F` writes the questions eval scores, and `eval --task-file F`
# must choose exactly what `eval --task retrieval` chose (every prediction and
# the accuracy), under a selecting system.
# Usage: retrieval_task_file.sh IMPRESS_BINARY MODEL_DIR DATA_DIR
set -euo pipefail
bin=$1; model=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
flags=(--data "$data" --limit 12 --prefix-tokens 384 --seed 5)
"$bin" eval --model "$model" --task retrieval "${flags[@]}" --write-task-file "$tmp/r.jsonl"
test "$(wc -l <"$tmp/r.jsonl")" -eq 12 || { echo "FAIL: $tmp/r.jsonl does not hold 12 questions"; exit 1; }
"$bin" eval --model "$model" --task retrieval "${flags[@]}" --system h2o-lru --retention 0.25 --json "$tmp/task.json" >/dev/null
"$bin" eval --model "$model" --task-file "$tmp/r.jsonl" --system h2o-lru --retention 0.25 --json "$tmp/file.json" >/dev/null
python3 - "$tmp/task.json" "$tmp/file.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["results"][0] for p in sys.argv[1:])
assert len(a["preds"]) == 12, a["preds"]
if a["preds"] != b["preds"] or a["acc"] != b["acc"] or a["kept_share"] != b["kept_share"]:
    sys.exit(f"FAIL: --task retrieval {a['preds']} acc {a['acc']}, its task file {b['preds']} acc {b['acc']}")
print(f"retrieval_task_file: 12 of 12 predictions equal (acc {a['acc']:.3f}, kept {a['kept_share']:.3f})")
PY
