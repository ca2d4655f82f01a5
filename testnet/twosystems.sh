#!/usr/bin/env bash
# testnet/twosystems.sh [N]: one host per owner serving two systems at once. Builds ppboost, partitions
# synthetic data among N owners (default 6), and starts on loopback a W&C data user (`ppboost user`), a
# federated DPBoost data user (`ppboost fed-user`) and N `ppboost owner --fed` processes: each owner is ONE
# libp2p host (one key, one --data, one ledger) running a W&C owner and a federated owner through a
# protocol.Mux. It waits for both sessions, checks that every owner exits 0 having logged both outcomes,
# prints each owner's ledger (both systems' spends on one budget) and scores both models on the test file.
# Everything it starts is killed on exit or Ctrl-C; the exit status is non-zero if anything fails.
#
# Environment knobs: MECHANISM (W&C, default none: with 2 owners per round an LDP stump is a coin flip, see
# testnet/run.sh), FED_METHOD (np | dpboost | newton, default np; np and none need the owners' --allow-none,
# which the script passes), EPS (1), PORT (first TCP port, default 40000 + random), TIMEOUT seconds (180),
# KEEP=1 keeps the work directory.
set -euo pipefail

N=${1:-6}
MECHANISM=${MECHANISM:-none}
FED_METHOD=${FED_METHOD:-np}
EPS=${EPS:-1}
PORT=${PORT:-$(( 40000 + RANDOM % 20000 ))}
TIMEOUT=${TIMEOUT:-180}
[[ $N =~ ^[0-9]+$ ]] && (( N >= 3 )) || { echo "twosystems: N must be at least 3 owners (min_parties), got '$N'" >&2; exit 2; }

. "$(dirname "$0")/lib.sh"
testnet_setup twosystems "logs and data"

echo "twosystems: building ppboost"
(cd "$root" && go build -o "$work/ppboost" ./cmd/ppboost)
bin="$work/ppboost"
"$bin" partition --data synthetic --owners "$N" --samples-per-owner 40 --user-samples 200 --holdout 400 \
  --out "$work/data" >/dev/null
mkdir -p "$work/keys" "$work/state" "$work/logs"
user_id=$("$bin" keygen --out "$work/keys/user.key")
fed_id=$("$bin" keygen --out "$work/keys/fed-user.key")
ids=() addrs=()
for i in $(seq 0 $((N - 1))); do
  ids+=("$("$bin" keygen --out "$work/keys/owner-$i.key")")
  addrs+=("/ip4/127.0.0.1/tcp/$((PORT + 2 + i))")
done
roster=$(IFS=,; echo "${ids[*]}")
user_addr="/ip4/127.0.0.1/tcp/$PORT"
fed_addr="/ip4/127.0.0.1/tcp/$((PORT + 1))"

echo "twosystems: W&C user $user_id, fed user $fed_id, $N owners serving both"
"$bin" user --key "$work/keys/user.key" --listen "$user_addr" --data "$work/data/validation.csv" \
  --test "$work/data/test.csv" --expect-owners "$N" --owners-per-round 2 --rounds 2 --mechanism "$MECHANISM" \
  --eps "$EPS" --model "$work/wc-model.json" --state "$work/state/user" >"$work/logs/user.log" 2>&1 &
user_pid=$!
pids+=("$user_pid")
"$bin" fed-user --key "$work/keys/fed-user.key" --listen "$fed_addr" --data "$work/data/validation.csv" \
  --roster "$roster" --max-rows 40 --method "$FED_METHOD" --eps "$EPS" --trees 4 --depth 2 \
  --model "$work/fed-model.json" >"$work/logs/fed-user.log" 2>&1 &
fed_pid=$!
pids+=("$fed_pid")
owner_pids=()
for i in $(seq 0 $((N - 1))); do
  # A FedConfig names the roster without addresses: each owner bootstraps to the other owners too
  # (on a LAN, --mdns does the same).
  boot="$user_addr/p2p/$user_id,$fed_addr/p2p/$fed_id"
  for j in $(seq 0 $((N - 1))); do
    (( j == i )) || boot+=",${addrs[$j]}/p2p/${ids[$j]}"
  done
  "$bin" owner --data "$work/data/owner-$(printf '%03d' "$i").csv" --key "$work/keys/owner-$i.key" \
    --listen "${addrs[$i]}" --bootstrap "$boot" --user "$user_id" --fed --fed-user "$fed_id" --allow-none \
    --eps "$EPS" --budget $(( 10 * EPS )) --state "$work/state/owner-$i" >"$work/logs/owner-$i.log" 2>&1 &
  owner_pids+=("$!")
  pids+=("$!")
done

deadline=$(( $(date +%s) + TIMEOUT ))
status() { # pid name: wait for it within the deadline, print its exit status
  while kill -0 "$1" 2>/dev/null; do
    (( $(date +%s) <= deadline )) || { echo "twosystems: $2 still running after ${TIMEOUT}s" >&2; tail -n 20 "$3" >&2; exit 1; }
    sleep 0.2
  done
  set +e; wait "$1"; local rc=$?; set -e
  (( rc == 0 )) || { echo "twosystems: $2 exited $rc" >&2; tail -n 30 "$3" >&2; exit 1; }
}
status "$user_pid" "W&C user" "$work/logs/user.log"
status "$fed_pid" "fed user" "$work/logs/fed-user.log"
for i in $(seq 0 $((N - 1))); do
  status "${owner_pids[$i]}" "owner $i" "$work/logs/owner-$i.log"
  wc_end=$(grep -o 'owner: session ended: [^:]*: [0-9]* of [0-9]* [a-z]*' "$work/logs/owner-$i.log" || true)
  fed_end=$(grep -o 'owner.fed: session ended: [^:]*: [0-9]* of [0-9]* [a-z]*' "$work/logs/owner-$i.log" || true)
  [[ -n $wc_end && -n $fed_end ]] || { echo "twosystems: owner $i did not log both outcomes" >&2; exit 1; }
  spends=$(awk -F'"session":"' 'NF > 1 { split($2, a, "\""); printf "%s%s", sep, a[1]; sep = " " }' "$work/state/owner-$i/ledger.jsonl")
  echo "owner $i: $wc_end; $fed_end; ledger: $spends"
done
echo "twosystems: W&C model"
"$bin" predict --model "$work/wc-model.json" --data "csv:$work/data/test.csv"
echo "twosystems: federated model"
"$bin" predict --model "$work/fed-model.json" --data "csv:$work/data/test.csv"
