"""``python -m quadrants``: what this installation can run -- its version, the LLVM it generates
code with, and the archs and devices available here.

``python -m quadrants cache [info|clear] [--path DIR]``: show or clear the offline cache.
"""

import platform
import sys

USAGE = """usage: python -m quadrants                 versions, archs and devices of this installation
       python -m quadrants cache [info|clear] [--path DIR]   the offline cache"""


def _cuda_lines(core):
    if not core.cuda_available():
        return [f"  cuda    no: {core.cuda_unavailable_reason()}"]
    info = core.cuda_device_info()
    major, minor = info["compute_capability"]
    driver = info["driver_version"]
    return [
        f"  cuda    yes: {info['name']}, sm_{major}{minor} (code for sm_{info['target_sm']}), "
        f"{info['sm_count']} SMs, {info['total_memory'] / 2**30:.1f} GiB, "
        f"driver {driver // 1000}.{driver % 1000 // 10}"
    ]


def diagnose(out=sys.stdout):
    """Prints the report; returns 0."""
    import numpy

    from quadrants import _core, _version

    build = _core.build_info()
    lines = [
        f"quadrants {_version.__version__}",
        f"python    {platform.python_version()} ({sys.executable})",
        f"numpy     {numpy.__version__}",
        f"llvm      {build['llvm_version']}",
        f"platform  {platform.system()} {platform.machine()}",
        "archs:",
        f"  cpu     yes: {platform.machine()}, LLVM target cpu {build['host_cpu']}",
    ]
    try:
        lines += _cuda_lines(_core)
    except Exception as exc:  # a broken driver is reported, not raised
        lines.append(f"  cuda    no: {type(exc).__name__}: {exc}")
    try:
        lines += _vulkan_lines(_core)
    except Exception as exc:  # a broken loader or driver is reported, not raised
        lines.append(f"  vulkan  no: {type(exc).__name__}: {exc}")
    print("\n".join(lines), file=out)
    return 0


def _vulkan_lines(core):
    """The Vulkan line of the diagnosis: the device, or why there is none."""
    if not core.vulkan_available():
        return ["  vulkan  no: no Vulkan loader or no Vulkan 1.2 device with buffer device address"]
    info = core.vulkan_device_info()
    major, minor = info["api_version"][:2]
    return [
        f"  vulkan  yes: {info['name']} (Vulkan {major}.{minor}, subgroup size "
        f"{info['subgroup_size']}, glslang {core.build_info().get('glslang_version', '?')})"
    ]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        return diagnose()
    if argv[0] == "cache":
        from quadrants import _cache

        return _cache.main(argv[1:])
    print(USAGE, file=sys.stderr)
    return 0 if argv[0] in ("-h", "--help") else 2


if __name__ == "__main__":
    sys.exit(main())
