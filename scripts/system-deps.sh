#!/usr/bin/env bash
# Install the system programs memlab needs, with apt-get, when they are missing.
#   scripts/system-deps.sh            Graphviz's `dot` (required: lessons draw graphs)
#   scripts/system-deps.sh --browser  also Chromium (optional: the browser test of the lessons)
set -u
want_browser=0
[ "${1:-}" = "--browser" ] && want_browser=1

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
# isolated grading starts the kernel in a mount namespace of its own (unshare, mount, chroot)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
command -v mount >/dev/null 2>&1 || missing+=(mount)
if [ "$want_browser" = 1 ] && ! [ -x /usr/bin/chromium ]; then missing+=(chromium); fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "memlab: installing ${missing[*]} with apt-get ..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/memlab-apt.log 2>&1; then
    echo "memlab: apt-get install ${missing[*]} failed; see /tmp/memlab-apt.log" >&2
  fi
fi

if ! command -v dot >/dev/null 2>&1; then
  echo "memlab: Graphviz's 'dot' program is missing. Install it with:" >&2
  echo "    sudo apt-get install graphviz      (Debian/Ubuntu)" >&2
  echo "    brew install graphviz              (macOS)" >&2
  exit 1
fi
if [ "$want_browser" = 1 ] && ! [ -x /usr/bin/chromium ]; then
  echo "memlab: Chromium is missing, so the browser test will be skipped." >&2
  echo "    To run it: sudo apt-get install chromium" >&2
fi
exit 0
