//! Record chunks: the Rust twin of `audit/collect/records/chunks.py`, shared by both
//! compiled readers (librdkafka's messages and raw record batches) so that whoever reads
//! the records, the same bytes reach the same hash in the same order.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use xxhash_rust::xxh3::Xxh3;

/// Gap ranges kept per chunk (gap_count and gaps_checksum always cover all of them).
const MAX_GAP_RANGES: usize = 100;

/// (topic, partition, start, end): a range of offsets to verify.
pub type Range = (String, i32, i64, i64);

/// One chunk being built: the Rust twin of `record_chunks.Chunk`.
pub struct Chunk {
    start: i64,
    end: i64,
    count: i64,
    first: Option<i64>,
    last: Option<i64>,
    min_epoch: Option<i32>,
    max_epoch: Option<i32>,
    epoch_runs: Vec<(i64, i32)>,
    gap_count: i64,
    gap_ranges: usize,
    gaps: Vec<(i64, i64)>,
    hash: Xxh3,
    gap_hash: Xxh3,
}

impl Chunk {
    fn new(start: i64, end: i64) -> Self {
        Chunk {
            start,
            end,
            count: 0,
            first: None,
            last: None,
            min_epoch: None,
            max_epoch: None,
            epoch_runs: Vec::new(),
            gap_count: 0,
            gap_ranges: 0,
            gaps: Vec::new(),
            hash: Xxh3::new(),
            gap_hash: Xxh3::new(),
        }
    }

    /// Offsets [lo, hi] hold no record.
    fn gap(&mut self, lo: i64, hi: i64) {
        self.gap_count += hi - lo + 1;
        self.gap_ranges += 1;
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&((lo - self.start) as i32).to_be_bytes());
        b[4..].copy_from_slice(&((hi - self.start) as i32).to_be_bytes());
        self.gap_hash.update(&b);
        if self.gaps.len() < MAX_GAP_RANGES {
            self.gaps.push((lo, hi));
        }
    }
}

/// A record's fields before its headers: what the frame of `chunks.frame` starts with.
/// Slices borrow the reader's buffer (a librdkafka message, a decompressed batch).
pub struct Head<'a> {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// 0 for a record without headers.
    pub header_count: i32,
    /// The record's leader epoch, -1 where unknown.
    pub epoch: i32,
}

/// Each record's content without its offset (mode mm2: MirrorMaker 2 copies content to
/// offsets of the target's choosing): xxHash3-64 of the record's frame less its first 8
/// bytes, the Rust twin of `chunks.content_digest`. Kept as two columns until taken.
#[derive(Default)]
pub struct Digests {
    offsets: Vec<i64>,
    digests: Vec<i64>,
    hash: Xxh3,
    open: Option<i64>,
}

impl Digests {
    fn begin(&mut self, frame: &[u8], r: &Head<'_>) {
        self.close();
        self.hash.reset();
        self.hash.update(frame);
        if let Some(k) = r.key {
            self.hash.update(k);
        }
        if let Some(v) = r.value {
            self.hash.update(v);
        }
        self.open = Some(r.offset);
    }

    fn close(&mut self) {
        if let Some(offset) = self.open.take() {
            self.offsets.push(offset);
            self.digests.push(self.hash.digest() as i64);
        }
    }

    /// The records' (offsets, digests) since the last take, the last record included.
    pub fn take(&mut self) -> (Vec<i64>, Vec<i64>) {
        self.close();
        (std::mem::take(&mut self.offsets), std::mem::take(&mut self.digests))
    }
}

/// The Rust twin of `record_chunks.RangeChunker`: chunks aligned on multiples of `size`.
pub struct Chunker {
    pub range: Range,
    size: i64,
    expected: i64,
    chunk: Chunk,
    done: Vec<Chunk>,
    /// Per-record digests, where asked for (`with_digests`).
    pub digests: Option<Digests>,
}

impl Chunker {
    pub fn new(range: Range, size: i64) -> Self {
        let start = range.2;
        let end = range.3;
        let hi = end.min((start.div_euclid(size) + 1) * size);
        Chunker {
            range,
            size,
            expected: start,
            chunk: Chunk::new(start, hi),
            done: Vec::new(),
            digests: None,
        }
    }

    /// The same, keeping each record's content digest instead of the chunks' checksums (mode
    /// mm2 reads a range for its digests alone: hashing every record a second time, into a
    /// checksum no one reads, cost more than the digest itself). Its chunks still count
    /// records, gaps and epochs, but their checksums are not computed.
    pub fn with_digests(mut self) -> Self {
        self.digests = Some(Digests::default());
        self
    }

    fn advance_to(&mut self, offset: i64) {
        let end = self.range.3;
        while offset >= self.chunk.end && self.chunk.end < end {
            let ce = self.chunk.end;
            if self.expected < ce {
                let e = self.expected;
                self.chunk.gap(e, ce - 1);
            }
            let hi = end.min((ce.div_euclid(self.size) + 1) * self.size);
            let old = std::mem::replace(&mut self.chunk, Chunk::new(ce, hi));
            self.done.push(old);
            self.expected = ce;
        }
    }

    /// The offset after the last record added (or the range's start).
    pub fn expected(&self) -> i64 {
        self.expected
    }

    /// Adds a record's head; its `header_count` headers follow through [`Chunker::header`],
    /// in order. Records come in offset order, each past the last.
    pub fn begin(&mut self, r: &Head<'_>) {
        if r.offset >= self.chunk.end {
            self.advance_to(r.offset);
        }
        if r.offset > self.expected {
            let e = self.expected;
            self.chunk.gap(e, r.offset - 1);
        }
        let c = &mut self.chunk;
        // The frame of chunks.frame: >qqiii, key, value, then per header >ii, key, value.
        let mut f = [0u8; 28];
        f[..8].copy_from_slice(&r.offset.to_be_bytes());
        f[8..16].copy_from_slice(&r.timestamp.to_be_bytes());
        f[16..20].copy_from_slice(&r.key.map_or(-1i32, |k| k.len() as i32).to_be_bytes());
        f[20..24].copy_from_slice(&r.value.map_or(-1i32, |v| v.len() as i32).to_be_bytes());
        f[24..28].copy_from_slice(&r.header_count.to_be_bytes());
        if let Some(d) = self.digests.as_mut() {
            d.begin(&f[8..], r);
        } else {
            c.hash.update(&f);
            if let Some(k) = r.key {
                c.hash.update(k);
            }
            if let Some(v) = r.value {
                c.hash.update(v);
            }
        }
        c.count += 1;
        if c.first.is_none() {
            c.first = Some(r.offset);
        }
        c.last = Some(r.offset);
        if r.epoch >= 0 && c.epoch_runs.last().map(|x| x.1) != Some(r.epoch) {
            c.epoch_runs.push((r.offset, r.epoch));
            c.min_epoch = Some(c.min_epoch.map_or(r.epoch, |e| e.min(r.epoch)));
            c.max_epoch = Some(c.max_epoch.map_or(r.epoch, |e| e.max(r.epoch)));
        }
        self.expected = r.offset + 1;
    }

    /// One header of the record begun last.
    pub fn header(&mut self, key: &[u8], value: Option<&[u8]>) {
        let mut h = [0u8; 8];
        h[..4].copy_from_slice(&(key.len() as i32).to_be_bytes());
        h[4..].copy_from_slice(&value.map_or(-1i32, |v| v.len() as i32).to_be_bytes());
        let hash = match self.digests.as_mut() {
            Some(d) => &mut d.hash,
            None => &mut self.chunk.hash,
        };
        hash.update(&h);
        hash.update(key);
        if let Some(v) = value {
            hash.update(v);
        }
    }

    /// Closes the range once its end was reached: its chunks, trailing gaps included.
    pub fn finish(mut self) -> (Range, Vec<Chunk>) {
        let end = self.range.3;
        self.advance_to(end);
        if self.expected < self.chunk.end {
            let (e, ce) = (self.expected, self.chunk.end);
            self.chunk.gap(e, ce - 1);
        }
        if self.chunk.end > self.chunk.start {
            self.done.push(self.chunk);
        }
        (self.range, self.done)
    }
}

/// A list of `{"start": a, <second>: b}` dicts: the struct lists of `record_chunks`
/// (epoch runs, gap ranges).
fn pairs<'py, B>(py: Python<'py>, items: &[(i64, B)], second: &str) -> PyResult<Bound<'py, PyList>>
where
    B: Copy + IntoPyObject<'py>,
{
    let out = PyList::empty(py);
    for &(a, b) in items {
        let d = PyDict::new(py);
        d.set_item("start", a)?;
        d.set_item(second, b)?;
        out.append(d)?;
    }
    Ok(out)
}

pub fn chunk_row<'py>(
    py: Python<'py>,
    topic: &str,
    partition: i32,
    c: &Chunk,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("topic", topic)?;
    d.set_item("partition", partition)?;
    d.set_item("chunk_start", c.start)?;
    d.set_item("chunk_end", c.end)?;
    d.set_item("record_count", c.count)?;
    d.set_item("first_offset", c.first)?;
    d.set_item("last_offset", c.last)?;
    d.set_item("checksum", format!("{:032x}", c.hash.digest128()))?;
    d.set_item("min_record_epoch", c.min_epoch)?;
    d.set_item("max_record_epoch", c.max_epoch)?;
    d.set_item("epoch_runs", pairs(py, &c.epoch_runs, "epoch")?)?;
    d.set_item("gap_count", c.gap_count)?;
    d.set_item("gaps_checksum", format!("{:016x}", c.gap_hash.digest()))?;
    d.set_item("gaps", pairs(py, &c.gaps, "end")?)?;
    d.set_item("gaps_truncated", c.gap_ranges > c.gaps.len())?;
    Ok(d)
}
