//! junit.xml against the Jenkins JUnit schema (tests/data/junit/jenkins-junit.xsd), checked by
//! xmllint (libxml2-utils, ci/host-programs.txt). The attributes the common consumers accept
//! beyond that schema, `EXTRAS`, are removed first, and only they: anything else the harness
//! or quick-junit writes beyond it fails the check.

use std::path::{Path, PathBuf};
use std::process::Command;

use quick_xml::events::{BytesStart, Event};

/// (element, attribute) written beyond the schema: quick-junit's count of skipped cases on
/// `testsuites`, and the start of each case (Jenkins, GitLab and OpenShift CI's tools read it).
pub const EXTRAS: [(&str, &str); 2] = [("testsuites", "skipped"), ("testcase", "timestamp")];

fn schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit/jenkins-junit.xsd")
}

/// `xml` with the attributes of `EXTRAS` removed, everything else as it was.
pub fn without_extras(xml: &str) -> String {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut writer = quick_xml::Writer::new(Vec::new());
    loop {
        let event = reader.read_event().expect("well-formed XML");
        let event = match event {
            Event::Eof => break,
            Event::Start(e) => Event::Start(stripped(&e)),
            Event::Empty(e) => Event::Empty(stripped(&e)),
            other => other,
        };
        writer.write_event(event).unwrap();
    }
    String::from_utf8(writer.into_inner()).unwrap()
}

fn stripped(e: &BytesStart<'_>) -> BytesStart<'static> {
    let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
    let mut out = BytesStart::new(name.clone());
    for a in e.attributes() {
        let a = a.unwrap();
        let key = String::from_utf8(a.key.as_ref().to_vec()).unwrap();
        if !EXTRAS.contains(&(name.as_str(), key.as_str())) {
            out.push_attribute(a);
        }
    }
    out
}

/// xmllint's verdict on `xml` (its extras removed): `Err` with what it said.
pub fn validate(xml: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("junit.xml");
    std::fs::write(&file, without_extras(xml)).unwrap();
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schema())
        .arg(&file)
        .output()
        .expect("running xmllint (libxml2-utils; ci/install-host-deps.sh installs it)");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Panics with xmllint's words and the document when `xml` does not validate.
pub fn assert_valid(xml: &str) {
    if let Err(why) = validate(xml) {
        panic!("junit.xml does not validate against the Jenkins JUnit schema:\n{why}\n{xml}");
    }
}

/// (case name, element, message) of every failure and error, in order.
pub fn non_successes(xml: &str) -> Vec<(String, String, String)> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut case = String::new();
    let mut found = Vec::new();
    loop {
        let e = match reader.read_event().unwrap() {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) => e,
            _ => continue,
        };
        let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
        let attr = |key: &str| {
            e.attributes()
                .map(|a| a.unwrap())
                .find(|a| a.key.as_ref() == key.as_bytes())
                .map(|a| {
                    a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .unwrap()
                        .into_owned()
                })
                .unwrap_or_default()
        };
        match name.as_str() {
            "testcase" => case = attr("name"),
            "failure" | "error" => found.push((case.clone(), name, attr("message"))),
            _ => {}
        }
    }
    found
}
