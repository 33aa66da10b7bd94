"""Runs the linalg IR templates (quadrants/templates/linalg_*.qir) directly, without the frontend.

kernel_text() writes a QIR kernel whose parallel loop copies one matrix per thread from 2-D
ndarrays (row i = thread i's flattened inputs) into local arrays, calls one template and copies
its outputs back; run() compiles it together with the templates on the CPU backend
(quadrants._core._testing.run_qir: instantiate, inline, constfold, dce, LLVM) and launches it.
"""

import pathlib

import numpy as np

from quadrants._core import _testing

TEMPLATE_DIR = pathlib.Path(__file__).resolve().parents[2] / "quadrants" / "templates"
NP_TYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}


def templates_text():
    """Every linalg template file, concatenated."""
    return "".join(p.read_text() for p in sorted(TEMPLATE_DIR.glob("linalg_*.qir")))


def kernel_text(template, targs, ty, ins, outs, returns=False):
    """A kernel @k(%in0.., %out0.., [%res]) calling @template<targs> once per row of %in0.

    ins / outs: element counts of the template's input / output array parameters (in order);
    returns: the template returns a scalar, stored into the 1-D %res.
    """
    params = [f"%in{k}: ndarray<{ty}, 2>" for k in range(len(ins))]
    params += [f"%out{k}: ndarray<{ty}, 2>" for k in range(len(outs))]
    if returns:
        params.append(f"%res: ndarray<{ty}, 1>")
    body = []
    for k, count in enumerate(ins):
        body += [
            f"%a{k} = alloca : ptr<[{count} x {ty}], local>",
            f"unroll %u{k} = 0 to {count} {{",
            f"  %ki{k} = const %u{k} : i32",
            f"  %gi{k} = elem_ptr %in{k}, %i, %ki{k} : ptr<{ty}, global>",
            f"  %vi{k} = load %gi{k} : {ty}",
            f"  %li{k} = array_ptr %a{k}, %ki{k} : ptr<{ty}, local>",
            f"  store %li{k}, %vi{k}",
            "}",
        ]
    for k, count in enumerate(outs):
        body.append(f"%o{k} = alloca : ptr<[{count} x {ty}], local>")
    args = ", ".join([f"%a{k}" for k in range(len(ins))] + [f"%o{k}" for k in range(len(outs))])
    call = f"call @{template}<{', '.join(targs)}>({args})"
    body.append(f"%r = {call} : {ty}" if returns else call)
    for k, count in enumerate(outs):
        body += [
            f"unroll %w{k} = 0 to {count} {{",
            f"  %ko{k} = const %w{k} : i32",
            f"  %lo{k} = array_ptr %o{k}, %ko{k} : ptr<{ty}, local>",
            f"  %vo{k} = load %lo{k} : {ty}",
            f"  %go{k} = elem_ptr %out{k}, %i, %ko{k} : ptr<{ty}, global>",
            f"  store %go{k}, %vo{k}",
            "}",
        ]
    if returns:
        body += [f"%gr = elem_ptr %res, %i : ptr<{ty}, global>", "store %gr, %r"]
    lines = [
        f"kernel @k({', '.join(params)}) {{",
        "  task range_for {",
        "    %zero = const 0 : i32",
        "    %n = shape %in0, 0 : i32",
        "    parallel_for %i = %zero to %n {",
        *("      " + line for line in body),
        "    }",
        "  }",
        "}",
        "",
    ]
    return "\n".join(lines)


def run(template, targs, ty, inputs, outs, returns=False):
    """Calls the template on every row of the given inputs (arrays of shape (batch, ...)).

    Returns the outputs as arrays of shape (batch, count) (and the results as (batch,) last).
    """
    dtype = NP_TYPES[ty]
    batch = inputs[0].shape[0]
    flat = [np.ascontiguousarray(x.reshape(batch, -1), dtype=dtype) for x in inputs]
    results = [np.zeros((batch, count), dtype=dtype) for count in outs]
    if returns:
        results.append(np.zeros(batch, dtype=dtype))
    text = templates_text() + "\n" + kernel_text(
        template, targs, ty, [x.shape[1] for x in flat], outs, returns
    )
    _testing.run_qir(text, "k", flat + results)
    return results
