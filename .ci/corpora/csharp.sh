#!/usr/bin/env bash
# C# corpus: Python.NET (pythonnet 3.0.5), whose PyPI sdist carries its C# runtime
# and tests, about 150 .cs files. NuGet is not reachable; this is the well-known C#
# tree that a reachable registry ships as source.
set -euo pipefail
dir="${1:?usage: csharp.sh DIR}"
out="$dir/csharp"
[ -d "$out" ] && exit 0
tmp="$dir/csharp.partial"
rm -rf "$tmp"
mkdir -p "$tmp/download"
# The sdist itself, from PyPI's simple index, checked against the sha256 the index
# publishes (`pip download` would run the package's build backend to read metadata).
python3 - "$tmp/download" <<'PY'
import hashlib, re, sys, urllib.request
index = urllib.request.urlopen("https://pypi.org/simple/pythonnet/", timeout=60).read().decode()
found = re.search(r'href="([^"#]*/pythonnet-3\.0\.5\.tar\.gz)#sha256=([0-9a-f]{64})"', index)
if not found:
    sys.exit("csharp.sh: pythonnet-3.0.5.tar.gz is not in PyPI's index")
body = urllib.request.urlopen(found.group(1), timeout=120).read()
if hashlib.sha256(body).hexdigest() != found.group(2):
    sys.exit("csharp.sh: the pythonnet sdist does not match PyPI's sha256")
open(f"{sys.argv[1]}/pythonnet-3.0.5.tar.gz", "wb").write(body)
PY
tar -xzf "$tmp/download/pythonnet-3.0.5.tar.gz" -C "$tmp"
rm -rf "$tmp/download"
mv "$tmp" "$out"
