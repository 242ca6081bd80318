#!/bin/bash
# A real llama-server for the real-server test tier (test/real), built from the llama.cpp source the
# node-llama-cpp npm package ships (llama/gitRelease.bundle: the same build test/fixtures/llama-server was
# recorded from), plus tiny deterministic models with the real Qwen tokenizer and real chat templates.
#
# Idempotent: once built, a run only prints the paths. First run: ~5-10 min on 2 cores.
# Needs cmake, g++, git and python3 with numpy; as root it installs the missing ones from Debian.
# Cache: $BOXMAKER_LLAMA_CACHE (default ~/.cache/boxmaker-llama), one folder per node-llama-cpp version,
# outside any checkout so every clone (and CI) reuses it. The tests find it there (test/real/support).
# Output, one per line: LLAMA_SERVER=… MODEL_ANSWER=… MODEL_TOOL=… MODEL_THINK=… MODEL_<FAMILY>=… TEMPLATES=…
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VER=${NODE_LLAMA_CPP_VERSION:-3.21.1}
DIR=${BOXMAKER_LLAMA_CACHE:-$HOME/.cache/boxmaker-llama}/$VER
log() { echo "llama-server build: $*" >&2; }
apt_install() {
  if [ "$(id -u)" != 0 ]; then log "missing $*: install it (apt-get install -y $*) and run again"; exit 1; fi
  log "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
mkdir -p "$DIR" && cd "$DIR"

if [ ! -x src/build/bin/llama-server ]; then
  need=()
  command -v cmake >/dev/null || need+=(cmake)
  command -v g++ >/dev/null || need+=(g++)
  command -v git >/dev/null || need+=(git)
  command -v make >/dev/null || need+=(make)
  [ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
  [ -f "node-llama-cpp-$VER.tgz" ] || npm pack "node-llama-cpp@$VER" --silent >/dev/null
  if [ ! -d src ]; then
    tar xzf "node-llama-cpp-$VER.tgz" package/llama/gitRelease.bundle
    git -c advice.detachedHead=false clone -q package/llama/gitRelease.bundle src
    rm -rf package
  fi
  log "building llama-server (several minutes, once)"
  # Static and CPU-only: the cache folder can move, and the tiny models need no GPU.
  cmake -S src -B src/build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF >/dev/null
  cmake --build src/build --target llama-server -j"$(nproc)" >/dev/null
fi

PY=python3
$PY -c 'import numpy' 2>/dev/null || PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || { apt_install python3 python3-numpy; PY=/usr/bin/python3; }
T=src/models/templates
V=src/models/ggml-vocab-qwen2.gguf
# Models are written to a temporary name first: a half-written model must never look finished.
mk() {
  [ -f "tiny-$1.gguf" ] && return
  $PY "$HERE/make-tiny-model.py" src/gguf-py "$V" "$T/$2" "tiny-$1.gguf.part" "$3" >/dev/null
  mv "tiny-$1.gguf.part" "tiny-$1.gguf"
}
mk answer Qwen-Qwen3-0.6B.jinja answer
mk tool Qwen3.5-4B.jinja tool
mk think Qwen3.5-4B.jinja random
# Other template families, for the template probe's tests (test/real/template-*.test.ts): each says
# "Done." through its own chat template, so the probe's verdicts and the cache can be measured per family.
mk llama33 meta-llama-Llama-3.3-70B-Instruct.jinja answer
mk nemo mistralai-Mistral-Nemo-Instruct-2407.jinja answer
mk deepseek31 deepseek-ai-DeepSeek-V3.1.jinja answer
mk granite4 ibm-granite-granite-4.0.jinja answer
echo "LLAMA_SERVER=$DIR/src/build/bin/llama-server"
echo "MODEL_ANSWER=$DIR/tiny-answer.gguf"
echo "MODEL_TOOL=$DIR/tiny-tool.gguf"
echo "MODEL_THINK=$DIR/tiny-think.gguf"
for m in llama33 nemo deepseek31 granite4; do echo "MODEL_${m^^}=$DIR/tiny-$m.gguf"; done
echo "TEMPLATES=$DIR/$T"
