# The two commands of the README:
#   make campaign   a real fuzzing campaign on the embedded backend with the shipped seeds (offline)
#   make test       the test suite
VENV ?= .venv
BUDGET ?= 2000
# the integration tests run the real memory libraries: `make test` installs their extras too, and the
# PostgreSQL driver for the corpus-store tests against a real server (best effort: scripts/install_postgres.sh),
# and Debian's chromium for the HTML report's browser tests (best effort: scripts/install_chromium.sh)
TEST_EXTRAS ?= mem0,graphiti,amem,postgres,ray
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install campaign test lint bench

install:
	UFUZZ_VENV=$(VENV) bash scripts/install.sh

campaign: install
	$(VENV)/bin/ufuzz run --backend embedded --budget $(BUDGET) --seed 1 --out reports/campaign --force
	$(VENV)/bin/ufuzz status reports/campaign

test:
	UFUZZ_VENV=$(VENV) UFUZZ_EXTRAS=$(TEST_EXTRAS) bash scripts/install.sh
	bash scripts/install_postgres.sh
	bash scripts/install_chromium.sh
	bash scripts/test.sh $(VENV)

lint: install
	$(VENV)/bin/ruff check ufuzz tests benchmarks

bench: install
	$(VENV)/bin/python benchmarks/bench_engine.py
