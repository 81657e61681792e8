//! Mutual TLS: the admin certificate works (by name and by IP SAN); no certificate, or one
//! from another CA, is refused at the handshake.

mod common;

use common::*;

async fn version(yaml: &str) -> Result<String, String> {
    let client = client_from_yaml(yaml).await?;
    client
        .apiserver_version()
        .await
        .map(|v| v.git_version)
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn only_clients_with_a_certificate_from_the_ca_get_in() {
    let fx = Fixture::start(&[]).await;
    let admin = Some((fx.pki.admin_cert.as_path(), fx.pki.admin_key.as_path()));

    // positive controls: the SANs the serving certificate must carry
    for name in [
        Some(SERVER_NAME),
        Some("api-int.sno.example.test"),
        Some("api.extra.example.test"),
        Some("localhost"),
        None, // 127.0.0.1 as an IP SAN
    ] {
        let yaml = kubeconfig(&fx.url(), &fx.pki.ca_cert, admin, name);
        let v = version(&yaml).await;
        assert_eq!(v.as_deref(), Ok("v1.30.4-minisno"), "server name {name:?}");
    }
    // a name the certificate does not carry is refused by the client
    let yaml = kubeconfig(&fx.url(), &fx.pki.ca_cert, admin, Some("api.other.test"));
    assert!(version(&yaml).await.is_err());

    // no client certificate at all
    let yaml = kubeconfig(&fx.url(), &fx.pki.ca_cert, None, Some(SERVER_NAME));
    let err = version(&yaml).await.unwrap_err();
    println!("without a client certificate: {err}");

    // a client certificate from a different CA
    let other = Pki::new(&fx.dir.path().join("other-pki"));
    let yaml = kubeconfig(
        &fx.url(),
        &fx.pki.ca_cert,
        Some((&other.admin_cert, &other.admin_key)),
        Some(SERVER_NAME),
    );
    let err = version(&yaml).await.unwrap_err();
    println!("with a certificate from another CA: {err}");

    // and the server is still fine afterwards
    let yaml = kubeconfig(&fx.url(), &fx.pki.ca_cert, admin, Some(SERVER_NAME));
    assert!(version(&yaml).await.is_ok());
    fx.running.stop().await;
}

#[tokio::test]
async fn a_plain_tls_client_without_certificate_is_refused_at_the_handshake() {
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let fx = Fixture::start(&[]).await;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    let ca_pem = std::fs::read(&fx.pki.ca_cert).unwrap();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(&ca_pem).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(fx.running.local_addr)
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from(SERVER_NAME).unwrap();
    // with TLS 1.3 the client may finish its side before the server's refusal arrives, so the
    // refusal shows up at the handshake or at the first read at the latest
    let outcome = match connector.connect(name, tcp).await {
        Err(e) => Err(e.to_string()),
        Ok(mut tls) => {
            let _ = tls
                .write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
                .await;
            let mut buf = Vec::new();
            match tls.read_to_end(&mut buf).await {
                Err(e) => Err(e.to_string()),
                Ok(_) if buf.is_empty() => Err("closed without an answer".to_string()),
                Ok(_) => Ok(String::from_utf8_lossy(&buf).into_owned()),
            }
        }
    };
    let err = outcome.expect_err("a client without a certificate got an HTTP answer");
    println!("plain TLS client without certificate: {err}");
    assert!(
        err.to_lowercase().contains("certificate") || err.contains("closed"),
        "{err}"
    );
    fx.running.stop().await;
}
