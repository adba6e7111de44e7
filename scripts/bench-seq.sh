#!/usr/bin/env bash
# Vesta.NextSeq against Redis INCR, side by side in one run (BENCHMARKS.md,
# the segment sequences' goals): starts two redis-servers (the segment
# store, and the anchor that the INCRs go to, so neither slows the other)
# and a `vesta serve` with a Redis segment store, on free ports in a
# temporary directory, then runs the pairs below in interleaved rounds and
# prints each pair's calls/s ratio (median and range over the rounds) as a
# Markdown table.
#
#   scripts/bench-seq.sh [ROUNDS] [DURATION] [CONCURRENCY]    (3 5s 64)
#
# The pairs, each target against its anchor at the same concurrency:
#   defaults   `vesta-bench client-seq` (package client, its defaults: 2
#              pipelined connections, no prefetch, so every number is one
#              Vesta.NextSeq) against `redis-incr --pool` (go-redis, its
#              defaults: a pool of 10 connections per CPU, each INCR a round
#              trip of its own): each as its users call it.
#   conns=C    both with a connection per caller, no pipelining.
#   conns=2    both on 2 connections, the calls queued on one sent together
#              (package client's pipelining; a go-redis pipeline for INCR).
#   prefetch   client-seq --seq-prefetch 10000 against `redis-incr --pool`.
#
# Then the tail with a slow store: a second `vesta serve` whose Redis store
# is behind a TCP proxy holding every request 5 ms; client-seq with
# --seq-prefetch 10000 in an open loop of 200,000 calls/s, its p50/p99/p99.9
# beside the client's prefetched NextID (`client --prefetch 10000`) at the
# same load on the same server.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} dur=${2:-5s} conc=${3:-64}
usage() { echo "bench-seq: $1; usage: scripts/bench-seq.sh [ROUNDS 1-100] [DURATION e.g. 5s] [CONCURRENCY 1-4096]" >&2; exit 2; }
[[ $rounds =~ ^[0-9]+$ ]] && ((rounds >= 1 && rounds <= 100)) || usage "ROUNDS \"$rounds\""
[[ $conc =~ ^[0-9]+$ ]] && ((conc >= 1 && conc <= 4096)) || usage "CONCURRENCY \"$conc\""
[[ $dur =~ ^[0-9]+(ms|s|m)$ ]] || usage "DURATION \"$dur\""

command -v redis-server >/dev/null || scripts/deps.sh
make -s build bench-load

dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() {
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "bench-seq: nothing listens on 127.0.0.1:$1" >&2; exit 1
}

store=$(freeport) anchor=$(freeport)
for p in "$store" "$anchor"; do
  redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --logfile "$dir/redis-$p.log" &
  pids+=($!)
  waitport "$p"
done
# serve NAME MACHINE STORE_PORT TAG STEP: a `vesta serve` on machine MACHINE
# with a Redis segment store at STORE_PORT and TAG created with STEP; its
# central port is left in $port.
serve() {
  local name=$1 machine=$2 storeport=$3 tag=$4 step=$5
  port=$(freeport)
  cat >"$dir/$name.yaml" <<EOF
machine:
  id: $machine
segment:
  store: redis
  redis:
    addrs: ["127.0.0.1:$storeport"]
  preload: [$tag]
central:
  listen: 127.0.0.1:$port
rest:
  listen: 127.0.0.1:$(freeport)
EOF
  bin/vesta seq create "$tag" --start 1 --step "$step" --config "$dir/$name.yaml" >/dev/null
  bin/vesta serve --config "$dir/$name.yaml" --data-dir "$dir/$name-data" --log-level error \
    >"$dir/$name.log" 2>&1 &
  pids+=($!)
  waitport "$port"
}
serve fast 1000 "$store" bench 100000
central=$port

# The slow store: a proxy holding each chunk from vesta to Redis 5 ms.
cat >"$dir/delayproxy.py" <<'PROXY'
import asyncio, sys
listen, target, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000

async def pipe(r, w, d):
    try:
        while data := await r.read(65536):
            if d:
                await asyncio.sleep(d)
            w.write(data)
            await w.drain()
    finally:
        w.close()

async def handle(cr, cw):
    sr, sw = await asyncio.open_connection("127.0.0.1", target)
    await asyncio.gather(pipe(cr, sw, delay), pipe(sr, cw, 0), return_exceptions=True)

async def main():
    async with await asyncio.start_server(handle, "127.0.0.1", listen) as srv:
        await srv.serve_forever()

asyncio.run(main())
PROXY
proxy=$(freeport)
python3 "$dir/delayproxy.py" "$proxy" "$store" 5 &
pids+=($!)
waitport "$proxy"
serve slow 1001 "$proxy" slow 1000
slow=$port

# run NAME ROUND ARGS...: one measurement; its calls/s and p99 (µs) are
# appended to NAME's file.
run() {
  local name=$1 round=$2; shift 2
  bin/vesta-bench "$@" -c "$conc" -d "$dur" --warmup 1s --json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["calls_per_sec"], r["p99_us"])' >>"$dir/$name"
  echo "round $round: $name $(tail -1 "$dir/$name")" >&2
}
pairs=(defaults "conns=$conc" conns=2 prefetch)
for r in $(seq "$rounds"); do
  # Odd rounds run the anchor first, even rounds the target: drift in the
  # machine's load falls on both sides alike.
  for pair in "${pairs[@]}"; do
    case $pair in
      defaults) t=(client-seq --addr "127.0.0.1:$central" --tag bench)
                a=(redis-incr --addr "127.0.0.1:$anchor" --pool) ;;
      conns=2)  t=(rpc-seq --addr "127.0.0.1:$central" --tag bench --conns 2)
                a=(redis-incr --addr "127.0.0.1:$anchor" --conns 2) ;;
      prefetch) t=(client-seq --addr "127.0.0.1:$central" --tag bench --seq-prefetch 10000)
                a=(redis-incr --addr "127.0.0.1:$anchor" --pool) ;;
      *)        t=(rpc-seq --addr "127.0.0.1:$central" --tag bench --conns "$((conc < 64 ? conc : 64))")
                a=(redis-incr --addr "127.0.0.1:$anchor" --conns "$((conc < 64 ? conc : 64))") ;;
    esac
    if ((r % 2)); then
      run "$pair.anchor" "$r" "${a[@]}"; run "$pair.target" "$r" "${t[@]}"
    else
      run "$pair.target" "$r" "${t[@]}"; run "$pair.anchor" "$r" "${a[@]}"
    fi
  done
done

# tail_run NAME ROUND ARGS...: one open-loop run; calls/s, p50, p99, p99.9
# and max (µs) appended to NAME's file.
tail_run() {
  local name=$1 round=$2; shift 2
  bin/vesta-bench "$@" -c "$conc" -d "$dur" --warmup 1s --rate 200000 --json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["calls_per_sec"], r["p50_us"], r["p99_us"], r["p999_us"], r["max_us"])' >>"$dir/$name"
  echo "round $round: $name $(tail -1 "$dir/$name")" >&2
}
for r in $(seq "$rounds"); do
  tail_run tail.seq "$r" client-seq --addr "127.0.0.1:$slow" --tag slow --seq-prefetch 10000
  tail_run tail.id "$r" client --addr "127.0.0.1:$slow" --prefetch 10000
done

python3 - "$dir" "$conc" "$dur" "${pairs[@]}" <<'EOF'
import statistics, sys
d, conc, dur, pairs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
read = lambda f: [tuple(map(float, x.split())) for x in open(f"{d}/{f}")]
med = statistics.median
us = lambda v: f"{v:,.0f}" if v >= 10 else f"{v:.2f}"  # latencies in µs
print(f"{conc} callers, {dur} per run after 1s of warm-up; ratios are per round (target ÷ anchor), then their median and range")
print()
print("| pair | target calls/s (p99 µs) | anchor calls/s (p99 µs) | calls/s ratio | range | p99 ratio |")
print("|---|---|---|---|---|---|")
for p in pairs:
    t, a = read(p + ".target"), read(p + ".anchor")
    r = [x[0] / y[0] for x, y in zip(t, a)]
    l = [x[1] / y[1] for x, y in zip(t, a)]
    print(f"| {p} | {med(x[0] for x in t):,.0f} ({us(med(x[1] for x in t))}) | "
          f"{med(y[0] for y in a):,.0f} ({us(med(y[1] for y in a))}) | "
          f"×{med(r):.2f} | ×{min(r):.2f}–×{max(r):.2f} | ×{med(l):.2g} |")
print()
print(f"Open loop at 200,000 calls/s, {conc} callers, every store round trip +5 ms (medians over rounds; p99.9 range):")
print()
print("| target | calls/s | p50 µs | p99 µs | p99.9 µs | p99.9 range | max µs |")
print("|---|---|---|---|---|---|---|")
for name, what in (("tail.seq", "client NextSeq, seq prefetch 10,000"), ("tail.id", "client NextID, prefetch 10,000")):
    rows = read(name)
    col = lambda i: med(x[i] for x in rows)
    p999 = [x[3] for x in rows]
    print(f"| {what} | {col(0):,.0f} | {col(1):.2f} | {col(2):.2f} | {col(3):.2f} | {min(p999):.2f}–{max(p999):.2f} | {col(4):,.0f} |")
EOF
