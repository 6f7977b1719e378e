#!/usr/bin/env bash
# Checks the files a folder's SHA256SUMS lists against their recorded sha256:
#   scripts/check/check_checksums.sh DIR [DIR ...]      (make data; the data_checksums test)
# Prints one line per file that is missing or differs, naming it, and exits 1;
# prints one summary line and exits 0 when every file matches.
set -euo pipefail
bad=0; count=0
for dir in "$@"; do
  sums="$dir/SHA256SUMS"
  [ -f "$sums" ] || { echo "check_checksums: $sums: missing" >&2; exit 1; }
  while read -r want name; do
    [ -n "$name" ] || continue
    count=$((count + 1))
    file="$dir/$name"
    if [ ! -f "$file" ]; then
      echo "check_checksums: $file: missing (listed in $sums)" >&2; bad=1; continue
    fi
    have=$(sha256sum "$file" | cut -d' ' -f1)
    if [ "$have" != "$want" ]; then
      echo "check_checksums: $file: sha256 $have differs from the recorded $want ($sums)" >&2; bad=1
    fi
  done < "$sums"
done
[ "$bad" -eq 0 ] || exit 1
echo "check_checksums: $count files match their recorded sha256 ($*)"
