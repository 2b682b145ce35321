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

mod align;
mod batches;
mod chunks;

use chunks::{chunk_row, Chunker, Head, Range};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use rdkafka_sys as rd;
use rdkafka_sys::rd_kafka_resp_err_t as Err;

create_exception!(mirror_audit_native, SettingsError, PyException);
create_exception!(mirror_audit_native, ReaderError, PyException);

/// Messages taken from librdkafka per call, as the Python reader's `consume`.
const BATCH: usize = 10_000;

/// What a wave gives: each finished range with its chunks, and the ranges that failed with why.
type WaveResult = (Vec<(Range, Vec<chunks::Chunk>)>, Vec<(Range, String)>);

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

/// Adds a message's record to `ch`, its fields as confluent-kafka would give them to the
/// Python reader.
fn add_message(ch: &mut Chunker, m: &rd::rd_kafka_message_t) {
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
    ch.begin(&Head {
        offset: m.offset,
        timestamp,
        key: slice(m.key, m.key_len),
        value: slice(m.payload, m.len),
        header_count: headers.len() as i32,
        epoch,
    });
    for (k, v) in headers {
        ch.header(k, v);
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
                            add_message(ch, m);
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

/// One partition range read from raw record batches (`batches::RawRange`): Python fetches
/// (kafka-python's FetchSession, with its SASL, TLS and leader handling) and hands each
/// response's records here; the walk runs without the GIL.
#[pyclass]
struct BatchRange {
    range: Option<batches::RawRange>,
}

#[pymethods]
impl BatchRange {
    /// `digests`: keep each record's content digest instead of the chunks' checksums (mode
    /// mm2), taken with `take_digests` as the range is read; `finish` then refuses.
    #[new]
    #[pyo3(signature = (topic, partition, start, end, size, read_committed, digests=false))]
    fn py_new(
        topic: String,
        partition: i32,
        start: i64,
        end: i64,
        size: i64,
        read_committed: bool,
        digests: bool,
    ) -> PyResult<Self> {
        if size <= 0 {
            return Err(ReaderError::new_err("chunk size must be positive"));
        }
        let mut chunker = Chunker::new((topic, partition, start, end), size);
        if digests {
            chunker = chunker.with_digests();
        }
        Ok(BatchRange { range: Some(batches::RawRange::new(chunker, read_committed)) })
    }

    /// The offsets and content digests of the records read since the last call, as two
    /// buffers of native-endian int64 (Arrow's layout: `pyarrow.py_buffer` takes them as
    /// they are); empty where digests were not asked for.
    fn take_digests<'py>(&mut self, py: Python<'py>) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
        let (offsets, digests) = self
            .range
            .as_mut()
            .and_then(|r| r.chunker.digests.as_mut())
            .map(|d| d.take())
            .unwrap_or_default();
        let bytes =
            |v: &[i64]| PyBytes::new(py, &v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>());
        (bytes(&offsets), bytes(&digests))
    }

    /// Walks the whole record batches of one fetch response's records; `aborted` is the
    /// response's aborted transactions (producer id, first offset). Returns the offset the
    /// next fetch starts at and how many whole batches the response held; raises
    /// ReaderError naming the batch when the records are corrupt or not magic 2.
    fn feed(&mut self, py: Python<'_>, data: &[u8], aborted: Vec<(i64, i64)>) -> PyResult<(i64, usize)> {
        let range = self.range.as_mut().ok_or_else(|| ReaderError::new_err("the range is finished"))?;
        let fed = py.allow_threads(|| range.feed(data, &aborted)).map_err(ReaderError::new_err)?;
        Ok((fed.next, fed.batches))
    }

    /// The offset the next fetch starts at.
    #[getter]
    fn next(&self) -> i64 {
        self.range.as_ref().map_or(i64::MAX, |r| r.next())
    }

    /// True once every offset of the range was read.
    #[getter]
    fn done(&self) -> bool {
        self.range.as_ref().is_none_or(|r| r.done())
    }

    /// The range's chunk rows (its trailing gaps closed); only once it is done.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match self.range.take() {
            Some(r) if r.chunker.digests.is_some() => {
                self.range = Some(r);
                Err(ReaderError::new_err("a range read for its digests keeps no chunk checksums"))
            }
            Some(r) if r.done() => {
                let (range, chunks) = r.chunker.finish();
                let rows = PyList::empty(py);
                for c in &chunks {
                    rows.append(chunk_row(py, &range.0, range.1, c)?)?;
                }
                Ok(rows)
            }
            Some(r) => {
                let why = format!("the range is read up to offset {} of {}", r.next(), r.chunker.range.3);
                self.range = Some(r);
                Err(ReaderError::new_err(why))
            }
            None => Err(ReaderError::new_err("the range is finished")),
        }
    }
}

/// One partition's records of both sides compared as they are read (`align::Aligner`, mode
/// mm2): the walker's digest buffers go in, the query's tally and the finding rows come
/// out, or why this partition must be matched row by row.
#[pyclass]
struct Aligner {
    inner: align::Aligner,
    last: [i64; 2],
}

/// (offset, digest) pairs from two buffers of native-endian int64 (`take_digests`'s).
fn digest_records(offsets: &[u8], digests: &[u8], last: &mut i64) -> PyResult<Vec<(i64, u64)>> {
    if offsets.len() != digests.len() || !offsets.len().is_multiple_of(8) {
        return Err(ReaderError::new_err("offsets and digests must be int64 buffers of one length"));
    }
    let word = |b: &[u8]| i64::from_ne_bytes(b.try_into().expect("8 bytes"));
    let mut out = Vec::with_capacity(offsets.len() / 8);
    for (o, d) in offsets.chunks_exact(8).zip(digests.chunks_exact(8)) {
        let offset = word(o);
        if offset <= *last {
            return Err(ReaderError::new_err(format!("offset {offset} does not follow {last}")));
        }
        *last = offset;
        out.push((offset, word(d) as u64));
    }
    Ok(out)
}

#[pymethods]
impl Aligner {
    /// The range as the query's `mm2_record_ranges` gives it: the newest sync read
    /// (`end_u`, `end_d`), where each side was read from, the oldest sync read and the cut
    /// earlier runs verified through (source, replica), if any; `window`: records per side
    /// held unmatched before they are final.
    #[new]
    #[pyo3(signature = (end_u, end_d, src_read_start, dst_read_start, first_sync=None, cut=None, window=65_536))]
    fn py_new(
        end_u: i64,
        end_d: i64,
        src_read_start: i64,
        dst_read_start: i64,
        first_sync: Option<(i64, i64)>,
        cut: Option<(i64, i64)>,
        window: usize,
    ) -> PyResult<Self> {
        if window == 0 {
            return Err(ReaderError::new_err("the window must hold at least one record"));
        }
        let p = align::Params { end_u, end_d, src_read_start, dst_read_start, first_sync, cut, window };
        Ok(Aligner { inner: align::Aligner::new(p), last: [i64::MIN; 2] })
    }

    /// The source's next records (offsets ascending across calls). Push the two sides in
    /// turns, a response of each: what one side is pushed ahead of the other waits in the
    /// aligner, outside its window's bound.
    fn push_src(&mut self, py: Python<'_>, offsets: &[u8], digests: &[u8]) -> PyResult<()> {
        let records = digest_records(offsets, digests, &mut self.last[0])?;
        let inner = &mut self.inner;
        py.allow_threads(|| inner.push_src(records));
        Ok(())
    }

    /// The replica's next records (offsets ascending across calls).
    fn push_dst(&mut self, py: Python<'_>, offsets: &[u8], digests: &[u8]) -> PyResult<()> {
        let records = digest_records(offsets, digests, &mut self.last[1])?;
        let inner = &mut self.inner;
        py.allow_threads(|| inner.push_dst(records));
        Ok(())
    }

    /// Why the partition must be matched row by row, once known (None: not so far): the
    /// caller may stop pushing.
    #[getter]
    fn fallback(&self) -> Option<String> {
        self.inner.fallback().map(str::to_owned)
    }

    /// The finding rows since the last call, as four buffers: kinds (one byte each: 1
    /// missing, 2 duplicate, 3 unexplained, 4 out of order), source offsets, replica offsets
    /// (native-endian int64, -1 where a side has none) and digests.
    #[allow(clippy::type_complexity)]
    fn take_findings<'py>(
        &mut self,
        py: Python<'py>,
    ) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
        let rows = self.inner.take_findings();
        let words = |f: &dyn Fn(&(align::Kind, i64, i64, u64)) -> i64| {
            PyBytes::new(py, &rows.iter().flat_map(|r| f(r).to_ne_bytes()).collect::<Vec<u8>>())
        };
        (
            PyBytes::new(py, &rows.iter().map(|r| r.0 as u8).collect::<Vec<u8>>()),
            words(&|r| r.1),
            words(&|r| r.2),
            words(&|r| r.3 as i64),
        )
    }

    /// The partition's answer: the tally's columns, `fallback` None; or `fallback` saying
    /// why it must be matched row by row.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = &mut self.inner;
        let outcome = py.allow_threads(|| inner.finish());
        let d = PyDict::new(py);
        match outcome {
            Err(why) => d.set_item("fallback", why)?,
            Ok(o) => {
                d.set_item("fallback", py.None())?;
                d.set_item("compared_src_start", o.lo_u)?;
                d.set_item("compared_dst_start", o.lo_d)?;
                d.set_item("compared_src_records", o.compared_src_records)?;
                d.set_item("compared_dst_records", o.compared_dst_records)?;
                d.set_item("missing_records", o.missing_records)?;
                d.set_item("first_missing_offset", o.first_missing_offset)?;
                d.set_item("duplicate_records", o.duplicate_records)?;
                d.set_item("first_duplicate_offset", o.first_duplicate_offset)?;
                d.set_item("unexplained_records", o.unexplained_records)?;
                d.set_item("first_unexplained_offset", o.first_unexplained_offset)?;
                d.set_item("order_breaks", o.order_breaks)?;
                d.set_item("first_order_break_offset", o.first_order_break_offset)?;
                d.set_item("clean_src_through", o.clean_src_through)?;
                d.set_item("clean_dst_through", o.clean_dst_through)?;
            }
        }
        Ok(d)
    }
}

/// Where the fetch after a response's records starts (`batches::resume_offset`): read from
/// the batch headers, so the next fetch is on its way while this one's records are walked.
#[pyfunction]
fn resume_offset(data: &[u8], from: i64) -> i64 {
    batches::resume_offset(data, from)
}

extern "C" {
    /// `rd_kafka_err2str`, declared with a plain int: a broker's error code may be one this
    /// build's enum does not list, and a Rust enum must never hold a value it does not list.
    #[link_name = "rd_kafka_err2str"]
    fn err2str_code(code: i32) -> *const c_char;
}

/// librdkafka's words for a broker's error code ("Broker: Topic authorization failed"), so
/// the batch reader names a failed fetch as the librdkafka readers do.
#[pyfunction]
fn broker_error(code: i16) -> String {
    unsafe { CStr::from_ptr(err2str_code(i32::from(code))) }.to_string_lossy().into_owned()
}

/// librdkafka's version string, for logs and the benchmark.
#[pyfunction]
fn librdkafka_version() -> String {
    unsafe { CStr::from_ptr(rd::rd_kafka_version_str()) }.to_string_lossy().into_owned()
}

#[pymodule]
fn mirror_audit_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Reader>()?;
    m.add_class::<BatchRange>()?;
    m.add_class::<Aligner>()?;
    m.add_function(wrap_pyfunction!(librdkafka_version, m)?)?;
    m.add_function(wrap_pyfunction!(broker_error, m)?)?;
    m.add_function(wrap_pyfunction!(resume_offset, m)?)?;
    m.add("SettingsError", m.py().get_type::<SettingsError>())?;
    m.add("ReaderError", m.py().get_type::<ReaderError>())?;
    Ok(())
}
