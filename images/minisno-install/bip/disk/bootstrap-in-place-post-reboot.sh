#!/usr/bin/env bash
# The installed system's one-shot bootstrap finish (bootkube.service after the reboot), as
# bootstrap-in-place-post-reboot.sh does it (docs/bip-contract.md §6): bootstrap configmap, CSRs,
# node, kube-apiserver, CVO, then removal of the bootstrap files and of this unit.
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

condition() { # JSON TYPE -> status of that condition
    jq -r --arg t "$2" '[.status.conditions[]? | select(.type == $t) | .status][0] // "Unknown"' <<< "$1"
}

echo "Running bootkube bootstrap-in-place post reboot"

until [ "$(api GET /readyz 2>/dev/null)" = "ok" ] &&
    api GET /apis/certificates.k8s.io/v1/certificatesigningrequests >/dev/null 2>&1; do
    echo "Waiting for api ..."
    sleep "$POLL"
done

until [ "$CREATE_BOOTSTRAP_CONFIGMAP" = 0 ] ||
    api GET /api/v1/namespaces/kube-system/configmaps/bootstrap >/dev/null 2>&1; do
    echo "Creating bootstrap configmap ..."
    api POST /api/v1/namespaces/kube-system/configmaps \
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bootstrap","namespace":"kube-system"},"data":{"status":"complete"}}' \
        >/dev/null 2>&1 || true
    sleep "$POLL"
done

echo "Deleting openshift-cluster-version version lease"
api DELETE /apis/coordination.k8s.io/v1/namespaces/openshift-cluster-version/leases/version >/dev/null 2>&1 || true
echo "Deleting kube-system cluster-policy-controller-lock lease"
api DELETE /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cluster-policy-controller-lock >/dev/null 2>&1 || true

echo "Restoring CVO overrides"
until api GET /apis/config.openshift.io/v1/clusterversions/version >/dev/null 2>&1; do
    echo "Trying again to restore CVO overrides ..."
    sleep "$POLL"
done

# The node registers only once its kubelet reaches api-int.<cluster>.<domain>, which takes DNS:
# until then there is no node, and this loop goes on approving nothing.
echo "Waiting for node to report ready status"
until [ "$(api GET /api/v1/nodes | jq '[.items[] | select(.metadata.labels["node-role.kubernetes.io/master"] != null) | .status.conditions[]? | select(.type == "Ready" and .status == "True")] | length')" = 1 ]; do
    echo "Approving csrs ..."
    for csr in $(api GET /apis/certificates.k8s.io/v1/certificatesigningrequests |
        jq -r '.items[] | select(.status.conditions == null) | .metadata.name'); do
        api PUT "/apis/certificates.k8s.io/v1/certificatesigningrequests/$csr/approval" \
            "{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\",\"metadata\":{\"name\":\"$csr\"},\"status\":{\"conditions\":[{\"type\":\"Approved\",\"status\":\"True\",\"reason\":\"NodeCSRApprove\",\"message\":\"approved by bootstrap-in-place-post-reboot\"}]}}" >/dev/null || true
    done
    sleep "$POLL"
done
echo "node is ready"

echo "Waiting for kube-apiserver-operator"
until [ "$(condition "$(api GET /apis/config.openshift.io/v1/clusteroperators/kube-apiserver)" Available)" = "True" ]; do
    echo "Waiting for kube-apiserver-operator ready condition to be True"
    sleep "$POLL"
done

echo "Restarting kubelet"
systemctl restart kubelet.service

echo "Waiting for kube-apiserver to apply the new static pod configuration"
until [ "$(api GET /readyz 2>/dev/null)" = "ok" ]; do
    sleep "$POLL"
done
{{FAULT_POST_REBOOT}}

echo "Waiting for cvo"
while true; do
    cv=$(api GET /apis/config.openshift.io/v1/clusterversions/version)
    if [ "$(condition "$cv" Available)" = "True" ]; then
        break
    fi
    echo "Still waiting for cvo ..."
    api GET /apis/config.openshift.io/v1/clusteroperators |
        jq -r '.items[] | "\(.metadata.name): Available=\([.status.conditions[]? | select(.type == "Available") | .status][0] // "Unknown") \([.status.conditions[]? | select(.type == "Available") | .message][0] // "")"'
    sleep "$POLL"
done

echo "Cleaning up bootstrap files"
rm -rf /etc/kubernetes/bootstrap-* \
    /usr/local/bin/installer-gather.sh \
    /usr/local/bin/installer-masters-gather.sh \
    /var/log/log-bundle-bootstrap.tar.gz
if [ "$REMOVE_OPT_OPENSHIFT" = 1 ]; then
    rm -rf /opt/openshift
fi
systemctl disable bootkube.service
