#!/usr/bin/env bash
# Fills data/ with the PIQA, RTE, COPA and OpenBookQA splits.
#   scripts/data.sh --from DIR [--to data]   copy normalized JSONL splits from DIR
#   scripts/data.sh --download [--to data]   fetch them from the Hugging Face hub (internet)
# DIR holds <task>/<split>.jsonl as described in docs/data.md.
set -euo pipefail
from=""; to="data"; download=0
while [ $# -gt 0 ]; do
  case "$1" in
    --from) from="$2"; shift 2;;
    --download) download=1; shift;;
    --to) to="$2"; shift 2;;
    *) echo "data.sh: unknown argument '$1'" >&2; exit 2;;
  esac
done
if [ "$download" -eq 1 ]; then
  exec python3 "$(dirname "$0")/download_data.py" --out "$to"
fi
[ -n "$from" ] || { echo "data.sh: --from DIR or --download is required" >&2; exit 2; }
[ -d "$from" ] || { echo "data.sh: $from: no such directory" >&2; exit 1; }
need=(piqa/train piqa/validation rte/train rte/validation copa/train copa/validation
      openbookqa/train openbookqa/validation openbookqa/test)
for s in "${need[@]}"; do
  [ -s "$from/$s.jsonl" ] || { echo "data.sh: $from/$s.jsonl: missing split" >&2; exit 1; }
done
for s in "${need[@]}"; do
  mkdir -p "$to/$(dirname "$s")"
  cp "$from/$s.jsonl" "$to/$s.jsonl"
done
echo "data.sh: ${#need[@]} splits in $to/"
