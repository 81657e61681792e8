//! An Ignition config with its secrets taken out, for gather/ and the published assets/.
//! master.ign carries the node's kubeconfigs, private keys, the pull secret and the bootstrap
//! log bundle as data URLs: every inline `source` is replaced by its size and media type, every
//! HTTP header value and password hash by a marker. What is left is the config's shape: which files, units, modes,
//! users and remote sources, which is what a reader of a failed install needs.

use serde_json::Value;

/// A config that is not JSON: what cannot be read cannot be redacted, so it is not kept. The
/// parser's words name a line and column, never the config's text.
#[derive(Debug, thiserror::Error)]
#[error("the config is not JSON ({0}); not kept, since it cannot be redacted")]
pub struct NotRedactable(#[source] serde_json::Error);

/// `bytes` (an Ignition config) redacted and pretty-printed.
pub fn redacted(bytes: &[u8]) -> Result<Vec<u8>, NotRedactable> {
    let mut v: Value = serde_json::from_slice(bytes).map_err(NotRedactable)?;
    redact(&mut v);
    let mut out = serde_json::to_vec_pretty(&v).expect("a JSON value serialises");
    out.push(b'\n');
    Ok(out)
}

fn redact(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                match (k.as_str(), &*val) {
                    ("source", Value::String(s)) if s.starts_with("data:") => {
                        *val = Value::String(data_url_marker(s));
                    }
                    ("httpHeaders", _) => redact_headers(val),
                    ("passwordHash", Value::String(_)) => {
                        *val = Value::String("<redacted>".into());
                    }
                    _ => redact(val),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// Header names stay; their values (tokens, basic auth) go.
fn redact_headers(v: &mut Value) {
    if let Value::Array(headers) = v {
        for h in headers {
            if let Some(value) = h.get_mut("value") {
                *value = Value::String("<redacted>".into());
            }
        }
    }
}

/// `data:;base64,AAAA...` as `<redacted data URL: 1234 characters, base64>`.
fn data_url_marker(s: &str) -> String {
    let header = s.split_once(',').map_or("", |(h, _)| h);
    let encoding = if header.ends_with(";base64") {
        ", base64"
    } else {
        ""
    };
    format!(
        "<redacted data URL: {} characters{encoding}>",
        s.len().saturating_sub(header.len() + 1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_contents_headers_and_password_hashes_go_and_the_shape_stays() {
        let config = serde_json::json!({
            "ignition": {"version": "3.2.0", "config": {"merge": [{
                "source": "https://api-int.sno.example.test:22623/config/master",
                "httpHeaders": [{"name": "Authorization", "value": "Bearer SECRET-TOKEN"}]
            }]}},
            "passwd": {"users": [{"name": "core", "passwordHash": "$6$SECRET",
                "sshAuthorizedKeys": ["ssh-ed25519 AAAA public"]}]},
            "storage": {"files": [
                {"path": "/etc/kubernetes/kubeconfig", "mode": 384,
                 "contents": {"source": "data:;base64,U0VDUkVULUtVQkVDT05GSUc="}},
                {"path": "/var/lib/kubelet/config.json", "mode": 384,
                 "contents": {"source": "data:,%7B%22auths%22%3ASECRET%7D"},
                 "append": [{"source": "data:text/plain;base64,U0VDUkVU"}]}
            ]},
            "systemd": {"units": [{"name": "kubelet.service", "enabled": true}]}
        });
        let out = redacted(config.to_string().as_bytes()).unwrap();
        let text = String::from_utf8(out).unwrap();
        for secret in ["SECRET", "U0VDUkVU"] {
            assert!(!text.contains(secret), "{secret} left in:\n{text}");
        }
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["storage"]["files"][0]["contents"]["source"],
            "<redacted data URL: 24 characters, base64>"
        );
        assert_eq!(
            v["storage"]["files"][1]["path"],
            "/var/lib/kubelet/config.json"
        );
        assert_eq!(v["storage"]["files"][1]["mode"], 384);
        assert_eq!(
            v["ignition"]["config"]["merge"][0]["source"],
            "https://api-int.sno.example.test:22623/config/master"
        );
        assert_eq!(
            v["ignition"]["config"]["merge"][0]["httpHeaders"][0]["name"],
            "Authorization"
        );
        assert_eq!(
            v["passwd"]["users"][0]["sshAuthorizedKeys"][0],
            "ssh-ed25519 AAAA public"
        );
        assert_eq!(v["systemd"]["units"][0]["name"], "kubelet.service");
    }

    #[test]
    fn a_config_that_is_not_json_is_not_kept() {
        let e = redacted(b"{\"storage\": SECRET").unwrap_err().to_string();
        assert!(e.contains("not kept"), "{e}");
        assert!(!e.contains("SECRET"), "{e}");
    }
}
