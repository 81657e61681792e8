//! Event processing: a recorded smoke run's signals fed to the phase state machine (which
//! scans console and journal lines for badness as they come), as `run_scenario` does, with
//! and without recording each one to events.jsonl; and the badness scan alone over 100k
//! console lines. docs/benchmarks.md has the numbers.
//!
//!   cargo bench -p sno-harness --bench events
//!
//! benches/data/smoke-events.jsonl is the events.jsonl of a passed `scenarios/smoke.toml` run
//! on the minisno fixture (QEMU under TCG, 110 s): 1,451 signals, 1,314 of them console lines.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use sno_harness::flow::badness::{self, AllowList, Findings};
use sno_harness::flow::event::{Event, EventLog, Signal};
use sno_harness::flow::machine::{AdaptiveDeadline, Config, Machine, Verdict};
use sno_harness::flow::phase::Phase;
use sno_harness::hw::Accel;
use sno_harness::run::phase_timeouts;
use sno_harness::scenario;

/// How many events the long streams hold, at least.
const STREAM: usize = 100_000;

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/data")
        .join(name)
}

/// The recorded run, back as typed events (as `sno-harness analyze` reads a run's events.jsonl).
fn recorded() -> Vec<Event> {
    let text = std::fs::read_to_string(data("smoke-events.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Event>(l).expect(l))
        .collect()
}

/// The same run with a chatty guest: every console and journal line said `k` times, `k` the
/// smallest that makes the stream at least `STREAM` events long.
fn chatty(run: &[Event]) -> Vec<Event> {
    let lines = run
        .iter()
        .filter(|e| matches!(e.signal, Signal::Console { .. } | Signal::Journal { .. }))
        .count();
    let k = (STREAM - (run.len() - lines)).div_ceil(lines);
    run.iter()
        .flat_map(|e| {
            let n = match e.signal {
                Signal::Console { .. } | Signal::Journal { .. } => k,
                _ => 1,
            };
            std::iter::repeat_n(e, n).cloned()
        })
        .collect()
}

/// The state machine as `run_scenario` configures it for the smoke scenario under TCG.
fn machine() -> Machine {
    let s = scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"))
        .unwrap();
    let timeouts = phase_timeouts(&s, Accel::Tcg, 1.0);
    let adaptive_install = timeouts
        .get(&Phase::InstallToDisk)
        .map(|nominal| AdaptiveDeadline::around(*nominal));
    let mut m = Machine::new(Config {
        timeouts,
        write_stall: s
            .disk_write_stall
            .unwrap_or(scenario::DEFAULT_DISK_WRITE_STALL),
        bootkube_max_restarts: None,
        adaptive_install,
    });
    m.allow_badness(AllowList::new(&s.badness_allow).unwrap());
    m
}

/// Feeds the events in order with a tick each time a second of the run's clock has passed (the
/// run loop ticks every second); returns the machine to check it passed.
fn replay(events: &[Event]) -> Machine {
    let mut m = machine();
    let mut actions = m.start(0);
    let mut next_tick = 1_000;
    for ev in events {
        while ev.t_ms >= next_tick {
            actions.extend(m.tick(next_tick));
            next_tick += 1_000;
        }
        actions.extend(m.on_event(ev));
    }
    black_box(actions);
    m
}

/// As the run loop's `handle`: each signal stamped and appended to events.jsonl (flushed, one
/// write a line), then given to the machine.
fn record_and_replay(events: &[Event], path: &Path) -> Machine {
    let mut m = machine();
    let mut log = EventLog::create(path, Instant::now()).unwrap();
    let mut actions = m.start(0);
    for ev in events {
        let recorded = log.record(ev.source, ev.signal.clone()).unwrap();
        actions.extend(m.on_event(&recorded));
    }
    black_box(actions);
    m
}

fn passed(m: &Machine) -> bool {
    m.outcome().is_some_and(|o| o.verdict == Verdict::Pass)
}

fn state_machine(c: &mut Criterion) {
    let run = recorded();
    let loud = chatty(&run);
    assert!(passed(&replay(&run)), "the recorded run replays to a pass");
    assert!(passed(&replay(&loud)), "the chatty run replays to a pass");
    eprintln!(
        "recorded run: {} events; chatty run: {} events",
        run.len(),
        loud.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    assert!(passed(&record_and_replay(&run, &log)));

    let mut g = c.benchmark_group("events");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(run.len() as u64));
    g.bench_function("machine/recorded", |b| b.iter(|| replay(black_box(&run))));
    g.bench_function("record+machine/recorded", |b| {
        b.iter(|| record_and_replay(black_box(&run), &log))
    });
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(loud.len() as u64));
    g.bench_function("machine/chatty-100k", |b| {
        b.iter(|| replay(black_box(&loud)))
    });
    g.bench_function("record+machine/chatty-100k", |b| {
        b.iter(|| record_and_replay(black_box(&loud), &log))
    });
    g.finish();
}

fn badness_scan(c: &mut Criterion) {
    let console: Vec<String> = recorded()
        .into_iter()
        .filter_map(|e| match e.signal {
            Signal::Console { line } => Some(line),
            _ => None,
        })
        .collect();
    let lines: Vec<String> = console.iter().cycle().take(STREAM).cloned().collect();
    assert!(lines.iter().all(|l| badness::scan(l).is_none()));

    let mut g = c.benchmark_group("badness");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.bench_function("scan/100k-lines", |b| {
        b.iter(|| {
            black_box(&lines)
                .iter()
                .filter(|l| badness::scan(l).is_some())
                .count()
        })
    });
    let allow = AllowList::default();
    g.bench_function("observe/100k-lines", |b| {
        b.iter(|| {
            let mut f = Findings::default();
            for (t, l) in black_box(&lines).iter().enumerate() {
                f.observe(
                    (&allow, Default::default()),
                    ("serial console", None),
                    l,
                    t as u64,
                );
            }
            f
        })
    });
    g.finish();
}

criterion_group!(benches, state_machine, badness_scan);
criterion_main!(benches);
