#!/usr/bin/env bash
# The live system's kubelet. On RHCOS it runs the bootstrap control plane as static pods; in
# minisno those steps are simulated by bootkube.sh, so the kubelet only reports and waits.
echo "minisno kubelet: bootstrap control plane simulated by bootkube.sh (a test fixture)"
exec sleep infinity
