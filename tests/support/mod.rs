//! Helpers shared by the integration tests (a directory, so Cargo does not run it
//! as a test of its own).

pub mod cli;
pub mod provider;
pub mod scripted;
pub mod sdk;
pub mod server;
