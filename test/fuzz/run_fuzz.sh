#!/usr/bin/env bash
# Builds the libFuzzer target of the relays' wire library with clang (sanitizers on) and
# runs it for a bounded time. Exit status 0: no crash; 1: a crash (its input is saved in
# .build/fuzz/); 77: clang with libFuzzer is not installed (Debian 12: clang-14
# libclang-rt-14-dev).
#   test/fuzz/run_fuzz.sh [seconds=10]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-10}
out="$root/.build/fuzz"
mkdir -p "$out/corpus"
cxx=""
for c in clang++ clang++-14 clang++-15 clang++-16; do
  if command -v "$c" > /dev/null; then cxx=$c; break; fi
done
if [ -z "$cxx" ]; then echo "run_fuzz: clang++ not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 77; fi
bin="$out/fuzz_relay_wire"
src=("$root/test/fuzz/fuzz_relay_wire.cpp" "$root"/src/relays/wire/*.cpp)  # the whole wire library
if [ ! -x "$bin" ] || [ -n "$(find "${src[@]}" "$root"/src/relays/wire/*.h -newer "$bin")" ]; then
  if ! "$cxx" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
      -I"$root/src/relays" "${src[@]}" -lz -o "$bin" 2> "$out/build.log"; then
    if grep -q -i "fuzzer" "$out/build.log"; then
      echo "run_fuzz: clang cannot link libFuzzer (apt-get install libclang-rt-14-dev):" >&2
      tail -5 "$out/build.log" >&2
      exit 77
    fi
    cat "$out/build.log" >&2
    exit 2
  fi
fi
# Seeds: one valid datagram (with its u16 length prefix) and one valid stream frame.
if [ -z "$(ls -A "$out/corpus")" ]; then
  printf '\x30\x00NLR1\x01\x01\x00\x00\x01\x02\x01\x00\x07\x00\x00\x00\x2a\x00\x00\x00\x01\x00\x00\x00\x08\x00\x00\x00\x08\x00\x00\x00\x00\x00\x01\x00\x88\x05\x08\x00abcdefgh' > "$out/corpus/seed_packet"
  printf 'NLT1\x01\x01\x00\x00\x07\x00\x00\x00\x2a\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00abcd' > "$out/corpus/seed_frame"
fi
cd "$out"
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -max_len=8192 -print_final_stats=1 \
  -artifact_prefix="$out/" "$out/corpus"
