# baton — build, test, bench, fuzz.
#
#   make            build/libbaton.a, build/libbaton.so (+ .so.ABI), build/baton and the Python
#                   module build/python/baton (PYTHONPATH=build/python)
#   make install PREFIX=DIR [DESTDIR=D]   the library, its public headers, baton.pc and the command
#   make test       the whole suite: unit + CLI + server tests; under ASan+UBSan every unit test and
#                   the CLI scripts tests/san-set.txt names (chosen by coverage, scripts/san-select.sh),
#                   every fuzz target replayed over its seeds and their mutations (tests/run.sh prints
#                   "N passed, N failed, N skipped" and the ten slowest)
#   make test-full  the same with every CLI script under ASan+UBSan and a short libFuzzer run of
#                   every fuzz target (about 15 minutes more)
#   make bench      the benchmarks under bench/
#   make fuzz       every libFuzzer target for longer (FUZZ_SECONDS, default 60 each)
#   make chaos      the long reliability runs: the kill campaign (1,000 kills, tests/servers/test_chaos.sh),
#                   the league's (200 submissions, tests/servers/test_chaos_league.sh)
#                   and every entry of tests/mutations/list must make a test fail
#   make check-layers  every #include "baton/..." against README's component table
#   make check-code    the code's shape: JSON parsed in one file, files <= 900 lines, functions
#                      <= 120, public headers <= 50 functions and free of curl/microhttpd
#   make SAN=1 BUILD=build-san   the sanitizer build used by `make test`
#
# Sources are found by wildcard: src/<component>/*.c form the library, src/cli/*.c the command,
# tests/unit/test_*.c one test program each, tests/fuzz/fuzz_*.c one fuzz target each.

BUILD ?= build
SAN ?= 0
CC ?= cc
PKGS := libpng libturbojpeg libjpeg zlib libcjson libcurl libmicrohttpd
PKGS += yaml-0.1 sqlite3 libcrypto
PKGS += ompi-c                  # dist: data-parallel training on Open MPI

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libcurl and libmicrohttpd are opened at their first use (src/http/http_dl.c), not linked: with
# the thirty libraries they need, they were 14 of the 40 ms of CPU of every baton start. Their
# sonames are the ones the headers belong to.
DL_PKGS := libcurl libmicrohttpd
PKG_LIBS := $(shell pkg-config --libs $(filter-out $(DL_PKGS),$(PKGS)) 2>/dev/null)
soname_of = $(shell readelf -d $(shell pkg-config --variable=libdir $(1) 2>/dev/null)/$(2) 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
DL_SONAMES := -DBATON_CURL_SONAME='"$(or $(call soname_of,libcurl,libcurl.so),libcurl.so.4)"' \
              -DBATON_MHD_SONAME='"$(or $(call soname_of,libmicrohttpd,libmicrohttpd.so),libmicrohttpd.so.12)"'

# -Wno-psabi: GCC's note that 64-byte vectors are passed differently than before GCC 4.6 (the fast
# kernels' static inline helpers; nothing crosses an ABI boundary) is not a warning to act on
WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wvla -Wno-psabi
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -g -pthread -Iinclude $(WARN) $(PKG_CFLAGS) -MMD -MP
# The sanitizer build's programs are linked at a fixed address (-no-pie): position-independent,
# each start applied 190,000 relocations (the sanitizers' metadata points everywhere) — 35 of a
# `baton --version`'s 160 ms, at every start of a program in `make test`'s second pass.
ifeq ($(SAN),1)
OPT := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_LDFLAGS := -fsanitize=address,undefined
EXE_LDFLAGS := -no-pie
else
OPT := -O2
SAN_LDFLAGS :=
EXE_LDFLAGS :=
endif
CFLAGS ?=
ALL_CFLAGS := $(BASE_CFLAGS) $(OPT) $(CFLAGS)
LDLIBS := -Wl,--as-needed $(PKG_LIBS) -ldnnl -lgomp -lm -pthread
LDFLAGS_ALL := $(SAN_LDFLAGS) $(LDFLAGS)

COMPONENTS := util http rec io img nn ckpt notice dist train infer fleet race ppo league
LIB_SRC := $(foreach c,$(COMPONENTS),$(wildcard src/$(c)/*.c))
CLI_SRC := $(wildcard src/cli/*.c)
TEST_SRC := $(wildcard tests/unit/test_*.c)
BENCH_SRC := $(wildcard bench/*.c)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
LIB := $(BUILD)/libbaton.a
BIN := $(BUILD)/baton
# the shared library: the same objects, position-independent (-fno-semantic-interposition keeps
# calls inside a file direct, as in the static build); its soname carries the ABI (util.h)
BATON_ABI := $(shell sed -n 's/^\#define BATON_ABI_VERSION \([0-9]*\).*/\1/p' include/baton/util.h)
BATON_VER := $(shell sed -n 's/^\#define BATON_VERSION "\(.*\)"/\1/p' include/baton/util.h)
SONAME := libbaton.so.$(BATON_ABI)
SO := $(BUILD)/libbaton.so
$(LIB_OBJ): ALL_CFLAGS += -fPIC -fno-semantic-interposition

.PHONY: all test test-full fuzz-replay bench bench-build fuzz clean tests deps run check-layers check-code chaos install python
all: $(BIN) $(SO) python

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/obj/src/http/http_dl.o: ALL_CFLAGS += $(DL_SONAMES)
# batch norm runs in oneDNN's OpenMP team (GCC's libgomp, which oneDNN itself uses): the same
# threads, so neither pool spins against the other on few cores
$(BUILD)/obj/src/nn/kern_bn_fast.o: ALL_CFLAGS += -fopenmp
$(BUILD)/obj/src/nn/kern_eltwise_fast.o: ALL_CFLAGS += -fopenmp
$(BUILD)/obj/src/nn/kern_pool_fast.o: ALL_CFLAGS += -fopenmp
$(BUILD)/obj/src/nn/kern_conv_fast.o: ALL_CFLAGS += -fopenmp
$(BUILD)/obj/src/nn/optim.o: ALL_CFLAGS += -fopenmp -fno-math-errno -fvect-cost-model=dynamic
$(BUILD)/obj/src/nn/fpmode.o: ALL_CFLAGS += -fopenmp

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS_ALL) $(EXE_LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

# libbaton.so exports exactly the functions include/baton declares (BUILD/libbaton.map, made by
# scripts/exports.sh from the headers: an internal function never leaks), binds its own calls to itself, and
# leaves out the embedded Python of race's reward functions: a Python process that loads it (the
# baton module) is itself the interpreter, and a second libpython in it would be a second runtime
# (src/race/reward_py.c then says that Python rewards need the baton command)
SO_OBJ := $(filter-out $(BUILD)/obj/src/race/reward_py.o,$(LIB_OBJ)) $(BUILD)/obj/src/race/reward_py.nopy.o
SO_LIBS = $(filter-out $(PY_LIBS),$(LDLIBS))
$(BUILD)/obj/src/race/reward_py.nopy.o: src/race/reward_py.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(OPT) $(CFLAGS) -fPIC -fno-semantic-interposition -DBATON_SHARED_LIBRARY -c $< -o $@

$(BUILD)/libbaton.map: $(wildcard include/baton/*.h) scripts/exports.sh
	@mkdir -p $(dir $@)
	scripts/exports.sh >$@.tmp && mv $@.tmp $@

$(BUILD)/$(SONAME): $(SO_OBJ) $(BUILD)/libbaton.map
	$(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=$(BUILD)/libbaton.map -Wl,-Bsymbolic \
	    -Wl,-z,defs -o $@ $(SO_OBJ) $(SO_LIBS)

$(SO): $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

$(BUILD)/tests/%: tests/unit/%.c tests/unit/check.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(LDFLAGS_ALL) $(EXE_LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

tests: $(BIN) $(TEST_BIN) $(BUILD)/bench/photos   # photos: the photo-like folders of the image tests

# benchmark programs (bench/*.c), run by the bench/*.sh scripts
$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS_ALL) $(EXE_LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

bench-build: $(BIN) $(BENCH_BIN)

# ---- fuzz targets: clang + libFuzzer, the library compiled with the fuzzer's instrumentation
FUZZ_BUILD := build-fuzz
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -O1 -g
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_BUILD)/%)

# Python reward functions (src/race/reward_py.c) run in an embedded CPython, built in when Debian's
# libpython3-dev is installed (pkg-config python3-embed); without it they are a clear error
PY_CFLAGS := $(patsubst -I%,-isystem %,$(shell pkg-config --cflags python3-embed 2>/dev/null))
PY_LIBS := $(shell pkg-config --libs python3-embed 2>/dev/null)
ifneq ($(PY_LIBS),)
LDLIBS += $(PY_LIBS)
$(BUILD)/obj/src/race/reward_py.o: ALL_CFLAGS += $(PY_CFLAGS) -DBATON_HAVE_PYTHON
$(FUZZ_BUILD)/obj/src/race/reward_py.o: BASE_CFLAGS += $(PY_CFLAGS) -DBATON_HAVE_PYTHON
endif

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(BASE_CFLAGS) $(FUZZ_FLAGS) -c $< -o $@

$(FUZZ_BUILD)/libbaton.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libbaton.a
	clang $(BASE_CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/libbaton.a $(LDLIBS)

fuzz-build: $(FUZZ_BIN)

# the same targets without libFuzzer, in this build (tests/fuzz/replay.c's main): `make test` runs
# them in the sanitizer build over the seeds and their deterministic mutations
REPLAY_BIN := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=$(BUILD)/fuzz/replay_%)
$(BUILD)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS_ALL) $(EXE_LDFLAGS) -o $@ $< tests/fuzz/replay.c $(LIB) $(LDLIBS)

fuzz-replay: $(REPLAY_BIN)

FUZZ_SECONDS ?= 60
fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_SECONDS)

# ---- the baton Python module (src/python/*.c, a C extension over libbaton.so; python/baton/*.py
# adapt types): built here for /usr/bin/python3 (Debian's) into $(BUILD)/python, found through
# PYTHONPATH=$(BUILD)/python; `pip install --no-build-isolation ./python` builds the same sources
# against an installed library (python/setup.py)
PYTHON ?= /usr/bin/python3
PY_EXT := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_INC := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
PYMOD_SRC := $(wildcard src/python/*.c)
PYMOD_OBJ := $(PYMOD_SRC:%.c=$(BUILD)/obj/%.o)
PYMOD_PY := $(patsubst python/baton/%,$(BUILD)/python/baton/%,$(wildcard python/baton/*.py python/baton/*.pyi python/baton/py.typed))
PYMOD := $(BUILD)/python/baton/_baton$(PY_EXT)
$(PYMOD_OBJ): ALL_CFLAGS += -fPIC -isystem $(PY_INC) -fvisibility=hidden
ifneq ($(PY_EXT),)
python: $(PYMOD) $(PYMOD_PY)
else
python:
	@echo "python: $(PYTHON) not found; the baton Python module is not built" >&2
endif
$(PYMOD): $(PYMOD_OBJ) $(SO)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -o $@ $(PYMOD_OBJ) -L$(BUILD) -l:$(SONAME) -Wl,-rpath,'$$ORIGIN/../..'
$(BUILD)/python/baton/%.py: python/baton/%.py
	@mkdir -p $(dir $@)
	cp $< $@
$(BUILD)/python/baton/%.pyi: python/baton/%.pyi
	@mkdir -p $(dir $@)
	cp $< $@
$(BUILD)/python/baton/py.typed: python/baton/py.typed
	@mkdir -p $(dir $@)
	cp $< $@

# ---- install: the library (shared and static), the public headers, baton.pc, the command
PREFIX ?= /usr/local
DESTDIR ?=
LIBDIR ?= $(PREFIX)/lib
# the dynamic linker's default folders: baton.pc names no rpath there (it does for /usr/local/lib,
# which is found only after ldconfig)
SYS_LIBDIRS := /usr/lib /usr/lib64 /lib /lib64 $(addprefix /usr/lib/,$(shell $(CC) -print-multiarch 2>/dev/null))
install: $(BIN) $(SO) $(LIB)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/baton $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/baton
	install -m 0644 include/baton/*.h $(DESTDIR)$(PREFIX)/include/baton/
	install -m 0755 $(BUILD)/$(SONAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libbaton.so
	install -m 0644 $(LIB) $(DESTDIR)$(LIBDIR)/libbaton.a
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@VERSION@|$(BATON_VER)|' \
	    -e 's|@REQUIRES@|$(strip $(filter-out $(DL_PKGS),$(PKGS)) $(if $(PY_LIBS),python3-embed))|' \
	    $(if $(filter $(SYS_LIBDIRS),$(patsubst %/,%,$(LIBDIR))),-e '/^Libs:/s| -Wl[^ ]*||') \
	    scripts/baton.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/baton.pc

test:
	tests/run.sh

# every CLI script repeated under the sanitizers and the libFuzzer targets run (not only replayed)
test-full:
	BATON_TEST_FULL=1 tests/run.sh

# every #include "baton/..." against README's component table (its "may include" column)
check-layers:
	@scripts/check-layers.sh

# the shape scripts/check-code.sh's header describes (cJSON_Parse only in the reader, sizes, headers)
check-code:
	@scripts/check-code.sh

# the demo: the build first, quietly (its commands are not what a newcomer came to see)
run:
	@echo "building baton (make -s all) ..."
	@$(MAKE) --no-print-directory -s all
	$(BIN) run

bench: bench-build
	bench/run.sh

deps:
	scripts/deps.sh

clean:
	rm -rf build build-san build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(FUZZ_LIB_OBJ:.o=.d) $(TEST_BIN:=.d) $(PYMOD_OBJ:.o=.d)

# the long reliability runs (minutes; never in `make test`)
CHAOS_KILLS ?= 1000
CHAOS_LEAGUE_SUBMISSIONS ?= 200
chaos: all
	CHAOS_KILLS=$(CHAOS_KILLS) bash tests/servers/test_chaos.sh
	CHAOS_LEAGUE_SUBMISSIONS=$(CHAOS_LEAGUE_SUBMISSIONS) bash tests/servers/test_chaos_league.sh
	tests/mutations/run.sh
