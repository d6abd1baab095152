#!/bin/sh
# Pod traffic stays on this machine: forwarded packets may go to the node's own Docker network
# (other nodes, the test bed's registry on its gateway) and to pod subnets, and are refused
# anywhere else. Without this, a pod that dials a Service VIP before kube-proxy has programmed it
# (CoreDNS does at start) follows the default route off the machine.
set -eu
pods=${POD_SUBNET:-10.244.0.0/16}
for net in $(ip -o -4 route show dev eth0 scope link | awk '{print $1}'); do
  iptables -C FORWARD -o eth0 ! -d "$net" -j REJECT --reject-with icmp-net-unreachable 2>/dev/null ||
    iptables -I FORWARD 1 -o eth0 ! -d "$net" -j REJECT --reject-with icmp-net-unreachable
done
iptables -C FORWARD -o eth0 -d "$pods" -j ACCEPT 2>/dev/null || iptables -I FORWARD 1 -o eth0 -d "$pods" -j ACCEPT
ip6tables -C FORWARD -o eth0 -j REJECT 2>/dev/null || ip6tables -I FORWARD 1 -o eth0 -j REJECT
echo "pod egress limited to the node network and $pods"
