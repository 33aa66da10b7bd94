"""The register-tile templates (quadrants/templates/simt_tile.qir): golden output of qdopt
(instantiate, inline, constfold, dce) on the template file followed by the kernels of
tile_golden/kernels.qir, which call every template at N = 4; `pytest --update-golden` rewrites
tile_golden/kernels.expected. Without the qdopt binary (build/qdopt, `make programs`) the same
passes run through quadrants._core._testing."""

import pathlib
import subprocess

from quadrants._core import _testing

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "quadrants" / "templates" / "simt_tile.qir"
GOLDEN = pathlib.Path(__file__).resolve().parent / "tile_golden"
PASSES = "instantiate,inline,constfold,dce"


def optimized(text):
    qdopt = ROOT / "build" / "qdopt"
    if qdopt.exists():
        proc = subprocess.run([str(qdopt), "-p", PASSES, "--verify", "-"], input=text,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout
    return _testing.run_passes(text, PASSES, filename="simt_tile.qir", verify=True)


def test_template_file_round_trips():
    text = TEMPLATES.read_text()
    _testing.verify(text, filename="simt_tile.qir")
    assert _testing.parse_print(text, filename="simt_tile.qir") == text


def test_templates_golden(update_golden):
    out = optimized(TEMPLATES.read_text() + (GOLDEN / "kernels.qir").read_text())
    kernel = out[out.index("kernel @tiles"):]
    expected = GOLDEN / "kernels.expected"
    if update_golden:
        expected.write_text(kernel)
    assert kernel == expected.read_text()
    # straight code: no calls or unrolls left, one shuffle per exchanged value
    assert "call " not in kernel and "unroll" not in kernel
    f32 = kernel[:kernel.index("alloca : ptr<[4 x f64]")]
    # sub_outer 4, cholesky 4 diagonals + 4 eps + 6 columns, solve_lower 6 + 4 diagonals
    assert f32.count(" shuffle ") == 4 + 14 + 10
