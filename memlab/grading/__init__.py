"""memlab's exercise machinery: make student notebooks from solutions, grade them.

It follows nbgrader's and otter's conventions with a small implementation of its own, and imports
only the standard library, nbformat and jupyter_client (never memlab's algorithms).

Notebook schema
---------------
An instructor (solution) notebook ``solutions/<assignment>.ipynb`` carries

* notebook metadata ``nb.metadata["memlab"] = {"assignment": "01_executor"}``; the name must match
  the file name stem by convention; ``memlab grade`` checks a submission's name against its solution
  (and, for a student's self-check without ``--solution``, looks up ``solutions/<name>.ipynb``);
* answer cells: ``cell.metadata["memlab"] = {"id": "q1_topo_sort", "kind": "answer"}``.  The
  ``id`` is the question's id; several answer cells of one question add ``"question": "q1_topo_sort"``
  (with ids of their own).  Inside, ``### BEGIN SOLUTION`` / ``### END SOLUTION`` lines mark what
  the student must write; an answer cell without markers is entirely the solution.  Markdown answer
  cells are allowed (replaced by ``YOUR ANSWER HERE``; not auto-graded);
* tests cells: ``cell.metadata["memlab"] = {"id": "q1_topo_sort_tests", "kind": "tests",
  "question": "q1_topo_sort", "points": 3, "title": "Topological sort"}`` (``title`` optional).
  ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS`` lines mark tests students do not see.  A
  tests cell earns all its points if it runs without raising, none otherwise; a question may have
  several tests cells, its score is their sum.  Tests cells are plain Python (no ``%magics``).

Rules for tests cells (so a grade cannot be fooled):

* **Self-contained.**  A tests cell runs in a *copy* of the notebook's namespace: it sees the
  student's answers, but what it defines is thrown away afterwards, so no tests cell can use a name
  another tests cell defined (a student could redefine it; and the cells may run in any order).
  Each cell imports what it needs itself (``import numpy as np``, ``import memlab as ml``) and takes
  its helpers from :mod:`memlab.testing` (``check_gradient_fn``, ``forbid``, ``random_graph``,
  ``all_paths``, ``TagLayout``, ...), imported fresh in the cell, never from the notebook's set-up
  cells (a student can edit those).
* **Plain values.**  Convert what the answer returns before comparing: ``int(x)``, ``float(x)``,
  ``np.asarray(x, dtype=float)``, ``[int(v) for v in seq]``, ``{id(n) for n in nodes}`` for graph
  nodes, ``str(name)``; then an object whose ``__eq__`` always answers True proves nothing.
* **No delegation.**  Hidden tests call the answer inside ``memlab.testing.forbid(...)`` naming the
  library functions the question asks the student to write.

Ids (letters, digits, ``_ - .``) are unique in a notebook; cells are found by this metadata, never by
position.  Markers are lines holding only the marker, at any indentation.  Malformed input (no
memlab metadata, unbalanced or misplaced markers, a tests cell naming an unknown question, duplicate
ids, bad points) raises :class:`memlab.errors.GradingError` naming the file, cell and problem.
:mod:`memlab.grading.authoring` builds such notebooks from Python.

``memlab assign`` (:func:`assign`)
----------------------------------
``exercises/X.ipynb`` is ``solutions/X.ipynb`` with each solution region replaced by
``# YOUR CODE HERE`` + ``raise NotImplementedError()`` (at the indentation of the ``BEGIN`` line;
code outside the markers is kept), hidden tests removed, outputs and execution counts cleared,
tests cells marked non-editable and non-deletable, answer cells non-deletable.  The output is
deterministic (same solution, byte-identical exercise).  The exercise records
``nb.metadata["memlab"]["generated_sha256"]``, a hash of its cells' types, sources and memlab
metadata; regenerating refuses (``GradingError``, exit status 1, naming the files) to overwrite an
exercise whose content no longer matches that hash -- a student edited it -- unless ``--force``.
Outputs a student produced by running cells do not count as edits.  ``--check`` writes nothing and
fails if ``exercises/`` differs from what would be generated.

``memlab grade`` (:func:`grade`)
--------------------------------
**The solution decides.**  The tests come from the solution notebook the grader names:
``--solution NOTEBOOK`` or ``--solution DIR --assignment NAME``; it is required with ``--json`` (an
official grade).  Without ``--json`` (a student checking their work) ``solutions/<assignment>.ipynb``
in the current directory is the default.  The notebook's metadata is only checked against the
solution (a mismatch is an error naming both); nothing beside the submission is ever searched.  The
solution is read into memory before any kernel starts.

**Running.**  The notebook file is read once, never written.  Its code cells run, in the student's
order, in one fresh IPython kernel of the grading interpreter (``sys.executable``, a private kernel
spec, ``MPLBACKEND=Agg``), each within ``--timeout`` (default 30 s), all within ``--total-timeout``
(default 600 s; the tests not run by then score 0 and results.json is still written).  Then every
tests cell of the solution (visible and hidden parts) runs once, in the solution's order; the
student's copies of tests cells are never run, so deleting, moving, duplicating, editing or
re-pointing them changes nothing, and answers may use functions other answers define anywhere.

**Verdicts.**  A tests cell passes when the kernel's own ``execute_reply`` for the code that ran it
has status ``ok`` (never from printed or displayed output, or a name in the user namespace).  Tests
run with ``store_history=False`` (never in ``In``/``Out``), in a copy of the notebook's namespace,
with the real builtins; afterwards the cached cell text and ``sys.last_traceback`` are dropped.
Before the first student cell the grader records every public attribute of builtins, numpy,
numpy.testing/random/linalg, IPython.display, every loaded memlab module and memlab's classes, their
``sys.modules`` entries, ``sys.meta_path`` and IPython's reply machinery (:mod:`.inkernel`).  After
every student cell and every tests cell anything replaced is put back, and the question whose
answer replaced it (every question not yet tested, for a cell that answers none) scores 0 with
feedback naming what was patched.  This guard runs in the student's process: it stops the known
ways and their variants, not code written against the guard itself.

**Isolation** (:mod:`.isolate`).  As root (Gradescope, CI) the kernel runs as the unprivileged user
``memlab-grader`` (created if missing), with a minimal environment, in a private temporary directory
holding only a copy of the notebook; every process of that user, detached ones included, is ended
before results.json is written (atomically, by root).  Keep solutions readable by root only (the
autograder bundle does; a note warns otherwise).  When not root, or when that user cannot run this
interpreter (e.g. a Python under ``/root``), the run is not isolated and a note says so; the
processes the graded code started are still ended (the grader is their child subreaper).

**Limits.**  An error in a cell is recorded (and reported in that question's feedback); a cell over
its time limit is interrupted (the kernel restarted if it ignores the interrupt); the kernel's
address space is limited (``--memory-limit``, default 4096 MB) and, when isolated, the grading user
to 512 processes (the kernel lowers both itself before the first student cell); ``sys.exit()`` is
an ordinary exception; ``exit()`` and ``quit()``, which would stop the kernel a moment after their
cell, are ignored (a cell that gets past that stops the kernel: the grader waits for a new one and
runs the cells before it again); if the kernel dies (``os._exit``, a crash) it is restarted and the
student cells that had completed are run again (at most 5 restarts).  All text is clipped: exception names
and messages too, 20,000 characters per cell, about 300 kB per results.json; hidden test lines are
never quoted (and redacted if graded code prints them).  Bad input (invalid JSON, an empty file, a
missing path, a directory, no metadata, a solution mismatch) raises :class:`GradingError`; with
``--json`` a valid results.json (score 0, the error as output) is written first.

The score table goes to stdout; ``--json PATH`` writes Gradescope's ``results.json`` (``score``,
``max_score``, ``execution_time``, ``output``, ``tests[]`` with ``name``, ``score``, ``max_score``,
``output``, ``visibility``).  ``memlab autograder SOLUTION -o ZIP`` (:mod:`.bundle`) writes a
Gradescope autograder for one assignment.

Python API
----------
``assign(sources, out, force=False, check=False) -> AssignReport``;
``grade(path, solution=None, assignment=None, timeout=30, total_timeout=600, json_path=None,
isolate=None) -> Result`` (``score``, ``max_score``,
``questions[qid].score``, ``tests``, ``table()``, ``to_gradescope()``);
``check_all(solutions_dir, exercises_dir) -> list of problems`` (empty: the exercises are up to
date, every solution grades to full marks, every exercise to zero).
"""
from .assign import AssignReport, assign
from .batch import grade_all
from .grade import check_all, find_solution, grade, load
from .selfcheck import check_work
from .notebook import Solution, load_solution, make_exercise, parse_solution
from .results import QuestionResult, Result, TestResult

__all__ = ["assign", "AssignReport", "grade", "grade_all", "check_work", "load", "check_all", "find_solution",
           "Result", "QuestionResult",
           "TestResult", "Solution", "load_solution", "parse_solution", "make_exercise"]
