# GeoArena: `make run` serves the arena, `make test` runs every test.
# Both set up whatever is missing first and are safe to run again.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# Debian packages the tests need: the browser for the page tests, bubblewrap
# for GATE's code sandbox, docker-compose to check the compose file.
DEBIAN_PACKAGES := chromium bubblewrap docker-compose
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test lint install system-deps postgres bench clean

run: install
	$(BIN)/arena serve --host $(HOST) --port $(PORT)

test: install system-deps postgres lint
	$(BIN)/pytest

# ruff (lint and format), mypy (strict on ratings/, battles/, export/, db/), the import contracts
lint: install
	$(BIN)/ruff check arena tests benchmarks migrations
	$(BIN)/ruff format --check arena tests benchmarks migrations
	$(BIN)/mypy
	$(BIN)/lint-imports

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "GeoArena needs Python 3.11 or newer")'
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,heic]'
	touch $@

system-deps:
	@missing=""; \
	for pkg in $(DEBIAN_PACKAGES); do dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# Start the local PostgreSQL cluster if it is not accepting connections.
postgres:
	@pg_isready -q -h 127.0.0.1 -p 5432 || { \
		echo "starting PostgreSQL"; \
		$(SUDO) pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql | sort -V | tail -1) main start; \
		for i in $$(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done; \
		pg_isready -h 127.0.0.1 -p 5432; }

bench: install
	$(BIN)/python benchmarks/ratings.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
