//! Runs a server so that it cannot outlive the process that started it.
//!
//! Drop alone is not enough: the shared control plane lives in a static (never dropped) and an
//! aborted or killed test binary runs no destructors. So each server runs under a small `sh`
//! watchdog whose stdin is a pipe held only by this process. The kernel closes that pipe however
//! this process ends (return, panic, abort, SIGKILL); the watchdog sees EOF, SIGKILLs the server
//! and removes its state dir. No `unsafe`, no polling, and Drop takes the same path.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

// $1 = state dir, the rest = server command. The server's log, pid and exit status land in the
// state dir, which is kept until our end of the pipe closes so a failed start can still be
// diagnosed. Lines on the pipe stop the server (SIGKILL, as a crash) and start it again with the
// same command and state dir, as an outage and a restart would.
const WATCHDOG: &str = r#"
dir=$1; shift
exec 3<&0
run() {
  rm -f "$dir/exit-status" "$dir/server.pid"
  ( "$@" >>"$dir/server.log" 2>&1 </dev/null 3<&- &
    echo "$!" >"$dir/server.pid"
    wait "$!"; echo "$?" >"$dir/exit-status" ) 3<&- &
  runner=$!
  until [ -s "$dir/server.pid" ]; do sleep 0.01 2>/dev/null || sleep 1; done
}
stop() { kill -KILL "$(cat "$dir/server.pid")" 2>/dev/null; wait "$runner"; }
run "$@"
while read -r command <&3; do
  case $command in
    stop) stop ;;
    start) run "$@" ;;
  esac
done
stop
rm -rf "$dir"
"#;

/// A server process under the watchdog, with its own state dir.
pub struct Supervised {
    name: String,
    dir: PathBuf,
    watchdog: Child,
    lifeline: Option<ChildStdin>,
}

impl Supervised {
    /// Starts `program args...`; `dir` (from [`state_dir`]) becomes the server's to keep.
    pub fn spawn(name: &str, dir: PathBuf, program: &Path, args: &[String]) -> Result<Self> {
        use std::os::unix::process::CommandExt as _;
        let spawned = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("watchdog")
            .arg(&dir)
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Own process group: a terminal's Ctrl-C reaches only us; the pipe does the rest.
            .process_group(0)
            .spawn();
        let mut watchdog = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                return Err(e).with_context(|| format!("starting {name} ({})", program.display()));
            }
        };
        let lifeline = watchdog.stdin.take();
        Ok(Self {
            name: name.to_owned(),
            dir,
            watchdog,
            lifeline,
        })
    }

    /// The server's process id while it runs.
    pub fn server_pid(&self) -> Option<String> {
        let pid = fs::read_to_string(self.dir.join("server.pid")).ok()?;
        Some(pid.trim().to_owned()).filter(|pid| !pid.is_empty())
    }

    /// The state dir (server working files and `server.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Fails with the tail of the server log if the server has exited.
    pub fn ensure_running(&self) -> Result<()> {
        match fs::read_to_string(self.dir.join("exit-status")) {
            Ok(status) => bail!(
                "{} exited with status {}; last lines of its log:\n{}",
                self.name,
                status.trim(),
                self.log_tail(30)
            ),
            Err(_) => Ok(()),
        }
    }

    /// Kills the server (as a crash) and waits until it is gone; its state dir stays.
    pub async fn stop_server(&mut self) -> Result<()> {
        self.command("stop")?;
        let status = self.dir.join("exit-status");
        crate::wait::until(
            &format!("{} to stop", self.name),
            Duration::from_secs(30),
            || async { Ok(status.exists().then_some(())) },
        )
        .await
    }

    /// Starts the server again, with the same command and state dir.
    pub fn start_server(&mut self) -> Result<()> {
        // Removed here, before the watchdog sees the command, so `ensure_running` never reads
        // the status of the run that was stopped.
        let _ = fs::remove_file(self.dir.join("exit-status"));
        self.command("start")
    }

    fn command(&mut self, command: &str) -> Result<()> {
        let lifeline = self
            .lifeline
            .as_mut()
            .with_context(|| format!("{}: the watchdog is gone", self.name))?;
        writeln!(lifeline, "{command}")
            .and_then(|()| lifeline.flush())
            .with_context(|| format!("telling the {} watchdog to {command}", self.name))
    }

    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        drop(self.lifeline.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.watchdog.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = writeln!(
            std::io::stderr(),
            "control-plane: {} did not stop in 10s",
            self.name
        );
        let _ = self.watchdog.kill();
    }
}

/// Creates a fresh, empty directory under the system temp dir.
pub fn state_dir(name: &str) -> Result<PathBuf> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("pipewarden-{name}-{}-{n}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
}
