//! Matrix planning: the pairwise generator on large axis sets, the full product of a matrix
//! near `MAX_PERMUTATIONS`, and the shipped matrices loaded and planned from disk, as
//! `sno-harness plan` and `sno-harness matrix` do. docs/benchmarks.md has the numbers.
//!
//!   cargo bench -p sno-harness --bench matrix

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use sno_harness::scenario::matrix::pairwise::covering_array;
use sno_harness::scenario::matrix::space::Space;
use sno_harness::scenario::matrix::{self, Strategy};

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Axis sets for the pairwise generator: uniform ones from the covering-array literature and
/// one with exclusions of two and three values, like a matrix's `[[exclude]]` rules.
fn spaces() -> Vec<(&'static str, Space)> {
    let uniform = |values: usize, axes: usize| Space::new(vec![values; axes], vec![]);
    vec![
        ("3^13", uniform(3, 13)),
        ("4^10", uniform(4, 10)),
        ("3^20", uniform(3, 20)),
        ("5^15", uniform(5, 15)),
        ("3^50", uniform(3, 50)),
        (
            "6^6+6 exclusions",
            Space::new(
                vec![6; 6],
                vec![
                    vec![(0, 0), (1, 0)],
                    vec![(0, 1), (1, 1)],
                    vec![(2, 5), (3, 5)],
                    vec![(1, 2), (5, 3)],
                    vec![(3, 0), (4, 1)],
                    vec![(0, 5), (4, 0), (5, 0)],
                ],
            ),
        ),
    ]
}

fn pairwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("pairwise");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (name, space) in spaces() {
        let rows = covering_array(&space);
        let allowed = match space.count() {
            usize::MAX => "more than 2^64".to_string(),
            n => n.to_string(),
        };
        eprintln!(
            "pairwise {name}: {} rows; the full product has {allowed} allowed rows",
            rows.len()
        );
        g.bench_with_input(BenchmarkId::new("covering_array", name), &space, |b, s| {
            b.iter(|| covering_array(black_box(s)))
        });
    }
    g.finish();
}

/// A matrix over the smoke scenario whose full product, after the disks matrix's exclusions,
/// is 9,780 permutations: just under `MAX_PERMUTATIONS` (10,000).
fn big_matrix(strategy: Strategy) -> String {
    format!(
        r#"name = "bench-big"
base = "smoke.toml"
strategy = "{strategy}"

[[axis]]
key = "vm.vcpus"
values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]

[[axis]]
key = "vm.memory"
values = ["2GiB", "3GiB", "4GiB", "6GiB", "8GiB"]

[[axis]]
key = "disks.install.bus"
values = ["virtio", "scsi", "nvme", "sata"]

[[axis]]
key = "disks.install.sector"
values = ["512", "512e", "4k"]

[[axis]]
key = "vm.firmware"
values = ["bios", "uefi"]

[[axis]]
key = "install.installation_disk"
values = [
  {{ label = "by-id", value = {{ by = "id", disk = "install" }} }},
  {{ label = "by-name", value = {{ by = "name", disk = "install" }} }},
  {{ label = "by-path", value = {{ by = "path", disk = "install" }} }},
]

[[axis]]
key = "disks.layout"
values = ["1", "2-second", "3-last"]

[[exclude]]
"disks.install.bus" = "sata"
"disks.install.sector" = "4k"

[[exclude]]
"vm.firmware" = "bios"
"disks.install.sector" = "4k"

[[exclude]]
"disks.install.bus" = "sata"
"install.installation_disk" = "by-name"
"disks.layout" = ["2-second", "3-last"]
"#
    )
}

fn expansion(c: &mut Criterion) {
    // Not a file on disk: the path only places the matrix beside smoke.toml, its base.
    let path = scenarios().join("bench-big.toml");
    let full_text = big_matrix(Strategy::Full);
    let pairwise_text = big_matrix(Strategy::Pairwise);
    let full = matrix::parse_str(&path, &full_text).expect("the big matrix loads");
    let pairwise = matrix::parse_str(&path, &pairwise_text).expect("the big matrix loads");
    eprintln!(
        "big matrix: {} permutations in full, {} pairwise",
        full.permutations.len(),
        pairwise.permutations.len()
    );
    let sizes: Vec<usize> = full.axes.iter().map(|a| a.labels.len()).collect();
    let space = Space::new(sizes, vec![]);

    let mut g = c.benchmark_group("expand");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    // The rows alone: the odometer over 12x5x4x3x2x3x3 = 12,960 rows.
    g.bench_function("all_rows/12960", |b| {
        b.iter(|| black_box(&space).all_rows(usize::MAX))
    });
    // parse + every permutation applied to the base TOML, re-serialised and validated.
    g.bench_function(format!("full/{}", full.permutations.len()), |b| {
        b.iter(|| matrix::parse_str(&path, black_box(&full_text)).unwrap())
    });
    // The same matrix with strategy = "pairwise": covering array, then those permutations.
    g.bench_function(format!("pairwise/{}", pairwise.permutations.len()), |b| {
        b.iter(|| matrix::parse_str(&path, black_box(&pairwise_text)).unwrap())
    });
    g.finish();
}

/// `sno-harness plan FILE`: is it a matrix, load it (parse, base scenario, pairwise with
/// negative rules, every permutation validated), print the plan.
fn plan(path: &Path) -> String {
    assert!(matrix::is_matrix_file(path));
    let m = matrix::load(path).unwrap();
    matrix::plan_text(&m)
}

fn shipped(c: &mut Criterion) {
    let mut g = c.benchmark_group("shipped");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for name in ["disks.toml", "install-config.toml"] {
        let path = scenarios().join(name);
        let m = matrix::load(&path).unwrap();
        eprintln!(
            "{name}: {} permutations ({}), full product {}",
            m.permutations.len(),
            m.strategy,
            m.full_count
        );
        g.bench_with_input(BenchmarkId::new("plan", name), &path, |b, p| {
            b.iter(|| plan(black_box(p)))
        });
        g.bench_with_input(BenchmarkId::new("plan-json", name), &path, |b, p| {
            b.iter(|| {
                let m = matrix::load(black_box(p)).unwrap();
                serde_json::to_string_pretty(&matrix::plan_json(&m)).unwrap()
            })
        });
    }
    // `sno-harness matrix scenarios/disks.toml --strategy full`: load, then re-expand.
    let disks = scenarios().join("disks.toml");
    g.bench_function("load-full/disks.toml", |b| {
        b.iter(|| {
            matrix::load(black_box(&disks))
                .unwrap()
                .with_strategy(Strategy::Full)
                .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, pairwise, expansion, shipped);
criterion_main!(benches);
