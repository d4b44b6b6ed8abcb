//! The lexical model ([`Lexical`]): a deterministic stand-in that sees only the
//! context, ranks what it shows with BM25 and follows each strategy's protocol. Its
//! episode in [`session`](mod@session), what it reads of a context in
//! [`reading`](mod@reading), its arguments in [`fill`](mod@fill).

pub mod fill;
pub mod reading;
pub mod session;

pub use fill::fill_from_query;
pub use session::{Lexical, LexicalSession};
