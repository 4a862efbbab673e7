//! `single`: the iterative server. Accept one connection, serve all its requests, close
//! it, accept the next.
//!
//! Trade-off: the simplest possible server, with no shared state and no scheduling
//! overhead, but one slow or idle keep-alive client holds up everyone queued behind it
//! (the idle timeout bounds how long). This is seed 000's baseline.
//!
//! Shutdown: the accept wait watches the shutdown pipe; the connection being served
//! finishes its in-flight response and closes at its next idle wait.

use super::{accept, ModeContext};

pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    let mut acceptor = accept::Acceptor::new(ctx.listeners);
    let mut worker = super::blocking::Worker::new(&ctx.server);
    while let Some((stream, peer)) = acceptor.next(&ctx.shutdown) {
        super::blocking::serve(stream, peer, &crate::server::newest(&ctx.server), &ctx.shutdown, &mut worker);
    }
    Ok(())
}
