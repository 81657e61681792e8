//! https to the BMC: its certificate is trusted by a CA file or by its fingerprint, and
//! refused otherwise, saying why.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};

use super::fake_bmc::{FakeBmc, Faults};
use super::*;

/// A CA (its PEM) and a BMC certificate for 127.0.0.1 it signed, served by a fake BMC.
struct Signed {
    ca_pem: String,
    bmc_cert: CertificateDer<'static>,
    fake: FakeBmc,
}

async fn https_bmc() -> Signed {
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".into()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        )
        .unwrap();
    Signed {
        ca_pem: ca.pem(),
        bmc_cert: cert.der().clone(),
        fake: FakeBmc::start(Faults::default(), Some(Arc::new(config))).await,
    }
}

#[tokio::test]
async fn a_bmc_signed_by_the_named_ca_file_is_talked_to() {
    let s = https_bmc().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("bmc-ca.pem");
    std::fs::write(&ca, &s.ca_pem).unwrap();
    let mut settings = settings(s.fake.url("https"));
    settings.trust = Trust::CaFile(ca);
    let bmc = Bmc::connect(&settings).await.unwrap();
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::Off);
}

#[tokio::test]
async fn a_bmc_is_trusted_by_its_certificates_fingerprint_and_only_by_that() {
    let s = https_bmc().await;
    let mut settings = settings(s.fake.url("https"));
    settings.trust = Trust::Fingerprint(Fingerprint::of(&s.bmc_cert));
    Bmc::connect(&settings).await.unwrap();
    let wrong = Fingerprint([0xAB; 32]);
    settings.trust = Trust::Fingerprint(wrong);
    let e = Bmc::connect(&settings).await.err().unwrap();
    let Some(Problem::Tls(why)) = e.problem() else {
        panic!("{e:?}")
    };
    assert!(
        why.contains(&Fingerprint::of(&s.bmc_cert).to_string()),
        "{why}"
    );
    assert!(why.contains(&format!("not the {wrong} given")), "{why}");
}

#[tokio::test]
async fn a_self_signed_bmc_unknown_to_the_system_is_refused_saying_what_to_trust() {
    let s = https_bmc().await;
    let e = Bmc::connect(&settings(s.fake.url("https")))
        .await
        .err()
        .unwrap();
    let Some(Problem::Tls(why)) = e.problem() else {
        panic!("{e:?}")
    };
    assert!(why.contains("UnknownIssuer"), "{why}");
    assert!(
        why.contains("trust its CA file or its SHA-256 fingerprint"),
        "{why}"
    );
    assert!(s.fake.seen().is_empty(), "no request was sent");
}
