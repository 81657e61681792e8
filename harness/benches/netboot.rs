//! The boot server's throughput: the harness's HTTP server (netboot::FileServer) sending a
//! 64 MiB file, the size class of the minimal ISO's root filesystem (the fixture's is 76 MiB),
//! to a client on the loopback that reads it whole, as the guest's initramfs does. The guest's
//! own fetch under TCG is far slower; this measures what the server leaves it.
//! docs/benchmarks.md has the numbers.
//!
//!   cargo bench -p sno-harness --bench netboot

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sno_harness::netboot::{FileServer, Peers};

const SIZE: usize = 64 << 20;

/// GET /rootfs.img over a fresh connection; the bytes of the body.
fn fetch(addr: std::net::SocketAddr) -> usize {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /rootfs.img HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0;
    loop {
        match s.read(&mut buf).unwrap() {
            0 => break,
            n => total += n,
        }
    }
    total
}

fn serve(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rootfs.img");
    let data: Vec<u8> = (0..SIZE).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&file, &data).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(async {
        let s = FileServer::start("127.0.0.1:0".parse().unwrap(), None, Peers::Any)
            .await
            .unwrap();
        s.serve("/rootfs.img", file.clone());
        s
    });
    let addr = server.addr();
    let got = fetch(addr);
    assert!(
        got > SIZE,
        "a response of {got} bytes for a {SIZE}-byte file"
    );
    println!("netboot: serving {} MiB from {}", SIZE >> 20, addr);
    let mut g = c.benchmark_group("netboot");
    g.throughput(Throughput::Bytes(SIZE as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(6));
    g.bench_function("get_rootfs_64mib", |b| b.iter(|| fetch(addr)));
    g.finish();
    drop(server);
}

criterion_group!(benches, serve);
criterion_main!(benches);
