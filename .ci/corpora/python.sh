#!/usr/bin/env bash
# Python corpus: the CPython 3.11 standard library as Debian ships it
# (libpython3.11-stdlib, /usr/lib/python3.11), every .py file including the few
# under test/ (Debian moves the real test suite to another package, so what remains
# is small support code). About 670 files. The files are copied, so the tree does
# not change under the test when the package is upgraded.
set -euo pipefail
dir="${1:?usage: python.sh DIR}"
out="$dir/python"
[ -d "$out" ] && exit 0
src=/usr/lib/python3.11
if [ ! -f "$src/os.py" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    libpython3.11-stdlib >/dev/null
fi
tmp="$out.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
(cd "$src" && find . -name '*.py' -not -path './site-packages/*' -not -path './dist-packages/*' -print0 |
  sort -z | tar --null -T - -cf -) | tar -xf - -C "$tmp"
mv "$tmp" "$out"
