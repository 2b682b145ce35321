//! Mode mm2's records compared as they are read: one partition's source records and their
//! replica's, each as (offset, content digest) in offset order, aligned in one pass with
//! memory bounded by a window, whatever the partition's size.
//!
//! The answer is the one the row-per-record query of `audit/compare/mm2_records.py` gives
//! (steps `mm2_record_bounds` and `mm2_record_pairs`, the tally and the clean cut of
//! `mm2_record_partitions`), or no answer: where the two sides cannot be aligned within the
//! window, the aligner says why (`fallback`) and that partition is matched row by row.
//! It never guesses: every shortcut below is either exact or detected.
//!
//! - **Matching** is by content and occurrence, the k-th source record with a digest paired
//!   with the k-th replica record with it. Per digest a queue of the unmatched records of
//!   whichever side is ahead gives exactly that pairing, in whatever order the two sides
//!   are interleaved. A record left unmatched for `window` records of its own side is
//!   final (missing, duplicate or unexplained); if the other side later brings its digest,
//!   the pairing would have differed: fallback.
//! - **Order**: a replica record leaves the window in offset order, so matched pairs are
//!   seen in replica order, as the query's `lag` sees them.
//! - **Duplicate or unexplained**: a replica record without a partner is a duplicate when
//!   the source holds its content anywhere it was read up to the range's end. The source's
//!   digests of the last `2 * window` records are known exactly, a Bloom filter holds all
//!   of them: "not in the filter" is exact; "in the filter, not in the window" is a
//!   fallback.
//! - **The range's start** without a cut is the first replica record whose content the
//!   source holds (and that content's first source record), or the oldest sync where
//!   earlier. The first `window` replica records are held while the source streams; the
//!   start is fixed once the source has gone `window` records past the first copy found,
//!   and checked at the end against the best the source offered: if it moved, fallback.
//! - **The clean cut**, the last pair before every finding with as many pairs before it on
//!   each side: before the first order break pairs ascend on both sides, so it is the last
//!   such pair whose source offset lies below the first missing record and below every
//!   pair after the break, and whose replica offset lies below the first duplicate or
//!   unexplained record. The last pairs before the break are kept (up to `4 * window`);
//!   if the cut lies further back, fallback.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes a digest (already a 64-bit hash, but small in tests) with one multiply.
#[derive(Default)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(self.0 ^ u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        let h = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

type Map<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;
type Set<K> = HashSet<K, BuildHasherDefault<MixHasher>>;

/// Findings kept exactly before the aligner gives up on a partition (each finalized
/// record's digest is remembered, to detect a later partner).
const MAX_FINAL: usize = 1 << 20;
/// The Bloom filter over the source's digests: at most 2^24 bits (2 MB), three bits a
/// digest; a partition with fewer source records in range gets 16 bits a record (at least
/// 4,096 bits): a new aligner costs what its partition needs, not 2 MB zeroed and freed.
const BLOOM_BITS: u64 = 1 << 24;
const BLOOM_BITS_PER_RECORD: u64 = 16;
const BLOOM_MIN_BITS: u64 = 1 << 12;
/// How many source records ahead the filter's word is asked for (`SourceContents::prefetch`).
const PREFETCH_AHEAD: usize = 16;

/// What the caller knows of the partition's compared range (the query's `mm2_record_ranges`).
#[derive(Clone, Debug)]
pub struct Params {
    /// The newest sync read: the range ends at its upstream and downstream offsets.
    pub end_u: i64,
    pub end_d: i64,
    /// Where each side's records were read from.
    pub src_read_start: i64,
    pub dst_read_start: i64,
    /// The oldest sync read, which may start the range where there is no cut.
    pub first_sync: Option<(i64, i64)>,
    /// Where earlier runs verified through (source, replica): the range starts after it.
    pub cut: Option<(i64, i64)>,
    /// Records per side held unmatched before they are final.
    pub window: usize,
}

/// A finding row: a record without a partner, or a pair out of order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Missing = 1,
    Duplicate = 2,
    Unexplained = 3,
    OutOfOrder = 4,
}

/// The partition's answer, the columns of the query's tally.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub lo_u: i64,
    pub lo_d: i64,
    pub compared_src_records: i64,
    pub compared_dst_records: i64,
    pub missing_records: i64,
    pub first_missing_offset: Option<i64>,
    pub duplicate_records: i64,
    pub first_duplicate_offset: Option<i64>,
    pub unexplained_records: i64,
    pub first_unexplained_offset: Option<i64>,
    pub order_breaks: i64,
    pub first_order_break_offset: Option<i64>,
    pub clean_src_through: Option<i64>,
    pub clean_dst_through: Option<i64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Yes,
    No,
    Maybe,
}

#[derive(Clone, Copy)]
enum State {
    Pending,
    Matched(i64),
}

#[derive(Clone, Copy)]
struct Slot {
    offset: i64,
    digest: u64,
    state: State,
}

/// The unmatched records of one digest, all of one side (a record of the other side would
/// have been paired with the oldest): their indexes, oldest first.
struct Queue {
    src: bool,
    first: u64,
    more: VecDeque<u64>,
    /// Replica records: whether the source holds their content (read before the first of
    /// them, or since: a source record that paired with one of them).
    seen: Seen,
}

#[derive(Default)]
struct Side {
    input: VecDeque<(i64, u64)>,
    ended: bool,
    ring: VecDeque<Slot>,
    /// The index (records in range before it) of `ring.front()`.
    base: u64,
    /// Records in range taken so far.
    taken: u64,
    /// Digests of records made final unmatched: a later partner means fallback.
    finals: Set<u64>,
}

impl Side {
    fn drained(&self) -> bool {
        self.ended && self.input.is_empty()
    }
}

/// The start of the range before it is fixed (no cut).
struct Start {
    /// The first `window` replica records of the read (each digest's first offset is in
    /// `Aligner::earlier`).
    held: VecDeque<(i64, u64)>,
    /// Source records that may lie in the range, kept until it starts.
    src_buf: VecDeque<(i64, u64)>,
}

/// The Bloom filter and the exact recent window of the source's digests.
struct SourceContents {
    bloom: Vec<u64>,
    /// The last `2 * cap` digests added, the i-th added at `(i - 1) % (2 * cap)`: a write a
    /// record, where keeping `last` up to date cost a hash insert a record (5% of a scan's
    /// samples, by perf), though a healthy partition never asks.
    ring: Vec<u64>,
    /// Each recent digest with the number of records added when it was last added: the
    /// last `cap` records' at least, up to `2 * cap` (pruned every `cap` records), and a
    /// digest held longer is only ever a true "yes". Made from `ring` when first asked
    /// (`seen`), kept up to date while asked, dropped after `2 * cap` records unasked.
    last: Option<Map<u64, u64>>,
    /// `added` when `seen` was last asked.
    asked: u64,
    added: u64,
    cap: u64,
}

impl SourceContents {
    /// `records`: at most how many source records will be added.
    fn new(cap: usize, records: u64) -> Self {
        let bits = records
            .saturating_mul(BLOOM_BITS_PER_RECORD)
            .clamp(BLOOM_MIN_BITS, BLOOM_BITS)
            .next_power_of_two()
            .min(BLOOM_BITS);
        SourceContents {
            bloom: vec![0; (bits / 64) as usize],
            ring: Vec::new(),
            last: None,
            asked: 0,
            added: 0,
            cap: cap.max(1) as u64,
        }
    }

    /// A blocked filter: the word from the digest's high bits, three bits within it from
    /// its low ones, so a probe costs one cache miss, not three.
    fn probe(&self, digest: u64) -> (usize, u64) {
        let h = digest.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let word = (h >> 40) as usize % self.bloom.len();
        let bits = (1u64 << (h & 63)) | (1u64 << ((h >> 6) & 63)) | (1u64 << ((h >> 12) & 63));
        (word, bits)
    }

    /// Asks for the filter's word of a digest soon to be added: at a partition's size the
    /// filter is megabytes, each add a cache miss that stalled the aligner (three quarters
    /// of `offer`'s time, by perf); asked for `PREFETCH_AHEAD` records before, it is there.
    fn prefetch(&self, digest: u64) {
        let (word, _) = self.probe(digest);
        prefetch(&self.bloom[word]);
    }

    fn add(&mut self, digest: u64) {
        let (word, bits) = self.probe(digest);
        self.bloom[word] |= bits;
        self.added += 1;
        let size = 2 * self.cap;
        if (self.ring.len() as u64) < size {
            self.ring.push(digest);
        } else {
            self.ring[((self.added - 1) % size) as usize] = digest;
        }
        if self.added - self.asked > size {
            self.last = None;
        } else if let Some(last) = self.last.as_mut() {
            last.insert(digest, self.added);
            if self.added.is_multiple_of(self.cap) {
                let from = self.added - self.cap;
                last.retain(|_, at| *at > from);
            }
        }
    }

    /// The recent digests as `last` holds them, from the ring: oldest first, so a digest
    /// added twice keeps its later count.
    fn recent(&self) -> Map<u64, u64> {
        let size = 2 * self.cap;
        let held = self.ring.len() as u64;
        let mut last = Map::default();
        last.reserve(self.ring.len());
        for added in self.added - held + 1..=self.added {
            last.insert(self.ring[((added - 1) % size) as usize], added);
        }
        last
    }

    fn seen(&mut self, digest: u64) -> Seen {
        self.asked = self.added;
        if self.last.is_none() {
            self.last = Some(self.recent());
        }
        if self.last.as_ref().is_some_and(|last| last.contains_key(&digest)) {
            return Seen::Yes;
        }
        let (word, bits) = self.probe(digest);
        if self.bloom[word] & bits == bits {
            Seen::Maybe
        } else {
            Seen::No
        }
    }
}

/// Asks the CPU for the cache line holding `value`, to be read soon: the aligner's state is
/// megabytes (the filter, the windows), and each record touches it where the last touch
/// was thousands of records ago.
#[inline(always)]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch of a valid reference's address reads nothing into the program:
        // it only warms the cache line.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// The smaller of two optional offsets (either where the other is missing).
fn least(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One partition's aligner: push each side's records as they are read, then `finish`.
pub struct Aligner {
    p: Params,
    src: Side,
    dst: Side,
    start: Option<Start>,
    /// Where the range starts, once fixed.
    lo: (i64, i64),
    /// The best first copy the source offered (replica offset, its original's offset), and
    /// the held replica digests before it with their first offsets: a later source record
    /// holding one of them offers an earlier first copy.
    best: Option<(i64, i64)>,
    earlier: Map<u64, i64>,
    /// The replica had more records than were held, none of them a copy.
    held_short: bool,
    /// Source records at the front of its input that the start phase already offered (its
    /// buffer, given back): offered again, they would fill the exact window twice.
    src_offered: usize,
    pending: Map<u64, Queue>,
    contents: SourceContents,
    out: Outcome,
    prev_src: Option<i64>,
    broken: bool,
    /// Pairs before the first order break, the last ones, and the one before them.
    pre: VecDeque<(i64, i64)>,
    dropped: Option<(i64, i64)>,
    min_after_break: Option<i64>,
    first_unmatched_dst: Option<i64>,
    findings: Vec<(Kind, i64, i64, u64)>,
    fallback: Option<String>,
}

impl Aligner {
    pub fn new(p: Params) -> Self {
        let window = p.window.max(1);
        let p = Params { window, ..p };
        let start = if p.cut.is_none() {
            Some(Start { held: VecDeque::new(), src_buf: VecDeque::new() })
        } else {
            None
        };
        let lo = p.cut.map_or((i64::MIN, i64::MIN), |(u, d)| (u + 1, d + 1));
        Aligner {
            contents: SourceContents::new(
                2 * window,
                u64::try_from(p.end_u.saturating_sub(p.src_read_start).saturating_add(1)).unwrap_or(0),
            ),
            p,
            src: Side::default(),
            dst: Side::default(),
            start,
            lo,
            best: None,
            earlier: Map::default(),
            held_short: false,
            src_offered: 0,
            pending: Map::default(),
            out: Outcome::default(),
            prev_src: None,
            broken: false,
            pre: VecDeque::new(),
            dropped: None,
            min_after_break: None,
            first_unmatched_dst: None,
            findings: Vec::new(),
            fallback: None,
        }
    }

    /// The source's next records, in offset order. What one side is pushed ahead of the
    /// other is held until the other catches up: the caller pushes the two in turns.
    pub fn push_src(&mut self, records: impl IntoIterator<Item = (i64, u64)>) {
        if self.fallback.is_none() {
            self.src.input.extend(records);
            self.pump();
        }
    }

    /// The replica's next records, in offset order.
    pub fn push_dst(&mut self, records: impl IntoIterator<Item = (i64, u64)>) {
        if self.fallback.is_none() {
            self.dst.input.extend(records);
            self.pump();
        }
    }

    /// The finding rows since the last call: (kind, source offset, replica offset, digest),
    /// -1 where a side has no record.
    pub fn take_findings(&mut self) -> Vec<(Kind, i64, i64, u64)> {
        std::mem::take(&mut self.findings)
    }

    /// Why the partition cannot be answered here, once known.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    fn give_up(&mut self, why: String) {
        if self.fallback.is_none() {
            self.fallback = Some(why);
        }
        self.src.input.clear();
        self.dst.input.clear();
        self.findings.clear();
    }

    fn pump(&mut self) {
        while self.fallback.is_none() {
            if self.start.is_some() {
                if !self.start_step() {
                    return;
                }
                continue;
            }
            if self.lockstep() {
                continue;
            }
            // Take from the side that has taken fewer records in range; wait for it where
            // it has nothing yet, so that how the caller cuts its pushes changes nothing.
            let src_turn = if self.src.drained() {
                false
            } else if self.dst.drained() {
                true
            } else {
                self.src.taken <= self.dst.taken
            };
            let side = if src_turn { &mut self.src } else { &mut self.dst };
            let Some((offset, digest)) = side.input.pop_front() else { return };
            if src_turn {
                self.take_src(offset, digest);
            } else {
                self.take_dst(offset, digest);
            }
        }
    }

    /// The common case in one step: nothing pending, both sides level, and their next
    /// records in range with one content. The steps below would take the source's record
    /// (a queue of its own), then pair the replica's with it and drop the queue; this pairs
    /// them directly, with the same checks and the same windows. False: not that case.
    fn lockstep(&mut self) -> bool {
        if !self.pending.is_empty() || self.src.taken != self.dst.taken || self.src_offered > 0 {
            return false;
        }
        let (Some(&(u, digest)), Some(&(d, other))) = (self.src.input.front(), self.dst.input.front()) else {
            return false;
        };
        if digest != other
            || u < self.p.src_read_start.max(self.lo.0)
            || u > self.p.end_u
            || d < self.lo.1
            || d > self.p.end_d
            || self.src.finals.contains(&digest)
            || self.dst.finals.contains(&digest)
        {
            return false;
        }
        self.src.input.pop_front();
        self.dst.input.pop_front();
        self.offer(u, digest);
        self.enter(true, Slot { offset: u, digest, state: State::Matched(d) });
        self.enter(false, Slot { offset: d, digest, state: State::Matched(u) });
        true
    }

    /// One step before the range's start is fixed; false: wait for more records.
    fn start_step(&mut self) -> bool {
        let window = self.p.window;
        let st = self.start.as_mut().expect("start phase");
        // Hold the replica's first records before judging any source record against them.
        while st.held.len() < window {
            match self.dst.input.pop_front() {
                Some((o, d)) => {
                    if o >= self.p.dst_read_start && o <= self.p.end_d {
                        st.held.push_back((o, d));
                        self.earlier.entry(d).or_insert(o);
                    }
                }
                None if self.dst.ended => break,
                None => return false,
            }
        }
        let held_all = st.held.len() < window || self.dst.drained();
        let Some((o, d)) = self.src.input.pop_front() else {
            if self.src.ended {
                self.fix_start(held_all);
                return true;
            }
            return false;
        };
        if o < self.p.src_read_start || o > self.p.end_u {
            return true;
        }
        self.offer(o, d);
        let from = least(self.p.first_sync.map(|s| s.0), self.best.map(|b| b.1)).unwrap_or(i64::MAX);
        let st = self.start.as_mut().expect("start phase");
        if o >= from {
            st.src_buf.push_back((o, d));
        }
        let lowest = st.held.front().map(|h| h.0);
        let settled = self.best.is_some() && self.best.map(|b| b.0) == lowest;
        if settled || st.src_buf.len() >= window {
            self.fix_start(held_all);
        }
        true
    }

    /// The range's start as the query computes it from the best first copy so far.
    fn start_of(&self, best: Option<(i64, i64)>) -> (i64, i64) {
        let sync = self.p.first_sync;
        let u = least(best.map(|b| b.1), sync.map(|s| s.0))
            .map_or(self.p.src_read_start, |v| v.max(self.p.src_read_start));
        let d = least(best.map(|b| b.0), sync.map(|s| s.1))
            .map_or(self.p.dst_read_start, |v| v.max(self.p.dst_read_start));
        (u, d)
    }

    fn fix_start(&mut self, held_all: bool) {
        let st = self.start.take().expect("start phase");
        self.held_short = !held_all;
        self.lo = self.start_of(self.best);
        // The held records go back in front of what is still to come, now as the range's.
        for rec in st.held.into_iter().rev() {
            self.dst.input.push_front(rec);
        }
        self.src_offered = st.src_buf.len();
        for rec in st.src_buf.into_iter().rev() {
            self.src.input.push_front(rec);
        }
    }

    fn take_src(&mut self, offset: i64, digest: u64) {
        if offset < self.p.src_read_start || offset > self.p.end_u {
            return;
        }
        if self.src_offered > 0 {
            self.src_offered -= 1;
        } else {
            self.offer(offset, digest);
        }
        if offset < self.lo.0 {
            return;
        }
        self.take(true, offset, digest);
    }

    /// A source record in range: its content is the source's, and it offers a better first
    /// copy where a held replica record before the best so far has its digest (`earlier`
    /// keeps only those, so any hit is better).
    fn offer(&mut self, offset: i64, digest: u64) {
        if let Some(&(_, ahead)) = self.src.input.get(PREFETCH_AHEAD) {
            self.contents.prefetch(ahead);
        }
        self.contents.add(digest);
        if self.earlier.is_empty() {
            return;
        }
        if let Some(&c) = self.earlier.get(&digest) {
            self.best = Some((c, offset));
            self.earlier.retain(|_, o| *o < c);
        }
    }

    fn take_dst(&mut self, offset: i64, digest: u64) {
        if offset < self.lo.1 || offset > self.p.end_d {
            return;
        }
        self.take(false, offset, digest);
    }

    /// Pops the oldest unmatched record of a digest's queue; true: it was the last.
    fn dequeue(q: &mut Queue) -> bool {
        match q.more.pop_front() {
            Some(next) => {
                q.first = next;
                false
            }
            None => true,
        }
    }

    fn take(&mut self, is_src: bool, offset: i64, digest: u64) {
        let index = if is_src { self.src.taken } else { self.dst.taken };
        // The other side's record judged unmatched is older than any it holds pending: the
        // query would pair this record with it.
        let other = if is_src { &self.dst } else { &self.src };
        if other.finals.contains(&digest) {
            self.give_up(format!(
                "a record at offset {offset} matches one the window had already judged unmatched \
                 (a gap or replay longer than {} records)",
                self.p.window
            ));
            return;
        }
        let (partner, emptied) = match self.pending.get_mut(&digest) {
            Some(q) if q.src != is_src => {
                q.seen = Seen::Yes; // only a source record pairs with a replica one
                (Some(q.first), Self::dequeue(q))
            }
            _ => (None, false),
        };
        if emptied {
            self.pending.remove(&digest);
        }
        let state = if let Some(j) = partner {
            let other = if is_src { &mut self.dst } else { &mut self.src };
            let slot = &mut other.ring[(j - other.base) as usize];
            slot.state = State::Matched(offset);
            State::Matched(slot.offset)
        } else {
            match self.pending.get_mut(&digest) {
                Some(q) => q.more.push_back(index),
                None => {
                    let seen = if is_src { Seen::Yes } else { self.contents.seen(digest) };
                    self.pending
                        .insert(digest, Queue { src: is_src, first: index, more: VecDeque::new(), seen });
                }
            }
            State::Pending
        };
        self.enter(is_src, Slot { offset, digest, state });
    }

    /// A record taken into its side's window; the oldest leaves it once the window is full.
    fn enter(&mut self, is_src: bool, slot: Slot) {
        let me = if is_src { &mut self.src } else { &mut self.dst };
        me.taken += 1;
        me.ring.push_back(slot);
        if me.ring.len() > self.p.window {
            self.pop(is_src, true);
        }
    }

    /// The oldest record of a side's window leaves it: final if still unmatched, and a
    /// replica record's pair judged for order.
    fn pop(&mut self, is_src: bool, more_to_come: bool) {
        let side = if is_src { &mut self.src } else { &mut self.dst };
        if let Some(ahead) = side.ring.get(PREFETCH_AHEAD) {
            prefetch(ahead);
        }
        let Some(slot) = side.ring.pop_front() else { return };
        let index = side.base;
        side.base += 1;
        match slot.state {
            State::Matched(partner) => {
                if !is_src {
                    self.pair(partner, slot.offset, slot.digest);
                }
            }
            State::Pending => {
                let (seen, emptied) = match self.pending.get_mut(&slot.digest) {
                    Some(q) => {
                        debug_assert_eq!(q.first, index);
                        (q.seen, Self::dequeue(q))
                    }
                    None => (Seen::Maybe, false),
                };
                if emptied {
                    self.pending.remove(&slot.digest);
                }
                if more_to_come {
                    let side = if is_src { &mut self.src } else { &mut self.dst };
                    side.finals.insert(slot.digest);
                    if side.finals.len() > MAX_FINAL {
                        self.give_up(format!("more than {MAX_FINAL} records without a partner"));
                        return;
                    }
                }
                self.unmatched(is_src, slot.offset, slot.digest, seen);
            }
        }
    }

    fn unmatched(&mut self, is_src: bool, offset: i64, digest: u64, seen: Seen) {
        let o = &mut self.out;
        if is_src {
            o.missing_records += 1;
            o.first_missing_offset.get_or_insert(offset);
            self.findings.push((Kind::Missing, offset, -1, digest));
            return;
        }
        self.first_unmatched_dst.get_or_insert(offset);
        match seen {
            Seen::Yes => {
                o.duplicate_records += 1;
                o.first_duplicate_offset.get_or_insert(offset);
                self.findings.push((Kind::Duplicate, -1, offset, digest));
            }
            Seen::No => {
                o.unexplained_records += 1;
                o.first_unexplained_offset.get_or_insert(offset);
                self.findings.push((Kind::Unexplained, -1, offset, digest));
            }
            Seen::Maybe => self.give_up(format!(
                "whether the source holds the content of replica offset {offset} (not among its last {} \
                 records read)",
                2 * self.p.window
            )),
        }
    }

    /// A matched pair, in replica order.
    fn pair(&mut self, src: i64, dst: i64, digest: u64) {
        let out_of_order = self.prev_src.is_some_and(|p| p > src);
        self.prev_src = Some(src);
        if out_of_order {
            self.out.order_breaks += 1;
            self.out.first_order_break_offset.get_or_insert(dst);
            self.findings.push((Kind::OutOfOrder, src, dst, digest));
            self.broken = true;
        }
        if self.broken {
            self.min_after_break = Some(self.min_after_break.map_or(src, |m| m.min(src)));
            return;
        }
        // Pairs past the first unmatched record of either side cannot be the clean cut.
        if self.first_unmatched_dst.is_some_and(|y| dst > y)
            || self.out.first_missing_offset.is_some_and(|x| src > x)
        {
            return;
        }
        self.pre.push_back((src, dst));
        if self.pre.len() > 4 * self.p.window {
            self.dropped = self.pre.pop_front();
        }
    }

    /// Judges what is left and gives the partition's answer, or why there is none.
    pub fn finish(&mut self) -> Result<Outcome, String> {
        self.src.ended = true;
        self.dst.ended = true;
        self.pump();
        if let Some(why) = &self.fallback {
            return Err(why.clone());
        }
        while !self.src.ring.is_empty() {
            self.pop(true, false);
        }
        while !self.dst.ring.is_empty() {
            self.pop(false, false);
        }
        if let Some(why) = &self.fallback {
            return Err(why.clone());
        }
        if self.p.cut.is_none() {
            if self.best.is_none() && self.held_short {
                return Err(format!(
                    "none of the replica's first {} records is a copy of a source record",
                    self.p.window
                ));
            }
            if self.start_of(self.best) != self.lo {
                return Err(format!(
                    "the range's start moved after {} source records (the replica's first copies out of order)",
                    self.p.window
                ));
            }
        }
        let mut out = self.out.clone();
        out.lo_u = self.lo.0;
        out.lo_d = self.lo.1;
        out.compared_src_records = self.src.taken as i64;
        out.compared_dst_records = self.dst.taken as i64;
        let x = match (out.first_missing_offset, self.min_after_break) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(i64::MAX),
        };
        let y = self.first_unmatched_dst.unwrap_or(i64::MAX);
        let ok = |&(s, d): &(i64, i64)| s < x && d < y;
        let clean = match self.pre.iter().rev().find(|p| ok(p)) {
            Some(&p) => Some(p),
            None => match self.dropped {
                None => None,
                Some(p) if self.pre.front().is_none_or(|f| !ok(f)) && ok(&p) => Some(p),
                Some(_) => {
                    return Err(format!(
                        "the clean cut lies more than {} pairs before the first order break",
                        4 * self.p.window
                    ))
                }
            },
        };
        let clean = clean.or(self.p.cut);
        out.clean_src_through = clean.map(|c| c.0);
        out.clean_dst_through = clean.map(|c| c.1);
        Ok(out)
    }
}
