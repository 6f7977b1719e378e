#!/usr/bin/env bash
# One TTFT table (the paper's Fig. 16/17/18/20/21 quantities) for every system
# on one task, written as OUT.md (command, machine, the run's table, its
# per-layer lines) and OUT.json.
# Usage: scripts/repro/ttft_table.sh OUT MODEL BUILD STORE [extra impress run flags...]
set -euo pipefail
out=$1; model=$2; build=$3; store=$4; shift 4
systems=${SYSTEMS:-$("$build/impress" list systems --paper | paste -sd,)}
cmd=("$build/impress" run --model "$model" --system "$systems" --store "$store" --json "$out.json" "$@")
mkdir -p "$(dirname "$out")"
table=$("${cmd[@]}")
{
  echo "# TTFT per system: $(basename "$out")"
  echo
  echo '```'
  echo "${cmd[*]}"
  echo '```'
  echo
  echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB RAM, no GPU; $(date -u +%Y-%m-%d)."
  echo
  echo "$table"
} > "$out.md"
cat "$out.md"
