#!/usr/bin/env bash
# Creates the two virtual environments that benchmarks/genesis/run.sh compares, outside the
# repository (default /tmp/genesis-bench, or $GENESIS_BENCH_DIR):
#
#   ref/  genesis-world==1.4.5 + CPU torch + quadrants==1.3.3 (the reference implementation,
#         the version genesis-world pins)
#   qc/   the same, with the reference quadrants uninstalled and this checkout's package made
#         importable by a .pth file that points at the checkout (build it there with `make build`;
#         a rebuild is picked up without running this script again)
#
# Options (environment): PYTHON (interpreter for the venvs; default the one the checkout's .venv
# was made from, else python3), QD_CHECKOUT (checkout whose quadrants/ the qc venv imports; default
# the one holding this script), FORCE=1 (recreate existing venvs).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
checkout="${QD_CHECKOUT:-$(cd "$here/../.." && pwd)}"
root="${GENESIS_BENCH_DIR:-/tmp/genesis-bench}"
GENESIS_VERSION="1.4.5"
REF_QUADRANTS_VERSION="1.3.3"
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"

if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    cfg="$checkout/.venv/pyvenv.cfg"
    if [ -f "$cfg" ]; then
        base="$(sed -n 's/^executable *= *//p' "$cfg")"
        [ -n "$base" ] && [ -x "$base" ] && PYTHON="$base"
    fi
fi
pyver="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
echo "python: $PYTHON ($pyver); checkout: $checkout; venvs under: $root"

# The checkout's extension must match the venvs' interpreter.
if ! ls "$checkout"/quadrants/_core.cpython-"${pyver/./}"-*.so >/dev/null 2>&1; then
    echo "warning: no quadrants/_core for Python $pyver in $checkout; run 'make build' there" >&2
fi

mkdir -p "$root"
start=$(date +%s)

# Torch's CPU-only wheels are small; PyPI's Linux wheel brings the CUDA libraries along.
torch_args=()
if "$PYTHON" - "$TORCH_CPU_INDEX" <<'EOF' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/torch/", timeout=10).read(1)
EOF
    torch_args=(--index-url "$TORCH_CPU_INDEX")
    echo "torch: CPU wheels from $TORCH_CPU_INDEX"
else
    echo "torch: $TORCH_CPU_INDEX unreachable, using PyPI's torch"
fi

make_venv() {  # name
    local v="$root/$1"
    if [ -x "$v/bin/python" ] && [ -f "$v/.ready" ] && [ "${FORCE:-0}" != 1 ]; then
        echo "$1: exists (FORCE=1 recreates it)"
        return 1
    fi
    rm -rf "$v"
    "$PYTHON" -m venv "$v"
    "$v/bin/python" -m pip install -q --upgrade pip
    "$v/bin/python" -m pip install -q "${torch_args[@]}" torch
    "$v/bin/python" -m pip install -q "genesis-world==$GENESIS_VERSION" "quadrants==$REF_QUADRANTS_VERSION"
}

if make_venv ref; then
    touch "$root/ref/.ready"
fi

if make_venv qc; then
    q="$root/qc"
    "$q/bin/python" -m pip uninstall -q -y quadrants
    site="$("$q/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$checkout" > "$site/quadrants-checkout.pth"
    touch "$q/.ready"
fi

for v in ref qc; do
    printf '%s: ' "$v"
    # From /, so that the current directory (first on sys.path with -c) cannot shadow the package.
    (cd / && "$root/$v/bin/python" -c 'import quadrants, os; print("quadrants", getattr(quadrants, "__version__", "?"), "from", os.path.dirname(quadrants.__file__))' \
        || echo "(quadrants does not import)")
done
echo "setup took $(( $(date +%s) - start )) s"
