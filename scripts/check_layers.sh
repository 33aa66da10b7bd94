#!/usr/bin/env bash
# Enforces the dependency direction of the C core (docs: STYLE.md section 1, DESIGN.md "Layers"):
#
#   base <- ir <- {frontend, passes, codegen/*} <- driver <- python
#   runtime/* and cache depend only on base; tools may use anything but python.
#   abi (the kernel ABI: launch context, argument kinds and records) depends on nothing and
#   may be included by frontend, codegen/*, runtime/*, driver, tools and python.
#
# python/ is glue over the driver: besides its own files it may include exactly the files of
# python_files below -- the driver's header (the one way to compile and load code), base, the
# ABI, the IR types (ir/ir.h: test hooks parse and print QIR, the packer reads scalar types),
# the runtimes' launch headers (runtime/cpu/cpu.h, runtime/cuda/cuda.h,
# runtime/vulkan/vulkan.h), and the frontend's
# tables it exports to Python (.def files, not the frontend's headers). Never codegen, cache,
# passes or a frontend header directly: what it needs of them comes through driver/driver.h.
#
# Every `#include "..."` in csrc/ is resolved relative to the including file and must land in a
# layer the includer may use. Only csrc/python/ may include Python.h. Prints each violation and
# exits 1 if there is any. A new directory under csrc/ needs a line in allowed_layers below.
set -u -f  # -f: the layer patterns below are matched with [[ ]], never expanded as file names

cd "$(dirname "$0")/.." || exit 2

# The layer a path under csrc/ belongs to: its first directory, or the first two for the
# directories that group independent layers (codegen/llvm, runtime/cuda, ...).
layer_of() {
    local rel=${1#csrc/}
    case "$rel" in
        codegen/*/* | runtime/*/*) echo "${rel%%/*}/$(echo "${rel#*/}" | cut -d/ -f1)" ;;
        */*) echo "${rel%%/*}" ;;
        *) echo "." ;;
    esac
}

# The files outside csrc/python/ that a file of csrc/python/ may include.
python_files=(
    csrc/driver/driver.h
    csrc/base/base.h csrc/base/errors.def
    csrc/abi/abi.h csrc/abi/args.def csrc/abi/vk_features.def
    csrc/ir/ir.h
    csrc/runtime/cpu/cpu.h csrc/runtime/cuda/cuda.h csrc/runtime/vulkan/vulkan.h
    csrc/frontend/ast.def csrc/frontend/builtins.def csrc/frontend/simt.def
    csrc/frontend/collectives.def
    csrc/frontend/matrix_methods.def csrc/frontend/nn.def csrc/frontend/algorithms.def
)

# Layers a file of layer $1 may include from (besides its own).
allowed_layers() {
    case "$1" in
        base | abi) echo "" ;;
        ir) echo "base" ;;
        frontend | codegen/*) echo "abi ir base" ;;
        passes) echo "ir base" ;;
        runtime/*) echo "abi base" ;;
        cache) echo "base" ;;
        driver) echo "abi frontend passes codegen/* runtime/* cache ir base" ;;
        tools) echo "abi driver frontend passes codegen/* runtime/* cache ir base" ;;
        python) echo "" ;; # python_files instead
        *) echo "?" ;;
    esac
}

violations=0
report() {
    echo "$1"
    violations=$((violations + 1))
}

while IFS= read -r file; do
    layer=$(layer_of "$file")
    allowed=$(allowed_layers "$layer")
    if [ "$allowed" = "?" ]; then
        report "$file: directory csrc/$layer is not a known layer (add it to scripts/check_layers.sh)"
        continue
    fi
    lineno=0
    while IFS= read -r line; do
        lineno=$((lineno + 1))
        case "$line" in
            *'#'*include*) ;;
            *) continue ;;
        esac
        if [[ "$line" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*[\<\"]([^\>\"]+)[\>\"] ]]; then
            target=${BASH_REMATCH[1]}
        else
            continue
        fi
        if [[ "$target" =~ (^|/)(Python|structmember)\.h$ ]]; then
            [ "$layer" = python ] || report "$file:$lineno: only csrc/python/ may include $target"
            continue
        fi
        [[ "$line" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\" ]] || continue
        resolved=$(realpath -m --relative-to=. "$(dirname "$file")/$target")
        case "$resolved" in
            csrc/*) ;;
            *)
                report "$file:$lineno: includes \"$target\" from outside csrc/"
                continue
                ;;
        esac
        to=$(layer_of "$resolved")
        [ "$to" = "$layer" ] && continue
        ok=0
        if [ "$layer" = python ]; then
            for allowed_file in "${python_files[@]}"; do
                [ "$resolved" = "$allowed_file" ] && ok=1
            done
            [ "$ok" = 1 ] || report "$file:$lineno: csrc/python may not include $resolved (only driver/driver.h, base, abi, ir/ir.h, the runtime launch headers and the frontend's .def tables: python_files in this script)"
            continue
        fi
        for pattern in $allowed; do
            # shellcheck disable=SC2053  # the pattern is a glob on purpose (codegen/*)
            if [[ "$to" == $pattern ]]; then
                ok=1
                break
            fi
        done
        [ "$ok" = 1 ] || report "$file:$lineno: layer $layer may not include $resolved (layer $to)"
    done <"$file"
done < <(find csrc -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' -o -name '*.inc' \) | sort)

if [ "$violations" -gt 0 ]; then
    echo "check_layers: $violations violation(s)"
    exit 1
fi
echo "check_layers: ok"
