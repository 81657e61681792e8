//! Many runs: a matrix's and a perf run's runners (`matrix_runner`, `perf_runner`, sharing
//! `job`), the hosts they run on (`places`, `hosts_file`) with each host's admission control
//! (`admission`, within the process's cgroup limits: `cgroup`), the matrix's live board (`board`), the preflight of the hosts (`preflight`)
//! and where a perf run's disks live (`backing`). Each run itself is `run`'s.

pub mod admission;
pub mod backing;
pub mod board;
pub mod cgroup;
pub mod hosts_file;
pub mod job;
pub mod matrix_runner;
pub mod perf_runner;
pub mod places;
pub mod preflight;
