#!/usr/bin/env bash
# data/ holds the PIQA, RTE, COPA and OpenBookQA splits (data/README.md). This
# script checks them or refreshes them:
#   scripts/setup/data.sh                         check data/ against data/SHA256SUMS
#   scripts/setup/data.sh --from DIR [--to data]  copy normalized JSONL splits from DIR, then check
#   scripts/setup/data.sh --download [--to data]  fetch them from the Hugging Face hub (internet), then check
# DIR holds <task>/<split>.jsonl as described in data/README.md. A refresh that
# changes a file fails the check, naming it; if the change is meant, record it:
#   (cd data && sha256sum */*.jsonl > SHA256SUMS), and update data/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
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
  python3 "$here/download_data.py" --out "$to"
elif [ -n "$from" ]; then
  [ -d "$from" ] || { echo "data.sh: $from: no such directory" >&2; exit 1; }
  # the splits data/SHA256SUMS records (the task table's files, and RTE's SuperGLUE validation)
  mapfile -t need < <(awk '{sub(/\.jsonl$/, "", $2); print $2}' "$here/../../data/SHA256SUMS")
  for s in "${need[@]}"; do
    [ -s "$from/$s.jsonl" ] || { echo "data.sh: $from/$s.jsonl: missing split" >&2; exit 1; }
  done
  for s in "${need[@]}"; do
    mkdir -p "$to/$(dirname "$s")"
    cp "$from/$s.jsonl" "$to/$s.jsonl"
  done
  echo "data.sh: ${#need[@]} splits copied into $to/"
fi
exec bash "$here/../check/check_checksums.sh" "$to"
