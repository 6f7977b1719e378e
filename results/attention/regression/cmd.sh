# Why the accuracy regression's retrieval/digest row moved with the fused CPU attention: the row's questions
# (retrieval, 1K haystacks, 40 questions, 25%) scored by digest on 822d7f8's build (LibTorch's kernels) and on
# ebd0b7e's, each question's gold log-likelihood compared. Usage, from the checkout's root:
#   bash results/attention/regression/cmd.sh BEFORE_IMPRESS
before=${1:?usage: cmd.sh BEFORE_IMPRESS}
for side in before after; do
  bin=build/impress; [ "$side" = before ] && bin=$before
  OMP_NUM_THREADS=1 "$bin" eval --model models/smollm2-135m --task retrieval --prefix-tokens 1024 --limit 40 \
    --retention 0.25 --system digest --samples results/attention/regression/digest_$side.jsonl \
    --json results/attention/regression/digest_$side.json > /dev/null
done
python3 - <<'PY' | tee results/attention/regression/compare.txt
import json
rows = {s: [json.loads(l) for l in open(f"results/attention/regression/digest_{s}.jsonl")] for s in ("before", "after")}
gold = lambda r: r["loglik"][r["gold"]]
d = sorted(((abs(gold(a) - gold(b)), a["doc"], gold(a), gold(b), a["pred"], b["pred"])
            for a, b in zip(rows["before"], rows["after"])), reverse=True)
print("questions", len(d), "| |gold loglik change| > 1e-3:", sum(x[0] > 1e-3 for x in d))
for x in d[:3]:
    print(f"doc {x[1]}: gold loglik {x[2]:.5f} -> {x[3]:.5f}, prediction {x[4]} -> {x[5]}")
print("largest change among the rest:", f"{max(x[0] for x in d if x[0] <= 1e-3):.2e}")
print(f"mean gold loglik {sum(gold(r) for r in rows['before']) / len(d):.5f} -> {sum(gold(r) for r in rows['after']) / len(d):.5f}")
PY
