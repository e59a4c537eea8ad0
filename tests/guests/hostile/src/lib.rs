//! A policy that misbehaves on demand, so host tests can check each limit and error variant.
//!
//! Each export reads its behaviour from data it is given, because validate-settings runs once
//! at load and every decision gets a fresh instance:
//!
//! | export            | behaviour from                                                        |
//! |-------------------|-----------------------------------------------------------------------|
//! | validate-settings | settings `{"validate": MODE, "bytes": N}`                             |
//! | render-swf        | the render context's settings `{"mode": MODE, "bytes": N}`            |
//! | should-rebuild    | SWF annotations `hostile.pipewarden.io/mode` and `.../bytes`           |
//! | exit-eligibility  | the workflow's annotations (or the event's labels), same keys         |
//!
//! Modes:
//! - `ok` (the default): behave sensibly; should-rebuild says rebuild, so render-swf runs.
//! - `spin`: loop forever. `alloc-bomb`: allocate until memory runs out. `stack-overflow`.
//! - `panic`: the message starts with [`PANIC_MESSAGE`]. `abort`: trap without a message.
//! - `huge-output`: an answer of `bytes` bytes (default 100 MB; render-swf's is a JSON string).
//! - `bad-json`: render-swf returns text that is not JSON.
//! - `error`: render-swf and validate-settings return an error.
//! - `log-flood`, `print-flood`: write `bytes` bytes to the host log, or to stdout and stderr,
//!   then behave as `ok`.
//! - `count`: render-swf fails with `calls=N`, N the calls this instance has served (each
//!   export counts): 2 when should-rebuild ran in the same instance, 1 in a fresh one.

use std::hint::black_box;
use std::io::Write;

use pipewarden_guest::{
    Eligibility, Policy, RebuildDecision, RebuildInput, RenderContext, Swf, Tombstone, Workflow,
    WorkflowEvent, log,
};
use serde::Deserialize;

pub const MODE_KEY: &str = "hostile.pipewarden.io/mode";
pub const BYTES_KEY: &str = "hostile.pipewarden.io/bytes";
pub const PANIC_MESSAGE: &str = "hostile policy panicked on purpose";
const DEFAULT_BYTES: usize = 100_000_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    #[default]
    Ok,
    Spin,
    AllocBomb,
    StackOverflow,
    Panic,
    Abort,
    HugeOutput,
    BadJson,
    Error,
    LogFlood,
    PrintFlood,
    Sleep,
    Count,
}

/// Calls this instance has served (see the `count` mode).
static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn count_call() -> u32 {
    CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
}

/// A mode and its size parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    pub mode: Mode,
    pub bytes: usize,
}

impl Behaviour {
    fn shrunk_by(self, bytes: usize) -> Self {
        Self {
            bytes: self.bytes.saturating_sub(bytes),
            ..self
        }
    }
}

#[derive(Deserialize)]
struct Settings {
    #[serde(default)]
    mode: Mode,
    #[serde(default)]
    validate: Mode,
    bytes: Option<usize>,
}

fn parse_settings(text: &str) -> Result<Settings, String> {
    serde_json::from_str(text).map_err(|e| format!("hostile settings: {e}"))
}

/// Reads a mode and size from annotation-like text values; an unknown mode is `ok`.
pub fn behaviour_from(mode: Option<&str>, bytes: Option<&str>) -> Behaviour {
    let mode = mode
        .and_then(|mode| serde_json::from_value(serde_json::Value::String(mode.to_owned())).ok())
        .unwrap_or_default();
    let bytes = bytes.and_then(|b| b.parse().ok()).unwrap_or(DEFAULT_BYTES);
    Behaviour { mode, bytes }
}

/// Runs the modes that never return, or that write and then carry on as `ok`.
fn misbehave(behaviour: Behaviour, export: &str) {
    match behaviour.mode {
        Mode::Spin => spin(),
        Mode::AllocBomb => alloc_bomb(),
        Mode::StackOverflow => {
            black_box(recurse(0));
        }
        Mode::Panic => panic!("{PANIC_MESSAGE} in {export}"),
        Mode::Abort => std::process::abort(),
        Mode::LogFlood => {
            let line = "x".repeat(1024);
            for _ in 0..behaviour.bytes.div_ceil(1024) {
                log::info(&line);
            }
        }
        Mode::PrintFlood => {
            let chunk = [b'x'; 1024];
            for _ in 0..behaviour.bytes.div_ceil(1024) {
                let _ = std::io::stdout().write_all(&chunk);
                let _ = std::io::stderr().write_all(&chunk);
            }
        }
        Mode::Sleep => std::thread::sleep(std::time::Duration::from_millis(behaviour.bytes as u64)),
        Mode::Ok | Mode::HugeOutput | Mode::BadJson | Mode::Error | Mode::Count => {}
    }
}

fn spin() -> ! {
    let mut turns = 0u64;
    loop {
        turns = black_box(turns.wrapping_add(1));
    }
}

fn alloc_bomb() -> ! {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(black_box(vec![0xA5; 1 << 20]));
    }
}

fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 32]);
    if black_box(true) {
        recurse(depth + 1).wrapping_add(frame[0])
    } else {
        frame[1]
    }
}

fn huge(behaviour: Behaviour) -> String {
    "x".repeat(behaviour.bytes)
}

pub struct HostilePolicy;

impl Policy for HostilePolicy {
    fn validate_settings(settings: String) -> Result<(), String> {
        let settings = parse_settings(&settings)?;
        let behaviour = Behaviour {
            mode: settings.validate,
            bytes: settings.bytes.unwrap_or(DEFAULT_BYTES),
        };
        misbehave(behaviour, "validate-settings");
        match behaviour.mode {
            Mode::HugeOutput => Err(huge(behaviour)),
            Mode::Error => Err("hostile policy rejects these settings on purpose".to_owned()),
            _ => Ok(()),
        }
    }

    fn should_rebuild(input: RebuildInput) -> RebuildDecision {
        count_call();
        let swf = Swf::from_json(&input.swf).ok();
        let behaviour = behaviour_from(
            swf.as_ref().and_then(|s| s.annotation(MODE_KEY)),
            swf.as_ref().and_then(|s| s.annotation(BYTES_KEY)),
        );
        misbehave(behaviour, "should-rebuild");
        match behaviour.mode {
            Mode::HugeOutput => RebuildDecision::Rebuild(huge(behaviour)),
            // Rebuild, so a render follows and its mode (from the settings) runs.
            _ => RebuildDecision::Rebuild("hostile policy in ok mode".to_owned()),
        }
    }

    fn render_swf(swf: String, context: RenderContext) -> Result<String, String> {
        let calls = count_call();
        let settings = parse_settings(&context.settings)?;
        let behaviour = Behaviour {
            mode: settings.mode,
            bytes: settings.bytes.unwrap_or(DEFAULT_BYTES),
        };
        misbehave(behaviour, "render-swf");
        match behaviour.mode {
            // Valid JSON, so only the size is wrong with it.
            Mode::HugeOutput => Ok(format!("\"{}\"", huge(behaviour.shrunk_by(2)))),
            Mode::BadJson => Ok("this is not JSON {".to_owned()),
            Mode::Error => Err("hostile policy fails this render on purpose".to_owned()),
            Mode::Count => Err(format!("calls={calls}")),
            _ => Ok(swf),
        }
    }

    fn exit_eligibility(event: WorkflowEvent, _tombstone: Option<Tombstone>) -> Eligibility {
        let workflow = Workflow::from_json(&event.workflow).ok();
        let label = |key: &str| {
            event
                .labels
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let read = |key: &str| {
            workflow
                .as_ref()
                .and_then(|w| w.annotation(key))
                .or(label(key))
        };
        let behaviour = behaviour_from(read(MODE_KEY), read(BYTES_KEY));
        misbehave(behaviour, "exit-eligibility");
        match behaviour.mode {
            Mode::HugeOutput => Eligibility::Skip(huge(behaviour)),
            _ => Eligibility::Process,
        }
    }
}

pipewarden_guest::export_policy!(HostilePolicy);

#[cfg(test)]
mod tests;
