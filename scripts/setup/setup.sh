#!/usr/bin/env bash
# Installs what impress needs on Debian 12: compilers and C++ libraries from
# Debian, LibTorch and the reference tools from PyPI. Safe to run again.
set -euo pipefail

DEBS=(build-essential cmake ninja-build ccache pkg-config git
      libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
      libpcre2-dev liburing-dev fio
      libhiredis-dev redis-server redis-tools)

missing=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

PYTHON=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
if ! $PYTHON - "$here/requirements.txt" <<'PY' 2>/dev/null
import sys, importlib.metadata as md
for line in open(sys.argv[1]):
    line = line.split('#')[0].strip()
    if not line: continue
    name, _, ver = line.partition('==')
    have = md.version(name)
    if ver and have.split('+')[0] != ver: raise SystemExit(1)
PY
then
  echo "setup: installing Python packages from scripts/setup/requirements.txt"
  $PYTHON -m pip install -q -r "$here/requirements.txt"
fi
echo "setup: dependencies ready"
