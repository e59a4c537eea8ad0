//! Which KFP compile a target version gets, as the release ledger
//! (`kfp_compiler::release::ledger`) says: a version is compiled for only where this policy can
//! reproduce that release's own compiler exactly (its own, proven on its output, or, for a
//! patch release that changed nothing a compile reads, the release it inherits from). Anything
//! else (an older or newer release, one whose evidence is incomplete, a dev build, `unknown`,
//! no version at all) is an unsupported target: no render, nothing written. Nothing is guessed;
//! a distribution's own version string is mapped by the operator (`pipewarden run
//! --compile-as`).

use kfp_compiler::Release;
use kfp_compiler::release::ledger::{self, Compile, Entry, Proof};
use serde_json::Value;

/// A supported target version: the release whose compiler it runs, and its ledger row.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub version: &'static str,
    pub release: Release,
    entry: &'static Entry,
}

impl PartialEq for Target {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version
    }
}

impl Eq for Target {}

/// Every supported target, oldest first.
pub fn targets() -> impl Iterator<Item = Target> {
    ledger::served().map(|entry| Target {
        version: entry.version,
        release: entry.release().expect("served rows name a release"),
        entry,
    })
}

impl Target {
    /// The target `version` names exactly, or why it is not supported (the text of an
    /// `unsupported-target` outcome).
    pub fn of(version: Option<&str>) -> Result<Target, String> {
        let Some(version) = version.map(str::trim).filter(|v| !v.is_empty()) else {
            return Err(format!(
                "the target KFP version is unknown (no --target-version, and the KFP API \
                 server's healthz gave none); this policy compiles for {} only",
                supported()
            ));
        };
        if let Some(target) = targets().find(|target| target.version == version) {
            return Ok(target);
        }
        Err(match Entry::find(version).map(|entry| entry.compile) {
            Some(Compile::Unsupported { missing }) => format!(
                "KFP {version} is not a release this policy compiles for exactly: {missing} \
                 (supported: {}); a distribution that has verified its own compile maps it \
                 with --compile-as",
                supported()
            ),
            _ => format!(
                "KFP {version} is not a release this policy compiles for exactly \
                 (supported: {}); map a distribution's own version with --compile-as",
                supported()
            ),
        })
    }

    /// The variables of this version's default install.
    pub fn install_settings(&self) -> Value {
        self.entry
            .install_settings()
            .expect("a served version has a default install")
    }

    /// How renders for this target are proven.
    pub fn proof(&self) -> Proof {
        self.entry.proof()
    }

    /// One line for the operator: the release whose compiler runs and what proves it.
    pub fn proof_note(&self) -> String {
        match self.entry.compile {
            Compile::Own { .. } => format!(
                "KFP {} compiles with its own compiler, proven exactly on its own output",
                self.version
            ),
            Compile::Inherits { release, evidence } => format!(
                "KFP {} compiles with KFP {release}'s compiler and its own images: nothing a \
                 compile reads changed ({evidence})",
                self.version
            ),
            Compile::Unsupported { .. } => unreachable!("targets are served"),
        }
    }
}

/// The supported versions, comma separated.
pub fn supported() -> String {
    targets()
        .map(|target| target.version)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_versions_compiled_exactly_are_targets() {
        assert_eq!(
            Target::of(Some("2.16.1")).unwrap().release,
            Release::V2_16_1
        );
        assert_eq!(
            Target::of(Some("2.14.3")).unwrap().release,
            Release::V2_14_4
        );
        for unsupported in [
            None,
            Some(""),
            Some("unknown"),
            Some("2.13.1"),
            Some("2.18.0"),
            Some("3.0.0"),
            Some("2.16"),
            Some("v2.16.1"),
            Some("2.16.1-dev"),
        ] {
            let reason = Target::of(unsupported).unwrap_err();
            assert!(reason.contains("2.14.0, 2.14.3"), "{reason}");
        }
        let reason = Target::of(Some("2.18.1")).unwrap_err();
        assert!(
            reason.contains("no output of KFP 2.18's own compiler"),
            "{reason}"
        );
    }

    /// `policies/kfp-default/settings/kfp-<version>.json` is the ledger's install of each
    /// served version, and nothing else is there. `PIPEWARDEN_BLESS=1` writes them.
    #[test]
    fn the_shipped_settings_files_are_the_ledgers_installs() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kfp-default/settings");
        let bless = std::env::var_os("PIPEWARDEN_BLESS").is_some();
        let mut expected = std::collections::BTreeSet::new();
        for target in targets() {
            let name = format!("kfp-{}.json", target.version);
            let text = target.entry.install_settings_text().unwrap();
            let path = dir.join(&name);
            if bless {
                std::fs::write(&path, &text).unwrap();
            }
            let shipped = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                shipped == text,
                "{name} is not the ledger's install of KFP {}; rerun with PIPEWARDEN_BLESS=1 \
                 (cargo test -p kfp-core shipped_settings)",
                target.version
            );
            expected.insert(name);
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let name = file.unwrap().file_name().into_string().unwrap();
            assert!(
                expected.contains(&name),
                "{name}: no served version in the ledger ships it"
            );
        }
    }

    #[test]
    fn each_target_ships_the_install_its_compiler_was_proven_with() {
        for target in targets() {
            let install = target.install_settings();
            if target.version == target.release.as_str() {
                assert_eq!(
                    install,
                    target.release.install_settings(),
                    "{}",
                    target.version
                );
            } else {
                // A patch release inheriting a compiler: the same install but its own images.
                let mut expected = target.release.install_settings();
                for key in ["V2_DRIVER_IMAGE", "V2_LAUNCHER_IMAGE"] {
                    let image = expected[key].as_str().unwrap();
                    let image = image.replace(target.release.as_str(), target.version);
                    expected[key] = Value::String(image);
                }
                assert_eq!(install, expected, "{}", target.version);
            }
        }
    }
}
