build/impress regress --model models/smollm2-135m --expected tests/expected/accuracy_smollm2.json --task retrieval --system digest --substitute digest=random
