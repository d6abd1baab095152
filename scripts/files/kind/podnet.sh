#!/bin/sh
# The node's pod network, in place of kindnetd (whose image cannot be had here): wait until the
# control plane has given this node a podCIDR, then write a bridge + host-local CNI config for it.
# The kubelet reports NetworkNotReady until the file exists, so no pod starts on a wrong subnet.
# Routes to other nodes' podCIDRs are set from outside (tests/testbed: a node may read only its own Node).
set -eu
conf=/etc/cni/net.d/10-po-bridge.conflist
node=$(hostname)
while :; do
  cidr=$(kubectl --kubeconfig /etc/kubernetes/kubelet.conf get node "$node" -o 'jsonpath={.spec.podCIDR}' 2>/dev/null || true)
  [ -n "$cidr" ] && break
  sleep 1
done
cat >"$conf.new" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "po-bridge",
  "plugins": [
    {
      "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
mv "$conf.new" "$conf"
echo "pod network: bridge cni0, subnet $cidr"
