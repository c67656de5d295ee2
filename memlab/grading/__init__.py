"""memlab's exercise machinery: make student notebooks from solutions, grade them.

The authoring spec (notebook schema, markers, tests cells, partial credit, the judge, feedback
rules) and the commands (``assign``, ``grade``, ``check-work``, ``grade-all``, ``check``,
``autograder``) are described in ``docs/grading.md``.  The grader imports only the standard
library, nbformat, jupyter_client and tqdm (never memlab's algorithms).

Who runs what, by process:

* the grader (:mod:`.grade`, :mod:`.inputs`, :mod:`.session`, :mod:`.calls`, :mod:`.batch`,
  :mod:`.bundle`, :mod:`.isolate`, :mod:`.kernel`, the CLI): reads notebooks, runs the student's kernel and the
  judge, relays the judge's calls, writes the results;
* the judge (:mod:`.judge`): a process of its own that runs the hidden tests and decides every
  verdict (:mod:`.policy` is what it does with what the kernel reports);
* the kernel side (:mod:`.callserver`, with the refusals of a request, :mod:`.arming`, and the
  tampering report, :mod:`.watch`): loaded into the student's kernel, entry points ``start``
  (before the first student cell) and ``serve``; it imports nothing of the grader;
* the wire format between them (:mod:`.codec`, :mod:`.frames`).

Grading meets the library only at the errors, ``memlab.testing`` (``check``, ``record_checks``,
``forbid``, ``cuda_probe``) and the registry of plain-data codecs that memlab's structures fill as
they load (:mod:`memlab.plaindata`); ``tests/test_layers.py`` checks it.

Python API: ``assign``, ``grade``, ``check_work``, ``grade_all``, ``check_all``, ``load``,
``find_solution``, ``write_release`` (``memlab release``), ``MIN_MEMORY``, the results (``Result``, ``QuestionResult``, ``TestResult``) and the notebook
schema (``Solution``, ``load_solution``, ``parse_solution``, ``make_exercise``).
"""
from .assign import AssignReport, assign
from .batch import grade_all
from .grade import MIN_MEMORY, check_all, grade
from .inputs import find_solution, load
from .release import release as write_release
from .feedbackcheck import check_feedback, check_feedback_all
from .selfcheck import check_work
from .notebook import Solution, load_solution, make_exercise, parse_solution
from .results import QuestionResult, Result, TestResult

__all__ = ["assign", "AssignReport", "grade", "grade_all", "check_work", "load", "check_all", "find_solution",
           "write_release", "MIN_MEMORY", "check_feedback", "check_feedback_all", "Result", "QuestionResult",
           "TestResult", "Solution", "load_solution", "parse_solution", "make_exercise"]
