//! CPU-seconds from `/proc`: pipewarden's (the threads of the runtime it alone runs on, named
//! [`THREAD`]) and the whole bench process's (which also holds the bench's own watches, the
//! receiver, the submitter and the Argo stack's stand-ins and proxy).

use pipewarden_tests::procfs::cpu_seconds;

/// The name of pipewarden's runtime threads (at most 15 bytes: Linux truncates thread names).
pub const THREAD: &str = "pipewarden";

/// CPU-seconds so far: (pipewarden's threads, the whole process).
#[derive(Clone, Copy)]
pub struct Cpu {
    pub pipewarden: f64,
    pub process: f64,
}

impl Cpu {
    pub fn now() -> Cpu {
        Cpu {
            pipewarden: pipewarden_threads(),
            process: cpu_seconds("self"),
        }
    }

    pub fn since(self, before: Cpu) -> Cpu {
        Cpu {
            pipewarden: self.pipewarden - before.pipewarden,
            process: self.process - before.process,
        }
    }
}

/// Sum over the live threads named [`THREAD`]. Its runtime keeps idle blocking threads alive
/// (see `main`), so none leaves between two readings and takes its time with it.
fn pipewarden_threads() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let tid = task.file_name().into_string().ok()?;
            let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
            (name.trim_end() == THREAD).then(|| cpu_seconds(&format!("self/task/{tid}")))
        })
        .sum()
}
