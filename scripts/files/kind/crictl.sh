#!/bin/sh
# A stand-in for crictl (no build of it is served by the Go module proxy, no bookworm package
# has it), enough for what kind asks of a node: `crictl images` (kind export logs) lists the
# images through ctr; `crictl inspecti` answers "not found", so kind load always loads.
case $1 in
  images) exec ctr -n k8s.io images ls ;;
  inspecti) echo "crictl stand-in: image status unknown" >&2; exit 1 ;;
  *) echo "crictl stand-in (platform-operators test bed): '$1' is not supported" >&2; exit 1 ;;
esac
