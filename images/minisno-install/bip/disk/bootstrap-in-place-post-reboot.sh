#!/usr/bin/env bash
# The installed system's one-shot bootstrap finish (bootkube.service after the reboot), as
# openshift/installer's bootstrap-in-place-post-reboot.sh does it (docs/bip-contract.md §6): its
# wait loops in its order, each printing the real script's lines and going round until its
# condition holds on minisno's API server, then removal of the bootstrap files and of this unit.
# Like the real one it fails only where systemctl does: a hang is a loop that goes on.
set -euoE pipefail

SECRETS=/etc/kubernetes/bootstrap-secrets
POLL={{POLL_SECONDS}}
# What this release's script does (docs/bip-contract.md §7, release history): the bootstrap
# configmap from 4.12, the removal of /opt/openshift from 4.13.
CREATE_BOOTSTRAP_CONFIGMAP={{CREATE_BOOTSTRAP_CONFIGMAP}}
REMOVE_OPT_OPENSHIFT={{REMOVE_OPT_OPENSHIFT}}
API=https://localhost:6443

api() { # METHOD PATH [JSON-BODY]
    local args=(-sS --fail-with-body --cacert "$SECRETS/ca.crt" --cert "$SECRETS/admin.crt"
        --key "$SECRETS/admin.key" -X "$1" -H "Accept: application/json")
    if [ $# -ge 3 ]; then
        args+=(-H "Content-Type: application/json" --data "$3")
    fi
    curl "${args[@]}" "$API$2"
}

# post-reboot-hang:<loop> holds that loop: its condition is taken as unmet, round after round.
HANG_LOOP="{{HANG_LOOP}}"
held() { [ "$1" = "$HANG_LOOP" ]; }

condition() { # JSON TYPE -> status of that condition
    jq -r --arg t "$2" '[.status.conditions[]? | select(.type == $t) | .status][0] // "Unknown"' <<< "$1"
}

echo "Running bootkube bootstrap-in-place post reboot"

# wait_for_api: the real one lists CSRs with the bootstrap kubeconfig.
until ! held api && api GET /apis/certificates.k8s.io/v1/certificatesigningrequests >/dev/null 2>&1; do
    echo "Waiting for api ..."
    sleep "$POLL"
done

# signal_bootstrap_complete (from 4.12): wait-for bootstrap-complete and the etcd operator wait
# for it.
until [ "$CREATE_BOOTSTRAP_CONFIGMAP" = 0 ] ||
    { ! held bootstrap-configmap && api GET /api/v1/namespaces/kube-system/configmaps/bootstrap >/dev/null 2>&1; }; do
    echo "Creating bootstrap configmap ..."
    api POST /api/v1/namespaces/kube-system/configmaps \
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bootstrap","namespace":"kube-system"},"data":{"status":"complete"}}' \
        >/dev/null 2>&1 || true
    sleep "$POLL"
done

# release_lease: the lease, then the configmap of that name, until neither is there (a failed
# read counts as gone, as the real script's `grep -c` of nothing does).
release_lease() { # LOOP NAMESPACE NAME
    until ! held "$1" && ! api GET "/apis/coordination.k8s.io/v1/namespaces/$2/leases/$3" >/dev/null 2>&1; do
        echo "Deleting $2 $3 lease"
        api DELETE "/apis/coordination.k8s.io/v1/namespaces/$2/leases/$3" >/dev/null 2>&1 || sleep "$POLL"
    done
    until ! held "$1" && ! api GET "/api/v1/namespaces/$2/configmaps/$3" >/dev/null 2>&1; do
        echo "Deleting $2 $3 cm"
        api DELETE "/api/v1/namespaces/$2/configmaps/$3" >/dev/null 2>&1 || sleep "$POLL"
    done
}
if [ ! -f /opt/openshift/release_cvo_lease.done ]; then
    release_lease cvo-lease openshift-cluster-version version
    touch /opt/openshift/release_cvo_lease.done
fi
if [ ! -f /opt/openshift/release_cpc_lease.done ]; then
    release_lease cpc-lease kube-system cluster-policy-controller-lock
    touch /opt/openshift/release_cpc_lease.done
fi

# restore_cvo_overrides: the real one merge-patches ClusterVersion; minisno's API server takes
# no patches, so the ClusterVersion answering stands for the patch accepted.
echo "Restoring CVO overrides"
until ! held cvo-overrides && api GET /apis/config.openshift.io/v1/clusterversions/version >/dev/null 2>&1; do
    echo "Trying again to restore CVO overrides ..."
    sleep "$POLL"
done

# approve_csr: the node registers only once its kubelet reaches api-int.<cluster>.<domain>,
# which takes DNS: until then there is no node, and this loop goes on approving nothing.
echo "Waiting for node to report ready status"
until ! held csr && [ "$(api GET /api/v1/nodes 2>/dev/null | jq '[.items[] | select(.metadata.labels["node-role.kubernetes.io/master"] != null) | .status.conditions[]? | select(.type == "Ready" and .status == "True")] | length')" = 1 ]; do
    echo "Approving csrs ..."
    for csr in $(api GET /apis/certificates.k8s.io/v1/certificatesigningrequests 2>/dev/null |
        jq -r '.items[] | select(.status.conditions == null) | .metadata.name'); do
        api PUT "/apis/certificates.k8s.io/v1/certificatesigningrequests/$csr/approval" \
            "{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\",\"metadata\":{\"name\":\"$csr\"},\"status\":{\"conditions\":[{\"type\":\"Approved\",\"status\":\"True\",\"reason\":\"NodeCSRApprove\",\"message\":\"approved by bootstrap-in-place-post-reboot\"}]}}" >/dev/null || true
    done
    sleep "$POLL"
done
echo "node is ready"

# restart_kubelet: the kube-apiserver-operator's pod Ready, the kubelet restarted, the
# kube-apiserver static pod no longer the bootstrap one, the kubelet restarted again.
echo "Waiting for kube-apiserver-operator"
until ! held kube-apiserver-operator && [ "$(api GET /api/v1/namespaces/openshift-kube-apiserver-operator/pods 2>/dev/null | jq '[.items[] | select(.metadata.labels.app == "kube-apiserver-operator") | .status.conditions[]? | select(.type == "Ready" and .status == "True")] | length')" = 1 ]; do
    echo "Waiting for kube-apiserver-operator ready condition to be True"
    [ "$(api GET /readyz 2>/dev/null)" = "ok" ] || echo "Api is not available"
    sleep "$POLL"
done

echo "Restarting kubelet"
systemctl daemon-reload
systemctl restart kubelet.service

# minisno's control plane is one process the kubelet runs, with no static pod manifest: the new
# configuration is applied once that process answers again after the restart.
while held static-pod || grep bootstrap-kube-apiserver /etc/kubernetes/manifests/kube-apiserver-pod.yaml 2>/dev/null ||
    [ "$(api GET /readyz 2>/dev/null)" != "ok" ]; do
    echo "Waiting for kube-apiserver to apply the new static pod configuration"
    sleep "$POLL"
done

echo "Restarting kubelet"
systemctl restart kubelet.service
until [ "$(api GET /readyz 2>/dev/null)" = "ok" ]; do
    sleep "$POLL"
done
{{FAULT_POST_REBOOT}}

# wait_for_cvo: each round lists the operators that are not Available, with their messages.
echo "Waiting for cvo"
until ! held cvo && [ "$(condition "$(api GET /apis/config.openshift.io/v1/clusterversions/version 2>/dev/null || echo '{}')" Available)" = "True" ]; do
    echo "Still waiting for cvo ..."
    api GET /apis/config.openshift.io/v1/clusteroperators 2>/dev/null |
        jq -r '.items[] | "\(.metadata.name): Available=\([.status.conditions[]? | select(.type == "Available") | .status][0] // "Unknown") \([.status.conditions[]? | select(.type == "Available") | .message][0] // "")"' |
        grep -v "Available=True" || true
    sleep "$POLL"
done

# clean: silent, as the real one.
rm -rf /etc/kubernetes/bootstrap-* \
    /usr/local/bin/installer-gather.sh \
    /usr/local/bin/installer-masters-gather.sh \
    /var/log/log-bundle-bootstrap.tar.gz
if [ "$REMOVE_OPT_OPENSHIFT" = 1 ]; then
    rm -rf /opt/openshift
fi
systemctl disable bootkube.service
