# Each speculation mode's run (JSON config and report) and the flags' exclusions, for one binary.
bin=$1; out=$2; mkdir -p $out
for f in "" --speculate --speculate-cached --speculate-adaptive; do
  n=${f:-off}; n=${n#--}; rm -rf /tmp/st_cmp
  OMP_NUM_THREADS=2 $bin run --model models/smollm2-135m --task retrieval --prefix-tokens 512 --pool 1 --requests 3 --warmup 1 \
    --system impress,digest --store /tmp/st_cmp $f --json $out/$n.json > $out/$n.md 2>&1
  python3 -c "import json,sys;d=json.load(open('$out/$n.json'));d.pop('provenance');[r.pop(k) for r in d['runs'] for k in list(r) if 'ms' in k or k=='per_request'];print(json.dumps(d,sort_keys=True))" > $out/$n.cmp
  grep -v "^|\|ms\|^$" $out/$n.md | grep -v "per request\|selection per" > $out/$n.report
done
for pair in "--speculate --speculate-cached" "--speculate-cached --speculate-adaptive" "--speculate --speculate-adaptive" "--no-prefetch --speculate-adaptive" "--speculate-adaptive --no-prefetch"; do
  $bin run --model models/smollm2-135m --system digest $pair > /dev/null 2>> $out/errors.txt; echo "rc $?" >> $out/errors.txt
done
