# netloop: two commands for a newcomer.
#   make run    installs what is missing, builds, runs the default experiment, prints the report path
#   make test   installs what is missing, builds, runs every test (C++ and Python)
# Others: make setup | build | bench | clean
SHELL := /bin/bash
EXPERIMENT ?= experiments/pound_rlc.yaml
PYTEST_ARGS ?=
ENV := source scripts/env.sh &&
PY := .venv/bin/python

.PHONY: setup build run test test-cpp test-py bench clean

setup:
	@scripts/setup.sh

build: setup
	@scripts/build.sh

run: build
	@$(ENV) bin/netloop run $(EXPERIMENT)

test: build
	@$(MAKE) --no-print-directory test-cpp test-py

test-cpp:
	@echo "== C++ unit tests (gtest)"
	@.build/ws/devel/lib/netloop/netloop_cpp_tests --gtest_brief=1

# pytest exits 5 when a selection collects no test: that is not a failure of the suite.
test-py:
	@echo "== Python unit and integration tests (pytest)"
	@$(ENV) $(PY) -m pytest test $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests selected"; exit 0; fi; exit $$rc

bench: build
	@$(ENV) bin/netloop bench --out bench

clean:
	rm -rf .build
