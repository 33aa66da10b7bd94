#!/usr/bin/env bash
# Installs the wheel that `make wheel` left in dist/ into a fresh virtual environment and runs the
# first example with it where no LLVM can be found: in a private mount namespace the system's
# LLVM 19 directory and library are hidden, and LD_LIBRARY_PATH is empty. Needs root (unshare -m)
# and network access to PyPI for numpy. Exits non-zero on any failure.
set -euo pipefail

cd "$(dirname "$0")/.."
wheel=$(ls dist/quadrants-*manylinux*.whl | head -1)
venv=$(mktemp -d /tmp/qd-wheel-test.XXXXXX)
trap 'rm -rf "$venv"' EXIT

python3 -m venv "$venv"
"$venv/bin/pip" install -q "$wheel"
echo "installed $(basename "$wheel") ($(du -h "$wheel" | cut -f1)) into $venv"

# In a private mount namespace: every LLVM directory and libLLVM hidden, LD_LIBRARY_PATH empty.
# Where no mount namespace can be made, the extension's own dependencies are checked instead.
if ! unshare -m true 2>/dev/null; then
    echo "no mount namespace here: checking that the extension needs no libLLVM"
    ! ldd "$venv"/lib/python3*/site-packages/quadrants/_core*.so | grep -i llvm
    cd /tmp && LD_LIBRARY_PATH= "$venv/bin/python" "$OLDPWD/examples/saxpy.py"
    exit
fi
unshare -m sh -c '
for d in /usr/lib/llvm-*; do [ -d "$d" ] && mount -t tmpfs none "$d"; done
for f in /usr/lib/*/libLLVM*.so*; do [ -f "$f" ] && mount --bind /dev/null "$f"; done
cd /tmp && LD_LIBRARY_PATH= "$1" -m quadrants && LD_LIBRARY_PATH= "$1" "$2"
' sh "$venv/bin/python" "$PWD/examples/saxpy.py"
