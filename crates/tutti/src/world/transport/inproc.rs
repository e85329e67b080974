//! The in-process transport: a world that is one process of threads.
//!
//! All locations share an address space, so messages move as typed values
//! (ARMI's shared-memory mode trades pointers): a send pushes the value, or a
//! batch of values, into the destination location's inbox (`inbox.rs`) and
//! wakes it. There is no other rank to send frames to.

use super::super::frame::Frame;
use super::Transport;

/// The transport of a one-process world.
#[derive(Debug, Default)]
pub(crate) struct InProcess;

impl Transport for InProcess {
    fn describe(&self) -> String {
        "in-process (typed values between locations, nothing serialized)".into()
    }

    fn send(&self, to: usize, _frame: Frame) {
        // The world routes every destination of a one-rank world locally, so a
        // frame for another rank means its routing is broken.
        self.abort(&format!("a frame for rank {to} in a one-process world"))
    }

    fn progress(&self) -> bool {
        false
    }

    fn start_sends(&self) {}

    fn polled(&self) -> bool {
        false
    }

    fn abort(&self, why: &str) -> ! {
        crate::world::say(&format!("the world cannot continue: {why}"));
        std::process::abort()
    }

    fn shutdown(&self) {}

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
