//! Checks that a component implements the world this host serves, naming what it found if not.

use wasmtime::Engine;
use wasmtime::component::Component;

use super::LoadError;

/// The WIT package and world this host serves.
pub const WORLD: &str = "pipewarden:policy/policy@0.1.1";
const PACKAGE_PREFIX: &str = "pipewarden:policy/";
const PACKAGE_VERSION: &str = "@0.1.1";
/// Earlier versions whose components this host still runs: 0.1.1 only added an import, and
/// wasmtime's linker matches 0.1.x names with each other.
const COMPATIBLE_VERSIONS: [&str; 2] = ["@0.1.0", "@0.1.1"];
const EXPORTS: [&str; 4] = [
    "validate-settings",
    "should-rebuild",
    "render-swf",
    "exit-eligibility",
];

pub(crate) fn check(engine: &Engine, component: &Component) -> Result<(), LoadError> {
    let ty = component.component_type();
    let imports: Vec<String> = ty
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let exports: Vec<String> = ty
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let mismatch = |found: String| LoadError::WorldMismatch {
        expected: WORLD,
        found,
    };

    if let Some(other) = imports.iter().find(|name| {
        name.starts_with(PACKAGE_PREFIX) && !COMPATIBLE_VERSIONS.iter().any(|v| name.ends_with(v))
    }) {
        return Err(mismatch(format!(
            "it was built against {other}, this host serves version {}",
            PACKAGE_VERSION.trim_start_matches('@')
        )));
    }
    let foreign: Vec<&String> = imports
        .iter()
        .filter(|name| !name.starts_with("wasi:") && !name.starts_with(PACKAGE_PREFIX))
        .collect();
    if !foreign.is_empty() {
        return Err(mismatch(format!(
            "it imports interfaces this host does not provide: {}",
            join(foreign)
        )));
    }
    let missing: Vec<&str> = EXPORTS
        .into_iter()
        .filter(|wanted| !exports.iter().any(|name| name == wanted))
        .collect();
    if !missing.is_empty() {
        return Err(mismatch(format!(
            "it lacks the exports {}; it exports [{}]",
            missing.join(", "),
            join(exports.iter())
        )));
    }
    Ok(())
}

fn join<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    names
        .into_iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}
