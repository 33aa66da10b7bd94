"""Builds the C core of quadrants as the extension module ``quadrants._core``.

The extension is compiled from every ``csrc/**/*.c`` except ``csrc/tools/`` (stand-alone
programs with their own ``main``, built by the Makefile). LLVM is found through llvm-config;
glslang (GLSL -> SPIR-V for the Vulkan backend) is linked in from its static libraries; CUDA
and Vulkan are never linked: the runtime loads them with dlopen (the Vulkan headers are needed
to build, for types only). The IR templates of
``quadrants/templates/*.qir`` are compiled in as one string (build/gen/qd_templates.inc), so a
kernel compile never reads them from disk.

Environment:
    LLVM_CONFIG   path of llvm-config (default: llvm-config-19, then llvm-config; LLVM 19)
    CI, QD_WERROR turn warnings into errors (CI=true or QD_WERROR=1)
    QD_SANITIZE   1 builds with AddressSanitizer and UndefinedBehaviorSanitizer (make asan)
    QD_LLVM_STATIC 1 links the LLVM libraries in statically (make wheel: a self-contained wheel)
    QD_GLSLANG_PREFIX  where glslang is installed (headers in include/, static libraries in
                  lib/ or lib/<multiarch>/); default: the system's directories
    VULKAN_SDK    a Vulkan SDK whose include/ holds vulkan/vulkan.h (default: the system's)
"""

import glob
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup

ROOT = os.path.dirname(os.path.abspath(__file__))


def env_flag(name):
    """Whether an environment variable is set to something other than empty/0/false."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


LLVM_MAJOR = 19  # the LLVM-C API the core is written against


def llvm_major(path):
    """The major version of the LLVM that llvm-config `path` describes, or None."""
    try:
        version = subprocess.check_output([path, "--version"], text=True).strip()
        return int(version.split(".")[0])
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None


def llvm_config_path():
    """llvm-config of LLVM 19: $LLVM_CONFIG, else llvm-config-19, else llvm-config. Exits with a
    message saying what is missing and how to get it."""
    explicit = os.environ.get("LLVM_CONFIG")
    candidates = [explicit] if explicit else [shutil.which(n) for n in ("llvm-config-19", "llvm-config")]
    found = [c for c in candidates if c]
    for path in found:
        if llvm_major(path) == LLVM_MAJOR:
            return path
    how = ("install it with `sudo apt-get install llvm-19-dev` (Debian/Ubuntu; `make setup` does "
           "this) or set LLVM_CONFIG to the llvm-config of an LLVM 19 installation")
    if found:
        seen = ", ".join(f"{p} (LLVM {llvm_major(p) or '?'})" for p in found)
        sys.exit(f"error: quadrants needs LLVM {LLVM_MAJOR}; found only {seen}: {how}")
    sys.exit(f"error: quadrants needs LLVM {LLVM_MAJOR} and no llvm-config was found: {how}")


# The LLVM components the core uses (with QD_LLVM_STATIC, only these are linked in).
LLVM_COMPONENTS = ["core", "analysis", "passes", "irreader", "orcjit", "x86", "nvptx", "native"]


def llvm_config(*args):
    out = subprocess.check_output([llvm_config_path(), *args], text=True)
    return shlex.split(out)


def c_flags_from(cflags):
    """Keeps the flags of `llvm-config --cflags` that a C compiler needs.

    The output may carry flags meant for LLVM's own C++ build (-std=c++17, -fno-rtti,
    -fno-exceptions, C++-only warnings); the LLVM-C headers need only the include paths and
    macro definitions.
    """
    return [f for f in cflags if f.startswith(("-I", "-D", "-U"))]


# glslang's static libraries, in link order. glslang 12 (Debian 12's glslang-dev) splits the
# compiler over several archives, and its SPIRV archive calls SPIRV-Tools (spirv-tools, a
# dependency of glslang-dev); later releases merged some of them: those are optional.
GLSLANG_LIBS = ["glslang", "SPIRV", "glslang-default-resource-limits"]
GLSLANG_OPTIONAL_LIBS = ["MachineIndependent", "GenericCodeGen", "OSDependent", "OGLCompiler",
                         "HLSL", "SPIRV-Tools-opt", "SPIRV-Tools"]
GLSLANG_HOW = ("install it with `sudo apt-get install glslang-dev` (Debian/Ubuntu; `make setup` "
               "does this) or set QD_GLSLANG_PREFIX to a glslang installation with static libraries")


def multiarch_dirs(prefix):
    """The library directories under an installation prefix, multiarch first."""
    arch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    return [os.path.join(prefix, "lib", arch), os.path.join(prefix, "lib64"), os.path.join(prefix, "lib")]


def glslang_build():
    """(include dirs, static archives in link order) of glslang and the Vulkan headers. Exits
    with a message naming the missing package."""
    prefix = os.environ.get("QD_GLSLANG_PREFIX")
    prefixes = [prefix] if prefix else ["/usr", "/usr/local"]
    include_dirs = [os.path.join(p, "include") for p in prefixes]
    lib_dirs = [d for p in prefixes for d in multiarch_dirs(p)]
    header = os.path.join("glslang", "Include", "glslang_c_interface.h")
    include = next((d for d in include_dirs if os.path.exists(os.path.join(d, header))), None)
    if include is None:
        sys.exit(f"error: quadrants needs glslang (the GLSL compiler of the Vulkan backend) and "
                 f"{header} was not found under {', '.join(include_dirs)}: {GLSLANG_HOW}")
    archives = []
    for name in GLSLANG_LIBS + GLSLANG_OPTIONAL_LIBS:
        found = next((os.path.join(d, f"lib{name}.a") for d in lib_dirs
                      if os.path.exists(os.path.join(d, f"lib{name}.a"))), None)
        if found is None and name in GLSLANG_LIBS:
            sys.exit(f"error: quadrants needs glslang's static library lib{name}.a, not found in "
                     f"{', '.join(lib_dirs)}: {GLSLANG_HOW}")
        if found is not None:
            archives.append(found)
    vulkan_dirs = [os.path.join(os.environ["VULKAN_SDK"], "include")] if os.environ.get("VULKAN_SDK") else []
    vulkan_dirs += [include, "/usr/include", "/usr/local/include"]
    vulkan = next((d for d in vulkan_dirs if os.path.exists(os.path.join(d, "vulkan", "vulkan.h"))), None)
    if vulkan is None:
        sys.exit("error: quadrants needs the Vulkan headers (vulkan/vulkan.h) to build: install them "
                 "with `sudo apt-get install libvulkan-dev` (Debian/Ubuntu; `make setup` does this) "
                 "or set VULKAN_SDK; libvulkan itself is never linked")
    return list(dict.fromkeys([include, vulkan])), archives


def core_sources():
    """Every C file of the core, as paths relative to the project root, in a stable order."""
    sources = glob.glob("csrc/**/*.c", root_dir=ROOT, recursive=True)
    return sorted(s for s in sources if not s.startswith("csrc/tools/"))


def core_depends():
    """Headers and tables: a change to any of them rebuilds the extension."""
    found = []
    for pattern in ("csrc/**/*.h", "csrc/**/*.def"):
        found += glob.glob(pattern, root_dir=ROOT, recursive=True)
    return sorted(found)


TEMPLATE_GLOB = "quadrants/templates/*.qir"
GEN_DIR = os.path.join("build", "gen")


def template_files():
    return sorted(glob.glob(TEMPLATE_GLOB, root_dir=ROOT))


def generate_templates():
    """Writes build/gen/qd_templates.inc: the template files, concatenated, as a C string
    literal (one quoted line per source line). Rewritten only when its text changes."""
    text = "".join(open(os.path.join(ROOT, f), encoding="utf-8").read() for f in template_files())
    lines = []
    for line in text.splitlines(keepends=True):
        escaped = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        lines.append(f'"{escaped}"\n')
    body = "/* generated by setup.py from the .qir files of quadrants/templates */\n" + "".join(lines or ['""\n'])
    out = os.path.join(ROOT, GEN_DIR, "qd_templates.inc")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    old = open(out, encoding="utf-8").read() if os.path.exists(out) else None
    if old != body:
        with open(out, "w", encoding="utf-8") as f:
            f.write(body)


def make_extension():
    compile_args = ["-std=c11", "-Wall", "-Wextra"] + c_flags_from(llvm_config("--cflags"))
    if env_flag("QD_LLVM_STATIC"):
        # The LLVM libraries the core uses, linked in: a self-contained extension that carries
        # only the parts of LLVM it calls (`make wheel`). Their symbols stay private.
        link_args = (["-s", "-Wl,--exclude-libs,ALL", "-Wl,--gc-sections", "-Wl,--as-needed"]
                     + llvm_config("--link-static", "--ldflags", "--libs", *LLVM_COMPONENTS)
                     + llvm_config("--link-static", "--system-libs") + ["-lstdc++"])
    else:
        link_args = llvm_config("--ldflags", "--libs", "--system-libs")
    # glslang: its archives in one group (they call each other in both directions), their
    # symbols kept private to the extension, C++ runtime and threads for its code.
    glslang_includes, glslang_archives = glslang_build()
    link_args += (["-Wl,--exclude-libs,ALL", "-Wl,--start-group"] + glslang_archives
                  + ["-Wl,--end-group", "-lstdc++", "-lpthread"])
    if env_flag("CI") or env_flag("QD_WERROR"):
        compile_args.append("-Werror")
    if env_flag("QD_SANITIZE"):
        sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
        compile_args += sanitize + ["-fno-omit-frame-pointer", "-DQD_DEBUG", "-O1", "-g"]
        link_args += sanitize
    generate_templates()
    return Extension(
        "quadrants._core",
        sources=core_sources(),
        depends=core_depends() + template_files(),
        include_dirs=[os.path.join(ROOT, GEN_DIR)] + [d for d in glslang_includes if d not in ("/usr/include", "/usr/local/include")],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        runtime_library_dirs=llvm_config("--libdir"),
    )


setup(ext_modules=[make_extension()])
