# GeoArena: `make run` serves the arena, `make test` runs every test.
# Both set up whatever is missing first and are safe to run again.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# Debian packages the tests need: the browser for the page tests, bubblewrap and
# libseccomp2 for GATE's code sandbox (its filter is part of the memory bound),
# docker-compose to check the compose file, nginx for the two-replica test,
# setpriv (util-linux) and the system's interpreter of the venv's Python version
# for the test that serves the arena as a normal user (the venv's own may sit
# under /root); and npm (for axe-core) when no npm is on the PATH.
PYTHON_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
DEBIAN_PACKAGES := chromium bubblewrap libseccomp2 docker-compose nginx util-linux python$(PYTHON_VERSION)
# axe-core, the accessibility checker the browser tests run in Chromium: from
# npm at a pinned version and checksum, unpacked into the venv with its
# licence (MPL-2.0) beside it. Fetched, not committed: no code from elsewhere
# enters the repository, and `make clean` removes it with the venv.
AXE_VERSION := 4.14.1
AXE_INTEGRITY := sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==
AXE_DIR := $(VENV)/share/axe-core
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test lint install test-deps system-deps postgres bench clean

run: install
	$(BIN)/arena serve --host $(HOST) --port $(PORT)

test: install test-deps postgres lint
	$(BIN)/pytest

# ruff (lint and format), mypy (strict on ratings/, battles/, export/, db/), the import contracts
lint: install
	$(BIN)/ruff check arena gatekeeper_build tests benchmarks migrations
	$(BIN)/ruff format --check arena gatekeeper_build tests benchmarks migrations
	$(BIN)/mypy
	$(BIN)/lint-imports

# what the arena needs; the tests need more (test-deps), `make run` does not
install: $(VENV)/.installed

test-deps: system-deps $(AXE_DIR)/$(AXE_VERSION).stamp

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "GeoArena needs Python 3.11 or newer")'
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,heic]'
	touch $@

$(AXE_DIR)/$(AXE_VERSION).stamp: | $(VENV)/.installed system-deps
	rm -rf $(AXE_DIR) $(AXE_DIR).part && mkdir -p $(AXE_DIR).part
	cd $(AXE_DIR).part && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null
	@sum="sha512-$$(openssl dgst -sha512 -binary $(AXE_DIR).part/axe-core-$(AXE_VERSION).tgz | base64 -w0)"; \
	[ "$$sum" = "$(AXE_INTEGRITY)" ] || { echo "axe-core $(AXE_VERSION) from npm does not match its pinned checksum"; exit 1; }
	tar -xzf $(AXE_DIR).part/axe-core-$(AXE_VERSION).tgz -C $(AXE_DIR).part --strip-components=1 \
		package/axe.min.js package/LICENSE package/LICENSE-3RD-PARTY.txt
	rm $(AXE_DIR).part/axe-core-$(AXE_VERSION).tgz && touch $(AXE_DIR).part/$(AXE_VERSION).stamp
	mv $(AXE_DIR).part $(AXE_DIR)

system-deps:
	@missing=""; \
	for pkg in $(DEBIAN_PACKAGES); do dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	command -v npm >/dev/null || missing="$$missing npm"; \
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
