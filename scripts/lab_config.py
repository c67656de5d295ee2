# JupyterLab settings for `make lab` (passed with --config): terminals start bash with scripts/lab.bashrc,
# which reads the user's ~/.bashrc and then puts the course's virtual environment first on PATH, so that
# `memlab check-work ...` works in JupyterLab's terminal (a login or rc file may rewrite PATH otherwise).
import os

c = get_config()  # noqa: F821  (defined by Jupyter when it reads this file)
_root = os.environ.get("MEMLAB_ROOT", os.getcwd())
c.ServerApp.terminado_settings = {
    "shell_command": ["bash", "--rcfile", os.path.join(_root, "scripts", "lab.bashrc"), "-i"]}
# The instructors' solutions stay out of the file browser (a student would otherwise be one click from
# every answer and hidden test).  This only hides them: instructors publish `make release` (no
# solutions/ at all) to students, never this repository.
c.ContentsManager.hide_globs = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*.so", "*.dylib", "*~",
                                "solutions", "*.results.json"]
