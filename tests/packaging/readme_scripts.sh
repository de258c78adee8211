#!/usr/bin/env bash
# The README's commands share one build directory and must work in any order (issue 18: after the
# install recipe, whose TUTTI_BUILD_BENCH=OFF stayed cached in build/, run-bench.sh found no target
# tutti_bench). For each of tools/run-bench.sh, run-training.sh and run-tests.sh: configure a
# directory with the README's install command (read from README.md, so a changed recipe is what is
# checked), plus TUTTI_BUILD_TOOLS=OFF as a user who wants headers only would; then run the
# script's own configure step (TUTTI_CONFIGURE_ONLY=1: no dependencies installed, nothing built)
# and check, through CMake's file API, that every target the script builds exists and that the
# build type is Release. Then run-bench.sh and run-training.sh after run-tests.sh: each clears the
# -Og run-tests.sh caches for the programs its tests run. Last, the install recipe again over what
# run-tests.sh left: it must still give tutti-run, optimised, and tutti-tune without that -Og.
# Usage: readme_scripts.sh <tutti source dir> <scratch dir> <1 if example 04 is built here, else 0>
set -euo pipefail
usage="usage: $0 <tutti source dir> <scratch dir> <1 if example 04 is built here, else 0>"
src=${1:?$usage} work=${2:?$usage} have_example_04=${3:?$usage}
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
build=$work/build

fail() { echo "FAIL: $*" >&2; exit 1; }

# The configure line of the README's install recipe (the first command of its ```sh block).
recipe=$(awk '/\*\*Install\*\*/ { f = 1 } f && /^```sh/ { g = 1; next } g { print; exit }' "$src/README.md")
[[ $recipe == "cmake -S . -B build "* ]] || fail "README.md's install recipe does not start with 'cmake -S . -B build': '$recipe'"
read -r -a recipe_args <<<"${recipe#cmake -S . -B build }"

# configure_like_recipe [EXTRA...]: the recipe's configure of $build, from the source directory.
configure_like_recipe() {
  (cd "$src" && cmake -S . -B "$build" "${recipe_args[@]}" "$@" >"$work/recipe.log" 2>&1) ||
    { cat "$work/recipe.log" >&2; fail "the README's configure command failed"; }
}

# flags_of TARGET: the compile flags the last configure of $build gave TARGET (CMake file API).
flags_of() {
  python3 - "$build/.cmake/api/v1/reply" "$1" <<'EOF'
import glob, json, os, sys
reply, name = sys.argv[1], sys.argv[2]
index = json.load(open(max(glob.glob(os.path.join(reply, "index-*.json")))))
model = next(o for o in index["objects"] if o["kind"] == "codemodel")
for config in json.load(open(os.path.join(reply, model["jsonFile"])))["configurations"]:
    for target in config["targets"]:
        if target["name"] == name:
            for group in json.load(open(os.path.join(reply, target["jsonFile"]))).get("compileGroups", []):
                print(" ".join(f["fragment"] for f in group.get("compileCommandFragments", [])))
EOF
}

# targets_of: the targets the last configure of $build generated, one per line (CMake file API).
targets_of() {
  python3 - "$build/.cmake/api/v1/reply" <<'EOF'
import glob, json, os, sys
reply = sys.argv[1]
index = json.load(open(max(glob.glob(os.path.join(reply, "index-*.json")))))
model = next(o for o in index["objects"] if o["kind"] == "codemodel")
for config in json.load(open(os.path.join(reply, model["jsonFile"])))["configurations"]:
    for target in config["targets"]:
        print(target["name"])
EOF
}

# expect SCRIPT TARGET...: after the recipe's configure, SCRIPT's configure step gives TARGETs.
expect() {
  local script=$1 t
  shift
  rm -rf "$build/.cmake/api/v1/reply"
  mkdir -p "$build/.cmake/api/v1/query"
  touch "$build/.cmake/api/v1/query/codemodel-v2"
  TUTTI_CONFIGURE_ONLY=1 TUTTI_BUILD_DIR=$build bash "$src/tools/$script" >"$work/script.log" 2>&1 ||
    { cat "$work/script.log" >&2; fail "$script's configure step failed after the install recipe"; }
  targets=$(targets_of)
  for t in "$@"; do
    grep -qx "$t" <<<"$targets" || fail "after the README's install recipe, $script's configure step gives no target $t"
  done
  grep -qx "CMAKE_BUILD_TYPE:STRING=Release" "$build/CMakeCache.txt" ||
    fail "$script's configure step left the build type '$(grep '^CMAKE_BUILD_TYPE:' "$build/CMakeCache.txt")'"
  echo "ok: $script after the install recipe: $*"
}

configure_like_recipe -DTUTTI_BUILD_TOOLS=OFF
expect run-bench.sh tutti_bench tutti_run
configure_like_recipe -DTUTTI_BUILD_TOOLS=OFF
if [[ $have_example_04 == 1 ]]; then
  expect run-training.sh tutti_example_04_fashion_mnist tutti_run
else  # a library example 04 needs is missing here: the script cannot build it in any order
  expect run-training.sh tutti_run
fi
configure_like_recipe -DTUTTI_BUILD_TOOLS=OFF
expect run-tests.sh tutti_run tutti_bench tutti_example_00_allreduce tutti_trainer_tests

# run-tests.sh caches -Og for the programs its tests run (TUTTI_PROGRAM_OPTIMIZATION): run-bench.sh
# and run-training.sh after it must build theirs optimised, so each clears it.
for script in run-bench.sh run-training.sh; do
  TUTTI_CONFIGURE_ONLY=1 TUTTI_BUILD_DIR=$build bash "$src/tools/run-tests.sh" >"$work/script.log" 2>&1 ||
    { cat "$work/script.log" >&2; fail "run-tests.sh's configure step failed"; }
  grep -qx "TUTTI_PROGRAM_OPTIMIZATION:STRING=-Og" "$build/CMakeCache.txt" ||
    fail "run-tests.sh's configure step did not cache TUTTI_PROGRAM_OPTIMIZATION=-Og"
  TUTTI_CONFIGURE_ONLY=1 TUTTI_BUILD_DIR=$build bash "$src/tools/$script" >"$work/script.log" 2>&1 ||
    { cat "$work/script.log" >&2; fail "$script's configure step failed after run-tests.sh"; }
  grep -qx "TUTTI_PROGRAM_OPTIMIZATION:STRING=" "$build/CMakeCache.txt" ||
    fail "$script after run-tests.sh left $(grep '^TUTTI_PROGRAM_OPTIMIZATION:' "$build/CMakeCache.txt"): its programs would be built at -Og"
  echo "ok: $script after run-tests.sh builds its programs without run-tests.sh's -Og"
done
TUTTI_CONFIGURE_ONLY=1 TUTTI_BUILD_DIR=$build bash "$src/tools/run-tests.sh" >"$work/script.log" 2>&1 ||
  { cat "$work/script.log" >&2; fail "run-tests.sh's configure step failed"; }

# The recipe after run-tests.sh: tutti-run, Release, and the tests off again.
rm -rf "$build/.cmake/api/v1/reply"
configure_like_recipe
targets=$(targets_of)
grep -qx tutti_run <<<"$targets" || fail "the install recipe after run-tests.sh gives no target tutti_run"
! grep -qx tutti_trainer_tests <<<"$targets" || fail "the install recipe after run-tests.sh still builds the tests"
grep -qx "CMAKE_BUILD_TYPE:STRING=Release" "$build/CMakeCache.txt" || fail "the install recipe's build type is not Release"
if grep -qx tutti_tune <<<"$targets"; then  # installed, and it measures: never at run-tests.sh's -Og
  tune_flags=$(flags_of tutti_tune)
  [[ -n $tune_flags && $tune_flags != *-Og* ]] || fail "the install recipe after run-tests.sh builds tutti-tune with '$tune_flags'"
fi
echo "ok: the install recipe after run-tests.sh"
