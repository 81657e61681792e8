//! Resolving a `contents` / `append` resource: data URL decoding, gzip
//! decompression and hash verification (of the decompressed data).

use std::io::Read;

use data_url::DataUrl;
use sha2::{Digest, Sha256, Sha512};

use crate::error::Result;
use crate::resource::Resource;

/// The bytes a resource describes; `jp` is its JSON path.
pub fn fetch(res: &Resource, jp: &str) -> Result<Vec<u8>> {
    let jsrc = format!("{jp}.source");
    let raw = match &res.source {
        None => Vec::new(),
        Some(src) => decode_url(src, &jsrc)?,
    };
    let data = match res.compression.as_deref() {
        None | Some("") => raw,
        Some("gzip") => {
            let mut out = Vec::new();
            let r = flate2::read::GzDecoder::new(raw.as_slice()).read_to_end(&mut out);
            ensure!(
                r.is_ok(),
                jsrc,
                "contents are not valid gzip data: {:?}",
                r.err()
            );
            out
        }
        Some(other) => fail!(
            Invalid,
            format!("{jp}.compression"),
            "unsupported compression {other:?} (supported: \"gzip\" or none)"
        ),
    };
    if let Some(hash) = res.verification.as_ref().and_then(|v| v.hash.as_deref()) {
        verify(hash, &data, &format!("{jp}.verification.hash"))?;
    }
    Ok(data)
}

fn decode_url(src: &str, jp: &str) -> Result<Vec<u8>> {
    let scheme = src.split_once(':').map_or(src, |(s, _)| s);
    let data = scheme.eq_ignore_ascii_case("data");
    ensure!(
        data,
        jp,
        "unsupported URL {scheme:?}: only data: URLs are supported (no http, https, s3, tftp, gs)"
    );
    let url = match DataUrl::process(src) {
        Ok(url) => url,
        Err(e) => fail!(Invalid, jp, "malformed data: URL: {e:?}"),
    };
    match url.decode_to_vec() {
        Ok((body, _fragment)) => Ok(body),
        Err(e) => fail!(Invalid, jp, "malformed base64 in data: URL: {e:?}"),
    }
}

fn verify(spec: &str, data: &[u8], jp: &str) -> Result<()> {
    let (kind, want) = spec.split_once('-').unwrap_or((spec, ""));
    let got = match kind {
        "sha512" => hex::encode(Sha512::digest(data)),
        "sha256" => hex::encode(Sha256::digest(data)),
        _ => fail!(
            Invalid,
            jp,
            "unsupported hash function in {spec:?} (supported: sha512-<hex>, sha256-<hex>)"
        ),
    };
    let well_formed = hex::decode(want).is_ok_and(|w| w.len() * 2 == got.len());
    ensure!(well_formed, jp, "malformed hash value in {spec:?}");
    let ok = got.eq_ignore_ascii_case(want);
    ensure!(
        ok,
        jp,
        "hash verification failed (calculated {kind}-{got} but expected {spec})"
    );
    Ok(())
}
