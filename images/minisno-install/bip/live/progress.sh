#!/usr/bin/env bash
# Reports bootstrap progress to the API while there is one; before the reboot there is none, so
# this prints the same expected errors as the real progress service.
until [ -f /opt/openshift/.bootkube.done ]; do
    echo "Unable to report bootstrap progress: https://localhost:6443/readyz is unreachable (expected before the reboot)"
    sleep {{POLL_SECONDS}}
done
echo "bootstrap finished; progress reporting stops until the reboot"
