"""memlab's exercise machinery: make student notebooks from solutions, grade them.

The authoring spec (notebook schema, markers, tests cells, partial credit, the guard, feedback rules)
and the commands (``assign``, ``grade``, ``check-work``, ``grade-all``, ``check``, ``autograder``)
are described in ``docs/grading.md``.  This package imports only the standard library, nbformat,
jupyter_client and tqdm (never memlab's algorithms).

Python API: ``assign``, ``grade``, ``check_work``, ``grade_all``, ``check_all``, ``load``,
``find_solution``, ``write_release`` (``memlab release``), ``MIN_MEMORY``, the results (``Result``, ``QuestionResult``, ``TestResult``) and the notebook
schema (``Solution``, ``load_solution``, ``parse_solution``, ``make_exercise``).
"""
from .assign import AssignReport, assign
from .batch import grade_all
from .grade import MIN_MEMORY, check_all, find_solution, grade, load
from .release import release as write_release
from .feedbackcheck import check_feedback, check_feedback_all
from .selfcheck import check_work
from .notebook import Solution, load_solution, make_exercise, parse_solution
from .results import QuestionResult, Result, TestResult

__all__ = ["assign", "AssignReport", "grade", "grade_all", "check_work", "load", "check_all", "find_solution",
           "write_release", "MIN_MEMORY", "check_feedback", "check_feedback_all", "Result", "QuestionResult",
           "TestResult", "Solution", "load_solution", "parse_solution", "make_exercise"]
