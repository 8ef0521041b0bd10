#!/usr/bin/env bash
# Makes a cluster CA and, for each node, a key and certificate signed by it, for the mutual
# TLS of the peer links (tls-*-file) and the HTTPS operations API (ops-tls-*-file).
#
#   scripts/gen-certs.sh [--out DIR] [--days N] NAME[=HOST[,HOST...]] ...
#
#   scripts/gen-certs.sh n1=localhost,127.0.0.1 n2=localhost,127.0.0.1   # a local test
#   scripts/gen-certs.sh --out ./certs cairn1=db1.example.net,10.0.0.1   # then copy each
#                                          # node its pair and ca.pem (never ca.key)
#
# In DIR (default ./certs): ca.pem and ca.key (made once, then reused so that nodes can be
# added later; valid 10 years, or N days if longer), and NAME.pem / NAME.key for each NAME:
# EC P-256, CN=NAME, subjectAltName DNS:NAME plus each HOST (IP: for an address, DNS:
# otherwise), extendedKeyUsage serverAuth and clientAuth, valid N days (default 825).
# Keys are mode 0600. An existing NAME.pem or NAME.key is never overwritten.
# Exit status: 0 done, 1 failure, 2 usage error.
set -euo pipefail

usage() {
  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
die_usage() {
  echo "gen-certs: $*" >&2
  echo "usage: scripts/gen-certs.sh [--out DIR] [--days N] NAME[=HOST[,HOST...]] ..." >&2
  exit 2
}
die() {
  echo "gen-certs: $*" >&2
  exit 1
}

out=./certs
days=825
specs=()
while (($#)); do
  case "$1" in
    --out) (($# >= 2)) || die_usage "--out needs a directory"; out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --days) (($# >= 2)) || die_usage "--days needs a number"; days=$2; shift 2 ;;
    --days=*) days=${1#--days=}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) die_usage "unknown option '$1'" ;;
    *) specs+=("$1"); shift ;;
  esac
done
((${#specs[@]})) || die_usage "no node NAME given"
[[ "$days" =~ ^[1-9][0-9]{0,5}$ ]] || die_usage "--days '$days' is not a positive number of days"

# Check every argument before making anything.
names=()
sans=()
for spec in "${specs[@]}"; do
  name=${spec%%=*}
  hosts=""
  [[ "$spec" == *=* ]] && hosts=${spec#*=}
  [[ "$name" =~ ^[A-Za-z0-9_-]{1,64}$ ]] ||
    die_usage "bad node name '$name': a name is 1-64 of A-Z a-z 0-9 _ -"
  for n in "${names[@]}"; do
    [ "$n" != "$name" ] || die_usage "node '$name' given twice"
  done
  san="DNS:$name"
  if [ -n "$hosts" ]; then
    IFS=, read -r -a host_list <<<"$hosts"
    for h in "${host_list[@]}"; do
      if [[ "$h" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; then
        entry="IP:$h"
      elif [[ "$h" == *:* && "$h" =~ ^[0-9A-Fa-f:.]+$ ]]; then
        entry="IP:$h"
      elif [[ "$h" =~ ^[A-Za-z0-9*_]([A-Za-z0-9._-]*[A-Za-z0-9])?$ ]]; then
        entry="DNS:$h"
      else
        die_usage "bad host '$h' for node '$name': give a DNS name or an IP address"
      fi
      [[ ",$san," == *",$entry,"* ]] || san="$san,$entry"
    done
  fi
  names+=("$name")
  sans+=("$san")
done

if ! command -v openssl >/dev/null; then
  # shellcheck source=scripts/lib/packages.sh
  . "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"
  install_missing gen-certs openssl
fi

mkdir -p "$out"
umask 077
for name in "${names[@]}"; do
  for f in "$out/$name.pem" "$out/$name.key"; do
    [ ! -e "$f" ] || die "$f exists; remove $out/$name.pem and $out/$name.key to make them again"
  done
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -e "$out/ca.pem" ] || [ -e "$out/ca.key" ]; then
  if [ ! -f "$out/ca.pem" ] || [ ! -f "$out/ca.key" ]; then
    die "$out has only one of ca.pem and ca.key; restore the other or remove both"
  fi
  echo "gen-certs: reusing the CA in $out/ca.pem"
else
  ca_days=$((days > 3650 ? days : 3650))
  cat >"$tmp/ca.cnf" <<CNF
[req]
distinguished_name = dn
prompt = no
x509_extensions = ca
[dn]
CN = cairn cluster CA
[ca]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
CNF
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$out/ca.key" 2>/dev/null
  openssl req -x509 -new -config "$tmp/ca.cnf" -key "$out/ca.key" -sha256 -days "$ca_days" \
    -out "$out/ca.pem"
  chmod 0600 "$out/ca.key"
  chmod 0644 "$out/ca.pem"
  echo "gen-certs: made the CA $out/ca.pem (key $out/ca.key, $ca_days days)"
fi

for i in "${!names[@]}"; do
  name=${names[$i]}
  cat >"$tmp/node.cnf" <<CNF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = $name
[node]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = ${sans[$i]}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
CNF
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/$name.key" 2>/dev/null
  openssl req -new -config "$tmp/node.cnf" -key "$tmp/$name.key" -out "$tmp/$name.csr"
  openssl x509 -req -in "$tmp/$name.csr" -CA "$out/ca.pem" -CAkey "$out/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -sha256 -days "$days" \
    -extfile "$tmp/node.cnf" -extensions node -out "$tmp/$name.pem" 2>/dev/null
  chmod 0600 "$tmp/$name.key"
  chmod 0644 "$tmp/$name.pem"
  mv "$tmp/$name.key" "$out/$name.key"
  mv "$tmp/$name.pem" "$out/$name.pem"
  echo "gen-certs: made $out/$name.pem and $out/$name.key (${sans[$i]}; $days days)"
done

first=${names[0]}
cat <<MSG

Copy ca.pem, $first.pem and $first.key to /etc/cairn/tls/ on node $first (the key readable by
the cairn user: install -o root -g cairn -m 0640 $first.key /etc/cairn/tls/), keep ca.key
off the nodes, and add to /etc/cairn/cairnd.yaml:

  tls-ca-file: /etc/cairn/tls/ca.pem
  tls-cert-file: /etc/cairn/tls/$first.pem
  tls-key-file: /etc/cairn/tls/$first.key
  ops-tls-cert-file: /etc/cairn/tls/$first.pem   # HTTPS operations API
  ops-tls-key-file: /etc/cairn/tls/$first.key
MSG
