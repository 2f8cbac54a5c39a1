#!/usr/bin/env bash
# Two "nodes" on one machine for multi-node OpenMPI tests: two network namespaces joined by a
# veth pair, each with its own address on a private subnet and its own hostname (UTS namespace),
# so OpenMPI sees two hosts and keeps their shared-memory segments apart.
#   netns_cluster.sh up DIR             create the namespaces; DIR/cluster.env records them
#   netns_cluster.sh mpirun DIR ARGS..  run `mpirun ARGS` from node 0, with both nodes as hosts
#                                       (--host ADDR0:SLOTS,ADDR1:SLOTS; SLOTS from
#                                       NETNS_SLOTS, default 2), TCP only on the private subnet,
#                                       an rsh agent that starts orted inside node 1
#   netns_cluster.sh down DIR           kill what runs in the namespaces, delete them
# Subnet: NETNS_SUBNET (default 10.213.7), node i gets .(i+1)/24 — only inside the namespaces
# created here. Needs root and `ip netns`; exit 77 when either is missing.
set -euo pipefail
cmd=${1:?up|down|mpirun} dir=${2:?folder}
shift 2
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
env_file=$dir/cluster.env

down() {
  [ -f "$env_file" ] || return 0
  # shellcheck disable=SC1090
  . "$env_file"
  for ns in "$NS0" "$NS1"; do
    ip netns list 2>/dev/null | grep -qw "$ns" || continue
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    sleep 0.2
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || echo "netns_cluster: could not delete namespace $ns" >&2
  done
  rm -f "$env_file"
}

case "$cmd" in
  up)
    if [ "$(id -u)" -ne 0 ]; then echo "netns_cluster: needs root; skipping" >&2; exit 77; fi
    command -v ip >/dev/null && command -v unshare >/dev/null ||
      { echo "netns_cluster: ip or unshare missing; skipping" >&2; exit 77; }
    subnet=${NETNS_SUBNET:-10.213.7}
    tag=$$
    ns0=sfnode0-$tag ns1=sfnode1-$tag
    ip netns add "$ns0" 2>"$dir/netns.err" ||
      { echo "netns_cluster: ip netns add failed ($(cat "$dir/netns.err")); skipping" >&2; exit 77; }
    printf 'NS0=%s\nNS1=%s\nADDR0=%s\nADDR1=%s\nSUBNET=%s\n' "$ns0" "$ns1" "$subnet.1" \
      "$subnet.2" "$subnet.0/24" >"$env_file"
    trap 'down' ERR
    ip netns add "$ns1"
    ip -n "$ns0" link add veth0 type veth peer name veth1 netns "$ns1"
    ip -n "$ns0" addr add "$subnet.1/24" dev veth0
    ip -n "$ns1" addr add "$subnet.2/24" dev veth1
    for ns in "$ns0" "$ns1"; do
      ip -n "$ns" link set lo up
    done
    ip -n "$ns0" link set veth0 up
    ip -n "$ns1" link set veth1 up
    # Reachability: a TCP connection from node 0 to a listener in node 1 (no ping needed).
    ip netns exec "$ns1" timeout 10 python3 -c 'import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("'"$subnet.2"'", 17999)); s.listen(1); s.accept()' &
    listener=$!
    ok=0
    for _ in $(seq 50); do
      if ip netns exec "$ns0" python3 -c 'import socket; socket.create_connection(("'"$subnet.2"'", 17999), 1)' 2>/dev/null; then ok=1; break; fi
      sleep 0.1
    done
    wait "$listener" 2>/dev/null || true
    [ $ok -eq 1 ] || { echo "netns_cluster: $ns0 cannot reach $subnet.2:17999 over the veth pair" >&2; down; exit 1; }
    # The rsh agent OpenMPI calls as `agent HOST COMMAND...`: runs COMMAND in HOST's namespace
    # under HOST's hostname.
    cat >"$dir/agent.sh" <<AGENT
#!/bin/sh
host=\$1; shift
case "\$host" in
  $subnet.1) ns=$ns0 name=sfnode0 ;;
  $subnet.2) ns=$ns1 name=sfnode1 ;;
  *) echo "netns agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name; \$*"
AGENT
    chmod +x "$dir/agent.sh"
    echo "netns_cluster: up ($ns0 $subnet.1, $ns1 $subnet.2)"
    ;;
  down) down ;;
  mpirun)
    # shellcheck disable=SC1090
    . "$env_file"
    slots=${NETNS_SLOTS:-2}
    exec ip netns exec "$NS0" unshare --uts sh -c 'hostname sfnode0; exec "$@"' sh \
      mpirun --allow-run-as-root --host "$ADDR0:$slots,$ADDR1:$slots" \
      --mca plm_rsh_agent "$dir/agent.sh" --bind-to none \
      --mca btl tcp,vader,self --mca btl_tcp_if_include "$SUBNET" \
      --mca oob_tcp_if_include "$SUBNET" "$@"
    ;;
  *) echo "usage: $0 up|down|mpirun DIR [ARGS]" >&2; exit 2 ;;
esac
