//! A loop's connections: the slots they live in, what the core keeps for each (its
//! [`Session`], its deadline, whether it is parked), and the tag that names a connection
//! (or the listener, the shutdown pipe, the eventfds) to the kernel: epoll's token and
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
    Vacancy,
    /// `hybrid`: this loop's doorbell, rung when the worker pool has answers for it.
    Doorbell,
    /// Operation `op` of the connection in `slot`, as long as the slot's generation is
    /// still `generation` (a later connection in the same slot has another). A tag holds
    /// the generation's low 32 bits ([`TAG_GENERATIONS`]).
    Conn { slot: usize, generation: u64, op: Op },
}

/// Listener tags: `LISTENERS + index`, above every connection tag (whose generation, the
/// top 32 bits, stays below `TAG_GENERATIONS`) and below the other fixed tags.
const LISTENERS: u64 = TAG_GENERATIONS << 32;
/// The most `--addr`s a loop can tell apart (checked where the listeners are bound).
pub(crate) const MAX_LISTENERS: usize = 1 << 16;
/// The most connections a loop can tell apart: a slot is 24 bits of a tag. A loop holds at
/// most `--max-conns` connections, checked against this at start.
pub(crate) const MAX_SLOTS: usize = 1 << 24;
const SHUTDOWN: u64 = u64::MAX - 2;
const VACANCY: u64 = u64::MAX - 3;
const DOORBELL: u64 = u64::MAX - 4;
/// A tag's generation is the connection's modulo this, so a connection tag never equals
/// a fixed one. A connection's own generation never wraps (see [`Conns::insert`]).
const TAG_GENERATIONS: u64 = 0xffff_ffff;

impl Tag {
    /// INVARIANT: the one layout, `generation << 32 | slot << 8 | op`, below the fixed
    /// tags; `slot < MAX_SLOTS`.
    pub(crate) fn encode(self) -> u64 {
        match self {
            Tag::Listener { index } => LISTENERS + index as u64,
            Tag::Shutdown => SHUTDOWN,
            Tag::Vacancy => VACANCY,
            Tag::Doorbell => DOORBELL,
            Tag::Conn { slot, generation, op } => {
                debug_assert!(slot < MAX_SLOTS, "slot {slot} beyond a tag's 24 bits");
                ((generation % TAG_GENERATIONS) << 32) | ((slot as u64 & 0xff_ffff) << 8) | op as u64
            }
        }
    }

    pub(crate) fn decode(tag: u64) -> Option<Tag> {
        match tag {
            _ if (LISTENERS..LISTENERS + MAX_LISTENERS as u64).contains(&tag) => {
                Some(Tag::Listener { index: (tag - LISTENERS) as usize })
            }
            SHUTDOWN => Some(Tag::Shutdown),
            VACANCY => Some(Tag::Vacancy),
            DOORBELL => Some(Tag::Doorbell),
            _ => {
                let op = OPS.into_iter().find(|op| *op as u64 == tag & 0xff)?;
                Some(Tag::Conn { slot: ((tag >> 8) & 0xff_ffff) as usize, generation: tag >> 32, op })
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

    /// Nothing buffered either way: the connection can be closed without losing anything.
    pub(crate) fn is_idle(&self) -> bool {
        !self.session.has_partial_request() && !self.session.is_sending()
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
    ///
    /// Each connection a loop accepts gets the next generation, a 64-bit count that never
    /// wraps (2^64 accepts: centuries at a billion a second). So an answer that comes back
    /// for a connection ([`Conns::live`], `hybrid`'s pool, however late) never reaches a
    /// later connection in the same slot. The kernel's tags carry 32 bits of it
    /// ([`Conns::tagged`]); they only outlive their connection while the loop closes it
    /// (epoll drops a closed socket; `uring` cancels what it had in flight), never across
    /// 2^32 accepts.
    pub(crate) fn insert(&mut self, session: Session, io: Io, stamp: u64, deadline: Kind) -> usize {
        self.next_generation += 1;
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

    /// The connection a per-connection tag names (the slot and generation decoded from
    /// it), if it is still the same one.
    pub(crate) fn tagged(&mut self, slot: usize, generation: u64) -> Option<&mut Conn<Io>> {
        self.get_mut(slot).filter(|c| c.generation % TAG_GENERATIONS == generation)
    }

    /// The connection `id` names, if it is still open (its slot not freed or reused).
    pub(crate) fn live(&mut self, id: ConnId) -> Option<&mut Conn<Io>> {
        self.get_mut(id.slot).filter(|c| c.generation == id.generation)
    }

    /// The slots whose connections are idle (nothing buffered either way).
    pub(crate) fn idle(&self) -> Vec<usize> {
        (0..self.slots.len()).filter(|&i| self.slots[i].as_ref().is_some_and(|c| c.is_idle())).collect()
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
            Tag::Vacancy,
            Tag::Doorbell,
            Tag::Conn { slot: 0, generation: 1, op: Op::Socket },
            Tag::Conn { slot: 70_000, generation: TAG_GENERATIONS - 1, op: Op::ScriptIn },
            Tag::Conn { slot: MAX_SLOTS - 1, generation: TAG_GENERATIONS - 1, op: Op::SendAhead },
            Tag::Conn { slot: 3, generation: 42, op: Op::Room },
            Tag::Conn { slot: 9, generation: 7, op: Op::SendAhead },
        ];
        for tag in cases {
            assert_eq!(Tag::decode(tag.encode()), Some(tag), "{tag:?}");
        }
        assert_eq!(Tag::decode(0), None, "op 0 names nothing");
        // A generation past the tag's 32 bits: the tag holds its low bits, below the fixed tags.
        let late = Tag::Conn { slot: 5, generation: TAG_GENERATIONS + 7, op: Op::Socket }.encode();
        assert_eq!(Tag::decode(late), Some(Tag::Conn { slot: 5, generation: 7, op: Op::Socket }));
    }

    /// An answer for a connection long gone (`hybrid`'s pool) never reaches the connection
    /// that took its slot, even one whose generation agrees in a tag's 32 bits (and would
    /// have agreed in all of the 24 bits generations once had).
    #[test]
    fn generations_do_not_wrap_for_late_answers() {
        let peer = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
        let mut conns: Conns<()> = Conns::new();
        let old = conns.insert(Session::for_tests(peer), (), 0, Kind::Idle);
        let old_id = conns.get_mut(old).unwrap().id(old);
        conns.remove(old);
        // As if 2^32 - 1 more connections had come and gone in this loop.
        conns.next_generation += TAG_GENERATIONS - 1;
        let new = conns.insert(Session::for_tests(peer), (), 0, Kind::Idle);
        let new_id = conns.get_mut(new).unwrap().id(new);
        assert_eq!(new, old, "the slot was reused");
        assert_eq!(new_id.generation % TAG_GENERATIONS, old_id.generation % TAG_GENERATIONS);
        assert!(conns.live(old_id).is_none(), "a late answer reached the slot's new connection");
        assert!(conns.live(new_id).is_some());
        let tag = Tag::decode(new_id.tag(Op::Socket)).unwrap();
        let Tag::Conn { slot, generation, .. } = tag else { panic!("{tag:?}") };
        assert!(conns.tagged(slot, generation).is_some(), "the new connection's own tag finds it");
    }
}
