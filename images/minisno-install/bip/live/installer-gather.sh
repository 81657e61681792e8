#!/usr/bin/env bash
# The bootstrap log bundle, as openshift/installer's installer-gather.sh collects it
# (data/data/bootstrap/files/usr/local/bin/installer-gather.sh), in its layout and file names:
# log-bundle-<id>/ with bootstrap/services/ (the service records), bootstrap/journals/<unit>.log
# (journalctl --boot --output=short), failed-units.txt and unit-status/, bootstrap/network/,
# rendered-assets/ and, on the installed system, the live system's log-bundle-bootstrap unpacked
# inside. What minisno has not (CRI-O's containers, podman's pods, the cluster's resources over
# oc) is left out. Two differences, both said here: the journals include the live system's other
# bootstrap-in-place units (install-to-disk, progress), which run on the same host; and
# rendered-assets/ is a listing (name, size, time) of /opt/openshift, not a copy, since minisno's
# rendered files carry the fixture's keys inline where the real ones are removed by name.
# Used by bootkube.sh's bip-gather stage (`--id bootstrap`, as bootstrap-in-place.sh runs it),
# by `sno-harness` when a run fails before the pivot (as `openshift-install gather bootstrap`
# runs it over SSH), and installed as the installed system's installer-gather.sh.

if test "x${1}" = 'x--id'
then
    GATHER_ID="${2}"
    shift 2
fi

ARTIFACTS="/tmp/artifacts-${GATHER_ID}"
rm -rf "${ARTIFACTS}"
mkdir -p "${ARTIFACTS}"

exec &> >(tee "${ARTIFACTS}/gather.log")

echo "Gathering bootstrap service records ..."
mkdir -p "${ARTIFACTS}/bootstrap/services"
cp -r /var/log/openshift/* "${ARTIFACTS}/bootstrap/services/" 2>/dev/null

echo "Gathering bootstrap systemd summary ..."
LANG=POSIX systemctl list-units --state=failed >& "${ARTIFACTS}/failed-units.txt"

echo "Gathering bootstrap failed systemd unit status ..."
mkdir -p "${ARTIFACTS}/unit-status"
sed -n 's/^\* \([^ ]*\) .*/\1/p' < "${ARTIFACTS}/failed-units.txt" | while read -r UNIT
do
    systemctl status --full "${UNIT}" >& "${ARTIFACTS}/unit-status/${UNIT}.txt"
    journalctl -u "${UNIT}" > "${ARTIFACTS}/unit-status/${UNIT}.log"
done

echo "Gathering bootstrap journals ..."
mkdir -p "${ARTIFACTS}/bootstrap/journals"
for service in release-image release-image-download crio-configure bootkube kubelet crio approve-csr progress install-to-disk
do
    journalctl --boot --no-pager --output=short --unit="${service}" > "${ARTIFACTS}/bootstrap/journals/${service}.log"
done

echo "Gathering bootstrap networking ..."
mkdir -p "${ARTIFACTS}/bootstrap/network"
ip addr >& "${ARTIFACTS}/bootstrap/network/ip-addr.txt"
ip route >& "${ARTIFACTS}/bootstrap/network/ip-route.txt"
hostname >& "${ARTIFACTS}/bootstrap/network/hostname.txt"
cp -r /etc/resolv.conf "${ARTIFACTS}/bootstrap/network/" 2>/dev/null

echo "Gathering rendered assets..."
mkdir -p "${ARTIFACTS}/rendered-assets"
if [ -d /opt/openshift ]; then
    find /opt/openshift -printf '%M %10s %TY-%Tm-%Td %TH:%TM %p\n' 2>/dev/null | sort -k5 > "${ARTIFACTS}/rendered-assets/listing.txt"
fi

# On the installed system the live system's bundle came inside master.ign: it goes in whole.
LOG_BUNDLE_BOOTSTRAP_ARCHIVE_NAME="/var/log/log-bundle-bootstrap.tar.gz"
if [[ -f ${LOG_BUNDLE_BOOTSTRAP_ARCHIVE_NAME} ]]; then
    echo "Including existing bootstrap bundle ${LOG_BUNDLE_BOOTSTRAP_ARCHIVE_NAME}"
    tar -xzf ${LOG_BUNDLE_BOOTSTRAP_ARCHIVE_NAME} --directory "${ARTIFACTS}"
fi

TAR_FILE="${TAR_FILE:-${HOME}/log-bundle-${GATHER_ID}.tar.gz}"
tar cz -C "${ARTIFACTS}" --transform "s?^\\.?log-bundle-${GATHER_ID}?" . > "${TAR_FILE}"
echo "Log bundle written to ${TAR_FILE}"
