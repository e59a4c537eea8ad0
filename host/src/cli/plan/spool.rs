//! The rows `plan` lists, written to a temporary file as they are decided (JSON Lines, diffs
//! included) and read back once the summary, which is printed first, is complete: memory holds
//! the counts and the column widths, never the rows.

use std::fs::File;
use std::io::{BufRead as _, BufReader, BufWriter, Write as _};
use std::path::PathBuf;

use anyhow::Context as _;

use super::rows::{SwfRow, WorkflowRow, changes_summary};

/// Widths of the leading columns of each table (the last column is never padded).
#[derive(Debug, Default)]
pub struct Widths {
    pub swf: [usize; 3],
    pub workflow: [usize; 4],
}

pub struct Spool {
    path: PathBuf,
    out: BufWriter<File>,
    pub swf_rows: u64,
    pub workflow_rows: u64,
    pub widths: Widths,
}

impl Spool {
    pub fn new() -> anyhow::Result<Spool> {
        let path = std::env::temp_dir().join(format!(
            "pipewarden-plan-{}-{}.jsonl",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |t| t.as_nanos())
        ));
        let file =
            File::create_new(&path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Spool {
            path,
            out: BufWriter::new(file),
            swf_rows: 0,
            workflow_rows: 0,
            widths: Widths::default(),
        })
    }

    /// SWF rows come first, then workflow rows.
    pub fn swf(&mut self, row: &SwfRow) -> anyhow::Result<()> {
        let cells = [
            row.swf.chars().count(),
            row.plan.chars().count(),
            changes_summary(&row.changes).chars().count(),
        ];
        widen(&mut self.widths.swf, cells);
        serde_json::to_writer(&mut self.out, row)?;
        self.out.write_all(b"\n")?;
        self.swf_rows += 1;
        Ok(())
    }

    pub fn workflow(&mut self, row: &WorkflowRow) -> anyhow::Result<()> {
        let cells = [
            row.workflow.chars().count(),
            row.phase.chars().count(),
            row.finished_at.chars().count(),
            row.plan.chars().count(),
        ];
        widen(&mut self.widths.workflow, cells);
        serde_json::to_writer(&mut self.out, row)?;
        self.out.write_all(b"\n")?;
        self.workflow_rows += 1;
        Ok(())
    }

    /// Done writing: the rows, to be read back as often as needed.
    pub fn finish(mut self) -> anyhow::Result<Spooled> {
        self.out.flush()?;
        Ok(Spooled {
            path: std::mem::take(&mut self.path),
            swf_rows: self.swf_rows,
            workflow_rows: self.workflow_rows,
            widths: std::mem::take(&mut self.widths),
        })
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn widen<const N: usize>(widths: &mut [usize; N], cells: [usize; N]) {
    for (width, cell) in widths.iter_mut().zip(cells) {
        *width = (*width).max(cell);
    }
}

/// The spooled rows; the file goes when this does.
pub struct Spooled {
    path: PathBuf,
    pub swf_rows: u64,
    pub workflow_rows: u64,
    pub widths: Widths,
}

impl Spooled {
    /// Every SWF row, in the order decided.
    pub fn swfs(&self) -> anyhow::Result<impl Iterator<Item = anyhow::Result<SwfRow>> + '_> {
        Ok(self.lines()?.take(self.swf_rows as usize).map(|line| {
            let line = line?;
            Ok(serde_json::from_str(&line)?)
        }))
    }

    /// Every workflow row, in the order read.
    pub fn workflows(
        &self,
    ) -> anyhow::Result<impl Iterator<Item = anyhow::Result<WorkflowRow>> + '_> {
        Ok(self
            .lines()?
            .skip(self.swf_rows as usize)
            .map(|line| Ok(serde_json::from_str(&line?)?)))
    }

    fn lines(&self) -> anyhow::Result<std::io::Lines<BufReader<File>>> {
        let file = File::open(&self.path)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        Ok(BufReader::new(file).lines())
    }
}

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_back_in_order_and_the_file_goes_with_them() {
        let mut spool = Spool::new().unwrap();
        let swf = SwfRow {
            swf: "team-a/nightly".into(),
            plan: "would rebuild".into(),
            state: Some(crate::swf::fleet::SwfState::WouldRebuild),
            changes: vec!["spec.workflow.spec".into()],
            reason: "r".into(),
            diff: vec!["~ spec.workflow.spec: a -> b".into()],
        };
        spool.swf(&swf).unwrap();
        let workflow = WorkflowRow {
            workflow: "team-a/etl".into(),
            phase: "Succeeded".into(),
            finished_at: "-".into(),
            plan: "would notify".into(),
            reason: String::new(),
        };
        spool.workflow(&workflow).unwrap();
        let spooled = spool.finish().unwrap();
        let path = spooled.path.clone();
        let swfs: Vec<SwfRow> = spooled.swfs().unwrap().map(Result::unwrap).collect();
        assert_eq!(swfs, [swf]);
        let workflows: Vec<WorkflowRow> =
            spooled.workflows().unwrap().map(Result::unwrap).collect();
        assert_eq!(workflows, [workflow]);
        assert_eq!(spooled.widths.swf, [14, 13, "1: spec.workflow".len()]);
        drop(spooled);
        assert!(!path.exists());
    }
}
