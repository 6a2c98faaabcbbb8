# A two-node Slurm cluster on this machine, for the executor: slurm tests
# (docs/executors.md, "Testing"). Source it after lib.sh:
#
#	slurm_skip_reason          prints why a cluster cannot run here (empty: it can)
#	slurm_up DIR HIDE...       munged, slurmctld, and slurmd node1/node2, each in
#	                           its own network namespace (veth 10.215.N.1 host <->
#	                           10.215.N.2 node) and mount namespace where every
#	                           HIDE path is covered by an empty tmpfs: the nodes
#	                           reach the submitting repository and the hub only
#	                           over the network
#	slurm_down                 everything stopped and removed (call it from a trap)
#
# After slurm_up: SLURM_CONF (the config), SLURM_DIR, SLURM_HOST (10.215.1.1,
# the host's address nodes dial), SLURM_STATE and SLURM_SPOOL (what the canary
# check searches). Only addresses on the links made here are used.

SLURM_NS1=bsl-node1
SLURM_NS2=bsl-node2
SLURM_HOST=10.215.1.1

slurm_skip_reason()
{
	if [ "$(id -u)" -ne 0 ]; then
		echo "needs root (network namespaces, slurmd)"
		return
	fi
	for p in slurmctld slurmd munged sbatch squeue scancel ip unshare git; do
		if ! command -v "$p" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$p" ]; then
			echo "$p is missing (scripts/install-deps.sh --test installs slurm-wlm and munge)"
			return
		fi
	done
	if ! ip netns add bsl-probe 2>/dev/null; then
		echo "the host forbids network namespaces"
		return
	fi
	ip netns del bsl-probe 2>/dev/null
	if ! unshare --mount --uts true 2>/dev/null; then
		echo "the host forbids mount/UTS namespaces"
		return
	fi
}

_slurm_pids=

slurm_down()
{
	for p in $_slurm_pids; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $_slurm_pids; do
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -KILL "$p" 2>/dev/null
	done
	_slurm_pids=
	for n in 1 2; do
		# whatever a job left in the node's namespace
		if ip netns pids "bsl-node$n" >/dev/null 2>&1; then
			for p in $(ip netns pids "bsl-node$n" 2>/dev/null); do
				kill -KILL "$p" 2>/dev/null
			done
		fi
		ip link del "vbsl$n" 2>/dev/null
		ip netns del "bsl-node$n" 2>/dev/null
	done
	return 0
}

# _slurm_bg LOG CMD...: start CMD in the background, remember its pid
_slurm_bg()
{
	_log=$1
	shift
	"$@" >"$_log" 2>&1 </dev/null &
	_slurm_pids="$_slurm_pids $!"
}

slurm_up()
{
	SLURM_DIR=$1
	shift
	SLURM_STATE=$SLURM_DIR/state
	SLURM_SPOOL=$SLURM_DIR/spool
	mkdir -p "$SLURM_DIR/munge" "$SLURM_STATE" "$SLURM_SPOOL/slurmd.node1" \
		"$SLURM_SPOOL/slurmd.node2" || return 1
	chmod 755 "$SLURM_DIR/munge"
	head -c 1024 /dev/urandom >"$SLURM_DIR/munge/munge.key"
	chmod 400 "$SLURM_DIR/munge/munge.key"
	_slurm_bg "$SLURM_DIR/munged.out" /usr/sbin/munged -F -f \
		--socket="$SLURM_DIR/munge/munge.socket" --key-file="$SLURM_DIR/munge/munge.key" \
		--pid-file="$SLURM_DIR/munge/munged.pid" --log-file="$SLURM_DIR/munge/munged.log" \
		--seed-file="$SLURM_DIR/munge/munge.seed"
	for n in 1 2; do
		ip netns del "bsl-node$n" 2>/dev/null
		ip link del "vbsl$n" 2>/dev/null
		ip netns add "bsl-node$n" || return 1
		ip link add "vbsl$n" type veth peer name "vbsl${n}p" || return 1
		ip link set "vbsl${n}p" netns "bsl-node$n" || return 1
		ip addr add "10.215.$n.1/30" dev "vbsl$n" || return 1
		ip link set "vbsl$n" up || return 1
		ip netns exec "bsl-node$n" ip addr add "10.215.$n.2/30" dev "vbsl${n}p" || return 1
		ip netns exec "bsl-node$n" ip link set "vbsl${n}p" up || return 1
		ip netns exec "bsl-node$n" ip link set lo up || return 1
		ip netns exec "bsl-node$n" ip route add default via "10.215.$n.1" || return 1
	done
	SLURM_CONF=$SLURM_DIR/slurm.conf
	cat >"$SLURM_CONF" <<EOF
ClusterName=bsltest
SlurmctldHost=$(hostname -s)($SLURM_HOST)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/munge/munge.socket
CredType=cred/munge
SlurmctldPort=6917
SlurmdPort=6918
StateSaveLocation=$SLURM_STATE
SlurmdSpoolDir=$SLURM_SPOOL/slurmd.%n
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.%n.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=30
KillWait=2
NodeName=node1 NodeAddr=10.215.1.2 CPUs=2 State=UNKNOWN
NodeName=node2 NodeAddr=10.215.2.2 CPUs=2 State=UNKNOWN
PartitionName=bsl Nodes=node1,node2 Default=YES MaxTime=INFINITE State=UP
EOF
	export SLURM_CONF
	_slurm_bg "$SLURM_DIR/slurmctld.out" /usr/sbin/slurmctld -D -i -f "$SLURM_CONF"
	_hide=
	for h in "$@"; do
		_hide="$_hide mount -t tmpfs tmpfs '$h' &&"
	done
	for n in 1 2; do
		# nsenter, not ip netns exec: that one mounts a sysfs of its own,
		# without the cgroup file system slurmd wants
		_slurm_bg "$SLURM_DIR/slurmd.node$n.out" nsenter --net="/run/netns/bsl-node$n" \
			unshare --uts --mount --propagation private sh -c \
			"hostname node$n && $_hide exec /usr/sbin/slurmd -D -N node$n -f '$SLURM_CONF'"
	done
	# both nodes idle
	i=0
	while [ $i -lt 150 ]; do
		idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle')
		[ "$idle" = 2 ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	sinfo -N >&2 2>&1
	return 1
}

# slurm_test_setup [bernstein]: the whole test is skipped (TAP "1..0 #
# SKIP") where no cluster can run; else the cluster is up (the hub's and the
# repository's directories hidden from the nodes), and $W is a repository
# with the shell agent and a bernstein.yaml for executor: slurm (adapter
# mock, sandbox none, parallel 4). The nodes reach the hub $HUBS/hub.git
# over git://$SLURM_HOST:$GD_PORT: a git daemon the test starts, or with
# "bernstein" the one bernstein starts (slurm.git_daemon); with "ssh" over
# ssh://root@$SLURM_HOST:$SSH_PORT$HUBS/hub.git, an sshd of the test's own
# (slurm_sshd_up; no git daemon at all). Everything is stopped at exit.
slurm_test_setup()
{
	_why=$(slurm_skip_reason)
	if [ -n "$_why" ]; then
		echo "1..0 # SKIP $_why"
		exit 0
	fi
	TEST_CMD_TIMEOUT=120
	W=$T/work
	HUBS=$T/hubs
	GD_PORT=9518
	GD_PID=
	BGPID=
	mkdir -p "$HUBS"
	trap _slurm_test_cleanup EXIT
	if ! slurm_up "$T/cluster" "$W" "$HUBS"; then
		not_ok "the cluster came up"
		_diag_file slurmctld "$T/cluster/slurmctld.log"
		_diag_file slurmd "$T/cluster/slurmd.node1.log"
		test_done
	fi
	ok "the cluster came up: two idle nodes"
	if [ "${1:-}" = bernstein ]; then
		_hubcfg="git_daemon: $SLURM_HOST:$GD_PORT"
	elif [ "${1:-}" = ssh ]; then
		if ! slurm_sshd_up "$T/ssh"; then
			not_ok "the test's sshd listens on $SLURM_HOST:$SSH_PORT"
			_diag_file sshd "$T/ssh/sshd.log"
			test_done
		fi
		_hubcfg="hub_url: ssh://root@$SLURM_HOST:$SSH_PORT$HUBS/hub.git
  ssh_command: $SSH_CMD"
	else
		git daemon --export-all --enable=receive-pack --base-path="$HUBS" --reuseaddr \
			--listen="$SLURM_HOST" --port=$GD_PORT "$HUBS" >"$T/gitd.log" 2>&1 &
		GD_PID=$!
		_hubcfg="hub_url: git://$SLURM_HOST:$GD_PORT/hub.git"
	fi
	git -C "$W" init -q -b main . >/dev/null 2>&1
	printf '.bernstein/\n' >"$W/.gitignore"
	echo base >"$W/README"
	shell_agent "$W"
	cat >"$W/bernstein.yaml" <<EOF
adapter: mock
parallel: 4
sandbox: none
kill_grace: 1
executor: slurm
slurm:
  hub: $HUBS/hub.git
  $_hubcfg
  listen: $SLURM_HOST
  start_timeout: 60
EOF
}

# slurm_sshd_up DIR: an sshd of the test's own (Debian's openssh-server,
# scripts/install-deps.sh --test) on $SLURM_HOST:$SSH_PORT with a host key
# and one authorized client key made here in DIR, its own configuration
# (-f: nothing of /etc/ssh or root's ~/.ssh is read or changed), logging to
# DIR/sshd.log. $SSH_CMD: the client command for slurm.ssh_command (that
# key only, DIR/known_hosts only, strict host key checking, no prompt).
# Stopped by the cleanup. /run/sshd (sshd's privilege separation
# directory) is made when absent and removed again.
SSH_PORT=2265
SSHD_PID=
_slurm_rundir=
slurm_sshd_up()
{
	_d=$1
	_sshd=$(command -v sshd 2>/dev/null || echo /usr/sbin/sshd)
	[ -x "$_sshd" ] || return 1
	mkdir -p "$_d" && chmod 700 "$_d" || return 1
	ssh-keygen -q -t ed25519 -N '' -C bsl-host -f "$_d/host_key" || return 1
	ssh-keygen -q -t ed25519 -N '' -C bsl-client -f "$_d/client_key" || return 1
	cp "$_d/client_key.pub" "$_d/authorized_keys"
	printf '[%s]:%s %s\n' "$SLURM_HOST" "$SSH_PORT" "$(cut -d' ' -f1,2 "$_d/host_key.pub")" \
		>"$_d/known_hosts"
	{
		echo "ListenAddress $SLURM_HOST:$SSH_PORT"
		echo "HostKey $_d/host_key"
		echo "PidFile $_d/sshd.pid"
		echo "AuthorizedKeysFile $_d/authorized_keys"
		echo "AuthenticationMethods publickey"
		echo "PasswordAuthentication no"
		echo "KbdInteractiveAuthentication no"
		echo "PermitRootLogin prohibit-password"
		echo "UsePAM no"
		echo "StrictModes no"
		echo "X11Forwarding no"
		echo "AllowTcpForwarding no"
		echo "LogLevel INFO"
	} >"$_d/sshd_config"
	if [ ! -d /run/sshd ]; then
		mkdir -m 755 /run/sshd && _slurm_rundir=/run/sshd
	fi
	"$_sshd" -D -e -f "$_d/sshd_config" >"$_d/sshd.log" 2>&1 </dev/null &
	SSHD_PID=$!
	SSH_CMD="ssh -F /dev/null -i $_d/client_key -o IdentitiesOnly=yes -o BatchMode=yes -o UserKnownHostsFile=$_d/known_hosts -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes"
	i=0
	while [ $i -lt 50 ]; do
		grep -q 'Server listening' "$_d/sshd.log" 2>/dev/null && return 0
		kill -0 "$SSHD_PID" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

_slurm_test_cleanup()
{
	[ -n "$BGPID" ] && kill -9 "$BGPID" 2>/dev/null
	[ -n "$GD_PID" ] && kill "$GD_PID" 2>/dev/null
	if [ -n "$SSHD_PID" ]; then
		kill "$SSHD_PID" 2>/dev/null
		wait "$SSHD_PID" 2>/dev/null
	fi
	[ -n "$_slurm_rundir" ] && rmdir "$_slurm_rundir" 2>/dev/null
	slurm_down
	_lib_cleanup
}

# slurm_bg ARGS...: bernstein ARGS in $W in the background (BGPID), its
# output in $T/bg.out and $T/bg.err, with the Slurm client's configuration
slurm_bg()
{
	(cd "$W" && exec env -i PATH=/usr/bin:/bin HOME="$T/home" LC_ALL=C.UTF-8 TZ=UTC \
		SLURM_CONF="$SLURM_CONF" "$BERNSTEIN" "$@") </dev/null >"$T/bg.out" 2>"$T/bg.err" &
	BGPID=$!
}

# slurm_jobs NAME: how many jobs Slurm lists (running or recently ended)
# whose name starts with NAME
slurm_jobs()
{
	scontrol -o show job 2>/dev/null | grep -c "JobName=$1"
}
