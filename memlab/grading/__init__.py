"""memlab's exercise machinery: make student notebooks from solutions, grade them.

It follows nbgrader's and otter's conventions with a small implementation of its own, and imports
only the standard library, nbformat and jupyter_client (never memlab's algorithms).

Notebook schema
---------------
An instructor (solution) notebook ``solutions/<assignment>.ipynb`` carries

* notebook metadata ``nb.metadata["memlab"] = {"assignment": "01_executor"}``; the name must match
  the file name stem by convention, and is how ``memlab grade`` finds the solution of an exercise;
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
The notebook file is read once, never written.  Its code cells run, in the student's order, in one
fresh IPython kernel of the grading interpreter (``sys.executable``, through a private kernel spec;
cwd: the notebook's directory; ``MPLBACKEND=Agg``), with a time limit per cell (``--timeout``,
default 30 s).  The tests come from the solution notebook (``--solution``, else
``solutions/<assignment>.ipynb`` in the current directory or a directory above the notebook, else
``<assignment>.ipynb`` next to it): the student's copies of tests cells are never run, so editing
them changes nothing.  Each solution tests cell (visible and hidden parts) runs once, right after
the later of the student's first copy of that cell and the student's last answer cell of its
question; if the student deleted both, at the end.  So deleted tests cells still run, duplicated
ones run once, and moved ones run after the answer.  Answer cells run wherever the student put them;
if duplicated, every copy runs in order and the last definition wins, as in Python.

Student code cannot take the grader down: an error in a cell is recorded (and reported in that
question's feedback) and grading continues; a cell over the time limit is interrupted (and the
kernel restarted if it ignores the interrupt); text output is truncated to 20,000 characters per
cell; ``sys.exit()`` is an ordinary exception and ``exit()`` does nothing in a kernel; if the kernel
dies (``os._exit``, a crash) it is restarted and the cells that had completed before are run again,
then grading goes on (at most 5 restarts; tests not run after that score 0).  Only the tests of the
question at fault lose their points.  Feedback for a failed visible test quotes the failing test
line (and the assert's message); for a hidden test only the exception, never the hidden code.

The score table goes to stdout; ``--json PATH`` writes Gradescope's ``results.json`` (``score``,
``execution_time``, ``output``, ``tests[]`` with ``name``, ``score``, ``max_score``, ``output``,
``visibility``).  This is not a security sandbox: the student's code runs with the grader's rights.

Python API
----------
``assign(sources, out, force=False, check=False) -> AssignReport``;
``grade(path, solution=None, timeout=30, json_path=None) -> Result`` (``score``, ``max_score``,
``questions[qid].score``, ``tests``, ``table()``, ``to_gradescope()``);
``check_all(solutions_dir, exercises_dir) -> list of problems`` (empty: the exercises are up to
date, every solution grades to full marks, every exercise to zero).
"""
from .assign import AssignReport, assign
from .grade import check_all, find_solution, grade, load
from .notebook import Solution, load_solution, make_exercise, parse_solution
from .results import QuestionResult, Result, TestResult

__all__ = ["assign", "AssignReport", "grade", "load", "check_all", "find_solution", "Result", "QuestionResult",
           "TestResult", "Solution", "load_solution", "parse_solution", "make_exercise"]
