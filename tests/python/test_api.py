"""test_api.py — the Python module's surface as a PyTorch user meets it (the defects issue, item 12):
`import baton` loads neither torch nor numpy (and a Loader made before torch is imported is still a
torch IterableDataset); inspect.signature and help() of every class, method and function, and the
shipped .pyi stub agree, every argument explained; the arguments after uri (dir) are keyword-only;
batch (global) and batch_size (per process, PyTorch's) both accepted, not together; a DataLoader that
batches the Loader's batches (its default batch_size=1, or 64) refused with the fix; the "all
batches held" error told apart by the Loader's own count, not its text; Checkpoints opened on a
second DDP rank says "open it on rank 0"; the extension initialised per module (a second load and
a subinterpreter have their own classes); setup.py's Python floor is the one the C sources need."""
import ast
import inspect
import os
import re
import subprocess
import sys
import time

import baton
from harness import TMP, check, done, pack, raises

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..")
FM = pack(os.path.join(TMP, "fm"))

# ---- import baton: neither torch nor numpy (torch alone takes a second or more)
code = ("import sys, time; t = time.perf_counter(); import baton; t = time.perf_counter() - t; "
        "print('%.4f' % t, 'torch' in sys.modules, 'numpy' in sys.modules)")
r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
out = r.stdout.split()
check(r.returncode == 0 and out[1:] == ["False", "False"], "import baton imports torch or numpy: %s %s" % (
    r.stdout, r.stderr[-300:]))
print("import baton: %s s" % (out[0] if out else "?"), flush=True)

# ---- signatures: inspect (the docstrings' text signatures) against the shipped stub
stub_path = os.path.join(os.path.dirname(baton.__file__), "_baton.pyi")
check(os.path.exists(stub_path) and os.path.exists(os.path.join(os.path.dirname(baton.__file__), "py.typed")),
      "the .pyi stub and py.typed ship beside the module")
stub = ast.parse(open(stub_path).read())


def stub_params(fn):
    """[(name, kind, default as text)] of a stub function, self left out."""
    a, out = fn.args, []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + [ast.unparse(d) for d in a.defaults]
    for i, p in enumerate(pos):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        out.append((p.arg, kind, defaults[i]))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "KEYWORD_ONLY", None if d is None else ast.unparse(d)))
    return [o for o in out if o[0] != "self"]


def real_params(obj):
    sig = inspect.signature(obj)
    return [(p.name, p.kind.name, None if p.default is p.empty else repr(p.default))
            for p in sig.parameters.values() if p.name != "self"]


stubs = {}
for node in stub.body:
    if isinstance(node, ast.FunctionDef):
        stubs[node.name] = node
    elif isinstance(node, ast.ClassDef):
        stubs[node.name] = node
        for f in node.body:
            if isinstance(f, ast.FunctionDef):
                stubs[node.name + "." + f.name] = f
ext = baton._baton
public = [n for n in dir(ext) if not n.startswith("_") and n != "library_version" or n == "__version__"]
check(all(n in stubs or any(isinstance(x, ast.AnnAssign) and x.target.id == n for x in stub.body) for n in public),
      "the stub names every public name of baton._baton: missing %s" % [n for n in public if n not in stubs])
checked = 0
for name in ("Loader", "Checkpoints", "Notice", "crc32c", "crop_box", "library_version", "Loader.state_dict",
             "Loader.load_state_dict", "Loader.set_epoch", "Loader.stats", "Loader.close", "Checkpoints.save",
             "Checkpoints.due", "Checkpoints.wait", "Checkpoints.latest", "Checkpoints.load", "Checkpoints.list",
             "Checkpoints.close", "Notice.wait", "Notice.close"):
    obj = ext
    for part in name.split("."):
        obj = getattr(obj, part)
    try:
        got = real_params(obj)
    except (ValueError, TypeError) as e:
        check(False, "inspect.signature(%s): %s" % (name, e))
        continue
    fn = stubs.get(name + ".__init__") or stubs.get(name)
    want = stub_params(fn) if isinstance(fn, ast.FunctionDef) else None
    check(got == want, "%s: inspect says %s, the stub %s" % (name, got, want))
    checked += 1
check(checked == 20, "signatures compared: %d" % checked)
# the package's own Loader (a subclass) keeps the extension's signature
check(str(inspect.signature(baton.Loader)) == str(inspect.signature(ext.Loader)), "baton.Loader's signature: %s" %
      inspect.signature(baton.Loader))

# ---- help(): every argument explained (a line of the docstring starts with its name)
for cls in (baton.Loader, baton.Checkpoints, baton.Notice, baton.Checkpoints.save):
    doc = cls.__doc__ or ""
    for p in inspect.signature(cls).parameters:
        if p == "self":
            continue
        check(re.search(r"^\s*(\w+, )*%s\b" % p, doc, re.M), "help(%s) does not explain %s=" % (cls.__qualname__, p))

# ---- keyword-only after uri / dir
check(raises(TypeError, baton.Loader, FM, 64, match="positional") is not None, "Loader(uri, 64) is refused")
check(raises(TypeError, baton.Checkpoints, os.path.join(TMP, "kw"), 2, match="positional") is not None,
      "Checkpoints(dir, 2) is refused")
check(raises(TypeError, baton.Notice, "http://127.0.0.1:9") is not None, "Notice(endpoint) positionally is refused")

# ---- batch (global) and batch_size (per process, as in PyTorch)
with baton.Loader(FM, batch_size=32, world=2, rank=1, epochs=1) as l, baton.Loader(FM, batch=64, world=2, rank=1,
                                                                                   epochs=1) as g:
    b1, b2 = next(l), next(g)
    check(len(b1.labels) == 32 and b1.total == 64 and list(b1.positions) == list(b2.positions) and
          l.state_dict() == g.state_dict() and len(l) == len(g),
          "batch_size=32 at world 2 is batch=64: %d of %d, %s" % (len(b1.labels), b1.total, l.state_dict()))
e = raises(baton.UsageError, baton.Loader, FM, batch=64, batch_size=32, match="give one")
check(e is not None and "batch = batch_size * world" in str(e), "batch= and batch_size= together: %s" % e)

# ---- the "all batches held" error: by the Loader's count of its own leases, with the DataLoader hint
with baton.Loader(FM, batch=100, depth=2, epochs=1) as l:
    held = [next(l), next(l)]
    e = raises(baton.UsageError, next, l)
    check(e is not None and "held by the caller" in str(e) and "batch_size=None" in str(e),
          "a third batch while two of depth 2 are held: %s" % e)
    del held

# ---- a Loader made before torch was imported is a torch IterableDataset after; DataLoader misuse
l = baton.Loader(FM, batch_size=500, epochs=1)
t0 = time.perf_counter()
import torch  # noqa: E402  (after the Loader on purpose)
from torch.utils.data import DataLoader, IterableDataset  # noqa: E402
print("import torch: %.2f s" % (time.perf_counter() - t0), flush=True)
check(isinstance(l, IterableDataset) and isinstance(l, baton.Loader) and type(l) is baton.Loader,
      "a Loader made before import torch is an IterableDataset: %s" % (type(l).__mro__,))
e = raises(baton.UsageError, lambda: next(iter(DataLoader(l))))
check(e is not None and "batch_size=1 (DataLoader's default)" in str(e) and "batch_size=None" in str(e),
      "DataLoader(loader) (batch_size=1: 5-D batches) is refused with the fix: %s" % e)
e = raises(baton.UsageError, lambda: next(iter(DataLoader(l, batch_size=64))))
check(e is not None and "DataLoader(batch_size=64)" in str(e) and "batch_size=None" in str(e),
      "DataLoader(loader, batch_size=64) is refused with the fix: %s" % e)
n = 0
for x, y in DataLoader(l, batch_size=None):
    n += len(y)
    check(x.dim() == 4 or n > 500, "DataLoader(batch_size=None) gives 4-D images: %s" % (tuple(x.shape),))
check(n == 10000, "DataLoader(loader, batch_size=None) after a refused one: %d samples" % n)
l.close()

# ---- Checkpoints on every DDP rank: "open it on rank 0"
D = os.path.join(TMP, "ddp")
with baton.Checkpoints(D):
    e = raises(baton.BusyError, baton.Checkpoints, D)
    check(e is not None and "give each run its own" in str(e), "a second open by hand: %s" % e)
    for env in ({"RANK": "1", "WORLD_SIZE": "2"}, {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}):
        saved = {k: os.environ.pop(k, None) for k in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                                       "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS")}
        os.environ.update(env)
        e = raises(baton.BusyError, baton.Checkpoints, D)
        for k in env:
            del os.environ[k]
        os.environ.update({k: v for k, v in saved.items() if v is not None})
        check(e is not None and "rank 1 of 2 (%s)" % next(iter(env)) in str(e) and "on rank 0 only" in str(e),
              "a second open on rank 1 of 2 (%s): %s" % (next(iter(env)), e))

# ---- per interpreter (multi-phase init, heap types): a second load of the extension is a module of
# its own (its own exception classes and types); a subinterpreter imports it and gets its errors
import importlib.util  # noqa: E402
spec = importlib.util.spec_from_file_location("baton._baton", ext.__file__)
m2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m2)
check(m2 is not ext and m2.Error is not ext.Error and m2.Loader is not ext.Loader and
      issubclass(m2.UsageError, m2.Error) and not issubclass(m2.UsageError, ext.Error),
      "a second load of the extension shares its module state with the first")
check(all(t.__flags__ & (1 << 9) for t in (ext.Loader, ext.Checkpoints, ext.Notice, m2.Loader)),
      "the types are heap types (one per module)")
del m2
try:
    import _xxsubinterpreters as subinterp
except ImportError:
    subinterp = None
if subinterp is not None:
    out = os.path.join(TMP, "subinterp.txt")
    interp = subinterp.create()
    subinterp.run_string(interp, "import baton\n"
                         "try:\n    baton.Loader(%r)\nexcept baton.NotFoundError as e:\n    r = 'NotFoundError'\n"
                         "open(%r, 'w').write(r + ' ' + str(baton.crc32c(b'baton')))\n"
                         % (os.path.join(TMP, "missing"), out))
    subinterp.destroy(interp)
    got = open(out).read() if os.path.exists(out) else ""
    check(got == "NotFoundError %d" % baton.crc32c(b"baton"), "a subinterpreter imports baton and gets its errors: %r"
          % got)

# ---- the Python floor: setup.py's python_requires is the C sources' PYB_MIN_PYTHON, and they call
# nothing newer (3.11's API, by name)
setup = open(os.path.join(TOP, "python", "setup.py")).read()
floor = re.search(r'python_requires=">=3\.(\d+)"', setup)
hdr = open(os.path.join(TOP, "src", "python", "python_internal.h")).read()
guard = re.search(r"#define PYB_MIN_PYTHON 0x030([0-9A-F])0000", hdr)
check(floor and guard and int(floor.group(1)) == int(guard.group(1), 16),
      "setup.py's python_requires %s against the sources' floor %s" % (floor and floor.group(0),
                                                                      guard and guard.group(0)))
newer = ("PyType_GetModuleByDef", "PyFrame_GetLocals", "PyFrame_GetBuiltins", "PyFloat_Pack", "PyFloat_Unpack",
         "Py_Version", "PyErr_GetHandledException", "PyThreadState_EnterTracing", "PyLong_AsInt(",
         "PyDict_GetItemRef", "PyImport_AddModuleRef", "Py_IsFinalizing", "PyUnstable_")
srcdir = os.path.join(TOP, "src", "python")
used = sorted({n for f in os.listdir(srcdir) for n in newer if n in open(os.path.join(srcdir, f)).read()})
check(not used, "the C sources call API newer than their floor: %s" % used)
check(sys.version_info >= (3, 10), "this Python is under the floor")

done()
