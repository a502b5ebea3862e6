//! The interrupt flag: Ctrl-C asks the loop to stop at the next step boundary.
//!
//! Nothing is cancelled mid-step: a request in flight finishes, running tools
//! finish and their results are written to the history, and the loop stops
//! at its top. That is what keeps the history valid (every tool call
//! answered) whatever the moment of the interrupt.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared flag; clones refer to the same flag.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Asks the loop to stop at the next step boundary.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether an interrupt is pending, without consuming it.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Consumes a pending interrupt: true once per request.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}
