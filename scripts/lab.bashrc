# bash start-up for JupyterLab's terminals under `make lab` (see scripts/lab_config.py).
[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"
if [ -n "${MEMLAB_VENV:-}" ]; then
    export VIRTUAL_ENV="$MEMLAB_VENV"
    export PATH="$MEMLAB_VENV/bin:$PATH"
fi
cd "${MEMLAB_ROOT:-.}" 2>/dev/null || true
