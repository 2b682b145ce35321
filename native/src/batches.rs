//! Raw record batches walked record by record into chunks: the reader of issue 35.
//!
//! A Fetch response carries record batches as the broker stores them. librdkafka turns
//! each record into a message object (a malloc, a header list and a copy per header),
//! which bounds the librdkafka reader at about 2.7 M records a second here; walking the
//! batches directly costs decompression (by the codec crates) and a pass over the record
//! fields, with no allocation per record: the decompressed records of a batch land in one
//! buffer reused for every batch, and each record's fields are slices of it hashed in place.
//!
//! The rows equal the librdkafka reader's, field for field, because this walk gives each
//! record what librdkafka gives it (rdkafka_msgset_reader.c, magic 2): the timestamp is the
//! batch's max timestamp under LogAppendTime and base timestamp + delta otherwise, the
//! leader epoch is the batch's partition leader epoch, control batches are never records,
//! and under read_committed a transactional batch of a producer the response lists as
//! aborted is skipped until that producer's abort marker (what the Java consumer and
//! librdkafka do with the response's aborted transactions). Headers keep their order,
//! repeated names and null values: the two Rust Kafka codecs lose them (a map), which is
//! why the v2 record layout is walked here rather than by a crate.

use std::collections::HashSet;
use std::io::Read;

use crate::chunks::{Chunker, Head};

/// Base offset (8) + batch length (4): the part of a batch its length does not count.
const LOG_OVERHEAD: usize = 12;
/// The v2 batch header, up to the first record.
const HEADER: usize = 61;
const MAGIC_AT: usize = 16;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const BASE_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
const PRODUCER_ID_AT: usize = 43;
const RECORD_COUNT_AT: usize = 57;
const EPOCH_AT: usize = 12;

const CODEC_MASK: i16 = 0x07;
const LOG_APPEND_TIME: i16 = 0x08;
const TRANSACTIONAL: i16 = 0x10;
const CONTROL: i16 = 0x20;
/// The control record type of an abort marker (the key's second int16).
const ABORT: i16 = 0;
/// Snappy as the Java client writes it: xerial's stream header, then length-prefixed blocks.
const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";

fn i16_at(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// A cursor over a batch's decompressed records.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A zigzag varint (varlong: up to 10 bytes), as every v2 record field is framed.
    fn varint(&mut self) -> Result<i64, String> {
        let mut value: u64 = 0;
        let mut shift = 0;
        loop {
            let Some(&byte) = self.b.get(self.pos) else {
                return Err("a record field runs past the end of its batch".into());
            };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
            }
            shift += 7;
            if shift > 63 {
                return Err("a varint longer than 10 bytes".into());
            }
        }
    }

    /// `len` bytes, or None for a null field (length -1).
    fn bytes(&mut self, len: i64) -> Result<Option<&'a [u8]>, String> {
        if len < 0 {
            return Ok(None);
        }
        let end = self.pos.checked_add(len as usize).filter(|&e| e <= self.b.len());
        let Some(end) = end else {
            return Err(format!("a field of {len} bytes runs past the end of its batch"));
        };
        let out = &self.b[self.pos..end];
        self.pos = end;
        Ok(Some(out))
    }
}

/// The records of a batch, decompressed into `out` (cleared first, its capacity reused).
fn decompress(codec: i16, src: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    let done = match codec {
        1 => flate2::read::MultiGzDecoder::new(src).read_to_end(out).map(|_| ()),
        2 => return unsnappy(src, out),
        3 => lz4_flex::frame::FrameDecoder::new(src).read_to_end(out).map(|_| ()),
        4 => zstd::stream::read::Decoder::with_buffer(src).and_then(|mut d| d.read_to_end(out)).map(|_| ()),
        other => return Err(format!("unknown compression codec {other}")),
    };
    done.map_err(|e| format!("{} records do not decompress: {e}", codec_name(codec)))
}

fn codec_name(codec: i16) -> &'static str {
    match codec {
        1 => "gzip",
        2 => "snappy",
        3 => "lz4",
        4 => "zstd",
        _ => "compressed",
    }
}

/// Snappy, raw (librdkafka's producers) or in xerial's framing (the Java client's).
fn unsnappy(src: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let bad = |e: snap::Error| format!("snappy records do not decompress: {e}");
    let block = |b: &[u8], out: &mut Vec<u8>| -> Result<(), String> {
        let n = snap::raw::decompress_len(b).map_err(bad)?;
        let at = out.len();
        out.resize(at + n, 0);
        snap::raw::Decoder::new().decompress(b, &mut out[at..]).map_err(bad)?;
        Ok(())
    };
    if !src.starts_with(XERIAL_MAGIC) {
        return block(src, out);
    }
    // Magic (8), version (4), compatible version (4), then (length, block) pairs.
    let mut pos = 16;
    while pos < src.len() {
        if pos + 4 > src.len() {
            return Err("snappy records end inside a block length".into());
        }
        let n = i32_at(src, pos);
        pos += 4;
        if n < 0 || pos + n as usize > src.len() {
            return Err("a snappy block runs past the end of its batch".into());
        }
        block(&src[pos..pos + n as usize], out)?;
        pos += n as usize;
    }
    Ok(())
}

/// Where the fetch after a response with `data` starts: past its last whole batch, and at
/// least `from`. The same offset [`RawRange::feed`] reaches on these bytes (unless they are
/// corrupt, when feed fails), read from the batch headers alone: so the next fetch can be
/// sent before this one's records are walked.
pub fn resume_offset(data: &[u8], from: i64) -> i64 {
    let mut pos = 0;
    let mut next = from;
    while data.len() - pos >= LOG_OVERHEAD {
        let length = i32_at(data, pos + 8);
        if length < (HEADER - LOG_OVERHEAD) as i32 || data.len() - pos < LOG_OVERHEAD + length as usize {
            break;
        }
        let last = i64_at(data, pos) + i64::from(i32_at(data, pos + LAST_OFFSET_DELTA_AT));
        next = next.max(last + 1);
        pos += LOG_OVERHEAD + length as usize;
    }
    next
}

/// What one fetch response's records gave.
pub struct Fed {
    /// Where the next fetch starts: past the last whole batch read (a batch cut at the end
    /// of the response is fetched again whole).
    pub next: i64,
    /// Whole batches seen in the response.
    pub batches: usize,
}

/// One range of one partition being read from raw batches, fetch response by fetch response.
pub struct RawRange {
    pub chunker: Chunker,
    read_committed: bool,
    /// The next offset wanted: the range's start, then past each batch read.
    next: i64,
    /// One decompression buffer for every batch of the range.
    scratch: Vec<u8>,
}

impl RawRange {
    pub fn new(chunker: Chunker, read_committed: bool) -> Self {
        let next = chunker.range.2;
        RawRange { chunker, read_committed, next, scratch: Vec::new() }
    }

    pub fn next(&self) -> i64 {
        self.next
    }

    pub fn done(&self) -> bool {
        self.next >= self.chunker.range.3
    }

    /// Walks the whole batches of one fetch response's records. `aborted`: the response's
    /// aborted transactions, (producer id, first offset), used under read_committed.
    pub fn feed(&mut self, data: &[u8], aborted: &[(i64, i64)]) -> Result<Fed, String> {
        let end = self.chunker.range.3;
        let mut pending: Vec<(i64, i64)> = aborted.to_vec();
        pending.sort_by_key(|&(_, first)| std::cmp::Reverse(first));
        let mut aborting: HashSet<i64> = HashSet::new();
        let mut pos = 0;
        let mut batches = 0;
        while self.next < end && data.len() - pos >= LOG_OVERHEAD {
            let base = i64_at(data, pos);
            let length = i32_at(data, pos + 8);
            if length < (HEADER - LOG_OVERHEAD) as i32 {
                // Shorter than a v2 header: a v0/v1 message or a corrupt length.
                if data.len() - pos > MAGIC_AT && data[pos + MAGIC_AT] < 2 {
                    return Err(magic_refused(data[pos + MAGIC_AT], base));
                }
                return Err(format!("a record batch at offset {base} claims {length} bytes"));
            }
            let total = LOG_OVERHEAD + length as usize;
            if data.len() - pos < total {
                break; // cut by the response's size: the next fetch starts at this batch
            }
            let batch = &data[pos..pos + total];
            pos += total;
            if batch[MAGIC_AT] != 2 {
                return Err(magic_refused(batch[MAGIC_AT], base));
            }
            batches += 1;
            let attributes = i16_at(batch, ATTRIBUTES_AT);
            let last = base + i64::from(i32_at(batch, LAST_OFFSET_DELTA_AT));
            if last < self.next {
                continue; // before the range, or read already
            }
            let producer = i64_at(batch, PRODUCER_ID_AT);
            let control = attributes & CONTROL != 0;
            if self.read_committed && producer >= 0 {
                while pending.last().is_some_and(|&(_, first)| first <= last) {
                    aborting.insert(pending.pop().unwrap().0);
                }
                if control {
                    if self.control_type(batch, attributes)? == Some(ABORT) {
                        aborting.remove(&producer);
                    }
                } else if attributes & TRANSACTIONAL != 0 && aborting.contains(&producer) {
                    self.next = last + 1;
                    continue;
                }
            }
            if !control {
                self.records(batch, attributes, base)?;
            }
            self.next = self.next.max(last + 1);
        }
        Ok(Fed { next: self.next.min(end), batches })
    }

    /// The type of a control batch's marker (its first record's key: version, type).
    fn control_type(&mut self, batch: &[u8], attributes: i16) -> Result<Option<i16>, String> {
        let body = records_of(batch, attributes, &mut self.scratch)?;
        let mut cur = Cursor { b: body, pos: 0 };
        if i32_at(batch, RECORD_COUNT_AT) < 1 {
            return Ok(None);
        }
        cur.varint()?; // length
        cur.pos += 1; // attributes
        cur.varint()?; // timestamp delta
        cur.varint()?; // offset delta
        let len = cur.varint()?;
        Ok(match cur.bytes(len)? {
            Some(key) if key.len() >= 4 => Some(i16_at(key, 2)),
            _ => None,
        })
    }

    /// Adds the batch's records in [next, end) to the chunker.
    fn records(&mut self, batch: &[u8], attributes: i16, base: i64) -> Result<(), String> {
        let epoch = i32_at(batch, EPOCH_AT);
        let count = i32_at(batch, RECORD_COUNT_AT);
        let base_timestamp = i64_at(batch, BASE_TIMESTAMP_AT);
        let log_append = (attributes & LOG_APPEND_TIME != 0).then(|| i64_at(batch, MAX_TIMESTAMP_AT));
        let (next, end) = (self.next, self.chunker.range.3);
        let body = records_of(batch, attributes, &mut self.scratch)?;
        let chunker = &mut self.chunker;
        let mut cur = Cursor { b: body, pos: 0 };
        let corrupt = |why: String| format!("the record batch at offset {base}: {why}");
        for _ in 0..count.max(0) {
            let length = cur.varint().map_err(corrupt)?;
            let record_end = cur.pos.saturating_add(length.max(0) as usize);
            if length < 0 || record_end > body.len() {
                return Err(corrupt(format!("a record of {length} bytes runs past the end of its batch")));
            }
            cur.pos += 1; // attributes (unused in v2)
            let timestamp_delta = cur.varint().map_err(corrupt)?;
            let offset = base + cur.varint().map_err(corrupt)?;
            if offset >= end {
                return Ok(());
            }
            if offset < next {
                cur.pos = record_end;
                continue;
            }
            let n = cur.varint().map_err(corrupt)?;
            let key = cur.bytes(n).map_err(corrupt)?;
            let n = cur.varint().map_err(corrupt)?;
            let value = cur.bytes(n).map_err(corrupt)?;
            let header_count = cur.varint().map_err(corrupt)?;
            if !(0..=i64::from(i32::MAX)).contains(&header_count) {
                return Err(corrupt(format!("a record claims {header_count} headers")));
            }
            if offset < chunker.expected() {
                return Err(corrupt(format!(
                    "offset {offset} comes after offset {}",
                    chunker.expected() - 1
                )));
            }
            chunker.begin(&Head {
                offset,
                timestamp: log_append.unwrap_or(base_timestamp.wrapping_add(timestamp_delta)),
                key,
                value,
                header_count: header_count as i32,
                epoch,
            });
            for _ in 0..header_count {
                let n = cur.varint().map_err(corrupt)?;
                if n < 0 {
                    return Err(corrupt("a header with a null name".into()));
                }
                let name = cur.bytes(n).map_err(corrupt)?.unwrap_or_default();
                let n = cur.varint().map_err(corrupt)?;
                let value = cur.bytes(n).map_err(corrupt)?;
                chunker.header(name, value);
            }
            if cur.pos != record_end {
                return Err(corrupt(format!(
                    "the record at offset {offset} says {length} bytes but its fields take {}",
                    length + (cur.pos as i64 - record_end as i64)
                )));
            }
        }
        Ok(())
    }
}

/// A batch's records, decompressed into `scratch` where they are compressed.
fn records_of<'b>(batch: &'b [u8], attributes: i16, scratch: &'b mut Vec<u8>) -> Result<&'b [u8], String> {
    match attributes & CODEC_MASK {
        0 => Ok(&batch[HEADER..]),
        codec => {
            decompress(codec, &batch[HEADER..], scratch)?;
            Ok(scratch)
        }
    }
}

fn magic_refused(magic: u8, base: i64) -> String {
    format!(
        "message format v{magic} at offset {base}: the batch reader reads v2 record batches only \
         (set records.reader: native or python for this topic)"
    )
}
