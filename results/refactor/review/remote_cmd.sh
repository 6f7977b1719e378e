#!/bin/bash
# usage: results/refactor/review/remote_cmd.sh BIN OUTDIR PORT (from the repository root): machine A
# publishes a PIQA pool to a loopback cluster, machine B (an empty store) runs all seven systems at
# both ITF units from it. Compare two OUTDIRs with compare_runs_exact.py A/b.json B/b.json.
set -e
bin=$1; out=$2; port=$3; mkdir -p $out; t=$(mktemp -d)
url=$(TMPDIR=$t bash scripts/setup/redis_cluster.sh start $port)
args="--model models/smollm2-135m --task piqa --pool 2 --prefix-tokens 512 --requests 6 --warmup 2 --gpu-cache 2M --cpu-cache 4M --remote $url"
OMP_NUM_THREADS=2 $bin run $args --system as --store $t/a --json $out/a.json > $out/a.log 2>&1
OMP_NUM_THREADS=2 $bin run $args --system recomp,as,h2o-lru,h2o-lfu,impress-itf,impress-itf-ro,impress --itf-unit token,chunk --store $t/b --json $out/b.json > $out/b.log 2>&1
bash scripts/setup/redis_cluster.sh stop $port; rm -rf $t
