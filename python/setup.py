"""The baton Python module: `pip install --no-build-isolation ./python` (Debian's setuptools, offline).

It builds the C extension (the sources in ../src/python) against libbaton found through pkg-config
(`make install PREFIX=P`, then PKG_CONFIG_PATH=P/lib/pkgconfig), or, when pkg-config knows no baton,
against this checkout's build/ (after `make`). The extension finds the library at run time through
the rpath of the folder it was linked from. Nothing is downloaded.

Which library: the build says it ("baton: building against libbaton V in DIR (from ...)", shown by
pip -v) and leaves it in the package (baton._built: LIBDIR, VERSION, FROM), so a failed import
names the folder it looked in. An earlier build in python/build/ against another library (another
prefix, another version) is rebuilt, never reused: build_ext compares the library it was made
against (a stamp in its temporary folder) with the one found now."""
import os
import re
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

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
    origin = "pkg-config baton"
else:   # this checkout's build (make)
    origin = "this checkout's build (no pkg-config baton)"
    include = [os.path.join(top, "include")]
    libdir = os.path.join(top, os.environ.get("BUILD", "build"))
    if not os.path.exists(os.path.join(libdir, "libbaton.so")):
        raise SystemExit("baton: no installed libbaton (pkg-config baton) and no %s/libbaton.so: run make first"
                         % libdir)
    text = open(os.path.join(top, "include", "baton", "util.h")).read()
    version = re.search(r'#define BATON_VERSION "([^"]+)"', text).group(1)

stamp_text = "libbaton %s in %s\n" % (version, os.path.realpath(libdir))


class BuildExt(build_ext):
    """build_ext that rebuilds when the library differs from the one the earlier build was made
    against, says which library it builds against, and records it in the package (baton/_built.py)."""

    def run(self):
        stamp = os.path.join(self.build_temp, "baton-libbaton.txt")
        try:
            before = open(stamp).read()
        except OSError:
            before = None
        if before != stamp_text:
            self.force = True   # another library (or none recorded): never link what was built for it
        print("baton: building against libbaton %s in %s (from %s)%s" % (
            version, libdir, origin, "; rebuilt: the earlier build was against " + before.strip()[9:]
            if before and before != stamp_text else ""), file=sys.stderr)
        super().run()
        os.makedirs(self.build_temp, exist_ok=True)
        with open(stamp, "w") as f:
            f.write(stamp_text)
        out = os.path.join(self.build_lib, "baton", "_built.py")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write('"""The libbaton the extension was built against (written by setup.py)."""\n'
                    "LIBDIR = %r\nVERSION = %r\nFROM = %r\n" % (libdir, version, origin))

    def get_outputs(self):
        return super().get_outputs() + [os.path.join(self.build_lib, "baton", "_built.py")]


setup(
    name="baton",
    version=version,
    description="baton's data path, checkpoints and interruption notices for your own PyTorch trainer",
    packages=["baton"],
    package_data={"baton": ["_baton.pyi", "py.typed"]},   # the extension's signatures for type checkers
    package_dir={"baton": os.path.join(here, "baton")} if os.getcwd() != here else {"baton": "baton"},
    ext_modules=[Extension(
        "baton._baton", sources=sources, include_dirs=include + [os.path.join(top, "src", "python")],
        library_dirs=[libdir], libraries=["baton"], runtime_library_dirs=[libdir],
        depends=[os.path.join(libdir, "libbaton.so")] + [os.path.join(top, "src", "python", "python_internal.h")],
        extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-fvisibility=hidden", "-Wall", "-Wno-unused-parameter"])],
    python_requires=">=3.10",   # the C sources call 3.10's API (Py_NewRef, PyModule_AddObjectRef): python_internal.h
    cmdclass={"build_ext": BuildExt},
)
