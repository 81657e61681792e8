use super::*;
use std::io::{Read, Write};

/// A file of `len` bytes that are not all alike, served at /rootfs.img.
async fn serving(
    len: usize,
    fault: Option<ServerFault>,
) -> (FileServer, Vec<u8>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
    let file = dir.path().join("rootfs.img");
    std::fs::write(&file, &data).unwrap();
    let server = FileServer::start("127.0.0.1:0".parse().unwrap(), fault)
        .await
        .unwrap();
    server.serve("/rootfs.img", file);
    (server, data, dir)
}

/// (status, content-length header, body) of one request, from a plain blocking client.
async fn request(server: &FileServer, method: &str, path: &str) -> (u16, Option<u64>, Vec<u8>) {
    request_at(server.addr(), method, path).await
}

async fn request_at(addr: SocketAddr, method: &str, path: &str) -> (u16, Option<u64>, Vec<u8>) {
    let url = format!("http://{addr}{path}");
    let method = method.to_string();
    tokio::task::spawn_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let req = http::Request::builder()
            .method(method.as_str())
            .uri(&url)
            .body(())
            .unwrap();
        let mut resp = agent.run(req).unwrap();
        let len = resp
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok()?.parse().ok());
        let mut body = Vec::new();
        if method != "HEAD" {
            resp.body_mut().as_reader().read_to_end(&mut body).unwrap();
        }
        (resp.status().as_u16(), len, body)
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_file_is_served_whole_by_get_and_by_length_to_head_and_every_request_is_reported() {
    let (mut server, data, _dir) = serving(3 * CHUNK + 17, None).await;
    let mut reports = server.take_reports().unwrap();
    let (status, len, body) = request(&server, "GET", "/rootfs.img").await;
    assert_eq!((status, len), (200, Some(data.len() as u64)));
    assert!(body == data, "the body is not the file");
    let got = reports.recv().await.unwrap();
    assert_eq!(
        (got.method.as_str(), got.path.as_str()),
        ("GET", "/rootfs.img")
    );
    assert_eq!((got.status, got.bytes), (200, data.len() as u64));

    let (status, len, _) = request(&server, "HEAD", "/rootfs.img").await;
    assert_eq!((status, len), (200, Some(data.len() as u64)));
    let got = reports.recv().await.unwrap();
    assert_eq!(
        (got.method.as_str(), got.status, got.bytes),
        ("HEAD", 200, 0)
    );

    assert_eq!(request(&server, "GET", "/other.img").await.0, 404);
    assert_eq!(reports.recv().await.unwrap().status, 404);
    assert_eq!(request(&server, "DELETE", "/rootfs.img").await.0, 405);
    assert_eq!(reports.recv().await.unwrap().status, 405);
}

#[tokio::test]
async fn the_404_fault_hides_every_file() {
    let (mut server, _data, _dir) = serving(1000, Some(ServerFault::NotFound)).await;
    let mut reports = server.take_reports().unwrap();
    assert_eq!(request(&server, "HEAD", "/rootfs.img").await.0, 404);
    assert_eq!(request(&server, "GET", "/rootfs.img").await.0, 404);
    for _ in 0..2 {
        let got = reports.recv().await.unwrap();
        assert_eq!((got.status, got.bytes), (404, 0), "{got:?}");
    }
}

#[tokio::test]
async fn the_corrupt_fault_changes_exactly_the_middle_byte_and_keeps_the_length() {
    let (server, data, _dir) = serving(2 * CHUNK + 5, Some(ServerFault::Corrupt)).await;
    let (status, len, body) = request(&server, "GET", "/rootfs.img").await;
    assert_eq!(
        (status, len, body.len()),
        (200, Some(data.len() as u64), data.len())
    );
    let differing: Vec<usize> = (0..data.len()).filter(|&i| body[i] != data[i]).collect();
    assert_eq!(differing, vec![data.len() / 2]);
}

#[tokio::test]
async fn a_guest_that_goes_away_mid_file_is_reported_with_what_it_took() {
    let (mut server, data, _dir) = serving(64 * CHUNK, None).await;
    let mut reports = server.take_reports().unwrap();
    let addr = server.addr();
    tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /rootfs.img HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut first = vec![0u8; 4096];
        s.read_exact(&mut first).unwrap();
    })
    .await
    .unwrap();
    let got = reports.recv().await.unwrap();
    assert_eq!(got.status, 200);
    assert!(
        got.bytes < data.len() as u64,
        "a client that left after 4 KiB took all {} bytes",
        got.bytes
    );
}

#[tokio::test]
async fn a_second_address_serves_the_same_files_with_the_same_fault_and_reports() {
    let (mut server, data, _dir) = serving(CHUNK + 5, Some(ServerFault::Corrupt)).await;
    let mut reports = server.take_reports().unwrap();
    // Another loopback address stands for a NAT network's host address.
    let also = server.listen_also([127, 0, 0, 2].into()).await.unwrap();
    assert_eq!(also.port(), server.addr().port());
    let (status, _, body) = request_at(also, "GET", "/rootfs.img").await;
    assert_eq!((status, body.len()), (200, data.len()));
    assert!(body != data, "the fault holds on the second address too");
    assert_eq!(reports.recv().await.unwrap().bytes, data.len() as u64);
    // The first address still answers.
    assert_eq!(request(&server, "HEAD", "/rootfs.img").await.0, 200);
    // The port taken on that address (here: by the server's own first listener) is the
    // caller's error, not a panic.
    let e = server.listen_also([127, 0, 0, 1].into()).await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
}
