#!/usr/bin/env bash
# C# corpus: Python.NET (pythonnet 3.0.5), whose PyPI sdist carries its C# runtime
# and tests, about 150 .cs files. NuGet is not reachable; this is the well-known C#
# tree that a reachable registry ships as source.
set -euo pipefail
dir="${1:?usage: csharp.sh DIR}"
out="$dir/csharp"
[ -d "$out" ] && exit 0
if ! python3 -m pip --version >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
fi
tmp="$dir/csharp.partial"
rm -rf "$tmp"
mkdir -p "$tmp/download"
python3 -m pip download --quiet --no-binary :all: --no-deps pythonnet==3.0.5 -d "$tmp/download"
tar -xzf "$tmp/download/pythonnet-3.0.5.tar.gz" -C "$tmp"
rm -rf "$tmp/download"
mv "$tmp" "$out"
