#!/usr/bin/env bash
# The installed system's kubelet. On RHCOS it runs the control plane's static pods; minisno's
# control plane is one process, minisno-apiserver, which serves the Kubernetes/OpenShift API.
exec /usr/lib/minisno/minisno-apiserver serve --config /etc/kubernetes/minisno/apiserver.json
