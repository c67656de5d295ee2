"""The code of the hostile answers (cells or function bodies) that tests/grading/hostile.py puts in notebooks."""

FORGE_DISPLAY = """
import IPython.display as _d, builtins as _bi
_orig_display = _d.display
def _forged(*objs, **kw):
    out = []
    for o in objs:
        if isinstance(o, dict):
            o = {k: (dict(v, passed=True) if isinstance(v, dict) else v) for k, v in o.items()}
        out.append(o)
    return _orig_display(*out, **kw)
_d.display = _forged
_bi.display = _forged
"""
USER_EXEC = """
import builtins as _b
def exec(code, g=None, *rest):
    if isinstance(g, dict) and "_NONCE" in g:          # a driver that reports through display()
        from IPython.display import display
        display({g["_MIME"]: {"passed": True, "nonce": g["_NONCE"]}}, raw=True)
        return None
    return _b.exec(code, globals() if g is None else g, *rest)
eval = lambda *a, **k: True
compile = lambda *a, **k: _b.compile("pass", "<forged>", "exec")
__builtins__ = dict(vars(_b), exec=exec, eval=eval, compile=compile, AssertionError=Warning)
"""
PATCH_LIBRARY = """
import contextlib, numpy as _np, memlab as _ml, memlab.testing as _mt
_true = lambda *a, **k: True
_ml.topo_order = lambda outs, *a, **k: []
_np.allclose = _np.isclose = _np.array_equal = _true
_np.testing.assert_allclose = _np.testing.assert_array_equal = lambda *a, **k: None
_mt.check_gradient_fn = _mt.check_plan_runs = lambda *a, **k: None
_mt.forbid = lambda *a, **k: contextlib.nullcontext()
_ml.check_plan = lambda *a, **k: None
try:
    from memlab import trees as _t, mapping as _m
    _t.peak = _t.postorder_peak = lambda *a, **k: 0
    _t.check_traversal = lambda *a, **k: None
    _m.subtree_work = lambda *a, **k: []
except ImportError:
    pass
"""
IMPORT_HOOK = """
import builtins as _bi, sys as _sys, types as _types
class _Anything(_types.ModuleType):
    def __getattr__(self, name):
        return lambda *a, **k: True
_real_import = _bi.__import__
def _hook(name, globals=None, locals=None, fromlist=(), level=0):
    if name.startswith(("numpy", "memlab")) and _sys._getframe(1).f_code.co_filename.startswith("<memlab"):
        return _Anything(name)
    return _real_import(name, globals, locals, fromlist, level)
_bi.__import__ = _hook
_sys.modules["memlab.testing"] = _Anything("memlab.testing")
"""
REDEFINE_HELPERS = """
_valid = _check_path = _check_shares = _check_coloring = _is_postorder = _no_race = lambda *a, **k: True
_close = _same = lambda *a, **k: True
_check_gradient = check_gradient_fn = lambda *a, **k: None
import contextlib
forbid = lambda *a, **k: contextlib.nullcontext()
random_graph = lambda *a, **k: []
all_paths = lambda order: iter([[]])
"""
LIAR = """
class _Liar:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
    def __iter__(self): return iter([])
    def __len__(self): return 0
    def __getattr__(self, name): return _Liar()
    def __call__(self, *a, **k): return _Liar()
    def __lt__(self, other): return True
    __le__ = __gt__ = __ge__ = __lt__
"""
PATCH_WHEN_CALLED = """
import numpy as _np, memlab as _ml
_np.allclose = _np.isclose = _np.array_equal = lambda *a, **k: True
_ml.topo_order = lambda *a, **k: []
return []
"""
LEAK = """
import sys, linecache, gc, base64
found = [repr(globals().get("In")), repr(globals().get("_ih")), repr(globals().get("Out"))]
found += ["".join(v[2]) for v in linecache.cache.values() if isinstance(v, tuple) and len(v) > 2]
for k in ("last_traceback", "last_value", "last_exc"):
    tb = getattr(sys, k, None)
    tb = getattr(tb, "__traceback__", tb)
    while tb is not None:
        found += [repr(tb.tb_frame.f_code.co_consts), repr(tb.tb_frame.f_locals)[:100000]]
        tb = tb.tb_next
for o in gc.get_objects():
    if isinstance(o, (tuple, list)):
        found += [s for s in o if isinstance(s, str) and "HIDDEN TESTS" in s]
    elif isinstance(o, dict):
        found += [s for s in o.values() if isinstance(s, str) and "HIDDEN TESTS" in s]
mark = "### BEGIN " + "HIDDEN TESTS"
found = [s[s.index(mark):][:1200] for s in found if mark in s][:2]
text = "\\n".join(found)
raise RuntimeError("LEAK:" + base64.b64encode(text.encode()).decode() + ":END")
"""
FRAME_WALK = """
import sys, base64
found, f = [], sys._getframe(1)
while f is not None:
    found += [repr(v) for v in list(f.f_locals.values()) + list(f.f_code.co_consts)]
    f = f.f_back
try:
    found += [repr(get_ipython().kernel.get_parent()), repr(get_ipython().last_execution_result.info)]
except Exception:
    pass
mark = "### BEGIN " + "HIDDEN TESTS"
found = [s[s.index(mark):][:1200] for s in found if mark in s][:2]
raise RuntimeError("LEAK:" + base64.b64encode("\\n".join(found).encode()).decode() + ":END")
"""
FLOOD = """
print("x" * 3_000_000)
raise RuntimeError("E" * 10**7)
"""
MEMORY_HOG = """
_hog = []
while True:
    _hog.append(bytearray(64 << 20))
"""
FORK_STORM = """
import os, time
_kids = 0
try:
    for _ in range(1500):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        _kids += 1
finally:
    print("forked", _kids)
"""
MEMORY_BOMB = """
import numpy as _np
try:
    _bomb = _np.ones((10**6, 10**6))
except MemoryError:
    pass
_bomb = bytearray(1 << 44)
"""

# In-place edits of what the guard protects: the function objects stay the same, their insides change.
CODE_SWAP = """
import memlab.testing as _mt
_mt.check_gradient_fn.__code__ = (lambda *a, **k: None).__code__
"""
DEFAULTS_EDIT = """
import memlab.testing as _mt
_mt.check_gradient_fn.__defaults__ = (0, 1e-6, 1e30)
"""
CLOSURE_CELL = """
import contextlib, memlab.testing as _mt
@contextlib.contextmanager
def _nothing(*a):
    yield
_mt.forbid.__closure__[0].cell_contents = _nothing.__wrapped__
"""
GC_REFERRERS = """
import gc, memlab.testing as _mt
_d = [r for r in gc.get_referrers(_mt.check_gradient_fn)
      if isinstance(r, dict) and r.get('__name__') == 'memlab.testing'][0]
_d['check_gradient_fn'] = lambda *a, **k: None
"""
