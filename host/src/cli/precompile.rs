//! `pipewarden precompile`: compile a policy into the cache, so a controller start only loads it.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::bail;

use crate::config::PrecompileArgs;

pub fn run(args: &PrecompileArgs) -> anyhow::Result<()> {
    args.policy.check_floors()?;
    let Some(dir) = args.policy.cache_dir.clone() else {
        bail!(
            "--cache-dir (or PIPEWARDEN_CACHE_DIR) is required: it is where the compiled policy goes"
        );
    };
    let policy = args.policy.load()?;
    let report = policy.load_report();
    let dir: PathBuf = dir;
    writeln!(
        std::io::stdout(),
        "{}  {}  {} bytes  {:?} in {:.1} ms  -> {}",
        policy.label(),
        policy.digest(),
        report.wasm_bytes,
        report.source,
        report.code_time.as_secs_f64() * 1e3,
        dir.display()
    )?;
    Ok(())
}
