//! Listening sockets, the shutdown signal every mode watches, and how a blocking thread
//! waits on a socket: three jobs, a file each.

mod listener;
mod shutdown;
mod wait;

pub use listener::{Listener, Origin};
pub use shutdown::Shutdown;
pub(crate) use wait::{has_unread_input, poll_until};
pub use wait::{wait_readable, Wake};
