#!/usr/bin/env bash
# A throwaway single-node Ceph 16.2 from Debian (one monitor, one memstore OSD, no cephx)
# with its RADOS Gateway serving S3 on 127.0.0.1: the second real S3 service of the tests
# (Tests/SeaweedFSFixture/CephServer.swift starts and stops it). Everything lives in DIR.
#   ceph-s3.sh install      apt-get install the Debian packages
#   ceph-s3.sh start DIR    start everything under DIR; prints S3_ENDPOINT/S3_ACCESS_KEY/S3_SECRET_KEY
#   ceph-s3.sh stop DIR     kill the daemons (pid files), wait for them, remove DIR
set -euo pipefail
ACCESS_KEY=${CEPH_S3_ACCESS_KEY:-testaccesskey}
SECRET_KEY=${CEPH_S3_SECRET_KEY:-testsecretkey}

answers() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2>/dev/null; }
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
alive() { [ -e /proc/$1 ] && ! grep -q '^State:.*Z' /proc/$1/status 2>/dev/null; }  # zombie = dead

case "${1:-}" in
install)
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends ceph-common ceph-mon ceph-osd radosgw
  ;;
start)
  [ -n "${2:-}" ] || { echo "usage: $0 start DIR" >&2; exit 2; }
  D=$(mkdir -p "$2" && cd "$2" && pwd)
  mkdir -p "$D"/{mon,osd,rgw,log,run}
  MON_PORT=$(free_port); RGW_PORT=$(free_port)
  FSID=$(cat /proc/sys/kernel/random/uuid)
  CONF=$D/ceph.conf
  cat >"$CONF" <<CONF
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MON_PORT
public addr = 127.0.0.1
# no cephx; with auth none the msgr2 mon-client must use crc (else radosgw: get_initial_auth_request -13, hangs)
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
# single OSD: 1 replica; few PGs (rgw creates ~6 pools, default 32 PGs each would exceed mon_max_pg_per_osd=250)
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
mon data avail warn = 1
# speed: commit mon map changes (pool creation) immediately instead of every 1 s
paxos propose interval = 0.01
paxos min wait = 0.01
# keep all state and output in DIR (never /etc/ceph, /var/lib/ceph, /var/run/ceph, /var/log/ceph)
keyring = $D/keyring
run dir = $D/run
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
log file = $D/log/\$name.log
mon cluster log file = $D/log/cluster.\$channel.log
mon data = $D/mon
osd data = $D/osd
[osd]
osd objectstore = memstore
memstore device bytes = 1073741824
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw data = $D/rgw
CONF
  C=(-c "$CONF")
  # monitor "a": monmap, mkfs, start (daemonizes, writes pid file)
  monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$D/monmap" >/dev/null
  ceph-mon "${C[@]}" -i a --mkfs --monmap "$D/monmap" 2>>"$D/log/stderr"
  ceph-mon "${C[@]}" -i a 2>>"$D/log/stderr"
  # OSD: allocate id, mkfs on memstore, start
  OSD_UUID=$(cat /proc/sys/kernel/random/uuid)
  OSD_ID=$(ceph "${C[@]}" osd new "$OSD_UUID")
  ceph-osd "${C[@]}" -i "$OSD_ID" --mkfs --osd-uuid "$OSD_UUID" 2>>"$D/log/stderr"
  ceph-osd "${C[@]}" -i "$OSD_ID" 2>>"$D/log/stderr"
  # radosgw (creates its pools on demand) and the S3 user
  radosgw "${C[@]}" -n client.rgw 2>>"$D/log/stderr"
  radosgw-admin "${C[@]}" user create --uid=test --display-name=test \
      --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null
  for _ in $(seq 300); do  # up to 60 s
    answers "http://127.0.0.1:$RGW_PORT/" && break; sleep 0.2
  done
  answers "http://127.0.0.1:$RGW_PORT/" || { echo "radosgw not answering, see $D/log" >&2; exit 1; }
  echo "S3_ENDPOINT=http://127.0.0.1:$RGW_PORT"
  echo "S3_ACCESS_KEY=$ACCESS_KEY"
  echo "S3_SECRET_KEY=$SECRET_KEY"
  ;;
stop)
  [ -n "${2:-}" ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
  D=$2
  pids=$(cat "$D"/run/*.pid 2>/dev/null || true)
  # memstore data is throwaway: SIGKILL (SIGTERM costs ~2 s per daemon, 7 s if the mon goes first)
  for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
  for p in $pids; do for _ in $(seq 100); do alive "$p" || break; sleep 0.1; done; done
  rm -rf "$D"
  ;;
*) echo "usage: $0 install | start DIR | stop DIR" >&2; exit 2 ;;
esac
