"""The Vulkan runtime (csrc/runtime/vulkan) and glslang (csrc/codegen/glsl/glslang.c), driven by
hand-written GLSL through ``_core._testing.vulkan_run_glsl``: every buffer is reached by its
device address, read from the parameter buffer whose address is the one push constant.

Runs on whatever device the runtime picks (lavapipe, Mesa's CPU driver, in CI). Every data test
runs twice: with the copies the device's memory allows (mapped memory on lavapipe) and with
QD_VULKAN_STAGING=1, which sends every copy through the staging buffer (the path of discrete
GPUs). The module is skipped where no Vulkan device exists; the tests of the unavailable paths
run in subprocesses.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from quadrants import _core

pytestmark = pytest.mark.skipif(not _core.vulkan_available(), reason="no Vulkan device")

run_glsl = _core._testing.vulkan_run_glsl

# What every shader starts with: the parameter buffer (u64 addresses) and typed views.
HEADER = """#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 64) in;
layout(push_constant) uniform P { uint64_t params; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Addrs { uint64_t a[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Uints { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
"""

# The global invocation index and the stride of a grid-stride loop.
STRIDE = "gl_NumWorkGroups.x * gl_WorkGroupSize.x"


@pytest.fixture(params=[False, True], ids=["direct", "staging"])
def staging(request, monkeypatch):
    """Runs the test with mapped copies where the device allows them, then with staged ones."""
    if request.param:
        monkeypatch.setenv("QD_VULKAN_STAGING", "1")
    else:
        monkeypatch.delenv("QD_VULKAN_STAGING", raising=False)
    return request.param


def scalars(*values):
    """Bytes of 32-bit scalars (float -> f32, int -> u32)."""
    return b"".join(
        np.float32(v).tobytes() if isinstance(v, float) else np.uint32(v).tobytes() for v in values
    )


SAXPY = HEADER + f"""
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Meta {{ float a; uint n; }};
void main() {{
    Addrs p = Addrs(params);
    Floats x = Floats(p.a[0]);
    Floats y = Floats(p.a[1]);
    Meta m = Meta(p.a[2]);
    for (uint i = gl_GlobalInvocationID.x; i < m.n; i += {STRIDE}) {{
        precise float r = m.a * x.v[i] + y.v[i];
        y.v[i] = r;
    }}
}}
"""


@pytest.mark.parametrize("n, groups", [(1, 1), (1000, 3), (100_003, 40)])
def test_saxpy(staging, n, groups):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    a = np.float32(1.7)
    out = run_glsl([SAXPY], [groups], [x.tobytes(), y.tobytes(), scalars(float(a), n)])
    assert len(out) == 3
    assert out[0] == x.tobytes()
    np.testing.assert_array_equal(np.frombuffer(out[1], np.float32), a * x + y)


WRITE = HEADER + f"""
void main() {{
    Uints b = Uints(Addrs(params).a[0]);
    for (uint i = gl_GlobalInvocationID.x; i < 4096u; i += {STRIDE}) {{
        b.v[i] = i * 3u + 1u;
    }}
}}
"""

# Reads what the first dispatch wrote, mirrored: element i comes from another workgroup.
READ_BACK = HEADER + f"""
void main() {{
    Uints b = Uints(Addrs(params).a[0]);
    Uints c = Uints(Addrs(params).a[1]);
    for (uint i = gl_GlobalInvocationID.x; i < 4096u; i += {STRIDE}) {{
        c.v[i] = b.v[4095u - i] + 7u;
    }}
}}
"""


def test_second_dispatch_reads_the_first(staging):
    n = 4096
    out = run_glsl([WRITE, READ_BACK], [64, 5], [bytes(4 * n), bytes(4 * n)])
    b = np.frombuffer(out[0], np.uint32)
    c = np.frombuffer(out[1], np.uint32)
    expect_b = np.arange(n, dtype=np.uint32) * 3 + 1
    np.testing.assert_array_equal(b, expect_b)
    np.testing.assert_array_equal(c, expect_b[::-1] + 7)


def test_many_dispatches_in_one_launch(staging):
    increment = HEADER + f"""
void main() {{
    Uints b = Uints(Addrs(params).a[0]);
    for (uint i = gl_GlobalInvocationID.x; i < 1000u; i += {STRIDE}) b.v[i] += i;
}}
"""
    out = run_glsl([increment] * 10, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [bytes(4000)])
    np.testing.assert_array_equal(np.frombuffer(out[0], np.uint32), np.arange(1000) * 10)


COUNTER = HEADER + """
void main() {
    Ints c = Ints(Addrs(params).a[0]);
    atomicAdd(c.v[0], 1);
    atomicAdd(c.v[1], int(gl_GlobalInvocationID.x));
    atomicMax(c.v[2], int(gl_GlobalInvocationID.x));
}
"""


def test_int_atomic_add_from_many_invocations(staging):
    groups = 1000
    out = run_glsl([COUNTER], [groups], [bytes(12)])
    total = groups * 64
    count, sum_, max_ = np.frombuffer(out[0], np.int32)
    assert count == total
    assert sum_ == total * (total - 1) // 2  # below 2^31: no wrap-around
    assert max_ == total - 1


FLOAT_COUNTER = HEADER.replace(
    "#extension GL_EXT_buffer_reference : require",
    "#extension GL_EXT_buffer_reference : require\n#extension GL_EXT_shader_atomic_float : require",
) + """
void main() {
    Floats f = Floats(Addrs(params).a[0]);
    atomicAdd(f.v[0], 1.0);
    atomicAdd(f.v[1], 0.5);
}
"""


def test_float_atomic_add(staging):
    if not _core.vulkan_device_info()["atomic_f32_add"]:
        pytest.skip("the device has no shaderBufferFloat32AtomicAdd")
    out = run_glsl([FLOAT_COUNTER], [64], [bytes(8)])
    assert tuple(np.frombuffer(out[0], np.float32)) == (64 * 64, 64 * 64 * 0.5)


def test_large_buffer_round_trip(staging):
    n = 16 << 20  # 64 MiB of u32: several chunks of the staging buffer
    data = np.arange(n, dtype=np.uint32) * np.uint32(2654435761)
    increment = HEADER + f"""
void main() {{
    Uints b = Uints(Addrs(params).a[0]);
    for (uint i = gl_GlobalInvocationID.x; i < {n}u; i += {STRIDE}) b.v[i] += 1u;
}}
"""
    out = run_glsl([increment], [1024], [data.tobytes()])
    assert len(out[0]) == 4 * n
    np.testing.assert_array_equal(np.frombuffer(out[0], np.uint32), data + np.uint32(1))


def test_buffers_of_any_size_and_no_dispatch(staging):
    """Sizes that are not whole words, an empty buffer, and a launch of zero dispatches: the
    buffers come back as they went in."""
    buffers = [b"", b"a", b"abcde", bytes(range(256)) * 3 + b"xyz", bytearray(b"\x01\x02\x03")]
    assert run_glsl([], [], buffers) == [bytes(b) for b in buffers]


def test_zero_workgroups_run_nothing(staging):
    out = run_glsl([COUNTER], [0], [bytes(12)])
    assert out[0] == bytes(12)


def test_launch_time():
    out, seconds = run_glsl([COUNTER], [100], [bytes(12)], with_seconds=True)
    assert np.frombuffer(out[0], np.int32)[0] == 6400
    assert 0 < seconds < 60


def test_glsl_syntax_error_names_the_line():
    source = HEADER + "void main() {\n    uint x = 1u\n    x += 2u;\n}\n"
    with pytest.raises(_core.QuadrantsCompilationError) as info:
        run_glsl([source], [1], [])
    message = str(info.value)
    bad_line = source.splitlines().index("    x += 2u;") + 1
    assert "glslang could not compile the GLSL of shader 0" in message
    assert f"ERROR: 0:{bad_line}:" in message  # glslang's log
    assert f"{bad_line} |     x += 2u;" in message  # the offending line, numbered


def test_glsl_to_spirv():
    words = np.frombuffer(_core._testing.glsl_to_spirv(SAXPY), np.uint32)
    assert words[0] == 0x07230203  # the SPIR-V magic number
    assert words[1] == 0x00010500  # SPIR-V 1.5
    with pytest.raises(_core.QuadrantsCompilationError, match="undeclared identifier"):
        _core._testing.glsl_to_spirv(HEADER + "void main() { y = 1; }", what="broken")


def test_device_info():
    info = _core.vulkan_device_info()
    assert info["name"]
    assert info["api_version"] >= (1, 2, 0)
    assert info["device_type"] in ("discrete", "integrated", "virtual", "cpu", "other")
    assert info["subgroup_size"] > 0
    assert info["max_workgroup_size"] >= 64
    assert info["max_workgroup_count"] >= 65535
    assert info["max_push_bytes"] >= 8
    for flag in ("float64", "int16", "float16", "int8", "storage16", "atomic_int64",
                 "atomic_f32_add", "atomic_f64_add", "atomic_f32_minmax", "shared_atomic_f32_add"):
        assert isinstance(info[flag], bool)
    assert _core.vulkan_unavailable_reason() is None


def run_python(code, **env):
    """Runs `code` in a fresh interpreter with extra environment variables; its stdout."""
    full_env = dict(os.environ, **env)
    done = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_loader():
    out = run_python(
        "from quadrants import _core\n"
        "print(_core.vulkan_available())\n"
        "try:\n"
        "    _core.vulkan_device_info()\n"
        "except _core.QuadrantsRuntimeError as e:\n"
        "    print(e)\n",
        QD_VULKAN_LOADER="/nonexistent/libvulkan.so.1",
    )
    assert out.splitlines()[0] == "False"
    assert "Vulkan is not available: the Vulkan loader (/nonexistent/libvulkan.so.1)" in out


def test_device_index_out_of_range():
    out = run_python(
        "from quadrants import _core\nprint(_core.vulkan_unavailable_reason())\n",
        QD_VULKAN_DEVICE="99",
    )
    assert "$QD_VULKAN_DEVICE is 99" in out


def test_staging_in_a_fresh_process():
    """QD_VULKAN_STAGING set before the device opens (the way users set it)."""
    out = run_python(
        "import numpy as np\n"
        "from quadrants import _core\n"
        f"src = {SAXPY!r}\n"
        "x = np.arange(5000, dtype=np.float32)\n"
        "meta = np.float32(2).tobytes() + np.uint32(5000).tobytes()\n"
        "out = _core._testing.vulkan_run_glsl([src], [8], [x.tobytes(), x.tobytes(), meta])\n"
        "print(bool((np.frombuffer(out[1], np.float32) == 3 * x).all()))\n",
        QD_VULKAN_STAGING="1",
    )
    assert out.strip() == "True"
