#!/usr/bin/env bash
# During the live phase of bootstrap-in-place no node joins, so there are no CSRs to approve;
# the node's CSRs are approved after the reboot by bootstrap-in-place-post-reboot.sh.
echo "approve-csr: no certificate signing requests during the live phase"
