"""Helpers of the GLSL code generator's tests: the final QIR of Python kernels, GLSL from it
(quadrants._core._testing.qir_to_glsl) and validation with glslangValidator when it is on PATH."""

import os
import shutil
import subprocess
import tempfile

from quadrants._core import _testing

GLSLANG = shutil.which("glslangValidator")


def kernel_qirs(kernel):
    """The final QIR of every compiled specialization of a kernel (compiled with keep_qir)."""
    out = []
    for entry in kernel._compiled.values():
        for item in entry if isinstance(entry, tuple) else (entry,):
            if type(item).__name__ == "CompiledKernel" and item.qir:
                out.append(item.qir)
    return out


def kernel_name(qir):
    """The name of the (only) kernel of a printed module."""
    for line in qir.splitlines():
        if line.startswith("kernel @"):
            return line[len("kernel @") :].split("(")[0].strip('"')
    raise ValueError("no kernel in the QIR")


def validate(source):
    """glslangValidator's verdict on a compute shader: (ok, log). (True, "") without it."""
    if GLSLANG is None:
        return True, ""
    with tempfile.NamedTemporaryFile("w", suffix=".comp", delete=False) as f:
        f.write(source)
        path = f.name
    try:
        r = subprocess.run(
            [GLSLANG, "-V", "--target-env", "vulkan1.2", "-S", "comp", path, "-o", os.devnull],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(path)
    return r.returncode == 0, (r.stdout + r.stderr).replace(path, "<shader>")


def numbered(source):
    return "\n".join(f"{i + 1:4} {line}" for i, line in enumerate(source.splitlines()))


def assert_valid(result):
    """Every shader of a qir_to_glsl result passes glslangValidator."""
    for task in result["tasks"]:
        ok, log = validate(task["source"])
        assert ok, f"{task['name']}:\n{numbered(task['source'])}\n{log}"
