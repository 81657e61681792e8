#!/usr/bin/env bash
# The whole test suite: host setup, lint, unit tests and the VM tests (TCG), as CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Disk, said first (before the host's packages take their share): a CI host's disk is shared
# and has run out mid-build (a compiler's "No space left on device") and mid-test (VM disks
# refused). Measured on clean clones: lint and test build 3.3 GB, target/ some 5 GB by the end
# of a run (no_libvirt_build's own build), the fixture's cache 1.5 GB, and the VM tests' disks
# and run directories on top while they run.
free_kib=$(df -Pk . | awk 'NR == 2 { print $4 }')
echo "ci/test.sh: $((free_kib / 1048576)) GiB free for $(pwd) (the suite needs some 8 GiB)"
if [ "$free_kib" -lt $((4 * 1048576)) ]; then
    echo "ci/test.sh: less than 4 GiB free: the build alone needs 3.3 GB; free disk and run again" >&2
    exit 3
fi
bash ci/install-host-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
# A clean clone builds once: incremental state (3 GB here) would only take disk from the VM tests.
export CARGO_INCREMENTAL=0
# The proof that ci/install-host-deps.sh is complete on a fresh Debian 12 (about 2 minutes,
# mostly downloads): run beside the compile below, waited for before the tests.
mkdir -p target
bash ci/fresh-host-check.sh >target/fresh-host-check.log 2>&1 &
fresh_host_check=$!

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The build without libvirt (`--no-default-features`: no libvirt headers or library) is
# held to the same lints; harness/tests/no_libvirt_build.rs builds and runs it.
cargo clippy -p sno-harness --no-default-features --all-targets --locked -- -D warnings
# Build the tests first, then the fixture with the harness binary that build made (cached by
# input hash), so the VM tests find it ready. Not `cargo run -p sno-harness`: the workspace's
# dev-dependencies unify other features of serde, kube and k8s-openapi, so that build's
# dependencies would be compiled a second time for the tests (2 minutes of CI).
cargo nextest run --workspace --locked --no-run
target/debug/sno-harness fixture build
if ! wait "$fresh_host_check"; then
    cat target/fresh-host-check.log >&2
    exit 1
fi
cat target/fresh-host-check.log
# `ci/test.sh --all` runs every VM test; without it (CI) a representative set, to stay near 45
# minutes on 2 cores (a fixture run costs some 230 s of a core under TCG, whatever its vCPUs).
# Left out of CI, each with what covers its mechanism here:
# - runs that only pass a path others pass too: the smoke scenario itself (harness/tests/
#   secrets.rs runs scenarios/smoke.toml to a pass, with a pull secret and --keep, and
#   saved_state.rs, own_iso.rs and libvirt_nat.rs run its variants); libvirt::smoke (a local
#   libvirt domain passes in libvirt_nat's single-stack IPv6 NAT run, and follows the guest on libvirt's user
#   network through install-to-disk in hands_on_vm's libvirt run of the install-fail scenario); smoke on a remote host
#   (libvirt_remote's smoke_on_a_remote_libvirt_host_passes_and_leaves_nothing_there: the same
#   file's PXE run on that host makes every one of its checks but the ISO's volume).
# - fault scenarios that end by a phase timeout: bootkube-hang (bootkube-fail's twin);
#   no-reboot, api-never-ready, operator-unavailable, operator-degraded, small-disk (the state
#   machine's unit tests); network-type-drift (health::applied's and the machine's unit tests, on
#   the API server's own objects); cdrom-first (the machine's unit test
#   the_live_iso_booting_again_fails_disk_boot, and vm::qemu::argv's
#   boot_order_is_per_device_and_never_mixed_with_boot_order).
# - the faults of the real order after the reboot: node-not-ready (the node's Ready=False judged
#   on the API server with that fault is tests/check.rs's each_fault_fails_its_check_naming_the_object,
#   node-ready's share of bootstrap-complete's budget the machine's
#   node_ready_has_no_deadline_of_its_own_only_bootstrap_completes_budget_from_its_start, and its
#   run is in docs/measurements.md); no-dns (the records are assets::dns's unit tests, the
#   node-ready judgement check.rs's without_dns_for_api_int_no_node_registers_and_the_check_says_why) and
#   etcd-member-not-removed (tests/check.rs, on the API server with that fault, per release);
#   no-hostname (some 11 minutes: the installed system waits its five minutes for a hostname
#   before the kubelet and the API start; the units' order and the API server's node name taken
#   from the hostname are minisno-install's and minisno-apiserver's unit tests, the judgement
#   of a node named localhost the machine's a_node_registered_under_no_hostname_fails_node_ready_at_once_naming_it,
#   and every passing run registers the node under the name the harness's DHCP gave); apps-dns
#   (some 4.5 minutes: the operators' lookups through the pods' DNS, never /etc/hosts, are
#   minisno-apiserver's unit tests against a DNS server of the test's that answers or not, and
#   every passing run resolves its routes through the node's own resolver: the smoke scenario
#   on the user network, libvirt_nat's run through the network's dnsmasq); copy-network-missing
#   (some 4.5 minutes: the judgement of an installed system on NetworkManager's automatic
#   profile is the machine's an_installed_system_without_the_live_systems_keyfiles_fails_naming_the_copy,
#   the script without -n minisno-install's unit test, and libvirt_nat's IPv6 run the copy that
#   does happen).
# - the post-reboot script's hangs (post-reboot-hang-api, -csr and -cvo, each a phase timeout
#   after a converging install): the naming of each of the script's nine loops is the machine's
#   unit tests (a_*_timeout_names_the_*_loop, one per loop, and bootstrap-cleanup's naming of
#   bootkube.service's state and the files left), and minisno's holding of each loop, with the
#   real script's lines in its order, minisno-install's
#   post_reboot_hang_holds_each_loop_printing_its_real_line_and_nothing_after_it on the rendered
#   script.
# - faults whose detector others prove: oom-kill and oom-kill-allowed (the kernel's OOM lines
#   are flow::badness's unit tests on a real kernel's lines and the allow-list's; a console line
#   that fails the run as badness runs in rootfs-404, whose emergency shell is one, paused
#   in hands_on_vm); bootkube-flaky (the machine's restart tests; bootkube-fail runs); journal-cut
#   (journal_follower's cut-and-frozen VM test); disk-boot-panic on both backends (the machine's
#   a_panic_fails_the_current_phase; observe.rs's post-reboot-fail a failure after the pivot); gather-hang
#   (gather's a_hung_or_failing_collector_hides_none_of_the_others); install-fail on QEMU (it
#   runs on libvirt in hands_on_vm, with its gather checked; the judgement of install-to-disk
#   is the same machine's on every backend).
# - fixture tests the smoke run repeats: minisno_os's SeaBIOS 512-byte install (smoke is
#   SeaBIOS, 512, virtio), the OVMF 512-byte one (OVMF 4K runs), the SATA, SCSI and virtio bus
#   names (NVMe runs), the live ISO's Ignition on each firmware (every run applies it).
# - reliability tests whose path another runs: Ctrl-C during the fixture build (Ctrl-C during
#   bootkube runs), SIGKILL then gc on libvirt (NAT's gc of a killed run runs), libvirtd
#   restarted and a console taken by another client (the machine's unit test
#   a_lost_instrument_is_the_harness_error_naming_it_not_the_systems_failure, and error_paths'
#   lost QMP connection on a VM), the timed BiP convergence (smoke converges the same way).
# - matrix permutations, which are ignored tests (run whole matrices with `sno-harness matrix`
#   or `--run-ignored only`); CI runs a representative three: an IPv6 install-config with a
#   proxy, a trust bundle trusted always, and FIPS with the installer's host check skipped
#   (checked in the cluster's reported state); and the installer refusing FIPS on this host.
#   Of the boot matrix (scenarios/boot.toml) PXE on OVMF runs as
#   harness/tests/boot_server_attacks.rs (the same scenario under a flood and another user's
#   attempts; iPXE's EFI build; PXE on SeaBIOS shares all but the firmware's NIC ROM, the
#   minimal ISO on SeaBIOS all but the boot loader) (the full live ISO on SeaBIOS is smoke, on OVMF
#   minisno_os's install_to_disk_and_boot_ovmf_4k); the minimal ISO on OVMF
#   (boot::minimal-iso.uefi.install-to-disk) is left out: its live initramfs fetches and checks
#   the rootfs as PXE's does (the rootfs from the same boot server, on OVMF, in the attacked PXE
#   run) and its ISO's kernel arguments are those rootfs-404 (hands_on_vm) and fault::rootfs-corrupt
#   boot with; its assisted
#   installs are scenarios/assisted-stale-metadata.toml on OVMF, which runs, and on SeaBIOS the
#   same SSH path after a SeaBIOS live boot (smoke's, in secrets.rs). libvirt::assisted is left
#   out too: its coreos-installer runs over the SSH target the libvirt install-fail run's
#   followers use (hands_on_vm), and
#   so is PXE on libvirt (libvirt::boot::pxe.*: the same user network and iPXE as on QEMU,
#   passed through, its NIC's boot order a unit test of the domain's), and PXE on NAT (the
#   network's TFTP and boot file are unit tests and virt-xml-validate's; NAT runs reach the
#   node as libvirt_nat's IPv6 NAT run does); so
#   is the minimal ISO with the assisted install on NAT (libvirt_nat's IPv6 NAT run reaches the node
#   the same way, the boot server's second address is its unit test); so is the static bond
#   on NAT (libvirt_nat's a_static_bond_of_two_interfaces_carries_the_node_on_a_nat_network:
#   the second interface is the domain's unit test and virt-xml-validate's, the keyfiles and
#   the bond over both systems network::bond.pxe.bios's), and dual stack on NAT
#   (a_dual_stack_nat_run_registers_the_node_at_both_static_addresses: each family's half runs
#   in libvirt_nat's single-stack IPv6 run and, for IPv4, in every run on the user network, the two-family layout and keyfile are unit
#   tests).
#   The release matrix (scenarios/releases.toml) is left out: the etcd rule of 4.14, 4.15 and
#   4.17 is tested on the API server's and the judgements' own objects.
# - fault::unsigned-loader (the firmware refusing an unsigned EFI loader, some 40 s): CI's Secure
#   Boot run is fault::multipath-path-lost, on OVMF's Secure Boot build (the signed chain on both
#   systems, each read as Secure Boot on); the refusal's console line failing live-boot is the
#   machine's the_firmware_refusing_the_loader_fails_live_boot_quoting_its_console_line and
#   flow::badness's unit tests, on the lines OVMF printed when it refused that ISO, and the
#   fault's ISO is checked by the fixture build (its digest, its kernel-argument area).
# - boot::live-iso.uefi-secure.install-to-disk (Secure Boot on one virtio disk): CI's
#   fault::multipath-path-lost boots the same signed chain from the live ISO and from the
#   installed disk, and checks Secure Boot on in both systems.
# - stale-metadata-install-to-disk (the same old metadata in install-to-disk.service's mode,
#   refused by coreos-installer's exclusive-access check): the fault's disk is
#   assisted-stale-metadata's, which runs, and a coreos-installer error failing install-to-disk
#   at once is the machine's a_coreos_installer_error_fails_install_to_disk_at_once and, on a
#   VM, hands_on_vm's libvirt install-fail run.
# - scenarios/assisted.toml (the assisted install on SeaBIOS onto a clean disk):
#   assisted-stale-metadata runs every one of its steps and more (the agent's device, LVM, MD
#   and wipefs steps on real old metadata, the host Ignition merge, coreos-installer --insecure,
#   the EFI boot entry, the log collection and reboot) on OVMF; an installed system booting on
#   SeaBIOS is smoke's.
# - the matrix over several libvirt hosts with one lost mid-matrix (harness/tests/libvirt_hosts.rs,
#   some 8 minutes with its two VMs): fleet::places' unit tests cover the choice of host, its
#   limits and a lost host's stop signal, libvirt_remote.rs a run on a qemu+ssh host, and
#   vm::libvirt::capacity's a libvirtd's report of its room. Its timing of 6 permutations on
#   one host and on two (some 18 minutes) is left out by --all too. So is the same file's smoke
#   on a host behind a jump host (192 s, and it takes both of nextest's slots): the ssh argv
#   leaves the user, port, key and ProxyJump to the user's ~/.ssh/config
#   (vm::libvirt::tunnel::argv's what_the_uri_does_not_say_is_left_to_the_users_ssh_configuration),
#   OpenSSH reads it, and libvirt_remote's PXE run takes the same tunnel and forwards to a
#   qemu+ssh host.
# - libvirt_nat's IPv4 run with a DHCP reservation
#   (a_nat_network_run_reaches_the_node_at_its_reserved_address_and_removes_the_network):
#   the same file's single-stack IPv6 run makes the network, reaches the node at its address
#   on the bridge with no forwards, resolves the cluster's names through the network's
#   dnsmasq and removes the network; the IPv4 network's reservation for the node's MAC is
#   vm::libvirt's unit test the_nat_network_reserves_the_node_and_resolves_the_cluster_names,
#   and IPv4 DHCP on the user network every run's.
# - fault::assisted-no-disk (coreos-installer failing three times over SSH): the retries and
#   the quoting of each attempt are the machine's
#   the_third_failed_attempt_fails_install_to_disk_quoting_each and
#   an_assisted_coreos_installer_that_fails_once_is_retried_and_passes; the same SSH path of
#   the agent's coreos-installer is assisted-stale-metadata's.
# - fault::wrong-disk (installationDisk naming no device): a coreos-installer error failing
#   install-to-disk at once is the machine's a_coreos_installer_error_fails_install_to_disk_at_once,
#   and hands_on_vm's libvirt install-fail run fails install-to-disk on a VM quoting it.
# - the soak (harness/tests/soak.rs, ignored), the flake count (ci/flakes.sh) and the
#   end-to-end perf run (three smoke runs in a row, harness/tests/perf_cli.rs, ignored; its
#   aggregation and CLI paths run here without VMs): also left out by --all.
# - the minimal ISO on a remote libvirt host (libvirt_remote's
#   the_minimal_iso_on_a_remote_host_boots_through_a_reverse_ssh_forward): its rootfs comes
#   through the reverse SSH forward that the PXE test beside it runs in CI, and the minimal
#   ISO's boot runs on QEMU (rootfs-404 in hands_on_vm, fault::rootfs-corrupt).
# - fault::rootfs-404 and libvirt::fault::install-fail as scenario tests:
#   harness/tests/hands_on_vm.rs runs each to its expected verdict with its gather checked,
#   install-fail on libvirt kept by --keep=on-failure (with bootkube-flaky added, so that a login
#   lands in bootkube), rootfs-404 paused at its failure and resumed by `resume`. The same file's
#   kept failure on QEMU (post-reboot-fail kept, the installed system and the kubeconfig of a
#   failure whose API answered: the kept libvirt run takes the same tear-down and ways in, the
#   kubeconfig is written as a passing run's, secrets.rs) and its pause ended by SIGUSR1 (what
#   `resume` sends; run::pause's unit test ends a pause by it) are left out.
# - typing into a run's emergency shell through `console RUN --interactive`
#   (console_interactive's typed_into_a_runs_emergency_shell_the_command_runs_there_and_its_answer_is_in_serial_log):
#   the same file's tests without that VM type through the run's console input into the
#   console's stream and see the output come back, and type through a real QEMU's serial socket
#   (a kernel of a few bytes that echoes it, booted in a second); the emergency shell on the
#   console is rootfs-404's run (hands_on_vm).
# - the user's own key (harness/tests/own_key.rs: `[access] authorized_keys` logs in to the live
#   and the installed system; smoke on minisno's normal schedule, some 10 minutes): the run's
#   own key takes the same path (install-config's sshKey, onto core in both Ignition configs)
#   and every run logs in with it to both systems; the keys' checks, their lines after the
#   run's key in sshKey and minisno's authorized_keys line for each line of sshKey are unit
#   tests.
# - the smoke scenario booted by the build without libvirt
#   (no_libvirt_build's a_build_without_libvirt_boots_smoke_on_qemu): the QEMU path it takes is
#   the default build's, which smoke runs; what the feature removes is proved by the same
#   file's tests of that binary without a VM (it links no libvirt; plan, run and matrix up to
#   the VM, report, merge, check, doctor and gc work; --backend libvirt is exit 2).
# - scenarios/multipath.toml, on QEMU and on libvirt (the installation disk over two paths,
#   installed to /dev/mapper/mpatha with the day-1 multipath kernel arguments, the installed root
#   on the map with both paths active): fault::multipath-path-lost runs in CI and does all of it
#   on QEMU (on Secure Boot's firmware), and loses and gets back a path during the write
#   besides; libvirt's two shareable disks on two controllers, and the path's detach and attach
#   XML, are the domain's unit tests and virt-xml-validate's.
# - fault::install-reset (a reset a quarter into coreos-installer's write, failing
#   install-to-disk; some 3 minutes): the judgement of a reset before the install was seen
#   complete is the machine's
#   install_to_disk_ends_on_its_marker_or_a_reset_after_a_whole_write_and_fails_on_an_early_reset
#   and a_burst_of_reset_events_is_one_reset_with_its_cause, on QMP's RESET events as QEMU sends
#   them; the reboot that is one (the reset after a whole write) every passing run takes.
# - observe's smoke and bootkube-fail (harness/tests/observe.rs, some 4 minutes each on a VM the
#   test boots with plain QEMU): CI runs the same file's post-reboot-fail, which follows the
#   machine through the same live boot, the write read from coreos-installer's progress lines,
#   the reboot seen as a new boot id and the installed system, to the failure after the pivot;
#   a failure before the pivot is the same machine's judgement as fault::bootkube-fail's, which
#   runs in CI booted by the harness; the console log followed is the unit test of
#   vm::external's console.
# - fault::post-reboot-fail booted by the harness: observe's post-reboot-fail runs the same
#   scenario to the same verdict and phase (bootstrap-cleanup), judged by the same machine;
#   the harness's own VM through the pivot is every passing run's, and the kept QEMU failure of
#   it hands_on_vm's (with --all).
# - harness/tests/own_iso.rs (an openshift-profile scenario with its own installer and live
#   ISO; a whole install, some 4 minutes): the choice of the scenario's ISO over the
#   installer's and its digest are assets' unit tests
#   (an_own_iso_is_booted_instead_of_the_installers_and_a_file_without_a_digest_is_hashed,
#   an_own_iso_path_becomes_a_file_url_that_reads_back_as_the_same_path), the installer
#   named by the scenario is error_paths's (its failures quoted, its absence refused), and
#   booting an ISO file the harness did not build every run's.
# - fault::multipath-no-kargs (the same install without the kernel arguments, failing
#   disk-boot): the probe's recorded answer of that installed system (root on one path, no
#   multipathd) is flow::multipath's unit test and its failing disk-boot at once the machine's;
#   the install without --append-karg is every other scenario's.
not_in_ci='not test(/^fault::(node-not-ready|oom-kill|bootkube-hang|no-reboot|api-never-ready|operator-unavailable|small-disk|operator-degraded|network-type-drift|cdrom-first|no-dns|etcd-member-not-removed|oom-kill-allowed|bootkube-flaky|journal-cut|disk-boot-panic|gather-hang|install-fail|no-hostname|apps-dns|copy-network-missing|post-reboot-hang-api|post-reboot-hang-csr|post-reboot-hang-cvo|stale-metadata-install-to-disk|rootfs-404|unsigned-loader|multipath-no-kargs|install-reset|post-reboot-fail|assisted-no-disk|wrong-disk)$/)
  and not (binary(scenarios) and test(/^(libvirt::)?multipath$/))
  and not test(=libvirt::fault::disk-boot-panic)
  and not test(=libvirt::fault::install-fail)
  and not test(=a_kept_failure_runs_on_for_ssh_console_and_kubeconfig_until_gc_stops_it)
  and not test(=a_paused_failure_is_resumed_by_sigusr1_then_gathered)
  and not test(=libvirt::assisted)
  and not (binary(scenarios) and test(=assisted))
  and not test(/^libvirt::boot::/)
  and not test(=the_minimal_iso_and_the_assisted_install_work_on_a_nat_network)
  and not test(=pxe_boots_from_the_networks_own_tftp_on_a_nat_network)
  and not test(=a_static_bond_of_two_interfaces_carries_the_node_on_a_nat_network)
  and not test(=a_dual_stack_nat_run_registers_the_node_at_both_static_addresses)
  and not (binary(minisno_os) and test(/^(install_to_disk_and_boot_(seabios|ovmf)_512|disk_bus_(sata|scsi|virtio)_.*|live_iso_applies_ignition_on_.*)$/))
  and not test(=ctrl_c_during_the_fixture_build_stops_it_and_leaves_no_partial_build)
  and not test(=sigkill_during_bootkube_then_gc_leaves_nothing_libvirt)
  and not test(=a_libvirtd_restart_mid_run_is_an_error_naming_the_connection_and_leaves_no_domain)
  and not test(=a_console_taken_by_another_client_ends_the_run_as_error_naming_it)
  and not test(=bootstrap_in_place_converges_on_seabios_virtio)
  and not test(=a_host_lost_mid_matrix_ends_its_run_as_an_error_naming_it_and_the_rest_run_elsewhere)
  and not test(=a_build_without_libvirt_boots_smoke_on_qemu)
  and not test(=a_host_behind_a_jump_host_is_reached_as_the_users_ssh_config_says)
  and not test(=a_nat_network_run_reaches_the_node_at_its_reserved_address_and_removes_the_network)
  and not binary(own_iso)
  and not test(=smoke_observed_passes_with_the_reboot_seen_as_a_new_boot)
  and not test(=bootkube_fail_observed_fails_at_bootkube_as_its_scenario_says)
  and not test(=typed_into_a_runs_emergency_shell_the_command_runs_there_and_its_answer_is_in_serial_log)
  and not test(=the_users_own_key_logs_in_to_the_live_and_the_installed_system)
  and not test(=the_minimal_iso_on_a_remote_host_boots_through_a_reverse_ssh_forward)
  and not test(=smoke_on_a_remote_libvirt_host_passes_and_leaves_nothing_there)
  and not (binary(scenarios) and test(/^(libvirt::)?smoke$/))'
if [ "${1:-}" = "--all" ]; then
    not_in_ci='all()'
    # The CI image, built with mmdebstrap and umoci and run in a chroot (some 2.5 minutes,
    # mostly downloads): docs/ci.md, "The CI image".
    bash ci/image/test-oci.sh --harness target/debug/sno-harness
fi
# scenarios/network.toml is left out: the keyfiles embedded in the ISO, copied by `coreos-installer
# install -n`, each system's profiles and the Node's InternalIP run in libvirt_nat's single-stack
# IPv6 run (static by keyfile); PXE's `pxe network wrap` and the bond's second NIC are unit tests
# of the iPXE script and of both backends' NICs (network::bond.pxe.bios runs them: 187 s); DHCP
# on every boot source is boot.toml's.
ci_permutations='test(=install-config::ipv6.OVNKubernetes.proxy.bundle.always.fips.skip-hostcrypt.caps-default)
  or test(=install-config::ipv4.OVNKubernetes.no-proxy.no-bundle.proxyonly.fips.hostcrypt.caps-default)'
cargo nextest run --workspace --locked --profile ci --run-ignored all -E "
  ($not_in_ci) and not binary(soak) and not test(=smoke_twice_after_one_warmup)
  and not test(=six_permutations_on_one_host_and_on_two)
  and (not (binary(scenarios) and test(/^(disks|install-config|releases|boot|network)::/)) or $ci_permutations)"
