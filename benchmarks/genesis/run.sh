#!/usr/bin/env bash
# Runs benchmarks/genesis/plane_box.py in both venvs that setup.sh made (ref: quadrants 1.3.3,
# qc: this checkout), each twice on its own offline cache: first emptied (cold build), then as
# the first run left it (warm build); prints a side-by-side table of the build times, the time
# per step and the box's final pose.
#
# Environment: GENESIS_BENCH_DIR (default /tmp/genesis-bench), VENVS (default "ref qc"),
# STEPS (default 100), RUN_TIMEOUT (seconds per run, default 3600); for trying a local change in
# the qc venv only: QC_PYTHONPATH (prepended to its PYTHONPATH, e.g. another built checkout) and
# QC_PRELUDE (a Python file plane_box.py runs before importing genesis; default none).
# Each run's full output is kept in $GENESIS_BENCH_DIR/logs/<venv>-<cold|warm>.log.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${GENESIS_BENCH_DIR:-/tmp/genesis-bench}"
venvs="${VENVS:-ref qc}"
steps="${STEPS:-100}"
limit="${RUN_TIMEOUT:-3600}"
logs="$root/logs"
mkdir -p "$logs"

for v in $venvs; do
    if [ ! -x "$root/$v/bin/python" ]; then
        echo "no venv $root/$v: run benchmarks/genesis/setup.sh first" >&2
        exit 1
    fi
done

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for v in $venvs; do
    cache="$root/cache-$v"
    rm -rf "$cache"
    extra=()
    envs=()
    if [ "$v" = qc ]; then
        [ -n "${QC_PRELUDE:-}" ] && extra=(--prelude "$QC_PRELUDE")
        [ -n "${QC_PYTHONPATH:-}" ] && envs=("PYTHONPATH=$QC_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}")
    fi
    for phase in cold warm; do
        log="$logs/$v-$phase.log"
        echo "== $v $phase (log: $log)"
        env "${envs[@]}" timeout "$limit" "$root/$v/bin/python" "$here/plane_box.py" \
            --cache-dir "$cache" --steps "$steps" --json "${extra[@]}" >"$log" 2>&1
        rc=$?
        if [ $rc -ne 0 ]; then
            echo "   failed (exit $rc); last lines:"
            tail -n 15 "$log" | sed 's/^/   | /'
            if [ "$phase" = cold ]; then
                rm -f "$logs/$v-warm.log"
                echo "   (warm run skipped)"
                break
            fi
        fi
    done
done

# The table, from the last JSON line of each log.
python3 - "$logs" $venvs <<'EOF'
import json, os, sys

logs, venvs = sys.argv[1], sys.argv[2:]


def load(v, phase):
    try:
        lines = open(os.path.join(logs, f"{v}-{phase}.log")).read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


res = {v: (load(v, "cold"), load(v, "warm")) for v in venvs}


def cell(r, fmt):
    return "failed" if r is None else fmt(r)


rows = [
    ("build cold (s)", 0, lambda r: f"{r['build_s']:.1f}"),
    ("build warm (s)", 1, lambda r: f"{r['build_s']:.2f}"),
    ("first step warm (ms)", 1, lambda r: f"{1e3 * r['first_step_s']:.1f}"),
    ("step median warm (ms)", 1, lambda r: f"{r['step_median_ms']:.3f}"),
    ("step median cold (ms)", 0, lambda r: f"{r['step_median_ms']:.3f}"),
    ("gs.init warm (s)", 1, lambda r: f"{r['init_s']:.2f}"),
    ("box z warm", 1, lambda r: f"{r['pos'][2]:.5f}"),
    ("box pos warm", 1, lambda r: "(%.5f, %.5f, %.5f)" % tuple(r["pos"])),
    ("box quat warm", 1, lambda r: "(%.4f, %.4f, %.4f, %.4f)" % tuple(r["quat"])),
]
width = max(len(r[0]) for r in rows)
col = 34
print()
print(" " * width + "".join(f"  {v:>{col}}" for v in venvs))
for name, phase, fmt in rows:
    print(f"{name:<{width}}" + "".join(f"  {cell(res[v][phase], fmt):>{col}}" for v in venvs))
EOF
