#!/usr/bin/env bash
# minisno's release image is baked into its OS image: the "pull" checks the pull secret and the
# image reference, and reports like the real release-image-download.sh.
set -euo pipefail
RELEASE_IMAGE={{RELEASE_IMAGE}}
echo "Pulling $RELEASE_IMAGE..."
if ! jq -e '.auths | type == "object"' /root/.docker/config.json >/dev/null 2>&1; then
    while true; do
        echo "Pull failed. Retrying $RELEASE_IMAGE..."
        echo "Release image $RELEASE_IMAGE cannot be pulled: check the pull secret" > /etc/issue.d/50_release-image.issue
        sleep 5
    done
fi
sleep {{STAGE_DELAY}}
echo "Pulled $RELEASE_IMAGE (minisno: from the OS image)"
