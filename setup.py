"""Builds the C core of quadrants as the extension module ``quadrants._core``.

The extension is compiled from every ``csrc/**/*.c`` except ``csrc/tools/`` (stand-alone
programs with their own ``main``, built by the Makefile). LLVM is found through llvm-config;
CUDA and Vulkan are never linked: the runtime loads them with dlopen.

Environment:
    LLVM_CONFIG   path of llvm-config (default: llvm-config-19, then llvm-config)
    CI, QD_WERROR turn warnings into errors (CI=true or QD_WERROR=1)
    QD_SANITIZE   1 builds with AddressSanitizer and UndefinedBehaviorSanitizer (make asan)
"""

import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup

ROOT = os.path.dirname(os.path.abspath(__file__))


def env_flag(name):
    """Whether an environment variable is set to something other than empty/0/false."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def llvm_config_path():
    explicit = os.environ.get("LLVM_CONFIG")
    if explicit:
        return explicit
    for name in ("llvm-config-19", "llvm-config"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("error: llvm-config not found; run `make setup` (installs llvm-19-dev) "
             "or set LLVM_CONFIG to its path")


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


def make_extension():
    compile_args = ["-std=c11", "-Wall", "-Wextra"] + c_flags_from(llvm_config("--cflags"))
    link_args = llvm_config("--ldflags", "--libs", "--system-libs")
    if env_flag("CI") or env_flag("QD_WERROR"):
        compile_args.append("-Werror")
    if env_flag("QD_SANITIZE"):
        sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
        compile_args += sanitize + ["-fno-omit-frame-pointer", "-DQD_DEBUG", "-O1", "-g"]
        link_args += sanitize
    return Extension(
        "quadrants._core",
        sources=core_sources(),
        depends=core_depends(),
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        runtime_library_dirs=llvm_config("--libdir"),
    )


setup(ext_modules=[make_extension()])
