//! Which KFP compile a target version gets. A version is compiled for only where this policy
//! can reproduce that release's own compiler exactly: the five releases `kfp-compiler` is
//! proven on, and patch releases whose compiler is the same code. Anything else (an older or
//! newer release, a dev build, `unknown`, no version at all) is an unsupported target: no
//! render, nothing written. Nothing is guessed; a distribution's own version string is mapped
//! by the operator (`pipewarden run --compile-as`).

use kfp_compiler::Release;
use serde_json::Value;

/// A supported target version: the release whose compiler it runs, and its default install
/// (the shipped `settings/kfp-<version>.json`, from that tag's
/// `manifests/kustomize/base/pipeline/ml-pipeline-apiserver-deployment.yaml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub version: &'static str,
    pub release: Release,
    install: &'static str,
}

/// Every supported version, oldest first. 2.14.0 and 2.14.3 run 2.14.4's compiler: between
/// those tags nothing a compile reads changed (`git diff 2.14.0 2.14.4 --
/// backend/src/v2 backend/src/apiserver/template backend/src/apiserver/common
/// backend/src/apiserver/config api/v2alpha1/pipeline_spec.proto kubernetes_platform/proto`
/// is empty, driver and launcher included); their installs differ only in image tags.
pub const TARGETS: [Target; 7] = [
    Target {
        version: "2.14.0",
        release: Release::V2_14_4,
        install: include_str!("../../kfp-default/settings/kfp-2.14.0.json"),
    },
    Target {
        version: "2.14.3",
        release: Release::V2_14_4,
        install: include_str!("../../kfp-default/settings/kfp-2.14.3.json"),
    },
    Target {
        version: "2.14.4",
        release: Release::V2_14_4,
        install: include_str!("../../kfp-default/settings/kfp-2.14.4.json"),
    },
    Target {
        version: "2.15.0",
        release: Release::V2_15_0,
        install: include_str!("../../kfp-default/settings/kfp-2.15.0.json"),
    },
    Target {
        version: "2.16.0",
        release: Release::V2_16_0,
        install: include_str!("../../kfp-default/settings/kfp-2.16.0.json"),
    },
    Target {
        version: "2.16.1",
        release: Release::V2_16_1,
        install: include_str!("../../kfp-default/settings/kfp-2.16.1.json"),
    },
    Target {
        version: "2.17.0",
        release: Release::V2_17_0,
        install: include_str!("../../kfp-default/settings/kfp-2.17.0.json"),
    },
];

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
        TARGETS
            .into_iter()
            .find(|target| target.version == version)
            .ok_or_else(|| {
                format!(
                    "KFP {version} is not a release this policy compiles for exactly \
                     (supported: {}); map a distribution's own version with --compile-as",
                    supported()
                )
            })
    }

    /// The variables of this version's default install.
    pub fn install_settings(&self) -> Value {
        serde_json::from_str(self.install).expect("shipped install settings are JSON")
    }
}

/// The supported versions, comma separated.
pub fn supported() -> String {
    TARGETS.map(|target| target.version).join(", ")
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
            Some("2.16"),
            Some("v2.16.1"),
            Some("2.16.1-dev"),
        ] {
            let reason = Target::of(unsupported).unwrap_err();
            assert!(reason.contains("2.14.0, 2.14.3"), "{reason}");
        }
    }

    #[test]
    fn each_release_ships_the_install_its_compiler_was_proven_with() {
        for target in TARGETS {
            let install = target.install_settings();
            if target.version == target.release.as_str() {
                assert_eq!(
                    target.install,
                    target.release.install_settings_text(),
                    "settings/kfp-{}.json",
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
                assert_eq!(install, expected, "settings/kfp-{}.json", target.version);
            }
        }
    }
}
