//! [`Composite`]: the strategies of one mode stacked into one context — the system
//! prompt, the tool list in FIM One's registry order, built-in tools — with the
//! selection step and `request_tools` on top. Built once per scenario × mode and shared
//! read-only by every episode.//!
//! Built in [`build`](mod@build), shown in [`context`](mod@context), answering in
//! [`resolve`](mod@resolve).

pub mod build;
pub mod context;
pub mod resolve;

pub use build::Composite;
