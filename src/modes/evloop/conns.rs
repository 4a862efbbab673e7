//! A loop's connections: the slots they live in, what the core keeps for each (its
//! [`Session`], its deadline, whether it is parked), and the tag that names a connection
//! (or the listener, the shutdown pipe, the waker) to the kernel: epoll's token and
//! io_uring's user data alike. The tag's bit layout is encoded and decoded here only.

use super::super::session::Session;
use super::super::timer::Kind;
use super::ConnRef;

/// What a per-connection tag is about; the low byte of the tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// The socket: its readiness (`event`), its receive (`uring`).
    Socket = 1,
    /// A ring send of the out bytes (`uring`).
    Send = 2,
    /// Waiting for room in the socket after sendfile found none (`uring`).
    Room = 3,
    /// A CGI script's stdout (wait readable).
    ScriptOut = 4,
    /// A CGI script's stdin (wait writable).
    ScriptIn = 5,
    /// A send the connection no longer waits for, linked ahead of its receive (`uring`).
    SendAhead = 6,
}

const OPS: [Op; 6] = [Op::Socket, Op::Send, Op::Room, Op::ScriptOut, Op::ScriptIn, Op::SendAhead];

/// What the kernel reports an event or a completion for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    /// The loop's listener for the `index`th `--addr` is readable.
    Listener { index: usize },
    /// The shutdown pipe is readable (for good: see `net::Shutdown`).
    Shutdown,
    /// This loop's eventfd in the shared `--max-conns` count: a place freed up.
    Wake,
    /// Operation `op` of the connection in `slot`, as long as the slot's generation is
    /// still `generation` (a later connection in the same slot has another).
    Conn { slot: usize, generation: u64, op: Op },
}

/// Listener tags: `LISTENERS + index`, above every connection tag (whose generation, the
/// top 24 bits, stays below `GENERATIONS`) and below the other fixed tags.
const LISTENERS: u64 = GENERATIONS << 40;
/// The most `--addr`s a loop can tell apart (checked where the listeners are bound).
pub(crate) const MAX_LISTENERS: usize = 1 << 16;
const SHUTDOWN: u64 = u64::MAX - 2;
const WAKE: u64 = u64::MAX - 3;
/// Generations wrap below this, so a connection tag never equals a fixed one.
const GENERATIONS: u64 = 0xff_ffff;

impl Tag {
    /// INVARIANT: the one layout, `generation << 40 | slot << 8 | op`, below the fixed tags.
    pub(crate) fn encode(self) -> u64 {
        match self {
            Tag::Listener { index } => LISTENERS + index as u64,
            Tag::Shutdown => SHUTDOWN,
            Tag::Wake => WAKE,
            Tag::Conn { slot, generation, op } => (generation << 40) | ((slot as u64 & 0xffff_ffff) << 8) | op as u64,
        }
    }

    pub(crate) fn decode(tag: u64) -> Option<Tag> {
        match tag {
            _ if (LISTENERS..LISTENERS + MAX_LISTENERS as u64).contains(&tag) => {
                Some(Tag::Listener { index: (tag - LISTENERS) as usize })
            }
            SHUTDOWN => Some(Tag::Shutdown),
            WAKE => Some(Tag::Wake),
            _ => {
                let op = OPS.into_iter().find(|op| *op as u64 == tag & 0xff)?;
                Some(Tag::Conn { slot: ((tag >> 8) & 0xffff_ffff) as usize, generation: tag >> 40, op })
            }
        }
    }
}

/// One connection as the core keeps it: its protocol state, the backend's I/O state,
/// and the deadline armed for it.
pub(crate) struct Conn<Io> {
    pub(crate) session: Session,
    pub(crate) io: Io,
    generation: u64,
    /// The stamp of the armed deadline (`timer::Deadlines`); any other stamp is stale.
    pub(crate) stamp: u64,
    /// The kind of the deadline `stamp` belongs to.
    pub(crate) deadline: Kind,
    /// Parked: on a deadline of its own (a `--delay`, a script's pipes), so the head,
    /// idle and send deadlines are not armed meanwhile. Cleared when a drive gets past
    /// the hold and the backend's operations in flight.
    pub(crate) parked: bool,
}

impl<Io> Conn<Io> {
    /// This connection, in `slot`.
    pub(crate) fn id(&self, slot: usize) -> ConnId {
        ConnId { slot, generation: self.generation }
    }

    /// The backend's I/O state, and the connection as the backend's hooks see it.
    pub(crate) fn parts(&mut self, slot: usize) -> (&mut Io, ConnRef<'_>) {
        let id = self.id(slot);
        (&mut self.io, ConnRef { id, session: &mut self.session })
    }
}

/// Which connection: its slot, and the generation that tells it from earlier
/// connections in the same slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnId {
    pub(crate) slot: usize,
    pub(crate) generation: u64,
}

impl ConnId {
    /// The tag of this connection's operation `op`.
    pub(crate) fn tag(self, op: Op) -> u64 {
        Tag::Conn { slot: self.slot, generation: self.generation, op }.encode()
    }
}

/// The slots of one loop's connections.
pub(crate) struct Conns<Io> {
    slots: Vec<Option<Conn<Io>>>,
    free: Vec<usize>,
    /// INVARIANT: the number of `Some` slots, each holding one place of the shared
    /// `--max-conns` count.
    pub(crate) open: usize,
    next_generation: u64,
}

impl<Io> Conns<Io> {
    pub(crate) fn new() -> Self {
        Conns { slots: Vec::new(), free: Vec::new(), open: 0, next_generation: 0 }
    }

    /// Puts a new connection in a free slot; returns the slot.
    pub(crate) fn insert(&mut self, session: Session, io: Io, stamp: u64, deadline: Kind) -> usize {
        self.next_generation = (self.next_generation + 1) % GENERATIONS;
        let conn = Conn { session, io, generation: self.next_generation, stamp, deadline, parked: false };
        self.open += 1;
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(conn);
                slot
            }
            None => {
                self.slots.push(Some(conn));
                self.slots.len() - 1
            }
        }
    }

    /// Takes the connection out of `slot`, which becomes free.
    pub(crate) fn remove(&mut self, slot: usize) -> Option<Conn<Io>> {
        let conn = self.slots.get_mut(slot)?.take()?;
        self.free.push(slot);
        self.open -= 1;
        Some(conn)
    }

    pub(crate) fn get_mut(&mut self, slot: usize) -> Option<&mut Conn<Io>> {
        self.slots.get_mut(slot)?.as_mut()
    }

    /// The connection a per-connection tag names, if it is still the same one.
    pub(crate) fn live(&mut self, slot: usize, generation: u64) -> Option<&mut Conn<Io>> {
        self.get_mut(slot).filter(|c| c.generation == generation)
    }

    /// The slots whose connections are idle (nothing buffered either way).
    pub(crate) fn idle(&self) -> Vec<usize> {
        (0..self.slots.len()).filter(|&i| self.slots[i].as_ref().is_some_and(|c| c.session.is_idle())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_decode_to_what_was_encoded() {
        let cases = [
            Tag::Listener { index: 0 },
            Tag::Listener { index: 1 },
            Tag::Listener { index: MAX_LISTENERS - 1 },
            Tag::Shutdown,
            Tag::Wake,
            Tag::Conn { slot: 0, generation: 1, op: Op::Socket },
            Tag::Conn { slot: 70_000, generation: GENERATIONS - 1, op: Op::ScriptIn },
            Tag::Conn { slot: 3, generation: 42, op: Op::Room },
            Tag::Conn { slot: 9, generation: 7, op: Op::SendAhead },
        ];
        for tag in cases {
            assert_eq!(Tag::decode(tag.encode()), Some(tag), "{tag:?}");
        }
        assert_eq!(Tag::decode(0), None, "op 0 names nothing");
    }
}
