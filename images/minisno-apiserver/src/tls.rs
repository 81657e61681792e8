//! The serving certificate (made at startup, signed by the cluster CA) and the rustls server
//! configuration that demands a client certificate chaining to that CA.

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;

use crate::config::Config;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}: {source}")]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("CA key {path}: {source} (it must be a PKCS#8 \"PRIVATE KEY\" PEM)")]
    CaKey {
        path: std::path::PathBuf,
        source: rcgen::Error,
    },
    #[error("CA certificate {path}: {reason}")]
    CaCert {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("making the serving certificate: {0}")]
    Generate(rcgen::Error),
    #[error("extra SAN {san:?}: {source}")]
    San { san: String, source: rcgen::Error },
    #[error("rustls: {0}")]
    Rustls(String),
}

/// Every IP address of the host's interfaces.
pub fn host_ips() -> Vec<IpAddr> {
    let mut ips: Vec<IpAddr> = if_addrs::get_if_addrs()
        .map(|ifs| ifs.into_iter().map(|i| i.ip()).collect())
        .unwrap_or_default();
    ips.sort();
    ips.dedup();
    ips
}

/// The serving certificate's subject alternative names, as strings.
pub fn serving_sans(config: &Config, host_ips: &[IpAddr]) -> Vec<String> {
    let mut sans = vec![
        config.api_host(),
        config.api_int_host(),
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    sans.extend(host_ips.iter().map(|ip| ip.to_string()));
    sans.extend(config.extra_sans.iter().cloned());
    let mut seen = std::collections::HashSet::new();
    sans.retain(|s| seen.insert(s.clone()));
    sans
}

fn san_type(s: &str) -> Result<SanType, TlsError> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Ok(SanType::IpAddress(ip));
    }
    s.to_string()
        .try_into()
        .map(SanType::DnsName)
        .map_err(|source| TlsError::San {
            san: s.to_string(),
            source,
        })
}

/// A serving certificate chain (leaf, CA) and its key.
pub struct ServingCert {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    pub ca: CertificateDer<'static>,
    pub sans: Vec<String>,
}

fn read(path: &std::path::Path) -> Result<String, TlsError> {
    std::fs::read_to_string(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Makes the serving certificate, signed by the CA named in the config.
pub fn make_serving_cert(config: &Config, host_ips: &[IpAddr]) -> Result<ServingCert, TlsError> {
    let ca_pem = read(&config.ca_cert)?;
    let ca_key_pem = read(&config.ca_key)?;
    let ca_key = KeyPair::from_pem(&ca_key_pem).map_err(|source| TlsError::CaKey {
        path: config.ca_key.clone(),
        source,
    })?;
    let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(|e| TlsError::CaCert {
        path: config.ca_cert.clone(),
        reason: e.to_string(),
    })?;
    let issuer = Issuer::from_ca_cert_der(&ca, ca_key).map_err(|e| TlsError::CaCert {
        path: config.ca_cert.clone(),
        reason: e.to_string(),
    })?;

    let sans = serving_sans(config, host_ips);
    let mut params = CertificateParams::default();
    params.subject_alt_names = sans.iter().map(|s| san_type(s)).collect::<Result<_, _>>()?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, config.api_host());
    dn.push(DnType::OrganizationName, "minisno (a test fixture)");
    params.distinguished_name = dn;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let now = std::time::SystemTime::now();
    params.not_before = (now - std::time::Duration::from_secs(3600)).into();
    params.not_after = (now + std::time::Duration::from_secs(3650 * 24 * 3600)).into();

    let key = KeyPair::generate().map_err(TlsError::Generate)?;
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(TlsError::Generate)?;
    Ok(ServingCert {
        chain: vec![cert.der().clone(), ca.clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        ca,
        sans,
    })
}

/// rustls server config: the serving certificate, client certificates required and verified
/// against the CA (the only root), HTTP/1.1 over ALPN.
pub fn server_config(cert: &ServingCert) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(cert.ca.clone())
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Rustls(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(cert.chain.clone(), cert.key.clone_key())
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
