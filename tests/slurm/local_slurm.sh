#!/usr/bin/env bash
# A real single-machine Slurm for tests: munged, slurmctld and slurmd in a private folder.
#   local_slurm.sh start DIR [--nodes N]
#                              -> starts the daemons, waits until the node is idle, writes
#                                 DIR/env.sh (source it: SLURM_CONF and the munge socket);
#                                 with --nodes N (N > 1), N Slurm nodes sf0..sf(N-1), one slurmd
#                                 each on this machine (slurmd -N), each with all its CPUs
#   local_slurm.sh stop DIR    -> stops every daemon by the PID in its pid file
# Needs root (slurmd runs jobs as the submitting user). Exit 77 when it cannot run here.
set -euo pipefail
cmd=${1:?start|stop} dir=${2:?folder}
nodes=1
if [ "${3:-}" = --nodes ]; then nodes=${4:?--nodes N}; fi
[[ $nodes =~ ^[1-9][0-9]*$ ]] || { echo "local_slurm: --nodes '$nodes': expected a count >= 1" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

stop() {
  for f in "$dir"/slurmd*.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then echo "local_slurm: needs root; skipping" >&2; exit 77; fi
for t in munged slurmctld slurmd sinfo; do
  command -v "$t" >/dev/null || { echo "local_slurm: $t not installed; skipping" >&2; exit 77; }
done

mkdir -p "$dir"/munge-key "$dir"/munge-run "$dir"/spool "$dir"/state "$dir"/log
chmod 0700 "$dir"/munge-key
chmod 0755 "$dir"/munge-run
[ -f "$dir"/munge-key/munge.key ] || dd if=/dev/urandom of="$dir"/munge-key/munge.key bs=1024 count=1 status=none
chmod 0400 "$dir"/munge-key/munge.key
socket="$dir"/munge-run/munge.socket
munged --key-file="$dir"/munge-key/munge.key --socket="$socket" \
  --pid-file="$dir"/munged.pid --log-file="$dir"/log/munged.log --seed-file="$dir"/munge-run/seed \
  --force 2>>"$dir"/log/munged.log

# Node names: the machine itself when one, else sf0..sf(N-1) (slurmd -N NAME, distinct ports).
names() { if [ "$nodes" -eq 1 ]; then echo localhost; else seq -f 'sf%g' 0 $((nodes - 1)); fi; }
node_lines() {
  if [ "$nodes" -eq 1 ]; then
    echo "NodeName=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN"
    return
  fi
  local port=$((17600 + RANDOM % 400)) i
  for ((i = 0; i < nodes; i++)); do
    echo "NodeName=sf$i NodeHostname=localhost Port=$((port + i)) CPUs=$cpus RealMemory=$((mem / nodes)) State=UNKNOWN"
  done
}
per_node="" per_node_dir=""  # one slurmd per node: its own pid file, log and spool folder
if [ "$nodes" -gt 1 ]; then per_node=-%n per_node_dir=/%n; fi
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2/1024*0.8)}' /proc/meminfo)
cat >"$dir"/slurm.conf <<CONF
ClusterName=shardflowtest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket,cred_expire=5
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
# Backfill and the main scheduling loop every second (defaults 30 s and 60 s): a requeued or
# queued-behind job starts within seconds, not up to a minute later (slurm.requeue_resumes took
# 40 s, 23 of them idle).
SchedulerParameters=bf_interval=1,sched_interval=1
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool$per_node_dir
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd$per_node.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd$per_node.log
SlurmctldPort=$((17000 + RANDOM % 500))
SlurmdPort=$((17600 + RANDOM % 500))
JobCompType=jobcomp/none
InactiveLimit=0
KillWait=5
MinJobAge=300
$(node_lines)
PartitionName=debug Nodes=$(names | paste -sd,) Default=YES MaxTime=60 State=UP OverSubscribe=NO
CONF
cat >"$dir"/env.sh <<ENV
export SLURM_CONF=$dir/slurm.conf
ENV
export SLURM_CONF="$dir"/slurm.conf
slurmctld -f "$dir"/slurm.conf -i 2>>"$dir"/log/slurmctld.log || { stop; exit 1; }
for name in $(names); do
  [ "$nodes" -eq 1 ] || mkdir -p "$dir"/spool/"$name"
  slurmd -f "$dir"/slurm.conf -N "$name" 2>>"$dir"/log/slurmd.log || { stop; exit 1; }
done
for _ in $(seq 200); do
  state=$(sinfo -h -o %T 2>/dev/null | paste -sd' ' || true)
  # One line per node state: up when every node is idle.
  case "$state" in idle) echo "local_slurm: up ($dir, $nodes node(s))"; exit 0 ;; esac
  sleep 0.1
done
echo "local_slurm: node did not become idle (state '$state'); logs in $dir/log" >&2
tail -5 "$dir"/log/*.log >&2
stop
exit 1
