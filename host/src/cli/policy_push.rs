//! `pipewarden policy push FILE oci://REGISTRY/REPO:TAG`: a policy as a CNCF Wasm artifact.

use std::io::Write as _;

use anyhow::{Context as _, bail};

use crate::config::PushArgs;
use crate::oci::PolicyRef;

pub fn run(args: &PushArgs) -> anyhow::Result<()> {
    let reference = PolicyRef::parse(&args.reference)?;
    if reference.tag.is_none() || reference.digest.is_some() {
        bail!(
            "push to a tag (oci://REGISTRY/REPOSITORY:TAG), not {}: the digest is what the push returns",
            args.reference
        );
    }
    let wasm = std::fs::read(&args.file)
        .with_context(|| format!("cannot read policy {}", args.file.display()))?;
    // Only components are worth distributing: the same check a load makes first.
    if !crate::engine::is_component(&wasm) {
        bail!("{} is not a Wasm component", args.file.display());
    }
    let pinned = crate::oci::blocking(crate::oci::push(
        &wasm,
        &reference,
        args.registry_auth_file.as_deref(),
    ))?;
    writeln!(std::io::stdout(), "{pinned}")?;
    Ok(())
}
