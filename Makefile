# impress: the user's entry point. `make setup` once, then `make test`.
# Knobs: LIBTORCH=/path/to/libtorch (default: the PyPI torch wheel's),
#        FROM=DIR (refresh data/ from DIR with `make data`), JOBS=2, BUILD=build.

PYTHON   ?= python3
BUILD    ?= build
JOBS     ?= 2
FROM     ?=
MODEL    ?= models/smollm2-135m
TORCH_CMAKE := $(shell $(PYTHON) -c "import importlib.util,os;s=importlib.util.find_spec('torch');print(os.path.join(s.submodule_search_locations[0],'share','cmake') if s else '')" 2>/dev/null)
PREFIX   := $(if $(LIBTORCH),$(LIBTORCH),$(TORCH_CMAKE))
GENERATOR := $(if $(shell command -v ninja),-G Ninja,)

.PHONY: setup build test tsan asan fuzz bench demo model data fixtures reproduce figures results clean help

help:
	@echo "make setup   install dependencies, prepare $(MODEL), check data/ (once per machine)"
	@echo "make test    build, prepare test fixtures, run every test"
	@echo "make tsan    the tests under ThreadSanitizer (make asan: AddressSanitizer + UBSan)"
	@echo "make fuzz    fuzz the file parsers with libFuzzer, FUZZ_SECONDS each (needs clang)"
	@echo "make bench   prefill vs transformers; store read bandwidth vs fio; remote reads vs redis-benchmark; selection cost; KV codec decode vs memcpy"
	@echo "make demo    the main job on the default model: IMPRESS vs its baselines (TTFT, I/O), then accuracy (DETAIL=1: all of it)"
	@echo "make reproduce  every paper figure on $(MODEL) at the reduced scale (docs/reproduce.md), then make figures"
	@echo "make figures    draw results/figures/*.png from their JSON"
	@echo "make results    re-measure the tables docs/results.md cites (STEPS=..., scripts/repro/results.sh)"

setup:
	bash scripts/setup/setup.sh
	$(MAKE) model data

model: $(MODEL)/config.json
$(MODEL)/config.json:
	$(PYTHON) scripts/setup/prepare_smollm2.py --out $(MODEL)

# data/ is in the repository; this checks it against data/SHA256SUMS, or with
# FROM=DIR first copies the splits from DIR (data/README.md says how to record a change).
data:
	bash scripts/setup/data.sh $(if $(FROM),--from $(FROM)) --to data

$(BUILD)/CMakeCache.txt:
	@test -n "$(PREFIX)" || { echo "LibTorch not found: run 'make setup' or pass LIBTORCH=/path/to/libtorch"; exit 1; }
	cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$(PREFIX)"

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Tiny OPT/Llama checkpoints and Hugging Face reference outputs for the tests.
fixtures: build
	$(PYTHON) scripts/setup/make_fixtures.py --out $(BUILD)/fixtures --model $(MODEL)

# Tests run JOBS at a time, one thread each: parallel tests with a thread pool
# apiece oversubscribe the cores and spin.
test: fixtures
	cd $(BUILD) && OMP_NUM_THREADS=1 ctest --output-on-failure -j $(JOBS)

# The test suite under ThreadSanitizer (requests, the reorderer and the I/O
# pool run concurrently) and under AddressSanitizer + UBSan, each in its own
# build folder. The model tests against transformers and the accuracy
# regression are left to `make test` (under instrumentation they take long
# and exercise no threads of ours), as are the tests that drive the
# executable (the sanitized build makes only the test binary).
SAN_SKIP := ModelVsTransformers|Tokenizer|Regression|fewshot|reuse_accuracy|accuracy_regression|cli_errors|reproduce_smoke|sweep_cli|store_full|store_damage|store_repair_crash|prefix_tokens|paired_test|selection_vs_reference|docs_check|remote_tier|store_heal|provenance
tsan: fixtures
	cmake -S . -B $(BUILD)-tsan $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$(PREFIX)" -DIMPRESS_SANITIZE=thread
	cmake --build $(BUILD)-tsan -j $(JOBS) --target impress_tests
	cd $(BUILD)-tsan && IMPRESS_FIXTURES=$(abspath $(BUILD))/fixtures OMP_NUM_THREADS=1 \
	  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(abspath tests/tsan.supp)" \
	  ctest --output-on-failure -j $(JOBS) -E '$(SAN_SKIP)|fuzz_corpus'

asan: fixtures
	cmake -S . -B $(BUILD)-asan $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$(PREFIX)" -DIMPRESS_SANITIZE=address
	cmake --build $(BUILD)-asan -j $(JOBS) --target impress_tests fuzz_replays
	cd $(BUILD)-asan && IMPRESS_FIXTURES=$(abspath $(BUILD))/fixtures OMP_NUM_THREADS=1 \
	  ASAN_OPTIONS="detect_leaks=0 halt_on_error=1" UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1" \
	  ctest --output-on-failure -j $(JOBS) -E '$(SAN_SKIP)'

bench: build
	bash scripts/bench/bench_prefill.sh $(MODEL) $(BUILD)
	bash scripts/bench/bench_store.sh $(BUILD)
	bash scripts/bench/bench_remote.sh $(BUILD)
	OMP_NUM_THREADS=1 $(BUILD)/impress_select_bench
	OMP_NUM_THREADS=2 $(BUILD)/impress_attention_bench
	$(BUILD)/impress_codec_bench

# The main job in about two minutes on two cores, headline first: TTFT of
# IMPRESS and this project's digest system against the baselines over a
# request stream (mean, p99, speedup over h2o-lfu, disk bytes), then accuracy
# where the prefix decides the answer (40 retrieval questions over 1K-token
# haystacks). DETAIL=1 adds the full run report, the chunk unit on the same
# store (which keeps digests) and PIQA's accuracy behind the same prefixes.
DEMO_RUN := --model $(MODEL) --task piqa --retention 0.25 --pool 4 --prefix-tokens 1024 --requests 8 \
            --warmup 4 --gpu-cache 8M --cpu-cache 16M --store $(BUILD)/demo-store-digests
DEMO_EVAL := --model $(MODEL) --task piqa --retention 0.25 --prefix-tokens 1024 --limit 30
DEMO_RETRIEVAL := --model $(MODEL) --task retrieval --retention 0.25 --prefix-tokens 1024 --limit 40
DETAIL ?=
demo: build model data
	$(BUILD)/impress run $(DEMO_RUN) --system recomp,as,h2o-lfu,impress,digest $(if $(DETAIL),,--brief)
	for s in h2o-lru impress-itf digest random; do \
	  $(BUILD)/impress eval $(DEMO_RETRIEVAL) --system $$s > $(BUILD)/demo-eval.txt || exit 1; \
	  grep -E '^model|^\| (task|retrieval)' $(BUILD)/demo-eval.txt; done
	if [ -n "$(DETAIL)" ]; then \
	  $(BUILD)/impress run $(DEMO_RUN) --system h2o-lfu,impress --itf-unit chunk && \
	  for s in h2o-lru impress-itf digest; do $(BUILD)/impress eval $(DEMO_EVAL) --system $$s || exit 1; done; fi

# The parsers of files users hand us (safetensors, tokenizer.json, dataset
# splits, a store's log and manifest) under libFuzzer with ASan and UBSan,
# FUZZ_SECONDS each (needs clang and libclang-rt-14-dev; docs/fuzzing.md).
FUZZ_SECONDS ?= 60
fuzz:
	bash scripts/check/fuzz.sh $(FUZZ_SECONDS)

# The paper's figures at the reduced scale of docs/reproduce.md (14 minutes
# on two cores); FIGURES=fig16,fig18 picks some, STORE the stores.
FIGURES ?= all
STORE   ?= stores
reproduce: build model data
	$(BUILD)/impress reproduce $(subst $(comma), ,$(FIGURES)) --model $(MODEL) --out results/figures --store $(STORE)
	$(MAKE) figures

figures:
	$(PYTHON) scripts/tables/plot.py --impress $(BUILD)/impress results/figures

# Re-measures the tables docs/results.md cites at this commit, into
# results/remeasure/<step>/ (scripts/repro/results.sh lists the steps; STEPS picks).
STEPS ?= all
results: build model data
	bash scripts/repro/results.sh $(BUILD) $(STEPS)

comma := ,

clean:
	rm -rf $(BUILD)
