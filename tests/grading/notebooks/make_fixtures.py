"""Write the grading test fixtures in this directory: ``python tests/grading/notebooks/make_fixtures.py``.

``tiny.ipynb`` is a solution notebook (assignment ``tiny``, two questions); the ``student_*.ipynb``
notebooks are its exercise with answers filled in, in good and bad ways.  tests/test_grading.py
checks that the files here are what this script writes.
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from memlab.grading.authoring import answer, code, md, notebook, tests, write  # noqa: E402
from memlab.grading.notebook import make_exercise, parse_solution  # noqa: E402

Q1_OK = """
def double(x):
    return FACTOR * x
"""
Q2_OK = """
def hyp(a, b):
    return math.sqrt(a * a + b * b)
"""


def solution():
    return notebook("tiny", [
        md("# A tiny assignment\n\nTwo questions, to test `memlab grade`."),
        code("import math\nFACTOR = 2"),
        md("## Question 1: double a number"),
        answer("q1_double", """
            def double(x):
                ### BEGIN SOLUTION
                return FACTOR * x
                ### END SOLUTION
        """),
        tests("q1_double_tests", "q1_double", 2, """
            assert float(double(2)) == 4, "double(2) should be 4"
            ### BEGIN HIDDEN TESTS
            def test_double(answers):
                assert float(answers.double(-3)) == -6, "double(-3) should be -6"
            ### END HIDDEN TESTS
        """, title="Double"),
        md("## Question 2: the hypotenuse"),
        answer("q2_hyp", """
            def hyp(a, b):
                ### BEGIN SOLUTION
                return math.sqrt(a * a + b * b)
                ### END SOLUTION
        """),
        tests("q2_hyp_tests", "q2_hyp", 3, """
            import math
            def _close(x, y):
                return abs(float(x) - y) < 1e-9
            assert _close(hyp(3, 4), 5)
            ### BEGIN HIDDEN TESTS
            import math

            def test_hyp(answers):
                assert abs(float(answers.hyp(3, 4)) - 5) < 1e-9, "hyp(3, 4)"
                assert abs(float(answers.hyp(1, 1)) - math.sqrt(2)) < 1e-9, "hyp(1, 1)"
            ### END HIDDEN TESTS
        """, title="Hypotenuse"),
        tests("q2_hyp_hidden", "q2_hyp", 1, """
            ### BEGIN HIDDEN TESTS
            def test_hyp_zero(answers):
                assert abs(float(answers.hyp(0, 7)) - 7) < 1e-9
            ### END HIDDEN TESTS
        """, title="Hypotenuse, hidden"),
    ])


def _index(nb, mid):
    return next(i for i, c in enumerate(nb.cells) if c.metadata.get("memlab", {}).get("id") == mid)


def student(q1: str = Q1_OK, q2: str = Q2_OK, edit=None):
    """The exercise of tiny.ipynb with the given answers (dedented), then ``edit(nb)`` applied."""
    import textwrap
    nb = make_exercise(parse_solution(solution()))
    nb.cells[_index(nb, "q1_double")].source = textwrap.dedent(q1).strip("\n")
    nb.cells[_index(nb, "q2_hyp")].source = textwrap.dedent(q2).strip("\n")
    if edit is not None:
        edit(nb)
    return nb


def _edited(nb):
    # q1: the tests cell deleted; the answer duplicated, a wrong copy first, the right one last.
    q1 = _index(nb, "q1_double")
    wrong = copy.deepcopy(nb.cells[q1])
    wrong.source = "def double(x):\n    return 0"
    wrong["id"] = "student-wrong-double"
    del nb.cells[_index(nb, "q1_double_tests")]
    nb.cells.insert(q1, wrong)
    # q2: its tests cell moved above the answer, edited (edits do not count) and duplicated.
    t = nb.cells.pop(_index(nb, "q2_hyp_tests"))
    t.source = "assert False, 'a student edit of a tests cell'"
    dup = copy.deepcopy(t)
    dup["id"] = "student-dup-tests"
    a = _index(nb, "q2_hyp")
    nb.cells[a:a] = [t]
    nb.cells.append(dup)
    # and a cell of the student's own at the end
    extra = copy.deepcopy(nb.cells[1])
    extra.metadata = {}
    extra.source = "print('my own scratch cell')"
    extra["id"] = "student-scratch"
    nb.cells.append(extra)


def _scratch(nb, after_id, src, cid):
    cell = copy.deepcopy(nb.cells[1])
    cell.metadata = {}
    cell.source = src
    cell["id"] = cid
    nb.cells.insert(_index(nb, after_id) + 1, cell)


def fixtures() -> dict:
    return {
        "tiny.ipynb": solution(),
        # q1 loops forever when called; a later cell of the student's ignores interrupts.
        "student_loop.ipynb": student(q1="""
            def double(x):
                while True:
                    x += 1
        """, edit=lambda nb: _scratch(nb, "q1_double_tests", (
            "import time\nwhile True:\n    try:\n        time.sleep(5)\n    except KeyboardInterrupt:\n"
            "        pass"), "student-stubborn")),
        # q1 calls sys.exit() when called and exit() at the top level.
        "student_sysexit.ipynb": student(q1="""
            import sys
            def double(x):
                sys.exit(1)
            exit()
        """),
        # q1 is right; then a scratch cell gets past the grader's exit() guard and calls quit(),
        # which stops the kernel a moment after the cell (ipykernel 7).
        "student_quit.ipynb": student(edit=lambda nb: _scratch(
            nb, "q1_double_tests", "get_ipython().__dict__.pop('ask_exit', None)\nquit()",
            "student-quit")),
        # q1 kills the kernel when called; a scratch cell kills it at the top level.
        "student_osexit.ipynb": student(q1="""
            import os
            def double(x):
                os._exit(1)
        """, edit=lambda nb: _scratch(nb, "q1_double_tests", "import os\nos._exit(3)", "student-exit")),
        # q1 prints megabytes, at the top level and when called; it is right all the same.
        "student_print.ipynb": student(q1="""
            print("x" * 3_000_000)
            def double(x):
                print("y" * 1_000_000)
                return FACTOR * x
        """),
        # q1 raises at the top level; q2 passes its visible test but not the hidden ones.
        "student_raise.ipynb": student(q1="""
            raise ValueError("my answer is broken")
            def double(x):
                return FACTOR * x
        """, q2="""
            def hyp(a, b):
                return 5.0
        """),
        # deleted, duplicated, moved and edited cells (see _edited); the answers are right.
        "student_edited.ipynb": student(edit=_edited),
    }


def main() -> None:
    for name, nb in fixtures().items():
        write(nb, HERE / name)
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
