"""The baton Python module: `pip install --no-build-isolation ./python` (Debian's setuptools, offline).

It builds the C extension (the sources in ../src/python) against libbaton found through pkg-config
(`make install PREFIX=P`, then PKG_CONFIG_PATH=P/lib/pkgconfig), or, when pkg-config knows no baton,
against this checkout's build/ (after `make`). The extension finds the library at run time through
the rpath of the folder it was linked from. Nothing is downloaded."""
import os
import re
import subprocess

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
sources = sorted(os.path.join(top, "src", "python", f) for f in os.listdir(os.path.join(top, "src", "python"))
                 if f.endswith(".c"))


def pkgconfig(*args):
    try:
        return subprocess.run(["pkg-config", *args, "baton"], check=True, capture_output=True,
                              text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None


if pkgconfig("--exists") is not None:
    include = [f[2:] for f in pkgconfig("--cflags-only-I") if f.startswith("-I")]
    libdir = pkgconfig("--variable=libdir")[0]
    version = pkgconfig("--modversion")[0]
else:   # this checkout's build (make)
    include = [os.path.join(top, "include")]
    libdir = os.path.join(top, os.environ.get("BUILD", "build"))
    if not os.path.exists(os.path.join(libdir, "libbaton.so")):
        raise SystemExit("baton: no installed libbaton (pkg-config baton) and no %s/libbaton.so: run make first"
                         % libdir)
    text = open(os.path.join(top, "include", "baton", "util.h")).read()
    version = re.search(r'#define BATON_VERSION "([^"]+)"', text).group(1)

setup(
    name="baton",
    version=version,
    description="baton's data path, checkpoints and interruption notices for your own PyTorch trainer",
    packages=["baton"],
    package_dir={"baton": os.path.join(here, "baton")} if os.getcwd() != here else {"baton": "baton"},
    ext_modules=[Extension(
        "baton._baton", sources=sources, include_dirs=include + [os.path.join(top, "src", "python")],
        library_dirs=[libdir], libraries=["baton"], runtime_library_dirs=[libdir],
        extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-fvisibility=hidden", "-Wall", "-Wno-unused-parameter"])],
    python_requires=">=3.9",
)
