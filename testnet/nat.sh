#!/usr/bin/env bash
# testnet/nat.sh [OWNERS] [SITES]: owners behind NATs, on one machine, with default network flags.
#
# Builds network namespaces: a "wan" namespace holding a bridge (198.18.0.0/24, a benchmarking range that
# exists only inside these namespaces), the data user on it at 198.18.0.1, SITES NAT namespaces (198.18.0.1K
# on the wan side, 10.K.0.1/24 on a LAN bridge, ip_forward on, nftables masquerade out of the wan side and a
# stateful filter that drops unsolicited inbound traffic, as a home router does; hosts on one LAN reach each
# other, also where br_netfilter passes bridged traffic through that filter), and OWNERS owners spread
# over the sites, each in a namespace of its own whose default route is its NAT. No namespace has a route off
# the machine, and nothing is changed outside the namespaces. Then testnet/run.sh runs the session in them
# (Shamir sums, the default) with the owners on their default listen addresses and NAT settings, and this
# script checks that the model file exists and that every owner received the model, and prints each owner's
# direct and relayed connections and hole punches from its metrics endpoint (inside its own namespace) and
# whether it held a relay slot. Everything is removed on exit.
#
# Needs root (network namespaces): without it, it prints SKIP and exits 0. nftables and iproute2 are
# installed with apt-get if missing. Environment: ROUNDS (1), H (OWNERS/2), PRIVACY (distributed), TIMEOUT (180),
# KEEP=1 keeps run.sh's work directory; run.sh's other knobs pass through.
set -euo pipefail

OWNERS=${1:-6}
SITES=${2:-3}
[[ $OWNERS =~ ^[0-9]+$ && $SITES =~ ^[0-9]+$ ]] && (( SITES >= 2 && SITES <= 50 && OWNERS >= SITES && OWNERS <= 200 )) ||
  { echo "usage: testnet/nat.sh [OWNERS >= SITES] [SITES 2..50]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)

skip() { echo "nat: SKIP: $*" >&2; echo "nat: SKIP (the NAT test did not run)"; exit 0; }
[[ $(id -u) == 0 ]] || skip "network namespaces need root"
if ! command -v nft >/dev/null || ! command -v ip >/dev/null; then
  echo "nat: installing nftables and iproute2"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables iproute2 >/dev/null
fi

tag="ppbnat$$"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ppboost-nat.XXXXXX")
made=() # namespaces this script created

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local n p
  # run.sh stops the processes it started; anything left in our namespaces is ours too.
  for n in "${made[@]}"; do
    for p in $(ip netns pids "$n" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  done
  for n in "${made[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkns() {
  ip netns add "$1"
  made+=("$1")
  ip -n "$1" link set lo up
}
mkns "$tag-wan" 2>/dev/null || skip "cannot create a network namespace (ip netns add failed)"
wan="$tag-wan"
ip -n "$wan" link add br0 type bridge
ip -n "$wan" link set br0 up

# plug NS NAME ADDR: a veth from the wan bridge (port NAME) to NS's wan0, with ADDR/24.
plug() {
  ip -n "$wan" link add "$2" type veth peer name wan0 netns "$1"
  ip -n "$wan" link set "$2" master br0 up
  ip -n "$1" addr add "$3/24" dev wan0
  ip -n "$1" link set wan0 up
}

user_ns="$tag-user"
mkns "$user_ns"
plug "$user_ns" u0 198.18.0.1

for k in $(seq 1 "$SITES"); do
  nat="$tag-nat$k"
  mkns "$nat"
  plug "$nat" "n$k" "198.18.0.$((10 + k))"
  ip -n "$nat" link add lan0 type bridge
  ip -n "$nat" addr add "10.$k.0.1/24" dev lan0
  ip -n "$nat" link set lan0 up
  ip netns exec "$nat" sysctl -qw net.ipv4.ip_forward=1
  ip netns exec "$nat" nft -f - <<'EOF'
table ip nat {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "wan0" masquerade
  }
}
table ip filter {
  chain forward {
    type filter hook forward priority filter; policy drop;
    ct state established,related accept
    iifname "lan0" oifname "wan0" accept
    iifname "lan0" oifname "lan0" accept
  }
}
EOF
done

for i in $(seq 0 $((OWNERS - 1))); do
  k=$(( i % SITES + 1 ))
  own="$tag-o$i"
  mkns "$own"
  ip -n "$tag-nat$k" link add "o$i" type veth peer name eth0 netns "$own"
  ip -n "$tag-nat$k" link set "o$i" master lan0 up
  ip -n "$own" addr add "10.$k.0.$((10 + i))/24" dev eth0
  ip -n "$own" link set eth0 up
  ip -n "$own" route add default via "10.$k.0.1"
done
echo "nat: $OWNERS owners behind $SITES NATs (10.K.0.0/24 masqueraded to 198.18.0.1K), data user on 198.18.0.1"

# run.sh's hooks: where each process runs, and what to check once the session succeeded.
cat >"$tmp/wrap" <<EOF
#!/usr/bin/env bash
role=\$1; shift
case \$role in
  user) exec ip netns exec "$user_ns" "\$@" ;;
  owner-*) exec ip netns exec "$tag-o\${role#owner-}" "\$@" ;;
esac
echo "nat wrap: unknown role \$role" >&2; exit 2
EOF

# metrics NS: the node's /metrics, read inside its namespace (bash's /dev/tcp: no curl needed).
cat >"$tmp/metrics" <<'EOF'
#!/usr/bin/env bash
exec ip netns exec "$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9100 && printf "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 && cat <&3'
EOF

cat >"$tmp/done" <<EOF
#!/usr/bin/env bash
# Runs in run.sh after the data user saved the model, while the owners still run (--stay).
set -uo pipefail
work=\$1
fail=0
[[ -s \$work/model.json ]] || { echo "nat: no model file" >&2; fail=1; }
val() { awk -v k="\$1" 'index(\$0, k) == 1 { s += \$NF } END { printf "%d", s }' <<<"\$2"; }
printf 'nat: %-5s %-4s %-14s %6s %7s %11s %11s %6s  %s\n' owner site address direct relayed "punch ok" "punch fail" slot "model"
tot_d=0; tot_r=0; tot_hp=0
for i in \$(seq 0 $((OWNERS - 1))); do
  f=\$(printf '%03d' "\$i")
  got=yes
  # An owner logs "session ended: complete: ..." when the user's Final (the model) reached it.
  grep -q "session ended: complete" "\$work/logs/owner-\$f.log" || { got=NO; fail=1; }
  m=\$("$tmp/metrics" "$tag-o\$i" 2>/dev/null) || m=""
  d=\$(val 'ppboost_connections_opened_total{direction="outbound",kind="direct"}' "\$m")
  d=\$(( d + \$(val 'ppboost_connections_opened_total{direction="inbound",kind="direct"}' "\$m") ))
  r=\$(val 'ppboost_connections_opened_total{direction="outbound",kind="relayed"}' "\$m")
  r=\$(( r + \$(val 'ppboost_connections_opened_total{direction="inbound",kind="relayed"}' "\$m") ))
  ok=\$(val 'ppboost_holepunch_total{result="success"}' "\$m")
  bad=\$(val 'ppboost_holepunch_total{result="failure"}' "\$m")
  slots=no; grep -q "relay slot reserved" "\$work/logs/owner-\$f.log" && slots=yes
  printf 'nat: %-5s %-4s %-14s %6s %7s %11s %11s %6s  %s\n' "\$i" "\$(( i % $SITES + 1 ))" "10.\$(( i % $SITES + 1 )).0.\$(( 10 + i ))" "\$d" "\$r" "\$ok" "\$bad" "\$slots" "\$got"
  tot_d=\$(( tot_d + d )); tot_r=\$(( tot_r + r )); tot_hp=\$(( tot_hp + ok ))
done
echo "nat: owners opened \$tot_d direct and \$tot_r relayed connections (each counted at both ends); \$tot_hp hole punches succeeded"
if (( tot_hp == 0 )); then
  echo "nat: no hole punch: libp2p punches only from addresses it considers public, and 198.18.0.0/15 is a benchmarking range"
fi
if (( tot_r == 0 )); then
  echo "nat: no owner used a relayed connection: owners behind different NATs did not reach each other through the relay" >&2
  fail=1
fi
exit \$fail
EOF
chmod +x "$tmp/wrap" "$tmp/metrics" "$tmp/done"

# PRIVACY=distributed: the round's H = OWNERS/2 selected owners (at least 3, so from at least two sites) deal
# their statistics into one Shamir sum among themselves: owner-to-owner streams across the NATs. Without noise
# (MECHANISM=none), as in .ci/run's other testnets, so that the run checks the plumbing, not luck.
ROUNDS=${ROUNDS:-1} H=${H:-$(( OWNERS / 2 ))} PRIVACY=${PRIVACY:-distributed} MECHANISM=${MECHANISM:-none} TIMEOUT=${TIMEOUT:-180} \
  USER_IP=198.18.0.1 PORT=4001 WRAP="$tmp/wrap" OWNER_LISTEN="" \
  USER_ARGS="--metrics 127.0.0.1:9100" OWNER_ARGS="--stay --metrics 127.0.0.1:9100" ON_DONE="$tmp/done" \
  bash "$root/testnet/run.sh" "$OWNERS"
