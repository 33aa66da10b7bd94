"""Genesis on the CPU: a plane and a box dropped onto it (Genesis's hello-world scene, with a box
in place of the robot), built and stepped; prints the box's final pose and the timings.

    python plane_box.py [--cache-dir DIR] [--steps N] [--json] [--prelude FILE]

--cache-dir DIR (or $GENESIS_BENCH_CACHE) puts every offline cache the run writes under DIR:
Quadrants' compiled kernels (QD_OFFLINE_CACHE_FILE_PATH=DIR/quadrants) and Genesis's own
(GS_CACHE_FILE_PATH=DIR/genesis, XDG_CACHE_HOME=DIR/xdg), so that an empty DIR measures a cold
build and a second run on it a warm one. The environment must be set before `import genesis`,
which is why this script imports it late. The last line with --json is one JSON object.
--prelude FILE runs a Python file first (after the environment is set, before `import genesis`),
for trying a local change without editing an installed package.

Reference (genesis-world 1.4.5 on quadrants 1.3.3): after 100 steps the box rests at
z = 0.09989 (half its size, 0.1, less the contact's penetration), quaternion (1, 0, 0, 0).
"""

import argparse
import json
import os
import runpy
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", default=os.environ.get("GENESIS_BENCH_CACHE"))
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="end with one line of JSON")
    parser.add_argument("--prelude", help="a Python file to run before importing genesis")
    args = parser.parse_args()

    if args.cache_dir:
        cache = os.path.abspath(args.cache_dir)
        os.environ["QD_OFFLINE_CACHE_FILE_PATH"] = os.path.join(cache, "quadrants")
        os.environ["GS_CACHE_FILE_PATH"] = os.path.join(cache, "genesis")
        os.environ["XDG_CACHE_HOME"] = os.path.join(cache, "xdg")
        for sub in ("quadrants", "genesis", "xdg"):
            os.makedirs(os.path.join(cache, sub), exist_ok=True)

    if args.prelude:
        runpy.run_path(args.prelude, run_name="__prelude__")

    t0 = time.perf_counter()
    import genesis as gs
    import quadrants

    t_import = time.perf_counter() - t0

    t0 = time.perf_counter()
    gs.init(backend=gs.cpu, logging_level="warning")
    t_init = time.perf_counter() - t0

    scene = gs.Scene(show_viewer=False)
    scene.add_entity(gs.morphs.Plane())
    box = scene.add_entity(gs.morphs.Box(pos=(0.0, 0.0, 1.0), size=(0.2, 0.2, 0.2)))

    t0 = time.perf_counter()
    scene.build()
    t_build = time.perf_counter() - t0

    step_times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        scene.step()
        step_times.append(time.perf_counter() - t0)

    pos = [float(x) for x in box.get_pos().cpu().numpy().reshape(-1)]
    quat = [float(x) for x in box.get_quat().cpu().numpy().reshape(-1)]
    result = {
        "quadrants": os.path.dirname(quadrants.__file__),
        "quadrants_version": getattr(quadrants, "__version__", "?"),
        "import_s": t_import,
        "init_s": t_init,
        "build_s": t_build,
        "first_step_s": step_times[0] if step_times else None,
        "step_median_ms": 1e3 * statistics.median(step_times[1:] or step_times) if step_times else None,
        "steps": args.steps,
        "pos": pos,
        "quat": quat,
    }
    print(f"quadrants: {result['quadrants']} ({result['quadrants_version']})")
    print(f"import genesis: {t_import:.2f} s, gs.init: {t_init:.2f} s")
    print(f"scene.build(): {t_build:.2f} s")
    if step_times:
        print(f"first step: {1e3 * step_times[0]:.2f} ms; median step (after the first): "
              f"{result['step_median_ms']:.3f} ms")
    print("box pos after %d steps: (%.5f, %.5f, %.5f)" % (args.steps, *pos))
    print("box quat: (%.5f, %.5f, %.5f, %.5f)" % tuple(quat))
    if args.json:
        print(json.dumps(result))
    sys.stdout.flush()
    # Genesis registers gs.destroy at exit (it flushes Quadrants' offline cache).


if __name__ == "__main__":
    main()
