#!/usr/bin/env bash
# install-to-disk.sh of bootstrap-in-place: waits for bootkube, writes the OS and master.ign to
# the installation disk with coreos-installer, schedules the reboot. The installation disk is
# pasted in unquoted, as the real template does, so a bad value fails as it would for real.
set -euoE pipefail
. /usr/local/bin/bootstrap-service-record.sh
# minisno's image source: the metal image on the live ISO for the disk's sector size.
. /usr/local/bin/minisno-image-source.sh

record_service_stage_start "wait-for-bootkube"
echo "Waiting for /opt/openshift/.bootkube.done"
until [ -f /opt/openshift/.bootkube.done ]; do
    sleep {{POLL_SECONDS}}
done
record_service_stage_success

if [ ! -f coreos-installer.done ]; then
    record_service_stage_start "coreos-installer"
    # Write image + ignition to disk
    echo "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign {{INSTALLATION_DISK}}"
    coreos-installer install {{COPY_NETWORK}}-i /opt/openshift/master.ign $(minisno_image_source {{INSTALLATION_DISK}}) {{INSTALLATION_DISK}}
    touch coreos-installer.done
    record_service_stage_success
fi

record_service_stage_start "reboot"
echo "Going to reboot"
{{SHUTDOWN}}
touch /opt/openshift/.install-to-disk.done
echo "Done"
record_service_stage_success
