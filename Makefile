# corpus — every target works on a fresh clone: `make run`, `make test`.
SHELL := /bin/bash
export CORPUS_HOME ?= $(CURDIR)/data/runtime
export DAGSTER_HOME ?= $(CORPUS_HOME)/dagster
UV_VERSION := 0.13.9
UV := $(shell command -v uv 2>/dev/null || echo $(CURDIR)/.tools/bin/uv)
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?= -n 2

.PHONY: setup system-deps run dev test lint fix bench clean schemas notebooks notebooks-strip

$(CURDIR)/.tools/bin/uv:
	python3 -m venv .tools
	.tools/bin/pip install --quiet uv==$(UV_VERSION)

$(VENV)/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --compile-bytecode  # imports read .pyc even where PYTHONDONTWRITEBYTECODE is set
	@touch $@

## system-deps: Tesseract for OCR of scanned PDFs/images, and LibreOffice (no GUI) for legacy
## .doc/.ppt/.xls (Debian, as root); without Tesseract OCR is reported as unavailable in each
## document's diagnostics, never silently empty; without LibreOffice legacy files are refused
system-deps:
	@command -v tesseract >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing tesseract-ocr (apt)"; \
	    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null \
	      || echo "warning: tesseract-ocr could not be installed; OCR will be unavailable"; \
	  else echo "note: tesseract-ocr is not installed; OCR will be unavailable"; fi; }
	@command -v soffice >/dev/null 2>&1 || command -v libreoffice >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing LibreOffice without GUI (apt, ~310 MB)"; \
	    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui >/dev/null \
	      || echo "warning: LibreOffice could not be installed; legacy .doc/.ppt/.xls files will be refused"; \
	  else echo "note: LibreOffice is not installed; legacy .doc/.ppt/.xls files will be refused"; fi; }

## setup: create .venv from the lock file (plus Tesseract where it can be installed)
setup: $(VENV)/.synced system-deps

## run: ingest + publish the sample corpus on the embedded defaults, one example search, then
## the query service on 127.0.0.1:8000 with a local API key (Ctrl-C stops it)
run: setup
	$(BIN)/corpus ingest data/sample
	$(BIN)/corpus search "How do tufted ducks feed?" --top-k 3
	@KEYTXT=$(CORPUS_HOME)/service/local_key.txt; \
	if [ ! -s "$$KEYTXT" ]; then \
	  KEY=$$($(BIN)/corpus keys create local-dev --read '*' --if-missing); \
	  [ -n "$$KEY" ] || KEY=$$($(BIN)/corpus keys rotate local-dev); \
	  (umask 077; echo "$$KEY" > "$$KEYTXT"); \
	fi; \
	KEY=$$(cat "$$KEYTXT"); \
	echo ""; echo "API key (also in $(CORPUS_HOME)/service/local_key.txt): $$KEY"; \
	echo "Try: curl -s -H \"Authorization: Bearer $$KEY\" -H 'Content-Type: application/json' \\"; \
	echo "       -d '{\"query\": \"How do tufted ducks feed?\", \"top_k\": 3}' http://127.0.0.1:8000/v1/search"; \
	echo "OpenAPI docs: http://127.0.0.1:8000/docs   (Ctrl-C stops the service)"
	$(BIN)/corpus serve --host 127.0.0.1 --port 8000

## dev: the Dagster UI on 127.0.0.1:3000 and its daemon (sensors: data/inbox/, publish) over the
## same definitions and instance
dev: setup
	@mkdir -p $(DAGSTER_HOME) && cp -n dagster.yaml $(DAGSTER_HOME)/dagster.yaml || true
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

## notebooks: JupyterLab on the analysts' notebooks (notebooks/: corpus overview, retrieval
## quality, operations) over CORPUS_HOME; ingests data/sample/ first when nothing is published
notebooks: setup
	@ls $(CORPUS_HOME)/published/*/CURRENT.json >/dev/null 2>&1 || $(BIN)/corpus ingest data/sample
	$(BIN)/jupyter lab notebooks/

## notebooks-strip: remove outputs and execution counts from the notebooks before committing
## (a test fails on a notebook kept with outputs)
notebooks-strip: setup
	$(BIN)/nbstripout notebooks/*.ipynb

## test: the whole suite (slow tests included)
test: setup
	$(BIN)/pytest $(PYTEST_ARGS)

## lint: ruff check + format check + mypy on all packages
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## fix: safe automatic fixes
fix: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## bench: quality and speed benchmarks, results in benchmarks/results/ (search_latency builds
## 10k/100k/1M-chunk corpora: ~20 min and ~12 GB RAM cold, ~1 min cached; BENCH_ARGS=--quick skips 1M;
## realworld_ingest ingests ../shared/realworld + ../shared/corpus through `corpus ingest`: ~30-60 min;
## realworld_quality ingests ../shared/realworld again (with the local dense model's vectors) and
## asks its 199 questions, lexical, dense and fused at each weight of the curve: ~45 min;
## identity: the 53 filings of financebench_dev and the realworld 10-Qs ingested, each stored
## subject checked against values read off the documents: ~4 min;
## filings_store: the 20 10-Qs ingested, then earlier quarters derived to a 40k-chunk filings
## archive, agentic and classic latency and the filing questions over HTTP: ~6 min;
## dense_latency: classic search at 100k chunks with and without the dense channel: ~5 min cached;
## agentic_quality: the development corpus, the real-world store and financebench_dev ingested, then
## every question classic and agentic at budgets 512-16,000 over HTTP, plus MCP payloads: ~25 min;
## ingest_speed: the 20 10-Q filings per stage, then ingested with 1 and 2 workers: ~8 min;
## sensor_ingest: 1,000 notes through the inbox sensor and dagster-daemon, with the document step
## in the run process and then in one of its own (multiprocess executor): ~7 min each,
## SENSOR_DOCUMENTS=N for another count; fuzz_parsers: every parser fed mutated files for 10 min,
## each crash written to corpus_pipeline_tests/regressions/fuzz/)
SENSOR_DOCUMENTS ?= 1000
bench: setup
	$(BIN)/python -m benchmarks.structure_quality
	$(BIN)/python -m benchmarks.ingest_speed
	$(BIN)/python -m benchmarks.search_quality
	$(BIN)/python -m benchmarks.realworld_ingest
	$(BIN)/python -m benchmarks.realworld_quality --dense
	$(BIN)/python -m benchmarks.filings_store
	$(BIN)/python -m benchmarks.identity
	$(BIN)/python -m benchmarks.search_latency $(BENCH_ARGS)
	$(BIN)/python -m benchmarks.dense_latency
	$(BIN)/python -m benchmarks.pdf_quality
	$(BIN)/python -m benchmarks.http_latency
	$(BIN)/python -m benchmarks.upload_door
	$(BIN)/python -m benchmarks.soak
	$(BIN)/python -m benchmarks.agentic_quality
	$(BIN)/python -m benchmarks.sensor_ingest --documents $(SENSOR_DOCUMENTS)
	$(BIN)/python -m benchmarks.sensor_ingest --documents $(SENSOR_DOCUMENTS) --executor multiprocess
	$(BIN)/python -m benchmarks.fuzz_parsers --seconds 600
	$(BIN)/python -m benchmarks.hostile
	$(BIN)/python -m benchmarks.report

clean:
	rm -rf data/runtime .pytest_cache .mypy_cache .ruff_cache

## schemas: regenerate the checked-in JSON Schemas from the contracts
schemas: setup
	$(BIN)/python -m corpus_pipeline.contracts.export_schemas
