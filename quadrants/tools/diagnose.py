"""``python -m quadrants.tools.diagnose``: the facts a bug report needs."""

import os
import platform
import sys


def _arch_status(name):
    import quadrants as qd

    try:
        qd.init(arch=getattr(qd, name), enable_fallback=False)
    except Exception as exc:  # noqa: BLE001 (reported, not raised)
        return f"no ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    finally:
        try:
            qd.reset()
        except Exception:  # noqa: BLE001
            pass
    return "yes"


def main():
    """Prints Python, system and package facts, then whether each arch starts."""
    print("Quadrants system diagnose:\n")
    print(f"python: {sys.version}")
    print(f"executable: {sys.executable}")
    print(f"platform: {platform.platform()}")
    print(f"machine: {platform.machine()}")
    print(f"PATH: {os.environ.get('PATH', '')}")
    print(f"PYTHONPATH: {sys.path}")
    import quadrants

    print(f"\nquadrants: {quadrants.__version__} from {os.path.dirname(quadrants.__file__)}")
    for name in ("cpu", "cuda"):
        print(f"{name}: {_arch_status(name)}")


if __name__ == "__main__":
    main()
