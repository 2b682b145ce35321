//! kafka-mirror-audit's compiled record reader.
//!
//! The Python reader (confluent-kafka inside Spark tasks) builds a `Message` object for
//! every record and frames it in Python: about 2 us of CPU a record, where librdkafka alone
//! needs a tenth of that. This module runs the same read loop (`audit/collect/records.py`,
//! `_read_wave`) and the same chunk checksums (`audit/collect/record_chunks.py`) over the
//! records librdkafka hands out, without a Python object per record: librdkafka reads the
//! protocol and the record batches, this code only hashes the fields it returns, with the
//! same bytes in the same order, so both readers give identical chunk rows (a test compares
//! them on live topics).
//!
//! Like the Python reader it never joins a group and never commits: partitions are assigned
//! at explicit offsets, auto commit and offset store are off.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};
use std::ptr;
use std::time::{Duration, Instant};

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rdkafka_sys as rd;
use rdkafka_sys::rd_kafka_resp_err_t as Err;
use xxhash_rust::xxh3::Xxh3;

create_exception!(mirror_audit_native, SettingsError, PyException);
create_exception!(mirror_audit_native, ReaderError, PyException);

/// Gap ranges kept per chunk (gap_count and gaps_checksum always cover all of them).
const MAX_GAP_RANGES: usize = 100;
/// Messages taken from librdkafka per call, as the Python reader's `consume`.
const BATCH: usize = 10_000;

type Range = (String, i32, i64, i64);
/// What a wave gives: each finished range with its chunks, and the ranges that failed with why.
type WaveResult = (Vec<(Range, Vec<Chunk>)>, Vec<(Range, String)>);

/// One chunk being built: the Rust twin of `record_chunks.Chunk`.
struct Chunk {
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

/// A record as librdkafka hands it out; slices borrow the message.
struct Record<'a> {
    offset: i64,
    timestamp: i64,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
    has_headers: bool,
    epoch: i32,
}

/// The Rust twin of `record_chunks.RangeChunker`: chunks aligned on multiples of `size`.
struct Chunker {
    range: Range,
    size: i64,
    expected: i64,
    chunk: Chunk,
    done: Vec<Chunk>,
}

impl Chunker {
    fn new(range: Range, size: i64) -> Self {
        let start = range.2;
        let end = range.3;
        let hi = end.min((start.div_euclid(size) + 1) * size);
        Chunker { range, size, expected: start, chunk: Chunk::new(start, hi), done: Vec::new() }
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

    fn add(&mut self, r: &Record<'_>) {
        if r.offset >= self.chunk.end {
            self.advance_to(r.offset);
        }
        if r.offset > self.expected {
            let e = self.expected;
            self.chunk.gap(e, r.offset - 1);
        }
        let c = &mut self.chunk;
        // The frame of record_chunks.frame: >qqiii, key, value, then per header >ii, key, value.
        let mut f = [0u8; 28];
        f[..8].copy_from_slice(&r.offset.to_be_bytes());
        f[8..16].copy_from_slice(&r.timestamp.to_be_bytes());
        f[16..20].copy_from_slice(&r.key.map_or(-1i32, |k| k.len() as i32).to_be_bytes());
        f[20..24].copy_from_slice(&r.value.map_or(-1i32, |v| v.len() as i32).to_be_bytes());
        let hcount = if r.has_headers { r.headers.len() as i32 } else { 0 };
        f[24..28].copy_from_slice(&hcount.to_be_bytes());
        c.hash.update(&f);
        if let Some(k) = r.key {
            c.hash.update(k);
        }
        if let Some(v) = r.value {
            c.hash.update(v);
        }
        for (hk, hv) in &r.headers {
            let mut h = [0u8; 8];
            h[..4].copy_from_slice(&(hk.len() as i32).to_be_bytes());
            h[4..].copy_from_slice(&hv.map_or(-1i32, |v| v.len() as i32).to_be_bytes());
            c.hash.update(&h);
            c.hash.update(hk);
            if let Some(v) = hv {
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

    fn finish(mut self) -> (Range, Vec<Chunk>) {
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

fn cstr(s: &str) -> PyResult<CString> {
    CString::new(s).map_err(|_| SettingsError::new_err(format!("a NUL byte in {s:?}")))
}

fn errstr(buf: &[c_char]) -> String {
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
}

fn err2str(err: Err) -> String {
    unsafe { CStr::from_ptr(rd::rd_kafka_err2str(err)) }.to_string_lossy().into_owned()
}

/// A partition list owned here and freed on drop.
struct Tpl(*mut rd::rd_kafka_topic_partition_list_t);

impl Tpl {
    fn new(parts: &[(&str, i32, i64)]) -> PyResult<Self> {
        let list = unsafe { rd::rd_kafka_topic_partition_list_new(parts.len().max(1) as i32) };
        let tpl = Tpl(list);
        for (topic, partition, offset) in parts {
            let t = cstr(topic)?;
            let p = unsafe { rd::rd_kafka_topic_partition_list_add(list, t.as_ptr(), *partition) };
            unsafe { (*p).offset = *offset };
        }
        Ok(tpl)
    }

    fn entries(&self) -> Vec<(String, i32, i64)> {
        let list = unsafe { &*self.0 };
        (0..list.cnt as usize)
            .map(|i| {
                let e = unsafe { &*list.elems.add(i) };
                let topic = unsafe { CStr::from_ptr(e.topic) }.to_string_lossy().into_owned();
                (topic, e.partition, e.offset)
            })
            .collect()
    }
}

impl Drop for Tpl {
    fn drop(&mut self) {
        unsafe { rd::rd_kafka_topic_partition_list_destroy(self.0) };
    }
}

/// One message from `rd_kafka_consume_batch_queue`, destroyed on drop.
struct Msg(*mut rd::rd_kafka_message_t);

impl Drop for Msg {
    fn drop(&mut self) {
        unsafe { rd::rd_kafka_message_destroy(self.0) };
    }
}

fn slice<'a>(p: *mut c_void, len: usize) -> Option<&'a [u8]> {
    if p.is_null() {
        None
    } else if len == 0 {
        Some(&[])
    } else {
        Some(unsafe { std::slice::from_raw_parts(p as *const u8, len) })
    }
}

/// The record fields of a message, as confluent-kafka would give them to the Python reader.
fn record<'a>(m: &'a rd::rd_kafka_message_t) -> Record<'a> {
    let mut tstype = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    let timestamp = unsafe { rd::rd_kafka_message_timestamp(m, &mut tstype) };
    let epoch = unsafe { rd::rd_kafka_message_leader_epoch(m) };
    let mut hdrs: *mut rd::rd_kafka_headers_t = ptr::null_mut();
    let mut headers = Vec::new();
    let has = unsafe { rd::rd_kafka_message_headers(m, &mut hdrs) } == Err::RD_KAFKA_RESP_ERR_NO_ERROR;
    if has {
        let n = unsafe { rd::rd_kafka_header_cnt(hdrs) };
        for i in 0..n {
            let mut name: *const c_char = ptr::null();
            let mut value: *const c_void = ptr::null();
            let mut size: usize = 0;
            let e = unsafe { rd::rd_kafka_header_get_all(hdrs, i, &mut name, &mut value, &mut size) };
            if e != Err::RD_KAFKA_RESP_ERR_NO_ERROR {
                break;
            }
            let k = unsafe { CStr::from_ptr(name) }.to_bytes();
            headers.push((k, slice(value as *mut c_void, size)));
        }
    }
    Record {
        offset: m.offset,
        timestamp,
        key: slice(m.key, m.key_len),
        value: slice(m.payload, m.len),
        has_headers: has && !headers.is_empty(),
        headers,
        epoch,
    }
}

/// An assignment-only librdkafka consumer over one cluster.
#[pyclass(unsendable)]
struct Reader {
    rk: *mut rd::rd_kafka_t,
    queue: *mut rd::rd_kafka_queue_t,
}

impl Reader {
    fn assign(&self, parts: &[(&str, i32, i64)]) -> Result<(), String> {
        let tpl = Tpl::new(parts).map_err(|e| e.to_string())?;
        let e = unsafe { rd::rd_kafka_assign(self.rk, tpl.0) };
        if e != Err::RD_KAFKA_RESP_ERR_NO_ERROR {
            return Err(format!("assign: {}", err2str(e)));
        }
        // A partition paused at the end of an earlier wave stays paused.
        unsafe { rd::rd_kafka_resume_partitions(self.rk, tpl.0) };
        Ok(())
    }

    fn positions(&self, parts: &[(&str, i32, i64)]) -> Vec<(String, i32, i64)> {
        let tpl = match Tpl::new(parts) {
            Ok(t) => t,
            Err(_) => return Vec::new(),
        };
        unsafe { rd::rd_kafka_position(self.rk, tpl.0) };
        tpl.entries()
    }

    /// The body of `read_wave`, without the GIL: one range per partition read to its end.
    fn wave(&self, wave: Vec<Range>, size: i64, timeout: f64) -> Result<WaveResult, String> {
        let mut done = Vec::new();
        let mut failed = Vec::new();
        let mut open: HashMap<(String, i32), Chunker> = HashMap::new();
        let mut parts = Vec::new();
        for r in &wave {
            parts.push((r.0.as_str(), r.1, r.2));
        }
        self.assign(&parts)?;
        for r in wave.iter().cloned() {
            open.insert((r.0.clone(), r.1), Chunker::new(r, size));
        }
        let limit = Duration::from_secs_f64(timeout.max(0.0));
        let mut deadline = Instant::now() + limit;
        let mut buf: Vec<*mut rd::rd_kafka_message_t> = vec![ptr::null_mut(); BATCH];
        // Topic names by handle, and the (topic, partition) of the last message kept: a
        // fetched message set arrives partition by partition, so a name is made once per
        // run of messages, not per record.
        let mut topics: HashMap<usize, String> = HashMap::new();
        while !open.is_empty() {
            let n = unsafe { rd::rd_kafka_consume_batch_queue(self.queue, 500, buf.as_mut_ptr(), BATCH) };
            let mut progressed = false;
            if n > 0 {
                let msgs: Vec<Msg> = buf[..n as usize].iter().map(|p| Msg(*p)).collect();
                let mut cur: Option<(usize, i32)> = None;
                let mut key: Option<(String, i32)> = None;
                for msg in &msgs {
                    let m = unsafe { &*msg.0 };
                    if m.rkt.is_null() {
                        continue;
                    }
                    let id = (m.rkt as usize, m.partition);
                    if cur != Some(id) {
                        let name = topics
                            .entry(m.rkt as usize)
                            .or_insert_with(|| {
                                unsafe { CStr::from_ptr(rd::rd_kafka_topic_name(m.rkt)) }
                                    .to_string_lossy()
                                    .into_owned()
                            })
                            .clone();
                        cur = Some(id);
                        key = Some((name, m.partition));
                    }
                    let tp = key.as_ref().unwrap();
                    if m.err != Err::RD_KAFKA_RESP_ERR_NO_ERROR {
                        if m.err != Err::RD_KAFKA_RESP_ERR__PARTITION_EOF {
                            if let Some(ch) = open.remove(tp) {
                                let why = unsafe { CStr::from_ptr(rd::rd_kafka_message_errstr(m)) }
                                    .to_string_lossy()
                                    .into_owned();
                                failed.push((ch.range, why));
                            }
                        }
                        continue;
                    }
                    if let Some(ch) = open.get_mut(tp) {
                        if m.offset < ch.range.3 {
                            ch.add(&record(m));
                            progressed = true;
                        }
                    }
                }
            } else if n < 0 {
                let e = unsafe { rd::rd_kafka_last_error() };
                return Err(format!("consume: {}", err2str(e)));
            }
            if progressed {
                deadline = Instant::now() + limit;
            }
            if !open.is_empty() {
                let asked: Vec<(&str, i32, i64)> =
                    open.keys().map(|(t, p)| (t.as_str(), *p, -1001)).collect();
                let finished: Vec<(String, i32)> = self
                    .positions(&asked)
                    .into_iter()
                    .filter(|(t, p, off)| open.get(&(t.clone(), *p)).is_some_and(|c| *off >= c.range.3))
                    .map(|(t, p, _)| (t, p))
                    .collect();
                if !finished.is_empty() {
                    let paused: Vec<(&str, i32, i64)> =
                        finished.iter().map(|(t, p)| (t.as_str(), *p, -1001)).collect();
                    if let Ok(tpl) = Tpl::new(&paused) {
                        unsafe { rd::rd_kafka_pause_partitions(self.rk, tpl.0) };
                    }
                }
                for tp in finished {
                    if let Some(ch) = open.remove(&tp) {
                        done.push(ch.finish());
                    }
                }
            }
            if !open.is_empty() && Instant::now() > deadline {
                let mut left: Vec<_> = open.drain().map(|(_, ch)| ch.range).collect();
                left.sort();
                for r in left {
                    let why = format!("no progress for {:.0}s at the range ending at {}", timeout, r.3);
                    failed.push((r, why));
                }
            }
        }
        unsafe { rd::rd_kafka_assign(self.rk, ptr::null()) };
        Ok((done, failed))
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

fn chunk_row<'py>(py: Python<'py>, topic: &str, partition: i32, c: &Chunk) -> PyResult<Bound<'py, PyDict>> {
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

#[pymethods]
impl Reader {
    /// A consumer with librdkafka `settings` (the Python reader's `consumer_settings`).
    /// Raises SettingsError, naming the setting, for one this build cannot honour
    /// (an unknown property, a SASL mechanism it lacks), before any connection is made.
    #[new]
    fn py_new(settings: HashMap<String, String>) -> PyResult<Self> {
        let conf = unsafe { rd::rd_kafka_conf_new() };
        let mut err = [0 as c_char; 512];
        let mut keys: Vec<&String> = settings.keys().collect();
        keys.sort();
        for k in keys {
            let (name, value) = (cstr(k)?, cstr(&settings[k])?);
            let res = unsafe {
                rd::rd_kafka_conf_set(conf, name.as_ptr(), value.as_ptr(), err.as_mut_ptr(), err.len())
            };
            if res != rd::rd_kafka_conf_res_t::RD_KAFKA_CONF_OK {
                unsafe { rd::rd_kafka_conf_destroy(conf) };
                return Err(SettingsError::new_err(format!("{k}: {}", errstr(&err))));
            }
        }
        // rd_kafka_new takes the conf on success only.
        let rk = unsafe {
            rd::rd_kafka_new(rd::rd_kafka_type_t::RD_KAFKA_CONSUMER, conf, err.as_mut_ptr(), err.len())
        };
        if rk.is_null() {
            unsafe { rd::rd_kafka_conf_destroy(conf) };
            return Err(SettingsError::new_err(errstr(&err)));
        }
        unsafe { rd::rd_kafka_poll_set_consumer(rk) };
        let queue = unsafe { rd::rd_kafka_queue_get_consumer(rk) };
        Ok(Reader { rk, queue })
    }

    /// Reads one range per partition to its end (`records._read_wave`): returns each
    /// finished range with its chunk rows, and the ranges that failed with why.
    fn read_wave<'py>(
        &self,
        py: Python<'py>,
        wave: Vec<Range>,
        size: i64,
        timeout: f64,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        if self.rk.is_null() {
            return Err(ReaderError::new_err("the reader is closed"));
        }
        if size <= 0 {
            return Err(ReaderError::new_err("chunk size must be positive"));
        }
        let rk = self.rk as usize;
        let queue = self.queue as usize;
        let (done, failed) = py
            .allow_threads(move || {
                // The handle is used from this thread only while the caller waits.
                let me = Reader { rk: rk as *mut _, queue: queue as *mut _ };
                let out = me.wave(wave, size, timeout);
                std::mem::forget(me);
                out
            })
            .map_err(ReaderError::new_err)?;
        let done_py = PyList::empty(py);
        for (range, chunks) in done {
            let rows = PyList::empty(py);
            for c in &chunks {
                rows.append(chunk_row(py, &range.0, range.1, c)?)?;
            }
            done_py.append((range, rows))?;
        }
        let failed_py = PyList::empty(py);
        for (range, why) in failed {
            failed_py.append((range, why))?;
        }
        Ok((done_py, failed_py))
    }

    /// Leaves without committing anything and frees the handle; safe to call twice.
    fn close(&mut self) {
        if !self.rk.is_null() {
            unsafe {
                rd::rd_kafka_queue_destroy(self.queue);
                rd::rd_kafka_consumer_close(self.rk);
                rd::rd_kafka_destroy(self.rk);
            }
            self.rk = ptr::null_mut();
            self.queue = ptr::null_mut();
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.close();
    }
}

/// librdkafka's version string, for logs and the benchmark.
#[pyfunction]
fn librdkafka_version() -> String {
    unsafe { CStr::from_ptr(rd::rd_kafka_version_str()) }.to_string_lossy().into_owned()
}

#[pymodule]
fn mirror_audit_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Reader>()?;
    m.add_function(wrap_pyfunction!(librdkafka_version, m)?)?;
    m.add("SettingsError", m.py().get_type::<SettingsError>())?;
    m.add("ReaderError", m.py().get_type::<ReaderError>())?;
    Ok(())
}
