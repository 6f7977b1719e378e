# BUILD OUT: a PIQA stream through every system from a fresh store (the fill and the stores go through Insert)
rm -rf $2/store; mkdir -p $2
OMP_NUM_THREADS=2 $1/impress run --model models/smollm2-135m --task piqa --pool 2 --prefix-tokens 512 --requests 8 --warmup 2 \
  --gpu-cache 2M --cpu-cache 4M --system recomp,as,h2o-lru,h2o-lfu,impress-itf,impress-itf-ro,impress --kv-codec int8 --store $2/store --json $2/run.json > $2/run.log 2>&1
