//! Samples written from journalctl's formats (json, export, short, short-precise), not
//! recorded.

use super::*;

fn journal(sig: &Signal) -> (&str, &str, &str, u64, &str) {
    let Signal::Journal {
        unit,
        identifier,
        message,
        guest_usec,
        boot_id,
    } = sig
    else {
        panic!("a journal signal: {sig:?}")
    };
    (unit, identifier, message, *guest_usec, boot_id)
}

#[test]
fn json_entries_become_the_followers_signals_and_others_are_left() {
    let text = concat!(
        r#"{"__CURSOR":"s=1;i=1","__REALTIME_TIMESTAMP":"1795999388000000","_BOOT_ID":"b1","_SYSTEMD_UNIT":"bootkube.service","SYSLOG_IDENTIFIER":"bootkube.sh","MESSAGE":"Rendering MCO manifests..."}"#,
        "\n",
        r#"{"__REALTIME_TIMESTAMP":"1795999389000000","_BOOT_ID":"b1","_SYSTEMD_UNIT":"systemd-udevd.service","MESSAGE":"Using default interface naming scheme"}"#,
        "\n",
        r#"{"__REALTIME_TIMESTAMP":"1795999390000000","_BOOT_ID":"b1","_SYSTEMD_UNIT":"init.scope","UNIT":"install-to-disk.service","SYSLOG_IDENTIFIER":"systemd","MESSAGE":[105,110,115,116,97,108,108]}"#,
        "\n"
    );
    let r = parse_json(Path::new("j.json"), text, &Limits::default()).unwrap();
    assert_eq!(r.entries.len(), 2, "udevd's line is not the follower's");
    assert_eq!(
        journal(&r.entries[0].signal),
        (
            "bootkube.service",
            "bootkube.sh",
            "Rendering MCO manifests...",
            1795999388000000,
            "b1"
        )
    );
    assert_eq!(r.entries[0].usec, 1795999388000000);
    // systemd's line about a unit is that unit's; a byte array is the message's bytes.
    assert_eq!(journal(&r.entries[1].signal).0, "install-to-disk.service");
    assert_eq!(journal(&r.entries[1].signal).2, "install");
}

#[test]
fn a_json_line_that_is_no_entry_is_refused_with_its_line_and_a_cut_last_line_is_said() {
    let e = parse_json(
        Path::new("j.json"),
        "{\"MESSAGE\":\"a\"}\n[1,2]\n",
        &Limits::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("line 2: a JSON array where an entry object belongs"),
        "{e}"
    );
    let e = parse_json(
        Path::new("j.json"),
        "{\"MESSAGE\":\nx\n",
        &Limits::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("line 1: not a journal entry"), "{e}");
    let cut =
        "{\"_SYSTEMD_UNIT\":\"bootkube.service\",\"MESSAGE\":\"a\"}\n{\"_SYSTEMD_UNIT\":\"boo";
    let r = parse_json(Path::new("j.json"), cut, &Limits::default()).unwrap();
    assert!(r.cut_short);
    assert_eq!(r.entries.len(), 1);
}

#[test]
fn export_entries_read_text_and_binary_fields() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"__CURSOR=s=1\n__REALTIME_TIMESTAMP=1795999388000000\n_BOOT_ID=b1\n_SYSTEMD_UNIT=install-to-disk.service\nSYSLOG_IDENTIFIER=install-to-disk.sh\n");
    let msg = b"Error: writing image\nsecond line";
    bytes.extend_from_slice(b"MESSAGE\n");
    bytes.extend_from_slice(&(msg.len() as u64).to_le_bytes());
    bytes.extend_from_slice(msg);
    bytes.extend_from_slice(b"\n\n");
    bytes.extend_from_slice(b"__REALTIME_TIMESTAMP=1795999389000000\n_SYSTEMD_UNIT=bootkube.service\nMESSAGE=bootkube.service complete\n");
    let r = parse_export(Path::new("j.export"), &bytes, &Limits::default()).unwrap();
    assert_eq!(r.entries.len(), 2);
    let (unit, ident, message, usec, boot) = journal(&r.entries[0].signal);
    assert_eq!(
        (unit, ident, usec, boot),
        (
            "install-to-disk.service",
            "install-to-disk.sh",
            1795999388000000,
            "b1"
        )
    );
    assert_eq!(message, "Error: writing image\nsecond line");
    assert_eq!(journal(&r.entries[1].signal).2, "bootkube.service complete");
}

#[test]
fn a_broken_export_is_refused_at_its_offset() {
    let mut bytes = b"MESSAGE\n".to_vec();
    bytes.extend_from_slice(&(1u64 << 40).to_le_bytes());
    bytes.extend_from_slice(b"short\n");
    let e = parse_export(Path::new("j.export"), &bytes, &Limits::default()).unwrap_err();
    assert!(
        e.to_string().contains(
            "byte 0: binary field \"MESSAGE\": its length 1099511627776 runs past the file's end"
        ),
        "{e}"
    );
    let e = parse_export(Path::new("j.export"), b"MESS AGE=x\n", &Limits::default()).unwrap_err();
    assert!(
        e.to_string().contains("a field name of the export format"),
        "{e}"
    );
}

#[test]
fn short_lines_take_the_files_unit_boot_and_year_and_continue_multiline_messages() {
    let text = "-- Journal begins at Mon 2026-11-30 09:40:00 UTC, ends at Mon 2026-11-30 09:45:00 UTC. --\n\
                Nov 30 09:43:08 minisno bootkube.sh[812]: Starting cluster-bootstrap...\n\
                Nov 30 09:43:09.250000 minisno bootkube.sh[812]: Error: timed out\n\
                \x20   waiting for the condition\n\
                Nov 30 09:43:10 minisno systemd[1]: bootkube.service: Failed with result 'exit-code'.\n\
                -- Boot 0123456789abcdef0123456789abcdef --\n\
                Dec 31 23:59:59 minisno bootkube.sh[90]: late\n\
                Jan  1 00:00:01 minisno bootkube.sh[90]: new year\n";
    let ctx = ShortContext {
        unit: "bootkube.service".into(),
        boot_id: "log-bundle:bootstrap".into(),
        year: 2026,
    };
    let r = parse_short(Path::new("bootkube.log"), text, &ctx, &Limits::default()).unwrap();
    assert_eq!(r.entries.len(), 5);
    let at = |s: &str| {
        humantime::parse_rfc3339(s)
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64
    };
    assert_eq!(
        journal(&r.entries[0].signal),
        (
            "bootkube.service",
            "bootkube.sh",
            "Starting cluster-bootstrap...",
            at("2026-11-30T09:43:08Z"),
            "log-bundle:bootstrap"
        )
    );
    assert_eq!(r.entries[1].usec, at("2026-11-30T09:43:09.25Z"));
    assert_eq!(
        journal(&r.entries[1].signal).2,
        "Error: timed out\nwaiting for the condition"
    );
    assert_eq!(journal(&r.entries[2].signal).1, "systemd");
    assert_eq!(
        journal(&r.entries[3].signal).4,
        "0123456789abcdef0123456789abcdef"
    );
    assert_eq!(r.entries[4].usec, at("2027-01-01T00:00:01Z"));
    assert!(is_short_line("Nov 30 09:43:08 minisno bootkube.sh[812]: x"));
    assert!(!is_short_line("[    0.000000] Linux version"));
}
