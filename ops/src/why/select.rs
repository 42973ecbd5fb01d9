//! What `why` reads of a recording: the series on the job's path, so its
//! memory grows with the job, not with the file (an aggregator's recording
//! holds every switch of the fabric; a long one, many jobs).
//!
//! A first pass reads only the series' declarations (a job's node list is
//! the labels of its `job_node_info` series): in the daemon's format of
//! blocks it decompresses no block. The job's path is walked from those, as [`super::analyze`]
//! walks it, and the second pass reads the series that path names, and the
//! job's own signals.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use engine::recording::{Reader, Select};
use engine::{Labels, SeriesSpec, Topology};

use super::path::{enriched, JobPath};
use super::series::JOB_NODE_INFO;
use crate::recorded::{self, ReadError};

/// What the first pass found: every declared label set, and each job's nodes.
#[derive(Default)]
struct Declared {
    labels: BTreeSet<Labels>,
    jobs: BTreeMap<String, BTreeSet<String>>,
}

/// The selection of the recording at `recording` that `why` needs for
/// `job`: everything when the job is not in it (so the answer can name the
/// jobs that are).
pub fn for_job(recording: &Path, job: &str, topology: Option<Arc<Topology>>) -> Result<Select, ReadError> {
    let declared = Arc::new(Mutex::new(Declared::default()));
    let seen = Arc::clone(&declared);
    let only_node_lists = move |spec: &SeriesSpec| {
        let mut d = seen.lock().expect("not poisoned");
        if spec.metric == JOB_NODE_INFO {
            if let (Some(j), Some(n)) = (spec.labels.get("job"), spec.labels.get("node")) {
                d.jobs.entry(j.to_string()).or_default().insert(n.to_string());
            }
        } else {
            d.labels.insert(spec.labels.clone());
        }
        false
    };
    // No sample is wanted (a range past every time): blocks are skipped
    // without being decompressed, declarations are still read.
    let select = Select { series: Some(Arc::new(only_node_lists)), from: Some(i64::MAX), to: Some(i64::MAX) };
    let mut reader = Reader::new(recorded::open(recording)?, &recording.display().to_string()).select(select);
    while reader.next_event()?.is_some() {}
    drop(reader);
    let declared = std::mem::take(&mut *declared.lock().expect("not poisoned"));
    let Some(nodes) = declared.jobs.get(job) else { return Ok(Select::all()) };
    let mut path = JobPath::walk(nodes, topology.as_deref());
    for labels in &declared.labels {
        path.learn(&enriched(labels, topology.as_deref()));
    }
    let job = job.to_string();
    let on_path = move |spec: &SeriesSpec| {
        let labels = &spec.labels;
        match labels.get("job") {
            Some(j) => j == job,
            None => path.element_of(&enriched(labels, topology.as_deref())).is_some(),
        }
    };
    Ok(Select { series: Some(Arc::new(on_path)), ..Select::all() })
}

/// Reads what `select` wants of the recording at `recording`.
pub fn read(recording: &Path, select: Select) -> Result<super::series::Recorded, ReadError> {
    let input = recorded::open(recording)?;
    Ok(super::series::read_selected(input, &recording.display().to_string(), select)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_its_nodes_and_its_leaves_neighbours_are_read_and_nothing_else() {
        let decl = |id: u32, metric: &str, labels: &str| {
            format!("{{\"series\":{id},\"metric\":\"{metric}\",\"labels\":{{{labels}}},\"kind\":\"gauge\"}}\n")
        };
        let nic = |node: &str, rail: u32| {
            format!("\"node\":\"{node}\",\"netdev\":\"eth{rail}\",\"rail\":\"{rail}\",\"switch\":\"leaf{rail}\"")
        };
        let mut text = String::new();
        text += &decl(0, "job_node_info", "\"job\":\"a\",\"node\":\"n1\"");
        text += &decl(1, "pause", &nic("n1", 0));
        text += &decl(2, "pause", &nic("n2", 0));
        text += &decl(3, "pause", &nic("n3", 1));
        text += &decl(4, "gpu_temp", "\"node\":\"n2\",\"gpu\":\"0\"");
        text += &decl(5, "job_step_time_seconds", "\"job\":\"a\"");
        text += &decl(6, "job_step_time_seconds", "\"job\":\"b\"");
        for id in 0..7 {
            text += &format!("{{\"s\":{id},\"t\":1,\"v\":1}}\n");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        std::fs::write(&path, text).unwrap();
        let select = for_job(&path, "a", None).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let mut reader = Reader::new(bytes.as_slice(), "rec").select(select);
        let mut read = Vec::new();
        while let Some(event) = reader.next_event().unwrap() {
            if let engine::recording::Event::Sample { id, .. } = event {
                read.push(id);
            }
        }
        assert_eq!(read, [0, 1, 2, 5], "job a's node list, n1's NIC, its neighbour on leaf0, job a's step time");
        let everything = for_job(&path, "c", None).unwrap();
        assert!(everything.is_all(), "an unknown job reads everything, so the answer can list the jobs");
    }
}
