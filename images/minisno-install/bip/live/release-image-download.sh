#!/usr/bin/env bash
# minisno's release image is baked into its OS image: the "pull" checks the pull secret and the
# image reference, and reports like the real release-image-download.sh, service record included
# (release-image.json, its stage pull-release-image failing on each failed pull, as the real
# script records it).
set -euo pipefail
SERVICE_NAME=release-image
. /usr/local/bin/bootstrap-service-record.sh
RELEASE_IMAGE={{RELEASE_IMAGE}}
echo "Pulling $RELEASE_IMAGE..."
record_service_stage_start "pull-release-image"
if ! jq -e '.auths | type == "object"' /root/.docker/config.json >/dev/null 2>&1; then
    while true; do
        echo "Pull failed. Retrying $RELEASE_IMAGE..."
        echo "Release image $RELEASE_IMAGE cannot be pulled: check the pull secret" > /etc/issue.d/50_release-image.issue
        record_service_stage_failure "pull" "Pulling $RELEASE_IMAGE...
Error: the pull secret in /root/.docker/config.json has no auths
Pull failed. Retrying $RELEASE_IMAGE..."
        sleep 5
        record_service_stage_start "pull-release-image"
    done
fi
sleep {{STAGE_DELAY}}
echo "Pulled $RELEASE_IMAGE (minisno: from the OS image)"
record_service_stage_success
