#!/usr/bin/env bash
# testnet/threesystems.sh [N]: one host per owner serving three systems at once. Builds ppboost, partitions
# synthetic data among N owners (default 6), and starts on loopback a W&C data user (`ppboost user`), a
# federated DPBoost data user (`ppboost fed-user`), a PFDS announcer (`ppboost pfds announce`) and N
# `ppboost owner --fed --pfds` processes: each owner is ONE libp2p host (one key, one --data, one ledger, one
# --budget) running a W&C owner, a federated owner and a PFDS agent through a protocol.Mux. Every owner
# bootstraps ONLY to the two users and the announcer, never to another owner: W&C owners learn each other's
# addresses from the roster (Join), federated owners from the FedConfig's roster_addrs, and PFDS messages
# travel on gossipsub through the announcer. It waits for the three sessions, checks that every owner exits 0
# having logged all three outcomes, prints each owner's ledger (three systems' spends on one budget) and scores
# the W&C, the federated and owner 0's PFDS model on the test file. Everything it starts is killed on exit or
# Ctrl-C; the exit status is non-zero if anything fails.
#
# Environment knobs: MECHANISM (W&C, default none: with 2 owners per round an LDP stump is a coin flip, see
# testnet/run.sh), FED_METHOD (np | dpboost | newton, default np; np and none need the owners' --allow-none,
# which the script passes), EPS (1: each system's epsilon), PORT (first TCP port, default 40000 + random),
# TIMEOUT seconds (180), KEEP=1 keeps the work directory.
set -euo pipefail

N=${1:-6}
MECHANISM=${MECHANISM:-none}
FED_METHOD=${FED_METHOD:-np}
EPS=${EPS:-1}
PORT=${PORT:-$(( 40000 + RANDOM % 20000 ))}
TIMEOUT=${TIMEOUT:-180}
[[ $N =~ ^[0-9]+$ ]] && (( N >= 3 )) || { echo "threesystems: N must be at least 3 owners (min_parties), got '$N'" >&2; exit 2; }

. "$(dirname "$0")/lib.sh"
testnet_setup threesystems "logs and data"
t0=$(date +%s)

echo "threesystems: building ppboost"
(cd "$root" && go build -o "$work/ppboost" ./cmd/ppboost)
bin="$work/ppboost"
"$bin" partition --data synthetic --owners "$N" --samples-per-owner 40 --user-samples 200 --holdout 400 \
  --out "$work/data" >/dev/null
mkdir -p "$work/keys" "$work/state" "$work/logs" "$work/models"
user_id=$("$bin" keygen --out "$work/keys/user.key")
fed_id=$("$bin" keygen --out "$work/keys/fed-user.key")
ann_id=$("$bin" keygen --out "$work/keys/announcer.key")
ids=()
for i in $(seq 0 $((N - 1))); do
  ids+=("$("$bin" keygen --out "$work/keys/owner-$i.key")")
done
roster=$(IFS=,; echo "${ids[*]}")
user_addr="/ip4/127.0.0.1/tcp/$PORT"
fed_addr="/ip4/127.0.0.1/tcp/$((PORT + 1))"
ann_addr="/ip4/127.0.0.1/tcp/$((PORT + 2))"

echo "threesystems: W&C user $user_id, fed user $fed_id, PFDS announcer $ann_id, $N owners serving all three"
"$bin" user --key "$work/keys/user.key" --listen "$user_addr" --data "$work/data/validation.csv" \
  --test "$work/data/test.csv" --expect-owners "$N" --owners-per-round 2 --rounds 2 --mechanism "$MECHANISM" \
  --eps "$EPS" --model "$work/models/wc.json" --state "$work/state/user" >"$work/logs/user.log" 2>&1 &
user_pid=$!
pids+=("$user_pid")
"$bin" fed-user --key "$work/keys/fed-user.key" --listen "$fed_addr" --data "$work/data/validation.csv" \
  --roster "$roster" --max-rows 40 --method "$FED_METHOD" --eps "$EPS" --trees 4 --depth 2 \
  --model "$work/models/fed.json" >"$work/logs/fed-user.log" 2>&1 &
fed_pid=$!
pids+=("$fed_pid")
# The announcer lingers while the agents exchange their trees and data shares through it; the script ends it.
"$bin" pfds announce --key "$work/keys/announcer.key" --listen "$ann_addr" --roster "$roster" \
  --data "csv:$work/data/validation.csv" --eps "$EPS" --timeout 20s --linger "${TIMEOUT}s" \
  >"$work/logs/announcer.log" 2>&1 &
pids+=("$!")
owner_pids=()
boot="$user_addr/p2p/$user_id,$fed_addr/p2p/$fed_id,$ann_addr/p2p/$ann_id" # the users only: no owner's address
for i in $(seq 0 $((N - 1))); do
  "$bin" owner --data "$work/data/owner-$(printf '%03d' "$i").csv" --key "$work/keys/owner-$i.key" \
    --listen "/ip4/127.0.0.1/tcp/$((PORT + 3 + i))" --bootstrap "$boot" --user "$user_id" \
    --fed --fed-user "$fed_id" --pfds --pfds-announcer "$ann_id" --pfds-model "$work/models/pfds-$i.json" \
    --allow-none --eps "$EPS" --budget $(( 10 * EPS )) --state "$work/state/owner-$i" >"$work/logs/owner-$i.log" 2>&1 &
  owner_pids+=("$!")
  pids+=("$!")
done

deadline=$(( $(date +%s) + TIMEOUT ))
status() { # pid name log: wait for it within the deadline, fail unless it exits 0
  while kill -0 "$1" 2>/dev/null; do
    (( $(date +%s) <= deadline )) || { echo "threesystems: $2 still running after ${TIMEOUT}s" >&2; tail -n 20 "$3" >&2; exit 1; }
    sleep 0.2
  done
  set +e; wait "$1"; local rc=$?; set -e
  (( rc == 0 )) || { echo "threesystems: $2 exited $rc" >&2; tail -n 30 "$3" >&2; exit 1; }
}
status "$user_pid" "W&C user" "$work/logs/user.log"
status "$fed_pid" "fed user" "$work/logs/fed-user.log"
for i in $(seq 0 $((N - 1))); do
  log="$work/logs/owner-$i.log"
  status "${owner_pids[$i]}" "owner $i" "$log"
  wc_end=$(grep -o 'owner: session ended: [^:]*: [0-9]* of [0-9]* [a-z]*' "$log" || true)
  fed_end=$(grep -o 'owner.fed: session ended: [^:]*: [0-9]* of [0-9]* [a-z]*' "$log" || true)
  pfds_end=$(grep -o 'owner.pfds: session ended: [^:]*: [0-9]* of [0-9]* [a-z]*' "$log" || true)
  [[ -n $wc_end && -n $fed_end && -n $pfds_end ]] ||
    { echo "threesystems: owner $i did not log all three outcomes" >&2; tail -n 30 "$log" >&2; exit 1; }
  # The ledger's spends (release bindings carry no epsilon): one budget for the three systems.
  spends=$(awk '!/"bind":/ && match($0, /"session":"[^"]*"/) {
      key = substr($0, RSTART + 11, RLENGTH - 12); match($0, /"eps":[0-9.e+-]*/); eps = substr($0, RSTART + 6, RLENGTH - 6)
      printf "%s%s=%.3g", sep, key, eps; sep = " "; total += eps }
    END { printf " (spent %.3g of %d)", total, budget }' budget=$(( 10 * EPS )) "$work/state/owner-$i/ledger.jsonl")
  echo "owner $i: $wc_end; $fed_end; $pfds_end; ledger: $spends"
done
echo "threesystems: three sessions done in $(( $(date +%s) - t0 )) s"
echo "threesystems: W&C model"
"$bin" predict --model "$work/models/wc.json" --data "csv:$work/data/test.csv"
echo "threesystems: federated model"
"$bin" predict --model "$work/models/fed.json" --data "csv:$work/data/test.csv"
echo "threesystems: owner 0's PFDS model (its own rows and the $N agents' shares)"
"$bin" predict --model "$work/models/pfds-0.json" --data "csv:$work/data/test.csv"
