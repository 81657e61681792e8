//! One status condition, as the conditions of every object and the route checks' failures
//! write it.

/// One status condition; `since_s` is when it last changed, in seconds since first start.
#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    pub type_: &'static str,
    pub status: &'static str,
    pub since_s: f64,
    pub reason: String,
    pub message: String,
}
