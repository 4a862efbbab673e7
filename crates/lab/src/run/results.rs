//! `results.jsonl`: one JSON object per finished point, appended and flushed at once, so an
//! interrupted run keeps its data and `--resume` skips the points already measured.

use crate::experiment::plan::Point;
use crate::experiment::ClientSpec;
use crate::run::measurement::Measurement;
use crate::run::out_dir::OutDir;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use spidey_config::ConfigError;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

/// How a point ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    Measured,
    /// The server could not run here (mode not built, peer not installed): see `note`.
    Skipped,
    Failed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    pub id: String,
    pub experiment: String,
    pub sweep: String,
    pub server: String,
    pub workload: String,
    pub client: ClientSpec,
    pub repeat: u32,
    /// Where the point ran within its server run, and the seed that shuffled that run
    /// (`plan.rs`); absent in records written before points were shuffled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement: Option<Measurement>,
    /// The load generator's full result, as it reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<serde_json::Value>,
    /// Seconds since the Unix epoch when the point finished.
    pub finished_at: u64,
}

impl Record {
    pub fn new(experiment: &str, point: &Point, outcome: Outcome) -> Record {
        Record {
            id: point.id.clone(),
            experiment: experiment.to_string(),
            sweep: point.sweep.clone(),
            server: point.server.clone(),
            workload: point.workload.clone(),
            client: point.client.clone(),
            repeat: point.repeat,
            position: Some(point.position),
            order_seed: Some(point.order_seed),
            outcome,
            note: None,
            measurement: None,
            raw: None,
            finished_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }
}

/// The results file's name in the output directory.
pub(crate) const FILE: &str = "results.jsonl";

/// The results file, open for appending.
pub(crate) struct Journal {
    file: File,
    /// The latest record per point id (earlier ones are superseded).
    pub records: HashMap<String, Record>,
}

impl Journal {
    /// Opens [`FILE`] in `out`: kept and read when resuming, started afresh otherwise.
    pub fn open(out: &OutDir, resume: bool) -> anyhow::Result<Journal> {
        if !resume {
            return Ok(Journal { file: out.create(FILE)?, records: HashMap::new() });
        }
        let file = out.append(FILE)?;
        Ok(Journal { file, records: read(&out.path().join(FILE))? })
    }

    /// Whether a point was measured already (skipped and failed points are tried again).
    pub fn has(&self, id: &str) -> bool {
        self.records.get(id).is_some_and(|r| r.outcome == Outcome::Measured)
    }

    /// Appends one record and flushes it to the file.
    pub fn append(&mut self, record: Record) -> anyhow::Result<()> {
        let mut line = serde_json::to_string(&record)?;
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.flush()?;
        self.file.sync_data()?;
        self.records.insert(record.id.clone(), record);
        Ok(())
    }
}

/// Refuses to start afresh over a results file that holds points, unless `force`: a run
/// would empty it. With `resume` it is kept.
pub(crate) fn check_fresh(path: &Path, resume: bool, force: bool) -> Result<(), ConfigError> {
    let held = std::fs::metadata(path).is_ok_and(|m| m.len() > 0);
    if held && !resume && !force {
        return Err(ConfigError(format!(
            "{} holds an earlier run's results: pass --resume to continue it or --force to start afresh",
            path.display()
        )));
    }
    Ok(())
}

/// Every record in a results file (gzipped when its name ends in `.gz`), the last per id winning; unreadable lines (an interrupted
/// write) are ignored. A missing file is empty.
pub(crate) fn read(path: &Path) -> anyhow::Result<HashMap<String, Record>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let reader: Box<dyn std::io::Read> = if path.extension().is_some_and(|x| x == "gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut records = HashMap::new();
    for line in BufReader::new(reader).lines() {
        if let Ok(r) = serde_json::from_str::<Record>(&line?) {
            records.insert(r.id.clone(), r);
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results file written before points were batched, shuffled, re-measured and timed
    /// on nanosecond clocks still reads line by line (`read` skips lines it cannot parse,
    /// so a field made required would silently empty it), its new fields at their defaults.
    #[test]
    fn an_older_results_file_reads_whole() {
        let path =
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("docs/runs/lab-quick-6b992ad/results.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut measured = 0;
        for line in text.lines() {
            let r: Record = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!((r.position, r.order_seed), (None, None));
            if let Some(m) = r.measurement {
                assert_eq!((m.batches, m.tries, m.excluded, m.cpu.fine_clock), (1, 1, false, false));
                assert_eq!(m.cpu.client_cpu_us, None);
                measured += 1;
            }
        }
        assert!(measured > 100, "{measured} measured points");
    }
}
