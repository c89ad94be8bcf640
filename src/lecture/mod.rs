//! The lecture's harness: the walk-through, benchmarking, sweeps, plots, profiling
//! and the device table (feature `lecture`).
pub mod bench;
pub mod demo;
pub mod info;
pub mod plans;
pub mod plot;
pub mod profile;
pub mod sweep;
pub mod tc_report;
