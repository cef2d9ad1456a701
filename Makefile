# netloop: two commands for a newcomer.
#   make run    installs what is missing, builds, runs the default experiment, prints the report path
#   make test   installs what is missing, builds, runs every test (C++ and Python)
#   make robot  on a robot (Raspberry Pi OS / Debian 12, Ubuntu 20.04 with Noetic): installs and builds
#               only what runs there (scripts/robot_setup.sh, scripts/build.sh --robot)
# Others: make setup | build | test-robot | test-studies | bench | docs | results | example-report | clean
SHELL := /bin/bash
EXPERIMENT ?= experiments/pound_fig21.yaml
PYTEST_ARGS ?=
ENV := source scripts/env.sh &&
PY := .venv/bin/python

.PHONY: setup build robot test-robot test-studies run test test-cpp test-py bench docs results example-report clean

setup:
	@scripts/setup.sh

build: setup
	@scripts/build.sh

# CAMERA=1 also installs OpenCV for the car's USB camera (about 1.4 GB with its libraries on Debian 12).
CAMERA ?= 0
robot:
	@CAMERA=$(CAMERA) scripts/robot_setup.sh
	@scripts/build.sh --robot

# A robot made only by `make robot` in a clean Debian 12 root (debootstrap; the base root and
# apt's packages cached in ~/.cache/netloop/robot-root), started as a namespace host with its own
# sshd, runs the RLC loop and an echo flow over SSH against this machine, the real car's experiment
# (experiments/real/teleop_car.yaml --quick, the driver on its fakes: 4 runs, ~70 s), then the echo
# from a user's catkin workspace; and requirements-robot.txt's files are downloaded from PyPI with
# their hashes checked (root only; .ci/run runs it after make test). Measured on the 2-core CI
# machine: 4-6 min (make robot 1-2 min of it, the runs over SSH ~1.5 min, the workspace's
# catkin_make 35-120 s, the more while other work shares the cores; the first time on a machine
# adds ~40-90 s of debootstrap and 150 MB of Debian packages).
test-robot: build
	@$(ENV) NETLOOP_TEST_ROBOT=1 $(PY) -m pytest test/test_robot_install.py $(PYTEST_ARGS)

# Whole experiment files as a user runs them, every run for real (root): `netloop reproduce
# jordan --quick` and `netloop reproduce sanap --quick` (test/test_reproduce_quick.py), the
# default experiment's `netloop run --quick` (test/test_default_experiment.py), the real loop just
# inside and outside its computed delay margin (test/test_margin_runs.py), the real car's teleop
# over SSH through Wi-Fi stalls of 1-5 s (test/test_heartbeat_stalls.py, ~2 min), and a campaign
# over SSH whose netloop is SIGKILLed, then fetched and resumed (test/test_operator_crash.py,
# ~40 s), and the long end-to-end tests of other modules (every transport through an outage, a
# loss burst, an echo; an experiment through SSH against namespaces; ~4 min). They are the tests
# marked `studies` (pytest.ini), which make test skips. .ci/run runs it after make test.
test-studies: build
	@$(ENV) NETLOOP_TEST_STUDIES=1 $(PY) -m pytest test -m studies $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest: no tests selected"; exit 0; fi; exit $$rc

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

# The unit tests alone, for the edit loop (a few minutes): no roscore, no nodes, no namespaces,
# no root, no build step (run `make build` after changing C++ or messages). Every test that starts
# ROS processes is marked `integration`, every one that needs root `root` (test/conftest.py marks
# those using the roscore fixture or skipped without root); `make test` runs them all.
.PHONY: test-fast
test-fast:
	@echo "== Python unit tests (pytest -m 'not integration and not root')"
	@$(ENV) $(PY) -m pytest test -m "not integration and not root" $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests selected"; exit 0; fi; exit $$rc

# The benchmark suite (src/netloop/bench_suite.py): BENCH_ARGS="--only priority" runs only that part
# (others: netloop bench --help); the other parts' figures already in bench/bench.json are kept.
BENCH_ARGS ?=
bench: build
	@$(ENV) bin/netloop bench --out bench $(BENCH_ARGS)

# The generated parts of docs/ (command-line reference, key reference, glossary, link profiles,
# transports, results): python -m netloop.docgen. Needs no build: the venv's Python when there is
# one, else the system's. DOCS_ARGS=--check only checks (exit 1 listing the stale blocks).
DOCS_ARGS ?=
DOCGEN = $(ENV) $(if $(wildcard $(PY)),$(PY),python3) -m netloop.docgen
docs:
	@$(DOCGEN) $(DOCS_ARGS)

# Every shipped experiment of experiments/ (not experiments/real/) in turn, going on past a failed
# one, then make docs (docs/results.md). Needs root; how long it takes is in docs/results.md.
# (No $(MAKE) in the recipe: make -n would run such a line for real.)
results: build
	@failed=""; for f in experiments/*.yaml; do \
	  echo "== $$f"; $(ENV) bin/netloop run $$f || failed="$$failed $$f"; \
	done; \
	$(DOCGEN); \
	if [ -n "$$failed" ]; then echo "make results: failed:$$failed"; exit 1; fi

# The default experiment measured again and made docs/example_report: the one campaign every page's
# statement of it comes from (the README's headline, docs/results.md, docs/ros2.md, docs/studies/pound.md),
# all rewritten by the same make docs.
example-report: build
	@$(ENV) bin/netloop run $(EXPERIMENT) && \
	  $(DOCGEN) --example "$$(ls -d results/$$(basename $(EXPERIMENT) .yaml)-2*[0-9] | tail -1)"

clean:
	rm -rf .build
