# One image for every process of a deployment: the query service (default), the upload API, the
# Dagster code location, webserver and daemon, and the `corpus` CLI (compose.yaml,
# deploy/helm/values.yaml, deploy/k8s/corpus.yaml).
#
# Never built where it was written (no container runtime there): corpus_pipeline_tests/
# test_deploy_kit.py checks it statically against the Makefile (same uv, same `uv sync
# --frozen`, same Tesseract package) and the entry points it names.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# -- builder: the locked environment in /app/.venv -------------------------------------------
FROM ${PYTHON_IMAGE} AS builder
# The Makefile's UV_VERSION, installed the same way (pip).
ARG UV_VERSION=0.13.9
RUN pip install --no-cache-dir "uv==${UV_VERSION}"
ENV UV_PROJECT_ENVIRONMENT=/app/.venv \
    UV_PYTHON_DOWNLOADS=never \
    UV_LINK_MODE=copy
WORKDIR /app
# The dependencies first, so their layer survives changes to the code.
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev --no-install-project --compile-bytecode
# Then the project: its two packages, the README its metadata names, and dagster.yaml, which
# the CLI copies into a new $CORPUS_HOME/dagster (the embedded instance).
COPY README.md dagster.yaml workspace.yaml ./
COPY corpus_pipeline/ corpus_pipeline/
COPY query_service/ query_service/
RUN uv sync --frozen --no-dev --compile-bytecode

# -- runtime: the environment, Tesseract, an unprivileged user -------------------------------
FROM ${PYTHON_IMAGE} AS runtime
# The packages `make system-deps` installs: Tesseract for OCR (English comes with it), and
# LibreOffice without GUI for legacy .doc/.ppt/.xls.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tesseract-ocr \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui \
    && rm -rf /var/lib/apt/lists/*
# /data is CORPUS_HOME; its folders exist in the image so that a new named volume starts owned
# by the service user, and so that a file mounted at /data/dagster/dagster.yaml (the
# PostgreSQL instance) has its folder. /etc/corpus/keys holds the key file in compose.yaml.
RUN groupadd --system --gid 10001 corpus \
    && useradd --system --uid 10001 --gid corpus --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin corpus \
    && mkdir -p /data/dagster /data/service /data/inbox /etc/corpus/keys \
    && chown -R corpus:corpus /data /etc/corpus/keys
COPY --from=builder /app /app
ENV PATH=/app/.venv/bin:$PATH \
    CORPUS_HOME=/data \
    DAGSTER_HOME=/data/dagster \
    CORPUS_INBOX_DIR=/data/inbox \
    PYTHONUNBUFFERED=1
WORKDIR /app
USER corpus
VOLUME ["/data"]
EXPOSE 8000
# Liveness of the query service (`/readyz` stays 503 until a revision is published).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["corpus", "serve", "--host", "0.0.0.0", "--port", "8000"]
