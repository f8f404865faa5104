# memtrace-c: the README's commands. Each installs the Debian packages it
# needs (as root, or through sudo) before building with CMake.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# Debian packages: building and testing; the Python package (memtrace_c)
# with its notebook, plots and pip install; for tests only, groff and man
# (the manual page), Go (its pprof reads our profiles) and a debuginfod
# server (stripped programs named after a run).
DEPS = build-essential cmake libcmocka-dev xz-utils babeltrace2 clang \
       libclang-rt-14-dev time zlib1g-dev libdeflate0 libisal-dev protobuf-compiler \
       libunwind-dev libdw-dev python3 \
       chromium libjemalloc2 libjemalloc-dev libmimalloc-dev redis-server redis-tools \
       python3-dev python3-numpy python3-pandas python3-matplotlib \
       python3-pytest python3-nbclient python3-nbformat python3-ipykernel \
       python3-pip python3-setuptools groff-base man-db bsdextrautils golang-go \
       debuginfod

# The viewer's browser tests drive Debian's chromium with playwright-core
# (npm, test only), installed into tests/viewer/e2e/node_modules.
E2E = tests/viewer/e2e

# The soak's servers and their load generators (bench/soak.sh): nginx,
# redis-server, redis-benchmark (redis-tools), ab (apache2-utils). Where
# systemd runs, installing them starts their system services (ports 80 and
# 6379); the soak starts its own on free ports and uses none of those.
SOAK_DEPS = nginx redis-server redis-tools apache2-utils python3 procps

SUDO = $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps soak-deps e2e-deps build test test-asan test-tsan demo bench soak fuzz clean

all: build

# $(call apt_install,PACKAGES): installs those of PACKAGES not installed yet.
define apt_install
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
	  grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

deps:
	$(call apt_install,$(DEPS))

soak-deps:
	$(call apt_install,$(SOAK_DEPS))

# node and npm: this machine's own if it has them (a NodeSource node carries
# its npm), else Debian's.
e2e-deps: deps
	@command -v npm >/dev/null 2>&1 || { echo "installing: nodejs npm"; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm >/dev/null; }
	@if [ -f $(E2E)/package-lock.json ] && [ ! -d $(E2E)/node_modules/playwright-core ]; then \
	  echo "installing: playwright-core (npm, into $(E2E)/node_modules)"; \
	  npm ci --prefix $(E2E) --no-audit --no-fund --loglevel=error; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

# --timeout: a test without a bound of its own is stopped after 10 minutes
# (ctest otherwise waits, without end, for every process a test leaves
# holding its output).
test: build e2e-deps
	cd $(BUILD) && ctest --output-on-failure --timeout 600 -j$(JOBS)

test-asan: e2e-deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DMT_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure --timeout 600 -j$(JOBS)

# Under ThreadSanitizer: the tracer's lock-free event queues, threads
# allocating and freeing while tracing stops and restarts (the in-process
# tracer; libunwind's thread-exit destructor crashes TSan's runtime, so the
# stress unwinds by frame pointers); and the viewer's HTTP server, a thread
# per connection, under its request tests and a short run of random
# requests.
TSAN_ENV = TSAN_OPTIONS="halt_on_error=1 exitcode=66"
TRACES ?= ../shared/traces
PYTHON ?= $(shell command -v /usr/bin/python3 || command -v python3)
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMT_TSAN=ON >/dev/null
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target stress_sessions memtrace_cli mt_tools_synth
	cd $(TSAN_BUILD)/tests/profiler && $(TSAN_ENV) STRESS_MS=500 ./stress_sessions
	@if [ -e $(TRACES)/workload-1e-4.ctf ]; then set -e; \
	  for t in limits connections repeated token; do \
	    $(TSAN_ENV) $(PYTHON) tests/viewer/http_test.py $(TSAN_BUILD)/memtrace $(TRACES) $$t; done; \
	  $(TSAN_ENV) $(PYTHON) tests/viewer/http_fuzz.py $(TSAN_BUILD)/memtrace $(TRACES) 1 400; \
	  $(TSAN_ENV) $(PYTHON) tests/viewer/api_test.py $(TSAN_BUILD)/memtrace \
	    $(TSAN_BUILD)/tests/tools/mt_tools_synth - - $(TRACES) follow_steps; \
	else echo "test-tsan: no $(TRACES)/workload-1e-4.ctf: the viewer's HTTP tests are left out"; fi

# The main job on a bundled example: profile examples/demo_app.c with
# memtrace run (rate 1e-4), then ask the trace where memory went and what
# was never freed, and write the viewer's self-contained HTML report; then
# show memtrace's own ocamlopt trace when ../shared/traces is there.
# The demo shows the demo: the build says nothing unless it fails (its log
# is then printed), and each step is shown as the command a user would type.
demo: deps
	@mkdir -p $(BUILD)/demo
	@echo "building into $(BUILD)/ (log: $(BUILD)/demo/build.log)"
	@{ cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo && \
	   cmake --build $(BUILD) -j$(JOBS); } > $(BUILD)/demo/build.log 2>&1 || \
	  { cat $(BUILD)/demo/build.log; echo "the build failed: $(BUILD)/demo/build.log"; exit 1; }
	@cd $(BUILD) && step() { echo; echo "\$$ $$*"; sh -c "$$*"; } && \
	  step ./memtrace run --rate 1e-4 -o demo/demo_app.ctf -- ./mt_demo_app && \
	  step ./memtrace top -n 5 demo/demo_app.ctf && \
	  step ./memtrace leaks -n 3 --depth 4 demo/demo_app.ctf && \
	  step "./memtrace flamegraph --weight bytes demo/demo_app.ctf | cut -c1-160 | head -n 5" && \
	  step ./memtrace report -o demo/report.html demo/demo_app.ctf
	@echo
	@echo "report: $(BUILD)/demo/report.html (open it in a browser; or browse the trace live:"
	@echo "        $(BUILD)/memtrace view $(BUILD)/demo/demo_app.ctf)"
	@if [ -f $(BUILD)/python/memtrace_c/__init__.py ]; then \
	  echo; echo "== the same trace in Python (PYTHONPATH=$(BUILD)/python) =="; \
	  PYTHONPATH=$(BUILD)/python $$(cat $(BUILD)/python/interpreter) -c \
	    'import memtrace_c as mt; t = mt.open("$(BUILD)/demo/demo_app.ctf"); print(t); print(t.top(n=3)[["function", "bytes", "bytes_lo", "bytes_hi"]])'; \
	  echo "notebook: MEMTRACE_TRACE=$(BUILD)/demo/demo_app.ctf jupyter notebook examples/notebooks/alloc_stats.ipynb"; \
	fi
	@if [ -f ../shared/traces/ocamlopt.ctf ]; then \
	  echo; echo "== memtrace's own trace of ocamlopt =="; \
	  $(BUILD)/memtrace info ../shared/traces/ocamlopt.ctf; \
	  $(BUILD)/memtrace hotspots ../shared/traces/ocamlopt.ctf | head -n 12; \
	fi

bench: build
	bench/run.sh

# Debian's nginx (a master and two workers), redis-server and CPython's
# http.server under memtrace run at rate 1e-3 and under load (ab,
# redis-benchmark), against plain runs of each; every process's trace
# checked. Not in `make test`: it takes minutes and needs the servers.
# SOAK_* in the environment size it (bench/soak.sh).
soak: build soak-deps
	BUILD_DIR=$(BUILD) bench/soak.sh

fuzz: deps
	FUZZ_SECONDS=$${FUZZ_SECONDS:-60} .ci/fuzz.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) build-fuzz
