#!/bin/sh
# Entrypoint of the test bed's kube-proxy image: pick the iptables backend (legacy or nf_tables)
# that already holds the node's rules, as the upstream image's iptables-wrapper does, then run kube-proxy.
count() { ("$1-save" 2>/dev/null; "$2-save" 2>/dev/null) | grep -c '^-' || true; }
legacy=$(count iptables-legacy ip6tables-legacy)
nft=$(count iptables-nft ip6tables-nft)
mode=nft
[ "$legacy" -gt "$nft" ] && mode=legacy
update-alternatives --set iptables "/usr/sbin/iptables-$mode" >/dev/null
update-alternatives --set ip6tables "/usr/sbin/ip6tables-$mode" >/dev/null
exec /usr/local/bin/kube-proxy.bin "$@"
