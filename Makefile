# Night Watch Memory — everything the project needs is installed from here.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run serve test lint install migrate demo worker beat bench load fuzz deploy-check clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py redetect_promotions

demo: migrate
	$(PY) manage.py seed_demo

run: demo
	$(PY) manage.py demo_login --url http://$(HOST):$(PORT)/
	@echo "Serving Night Watch Memory on http://$(HOST):$(PORT)/"
	$(PY) manage.py runserver $(HOST):$(PORT)

# The ASGI application: the dashboard and API plus the MCP endpoint at /mcp/ (runserver has no /mcp/).
serve: demo
	$(PY) manage.py demo_login --url http://$(HOST):$(PORT)/
	@echo "Serving Night Watch Memory on http://$(HOST):$(PORT)/ (MCP: http://$(HOST):$(PORT)/mcp/)"
	$(PY) -m uvicorn nightwatch.asgi:application --host $(HOST) --port $(PORT)

# The suite runs in parallel (pytest-xdist), one worker per CPU ("logical": hyperthreads count, as the
# browser and subprocess tests spend much of their time waiting); TEST_WORKERS=0 runs it in one process.
# Tests marked xdist_group("name") run one after another on the same worker.
TEST_WORKERS ?= logical
test: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# ruff (rules and format in pyproject.toml) over the tree; mypy over the modules pyproject.toml lists.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

worker: install
	$(VENV)/bin/celery -A nightwatch worker --loglevel=info

beat: install
	$(VENV)/bin/celery -A nightwatch beat --loglevel=info

# Benchmarks run on a throwaway SQLite file (removed afterwards), or on DATABASE_URL when set
# (then point it at a scratch database: benchmark data stays there). BENCH_ARGS="--only files".
bench: install
	@db=$$(mktemp -t nw-bench-XXXXXX); trap 'rm -rf "$$db" "$$db-wal" "$$db-shm" "$$db-versions"' EXIT; \
	export SQLITE_PATH="$$db"; \
	if [ -n "$$DATABASE_URL" ]; then echo "bench: database from DATABASE_URL"; \
	else echo "bench: throwaway SQLite database $$db"; fi; \
	$(PY) manage.py migrate --noinput -v 0 && $(PY) manage.py eval_promotions && $(PY) manage.py eval_search && $(PY) manage.py bench $(BENCH_ARGS)

# 20 agents × 50 appends to one memory through gunicorn, on a scratch SQLite file and, when
# DATABASE_URL names PostgreSQL, there too (a scratch database). Also part of `make bench`.
load: install
	$(PY) -m memory.bench.load

# schemathesis against a live server (scratch SQLite, a seeded token), bounded by FUZZ_SECONDS.
FUZZ_SECONDS ?= 300
fuzz: install
	$(PY) -m memory.api.fuzz --seconds $(FUZZ_SECONDS)

# Django's deployment checklist with the production settings the README documents.
deploy-check: install
	DEBUG=0 SECRET_KEY="$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(50))')" \
	ALLOWED_HOSTS=memory.example.com SECURE_SSL_REDIRECT=1 SECURE_HSTS_SECONDS=31536000 \
	SECURE_HSTS_INCLUDE_SUBDOMAINS=1 SECURE_HSTS_PRELOAD=1 SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto=https \
	$(PY) manage.py check --deploy --fail-level WARNING

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles test-artifacts
