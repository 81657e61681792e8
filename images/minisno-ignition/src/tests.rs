//! Unit tests: every supported key and the main error cases, applied to a
//! tempdir root. Default ownership is the tempdir's owner so the tests also
//! pass unprivileged.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use serde_json::{json, Value};
use sha2::{Digest, Sha256, Sha512};
use tempfile::TempDir;

use crate::units::parse_install;
use crate::{cli, parse, Applier, Error};

fn ids(p: &Path) -> (u32, u32) {
    let m = fs::metadata(p).expect("stat root");
    (m.uid(), m.gid())
}

fn root() -> TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn cfg(mut body: Value) -> String {
    body["ignition"] = json!({"version": "3.4.0"});
    body.to_string()
}

/// Parse + apply; returns the stdout log.
fn apply(root: &Path, body: Value) -> Result<String, Error> {
    let config = parse(&cfg(body))?;
    let (uid, gid) = ids(root);
    let mut out = Vec::new();
    Applier::new(root, &mut out)
        .with_default_owner(uid, gid)
        .apply(&config)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn apply_err(root: &Path, body: Value) -> String {
    match apply(root, body) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

fn parse_err(text: &str) -> Error {
    match parse(text) {
        Ok(_) => panic!("expected a parse error for {text}"),
        Err(e) => e,
    }
}

fn read(root: &Path, p: &str) -> String {
    fs::read_to_string(root.join(p.trim_start_matches('/'))).expect("read")
}

fn mode(root: &Path, p: &str) -> u32 {
    let m = fs::symlink_metadata(root.join(p.trim_start_matches('/'))).expect("stat");
    m.permissions().mode() & 0o7777
}

fn link(root: &Path, p: &str) -> String {
    let t = fs::read_link(root.join(p.trim_start_matches('/'))).expect("readlink");
    t.to_string_lossy().into_owned()
}

fn exists(root: &Path, p: &str) -> bool {
    fs::symlink_metadata(root.join(p.trim_start_matches('/'))).is_ok()
}

fn put(root: &Path, p: &str, text: &str) {
    let host = root.join(p.trim_start_matches('/'));
    fs::create_dir_all(host.parent().expect("parent")).expect("mkdir");
    fs::write(host, text).expect("write");
}

fn pct(data: &[u8]) -> String {
    let enc: String = data.iter().map(|b| format!("%{b:02X}")).collect();
    format!("data:,{enc}")
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).expect("gzip");
    enc.finish().expect("gzip")
}

fn file(path: &str, source: &str) -> Value {
    json!({"path": path, "contents": {"source": source}})
}

// ---------------------------------------------------------------- files

#[test]
fn plain_data_url_file() {
    let r = root();
    let log = apply(
        r.path(),
        json!({"storage": {"files": [file("/etc/foo", "data:,hello%20world%0A")]}}),
    )
    .expect("apply");
    assert_eq!(read(r.path(), "/etc/foo"), "hello world\n");
    assert_eq!(mode(r.path(), "/etc/foo"), 0o644);
    assert_eq!(mode(r.path(), "/etc"), 0o755);
    assert!(
        log.contains("minisno-ignition: wrote /etc/foo (mode 0644)"),
        "{log}"
    );
    assert!(log
        .contains("minisno-ignition: applied config (1 files, 0 dirs, 0 links, 0 units, 0 users)"));
}

#[test]
fn base64_data_urls() {
    let r = root();
    let files = json!([
        file("/a", "data:;base64,aGVsbG8="),
        file(
            "/b",
            "data:text/plain;charset=utf-8;base64,aGk6IHRoZXJlCg=="
        ),
        file("/c", "data:,"),
    ]);
    apply(r.path(), json!({"storage": {"files": files}})).expect("apply");
    assert_eq!(read(r.path(), "/a"), "hello");
    assert_eq!(read(r.path(), "/b"), "hi: there\n");
    assert_eq!(read(r.path(), "/c"), "");
}

#[test]
fn missing_source_creates_empty_file_and_nulls_are_accepted() {
    let r = root();
    let f = json!({"path": "/x/empty", "mode": null, "contents": {"compression": null},
                   "append": null, "user": {}, "group": {}, "overwrite": false});
    apply(
        r.path(),
        json!({"storage": {"files": [f]}, "systemd": {}, "passwd": {}}),
    )
    .expect("apply");
    assert_eq!(read(r.path(), "/x/empty"), "");
}

#[test]
fn gzip_compression_and_verification() {
    let r = root();
    let plain = b"compressed contents\n".repeat(10);
    let sha256 = hex::encode(Sha256::digest(&plain));
    let sha512 = hex::encode(Sha512::digest(&plain));
    let f1 = json!({"path": "/gz256", "contents": {"source": pct(&gzip(&plain)),
        "compression": "gzip", "verification": {"hash": format!("sha256-{sha256}")}}});
    let f2 = json!({"path": "/gz512", "contents": {"source": pct(&gzip(&plain)),
        "compression": "gzip", "verification": {"hash": format!("sha512-{sha512}")}}});
    let f3 = json!({"path": "/nocomp", "contents": {"source": pct(&plain), "compression": "",
        "verification": {"hash": format!("sha256-{sha256}")}}});
    apply(r.path(), json!({"storage": {"files": [f1, f2, f3]}})).expect("apply");
    for p in ["/gz256", "/gz512", "/nocomp"] {
        assert_eq!(read(r.path(), p).as_bytes(), plain.as_slice());
    }
}

#[test]
fn verification_mismatch_is_an_error() {
    let bad = format!("sha256-{}", "0".repeat(64));
    let f =
        json!({"path": "/x", "contents": {"source": "data:,abc", "verification": {"hash": bad}}});
    let e = parse_err(&cfg(json!({"storage": {"files": [f]}}))).to_string();
    assert!(
        e.contains("storage.files[0].contents.verification.hash"),
        "{e}"
    );
    assert!(e.contains("hash verification failed"), "{e}");
    let f = json!({"path": "/x", "contents": {"source": "data:,abc", "verification": {"hash": "md5-00"}}});
    let e = parse_err(&cfg(json!({"storage": {"files": [f]}}))).to_string();
    assert!(e.contains("unsupported hash function"), "{e}");
}

#[test]
fn bad_compression_and_gzip_data() {
    let f = json!({"path": "/x", "contents": {"source": "data:,abc", "compression": "xz"}});
    let e = parse_err(&cfg(json!({"storage": {"files": [f]}}))).to_string();
    assert!(
        e.contains("storage.files[0].contents.compression") && e.contains("gzip"),
        "{e}"
    );
    let f = json!({"path": "/x", "contents": {"source": "data:,abc", "compression": "gzip"}});
    let e = parse_err(&cfg(json!({"storage": {"files": [f]}}))).to_string();
    assert!(e.contains("not valid gzip"), "{e}");
}

#[test]
fn append_in_order() {
    let r = root();
    let f = json!({"path": "/etc/a", "contents": {"source": "data:,one%0A"},
        "append": [{"source": "data:,two%0A"}, {"source": pct(&gzip(b"three\n")), "compression": "gzip"}]});
    apply(r.path(), json!({"storage": {"files": [f]}})).expect("apply");
    assert_eq!(read(r.path(), "/etc/a"), "one\ntwo\nthree\n");

    // Append to an existing file without a contents source.
    put(r.path(), "/etc/b", "existing\n");
    let f = json!({"path": "/etc/b", "append": [{"source": "data:,more%0A"}]});
    apply(r.path(), json!({"storage": {"files": [f]}})).expect("apply");
    assert_eq!(read(r.path(), "/etc/b"), "existing\nmore\n");
}

#[test]
fn modes_are_decimal() {
    let r = root();
    let f1 = json!({"path": "/bin/tool", "mode": 493, "contents": {"source": "data:,x"}});
    let f2 = json!({"path": "/secret", "mode": 384, "contents": {"source": "data:,x"}});
    let d = json!({"path": "/private", "mode": 448});
    let log = apply(
        r.path(),
        json!({"storage": {"files": [f1, f2], "directories": [d]}}),
    )
    .expect("apply");
    assert_eq!(mode(r.path(), "/bin/tool"), 0o755);
    assert_eq!(mode(r.path(), "/secret"), 0o600);
    assert_eq!(mode(r.path(), "/private"), 0o700);
    assert!(log.contains("wrote /bin/tool (mode 0755)"), "{log}");
    let e = parse_err(&cfg(
        json!({"storage": {"files": [{"path": "/x", "mode": 4096}]}}),
    ));
    assert!(e.to_string().contains("storage.files[0].mode"), "{e}");
}

#[test]
fn overwrite_false_vs_true() {
    let r = root();
    put(r.path(), "/etc/foo", "old");
    let e = apply_err(
        r.path(),
        json!({"storage": {"files": [file("/etc/foo", "data:,new")]}}),
    );
    assert!(
        e.contains("file exists at /etc/foo and overwrite is false"),
        "{e}"
    );
    assert!(e.contains("storage.files[0]"), "{e}");
    assert_eq!(read(r.path(), "/etc/foo"), "old");

    let mut f = file("/etc/foo", "data:,new");
    f["overwrite"] = json!(true);
    apply(r.path(), json!({"storage": {"files": [f]}})).expect("apply");
    assert_eq!(read(r.path(), "/etc/foo"), "new");

    // Without a source an existing file is left alone (mode fixed up).
    let f = json!({"path": "/etc/foo", "mode": 416});
    let log = apply(r.path(), json!({"storage": {"files": [f]}})).expect("apply");
    assert_eq!(read(r.path(), "/etc/foo"), "new");
    assert_eq!(mode(r.path(), "/etc/foo"), 0o640);
    assert!(log.contains("kept existing /etc/foo"), "{log}");

    // overwrite without a source is invalid, like in Ignition.
    let f = json!({"path": "/etc/foo", "overwrite": true});
    let e = parse_err(&cfg(json!({"storage": {"files": [f]}}))).to_string();
    assert!(e.contains("storage.files[0].overwrite"), "{e}");

    // Overwriting a directory with a file.
    fs::create_dir_all(r.path().join("d/sub")).expect("mkdir");
    let mut f = file("/d", "data:,file");
    f["overwrite"] = json!(true);
    apply(r.path(), json!({"storage": {"files": [f]}})).expect("apply");
    assert_eq!(read(r.path(), "/d"), "file");
    // No temp files left behind.
    let names: Vec<_> = fs::read_dir(r.path().join("etc"))
        .expect("ls")
        .flatten()
        .collect();
    assert_eq!(names.len(), 1);
}

#[test]
fn relative_and_dotdot_paths_rejected() {
    for p in ["etc/foo", "/etc/../../foo", "/"] {
        let e = parse_err(&cfg(json!({"storage": {"files": [file(p, "data:,x")]}}))).to_string();
        assert!(e.contains("storage.files[0].path"), "{p}: {e}");
    }
    let dup =
        json!({"storage": {"files": [file("/a", "data:,x")], "directories": [{"path": "/a"}]}});
    let e = parse_err(&cfg(dup)).to_string();
    assert!(
        e.contains("storage.directories[0].path") && e.contains("duplicate"),
        "{e}"
    );
}

#[test]
fn ownership_by_id_and_name() {
    let r = root();
    let (uid, gid) = ids(r.path());
    put(
        r.path(),
        "/etc/passwd",
        &format!("root:x:0:0::/root:/bin/sh\ncore:x:{uid}:{gid}::/home/core:/bin/bash\n"),
    );
    put(
        r.path(),
        "/etc/group",
        &format!("root:x:0:\ncore:x:{gid}:\n"),
    );
    let f1 = json!({"path": "/by-name", "contents": {"source": "data:,x"},
        "user": {"name": "core"}, "group": {"name": "core"}});
    let f2 = json!({"path": "/by-id", "contents": {"source": "data:,x"},
        "user": {"id": uid}, "group": {"id": gid}});
    apply(r.path(), json!({"storage": {"files": [f1, f2]}})).expect("apply");
    assert_eq!(ids(&r.path().join("by-name")), (uid, gid));
    assert_eq!(ids(&r.path().join("by-id")), (uid, gid));

    let f = json!({"path": "/x", "user": {"name": "nobody-here"}});
    let e = apply_err(r.path(), json!({"storage": {"files": [f]}}));
    assert!(
        e.contains("storage.files[0].user.name") && e.contains("nobody-here"),
        "{e}"
    );
    let f = json!({"path": "/x", "group": {"id": 1, "name": "core"}});
    let e = parse_err(&cfg(json!({"storage": {"files": [f]}}))).to_string();
    assert!(e.contains("storage.files[0].group"), "{e}");
}

#[test]
fn chown_to_root_really_happens_when_root() {
    let r = root();
    if ids(r.path()).0 != 0 {
        return; // needs privileges
    }
    put(
        r.path(),
        "/etc/passwd",
        "root:x:0:0::/root:/bin/sh\nsvc:x:1234:1235::/:/bin/false\n",
    );
    put(r.path(), "/etc/group", "root:x:0:\nsvc:x:1235:\n");
    let f = json!({"path": "/owned", "contents": {"source": "data:,x"},
        "user": {"name": "svc"}, "group": {"name": "svc"}, "mode": 2541});
    apply(r.path(), json!({"storage": {"files": [f]}})).expect("apply");
    assert_eq!(ids(&r.path().join("owned")), (1234, 1235));
    assert_eq!(
        mode(r.path(), "/owned"),
        0o4755,
        "setuid survives the chown"
    );
}

// ---------------------------------------------------------- directories

#[test]
fn directories() {
    let r = root();
    let dirs = json!([{"path": "/var/lib/app/data"}, {"path": "/var/lib/app/data"}]);
    let e = parse_err(&cfg(json!({"storage": {"directories": dirs}}))).to_string();
    assert!(e.contains("duplicate"), "{e}");

    fs::create_dir(r.path().join("existing")).expect("mkdir");
    let dirs = json!([{"path": "/var/lib/app/data"}, {"path": "/existing", "mode": 457}]);
    let log = apply(r.path(), json!({"storage": {"directories": dirs}})).expect("apply");
    assert!(r.path().join("var/lib/app/data").is_dir());
    assert_eq!(mode(r.path(), "/var/lib/app/data"), 0o755);
    assert_eq!(mode(r.path(), "/var/lib"), 0o755);
    assert_eq!(mode(r.path(), "/existing"), 0o711);
    assert!(
        log.contains("created directory /var/lib/app/data (mode 0755)"),
        "{log}"
    );

    put(r.path(), "/notdir", "x");
    let e = apply_err(
        r.path(),
        json!({"storage": {"directories": [{"path": "/notdir"}]}}),
    );
    assert!(
        e.contains("storage.directories[0]") && e.contains("overwrite is false"),
        "{e}"
    );
    let d = json!({"path": "/notdir", "overwrite": true});
    apply(r.path(), json!({"storage": {"directories": [d]}})).expect("apply");
    assert!(r.path().join("notdir").is_dir());
}

// ---------------------------------------------------------------- links

#[test]
fn symlinks() {
    let r = root();
    let l = json!({"path": "/etc/localtime", "target": "/usr/share/zoneinfo/UTC"});
    let log = apply(r.path(), json!({"storage": {"links": [l.clone()]}})).expect("apply");
    assert_eq!(link(r.path(), "/etc/localtime"), "/usr/share/zoneinfo/UTC");
    assert!(
        log.contains("created symlink /etc/localtime -> /usr/share/zoneinfo/UTC"),
        "{log}"
    );
    // Same target again: fine, even without overwrite.
    apply(r.path(), json!({"storage": {"links": [l]}})).expect("idempotent");

    let l = json!({"path": "/etc/localtime", "target": "/usr/share/zoneinfo/CET"});
    let e = apply_err(r.path(), json!({"storage": {"links": [l]}}));
    assert!(
        e.contains("storage.links[0]") && e.contains("overwrite is false"),
        "{e}"
    );
    let l =
        json!({"path": "/etc/localtime", "target": "/usr/share/zoneinfo/CET", "overwrite": true});
    apply(r.path(), json!({"storage": {"links": [l]}})).expect("apply");
    assert_eq!(link(r.path(), "/etc/localtime"), "/usr/share/zoneinfo/CET");

    let l = json!({"path": "/rel", "target": "relative/target"});
    apply(r.path(), json!({"storage": {"links": [l]}})).expect("apply");
    assert_eq!(link(r.path(), "/rel"), "relative/target");

    let e = parse_err(&cfg(json!({"storage": {"links": [{"path": "/x"}]}}))).to_string();
    assert!(e.contains("storage.links[0].target"), "{e}");
}

#[test]
fn hard_links() {
    let r = root();
    let files = json!([file("/data/orig", "data:,shared")]);
    let links = json!([{"path": "/data/hard", "target": "/data/orig", "hard": true}]);
    apply(
        r.path(),
        json!({"storage": {"files": files, "links": links.clone()}}),
    )
    .expect("apply");
    let a = fs::metadata(r.path().join("data/orig")).expect("stat");
    let b = fs::metadata(r.path().join("data/hard")).expect("stat");
    assert_eq!(a.ino(), b.ino());
    assert_eq!(read(r.path(), "/data/hard"), "shared");
    // Already the same inode: fine.
    apply(r.path(), json!({"storage": {"links": links}})).expect("idempotent");
    let bad = json!([{"path": "/h", "target": "rel", "hard": true}]);
    let e = parse_err(&cfg(json!({"storage": {"links": bad}}))).to_string();
    assert!(e.contains("storage.links[0].target"), "{e}");
}

// ---------------------------------------------------------------- units

const SVC: &str = "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\nWantedBy=default.target \\\n  other.target\nRequiredBy=foo.target\nAlias=alias.service\n";

#[test]
fn unit_contents_dropins_enable_preset() {
    let r = root();
    let units = json!([{"name": "app.service", "enabled": true, "contents": SVC,
        "dropins": [{"name": "10-env.conf", "contents": "[Service]\nEnvironment=A=1\n"}]}]);
    let log = apply(r.path(), json!({"systemd": {"units": units}})).expect("apply");
    let s = "/etc/systemd/system";
    assert_eq!(read(r.path(), &format!("{s}/app.service")), SVC);
    assert_eq!(mode(r.path(), &format!("{s}/app.service")), 0o644);
    assert_eq!(
        read(r.path(), &format!("{s}/app.service.d/10-env.conf")),
        "[Service]\nEnvironment=A=1\n"
    );
    for t in [
        "multi-user.target.wants",
        "default.target.wants",
        "other.target.wants",
        "foo.target.requires",
    ] {
        assert_eq!(
            link(r.path(), &format!("{s}/{t}/app.service")),
            "/etc/systemd/system/app.service"
        );
    }
    assert_eq!(
        link(r.path(), &format!("{s}/alias.service")),
        "/etc/systemd/system/app.service"
    );
    assert!(
        log.contains("minisno-ignition: enabled app.service (multi-user.target.wants)"),
        "{log}"
    );
    assert_eq!(
        read(r.path(), "/etc/systemd/system-preset/20-ignition.preset"),
        "enable app.service\n"
    );
    assert!(
        log.contains("(0 files, 0 dirs, 0 links, 1 units, 0 users)"),
        "{log}"
    );

    // Disabling removes the links again.
    let units = json!([{"name": "app.service", "enabled": false}]);
    apply(r.path(), json!({"systemd": {"units": units}})).expect("apply");
    assert!(!exists(
        r.path(),
        &format!("{s}/multi-user.target.wants/app.service")
    ));
    assert!(!exists(r.path(), &format!("{s}/alias.service")));
    assert!(exists(r.path(), &format!("{s}/app.service")));
    assert_eq!(
        read(r.path(), "/etc/systemd/system-preset/20-ignition.preset"),
        "disable app.service\n"
    );
}

#[test]
fn enable_vendor_unit_and_instance() {
    let r = root();
    put(
        r.path(),
        "/usr/lib/systemd/system/sshd.service",
        "[Install]\nWantedBy=multi-user.target\n",
    );
    put(
        r.path(),
        "/lib/systemd/system/getty@.service",
        "[Install]\nWantedBy=getty.target\n",
    );
    let units = json!([{"name": "sshd.service", "enabled": true},
                       {"name": "getty@tty2.service", "enabled": true}]);
    apply(r.path(), json!({"systemd": {"units": units}})).expect("apply");
    let s = "/etc/systemd/system";
    assert_eq!(
        link(
            r.path(),
            &format!("{s}/multi-user.target.wants/sshd.service")
        ),
        "/usr/lib/systemd/system/sshd.service"
    );
    assert_eq!(
        link(
            r.path(),
            &format!("{s}/getty.target.wants/getty@tty2.service")
        ),
        "/lib/systemd/system/getty@.service"
    );
    let preset = read(r.path(), "/etc/systemd/system-preset/20-ignition.preset");
    assert_eq!(preset, "enable sshd.service\nenable getty@tty2.service\n");
}

#[test]
fn mask_and_unmask() {
    let r = root();
    let units = json!([{"name": "zincati.service", "mask": true}]);
    let log = apply(r.path(), json!({"systemd": {"units": units}})).expect("apply");
    assert_eq!(
        link(r.path(), "/etc/systemd/system/zincati.service"),
        "/dev/null"
    );
    assert!(log.contains("masked zincati.service"), "{log}");
    assert!(!exists(
        r.path(),
        "/etc/systemd/system-preset/20-ignition.preset"
    ));
    // Enabling a masked unit fails.
    let units = json!([{"name": "zincati.service", "enabled": true}]);
    let e = apply_err(r.path(), json!({"systemd": {"units": units}}));
    assert!(e.contains("masked"), "{e}");
    let units = json!([{"name": "zincati.service", "mask": false}]);
    apply(r.path(), json!({"systemd": {"units": units}})).expect("apply");
    assert!(!exists(r.path(), "/etc/systemd/system/zincati.service"));
    let units = json!([{"name": "x.service", "mask": true, "contents": "[Unit]\n"}]);
    let e = parse_err(&cfg(json!({"systemd": {"units": units}}))).to_string();
    assert!(e.contains("systemd.units[0].mask"), "{e}");
}

#[test]
fn enable_without_install_section_fails() {
    let r = root();
    let units = json!([{"name": "oneshot.service", "enabled": true, "contents": "[Service]\nExecStart=/bin/true\n"}]);
    let e = apply_err(r.path(), json!({"systemd": {"units": units}}));
    assert!(
        e.contains("unit oneshot.service has no [Install] section; cannot enable"),
        "{e}"
    );
    assert!(e.contains("systemd.units[0].enabled"), "{e}");
    let units = json!([{"name": "missing.service", "enabled": true}]);
    let e = apply_err(r.path(), json!({"systemd": {"units": units}}));
    assert!(e.contains("not found"), "{e}");
    let units = json!([{"name": "tmpl@.service", "enabled": true, "contents": SVC}]);
    let e = apply_err(r.path(), json!({"systemd": {"units": units}}));
    assert!(e.contains("template unit"), "{e}");
    // Disabling an unknown unit is a no-op.
    let units = json!([{"name": "missing.service", "enabled": false}]);
    apply(r.path(), json!({"systemd": {"units": units}})).expect("apply");
}

#[test]
fn bad_unit_and_dropin_names() {
    for (units, path) in [
        (json!([{"name": "foo"}]), "systemd.units[0].name"),
        (json!([{"name": "../x.service"}]), "systemd.units[0].name"),
        (
            json!([{"name": "a.service", "dropins": [{"name": "x.txt", "contents": ""}]}]),
            "systemd.units[0].dropins[0].name",
        ),
    ] {
        let e = parse_err(&cfg(json!({"systemd": {"units": units}}))).to_string();
        assert!(e.contains(path), "{e}");
    }
}

#[test]
fn install_section_parsing() {
    let text = "# c\n[Unit]\nWantedBy=not-install.target\n[Install]\n; comment\nWantedBy=a.target b.target\nWantedBy=\nWantedBy=c.target \\\n d.target\nAlias=x.service\nAlso=y.service\nDefaultInstance=z\n";
    let inst = parse_install(text).expect("install");
    assert_eq!(inst.wanted_by, vec!["c.target", "d.target"]);
    assert_eq!(inst.alias, vec!["x.service"]);
    assert_eq!(inst.also, vec!["y.service"]);
    assert!(inst.required_by.is_empty());
    assert!(parse_install("[Service]\nExecStart=/x\n").is_none());
}

// ---------------------------------------------------------------- users

fn fake_etc(root: &Path) -> (u32, u32) {
    let (uid, gid) = ids(root);
    put(root, "/etc/passwd", &format!("root:x:0:0:root:/root:/bin/bash\ncore:x:{uid}:{gid}:CoreOS Admin:/var/home/core:/bin/bash\n"));
    put(
        root,
        "/etc/shadow",
        "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n",
    );
    put(
        root,
        "/etc/group",
        &format!("root:x:0:\nwheel:x:10:alice\nsudo:x:27:\ncore:x:{gid}:\n"),
    );
    put(
        root,
        "/etc/gshadow",
        "root:::\nwheel:::alice\nsudo:::\ncore:!::\n",
    );
    fs::set_permissions(root.join("etc/shadow"), fs::Permissions::from_mode(0o400)).expect("chmod");
    (uid, gid)
}

#[test]
fn users_keys_password_groups() {
    let r = root();
    let (uid, gid) = fake_etc(r.path());
    let users = json!([{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA one", "ssh-rsa BBBB two\n"],
        "passwordHash": "$6$salt$hash", "groups": ["wheel", "sudo"]}]);
    let log = apply(r.path(), json!({"passwd": {"users": users}})).expect("apply");
    let want = "ssh-ed25519 AAAA one\nssh-rsa BBBB two\n";
    assert_eq!(read(r.path(), "/var/home/core/.ssh/authorized_keys"), want);
    assert_eq!(
        read(r.path(), "/var/home/core/.ssh/authorized_keys.d/ignition"),
        want
    );
    assert_eq!(mode(r.path(), "/var/home/core/.ssh"), 0o700);
    assert_eq!(mode(r.path(), "/var/home/core/.ssh/authorized_keys"), 0o600);
    assert_eq!(
        mode(r.path(), "/var/home/core/.ssh/authorized_keys.d/ignition"),
        0o600
    );
    assert_eq!(
        ids(&r.path().join("var/home/core/.ssh/authorized_keys")),
        (uid, gid)
    );
    assert!(log.contains("wrote 2 ssh key(s) for user core"), "{log}");
    assert_eq!(
        read(r.path(), "/etc/shadow"),
        "root:*:19000:0:99999:7:::\ncore:$6$salt$hash:19000:0:99999:7:::\n"
    );
    assert_eq!(mode(r.path(), "/etc/shadow"), 0o400);
    let group = read(r.path(), "/etc/group");
    assert!(
        group.contains("\nwheel:x:10:alice,core\n") && group.contains("\nsudo:x:27:core\n"),
        "{group}"
    );
    let gshadow = read(r.path(), "/etc/gshadow");
    assert!(
        gshadow.contains("\nwheel:::alice,core\n") && gshadow.contains("\nsudo:::core\n"),
        "{gshadow}"
    );
    assert!(
        log.contains("(0 files, 0 dirs, 0 links, 0 units, 1 users)"),
        "{log}"
    );

    // Re-applying does not duplicate group membership.
    let users = json!([{"name": "core", "groups": ["wheel"]}]);
    apply(r.path(), json!({"passwd": {"users": users}})).expect("apply");
    assert!(read(r.path(), "/etc/group").contains("\nwheel:x:10:alice,core\n"));
}

#[test]
fn user_errors() {
    let r = root();
    fake_etc(r.path());
    let users = json!([{"name": "bob", "sshAuthorizedKeys": ["ssh-ed25519 AAAA"]}]);
    let e = apply_err(r.path(), json!({"passwd": {"users": users}}));
    assert!(
        e.contains("user bob does not exist; minisno-ignition cannot create users"),
        "{e}"
    );
    assert!(e.contains("passwd.users[0].name"), "{e}");
    let users = json!([{"name": "core", "groups": ["docker"]}]);
    let e = apply_err(r.path(), json!({"passwd": {"users": users}}));
    assert!(
        e.contains("passwd.users[0].groups[0]") && e.contains("docker"),
        "{e}"
    );
    let users = json!([{"name": "core", "passwordHash": "a:b"}]);
    let e = parse_err(&cfg(json!({"passwd": {"users": users}}))).to_string();
    assert!(e.contains("passwd.users[0].passwordHash"), "{e}");
}

// ---------------------------------------------------------------- errors

#[test]
fn unknown_keys_name_their_dotted_path() {
    let cases = [
        (
            json!({"kernelArguments": {"shouldExist": ["x"]}}),
            "kernelArguments",
        ),
        (
            json!({"storage": {"filesystems": []}}),
            "storage.filesystems",
        ),
        (json!({"storage": {"disks": []}}), "storage.disks"),
        (json!({"passwd": {"groups": []}}), "passwd.groups"),
        (
            json!({"systemd": {"units": [{"name": "a.service", "foo": 1}]}}),
            "systemd.units[0].foo",
        ),
        (
            json!({"passwd": {"users": [{"name": "core", "uid": 1000}]}}),
            "passwd.users[0].uid",
        ),
        (
            json!({"passwd": {"users": [{"name": "core", "homeDir": "/x"}]}}),
            "passwd.users[0].homeDir",
        ),
        (
            json!({"storage": {"files": [{"path": "/a", "contents": {"httpHeaders": []}}]}}),
            "storage.files[0].contents.httpHeaders",
        ),
        (
            json!({"storage": {"files": [{"path": "/a", "contents": {"verification": {"x": 1}}}]}}),
            "storage.files[0].contents.verification.x",
        ),
        (
            json!({"storage": {"files": [{"path": "/a", "user": {"uid": 1}}]}}),
            "storage.files[0].user.uid",
        ),
        (
            json!({"storage": {"links": [{"path": "/a", "target": "/b", "filesystem": "root"}]}}),
            "storage.links[0].filesystem",
        ),
        (
            json!({"systemd": {"units": [{"name": "a.service", "dropins": [{"name": "a.conf", "x": 1}]}]}}),
            "systemd.units[0].dropins[0].x",
        ),
    ];
    for (body, path) in cases {
        let e = parse_err(&cfg(body));
        assert!(matches!(e, Error::UnknownKey { .. }), "{path}: {e}");
        let msg = e.to_string();
        assert!(msg.contains(&format!("`{path}`")), "{path}: {msg}");
        assert!(msg.contains("unsupported Ignition key"), "{msg}");
        assert!(msg.contains("minisno-ignition supports: ignition.version, storage.files, storage.directories, storage.links, systemd.units, passwd.users"), "{msg}");
    }
    for key in ["config", "timeouts", "security", "proxy"] {
        let text = json!({"ignition": {"version": "3.4.0", key: {}}}).to_string();
        let msg = parse_err(&text).to_string();
        assert!(msg.contains(&format!("`ignition.{key}`")), "{msg}");
    }
}

#[test]
fn versions() {
    for v in ["2.2.0", "3.5.0", "3.5.0-experimental", "4.0.0", "3.4"] {
        let text = json!({"ignition": {"version": v}}).to_string();
        let msg = parse_err(&text).to_string();
        assert!(
            msg.contains("ignition.version") && msg.contains("unsupported config version"),
            "{msg}"
        );
    }
    // A 2.x config fails on the version, not on its 2.x-only keys.
    let v2 = json!({"ignition": {"version": "2.2.0"}, "storage": {"files": [{"filesystem": "root", "path": "/a"}]}});
    assert!(parse_err(&v2.to_string())
        .to_string()
        .contains("ignition.version"));
    for v in ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0"] {
        parse(&json!({"ignition": {"version": v}}).to_string()).expect(v);
    }
    assert!(parse_err("{}").to_string().contains("ignition.version"));
    assert!(parse_err(r#"{"ignition":{"version":3}}"#)
        .to_string()
        .contains("ignition.version"));
}

#[test]
fn non_data_urls_rejected() {
    for src in [
        "http://example.com/x",
        "https://example.com/x",
        "s3://b/k",
        "tftp://h/f",
        "gs://b/o",
        "/local/path",
    ] {
        let body = json!({"storage": {"files": [file("/x", src)]}});
        let msg = parse_err(&cfg(body)).to_string();
        assert!(msg.contains("only data: URLs are supported"), "{msg}");
        assert!(msg.contains("storage.files[0].contents.source"), "{msg}");
    }
    let body = json!({"storage": {"files": [{"path": "/x", "append": [{"source": "http://x"}]}]}});
    assert!(parse_err(&cfg(body))
        .to_string()
        .contains("storage.files[0].append[0].source"));
    let body = json!({"storage": {"files": [file("/x", "data:;base64,!!!")]}});
    assert!(parse_err(&cfg(body)).to_string().contains("base64"));
}

#[test]
fn garbage_input_never_panics() {
    for text in [
        "",
        "null",
        "[]",
        "\"x\"",
        "{",
        r#"{"ignition":null}"#,
        r#"{"ignition":{"version":"3.4.0"},"storage":null,"systemd":[],"passwd":1}"#,
        r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[null]}}"#,
        r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/a","mode":-1}]}}"#,
        r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:"}}]}}"#,
    ] {
        let _ = parse(text);
    }
    let msg = parse_err(
        r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/a","mode":-1}]}}"#,
    )
    .to_string();
    assert!(msg.contains("storage.files[0].mode"), "{msg}");
}

// ---------------------------------------------------------------- CLI

fn run(args: &[&str]) -> (i32, String, String) {
    let mut argv: Vec<OsString> = vec!["minisno-ignition".into()];
    argv.extend(args.iter().map(OsString::from));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = cli(&argv, &mut out, &mut err);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

#[test]
fn cli_check_and_apply() {
    let r = root();
    let cfgfile = r.path().join("config.json");
    let sysroot = r.path().join("sysroot");
    fs::create_dir(&sysroot).expect("mkdir");
    let (uid, gid) = ids(r.path());
    let f = json!({"path": "/etc/hostname", "contents": {"source": "data:,minisno%0A"},
        "user": {"id": uid}, "group": {"id": gid}});
    fs::write(&cfgfile, cfg(json!({"storage": {"files": [f]}}))).expect("write");
    let c = cfgfile.to_str().expect("utf8");
    let (code, out, err) = run(&["check", c]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(
        out.contains("is valid (1 files, 0 dirs, 0 links, 0 units, 0 users)"),
        "{out}"
    );
    assert!(!sysroot.join("etc").exists());

    let rootarg = sysroot.to_str().expect("utf8");
    let (code, out, err) = run(&["apply", "--root", rootarg, c]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wrote /etc/hostname (mode 0644)"), "{out}");
    assert!(
        out.ends_with(
            "minisno-ignition: applied config (1 files, 0 dirs, 0 links, 0 units, 0 users)\n"
        ),
        "{out}"
    );
    assert_eq!(read(&sysroot, "/etc/hostname"), "minisno\n");

    // Second apply: file exists, overwrite false -> loud error, exit 1.
    let (code, _, err) = run(&["apply", &format!("--root={rootarg}"), c]);
    assert_eq!(code, 1);
    assert!(err.starts_with("minisno-ignition: ERROR:"), "{err}");
    assert!(
        err.lines()
            .all(|l| l.starts_with("minisno-ignition: ERROR:")),
        "{err}"
    );
    assert!(
        err.contains("offending JSON key: storage.files[0]"),
        "{err}"
    );

    fs::write(&cfgfile, cfg(json!({"storage": {"filesystems": []}}))).expect("write");
    let (code, _, err) = run(&["check", c]);
    assert_eq!(code, 1);
    assert!(
        err.contains("storage.filesystems") && err.contains("NOT accepted"),
        "{err}"
    );

    for bad in [
        &[][..],
        &["frobnicate", c][..],
        &["check"][..],
        &["apply", "--root"][..],
        &["check", c, c][..],
        &["check", "--bogus", c][..],
    ] {
        let (code, _, err) = run(bad);
        assert_eq!(code, 1, "{bad:?}");
        assert!(err.contains("usage:"), "{err}");
    }
    let (code, _, err) = run(&["check", "/nonexistent/config.json"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read config file"), "{err}");
    let (code, _, err) = run(&["apply", "--root", "/nonexistent-root-dir", c]);
    assert_eq!(code, 1);
    assert!(
        err.contains("storage.filesystems"),
        "config errors come first: {err}"
    );
}

#[test]
fn cli_bad_root() {
    let r = root();
    let cfgfile = r.path().join("c.json");
    fs::write(&cfgfile, cfg(json!({}))).expect("write");
    let (code, _, err) = run(&[
        "apply",
        "--root",
        "/nonexistent-root-dir",
        cfgfile.to_str().expect("utf8"),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("bad --root"), "{err}");
}
