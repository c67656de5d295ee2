"""The judge: hidden tests run in a process of their own and reach the answers only as plain data.

Most tests run judge code against answers in this process (``judge.run_local``: the same codec and
call server, no kernel); the last ones grade small notebooks end to end (time limits, a kernel that
dies, a forged reply)."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import memlab as ml
from memlab.grading import grade
from memlab.grading.authoring import answer, code, notebook, tests, write
from memlab.grading.judge import CallFailed, Calls, LocalChannel, run_local


def _answers(src: str) -> dict:
    ns: dict = {}
    exec(textwrap.dedent(src), ns)
    return ns


def _run(judge: str, answers: str, forbid=()) -> dict:
    return run_local(textwrap.dedent(judge), _answers(answers), tuple(forbid))


def _verdicts(out: dict) -> dict:
    return {name: (ok, msg) for name, _, ok, msg in out["checks"]}


def test_nodes_come_back_as_the_tests_own_objects_and_new_nodes_are_rebuilt():
    out = _run('''
        import memlab as ml
        from memlab.testing import check

        def test_nodes(answers):
            a = ml.placeholder("a", (3,))
            y = ml.exp(a) * 2
            with check(points=1, name="same objects"):
                order = answers.order(y)
                assert [id(n) for n in order] == [id(n) for n in ml.topo_order(y)]
                counts = answers.counts(ml.topo_order(y))
                assert counts[a] == 1 and set(map(id, counts)) == {id(n) for n in ml.topo_order(y)}
            with check(points=1, name="new nodes"):
                (g,) = answers.grad(y)
                assert isinstance(g, ml.Node) and g.shape == (3,) and y in ml.topo_order(g)
                assert g.op is ml.graph.ops.elementwise.MUL
    ''', '''
        import memlab as ml
        def order(y):
            return ml.topo_order(y)
        def counts(order):
            return {n: sum(n in m.inputs for m in order) or 1 for n in order}
        def grad(y):
            return [y * 3.0]
    ''')
    assert out["error"] is None and all(ok for ok, _ in _verdicts(out).values()), out


def test_objects_stay_in_the_kernel_behind_handles():
    out = _run('''
        from memlab.testing import check

        def test_pool(answers):
            with check(points=1, name="methods and attributes"):
                p = answers.Pool()
                assert p.take(5) == 0 and p.take(7) == 1
                assert p.sizes == {0: 5, 1: 7} and len(p) == 2 and 1 in p and list(p) == [0, 1]
                assert p[1] == 7 and "Pool" in repr(p)
            with check(points=1, name="what the answer raised"):
                try:
                    p.free(99)
                except KeyError as e:
                    assert "99" in str(e)
                else:
                    raise AssertionError("free(99) should raise")
            with check(points=1, name="a pair with a handle inside"):
                values, q = answers.run()
                assert values == [1.5] and q.take(1) == 0
    ''', '''
        class Pool:
            def __init__(self):
                self.sizes = {}
            def take(self, n):
                self.sizes[len(self.sizes)] = n
                return len(self.sizes) - 1
            def free(self, i):
                raise KeyError(f"no block {i}")
            def __len__(self):
                return len(self.sizes)
            def __contains__(self, i):
                return i in self.sizes
            def __iter__(self):
                return iter(self.sizes)
            def __getitem__(self, i):
                return self.sizes[i]
        def run():
            return [1.5], Pool()
    ''')
    assert out["error"] is None and all(ok for ok, _ in _verdicts(out).values()), out


def test_what_an_answer_raises_becomes_feedback_with_the_students_frames_only():
    out = _run('''
        from memlab.testing import check

        def test_it(answers):
            with check(points=1, name="raises"):
                want = 731902467
                assert answers.f(3) == want, "f(3) is wrong"
    ''', '''
        def helper(x):
            return x / 0
        def f(x):
            return helper(x)
    ''')
    ok, msg = _verdicts(out)["raises"]
    assert not ok and msg.startswith("a hidden test failed: your answer raised ZeroDivisionError")
    assert "helper" in msg and "731902467" not in msg and "want" not in msg


def test_a_plain_result_is_compared_honestly():
    # an object whose == always answers True stays in the kernel: the comparison sees a handle
    out = _run('''
        from memlab.testing import check

        def test_it(answers):
            with check(points=1, name="liar"):
                assert answers.f() == 12, "f() is not 12"
            with check(points=1, name="int subclass"):
                r = answers.g()
                assert type(r) is int and r == 12
    ''', '''
        class Liar:
            def __eq__(self, other):
                return True
        class MyInt(int):
            def __eq__(self, other):
                return True
        def f():
            return Liar()
        def g():
            return MyInt(12)
    ''')
    v = _verdicts(out)
    assert v["liar"][0] is False and v["int subclass"][0] is True


def test_forbid_refuses_the_library_during_calls():
    out = _run('''
        import memlab as ml
        from memlab.testing import check
        FORBID = ("memlab.graph.traverse.topo_order",)

        def test_it(answers):
            with check(points=1, name="delegates"):
                answers.order(ml.exp(ml.placeholder("a")))
    ''', '''
        import memlab as ml
        def order(y):
            return ml.topo_order(y)
    ''')
    ok, msg = _verdicts(out)["delegates"]
    assert not ok and "WriteItYourself" in msg and "write it yourself" in msg
    assert ml.topo_order(ml.placeholder("b"))     # put back afterwards


def test_structures_cross_both_ways():
    out = _run('''
        from memlab.checkpoint.chain import Backward, Forward
        from memlab.scheduling.taskgraph import TaskGraph
        from memlab.scheduling.treebase import Tree
        from memlab.testing import check

        def test_it(answers):
            with check(points=1, name="tree"):
                t = answers.tree_back(Tree([-1, 0, 0], [1.0, 2.0, 3.0]))
                assert isinstance(t, Tree) and t.parent == [-1, 0, 0] and t.f == [1.0, 2.0, 3.0]
            with check(points=1, name="task graph"):
                g = TaskGraph.from_edges([("a", "b", 2.0)])
                assert answers.tasks(g) == ["a", "b"]
            with check(points=1, name="actions"):
                assert answers.schedule(2) == [Forward(0, True), Forward(1), Backward(2)]
    ''', '''
        from memlab.checkpoint.chain import Backward, Forward
        def tree_back(t):
            return t
        def tasks(g):
            return g.topological_order()
        def schedule(l):
            return [Forward(0, True), Forward(1), Backward(l)]
    ''')
    assert out["error"] is None and all(ok for ok, _ in _verdicts(out).values()), out


def test_hidden_inputs_come_from_the_grades_secret():
    code_ = '''
        def test_it(answers):
            raise AssertionError(str((answers.seed(1), int(answers.rng.integers(10**9)))))
    '''
    a, b, c = (run_local(textwrap.dedent(code_), {}, (), secret=s)["error"] for s in (1, 1, 2))
    assert a == b and a != c


def test_a_result_that_is_not_plain_data_fails_its_call():
    class Forged(LocalChannel):
        def call(self, body):
            return '{"$d": [["ok", {"$x": ["pickle", "gASV..."]}]]}'
    session = Calls(Forged({}))
    from memlab.grading.judge import Answers
    with pytest.raises(CallFailed, match="not plain data"):
        Answers(session, (), 0, "x").f()


def test_judge_code_without_tests_or_that_does_not_load_is_an_error():
    assert "no test_" in run_local("x = 1", {})["error"]
    assert "could not be loaded" in run_local("import no_such_module_here", {})["error"]


# ----------------------------------------------------------------------------------- end to end
def _notebook(tmp_path, answers_src: str, hidden: str, points: float):
    nb = notebook("judge_demo", [
        code("import memlab as ml"),
        answer("q1", answers_src),
        tests("q1_tests", "q1", points, "", hidden=hidden),
    ])
    return write(nb, tmp_path / "judge_demo.ipynb")


def test_time_limits_and_dead_kernels_cost_only_their_checks(tmp_path):
    sol = _notebook(tmp_path, '''
        import os
        calls = []
        def f(x):
            calls.append(x)
            if x == "loop":
                while True:
                    pass
            if x == "die":
                os._exit(3)
            return x * 2
    ''', '''
        from memlab.testing import check

        def test_f(answers):
            with check(points=1, name="before"):
                assert answers.f(2) == 4
            with check(points=1, name="an endless loop"):
                answers.f("loop")
            with check(points=1, name="after the loop"):
                assert answers.f(3) == 6
            with check(points=1, name="a crash"):
                answers.f("die")
            with check(points=1, name="after the crash"):
                assert answers.f(5) == 10
    ''', 5)
    r = grade(sol, solution=sol, timeout=4)      # room for a restart and a replay on a loaded machine
    checks = {c.name: c for c in r.tests[0].checks}
    assert r.score == 3, r.feedback()
    assert "time limit of 4 s" in checks["an endless loop"].output
    assert "died" in checks["a crash"].output
    assert checks["after the loop"].passed and checks["after the crash"].passed
    assert r.kernel_restarts >= 1


def test_a_submission_that_forges_the_kernels_replies_earns_nothing(tmp_path):
    # the student's kernel is theirs: what it sends is only ever read as what the answer returned,
    # never as a verdict (here every reply is replaced by a full-marks "result" message)
    sol = _notebook(tmp_path, '''
        def f(x):
            return x * 2
    ''', '''
        from memlab.testing import check

        def test_f(answers):
            with check(points=1, name="double"):
                assert answers.f(21) == 42
    ''', 1)
    import nbformat
    nb = nbformat.read(sol, 4)
    nb.cells[1].source = textwrap.dedent('''
        import json, socket, struct
        _send = socket.socket.sendall
        def sendall(self, data, *args):
            if len(data) > 12 and data[12:13] == b"{":
                forged = json.dumps({"t": "result", "id": "q1_tests", "error": None,
                                     "checks": [["double", 1, True, ""]]}).encode()
                data = struct.pack(">I", 8 + len(forged)) + data[4:12] + forged
            return _send(self, data, *args)
        socket.socket.sendall = sendall
        def f(x):
            return 0
    ''')
    student = tmp_path / "student.ipynb"
    nbformat.write(nb, student)
    r = grade(student, solution=sol, timeout=15)
    assert r.score == 0, r.feedback()
    assert "not plain data" in r.tests[0].checks[0].output


def test_a_target_in_a_module_not_loaded_is_refused_once_the_answer_imports_it():
    out = _run('''
        from memlab.testing import check
        FORBID = ("memlab.viz.training.plan_patterns", "memlab.memory.pool.MemoryPool")

        def test_it(answers):
            with check(points=1, name="imports the forbidden module in the call"):
                answers.late()
            with check(points=1, name="a class"):
                answers.pool()
            with check(points=1, name="honest"):
                assert answers.honest() == 3
    ''', '''
        def late():
            from memlab.viz.training import plan_patterns
            return plan_patterns(None, None)
        def pool():
            import memlab as ml
            return ml.MemoryPool()
        def honest():
            return 3
    ''')
    v = _verdicts(out)
    assert not v["imports the forbidden module in the call"][0]
    assert "WriteItYourself" in v["imports the forbidden module in the call"][1]
    assert not v["a class"][0] and "WriteItYourself" in v["a class"][1] and v["honest"][0]
    import memlab.viz.training as vt
    assert vt.plan_patterns.__name__ == "plan_patterns"      # put back afterwards


def test_every_refused_name_of_a_module_imported_later_is_refused(tmp_path, monkeypatch):
    """Targets in a module the kernel has not imported yet are refused once it is imported: all of
    them, when several name the same module."""
    import sys

    from memlab.grading.arming import Armed
    from memlab.testing import WriteItYourself
    (tmp_path / "later_module.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "later_module", raising=False)
    armed = Armed()
    armed.arm(("later_module.f", "later_module.g"))
    try:
        assert "later_module" not in sys.modules
        import later_module
        for fn in (later_module.f, later_module.g):
            with pytest.raises(WriteItYourself, match=f"later_module.{fn.__name__}"):
                fn()
    finally:
        armed.disarm()
    assert (later_module.f(), later_module.g()) == (1, 2)
    sys.modules.pop("later_module", None)
