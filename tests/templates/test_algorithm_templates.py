"""The algorithm templates (quadrants/templates/alg_*.qir, top_level templates over the
subgroup and block collectives): each file round-trips through the parser and printer and
verifies, and qdopt's output for the kernels of golden/*.qir is golden (`pytest --update-golden`
rewrites golden/*.expected). Without the qdopt binary (build/qdopt, `make programs`) the same
passes run through quadrants._core._testing."""

import pathlib
import subprocess

import pytest

from quadrants._core import _testing

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "quadrants" / "templates"
GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
# the algorithm templates call the collectives: these files come first
LIBRARY = ["simt_subgroup.qir", "simt_block.qir"]
ALGORITHMS = sorted(p.name for p in TEMPLATES.glob("alg_*.qir"))
PASSES = "instantiate,inline,field_arrays,merge_serial,constfold,dce"


def library(*names):
    return "".join((TEMPLATES / name).read_text() for name in LIBRARY + list(names))


def optimized(text):
    qdopt = ROOT / "build" / "qdopt"
    if qdopt.exists():
        proc = subprocess.run([str(qdopt), "-p", PASSES, "--verify", "-"], input=text,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout
    return _testing.run_passes(text, PASSES, filename="alg.qir", verify=True)


def test_template_files_verify():
    _testing.verify(library(*ALGORITHMS), filename="alg.qir")


@pytest.mark.parametrize("name", ALGORITHMS)
def test_template_file_round_trips(name):
    text = (TEMPLATES / name).read_text()
    assert _testing.parse_print(text, filename=name) == text


def kernels_of(out):
    """The kernels of a printed module (the templates and instances after them left out)."""
    kernels = []
    for block in out.split("\n\n"):
        body = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
        if body.startswith(("kernel ", "field ")):
            kernels.append(block.strip("\n"))
    return "\n\n".join(kernels) + "\n"


@pytest.mark.parametrize("case", sorted(p.stem for p in GOLDEN.glob("*.qir")))
def test_templates_golden(case, update_golden):
    text = library(*ALGORITHMS) + (GOLDEN / f"{case}.qir").read_text()
    out = kernels_of(optimized(text))
    expected = GOLDEN / f"{case}.expected"
    if update_golden:
        expected.write_text(out)
    assert out == expected.read_text()
    # the calls are gone: every phase is a task of the kernel
    assert "call " not in out and "unroll" not in out and "field_array" not in out
